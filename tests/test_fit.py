"""Fitting: the NUTS density equals the Pyro model's, fits return well-formed ArviZ data, score, compare."""

import math
import warnings

import arviz as az
import numpy as np
import pandas as pd
import pyro
import pytest
import torch
from causalplay.models.choice_base import build_features, get_model

import causalplay
from causalplay.data import load_nexiom, load_trials
from causalplay.fitting import _init_q, _log_joint, _pyro_model


@pytest.fixture(scope="module")
def split():
    d = load_nexiom()
    return d.subset(d.ids[:10]), d.subset(d.ids[10:14])


@pytest.mark.parametrize("hierarchical", [True, False])
def test_nuts_density_equals_pyro_model(split, hierarchical):
    """The hand-written log density used by NUTS = Pyro's log joint (+ log-sigma Jacobian), at a random point."""
    data, _ = split
    feats = build_features(data)
    cm = get_model("eig_size")
    gen = torch.Generator().manual_seed(1)
    q = {k: v + 0.3 * torch.randn(v.shape, generator=gen, dtype=torch.float64)
         for k, v in _init_q(cm, hierarchical, len(data)).items()}
    cond = {(k[:-len("_logsigma")] + "_sigma" if k.endswith("_logsigma") else k):
            (v.exp() if k.endswith("_logsigma") else v) for k, v in q.items()}
    tr = pyro.poutine.trace(pyro.condition(_pyro_model, data=cond)).get_trace(feats, cm, hierarchical, True)
    jac = sum(v.sum() for k, v in q.items() if k.endswith("_logsigma")) if hierarchical else 0.0
    assert float(_log_joint(feats, cm, hierarchical, True, q)) == pytest.approx(float(tr.log_prob_sum() + jac),
                                                                               rel=1e-12)


def test_svi_fit_idata_score_compare_simulate(split, tmp_path):
    data, held = split
    fits = {m: causalplay.fit(data, model=m, method="svi", svi_steps=100, num_samples=60, progress=False)
            for m in ("random", "eig_softmax")}
    f = fits["eig_softmax"]
    idata = f.idata
    assert {"posterior", "log_likelihood", "observed_data", "constant_data"} <= set(idata.groups())
    assert idata.posterior["beta"].dims == ("chain", "draw", "participant")
    assert list(idata.posterior["participant"].values) == data.ids
    ll = idata.log_likelihood["choice"]
    assert ll.dims == ("chain", "draw", "choice") and ll.sizes["choice"] == data.n_choices
    assert (idata.log_likelihood["test"].values[:3] == [1, 2, 3]).all()
    assert idata.constant_data["true_blickets"].dims == ("participant", "object")
    # Pointwise choice log-likelihood: each entry is a log probability, and at most 0.
    assert float(ll.max()) <= 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isfinite(az.loo(idata, var_name="choice").elpd_loo)
    s = f.score(held, n_draws=100, n_new=2)
    assert s.n_choices == held.n_choices
    total, n = s
    assert total == pytest.approx(s.per_participant.sum()) and total < 0
    # Sanity bound: each participant's predictive probability is below 1 and above the random-with-lapse floor.
    assert -s.total_nats / s.n_choices < math.log(17) + 1.0
    with pytest.raises(ValueError, match="not used in fitting"):
        f.score(data)
    table = causalplay.compare(fits)
    assert set(table.index) == {"random", "eig_softmax"} and "elpd_loo" in table.columns
    with pytest.warns(UserWarning, match="SVI"):
        f.diagnostics()
    assert isinstance(f.summary(), pd.DataFrame)
    # Simulated participants obey the schema and the machine: writing them out and reloading flags nothing.
    sim = f.simulate(seed=3)
    assert len(sim) == len(data) and (sim.participants["n_tests"] >= 1).all()
    folder = tmp_path / "sim"
    folder.mkdir()
    p = sim.participants.copy()
    for c in ("true_blickets", "judged_blickets"):
        p[c] = p[c].map(lambda x: " ".join(map(str, x)))
    t = sim.tests.drop(columns=["possible"]).copy()
    t["objects_on"] = t["objects_on"].map(lambda x: " ".join(map(str, x)))
    p.to_csv(folder / "participants.csv", index=False)
    t.to_csv(folder / "tests.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = load_trials(folder, n_objects=4)
    assert again.n_choices == sim.n_choices
    new = f.simulate(5, seed=1)
    assert len(new) == 5


def test_short_nuts_two_chains(split):
    data, _ = split
    f = causalplay.fit(data.subset(data.ids[:4]), model="random", method="nuts", warmup=20, num_samples=10,
                       chains=2, progress=False)
    assert f.idata.posterior.sizes["chain"] == 2 and f.idata.posterior.sizes["draw"] == 10
    assert f.idata.sample_stats["diverging"].dtype == bool
    d = f.diagnostics(warn=False)
    assert {"rhat_max", "ess_bulk_min", "divergences", "ok", "problems"} <= set(d)


def test_bad_arguments(split):
    data, _ = split
    with pytest.raises(TypeError, match="TrialData"):
        causalplay.fit(pd.DataFrame())
    with pytest.raises(ValueError, match="method"):
        causalplay.fit(data, method="vi")
    with pytest.raises(ValueError, match="unknown choice model"):
        causalplay.fit(data, model="oracle")
    with pytest.raises(ValueError, match="num_samples"):
        causalplay.fit(data, num_samples=0)
    with pytest.raises(TypeError, match="dict"):
        causalplay.compare([])
