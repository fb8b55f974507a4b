"""causalplay.design.ado (sequential adaptive design across participants): Bayes' rule checked by hand, the marginal
likelihoods against a step-by-step product through the utility's own machinery, the next design against
:func:`causalplay.design.utility` under the posterior as prior, and the state's JSON round trip and purity."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
import torch

import causalplay
from causalplay.core.codes import set_to_code
from causalplay.data import load_nexiom
from causalplay.design import Design, ado, population_draws, sequence_log_probs, sequence_samples, utility
from causalplay.design.predict import _Rows
from causalplay.fitting import SVIOptions, simulate_fit

SVI = SVIOptions(steps=60, draws=40, progress=False)

CANDS = [Design(4, (0, 1), "conjunctive", demonstrations=[(0, 1)]),
         Design(4, (1,), "disjunctive", demonstrations=[(0,), (1,)], n_blickets_told=1),
         Design(4, (0, 2), "disjunctive"),
         Design(4, (2, 3), "disjunctive", demonstrations=[(2,)])]


@pytest.fixture(scope="module")
def fits():
    people = load_nexiom()
    part = people.subset(people.ids[:12])
    return {m: causalplay.fit(part, m, method="svi", svi=SVI, seed=0) for m in ("positive", "eig_sweep_single")}


# ---- Bayes' rule by hand --------------------------------------------------------------------------------------------
def test_posterior_by_hand():
    """Model a is two kinds of people who give the participant's choices probability 0.5 and 0.1 (marginal 0.3),
    model b one kind with 0.2. Prior (1/4, 3/4): P(a | y) = 0.25 * 0.3 / (0.25 * 0.3 + 0.75 * 0.2) = 1/3.
    A second participant with marginals 0.4 (a) and 0.8 (b): P(a | y1, y2) = 0.03 / (0.03 + 0.12) = 0.2."""
    s0 = ado.start(["a", "b"], prior={"a": 1, "b": 3}, draws=2)
    assert ado.posterior(s0) == pytest.approx({"a": 0.25, "b": 0.75}, abs=1e-15)
    ma = ado.marginal_from_draws(torch.log(torch.tensor([0.5, 0.1], dtype=torch.float64)))
    mb = ado.marginal_from_draws(torch.log(torch.tensor([0.2, 0.2, 0.2], dtype=torch.float64)))
    assert float(ma.exp()) == pytest.approx(0.3, abs=1e-15) and float(mb.exp()) == pytest.approx(0.2, abs=1e-15)
    s1 = ado.record(s0, ["p1"], [[float(ma), float(mb)]])
    assert ado.posterior(s1)["a"] == pytest.approx(1 / 3, abs=1e-14)
    s2 = ado.record(s1, ["p2"], [[math.log(0.4), math.log(0.8)]])
    assert ado.posterior(s2)["a"] == pytest.approx(0.2, abs=1e-14)
    # both at once is the same; the arguments are left as they were
    both = ado.record(s0, ["p1", "p2"], [[float(ma), float(mb)], [math.log(0.4), math.log(0.8)]])
    assert ado.posterior(both)["a"] == pytest.approx(0.2, abs=1e-14)
    assert s0["participants"] == [] and len(s1["participants"]) == 1
    # JSON round trip, an impossible participant stored as null
    s3 = ado.record(s2, ["p3"], [[-math.inf, math.log(0.5)]])
    back = json.loads(json.dumps(s3, allow_nan=False))
    assert back["participants"][-1]["log_evidence"][0] is None
    assert ado.posterior(back) == pytest.approx({"a": 0.0, "b": 1.0}, abs=1e-15)


def test_record_refuses_bad_input():
    s = ado.record(ado.start(["a", "b"]), ["p1"], [[-1.0, -2.0]])
    with pytest.raises(ValueError, match=r"\['p1'\] already counted"):
        ado.record(s, ["p1"], [[-1.0, -2.0]])
    with pytest.raises(ValueError, match="shape"):
        ado.record(s, ["p2"], [[-1.0, -2.0, -3.0]])
    with pytest.raises(ValueError, match="probability 0"):
        ado.record(s, ["p2"], [[-math.inf, -math.inf]])
    with pytest.raises(ValueError, match="NaN"):
        ado.record(s, ["p2"], [[math.nan, -1.0]])
    with pytest.raises(ValueError, match="repeated"):
        ado.start(["a", "a"])
    with pytest.raises(ValueError, match="prior has 1 weight"):
        ado.start(["a", "b"], prior=[1.0])
    with pytest.raises(ValueError, match="lacks"):
        ado.posterior({"models": ["a"]})


def test_select_one_se_by_hand():
    """Three participants, 2 choices each (n = 6). Summed log evidence: random -6.0, positive -5.7 (better by 0.3).
    Per-participant differences positive - random: +0.5, -0.4, +0.2 (sd 0.4583), paired SE sqrt(3) * 0.4583 = 0.794
    > 0.3, so the one-SE rule keeps the simpler random (no set-choice parameter); the Bayes factor picks positive."""
    s = ado.start(["positive", "random"])
    s = ado.record(s, ["a", "b", "c"], [[-1.5, -2.0], [-2.4, -2.0], [-1.8, -2.0]], n_choices=[2, 2, 2])
    assert ado.select(s, "map") == "positive"
    assert ado.select(s, "one_se") == "random"
    # far apart (differences +2.0, +1.9, +2.1: SE 0.17 << 6.0): positive either way
    s = ado.record(ado.start(["positive", "random"]), ["a", "b", "c"], [[0.0, -2.0], [-0.1, -2.0], [0.1, -2.0]],
                   n_choices=[2, 2, 2])
    assert ado.select(s, "one_se") == "positive"


# ---- marginal likelihoods against a step-by-step product -------------------------------------------------------------
def _brute_log_marginal(fit, design: Design, own_codes: list[int], draws: int, seed: int) -> float:
    """log mean_j prod_k p_j(choice k | what came before), stepping through the utility's own histories (not the
    TrialData features :func:`ado.log_marginal` reads): every own test, then the stop."""
    theta = population_draws(fit, draws, seed)
    rows, cache = _Rows([design], torch.tensor([0]), {}), {}
    total = torch.zeros(draws, dtype=torch.float64)
    for c in [*own_codes, 2**design.n_objects]:
        lp = rows.step_log_probs(fit, theta, cache)  # [draws, 1, options]
        total += lp[:, 0, c]
        if c < 2**design.n_objects:
            rows = rows.extend(torch.tensor([c]), torch.tensor([0]))
    return float(torch.logsumexp(total, 0) - math.log(draws))


def test_log_marginal_matches_step_by_step(fits):
    sim = simulate_fit(fits["positive"], len(CANDS), designs=CANDS, seed=5, max_tests=6)
    hist, own = sim.histories(), sim.choice_indices()
    state = ado.start(list(fits), prior=[0.4, 0.6], draws=16, seed=3)
    new = ado.update(state, sim, fits)
    ev = torch.tensor(ado.evidence(new))
    for i, (pid, d) in enumerate(zip(sim.ids, CANDS, strict=True)):
        d = replace(d, max_tests=min(d.max_tests or 6, 6))  # what they had: simulate_fit caps at 6 tests
        codes = [set_to_code(hist[pid].pairs()[int(k)][0]) for k in own[pid]]
        for j, m in enumerate(state["models"]):
            want = _brute_log_marginal(fits[m], d, codes, 16, 3)
            assert float(ev[i, j]) == pytest.approx(want, abs=1e-9)
        assert new["participants"][i]["n_choices"] == len(codes) + 1
        assert Design.from_dict(new["participants"][i]["design"]) == d
    # the posterior is Bayes' rule on those numbers
    log_post = torch.log(torch.tensor([0.4, 0.6], dtype=torch.float64)) + ev.sum(0)
    assert list(ado.posterior(new).values()) == pytest.approx(torch.softmax(log_post, 0).tolist(), abs=1e-12)
    # chunking does not change the numbers; one participant at a time gives the same state
    lp, ids, n = ado.log_marginal(fits["positive"], sim, draws=16, seed=3, chunk=1)
    assert torch.allclose(lp, ev[:, 0], atol=1e-12, rtol=0) and ids == sim.ids
    one = state
    for pid in sim.ids:
        one = ado.update(one, sim.subset([pid]), fits)
    assert torch.allclose(torch.tensor(ado.evidence(one)), ev, atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="already counted"):
        ado.update(new, sim, fits)
    with pytest.raises(ValueError, match="fits are for models"):
        ado.update(state, sim, {"positive": fits["positive"]})


# ---- the next design ------------------------------------------------------------------------------------------------
def test_next_design_is_the_utility_argmax(fits):
    state = ado.start(list(fits), draws=12, seed=1, choices=2)
    cands = ado.prepare(fits, CANDS, state)
    # every model's leaves are a distribution over the sequences
    assert torch.allclose(torch.logsumexp(cands.log_p, -1), torch.zeros(2, len(CANDS), dtype=torch.float64),
                          atol=1e-12)
    u0 = utility(fits, CANDS, choices=2, draws=12, seed=1)
    assert torch.allclose(ado.utilities(state, cands), u0.nats, atol=1e-12, rtol=0)
    assert ado.next_design(state, cands) == CANDS[int(torch.argmax(u0.nats))]
    # after a participant, the utility under the posterior is utility() with the posterior as prior
    sim = simulate_fit(fits["eig_sweep_single"], 1, designs=[CANDS[0]], seed=2, max_tests=5)
    s1 = ado.update(state, sim, fits)
    post = ado.posterior(s1)
    assert post["positive"] != pytest.approx(0.5)
    u1 = utility(fits, CANDS, choices=2, draws=12, seed=1, prior=post)
    assert torch.allclose(ado.utilities(s1, cands), u1.nats, atol=1e-12, rtol=0)
    assert ado.next_design(s1, cands) == CANDS[int(torch.argmax(u1.nats))]
    # reproducible from the state alone (a JSON round trip changes nothing)
    assert ado.next_design(json.loads(json.dumps(s1)), cands) == ado.next_design(s1, cands)


def test_long_horizons_use_sampled_sequences_reweighted_by_the_posterior(fits):
    """choices = 6 with 4 objects (16**5 sequences per design: beyond the exact sum): prepare simulates the state's
    ``samples`` sequences per model and design once; after a participant the utilities are utility(method="mc")
    with the posterior as prior, exactly, and the next design is their argmax."""
    state = ado.start(list(fits), draws=10, seed=2, choices=6, samples=40)
    cands = ado.prepare(fits, CANDS, state)
    assert cands.method == "mc" and cands.samples == 40 and cands.log_p.shape == (len(CANDS), 2, 40, 2)
    sim = simulate_fit(fits["eig_sweep_single"], 1, designs=[CANDS[1]], seed=3, max_tests=5)
    s1 = ado.update(state, sim, fits)
    post = ado.posterior(s1)
    u1 = utility(fits, CANDS, choices=6, draws=10, seed=2, prior=post, method="mc", samples=40)
    assert torch.equal(ado.utilities(s1, cands), u1.nats)
    assert ado.next_design(s1, cands) == CANDS[int(torch.argmax(u1.nats))]
    with pytest.raises(ValueError, match=r"prepared for \(models, choices, draws, seed, samples\)"):
        ado.utilities(ado.start(list(fits), draws=10, seed=2, choices=6, samples=41), cands)
    # a state written before samples was a setting reads as 200
    old = {k: v for k, v in state.items() if k != "samples"}
    with pytest.raises(ValueError, match=r"samples\) = .*40\), the state has .*200\)"):
        ado.utilities(old, cands)


def test_certain_posterior_ties_go_to_the_first_candidate(fits):
    """With one model certain no design carries information: every utility is 0 (within float noise), tied, and
    the lowest candidate index wins, whatever the order."""
    state = ado.record(ado.start(list(fits), draws=8, seed=0, choices=1), ["x"], [[0.0, -800.0]])
    for order in (CANDS, CANDS[::-1]):
        cands = ado.prepare(fits, order, state)
        assert float(ado.utilities(state, cands).abs().max()) < 1e-12
        assert ado.next_design(state, cands) == order[0]


def test_candidates_must_match_the_state(fits):
    state = ado.start(list(fits), draws=8, seed=0, choices=1)
    cands = ado.prepare(fits, CANDS, state)
    with pytest.raises(ValueError, match="prepared for"):
        ado.next_design(ado.start(list(fits), draws=8, seed=1, choices=1), cands)
    with pytest.raises(TypeError, match="ado.prepare"):
        ado.next_design(state, CANDS)
    with pytest.raises(TypeError, match="needs Fits"):
        sequence_log_probs({"a": torch.zeros(1)}, CANDS)
    with pytest.raises(TypeError, match="sequence_samples needs Fits"):
        sequence_samples({"a": torch.zeros(1)}, CANDS, 6)
    with pytest.raises(ValueError, match="samples must be an integer >= 1, got 0"):
        sequence_samples(fits, CANDS, 6, samples=0)
