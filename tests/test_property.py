"""Property-based checks (Hypothesis) of the exact engine against the pure-Python enumerator in tests/brute.py.

brute.py works with any number type; fed :class:`fractions.Fraction` it computes exact posteriors, which is how
tiny noise (where ``1 - noise`` rounds to 1 in floating point) is checked to the digit.
"""

from fractions import Fraction

import brute
import numpy as np
import pytest
import torch

import causalplay
from causalplay.core.eig import eig_bits
from causalplay.core.history import all_trials
from causalplay.core.spec import HypothesisSpace, WorldSpec

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies
given, settings = hypothesis.given, hypothesis.settings

RULES = ("disjunctive", "conjunctive")
SETTINGS = dict(max_examples=40, deadline=None, derandomize=True)


@st.composite
def worlds(draw, max_n=4):
    n = draw(st.integers(1, max_n))
    trial = st.lists(st.integers(0, n - 1), unique=True, max_size=n)
    history = draw(st.lists(st.tuples(trial, st.booleans()), max_size=5))
    noise = draw(st.sampled_from([Fraction(0), Fraction(1, 10), Fraction(1, 3), Fraction(1, 10**12),
                                  Fraction(1, 10**17), Fraction(1, 10**300)]))
    if draw(st.booleans()):
        prior = dict(p=draw(st.sampled_from([Fraction(1, 3), Fraction(1, 2), Fraction(1, 10), Fraction(9, 10)])))
    else:
        counts = draw(st.lists(st.integers(0, n), unique=True, min_size=1, max_size=n + 1))
        prior = dict(counts={c: Fraction(1) for c in counts})
    rules = draw(st.sampled_from([RULES, ("disjunctive",), ("conjunctive",)]))
    return n, history, noise, prior, rules


def _kwargs(prior, rules, noise):
    kw = dict(rules=rules, noise=float(noise))
    if "p" in prior:
        kw["blicket_prior"] = float(prior["p"])
    else:
        kw["n_blickets"] = tuple(prior["counts"])
    return kw


def _brute(history, n, rules, prior, noise):
    return brute.posterior(history, n, rules, p=prior.get("p"), counts=prior.get("counts"), noise=noise)


@settings(**SETTINGS)
@given(worlds())
def test_posterior_matches_exact_enumeration(world):
    n, history, noise, prior, rules = world
    try:
        post = _brute(history, n, rules, prior, noise)
    except ZeroDivisionError:  # exact arithmetic: the evidence has probability 0 -> the engine must say so
        with pytest.raises(causalplay.InconsistentEvidenceError):
            causalplay.infer(history, n, **_kwargs(prior, rules, noise))
        return
    b = causalplay.infer(history, n, **_kwargs(prior, rules, noise))
    bp, rp = brute.marginals(post, n, rules)
    np.testing.assert_allclose(b.blicket_prob, [float(x) for x in bp], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose([b.rule_prob[r] for r in rules], [float(rp[r]) for r in rules], rtol=1e-9,
                               atol=1e-12)


@settings(**SETTINGS)
@given(worlds(max_n=4), st.sampled_from(["joint", "blickets", "rule"]))
def test_eig_matches_exact_enumeration(world, target):
    n, history, noise, prior, rules = world
    noise = noise if noise == 0 or noise >= Fraction(1, 10**6) else Fraction(1, 10)  # EIG works in probabilities
    try:
        b = causalplay.infer(history, n, **_kwargs(prior, rules, noise))
    except causalplay.InconsistentEvidenceError:
        return
    post = {h: float(v) for h, v in _brute(history, n, rules, prior, noise).items()}  # fits: infer did not raise
    cands = all_trials(n)
    ref = [brute.eig(post, np.flatnonzero(c).tolist(), target, float(noise)) for c in cands]
    np.testing.assert_allclose(b.eig(cands, target=target), ref, atol=1e-10)
    # The subset-sum transform (all trials at once) answers the same where it applies.
    if target != "blickets" or len(rules) == 1:
        space = b.space
        t = eig_bits(space, b.log_w[None], None, target, method="transform")[0].numpy()
        np.testing.assert_allclose(t, ref, atol=1e-10)


@settings(**SETTINGS)
@given(worlds(max_n=4))
def test_numpy_and_torch_scalars_give_the_same_answer(world):
    n, history, noise, prior, rules = world
    kw = _kwargs(prior, rules, noise)
    try:
        ref = causalplay.infer(history, n, **kw)
    except causalplay.InconsistentEvidenceError:
        return
    kw2 = dict(kw, noise=np.float64(kw["noise"]))
    if "blicket_prior" in kw:
        kw2["blicket_prior"] = torch.tensor(kw["blicket_prior"], dtype=torch.float64)
    else:
        kw2["n_blickets"] = [np.int64(c) for c in kw["n_blickets"]]
    other = causalplay.infer(history, np.int64(n), **kw2)
    np.testing.assert_array_equal(other.blicket_prob, ref.blicket_prob)


def test_tiny_noise_issue_example_exact():
    """Lit then dark on the same object: with any noise every hypothesis explains it equally (one flip each), so
    the posterior is the prior -- also at noise = 1e-17, where 1 - noise rounds to 1."""
    for noise in (1e-12, 1e-17, 1e-300):
        b = causalplay.infer([([0], True), ([0], False)], n_objects=3, noise=noise)
        np.testing.assert_allclose(b.blicket_prob, [1 / 3] * 3, rtol=1e-12)
        assert b.rule_prob == pytest.approx({"disjunctive": 0.5, "conjunctive": 0.5}, rel=1e-12)


def test_tiny_noise_single_observation_closed_form():
    """Disjunctive, one object, prior p, one lit trial: P(blicket) = p (1 - e) / (p (1 - e) + (1 - p) e)."""
    p = Fraction(1, 3)
    for e in (Fraction(1, 10**17), Fraction(1, 10**200)):
        want = p * (1 - e) / (p * (1 - e) + (1 - p) * e)
        b = causalplay.infer([([0], True)], 1, rules="disjunctive", blicket_prior=1 / 3, noise=float(e))
        assert b.blicket_prob[0] == pytest.approx(float(want), rel=1e-15)
        dark = causalplay.infer([([0], False)], 1, rules="disjunctive", blicket_prior=1 / 3, noise=float(e))
        want_dark = p * e / (p * e + (1 - p) * (1 - e))
        assert dark.blicket_prob[0] == pytest.approx(float(want_dark), rel=1e-12)


def test_count_sized_enumeration_matches_full_enumeration():
    """A count prior enumerates only its sets; the same space from filtering all 2**N sets must be identical."""
    spec = WorldSpec.from_options(12, n_blickets=(1, 11))
    space = HypothesisSpace.build(spec)
    full = torch.as_tensor(all_trials(12, include_empty=True))
    keep = full[torch.isin(full.sum(-1), torch.tensor([1, 11]))]
    assert torch.equal(space.sets.bool(), keep)
    assert space.n_sets == 12 + 12


def test_large_count_world_by_hand():
    """N = 40, exactly 2 blickets, both rules, AB lit. Disjunctive: the 780 - 703 = 77 pairs meeting {0, 1};
    conjunctive: only {0, 1}. All 78 equally likely, so P(conj) = 1/78, P(0) = (39 + 1)/78, P(2) = 2/78."""
    b = causalplay.infer([([0, 1], True)], 40, n_blickets=2)
    assert b.method == "exact" and b.space.n_hypotheses == 2 * 780
    assert b.rule_prob["conjunctive"] == pytest.approx(1 / 78, rel=1e-12)
    assert b.blicket_prob[0] == pytest.approx(40 / 78, rel=1e-12)
    assert b.blicket_prob[2] == pytest.approx(2 / 78, rel=1e-12)
    one = causalplay.infer([([0], True)], 25, n_blickets=1)
    assert one.space.n_hypotheses == 50 and one.blicket_prob.tolist() == [1.0] + [0.0] * 24
