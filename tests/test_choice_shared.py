"""``ChoiceModel.with_shared``: participant-level parameters made one value for everybody (``:shared=['a','b']``)."""

import pickle
import warnings

import pyro
import pytest
import torch
from causalplay.models.choice import build_features, get_model
from scipy import stats

from causalplay.data import load_nexiom
from causalplay.fitting import Parameterisation
from causalplay.fitting.inference import log_density, pyro_model

NAME = "eig_sweep:shared=[gamma,stop_a]"


@pytest.fixture(scope="module")
def data():
    d = load_nexiom()
    return d.subset(d.ids[:6])


def test_levels_sites_and_names():
    m = get_model(NAME)
    levels = {p.name: p.level for p in m.all_params()}
    assert levels["gamma"] == levels["stop_a"] == "shared"
    assert levels["beta"] == levels["delta"] == "participant"
    # the base model is untouched
    assert {p.name: p.level for p in get_model("eig_sweep").all_params()}["gamma"] == "participant"
    sites = Parameterisation(m, True, 5).sites()
    assert sites["gamma_raw"] == () and sites["stop_a_raw"] == () and sites["beta_z"] == (5,)
    assert not {"gamma_mu", "gamma_logsigma", "gamma_z", "stop_a_z"} & set(sites)
    # names round-trip through get_model in either option order, and survive pickling (worker processes)
    assert get_model(m.name).name == NAME == get_model("eig_sweep:shared=['stop_a','gamma']").name
    t = get_model("eig_sweep:transfer=True:shared=gamma").with_shared("stop_a")
    assert t.name == "eig_sweep:shared=[gamma,stop_a]:transfer=True"
    assert t.transfer and t.shared == {"gamma", "stop_a"} and get_model(t.name).shared == t.shared
    p = pickle.loads(pickle.dumps(m))
    assert p.name == NAME and p.shared == {"gamma", "stop_a"}


@pytest.mark.parametrize("bad, match", [("eig_sweep:shared=rho", r"\['rho'\].*participant-level parameters "
                                                                 r"\['beta', 'delta', 'gamma', 'stop_a'\]"),
                                        ("eig_sweep:shared=[]", "non-empty"),
                                        ("eig_sweep:shared=beta:shared=beta", "'shared' is given twice"),
                                        ("eig_sweep:transfer=yes", "transfer='yes'.*expected True or False"),
                                        ("eig_sweep:pooled=True", r"option\(s\) \['pooled'\]"),
                                        ("eig_sweep:shared=['gamma'", "unbalanced brackets")])
def test_bad_names_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        get_model(bad)


@pytest.mark.parametrize("bad, match", [("eig_sweep+shared()", "non-empty"),
                                        ("eig_sweep+pooled", "unknown modifier '\\+pooled'"),
                                        ("eig_sweep+shared(gamma", r"unknown modifier '\+shared\(gamma'")])
def test_bad_deprecated_names_are_refused(bad, match):
    with pytest.raises(ValueError, match=match), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        get_model(bad)


def test_density_equals_pyro_model_and_the_shared_prior_is_the_params_normal(data):
    feats = build_features(data)
    m = get_model(NAME, "softmax")
    par = Parameterisation(m, True, len(data))
    q = par.init(0.3, torch.Generator().manual_seed(2))
    cond = {(k[:-len("_logsigma")] + "_sigma" if k.endswith("_logsigma") else k):
            (v.exp() if k.endswith("_logsigma") else v) for k, v in q.items()}
    tr = pyro.poutine.trace(pyro.condition(pyro_model, data=cond)).get_trace(feats, par, True)
    jac = sum(v.sum() for k, v in q.items() if k.endswith("_logsigma"))
    assert float(log_density(feats, par, True, q)) == pytest.approx(float(tr.log_prob_sum() + jac), rel=1e-12)
    # moving the one shared gamma moves the prior by the Normal(0, 1) log density (GAMMA_SIZE's prior) alone
    q2 = {**q, "gamma_raw": q["gamma_raw"] + 0.7}
    d_prior = float(par.log_prior(q2)[0] - par.log_prior(q)[0])
    g = float(q["gamma_raw"])
    assert d_prior == pytest.approx(stats.norm.logpdf(g + 0.7) - stats.norm.logpdf(g), abs=1e-12)


def test_shared_likelihood_is_the_base_model_with_one_value_for_everybody(data):
    """The shared model's choice probabilities = the unshared model's, given every participant the same gamma and
    stop_a (so sharing changes the prior layout only, not the choice model)."""
    feats = build_features(data)
    shared, base = get_model(NAME), get_model("eig_sweep")
    par = Parameterisation(shared, True, len(data))
    q = par.init(0.5, torch.Generator().manual_seed(3))
    _, raw = par.log_prior(q)
    th = par.theta(raw)
    assert torch.all(th["gamma"] == float(q["gamma_raw"])) and torch.all(th["stop_a"] == float(q["stop_a_raw"]))
    by_hand = {k: v.clone() for k, v in th.items()}
    by_hand["gamma"] = torch.full((len(data),), float(q["gamma_raw"]), dtype=torch.float64)
    by_hand["stop_a"] = torch.full((len(data),), float(q["stop_a_raw"]), dtype=torch.float64)
    assert torch.allclose(shared.log_probs(feats, th), base.log_probs(feats, by_hand), rtol=0, atol=0)
