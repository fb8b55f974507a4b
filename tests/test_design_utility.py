"""causalplay.design.predict / utility: checked against mutual information worked by hand, against a brute-force
enumeration of choice sequences through the fitting code's own features (build_features on trial data), and for
its invariances (identical models, relabelled objects)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import torch
from causalplay.models.choice import build_features

import causalplay
from causalplay.data import TrialData, load_nexiom
from causalplay.design import (
    Design,
    nexiom_designs,
    population_draws,
    predict,
    sampled_information,
    sequence_samples,
    utility,
)
from causalplay.design.predict import sums_exactly
from causalplay.fitting import SVIOptions

SVI = SVIOptions(steps=60, draws=40, progress=False)


@pytest.fixture(scope="module")
def fits():
    """Two small fits of models with no positional feature (so relabelling objects changes nothing)."""
    people = load_nexiom()
    part = people.subset(people.ids[:12])
    return {m: causalplay.fit(part, m, method="svi", svi=SVI, seed=0) for m in ("eig_size", "positive")}


CANDS = [Design(3, (0, 1), "conjunctive", demonstrations=[(0, 1)]),
         Design(3, (1,), "disjunctive", demonstrations=[(0,), (1,)], n_blickets_told=1),
         Design(3, (0, 2), "disjunctive")]


# ---- hand-worked K = 1 -------------------------------------------------------------------------------------------
def test_k1_mutual_information_by_hand():
    """One object: 3 choices (empty set, {0}, stop). Model a's two people choose the empty set and {0} for sure
    (marginal [1/2, 1/2, 0]); model b's one (repeated) person [0, 1/2, 1/2]. pbar = [1/4, 1/2, 1/4], so
    I = 1/2 (1/2 log 2 + 1/2 log 1) + 1/2 (1/2 log 1 + 1/2 log 2) = log(2) / 2: the marginal over people counts,
    not each person (each of a's people alone is deterministic)."""
    d = [Design(1, (0,), "disjunctive")]
    a = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], dtype=torch.float64)
    b = torch.tensor([[[0.0, 0.5, 0.5], [0.0, 0.5, 0.5]]], dtype=torch.float64)
    u = utility({"a": a, "b": b}, d)
    assert u.method == "exact" and float(u.se[0]) == 0.0
    assert float(u.nats[0]) == pytest.approx(math.log(2) / 2, abs=1e-12)
    assert float(u.bits[0]) == pytest.approx(0.5, abs=1e-12)


def test_k1_unequal_prior_by_hand():
    """prior (1/4, 3/4); p_a = [1, 0, 0], p_b = [1/2, 1/2, 0]; pbar = [5/8, 3/8, 0]:
    I = 1/4 log(8/5) + 3/4 (1/2 log(4/5) + 1/2 log(4/3))."""
    d = [Design(1, (0,), "disjunctive")]
    a = torch.tensor([[[1.0, 0.0, 0.0]]], dtype=torch.float64)
    b = torch.tensor([[[0.5, 0.5, 0.0]]], dtype=torch.float64)
    want = 0.25 * math.log(8 / 5) + 0.75 * (0.5 * math.log(4 / 5) + 0.5 * math.log(4 / 3))
    assert float(utility({"a": a, "b": b}, d, prior={"a": 1, "b": 3}).nats[0]) == pytest.approx(want, abs=1e-12)
    assert float(utility({"a": a, "b": b}, d, prior=[0.25, 0.75]).nats[0]) == pytest.approx(want, abs=1e-12)
    # a model with prior weight 0 carries no information
    assert float(utility({"a": a, "b": b}, d, prior=[0.0, 1.0]).nats[0]) == 0.0


# ---- brute force through the fitting code's own features -----------------------------------------------------------
def _sequence_data(design: Design, K: int) -> tuple[TrialData, list]:
    """Every choice sequence of length K (a stop ends it; none starts with a stop: min_tests=1 gives it probability 0,
    which the sum-to-one check below confirms) as one participant each, in the loader's schema."""
    S = 2**design.n_objects
    seqs = [s for s in itertools.product(range(S + 1), repeat=K) if S not in s[:-1] and s[0] != S]
    parts, tests = [], []
    for i, seq in enumerate(seqs):
        pid = f"q{i}"
        rows = [(on, lit, "demonstration") for on, lit in design.demonstrations]
        for c in seq:
            if c < S:
                on = tuple(j for j in range(design.n_objects) if c >> j & 1)
                rows.append((on, design.lights(on), "choice"))
        tests += [{"participant": pid, "test": t + 1, "objects_on": on, "lit": lit, "source": src,
                   "seconds_since_previous": None, "possible": True} for t, (on, lit, src) in enumerate(rows)]
        parts.append({"participant": pid, "rule": design.rule, "true_blickets": design.blickets,
                      "judged_blickets": None, "rule_choice": None, "n_tests": len(rows),
                      "n_blickets": design.n_blickets_told})
    return TrialData(pd.DataFrame(parts), pd.DataFrame(tests), design.n_objects), seqs


def _brute_force_mi(fits: dict, design: Design, K: int, draws: int, seed: int) -> float:
    data, seqs = _sequence_data(design, K)
    S = 2**design.n_objects
    log_p = []
    for f in fits.values():
        feats = build_features(data, f.learner)  # decisions: each own test, then the stop
        th = {k: v[:, None].expand(draws, len(data)) for k, v in population_draws(f, draws, seed).items()}
        lp = f.model.log_probs(feats, th)  # [draws, decisions, S + 1]
        per = torch.zeros(draws, len(data), dtype=torch.float64)
        for p, seq in enumerate(seqs):
            rows = torch.nonzero(feats.pid == p).flatten()[:len(seq)]  # the first K decisions of participant p
            per[:, p] = lp[:, rows, torch.tensor(seq)].sum(-1)
            assert int(feats.choice[rows[-1]]) == (seq[-1] if seq[-1] < S else S) or seq[-1] == S
        log_p.append(torch.logsumexp(per, 0) - math.log(draws))
    p = torch.stack(log_p).exp().numpy()  # [M, sequences]
    assert np.allclose(p.sum(1), 1.0, atol=1e-9)  # the sequences exhaust the outcomes
    pbar = p.mean(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.nansum(0.5 * p * np.log(p / pbar)))


@pytest.fixture(scope="module")
def positional(fits):
    """eig_sweep_single's sweep and untested-single features read what was tested (demonstrations included)."""
    people = load_nexiom()
    f = causalplay.fit(people.subset(people.ids[:12]), "eig_sweep_single", method="svi", svi=SVI, seed=0)
    return {"positive": fits["positive"], "eig_sweep_single": f}


@pytest.mark.parametrize("K", [1, 2])
def test_exact_matches_brute_force(positional, K):
    for d in CANDS:
        want = _brute_force_mi(positional, d, K, draws=16, seed=3)
        got = utility(positional, [d], choices=K, draws=16, seed=3, method="exact")
        assert float(got.nats[0]) == pytest.approx(want, abs=1e-9)


def test_monte_carlo_within_its_error(fits):
    """Nested MC against the exact sum (K = 2): within 4 standard errors for each design (seeded; the SE is
    checked to be a real spread, neither 0 nor as large as the value)."""
    ex = utility(fits, CANDS, choices=2, draws=30, method="exact", seed=1)
    mc = utility(fits, CANDS, choices=2, draws=30, method="mc", samples=300, seed=1)
    assert mc.method == "mc" and ex.method == "exact"
    assert torch.all(mc.se > 0) and torch.all(mc.se < 0.5 * mc.nats)
    assert torch.all((mc.nats - ex.nats).abs() < 4 * mc.se), (mc.nats, mc.se, ex.nats)


def test_sampled_sequences_give_the_monte_carlo_utility_under_any_prior(fits):
    """sequence_samples + sampled_information is utility(method="mc") exactly (same draws, samples, seed), under a
    uniform and a lopsided prior from the same sequences; against the exact sum (K = 2) under the lopsided prior
    within 4 standard errors; a model of prior 0 adds nothing (the other's utility is then 0)."""
    scores = sequence_samples(fits, CANDS, 2, draws=30, samples=300, seed=1)
    assert scores.shape == (len(CANDS), 2, 300, 2)
    for prior in (None, [0.8, 0.2]):
        mc = utility(fits, CANDS, choices=2, draws=30, method="mc", samples=300, seed=1, prior=prior)
        nats, se = sampled_information(scores, prior)
        assert torch.equal(nats, mc.nats) and torch.equal(se, mc.se)
    ex = utility(fits, CANDS, choices=2, draws=30, method="exact", seed=1, prior=[0.8, 0.2])
    nats, se = sampled_information(scores, [0.8, 0.2])
    assert torch.all((nats - ex.nats).abs() < 4 * se), (nats, se, ex.nats)
    zero, zse = sampled_information(scores, [1.0, 0.0])
    assert torch.all(zero.abs() < 1e-12) and torch.all(zse.abs() < 1e-12)
    with pytest.raises(ValueError, match=r"prior must hold 2 finite non-negative weights"):
        sampled_information(scores, [1.0, -1.0])
    with pytest.raises(ValueError, match=r"\[designs, models, samples, models\]"):
        sampled_information(scores[..., 0])


def test_exact_sums_up_to_4096_sequences_per_design():
    """By hand: 4 objects give 16 sets per choice, so K = 4 has 16**3 = 4,096 rows (exact) and K = 5 has 65,536
    (Monte Carlo); 3 objects: 8**4 = 4,096 at K = 5."""
    assert sums_exactly(4, 4) and not sums_exactly(4, 5)
    assert sums_exactly(3, 5) and not sums_exactly(3, 6)
    assert sums_exactly(4, 1)


def test_whole_sessions_end_at_the_stop(fits):
    """A horizon past every sequence's end (K = 60 choices on designs of budget 4) gives the same sequences and
    utility as K = 5 = budget + 1: every simulated participant has stopped by then."""
    short = [Design(3, d.blickets, d.rule, demonstrations=d.demonstrations, n_blickets_told=d.n_blickets_told,
                    max_tests=4) for d in CANDS]
    a = sequence_samples(fits, short, 5, draws=10, samples=20, seed=4)
    b = sequence_samples(fits, short, 60, draws=10, samples=20, seed=4)
    assert torch.equal(a, b)


def test_more_choices_more_information(fits):
    """I(M; Y1..YK) cannot fall as K grows (Y1..YK-1 is a function of Y1..YK)."""
    u = [utility(fits, CANDS, choices=k, draws=20, seed=2).nats for k in (1, 2, 3)]
    assert torch.all(u[1] >= u[0] - 1e-12) and torch.all(u[2] >= u[1] - 1e-12)
    assert torch.all(u[0] > 0)


def test_identical_models_give_zero(fits):
    f = fits["eig_size"]
    for K, method in ((1, "exact"), (2, "exact"), (2, "mc")):
        u = utility({"a": f, "b": f}, CANDS, choices=K, draws=20, method=method, samples=50)
        assert torch.all(u.nats.abs() < 1e-12), (K, method, u.nats)


def test_invariant_to_relabelling_objects(fits):
    perm = [2, 0, 1]
    relabelled = [d.relabel(perm) for d in CANDS]
    for K in (1, 2):
        a = utility(fits, CANDS, choices=K, draws=20, seed=4)
        b = utility(fits, relabelled, choices=K, draws=20, seed=4)
        assert torch.allclose(a.nats, b.nats, atol=1e-10, rtol=0)
    # and predictions move with the labels: P(choose set s) = P(choose perm(s)) in the relabelled design
    p, q = predict(fits["positive"], CANDS, draws=10), predict(fits["positive"], relabelled, draws=10)
    new_code = [sum(1 << perm[j] for j in range(3) if c >> j & 1) for c in range(8)] + [8]
    assert torch.allclose(p, q[..., new_code], atol=1e-12)


def test_predict_shape_and_values(fits):
    p = predict(fits["eig_size"], nexiom_designs(), draws=25, seed=0)
    assert p.shape == (12, 25, 17)
    assert torch.allclose(p.sum(-1), torch.ones(12, 25, dtype=torch.float64), atol=1e-12)
    assert float(p[..., 16].max()) == 0.0  # no stop before the first own test (min_tests=1)
    # the same seed gives the same participants; chunking does not change anything
    assert torch.equal(p, predict(fits["eig_size"], nexiom_designs(), draws=25, seed=0, chunk=5))
    # Nexiom designs show nothing before the first choice: every world gives the same prediction
    assert torch.allclose(p, p[:1].expand_as(p), atol=1e-14)


def test_budget_forces_the_stop(fits):
    d = Design(3, (0,), "disjunctive", max_tests=1)
    u = utility(fits, [d], choices=2, draws=10, method="exact")
    assert float(u.nats[0]) == pytest.approx(float(utility(fits, [d], choices=1, draws=10).nats[0]), abs=1e-12)


def test_bad_input(fits):
    with pytest.raises(ValueError, match="different n_objects"):
        predict(fits["positive"], [Design(3, (0,), "disjunctive"), Design(4, (0,), "disjunctive")])
    with pytest.raises(ValueError, match="designs is empty"):
        predict(fits["positive"], [])
    with pytest.raises(TypeError, match="expected a causalplay.fitting.Fit"):
        predict("eig_size", CANDS)
    with pytest.raises(ValueError, match="prior names"):
        utility(fits, CANDS, prior={"eig_size": 1})
    with pytest.raises(ValueError, match="not all 0"):
        utility(fits, CANDS, prior=[0, 0])
    with pytest.raises(ValueError, match="method"):
        utility(fits, CANDS, method="sampling")
    with pytest.raises(ValueError, match="choices=1"):
        utility({"a": torch.ones(3, 2, 9) / 9, "b": torch.ones(3, 2, 9) / 9}, CANDS, choices=2)
    with pytest.raises(ValueError, match=r"shape \(3, 2, 8\)"):
        utility({"a": torch.ones(3, 2, 8) / 8}, CANDS)
