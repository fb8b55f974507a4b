"""Overhypothesis inference (issue 15): exact vs brute force, the Pyro model, NUTS/SVI, transfer, errors."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import torch
from brute import lit_prob, posterior, prior_of
from causalplay.models.sigmoid import SigmoidPrior

import causalplay
from causalplay.core.overhypothesis import (
    SequenceBatch,
    collapsed_log_density,
    episode_evidence,
    infer_overhypothesis,
    sigmoid_grid,
)
from causalplay.core.rules import Sigmoid
from causalplay.core.spec import HypothesisSpace, WorldSpec

CONJ = [([0], False), ([1], False), ([2], False), ([0, 1], False), ([0, 2], True), ([1, 2], False)]
DISJ = [([0], True), ([1], False), ([2], False), ([0, 1], True), ([0, 2], True), ([1, 2], False)]
TEST = [([0, 1], True), ([2], False)]


def brute_evidence(history, n, rule, noise, p=1 / 3):
    """sum over all 2^n sets of prior * likelihood, written out by hand (rule: name or (gain, bias))."""
    total = 0.0
    for bits in itertools.product([0, 1], repeat=n):
        x = prior_of(bits, p)
        for trial, lit in history:
            k = sum(bits[i] for i in trial)
            if isinstance(rule, str):
                q = lit_prob(rule, k, noise)
            else:
                f = 1 / (1 + math.exp(-rule[0] * (k - rule[1])))
                q = (1 - noise) * f + noise * (1 - f)
            x *= q if lit else 1 - q
        total += x
    return total


def brute_theta_posterior(episodes, n, noise, a, b):
    """Predictive P(conjunctive next), sd of theta_conj and log evidence by adaptive quadrature over theta_conj
    (prior Beta(a, b) on theta_conj)."""
    from scipy.integrate import quad

    Ld = [brute_evidence(h, n, "disjunctive", noise) for h in episodes]
    Lc = [brute_evidence(h, n, "conjunctive", noise) for h in episodes]
    lbeta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)

    def w(t, power):
        like = math.prod(t * c + (1 - t) * d for c, d in zip(Lc, Ld, strict=True))
        return t ** (a - 1 + power) * (1 - t) ** (b - 1) * like / math.exp(lbeta)

    z, m1, m2 = (quad(w, 0, 1, args=(p,), epsabs=1e-14, epsrel=1e-12, limit=200)[0] for p in (0, 1, 2))
    return m1 / z, math.sqrt(m2 / z - (m1 / z) ** 2), math.log(z)


def test_episode_evidence_matches_brute_force_for_rules_and_sigmoids():
    n, noise = 3, 0.1
    hs = [CONJ, DISJ, TEST, []]
    spec = WorldSpec.from_options(n, ("disjunctive", "conjunctive"), None, 1 / 3, None, noise)
    space = HypothesisSpace.build(spec)
    batch = causalplay.HistoryBatch.from_histories([causalplay.History.from_pairs(h, n) for h in hs], n)
    got = episode_evidence(space, spec.rules, batch.trials, batch.lit, batch.mask).exp().numpy()
    want = [[brute_evidence(h, n, r, noise) for r in ("disjunctive", "conjunctive")] for h in hs]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    sig = [(3.0, 0.5), (8.0, 1.5), (0.7, 2.2)]
    got = episode_evidence(space, [Sigmoid(noise=noise, gain=g, bias=b) for g, b in sig], batch.trials, batch.lit,
                           batch.mask).exp().numpy()
    np.testing.assert_allclose(got, [[brute_evidence(h, n, s, noise) for s in sig] for h in hs], rtol=1e-12)
    # a deterministic rule that cannot explain an episode gives exactly -inf, not NaN
    spec0 = WorldSpec.from_options(n, ("disjunctive", "conjunctive"), None, 1 / 3, None, 0.0)
    s0 = HypothesisSpace.build(spec0)
    b0 = causalplay.HistoryBatch.from_histories([causalplay.History.from_pairs(DISJ, n)], n)
    ll = episode_evidence(s0, spec0.rules, b0.trials, b0.lit, b0.mask)
    assert torch.isneginf(ll[0, 1]) and torch.isfinite(ll[0, 0])


@pytest.mark.parametrize("alpha", [(1.0, 1.0), (0.5, 2.0)])
def test_rules_form_dirichlet_mixture_matches_quadrature(alpha):
    eps = [CONJ, CONJ, DISJ, TEST]
    post = infer_overhypothesis(eps, n_objects=3, noise=0.1, concentration=alpha)
    m, sd, logz = brute_theta_posterior(eps, 3, 0.1, alpha[1], alpha[0])
    z = math.exp(logz)
    assert post.mean().iloc[0, 1] == pytest.approx(m, abs=1e-8)
    assert post.sd().iloc[0, 1] == pytest.approx(sd, abs=1e-7)
    assert post.log_evidence[0] == pytest.approx(logz, abs=1e-8)
    assert post.predictive_rule_probs()[0, 1] == pytest.approx(m, abs=1e-8)
    x = np.linspace(0.01, 0.99, 7)
    Ld = np.array([brute_evidence(h, 3, "disjunctive", 0.1) for h in eps])
    Lc = np.array([brute_evidence(h, 3, "conjunctive", 0.1) for h in eps])

    def unnorm(t):
        return t ** (alpha[1] - 1) * (1 - t) ** (alpha[0] - 1) * np.prod(t[:, None] * Lc + (1 - t[:, None]) * Ld, 1)

    lbeta = math.lgamma(alpha[0]) + math.lgamma(alpha[1]) - math.lgamma(sum(alpha))
    np.testing.assert_allclose(post.theta_density(x, "conjunctive")[0], unnorm(x) / math.exp(lbeta) / z, rtol=1e-9)


def test_three_rules_mixture_matches_a_simplex_grid():
    eps = [CONJ, DISJ, [([0, 1, 2], True), ([0, 1], False)]]
    rules = ("disjunctive", "conjunctive", "threshold3")
    post = infer_overhypothesis(eps, n_objects=3, rules=rules, noise=0.1)
    spec = WorldSpec.from_options(3, rules, None, 1 / 3, None, 0.1)
    space = HypothesisSpace.build(spec)
    b = causalplay.HistoryBatch.from_histories([causalplay.History.from_pairs(h, 3) for h in eps], 3)
    L = episode_evidence(space, spec.rules, b.trials, b.lit, b.mask).exp().numpy()  # checked above
    g = (np.arange(600) + 0.5) / 600
    t1, t2 = np.meshgrid(g, g, indexing="ij")
    ok = t1 + t2 < 1
    th = np.stack([t1[ok], t2[ok], 1 - t1[ok] - t2[ok]], -1)
    w = np.prod(th @ L.T, 1)
    mean = (w[:, None] * th).sum(0) / w.sum()
    np.testing.assert_allclose(post.mean().to_numpy()[0], mean, atol=2e-3)


def test_sigmoid_grid_posterior_matches_brute_force():
    sp = SigmoidPrior()
    eps = [CONJ, TEST]
    post = infer_overhypothesis(eps, n_objects=3, form="sigmoid", grid=5, noise=0.05)
    gb, gg, glp = sigmoid_grid(sp, 5)
    lw = np.array([glp[i].item() + sum(math.log(brute_evidence(h, 3, (gg[i].item(), gb[i].item()), 0.05))
                                       for h in eps) for i in range(len(gb))])
    lw -= np.logaddexp.reduce(lw)
    np.testing.assert_allclose(post.log_w[0].numpy(), lw, atol=1e-10)
    # the grid's prior mass: midpoints of +-4 sd, normal densities, normalised
    assert glp.exp().sum().item() == pytest.approx(1.0)


def test_pyro_model_enumerated_density_equals_the_collapsed_density():
    import pyro
    from causalplay.models.overhypothesis import overhypothesis_model
    from pyro import poutine
    from pyro.infer import TraceEnum_ELBO

    seqs = SequenceBatch.from_sequences([[CONJ, TEST], [DISJ]], 3)  # second learner: one episode (padding)
    assert seqs.mask.shape == (2, 2, 6) and not bool(seqs.mask[1, 1].any())
    alpha = torch.tensor([0.7, 1.3], dtype=torch.float64)
    def t(x):  # requires_grad: TraceEnum_ELBO only returns a differentiable loss
        return torch.tensor(x, dtype=torch.float64, requires_grad=True)

    for form, params in (("rules", {"rule_weights": t([[0.3, 0.7], [0.8, 0.2]])}),
                         ("sigmoid", {"bias": t([0.8, 1.4]), "gain": t([3.0, 9.0])})):
        spec = WorldSpec.from_options(3, ("disjunctive", "conjunctive") if form == "rules" else "disjunctive", None,
                                      1 / 3, None, 0.1)
        space = HypothesisSpace.build(spec)
        f = collapsed_log_density(seqs, space, form, alpha, SigmoidPrior(), 0.1)
        want = f(params).sum().item()
        shaped = {k: v.reshape((2, 1, 1) + v.shape[1:]) for k, v in params.items()}

        def model(spec=spec, form=form):
            return overhypothesis_model(seqs.trials, seqs.lit, seqs.mask, spec=spec, form=form, concentration=alpha,
                                        sigmoid_prior=SigmoidPrior(), noise=0.1 if form == "sigmoid" else 0.0)

        cond = poutine.condition(model, data=shaped)
        with pyro.get_param_store().scope():
            got = -TraceEnum_ELBO(max_plate_nesting=3).differentiable_loss(cond, lambda: None).item()
        assert got == pytest.approx(want, abs=1e-9), form


def test_model_samples_share_one_rule_draw_per_sequence():
    import pyro
    from causalplay.models.overhypothesis import overhypothesis_model

    spec = WorldSpec.from_options(3, ("disjunctive", "conjunctive"), None, 1 / 3, None, 0.0)
    trials = torch.ones(400, 6, 1, 3, dtype=torch.float64)  # all objects on: lit iff the rule's count is met
    with pyro.get_param_store().scope(), torch.random.fork_rng():
        pyro.set_rng_seed(0)
        tr = pyro.poutine.trace(overhypothesis_model).get_trace(trials, spec=spec, concentration=torch.tensor(
            [0.05, 0.05]))
    rule = tr.nodes["rule"]["value"][..., 0]  # [B, K]
    assert rule.shape == (400, 6)
    # tiny concentration: theta is near a vertex, so a sequence's machines nearly always share the rule
    assert (rule == rule[:, :1]).all(1).float().mean() > 0.85
    assert 0.35 < rule.double().mean() < 0.65


def test_transfer_pattern_both_forms():
    none = causalplay.infer(TEST, n_objects=3, noise=0.05)
    for form in ("rules", "sigmoid"):
        out = {}
        for name, tr in (("conj", CONJ), ("disj", DISJ)):
            post = infer_overhypothesis([tr] * 3, n_objects=3, noise=0.05, form=form, grid=21)
            out[name] = causalplay.infer(TEST, n_objects=3, overhypothesis=post)
        # conjunctive training: D alone would not light (both D and E needed); F's darkness says nothing
        assert out["conj"].predict([0]) < none.predict([0]) < out["disj"].predict([0]), form
        assert out["disj"].predict([0]) - out["conj"].predict([0]) > 0.2, form
        assert out["conj"].blicket_prob[0] > out["disj"].blicket_prob[0], form
        assert out["conj"].blicket_prob[2] > 2 * out["disj"].blicket_prob[2], form


def test_infer_with_overhypothesis_equals_brute_force_with_the_predictive_rule_prior():
    post = infer_overhypothesis([CONJ, CONJ, DISJ], n_objects=3, noise=0.1)
    rho = post.predictive_rule_probs()[0]
    b = causalplay.infer(TEST, n_objects=3, overhypothesis=post)
    ref = posterior(TEST, 3, ["disjunctive", "conjunctive"], rule_prior=list(rho), p=1 / 3, noise=0.1)
    bp = [sum(v for (bits, _), v in ref.items() if bits[i]) for i in range(3)]
    np.testing.assert_allclose(b.blicket_prob, bp, atol=1e-12)
    # a bigger new machine: the per-object prior carries over
    b5 = causalplay.infer([([0, 4], True)], n_objects=5, overhypothesis=post)
    assert b5.rule_prob["conjunctive"] > causalplay.infer([([0, 4], True)], n_objects=5,
                                                          noise=0.1).rule_prob["conjunctive"]


def test_batched_equals_one_at_a_time_and_frame_input():
    seqs = [[CONJ, TEST, CONJ], [DISJ], [TEST, DISJ]]
    batch = infer_overhypothesis(SequenceBatch.from_sequences(seqs, 3), noise=0.1)
    for i, s in enumerate(seqs):
        one = infer_overhypothesis(s, n_objects=3, noise=0.1)
        np.testing.assert_allclose(batch[i].mean().to_numpy(), one.mean().to_numpy(), atol=1e-12)
        assert batch.log_evidence[i] == pytest.approx(one.log_evidence[0], abs=1e-10)
    rows = [{"learner": f"p{i}", "episode": f"m{e}", "objects": list(o), "lit": lt, "trial": t}
            for i, s in enumerate(seqs) for e, h in enumerate(s) for t, (o, lt) in enumerate(h)]
    df = pd.DataFrame(rows).sample(frac=1.0, random_state=0)  # order restored from the trial column
    fr = infer_overhypothesis(df, n_objects=3, noise=0.1, sequence="learner")
    assert fr.keys == ("p0", "p1", "p2") or set(fr.keys) == {"p0", "p1", "p2"}
    for i, k in enumerate(fr.keys):
        j = int(k[1])
        np.testing.assert_allclose(fr[i].mean().to_numpy(), batch[j].mean().to_numpy(), atol=1e-12)
    one_learner = pd.DataFrame([r for r in rows if r["learner"] == "p0"]).drop(columns=["learner"])
    single = infer_overhypothesis(one_learner, n_objects=3, noise=0.1)  # no sequence column: one learner
    np.testing.assert_allclose(single.mean().to_numpy(), batch[0].mean().to_numpy(), atol=1e-12)
    sig = infer_overhypothesis(SequenceBatch.from_sequences(seqs, 3), noise=0.1, form="sigmoid", grid=9)
    one = infer_overhypothesis(seqs[2], n_objects=3, noise=0.1, form="sigmoid", grid=9)
    np.testing.assert_allclose(sig[2].log_w.numpy(), one.log_w.numpy(), atol=1e-12)


def test_exact_samples_match_the_exact_moments():
    post = infer_overhypothesis([CONJ, DISJ, TEST], n_objects=3, noise=0.1)
    s = post.sample(20000, seed=1)["rule_weights"][0, :, 1]
    m, sd = post.mean().iloc[0, 1], post.sd().iloc[0, 1]
    assert abs(s.mean() - m) < 4 * sd / math.sqrt(len(s))  # 4 standard errors
    assert s.std() == pytest.approx(sd, rel=0.03)


def test_nuts_agrees_with_exact_rules_form():
    eps = [CONJ, CONJ, TEST]
    ex = infer_overhypothesis(eps, n_objects=3, noise=0.1)
    nu = infer_overhypothesis(eps, n_objects=3, noise=0.1, method="nuts", num_samples=300, warmup_steps=150, seed=0)
    # 300 draws, n_eff > 100: MC standard error of the mean < 0.25 / 10; tolerance 0.06
    assert nu.info["n_eff"][0][0] > 100
    assert nu.mean().iloc[0, 1] == pytest.approx(ex.mean().iloc[0, 1], abs=0.06)
    assert nu.sd().iloc[0, 1] == pytest.approx(ex.sd().iloc[0, 1], abs=0.05)


def test_svi_agrees_with_exact_sigmoid_form_and_leaves_global_state_alone():
    import pyro

    eps = [CONJ, CONJ]
    ex = infer_overhypothesis(eps, n_objects=3, noise=0.05, form="sigmoid")
    torch.manual_seed(123)
    before = torch.get_rng_state()
    np_before = np.random.get_state()[1].copy()  # noqa: NPY002
    n_params = len(list(pyro.get_param_store().keys()))
    sv = infer_overhypothesis(eps, n_objects=3, noise=0.05, form="sigmoid", method="svi", svi_steps=300,
                              num_samples=4000, seed=0)
    assert torch.equal(torch.get_rng_state(), before)
    assert np.array_equal(np.random.get_state()[1], np_before)  # noqa: NPY002
    assert len(list(pyro.get_param_store().keys())) == n_params
    # Gaussian guide on (bias, log gain): means within 0.1, sds within 25% of the exact grid posterior
    np.testing.assert_allclose(sv.mean().to_numpy(), ex.mean().to_numpy(), atol=0.1)
    np.testing.assert_allclose(sv.sd().to_numpy(), ex.sd().to_numpy(), rtol=0.25)
    again = infer_overhypothesis(eps, n_objects=3, noise=0.05, form="sigmoid", method="svi", svi_steps=300,
                                 num_samples=4000, seed=0)
    np.testing.assert_array_equal(again.samples["bias"], sv.samples["bias"])


def test_predictive_prior_of_sigmoid_form_is_a_weighted_mixture():
    post = infer_overhypothesis([CONJ], n_objects=3, noise=0.05, form="sigmoid", grid=11)
    spec = post.predictive_prior(n_objects=4)
    assert spec.n_objects == 4 and len(spec.rules) <= 121
    assert sum(spec.rule_prior) == pytest.approx(1.0)
    # P(lit | k) of the mixture = posterior mean of the sigmoid's P(lit | k)
    w = post.log_w[0].exp()
    k = torch.arange(5, dtype=torch.float64)
    f = torch.sigmoid(post.grid_gain[:, None] * (k - post.grid_bias[:, None]))
    want = w @ (0.95 * f + 0.05 * (1 - f))
    got = sum(p * r.table(4) for p, r in zip(spec.rule_prior, spec.rules, strict=True))
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-9)


@pytest.mark.parametrize("kw, err, match", [
    ({"form": "gaussian"}, ValueError, "form must be one of"),
    ({"method": "mcmc"}, ValueError, "method must be one of"),
    ({"concentration": 0.0}, ValueError, "concentration"),
    ({"concentration": [1.0, 2.0, 3.0]}, ValueError, "3 entries for 2 rules"),
    ({"concentration": {"trijunctive": 1.0}}, ValueError, "unknown rule 'trijunctive'"),
    ({"n_objects": 2}, ValueError, "n_objects"),
])
def test_bad_arguments(kw, err, match):
    with pytest.raises(err, match=match):
        infer_overhypothesis([CONJ], **{"n_objects": 3, **kw})


def test_bad_inputs():
    with pytest.raises(ValueError, match="episodes is empty"):
        infer_overhypothesis([])
    with pytest.raises(TypeError, match="episodes must be"):
        infer_overhypothesis(42)
    with pytest.raises(causalplay.InconsistentEvidenceError, match="sequence 0"):
        infer_overhypothesis([[([0], True), ([0], False)]], n_objects=2)
    post = infer_overhypothesis(SequenceBatch.from_sequences([[CONJ], [DISJ]], 3), noise=0.1)
    with pytest.raises(ValueError, match=r"post\[i\]"):
        causalplay.infer(TEST, n_objects=3, overhypothesis=post)
    with pytest.raises(ValueError, match="do not also pass rule_prior"):
        causalplay.infer(TEST, n_objects=3, overhypothesis=post[0], rule_prior=[0.5, 0.5])
    with pytest.raises(TypeError, match="OverhypothesisPosterior"):
        causalplay.infer(TEST, n_objects=3, overhypothesis={"conjunctive": 0.9})
    with pytest.raises(ValueError, match="theta_density needs"):
        infer_overhypothesis([CONJ], n_objects=3, form="sigmoid", grid=3, noise=0.1).theta_density([0.5])
