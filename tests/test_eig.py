import math

import brute
import numpy as np
import pytest
import torch
from causalplay.models.blicket import BlicketWorld
from pyro.contrib.oed.eig import nmc_eig

import causalplay
from causalplay.api import make_spec
from causalplay.eig import exact_eig
from causalplay.history import History, all_trials

RULES = ("disjunctive", "conjunctive")


@pytest.mark.parametrize("target", ["joint", "blickets", "rule"])
@pytest.mark.parametrize("noise", [0.0, 0.1])
def test_eig_matches_brute_force(target, noise):
    hist = [([0, 1], True), ([2], False)]
    b = causalplay.infer(hist, 4, blicket_prior=0.3, noise=noise)
    post = brute.posterior(hist, 4, RULES, p=0.3, noise=noise)
    cands = all_trials(4)
    ours = b.eig(cands, target=target)
    ref = [brute.eig(post, np.flatnonzero(c).tolist(), target, noise) for c in cands]
    np.testing.assert_allclose(ours, ref, atol=1e-10)


def test_single_object_eig_is_binary_entropy():
    """Disjunctive, one unknown object with prior p: testing it alone reveals it, EIG = H_b(p)."""
    p = 0.2
    b = causalplay.infer([], 1, rules="disjunctive", blicket_prior=p)
    hb = -(p * math.log2(p) + (1 - p) * math.log2(1 - p))
    assert b.eig([[0]])[0] == pytest.approx(hb, abs=1e-12)


def test_best_trial_and_batch():
    # Backward blocking world: A known blicket; only testing B alone is informative.
    b = causalplay.infer([([0, 1], True), ([0], True)], 2, rules="disjunctive")
    assert b.best_trial() == (1,)
    bb = causalplay.infer_batch([[([0, 1], True), ([0], True)], []], 2, rules="disjunctive")
    e = bb.eig_all()
    assert e.shape == (2, 3) and e[0].tolist() == pytest.approx([0.0, b.eig([[1]])[0], 0.0], abs=1e-12)


def test_exact_eig_has_oed_call_shape():
    spec = make_spec(3, RULES, blicket_prior=0.4, noise=0.1)
    world = BlicketWorld(spec, History.from_pairs([([0, 1], True)], 3))
    design = torch.as_tensor(all_trials(3)).double()
    out = exact_eig(world, design, "lit", ["blickets", "rule"])
    ref = causalplay.infer([([0, 1], True)], 3, blicket_prior=0.4, noise=0.1).eig(all_trials(3))
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-12)
    with pytest.raises(ValueError, match="target_labels"):
        exact_eig(world, design, "lit", ["colour"])


def test_exact_eig_vs_pyro_nmc_eig():
    """pyro.contrib.oed's nested Monte Carlo estimator on a small world.

    NMC is biased upward by O(1/M) and has sd ~0.02 nats at N=4000, M=400 here; 0.05 nats (> 2 sd plus
    the bias) is the tolerance. (At this budget NMC's argmax is not reliable: designs 0 and 4 differ by 0.015
    nats, inside its noise -- one reason exact EIG matters.)
    """
    spec = make_spec(3, RULES, blicket_prior=0.4, noise=0.1)
    world = BlicketWorld(spec, History.from_pairs([([0, 1], True)], 3))
    design = torch.as_tensor(all_trials(3)).double()
    exact_nats = exact_eig(world, design, "lit", ["blickets", "rule"]) * math.log(2)
    torch.manual_seed(0)
    nmc = nmc_eig(world, design, ["lit"], ["blickets", "rule"], N=4000, M=400)
    np.testing.assert_allclose(nmc.numpy(), exact_nats.numpy(), atol=0.05)


def test_transform_matches_matmul_at_n11_and_brute_at_n4():
    """The ranked subset-sum transform (auto for N >= 11) against the [H, D] predictive-table matmul."""
    from causalplay.eig import count_distribution, eig_bits
    from causalplay.spec import HypothesisSpace, WorldSpec

    space = HypothesisSpace.build(WorldSpec.from_options(11, noise=0.05, blicket_prior=0.3))
    rng = np.random.default_rng(0)
    h = [(np.flatnonzero(rng.random(11) < 0.3).tolist(), bool(rng.random() < 0.5)) for _ in range(6)]
    b = causalplay.infer(h, 11, noise=0.05, blicket_prior=0.3)
    cand = torch.as_tensor(all_trials(11)).double()
    for target in ("joint", "rule"):
        mm = eig_bits(space, b.log_w[None], cand, target, method="matmul")
        tr = eig_bits(space, b.log_w[None], None, target, method="transform")
        torch.testing.assert_close(tr, mm, atol=1e-12, rtol=0)
    # the count distribution itself, by hand on N = 4: F[d, j] = sum of w(s) over s with |s & d| = j
    small = HypothesisSpace.build(WorldSpec.from_options(4, rules="disjunctive", blicket_prior=0.5))
    w = torch.softmax(torch.as_tensor(rng.standard_normal((1, 16))), -1)
    F = count_distribution(small, w)[0, 0]
    for d in range(16):
        for j in range(5):
            want = sum(float(w[0, s]) for s in range(16) if bin(s & d).count("1") == j)
            assert F[d, j].item() == pytest.approx(want, abs=1e-15)


def test_memory_budget_chunks_give_identical_answers():
    """A tiny max_memory forces candidate and episode chunks; the numbers must not change."""
    rng = np.random.default_rng(1)
    hs = [[(np.flatnonzero(rng.random(8) < 0.4).tolist(), bool(rng.random() < 0.5)) for _ in range(4)]
          for _ in range(20)]
    big = causalplay.infer_batch(hs, 8, noise=0.1)
    small = causalplay.infer_batch(hs, 8, noise=0.1, max_memory=200_000)
    np.testing.assert_array_equal(small.blicket_probs, big.blicket_probs)
    for target in ("joint", "blickets", "rule"):
        np.testing.assert_allclose(small.eig_all(target=target), big.eig_all(target=target), atol=1e-14, rtol=0)


def test_single_history_eig_at_n16_is_bounded():
    """All 65,535 trials of an N = 16 history: the transform needs ~10 MB, not a 34 GB [H, D] table. Checked
    against the matmul path on a sample of trials."""
    b = causalplay.infer([([0, 1], True), ([2], False)], 16, noise=0.05, max_memory="256MiB")
    e = b.eig()
    assert e.shape == (2**16 - 1,)
    codes = np.array([1, 2, 3, 4, 7, 255, 4096, 65535])
    some = b.eig(causalplay.history.codes_to_vectors(codes, 16))
    np.testing.assert_allclose(e[codes - 1], some, atol=1e-12)
    best = b.best_trial()
    assert b.eig([list(best)])[0] == pytest.approx(e.max(), abs=1e-12)
    sizes = all_trials(16).sum(1)
    assert len(best) == sizes[np.round(e, 12) == np.round(e.max(), 12)].min()


@pytest.mark.parametrize("noise", [0.0, 0.1])
def test_one_history_fast_path_matches_brute_force(noise):
    # Beliefs.eig() with no candidates takes eig_one_joint (cached table, numpy entropy): check it against
    # the brute-force enumerator and the batched path, and that best_trial is the brute-force argmax.
    from causalplay.eig import eig_bits, eig_one_joint

    hist = [([0, 1], True), ([2], False), ([1, 3], noise == 0.0)]
    b = causalplay.infer(hist, 4, blicket_prior=0.3, noise=noise)
    assert eig_one_joint(b.space, b.log_w) is not None
    ours = b.eig()
    post = brute.posterior(hist, 4, RULES, p=0.3, noise=noise)
    ref = np.array([brute.eig(post, np.flatnonzero(c).tolist(), "joint", noise) for c in all_trials(4)])
    np.testing.assert_allclose(ours, ref, atol=1e-12)
    np.testing.assert_allclose(ours, eig_bits(b.space, b.log_w[None], None)[0].numpy(), atol=1e-12)
    top = np.flatnonzero(np.round(ref, 9) == np.round(ref, 9).max())
    sizes = all_trials(4).sum(1)
    assert b.best_trial() == tuple(np.flatnonzero(all_trials(4)[top[np.argmin(sizes[top])]]).tolist())


def test_one_history_fast_path_scope():
    from causalplay.eig import eig_bits, eig_one_joint

    hist = [([0, 1], True), ([2], False)]
    # three thresholds, count prior, N = 10: the fast path, equal to the general one
    for kw in (dict(rules=("disjunctive", "conjunctive", "threshold3"), noise=0.1), dict(n_blickets=[1, 2]),
               dict(noise=0.05)):
        b = causalplay.infer(hist, 10, **kw)
        fast = eig_one_joint(b.space, b.log_w)
        np.testing.assert_allclose(fast, eig_bits(b.space, b.log_w[None], None, method="matmul")[0].numpy(),
                                   atol=1e-12)
    # a sigmoid rule (H_b(P) varies with the trial) and N = 11 go the general way
    b = causalplay.infer(hist, 5, rules=("disjunctive", causalplay.Sigmoid(gain=2.0, bias=1.3)))
    assert eig_one_joint(b.space, b.log_w) is None
    np.testing.assert_allclose(b.eig(), eig_bits(b.space, b.log_w[None], None)[0].numpy(), atol=0)
    b = causalplay.infer(hist, 11, noise=0.05)
    assert eig_one_joint(b.space, b.log_w) is None
    assert b.eig().shape == (2**11 - 1,)
