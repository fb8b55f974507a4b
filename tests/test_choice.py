"""Choice models: probabilities normalise, and EIG-softmax matches a brute-force enumeration by hand."""

import itertools
import math
import re

import numpy as np
import pytest
import torch
from causalplay.models.choice import REGISTRY, LearnerConfig, available_models, build_features, get_model

from causalplay.core.rules import make_rule
from causalplay.data import load_nexiom


@pytest.fixture(scope="module")
def feats():
    return build_features(load_nexiom().subset(["P001", "P003", "P004"]))


def _theta(model, P, **over):
    th = {p.name: p.constrain(torch.full((P,), p.loc, dtype=torch.float64)) for p in model.all_params()}
    th.update({k: torch.full((P,), float(v), dtype=torch.float64) for k, v in over.items()})
    return th


def test_registry_is_explicit_and_models_share_everything_but_the_set_choice():
    assert {"random", "eig_softmax", "eig_size", "eig_sweep", "naive", "positive", "size", "sweep", "size_sweep",
            "eig_plus_sweep", "eig_sweep_single"} == set(available_models()) == set(REGISTRY)
    with pytest.raises(ValueError, match="unknown choice model 'nope'"):
        get_model("nope")
    # rho, stopping, lapse and judgement parameters are the same in every model (rho fitted everywhere).
    common = {"rho", "stop_a", "stop_h", "stop_t", "lapse", "judge_lapse"}
    for name, m in REGISTRY.items():
        names = [p.name for p in m.all_params()]
        assert common <= set(names) and len(names) == len(set(names)), name
        assert set(names) - common == {p.name for p in m.params}, name
    soft = get_model("eig_sweep", "softmax")
    assert "judge_beta" in [p.name for p in soft.all_params()] and get_model("eig_sweep").judge.name == "sample"


def test_features_count_and_encode_choices(feats):
    # P001 ran 15 tests, P003 6, P004 6: one decision per test plus the stop.
    assert feats.n_decisions == 16 + 7 + 7
    assert feats.n_options == 17
    assert feats.choice[0] == 0b0011  # P001 test 1 put objects 0 and 1 on
    assert feats.choice[15] == 16  # then stopped
    assert feats.t[:3].tolist() == [0, 1, 2] and not feats.can_stop[0] and feats.can_stop[1]
    assert feats.judgement[0] == 1 * 16 + 0b1010  # conjunctive, blickets 1 and 3


@pytest.mark.parametrize("name", sorted(REGISTRY))
@pytest.mark.parametrize("judgement", ["sample", "softmax"])
def test_probabilities_normalise_and_no_stop_before_first_test(feats, name, judgement):
    m = get_model(name, judgement)
    lp = m.log_probs(feats, _theta(m, 3))
    assert torch.allclose(lp.logsumexp(-1), torch.zeros(lp.shape[0], dtype=torch.float64), atol=1e-12)
    assert torch.isinf(lp[feats.t == 0, 16]).all()
    jl = m.judgement_log_probs(feats, _theta(m, 3))
    assert torch.allclose(jl.logsumexp(-1), torch.zeros(3, dtype=torch.float64), atol=1e-12)


def _brute_force_eig_softmax(history, beta, rho, lapse, stop_a, stop_h, stop_t, noise=0.01):
    """Enumerate the 32 hypotheses, the EIG of each of the 16 sets and the 17 option probabilities by hand."""
    hyps = [(r, s) for r in ("disjunctive", "conjunctive") for s in range(16)]
    pc = 1 / (1 + math.exp(-rho))
    post = []
    for r, s in hyps:
        w = (pc if r == "conjunctive" else 1 - pc) / 16
        for objs, lit in history:
            k = bin(s & objs).count("1")
            p = float(make_rule(r, noise).p_lit(torch.tensor(float(k))))
            w *= p if lit else 1 - p
        post.append(w)
    post = np.array(post) / sum(post)

    def hb(p):
        return -sum(x * math.log2(x) for x in (p, 1 - p) if x > 0)

    eig = []
    for c in range(16):
        ps = [float(make_rule(r, noise).p_lit(torch.tensor(float(bin(s & c).count("1"))))) for r, s in hyps]
        p_on = float(np.dot(post, ps))
        eig.append(hb(p_on) - float(np.dot(post, [hb(p) for p in ps])))
    eig = np.array(eig)
    soft = np.exp(beta * eig - (beta * eig).max())
    soft /= soft.sum()
    sets = (1 - lapse) * soft + lapse / 16
    H = -sum(p * math.log2(p) for p in post if p > 0)
    t = len(history)
    ps = 1 / (1 + math.exp(-(stop_a + stop_h * (H - 2) + stop_t * (t - 5) / 5))) if t >= 1 else 0.0
    return np.append((1 - ps) * sets, ps)


def test_eig_softmax_matches_brute_force(feats):
    m = get_model("eig_softmax")
    vals = dict(beta=2.5, rho=0.7, lapse=0.1, stop_a=-1.0, stop_h=-0.8, stop_t=0.4)
    lp = m.log_probs(feats, _theta(m, 3, **vals)).exp()
    d = load_nexiom().histories()["P001"]
    codes = [int(sum(1 << int(i) for i in np.flatnonzero(x))) for x in d.trials]
    for j in (0, 1, 4, 15):  # decisions of P001 after j tests
        want = _brute_force_eig_softmax(list(zip(codes[:j], d.lit[:j], strict=True)), **vals)
        # 1e-6: measured agreement is 2.3e-7 relative at worst (decision 15); not chased further -- far below any
        # effect on fits.
        np.testing.assert_allclose(lp[j].numpy(), want, rtol=1e-6, atol=1e-12)


def test_naive_prefers_untested_single_objects(feats):
    m = get_model("naive")
    lp = m.log_probs(feats, _theta(m, 3, beta=50.0, lapse=1e-9, stop_a=-30.0)).exp()
    singles = [1, 2, 4, 8]
    assert lp[0, singles].sum() == pytest.approx(1.0, abs=1e-9)
    # P001 never tested a single object, so all four stay equally attractive throughout.
    np.testing.assert_allclose(lp[5, singles].numpy(), 0.25, atol=1e-6)


def test_eig_sweep_single_adds_kappa_to_every_untested_single_object(feats):
    from causalplay.models.choice.base import learner_posterior

    single, base = get_model("eig_sweep_single"), get_model("eig_sweep")
    th = {k: v[feats.pid] for k, v in _theta(single, 3, kappa=1.5, beta=2.0, gamma=-0.3, delta=1.0).items()}
    log_w = learner_posterior(feats, feats.ll, th["rho"], feats.pid, None)
    diff = (single.set_logits(feats, th, log_w) - base.set_logits(feats, th, log_w)).numpy()
    # P001 (decisions 0-15) tested pairs and triples, then {0}, {1}, {2}, {3} alone as tests 12-15: +1.5 on every
    # single not yet tested alone, 0 on every other set
    want = np.zeros((16, 16))
    for j in range(16):
        for obj in range(max(0, j - 11), 4):
            want[j, 1 << obj] = 1.5
    np.testing.assert_allclose(diff[:16], want, rtol=0, atol=1e-12)  # two sums of the same terms: rounding only


def test_positive_testing_prefers_sets_expected_to_light(feats):
    """Positive testing (Klayman & Ha): the preference is the learner's predicted P(lit), by hand."""
    m = get_model("positive")
    th = _theta(m, 3, beta=2.0, lapse=1e-12, stop_a=-30.0, rho=0.0)
    lp = m.log_probs(feats, th).exp()
    # Before any test (uniform over 32 hypotheses, noise 0.01): P(lit) of a set = average over hypotheses.
    hyps = [(r, s) for r in ("disjunctive", "conjunctive") for s in range(16)]
    p_lit = np.array([np.mean([float(make_rule(r, 0.01).p_lit(torch.tensor(float(bin(s & c).count("1")))))
                               for r, s in hyps]) for c in range(16)])
    want = np.exp(2.0 * p_lit) / np.exp(2.0 * p_lit).sum()
    np.testing.assert_allclose(lp[0, :16].numpy(), want, rtol=1e-6)  # as in the EIG brute-force test above
    # After all 15 of P001's tests (conjunctive, blickets 1 and 3) every superset of {1, 3} surely lights.
    lp = m.log_probs(feats, _theta(m, 3, beta=200.0, lapse=1e-9, stop_a=-30.0, rho=3.0)).exp()
    assert lp[15, [0b1010, 0b1011, 0b1110, 0b1111]].sum() > 0.99


def test_judgement_is_learner_posterior_with_lapse(feats):
    m = get_model("eig_softmax")
    th = _theta(m, 3, judge_lapse=0.2, rho=0.0)
    jl = m.judgement_log_probs(feats, th).exp()
    post = m.posterior(feats, feats.final_ll, th["rho"]).exp()
    np.testing.assert_allclose(jl.numpy(), (0.8 * post + 0.2 / 32).numpy(), rtol=1e-12)


def test_tempered_judgement_by_hand(feats):
    m = get_model("eig_softmax", "softmax")
    post = m.posterior(feats, feats.final_ll, torch.zeros(3, dtype=torch.float64)).exp()
    th = _theta(m, 3, judge_lapse=0.1, rho=0.0, judge_beta=1.0)
    np.testing.assert_allclose(m.judgement_log_probs(feats, th).exp().numpy(), (0.9 * post + 0.1 / 32).numpy(),
                               rtol=1e-10)  # beta = 1 is posterior sampling
    th = _theta(m, 3, judge_lapse=0.1, rho=0.0, judge_beta=3.0)
    sharp = post**3 / (post**3).sum(-1, keepdim=True)
    np.testing.assert_allclose(m.judgement_log_probs(feats, th).exp().numpy(), (0.9 * sharp + 0.1 / 32).numpy(),
                               rtol=1e-10)


def test_learner_config_validates():
    with pytest.raises(ValueError, match="blicket_prior"):
        LearnerConfig(blicket_prior=1.0).space(4)


def test_all_sixteen_sets_in_code_order(feats):
    sets = feats.candidates.numpy().astype(int)
    assert [int(sum(b << i for i, b in enumerate(row))) for row in sets] == list(range(16))
    assert list(itertools.chain(feats.sizes.tolist())) == [bin(c).count("1") for c in range(16)]


def test_sweep_feature_by_hand(feats):
    from causalplay.models.choice.features import sweep as sweep_feature

    s = sweep_feature(feats)
    # P001: first decision -> every set containing object 0 (odd codes); after testing (0, 1) the sweep moves to
    # object 2: {2} and {2, 3}; after (2, 3) every object has been used, so no set is "next".
    assert s[0].nonzero().flatten().tolist() == [1, 3, 5, 7, 9, 11, 13, 15]
    assert s[1].nonzero().flatten().tolist() == [4, 12]
    assert s[2].sum() == 0


def test_choice_models_take_the_packages_spec_grammar():
    """``name:key=value`` (the grammar of agents and DAG agents) names the models; a modified model's name is its
    spec; the deprecated ``+`` forms warn, naming that spec, and give the same model."""
    from causalplay.models.choice import get_model

    pairs = [("eig_sweep:shared=[gamma,stop_a]:transfer=True", "eig_sweep+shared(gamma,stop_a)+transfer"),
             ("eig_sweep:shared=[gamma]", "eig_sweep+shared(gamma)"), ("random:transfer=True", "random+transfer")]
    for spec, legacy in pairs:
        a = get_model(spec)
        warned = re.escape(f"deprecated and will be removed in 0.4; write {spec!r}")
        with pytest.warns(DeprecationWarning, match=warned):
            b = get_model(legacy)
        assert a.name == b.name == spec and [p.name for p in a.all_params()] == [p.name for p in b.all_params()]
    assert get_model("eig_sweep:shared=gamma").name == get_model("eig_sweep:shared=['gamma']").name == \
        "eig_sweep:shared=[gamma]"
    assert get_model("eig_sweep:judgement=softmax").judgement.name == "softmax"
    with pytest.raises(ValueError, match=r"choice model option\(s\) \['bogus'\] in 'eig_sweep:bogus=1'"):
        get_model("eig_sweep:bogus=1")
