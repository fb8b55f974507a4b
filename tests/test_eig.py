import math

import brute
import numpy as np
import pytest
import torch
from causalplay.models.blicket import BlicketWorld, exact_eig
from pyro.contrib.oed.eig import nmc_eig

import causalplay
from causalplay.core.history import History, all_trials
from causalplay.learners.api import make_spec

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
    from causalplay.core.eig import count_distribution, eig_bits
    from causalplay.core.spec import HypothesisSpace, WorldSpec

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
    some = b.eig(causalplay.core.history.codes_to_vectors(codes, 16))
    np.testing.assert_allclose(e[codes - 1], some, atol=1e-12)
    best = b.best_trial()
    assert b.eig([list(best)])[0] == pytest.approx(e.max(), abs=1e-12)
    sizes = all_trials(16).sum(1)
    assert len(best) == sizes[np.round(e, 12) == np.round(e.max(), 12)].min()


@pytest.mark.parametrize("noise", [0.0, 0.1])
def test_one_history_fast_path_matches_brute_force(noise):
    # Beliefs.eig() with no candidates takes eig_one_joint (cached table, numpy entropy): check it against
    # the brute-force enumerator and the batched path, and that best_trial is the brute-force argmax.
    from causalplay.core.eig import eig_bits, eig_one_joint

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
    from causalplay.core.eig import eig_bits, eig_one_joint

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


# ---- every path of eig_bits against brute force, its routing and its errors (mutation-testing survivors) ----

SIG = causalplay.Sigmoid(gain=2.0, bias=1.3, noise=0.05)
SIG_BRUTE = ("sigmoid", 2.0, 1.3, 0.05)  # brute.lit_prob's hand-written sigmoid, same parameters
HIST = [([0, 1], True), ([2], False), ([1, 3], True)]


def _brute_eig(hist, n, rules, noise, trials, target, p=0.3):
    post = brute.posterior(hist, n, rules, p=p, noise=noise)
    return np.array([brute.eig(post, np.flatnonzero(t).tolist(), target, noise) for t in trials])


@pytest.mark.parametrize("method", ["matmul", "transform"])
@pytest.mark.parametrize("target", ["joint", "blickets", "rule"])
def test_sigmoid_and_threshold3_spaces_match_brute_force_on_every_path(target, method):
    """A sigmoid rule (P(lit | k) and H_b(P(lit | k)) vary with k: the general entropy paths) and a three-rule
    threshold space (the transform's threshold layers), all trials and a shuffled subset, against enumeration."""
    from causalplay.core.eig import eig_bits

    sub = torch.as_tensor(all_trials(4)[[9, 0, 14, 5]])  # codes 10, 1, 15, 6: not in code order
    for rules, brute_rules in (((("disjunctive", SIG)), ["disjunctive", SIG_BRUTE]),
                               (("disjunctive", "conjunctive", "threshold3"), ["disjunctive", "conjunctive",
                                                                               "threshold3"])):
        b = causalplay.infer(HIST, 4, rules=rules, noise=0.1, blicket_prior=0.3)
        if method == "transform" and target == "blickets":
            with pytest.raises(ValueError, match=r"^method='transform' covers the joint and rule targets \(and "
                               r"blickets with one rule\), not target='blickets' with 2 rules; use method='matmul'$"
                               if len(rules) == 2 else "with 3 rules"):
                eig_bits(b.space, b.log_w[None], None, target, method=method)
            continue
        ref = _brute_eig(HIST, 4, brute_rules, 0.1, all_trials(4), target)
        np.testing.assert_allclose(eig_bits(b.space, b.log_w[None], None, target, method=method)[0], ref,
                                   atol=1e-12, rtol=0)
        got = eig_bits(b.space, b.log_w[None], sub.double(), target, method=method)
        np.testing.assert_allclose(got[0], ref[[9, 0, 14, 5]], atol=1e-12, rtol=0)
        if method == "matmul":  # a cached predictive table with padding columns, also in float32
            P = b.space.predictive(sub.double())
            pad = torch.cat([P, torch.full_like(P[:, :2], 0.5)], 1)
            out = eig_bits(b.space, b.log_w[None], sub.double(), target, lit_prob=pad)
            assert out.shape == (1, 4)
            np.testing.assert_allclose(out[0], ref[[9, 0, 14, 5]], atol=1e-12, rtol=0)
            out32 = eig_bits(b.space, b.log_w[None], sub.double(), target, lit_prob=pad.float())
            assert out32.dtype == torch.float32
            np.testing.assert_allclose(out32[0], ref[[9, 0, 14, 5]], atol=2e-5, rtol=0)


@pytest.mark.parametrize("method", ["matmul", "transform"])
def test_one_rule_spaces_rule_target_is_zero_and_blickets_is_joint(method):
    """With one rule there is nothing to learn about the rule (EIG exactly 0), and the blicket set is the whole
    hypothesis (the transform accepts target='blickets'). Five episodes in chunks of two (max_memory)."""
    from causalplay.core.eig import eig_bits

    hs = [HIST, [], [([0], False)], [([1, 2], True), ([1], False)], [([3], True)]]
    bb = causalplay.infer_batch(hs, 4, rules="conjunctive", noise=0.1, blicket_prior=0.3)
    per_episode = 3 * 1 * 16 * 2 * 8  # 3 R 2^N m bytes (float64, m = 2 layers for the conjunctive rule)
    kw = dict(method=method, max_memory=2 * per_episode)
    rule = eig_bits(bb.space, bb.log_w, None, "rule", **kw)
    assert rule.shape == (5, 15) and torch.equal(rule, torch.zeros(5, 15, dtype=torch.float64))
    bl = eig_bits(bb.space, bb.log_w, None, "blickets", **kw)
    for i, h in enumerate(hs):
        ref = _brute_eig(h, 4, ["conjunctive"], 0.1, all_trials(4), "blickets")
        np.testing.assert_allclose(bl[i], ref, atol=1e-12, rtol=0)


def test_transform_memory_budget_is_exact_and_chunks_episodes():
    """The transform keeps 3 R 2^N L floats per episode (L = the largest threshold m): a budget of exactly one
    episode works (episode by episode), one byte less is refused with the numbers in the message."""
    from causalplay.core.eig import eig_bits

    hs = [HIST, [([0], True)], [([2, 3], False), ([0, 2], True)]]
    bb = causalplay.infer_batch(hs, 4, noise=0.1, blicket_prior=0.3)
    need = 3 * 2 * 16 * 2 * 8  # disjunctive + conjunctive: R = 2, L = max(1, 2) = 2, float64
    for target in ("joint", "rule"):
        out = eig_bits(bb.space, bb.log_w, None, target, method="transform", max_memory=need)
        for i, h in enumerate(hs):
            np.testing.assert_allclose(out[i], _brute_eig(h, 4, list(RULES), 0.1, all_trials(4), target),
                                       atol=1e-12, rtol=0)
    with pytest.raises(MemoryError, match=r"^the EIG transform needs 1,536 bytes per episode at N = 4, more than "
                       r"max_memory=1,535; pass candidate trials or a larger max_memory$"):
        eig_bits(bb.space, bb.log_w, None, "joint", method="transform", max_memory=need - 1)
    # the all-trials table needs D (N + 8) bytes: 15 * 12 = 180 fits exactly, 179 does not
    out = eig_bits(bb.space, bb.log_w, None, "blickets", method="matmul", max_memory=180)
    for i, h in enumerate(hs):
        np.testing.assert_allclose(out[i], _brute_eig(h, 4, list(RULES), 0.1, all_trials(4), "blickets"),
                                   atol=1e-12, rtol=0)
    with pytest.raises(MemoryError, match=r"^all 2\*\*4 - 1 = 15 trials do not fit in max_memory=179 bytes; pass "
                       r"candidate trials or a larger max_memory$"):
        eig_bits(bb.space, bb.log_w, None, "joint", method="matmul", max_memory=179)


def test_candidate_and_episode_chunks_cover_every_row_and_column():
    """Chunks of one candidate (tiny max_memory) and of one episode (max_elements=1, the blickets target) with
    more episodes (10) than hypotheses (8): every entry equals brute force, none is left unwritten."""
    from causalplay.core.eig import eig_bits

    rng = np.random.default_rng(3)
    hs = [[(np.flatnonzero(rng.random(2) < 0.5).tolist(), bool(rng.random() < 0.5)) for _ in range(2)]
          for _ in range(10)]
    bb = causalplay.infer_batch(hs, 2, noise=0.1, blicket_prior=0.3)
    assert bb.space.n_hypotheses == 8
    cand = torch.tensor([[0.0, 1.0], [1.0, 1.0]])
    for target in ("joint", "blickets", "rule"):
        got = eig_bits(bb.space, bb.log_w, cand, target, max_memory=1, max_elements=1)
        assert got.shape == (10, 2)
        for i, h in enumerate(hs):
            np.testing.assert_allclose(got[i], _brute_eig(h, 2, list(RULES), 0.1, cand.numpy(), target),
                                       atol=1e-12, rtol=0)


def test_float32_space_matches_brute_force():
    from causalplay.core.eig import eig_bits
    from causalplay.core.spec import HypothesisSpace

    b = causalplay.infer(HIST, 4, noise=0.1, blicket_prior=0.3)
    s32 = HypothesisSpace.build(b.space.spec, dtype=torch.float32)
    for target, method in (("joint", "transform"), ("joint", "matmul"), ("rule", "transform")):
        out = eig_bits(s32, b.log_w.float()[None], None, target, method=method)
        assert out.dtype == torch.float32
        np.testing.assert_allclose(out[0], _brute_eig(HIST, 4, list(RULES), 0.1, all_trials(4), target),
                                   atol=2e-5, rtol=0)
    # the one-history fast path in float32, deterministic: trials with object 0 (a known blicket) light for sure
    # (P(lit) = 1, 0 bits); the entropy's log must use float32's tiny, not float64's (0 in float32: 0 * log 0)
    from causalplay.core.eig import eig_one_joint

    h = [([0, 1], True), ([0], True)]
    b = causalplay.infer(h, 4, blicket_prior=0.3)
    fast = eig_one_joint(HypothesisSpace.build(b.space.spec, dtype=torch.float32), b.log_w.float())
    assert fast.dtype == np.float32 and np.isfinite(fast).all()
    np.testing.assert_allclose(fast, _brute_eig(h, 4, list(RULES), 0.0, all_trials(4), "joint"), atol=2e-5, rtol=0)


class _Routed(Exception):
    pass


def test_auto_method_picks_the_transform_by_its_operation_count(monkeypatch):
    """method='auto': the subset-sum transform from N = 11 when 4 N L 2^N < S D (L = the largest threshold m,
    or C + 1 for other rules), else the predictive-table matmul. Boundaries computed here by hand."""
    import causalplay.core.eig as E

    def spy(name):
        def f(*a, **k):
            raise _Routed(name)
        return f

    monkeypatch.setattr(E, "_eig_transform", spy("transform"))
    monkeypatch.setattr(E, "_eig_matmul", spy("matmul"))

    def route(n, target="joint", n_cand=None, rules=RULES, **kw):
        b = causalplay.infer([([0, 1], True)], n, rules=rules, noise=0.1)
        cand = None if n_cand is None else torch.as_tensor(all_trials(n)[:n_cand]).double()
        with pytest.raises(_Routed) as e:
            E.eig_bits(b.space, b.log_w[None], cand, target, **kw)
        return str(e.value)

    assert route(4) == "matmul" and route(10) == "matmul" and route(11) == "transform"
    assert route(4, method="transform") == "transform" and route(11, method="matmul") == "matmul"
    assert route(11, "rule") == "transform" and route(11, "blickets") == "matmul"
    assert route(11, "blickets", rules="disjunctive") == "transform"
    # thresholds m = 1, 2: L = 2, S = 2048: 4 * 11 * 2 * 2048 = 2048 * 88
    assert route(11, n_cand=88) == "matmul" and route(11, n_cand=89) == "transform"
    # a sigmoid rule: L = C + 1 = 12, so the boundary is 44 * 12 = 528 candidates
    assert route(11, n_cand=528, rules=("disjunctive", SIG)) == "matmul"
    assert route(11, n_cand=529, rules=("disjunctive", SIG)) == "transform"
    b = causalplay.infer([], 11)
    P = b.space.predictive(torch.as_tensor(all_trials(11)[:3]).double())
    with pytest.raises(_Routed, match="matmul"):  # a given predictive table is used as it is
        E.eig_bits(b.space, b.log_w[None], None, lit_prob=P, method="transform")


def test_transform_is_limited_to_n_40():
    """Closed form: one blicket among 40 (41) objects, known to be 0 or 1: testing 0 or 1 alone gives 1 bit,
    {0, 1, 2} always lights (0 bits). From N = 41 method='transform' falls back to the candidates' matmul; at
    N = 40 it is attempted and refused for memory."""
    from causalplay.core.eig import eig_bits

    for n in (40, 41):
        b = causalplay.infer([([0, 1], True)], n, n_blickets=[1])
        c = torch.zeros(3, n, dtype=torch.float64)
        c[0, 0] = c[1, 1] = 1
        c[2, :3] = 1
        if n == 40:
            with pytest.raises(MemoryError, match="per episode at N = 40"):
                eig_bits(b.space, b.log_w[None], c, method="transform")
        out = eig_bits(b.space, b.log_w[None], c, method="transform" if n == 41 else "matmul")
        np.testing.assert_allclose(out[0], [1.0, 1.0, 0.0], atol=1e-12)


def test_binary_entropy_bits_by_hand_and_bad_arguments():
    from causalplay.core.eig import binary_entropy_bits, check_target, eig_bits

    p = torch.tensor([-1e-3, 0.0, 0.5, 0.1, 1.0, 1.001], dtype=torch.float64)
    h01 = -(0.1 * math.log2(0.1) + 0.9 * math.log2(0.9))
    np.testing.assert_allclose(binary_entropy_bits(p), [0.0, 0.0, 1.0, h01, 0.0, 0.0], atol=1e-15, rtol=0)
    with pytest.raises(ValueError, match=r"^unknown EIG target 'colour'; expected one of \('joint', 'blickets', "
                       r"'rule'\)$"):
        check_target("colour")
    with pytest.raises(ValueError, match="unknown EIG target 3"):
        check_target(3)
    assert check_target("rule") == "rule"
    b = causalplay.infer(HIST, 4, noise=0.1, blicket_prior=0.3)
    with pytest.raises(ValueError, match=r"^method must be 'auto', 'matmul' or 'transform', got 'fast'$"):
        eig_bits(b.space, b.log_w[None], None, method="fast")
    # the default target is the joint one
    np.testing.assert_allclose(eig_bits(b.space, b.log_w[None], None)[0],
                               _brute_eig(HIST, 4, list(RULES), 0.1, all_trials(4), "joint"), atol=1e-12)


def test_exact_eig_targets_defaults_batches_and_errors():
    spec = make_spec(3, RULES, blicket_prior=0.4, noise=0.1)
    hist = [([0, 1], True)]
    world = BlicketWorld(spec, History.from_pairs(hist, 3))
    trials = all_trials(3)[[4, 0, 6]]  # codes 5, 1, 7
    design = torch.as_tensor(trials).double()
    post = brute.posterior(hist, 3, RULES, p=0.4, noise=0.1)
    for labels, target in ((("blickets", "rule"), "joint"), (["blickets"], "blickets"), ("blickets", "blickets"),
                           ("rule", "rule"), (["rule"], "rule")):
        ref = [brute.eig(post, np.flatnonzero(t).tolist(), target, 0.1) for t in trials]
        np.testing.assert_allclose(exact_eig(world, design, ["lit"], labels).numpy(), ref, atol=1e-12)
    ref = [brute.eig(post, np.flatnonzero(t).tolist(), "joint", 0.1) for t in trials]
    np.testing.assert_allclose(exact_eig(world, design).numpy(), ref, atol=1e-12)  # defaults: lit; both
    # no history: the prior; a batch of two histories: [B, D]
    prior = brute.posterior([], 3, RULES, p=0.4, noise=0.1)
    out = exact_eig(BlicketWorld(spec), design)
    assert out.shape == (3,)
    np.testing.assert_allclose(out.numpy(), [brute.eig(prior, np.flatnonzero(t).tolist(), "joint", 0.1)
                                             for t in trials], atol=1e-12)
    from causalplay.core.history import HistoryBatch

    two = HistoryBatch.from_histories([History.from_pairs(hist, 3), History.from_pairs([], 3)], 3)
    out = exact_eig(BlicketWorld(spec, two), design)
    assert out.shape == (2, 3)
    np.testing.assert_allclose(out[1].numpy(), [brute.eig(prior, np.flatnonzero(t).tolist(), "joint", 0.1)
                                                for t in trials], atol=1e-12)
    with pytest.raises(TypeError, match=r"^exact_eig needs a causalplay.models.blicket.BlicketWorld, got str$"):
        exact_eig("world", design)
    with pytest.raises(ValueError, match=r"^observation_labels must be 'lit', got \['colour'\]$"):
        exact_eig(world, design, ["colour"])
    with pytest.raises(ValueError, match=r"^target_labels must be 'blickets', 'rule' or both, got 'colour'$"):
        exact_eig(world, design, "lit", "colour")
