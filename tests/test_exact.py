import math

import brute
import numpy as np
import pandas as pd
import pytest
import torch
from causalplay.models.blicket import blicket_model
from pyro.infer import TraceEnum_ELBO

import causalplay
from causalplay.api import make_spec
from causalplay.history import History, HistoryBatch

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
    import causalplay.exact as ex

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
    import causalplay.exact as ex

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
    import causalplay.exact as ex

    small = causalplay.HypothesisSpace.build(make_spec(4, RULES, blicket_prior=0.3, noise=0.1))  # H = 32
    assert ex.episode_bytes(small, 2) == 3 * 32 * 8 + 2 * 64 == 896
    assert ex.chunk_for(small, 2, 8960) == 10 and ex.chunk_for(small, 2, 8959) == 9 and ex.chunk_for(small, 2, 5) == 1
    big = causalplay.HypothesisSpace.build(make_spec(11, BIG_RULES, blicket_prior=0.3, noise=0.1))  # H = 8192
    per = 3 * 8192 * 8 + 2048 * (4 + 2 * 8 + 8) + 3 * 64
    assert ex.episode_bytes(big, 3) == per == 254144
    assert ex.chunk_for(big, 3) == (16 << 20) // per == 66 and ex.chunk_for(big, 3, 10 * per) == 10
    s32 = causalplay.HypothesisSpace.build(make_spec(4, RULES, blicket_prior=0.3, noise=0.1), dtype=torch.float32)
    assert ex.episode_bytes(s32, 0) == 3 * 32 * 4


def test_observe_entropy_and_inconsistency_messages_by_hand():
    import causalplay.exact as ex

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
