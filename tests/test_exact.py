import math

import brute
import numpy as np
import pandas as pd
import pytest
import torch
from causalplay.models.blicket import blicket_model
from pyro.infer import TraceEnum_ELBO

import causalplay
from causalplay.core.history import History, HistoryBatch
from causalplay.learners.api import make_spec

RULES = ("disjunctive", "conjunctive")


def random_history(rng, n, t, noise=0.0):
    true = rng.random(n) < 0.4
    rule = rng.integers(2)
    pairs = []
    for _ in range(t):
        trial = np.flatnonzero(rng.random(n) < 0.4).tolist()
        k = int(true[trial].sum())
        lit = k >= (1 if rule == 0 else 2)
        if rng.random() < noise:
            lit = not lit
        pairs.append((trial, bool(lit)))
    return pairs


@pytest.mark.parametrize("n,prior,noise", [(3, dict(blicket_prior=0.3), 0.0), (6, dict(blicket_prior=0.5), 0.1),
                                           (8, dict(n_blickets=(1, 2, 3)), 0.0), (10, dict(blicket_prior=0.2), 0.05)])
def test_exact_matches_pyro_enumeration(n, prior, noise, float64):
    """Pyro's own exact enumeration (TraceEnum_ELBO.compute_marginals) of the world model vs the engine: 1e-6."""
    rng = np.random.default_rng(n)
    hs = [History.from_pairs(random_history(rng, n, t, noise), n) for t in (0, 3, 6)]
    hb = HistoryBatch.from_histories(hs, n)
    spec = make_spec(n, RULES, None, noise=noise, **prior)
    try:
        m = TraceEnum_ELBO(max_plate_nesting=2).compute_marginals(
            blicket_model, lambda *a, **k: None, hb.trials, hb.lit, hb.mask, spec=spec)
    except causalplay.InconsistentEvidenceError:
        pytest.skip("sampled evidence impossible")
    sets = spec.set_prior().enumerate_support(expand=False)
    pyro_blickets = m["blicket_set"].probs.reshape(len(hs), -1) @ sets
    pyro_rule = m["rule"].probs.reshape(len(hs), -1)
    ours = causalplay.infer_batch(hb, rules=RULES, noise=noise, **prior)
    np.testing.assert_allclose(ours.blicket_probs, pyro_blickets.numpy(), atol=1e-6)
    np.testing.assert_allclose(ours.rule_probs, pyro_rule.numpy(), atol=1e-6)


@pytest.mark.parametrize("noise", [0.0, 0.1])
def test_exact_matches_brute_force(noise):
    rng = np.random.default_rng(1)
    for _ in range(5):
        hist = random_history(rng, 5, 5, noise)
        try:
            b = causalplay.infer(hist, 5, blicket_prior=0.3, noise=noise)
        except causalplay.InconsistentEvidenceError:
            continue
        bp, rp = brute.marginals(brute.posterior(hist, 5, RULES, p=0.3, noise=noise), 5, RULES)
        np.testing.assert_allclose(b.blicket_prob, bp, atol=1e-12)
        assert [b.rule_prob[r] for r in RULES] == pytest.approx([rp[r] for r in RULES], abs=1e-12)


def test_backward_blocking_closed_form():
    """Sobel et al. (2004). Disjunctive, prior p: after AB+ P(A) = p / (1 - (1-p)^2); after A+ too, P(B) = p."""
    p = 1 / 3
    ab = causalplay.infer([([0, 1], True)], 2, rules="disjunctive", blicket_prior=p)
    assert ab.blicket_prob == pytest.approx([p / (1 - (1 - p) ** 2)] * 2, abs=1e-12)
    bb = ab.update([0], True)
    assert bb.blicket_prob == pytest.approx([1.0, p], abs=1e-12)


def test_indirect_screening_off_closed_form():
    """AB+, A- under a disjunctive machine: B is a blicket, A is not, whatever the prior."""
    for p in (0.1, 0.5, 0.9):
        b = causalplay.infer([([0, 1], True), ([0], False)], 2, rules="disjunctive", blicket_prior=p)
        assert b.blicket_prob == pytest.approx([0.0, 1.0], abs=1e-12)


def test_issue_example_by_hand():
    """Both rules, p = 1/3: disjunctive needs 1 in S, 0 not (2/9); conjunctive needs 0, 1 in S (1/9)."""
    b = causalplay.infer([([0, 1], True), ([0], False)], n_objects=3)
    assert b.blicket_prob == pytest.approx([1 / 3, 1.0, 1 / 3], abs=1e-12)
    assert b.rule_prob == pytest.approx({"disjunctive": 2 / 3, "conjunctive": 1 / 3}, abs=1e-12)
    assert b.map() == ((1,), "disjunctive")
    # P(lit | {0, 2}): disjunctive needs 2 (1/3); conjunctive has 0 and needs 2 (1/3).
    assert b.predict([0, 2]) == pytest.approx(1 / 3, abs=1e-12)
    assert b.predict(np.array([True, False, True])) == pytest.approx(1 / 3, abs=1e-12)


def test_count_prior_known_count():
    # Two blickets among three, disjunctive; 0 alone does not light -> blickets are {1, 2}.
    b = causalplay.infer([([0], False)], 3, rules="disjunctive", n_blickets=2)
    assert b.blicket_prob == pytest.approx([0, 1, 1], abs=1e-12)


def test_rule_prior_dict():
    b = causalplay.infer([], 2, rule_prior={"disjunctive": 3, "conjunctive": 1})
    assert b.rule_prob == pytest.approx({"disjunctive": 0.75, "conjunctive": 0.25})


def test_update_equals_infer_on_longer_history():
    h = [([0, 1], True), ([2], False)]
    a = causalplay.infer(h, 4, noise=0.05).update([1, 3], True)
    b = causalplay.infer(h + [([1, 3], True)], 4, noise=0.05)
    np.testing.assert_allclose(a.blicket_prob, b.blicket_prob, atol=1e-12)


def test_batch_dataframe_and_frame():
    df = pd.DataFrame({"episode": ["a", "a", "b"], "trial": [2, 1, 1],
                       "objects": [[0], [0, 1], [1]], "lit": [True, True, False]})
    bb = causalplay.infer_batch(df, 2, rules="disjunctive", blicket_prior=1 / 3)
    assert bb.episodes == ["a", "b"]
    # Episode a (sorted by trial) is backward blocking; b: 1 is not a blicket.
    np.testing.assert_allclose(bb.blicket_probs, [[1, 1 / 3], [1 / 3, 0]], atol=1e-12)
    tidy = bb.to_frame()
    assert list(tidy.columns) == ["episode", "kind", "item", "prob"] and len(tidy) == 2 * 3
    single = causalplay.infer([([0], True)], 2).to_frame()
    assert set(single["kind"]) == {"blicket", "rule"}


def test_float32_close_to_float64():
    h = [([0, 1], True), ([0], True), ([2, 3], False)]
    a = causalplay.infer(h, 6, noise=0.1, dtype=torch.float32)
    b = causalplay.infer(h, 6, noise=0.1)
    np.testing.assert_allclose(a.blicket_prob, b.blicket_prob, atol=1e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    rng = np.random.default_rng(3)
    hs = [random_history(rng, 9, 8, 0.1) for _ in range(64)]
    a = causalplay.infer_batch(hs, 9, noise=0.1, device="cuda")
    b = causalplay.infer_batch(hs, 9, noise=0.1)
    np.testing.assert_allclose(a.blicket_probs, b.blicket_probs, atol=1e-10)
    np.testing.assert_allclose(a.eig_all(), b.eig_all(), atol=1e-9)


def test_entropy_of_prior_by_hand():
    # Uniform over 4 sets x 2 rules = 3 bits.
    assert causalplay.infer([], 2, blicket_prior=0.5).entropy == pytest.approx(3.0)
    assert math.isclose(causalplay.infer([], 2, blicket_prior=0.5, rules="disjunctive").entropy, 2.0)


def test_check_false_marks_impossible_episodes_with_nan():
    hb = HistoryBatch.from_histories([History.from_pairs([([0], True), ([0], False)], 2)], 2)
    space = causalplay.HypothesisSpace.build(make_spec(2, "disjunctive"))
    assert torch.isnan(causalplay.log_posterior(space, hb, check=False)).all()
    with pytest.raises(causalplay.InconsistentEvidenceError):
        causalplay.log_posterior(space, hb)


def test_table_and_gather_paths_agree(monkeypatch):
    """N <= 10 sums precomputed per-trial rows; larger N gathers per (trial, set). Both must agree."""
    import causalplay.core.exact as ex

    rng = np.random.default_rng(5)
    hs = [History.from_pairs(random_history(rng, 7, t, 0.1), 7) for t in (0, 2, 5)]
    hb = HistoryBatch.from_histories(hs, 7)
    rules = RULES + ("threshold3", "threshold9", causalplay.Sigmoid(gain=2.0, bias=1.3))
    for noise in (0.0, 0.1):
        space = causalplay.HypothesisSpace.build(make_spec(7, rules, blicket_prior=0.3, noise=noise))
        monkeypatch.setattr(ex, "TRIAL_TABLE_LIMIT", 2**21)
        ex._trial_rows.cache_clear()
        table = ex.log_likelihood(space, hb.trials, hb.lit, hb.mask)
        monkeypatch.setattr(ex, "TRIAL_TABLE_LIMIT", 0)
        ex._trial_rows.cache_clear()
        gather = ex.log_likelihood(space, hb.trials, hb.lit, hb.mask)
        ex._trial_rows.cache_clear()
        assert ex._trial_rows.cache_info().currsize == 0
        torch.testing.assert_close(table, gather, atol=1e-12, rtol=0)
        # and both against brute force on the first two rules' columns
        S = space.n_sets
        for b, h in enumerate(hs):
            post = brute.posterior(h.pairs(), 7, RULES, p=0.3, noise=noise)
            if any(v != v for v in post.values()):
                continue
            ll = table[b, : 2 * S]
            got = torch.softmax(ll + space.log_prior[: 2 * S], 0)
            if not torch.isfinite(got).all():
                continue
            want = [post[(tuple(int(x) for x in space.sets[s].tolist()), r)] for r in RULES for s in range(S)]
            np.testing.assert_allclose(got.numpy(), want, atol=1e-12)


def test_sigmoid_rule_closed_form():
    """One object, prior p, one lit observation under sigmoid(g (k - b)) with noise 0:
    P(blicket | lit) = p s(g (1 - b)) / (p s(g (1 - b)) + (1 - p) s(-g b))."""
    g, bias, p = 3.0, 0.7, 0.4

    def s(x):
        return 1 / (1 + math.exp(-x))

    b = causalplay.infer([([0], True)], 1, rules=causalplay.Sigmoid(gain=g, bias=bias), blicket_prior=p)
    want = p * s(g * (1 - bias)) / (p * s(g * (1 - bias)) + (1 - p) * s(-g * bias))
    assert b.blicket_prob[0] == pytest.approx(want, abs=1e-12)
    # A second, different rule alongside: the rule posterior is the ratio of the evidence under each.
    both = causalplay.infer([([0], True)], 1, rules=(causalplay.Sigmoid(gain=g, bias=bias), "disjunctive"),
                            blicket_prior=p)
    ev_sig, ev_dis = p * s(g * (1 - bias)) + (1 - p) * s(-g * bias), p
    assert both.rule_prob[f"sigmoid(gain={g:g},bias={bias:g})"] == pytest.approx(ev_sig / (ev_sig + ev_dis))


def test_one_history_posterior_equals_batched_path():
    # infer() sums per-trial rows on numpy (history_log_posterior); infer_batch goes through log_posterior.
    rng = np.random.default_rng(11)
    for noise in (0.0, 0.05):
        for t in (0, 1, 6):
            h = random_history(rng, 8, t, noise)
            one = causalplay.infer(h, 8, noise=noise)
            batch = causalplay.infer_batch([h], 8, noise=noise)
            torch.testing.assert_close(one.log_w, batch.log_w[0], atol=1e-13, rtol=0)


def test_inconsistent_one_history_raises_without_warnings(recwarn):
    with pytest.raises(causalplay.InconsistentEvidenceError, match="no hypothesis explains"):
        causalplay.infer([([0], True), ([0], False)], 3)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_noise_one_is_the_flipped_machine():
    # noise = 1 flips every outcome: the same beliefs as noise 0 with every outcome negated (was a raw
    # "math domain error")
    h = [([0], True), ([1, 2], False), ([0, 2], True)]
    flipped = [(t, not lit) for t, lit in h]
    a = causalplay.infer(h, 3, noise=1.0)
    b = causalplay.infer(flipped, 3, noise=0.0)
    np.testing.assert_allclose(a.blicket_prob, b.blicket_prob, atol=1e-12)
    assert a.rule_prob == pytest.approx(b.rule_prob, abs=1e-12)


def test_memoised_spec_still_validates():
    causalplay.infer([([0], True)], 3, noise=1)
    with pytest.raises(TypeError, match="noise must be a probability"):
        causalplay.infer([([0], True)], 3, noise=True)  # equal to 1 as a dict key; typed cache refuses it


# ---- the large-world path, chunking, updates and the inconsistency messages (mutation survivors of exact) ----

SIG = causalplay.Sigmoid(gain=2.0, bias=1.3)
BIG_RULES = ("disjunctive", "conjunctive", "threshold12", SIG)
BIG_BRUTE = ["disjunctive", "conjunctive", "threshold12", ("sigmoid", 2.0, 1.3, 0.0)]


def test_large_world_step_path_against_brute_force():
    """N = 11 (no per-trial table: one count matrix per step): thresholds (one never reachable, m = 12 > N),
    a sigmoid rule (the gather branch), histories of 0, 2 and 4 trials padded into one batch, in chunks of one
    episode, against enumeration."""
    import causalplay.core.exact as ex

    n = 11
    space = causalplay.HypothesisSpace.build(make_spec(n, BIG_RULES, blicket_prior=0.3, noise=0.1))
    assert ex._trial_rows(space) is None
    hs = [[], [([0, 1], True), ([2], False)], [([0], True), ([3, 4, 5], False), ([0, 3], True), ([6], True)]]
    hb = HistoryBatch.from_histories([History.from_pairs(h, n) for h in hs], n)
    for kw in (dict(), dict(chunk_size=1)):
        lw = ex.log_posterior(space, hb, **kw)
        for b, h in enumerate(hs):
            post = brute.posterior(h, n, BIG_BRUTE, p=0.3, noise=0.1)
            want = [post[(tuple(int(x) for x in space.sets[s].tolist()), r)] for r in BIG_BRUTE
                    for s in range(space.n_sets)]
            np.testing.assert_allclose(lw[b].exp().numpy(), want, atol=1e-12, rtol=0)
    assert ex.history_log_posterior(space, np.zeros((1, n), bool), np.zeros(1, bool)) is None


def test_chunk_sizes_by_hand():
    """Temporaries per episode: 3 H floats + 64 bytes per trial, plus 28 bytes per set and step without the
    per-trial table; chunks fit max_memory, and at most CACHE_BYTES (16 MiB) of them in large worlds."""
    import causalplay.core.exact as ex

    small = causalplay.HypothesisSpace.build(make_spec(4, RULES, blicket_prior=0.3, noise=0.1))  # H = 32
    assert ex.episode_bytes(small, 2) == 3 * 32 * 8 + 2 * 64 == 896
    assert ex.chunk_for(small, 2, 8960) == 10 and ex.chunk_for(small, 2, 8959) == 9 and ex.chunk_for(small, 2, 5) == 1
    big = causalplay.HypothesisSpace.build(make_spec(11, BIG_RULES, blicket_prior=0.3, noise=0.1))  # H = 8192
    per = 3 * 8192 * 8 + 2048 * (4 + 2 * 8 + 8) + 3 * 64
    assert ex.episode_bytes(big, 3) == per == 254144
    assert ex.chunk_for(big, 3) == (16 << 20) // per == 66 and ex.chunk_for(big, 3, 10 * per) == 10
    # an episode past the cache budget (300,000 trials) still gets a chunk of one, not two
    huge = ex.episode_bytes(big, 300_000)
    assert huge == 3 * 8192 * 8 + 2048 * 28 + 300_000 * 64 > 16 << 20 and ex.chunk_for(big, 300_000, 10 * huge) == 1
    s32 = causalplay.HypothesisSpace.build(make_spec(4, RULES, blicket_prior=0.3, noise=0.1), dtype=torch.float32)
    assert ex.episode_bytes(s32, 0) == 3 * 32 * 4


def test_observe_entropy_and_inconsistency_messages_by_hand():
    import causalplay.core.exact as ex

    space = causalplay.HypothesisSpace.build(make_spec(3, RULES, blicket_prior=0.3, noise=0.1))
    lw = space.log_prior[None].repeat(2, 1).clone()
    trial = torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]], dtype=torch.float64)
    out = ex.observe(space, lw, trial, torch.tensor([1.0, 0.0], dtype=torch.float64))
    for b, pair in enumerate([([0, 1], True), ([2], False)]):
        post = brute.posterior([pair], 3, RULES, p=0.3, noise=0.1)
        want = [post[(tuple(int(x) for x in space.sets[s].tolist()), r)] for r in RULES for s in range(space.n_sets)]
        np.testing.assert_allclose(out[b].exp().numpy(), want, atol=1e-12)
    p = torch.tensor([[0.5, 0.25, 0.25, 0.0]], dtype=torch.float64)
    assert ex.entropy_bits(p.log()).tolist() == [1.5]
    assert ex.entropy_bits(p.log().T, dim=0).tolist() == [1.5]
    # deterministic machine: the first pair of identical trials with different outcomes is named
    tail = ". With a deterministic machine this is impossible; pass noise > 0 (e.g. noise=0.05)."
    clash = [([0], True), ([1], False), ([0], False)]
    with pytest.raises(ex.InconsistentEvidenceError) as e:
        causalplay.infer(clash, 3)
    assert str(e.value) == ("no hypothesis explains the evidence of episode(s) [0]: observation 0 (0,) -> lit=True "
                            "conflicts with observation 2 (0,) -> lit=False" + tail)
    hidden = [([0], True), ([0, 1], False)]  # no identical trials: the observations are listed
    with pytest.raises(ex.InconsistentEvidenceError) as e:
        causalplay.infer_batch([[([1], True)], hidden, [([2], True)], clash], 3)
    assert str(e.value) == ("no hypothesis explains the evidence of episode(s) [1, 3]; observations: "
                            "[((0,), True), ((0, 1), False)]" + tail)
    det = causalplay.HypothesisSpace.build(make_spec(3, RULES, blicket_prior=0.3))
    lw = ex.observe(det, det.log_prior[None].clone(), torch.tensor([[1.0, 0, 0]]), torch.tensor([1.0]))
    with pytest.raises(ex.InconsistentEvidenceError) as e:
        ex.observe(det, lw, torch.tensor([[1.0, 0, 0]]), torch.tensor([0.0]))
    assert str(e.value) == "no hypothesis explains the evidence of episode(s) [0]" + tail
    assert torch.isnan(ex.observe(det, lw, torch.tensor([[1.0, 0, 0]]), torch.tensor([0.0]), check=False)).all()
    with pytest.raises(ex.InconsistentEvidenceError) as e:
        ex.history_log_posterior(det, np.array([[1, 0, 0], [1, 0, 0]], bool), np.array([True, False]))
    assert str(e.value) == ("no hypothesis explains the evidence of episode(s) [0]: observation 0 (0,) -> lit=True "
                            "conflicts with observation 1 (0,) -> lit=False" + tail)


# ---- second round on exact's survivors: shapes, dtypes and devices of the results, routing, chunking ----

def brute_log_likelihood(history, sets, rules, noise):
    """``sum_t log P(lit_t | trial_t, h)`` for every (rule, set), rule-major like the space, from brute.lit_prob."""
    out = []
    for r in rules:
        for s in sets:
            x = 0.0
            for trial, lit in history:
                q = brute.lit_prob(r, sum(s[i] for i in trial), noise)
                x += math.log(q if lit else 1 - q)
            out.append(x)
    return out


def brute_log_posterior(history, sets, rules, noise, p=0.3):
    post = brute.posterior(history, len(sets[0]), rules, p=p, noise=noise)
    return np.log([post[(s, r)] for r in rules for s in sets])


def _sets(space):
    return [tuple(int(x) for x in s.tolist()) for s in space.sets]


SMALL_RULES = ("disjunctive", "conjunctive", "threshold3", SIG)
SMALL_BRUTE = ["disjunctive", "conjunctive", "threshold3", ("sigmoid", 2.0, 1.3, 0.0)]


@pytest.mark.parametrize("n,rules,brules", [(5, SMALL_RULES, SMALL_BRUTE), (11, BIG_RULES, BIG_BRUTE)])
def test_log_likelihood_leading_dims_mask_and_no_trials_against_brute_force(n, rules, brules):
    """trials ``[2, 3, T, N]`` (leading dims beyond one batch dim), with and without a mask, on the per-trial table
    (N = 5) and the per-step path (N = 11): every entry against enumeration; no trials gives zeros of shape
    ``[2, 3, H]`` in the space's dtype (float64, not torch's default float32)."""
    import causalplay.core.exact as ex

    space = causalplay.HypothesisSpace.build(make_spec(n, rules, blicket_prior=0.3, noise=0.1))
    assert (ex._trial_rows(space) is None) == (n > 10)
    rng = np.random.default_rng(n)
    hs = [random_history(rng, n, 4) for _ in range(6)]
    hb = HistoryBatch.from_histories([History.from_pairs(h, n) for h in hs], n)
    trials, lit = hb.trials.reshape(2, 3, 4, n), hb.lit.reshape(2, 3, 4)  # T = 4: no axis of the same size
    mask = torch.ones(2, 3, 4, dtype=torch.bool)
    mask[1, :, 1] = False  # the second three histories without their second trial
    sets, H = _sets(space), space.n_hypotheses
    plain = ex.log_likelihood(space, trials, lit)
    masked = ex.log_likelihood(space, trials, lit, mask)
    assert plain.shape == masked.shape == (2, 3, H) and plain.dtype == masked.dtype == torch.float64
    for i, h in enumerate(hs):
        a, b = divmod(i, 3)
        np.testing.assert_allclose(plain[a, b].numpy(), brute_log_likelihood(h, sets, brules, 0.1), atol=1e-12)
        kept = h if a == 0 else [h[0], *h[2:]]
        np.testing.assert_allclose(masked[a, b].numpy(), brute_log_likelihood(kept, sets, brules, 0.1), atol=1e-12)
    none = ex.log_likelihood(space, trials[..., :0, :], lit[..., :0])
    assert none.shape == (2, 3, H) and none.dtype == torch.float64 and not none.any()
    # observe: [B, H] weights, one trial each (no mask on either path)
    lw = ex.observe(space, space.log_prior[None].repeat(3, 1), trials[0, :, 0], lit[0, :, 0])
    for b in range(3):
        np.testing.assert_allclose(lw[b].numpy(), brute_log_posterior(hs[b][:1], sets, brules, 0.1), atol=1e-12)


@pytest.mark.parametrize("n,rules,brules", [(5, SMALL_RULES, SMALL_BRUTE), (11, BIG_RULES, BIG_BRUTE)])
def test_results_live_on_the_space_device_whatever_torchs_default(n, rules, brules):
    """The space's device decides where the engine computes: with torch's default device set elsewhere ("meta",
    the one other device a CPU-only torch has), every tensor the engine makes must still be on the CPU space's
    device, and the numbers must be right."""
    import causalplay.core.exact as ex

    space = causalplay.HypothesisSpace.build(make_spec(n, rules, blicket_prior=0.3, noise=0.1))
    hs = [[([0, 1], True), ([2], False)], [([0], True)]]
    hb = HistoryBatch.from_histories([History.from_pairs(h, n) for h in hs], n)
    sets = _sets(space)
    space.log_prior, ex._trial_rows(space)  # built (and cached) on the CPU before the default changes
    with torch.device("meta"):
        post = ex.log_posterior(space, hb)
        post1 = ex.log_posterior(space, hb, chunk_size=1)
        ll = ex.log_likelihood(space, hb.trials[:1], hb.lit[:1])  # no mask
        none = ex.log_likelihood(space, hb.trials[:, :0], hb.lit[:, :0])
        lw = ex.observe(space, space.log_prior[None].clone(), hb.trials[1, :1], hb.lit[1, :1])
    for t in (post, post1, ll, none, lw):
        assert t.device.type == "cpu"
    for b, h in enumerate(hs):
        want = brute_log_posterior(h, sets, brules, 0.1)
        np.testing.assert_allclose(post[b].numpy(), want, atol=1e-12)
        np.testing.assert_allclose(post1[b].numpy(), want, atol=1e-12)
    np.testing.assert_allclose(ll[0].numpy(), brute_log_likelihood(hs[0], sets, brules, 0.1), atol=1e-12)
    assert not none.any()
    np.testing.assert_allclose(lw[0].numpy(), brute_log_posterior(hs[1], sets, brules, 0.1), atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.bool, torch.float32])
def test_batch_in_another_dtype_is_converted_to_the_space_dtype(dtype):
    """log_posterior moves the batch to the space's dtype: a bool or float32 batch gives the float64 posterior."""
    import causalplay.core.exact as ex

    for n, rules, brules in [(4, SMALL_RULES, SMALL_BRUTE), (11, BIG_RULES, BIG_BRUTE)]:
        space = causalplay.HypothesisSpace.build(make_spec(n, rules, blicket_prior=0.3, noise=0.1))
        hs = [[([0, 1], True), ([2], False)], [([3], True)]]
        hb = HistoryBatch.from_histories([History.from_pairs(h, n) for h in hs], n, dtype=dtype)
        assert hb.trials.dtype == dtype
        post = ex.log_posterior(space, hb)
        assert post.dtype == torch.float64
        for b, h in enumerate(hs):
            np.testing.assert_allclose(post[b].numpy(), brute_log_posterior(h, _sets(space), brules, 0.1),
                                       atol=1e-12)


def test_log_posterior_chunks_follow_chunk_size_and_max_memory(monkeypatch):
    """Episodes go to log_likelihood in consecutive chunks of ``chunk_size``, or of ``max_memory //
    episode_bytes(space, T)`` (T trials, not N objects): spied chunk by chunk, and the result against brute force."""
    import causalplay.core.exact as ex

    space = causalplay.HypothesisSpace.build(make_spec(4, RULES, blicket_prior=0.3, noise=0.1))  # H = 32
    hs = [[([0], True), ([1, 2], False)], [([3], True)], [], [([0, 1], True), ([0], False)], [([2], True)]]
    hb = HistoryBatch.from_histories([History.from_pairs(h, 4) for h in hs], 4)  # T = 2
    seen = []
    real = ex.log_likelihood

    def spy(space, trials, lit, mask=None):
        seen.append((trials.clone(), lit.clone(), mask.clone()))
        return real(space, trials, lit, mask)

    monkeypatch.setattr(ex, "log_likelihood", spy)
    per = 3 * 32 * 8 + 2 * 64  # episode_bytes by hand: 896 (with N = 4 in place of T it would be 1,024)
    for kw, sizes in [(dict(chunk_size=2), [2, 2, 1]), (dict(max_memory=3 * per), [3, 2]),
                      (dict(max_memory=3 * per - 1), [2, 2, 1]), (dict(chunk_size=5), [5]), (dict(), [5])]:
        seen.clear()
        post = ex.log_posterior(space, hb, **kw)
        assert [t.shape for t, _, _ in seen] == [(s, 2, 4) for s in sizes], kw
        torch.testing.assert_close(torch.cat([t for t, _, _ in seen]), hb.trials, rtol=0, atol=0)
        torch.testing.assert_close(torch.cat([lt for _, lt, _ in seen]), hb.lit, rtol=0, atol=0)
        torch.testing.assert_close(torch.cat([m for _, _, m in seen]), hb.mask, rtol=0, atol=0)
        for b, h in enumerate(hs):
            np.testing.assert_allclose(post[b].numpy(), brute_log_posterior(h, _sets(space), RULES, 0.1),
                                       atol=1e-12)


def test_threads_auto_and_the_likelihood_route(monkeypatch):
    """``threads="auto"``: one torch thread inside the chunk loop for a large world (N = 11, no per-trial table),
    torch's own setting for a small one (N = 4, which sums table rows and never takes the per-step path); an int
    is used as given and None leaves torch alone; the caller's setting is restored."""
    import causalplay.core.exact as ex

    seen = []
    real_ll, real_step = ex.log_likelihood, ex._log_likelihood_by_step

    def spy(space, trials, lit, mask=None):
        seen.append(torch.get_num_threads())
        return real_ll(space, trials, lit, mask)

    steps = []

    def step_spy(space, trials, lit, mask):
        steps.append(space.n_objects)
        return real_step(space, trials, lit, mask)

    monkeypatch.setattr(ex, "log_likelihood", spy)
    monkeypatch.setattr(ex, "_log_likelihood_by_step", step_spy)
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        for n, rules, brules in [(4, SMALL_RULES, SMALL_BRUTE), (11, BIG_RULES, BIG_BRUTE)]:
            space = causalplay.HypothesisSpace.build(make_spec(n, rules, blicket_prior=0.3, noise=0.1))
            h = [([0, 1], True), ([2], False)]
            hb = HistoryBatch.from_histories([History.from_pairs(h, n)], n)
            for threads, want in [("auto", 1 if n > 10 else 2), (None, 2), (1, 1), (2, 2)]:
                seen.clear()
                steps.clear()
                post = ex.log_posterior(space, hb, threads=threads)
                assert seen == [want], (n, threads)
                assert steps == ([n] if n > 10 else []), (n, threads)
                assert torch.get_num_threads() == 2
                np.testing.assert_allclose(post[0].numpy(), brute_log_posterior(h, _sets(space), brules, 0.1),
                                           atol=1e-12)
    finally:
        torch.set_num_threads(old)


def test_normalise_chunks_rows_by_the_cache_budget(monkeypatch):
    """_normalise takes logsumexp over row blocks of ``CACHE_BYTES // (H * itemsize)`` rows (at least one): with the
    budget shrunk, B = 5 rows of H = 2 (16 bytes a row) go 1 by 1 at 8 bytes and 2 by 2 at 40; the result is the
    closed-form posterior either way."""
    import causalplay.core.exact as ex

    space = causalplay.HypothesisSpace.build(make_spec(1, "disjunctive", blicket_prior=0.3, noise=0.1))  # H = 2
    assert space.n_hypotheses == 2
    blocks = []
    real = torch.logsumexp

    def spy(x, *a, **k):
        blocks.append(x.shape[0])
        return real(x, *a, **k)

    lit = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0], dtype=torch.float64)
    # P(blicket | lit) = 0.3 * 0.9 / (0.3 * 0.9 + 0.7 * 0.1); P(blicket | dark) = 0.3 * 0.1 / (0.3 * 0.1 + 0.7 * 0.9)
    on = [0.27 / 0.34 if x else 0.03 / 0.66 for x in lit.tolist()]
    for budget, sizes in [(8, [1] * 5), (40, [2, 2, 1]), (16 << 20, [5])]:
        monkeypatch.setattr(ex, "CACHE_BYTES", budget)
        monkeypatch.setattr(torch, "logsumexp", spy)
        blocks.clear()
        lw = ex.observe(space, space.log_prior[None].repeat(5, 1), torch.ones(5, 1, dtype=torch.float64), lit)
        monkeypatch.setattr(torch, "logsumexp", real)
        assert blocks == sizes, budget
        assert lw.shape == (5, 2)
        np.testing.assert_allclose(lw.exp()[:, 1].numpy(), on, rtol=1e-14)


def test_one_history_cpu_path_runs_on_numpy(monkeypatch):
    """On the CPU, history_log_posterior does its arithmetic in numpy (a torch dispatch costs more than the whole
    sum for one history): with torch's logsumexp made to fail, it still answers, and right (vs brute force)."""
    import causalplay.core.exact as ex

    space = causalplay.HypothesisSpace.build(make_spec(4, SMALL_RULES, blicket_prior=0.3, noise=0.1))
    det = causalplay.HypothesisSpace.build(make_spec(4, RULES, blicket_prior=0.3))

    def boom(*a, **k):
        raise AssertionError("torch.logsumexp called on the CPU one-history path")

    monkeypatch.setattr(torch, "logsumexp", boom)
    h = [([0, 1], True), ([2], False), ([0, 3], True)]
    trials = np.zeros((3, 4), bool)
    for t, (objs, _) in enumerate(h):
        trials[t, objs] = True
    lit = np.array([x for _, x in h])
    lw = ex.history_log_posterior(space, trials, lit)
    np.testing.assert_allclose(lw.numpy(), brute_log_posterior(h, _sets(space), SMALL_BRUTE, 0.1), atol=1e-12)
    with pytest.raises(ex.InconsistentEvidenceError, match="conflicts with observation 1"):
        ex.history_log_posterior(det, trials[[0, 0]], np.array([True, False]))


def test_inconsistency_message_names_at_most_ten_episodes():
    import causalplay.core.exact as ex

    det = causalplay.HypothesisSpace.build(make_spec(2, RULES, blicket_prior=0.3))
    clash = History.from_pairs([([0], True), ([0], False)], 2)
    hb = HistoryBatch.from_histories([clash] * 12, 2)
    with pytest.raises(ex.InconsistentEvidenceError) as e:
        ex.log_posterior(det, hb)
    assert str(e.value).startswith("no hypothesis explains the evidence of episode(s) [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]:")
