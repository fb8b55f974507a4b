"""Demonstrations and told blicket counts reach the choice models' learner: a demonstrated test is in the history
the learner conditions on but is not a choice to fit, and a participant told how many blickets there are has a
learner whose set prior is that count (``causalplay.infer(..., n_blickets=k)``)."""

from __future__ import annotations

import math

import numpy as np
import torch
from causalplay.models.choice import build_features, get_model
from causalplay.models.choice.base import learner_posterior

import causalplay
from causalplay.data import example_folder, load_trials
from causalplay.fitting import SVIOptions

NOISE = 0.01  # the modelled learner's default machine noise
Q = 0.3  # the learner's P(conjunctive) in these checks


def test_every_decision_conditions_on_demonstrations_and_the_told_count():
    """Each decision's learner posterior equals ``causalplay.infer`` on everything the participant saw before it
    (demonstrations included) with their told count, to 1e-12; demonstrations are not decisions."""
    data = load_trials(example_folder())
    told, chosen, hs = data.known_counts(), data.choice_indices(), data.histories()
    assert any(len(chosen[k]) < len(hs[k]) for k in data.ids)  # the example has demonstrations ...
    assert any(v is None for v in told.values()) and any(v is not None for v in told.values())  # ... and counts
    feats = build_features(data)
    # decisions: each own test, then the stop; demonstrated tests are none of them
    assert feats.n_decisions == data.n_choices == sum(len(chosen[k]) + 1 for k in data.ids)
    rho = torch.full((feats.n_decisions,), math.log(Q / (1 - Q)), dtype=torch.float64)
    post = learner_posterior(feats, feats.ll, rho, feats.pid).exp()
    S = feats.space.n_sets
    row = 0
    for p, pid in enumerate(data.ids):
        positions = list(chosen[pid]) + [len(hs[pid])]  # before each own test, then before stopping
        for n_own, j in enumerate(positions):
            assert int(feats.pid[row]) == p and int(feats.t[row]) == n_own and int(feats.test_index[row]) == j + 1
            assert bool(feats.can_stop[row]) == (n_own >= 1)
            want = hs[pid].trials[j] if j < len(hs[pid]) else None
            if want is not None:  # the choice is the participant's own test at position j
                assert int(feats.choice[row]) == int(sum(1 << i for i in np.flatnonzero(want)))
            b = causalplay.infer(hs[pid].pairs()[:j], n_objects=4, rules=("disjunctive", "conjunctive"),
                                 rule_prior=[1 - Q, Q], blicket_prior=0.5, noise=NOISE, n_blickets=told[pid])
            w = post[row].reshape(2, S)
            if told[pid] is None:
                np.testing.assert_allclose(w.numpy().ravel(), b.log_w.exp().numpy().ravel(), atol=1e-12)
            else:  # infer's space holds only the sets of the told size: the learner's others have weight 0
                size = feats.space.sets.sum(-1).numpy()
                np.testing.assert_array_equal(w[:, size != told[pid]].numpy(), 0.0)
                keep = w[:, size == told[pid]]
                np.testing.assert_array_equal(b.space.sets.numpy(), feats.space.sets[size == told[pid]].numpy())
                np.testing.assert_allclose(keep.numpy().ravel(), b.log_w.exp().numpy().ravel(), atol=1e-12)
            np.testing.assert_allclose((w.sum(0) @ feats.space.sets).numpy(), np.asarray(b.blicket_prob), atol=1e-12)
            row += 1
    assert row == feats.n_decisions


def test_told_counts_and_demonstrations_change_the_fit_inputs_and_fit():
    """Dropping the demonstrations' source marks or the told counts changes what the model sees (more decisions;
    a learner that does not know the count), and the model's choice probabilities stay normalised and finite
    (entropy and EIG of ruled-out sets are exactly 0, not NaN) with their gradients; a short SVI fit runs."""
    data = load_trials(example_folder())
    feats = build_features(data)
    plain = data.subset(data.ids)
    plain.tests = plain.tests.drop(columns=["source"])
    plain.participants = plain.participants.drop(columns=["n_blickets"])
    pf = build_features(plain)
    assert pf.set_log_prior is None and feats.set_log_prior is not None
    assert pf.n_decisions == feats.n_decisions + int((~data.is_choice).sum())
    cm = get_model("eig_sweep_single")
    theta = {p.name: torch.full((len(data),), 0.3, dtype=torch.float64, requires_grad=True) for p in cm.all_params()}
    lp = cm.log_probs(feats, theta)
    np.testing.assert_allclose(torch.logsumexp(lp, -1).detach().numpy(), 0.0, atol=1e-10)
    total = lp.gather(-1, feats.choice[:, None]).sum() + cm.judgement_log_probs(feats, theta).sum()
    total.backward()
    assert torch.isfinite(total) and all(torch.isfinite(v.grad).all() for v in theta.values())
    f = causalplay.fit(data, "eig_sweep_single", method="svi", svi=SVIOptions(steps=20, draws=10))
    assert f.feats.n_decisions == data.n_choices and np.isfinite(f.extra["elbo_losses"]).all()
    # New participants on worlds drawn from the data are told what the participant of that world was told;
    # on worlds the caller names, nobody is told a count.
    told = {(p.rule, tuple(p.true_blickets)): k for p, k in zip(data.participants.itertuples(),
                                                                 data.known_counts().values(), strict=True)}
    assert len(told) == len(data) and any(k is not None for k in told.values())  # each world names one count
    new = f.simulate(12, seed=2).participants
    got = [None if np.isnan(k) else int(k) for k in new["n_blickets"]]
    assert got == [told[(r, tuple(b))] for r, b in zip(new["rule"], new["true_blickets"], strict=True)]
    assert "n_blickets" not in f.simulate(2, worlds=[("disjunctive", (0,))] * 2, seed=2).participants


def test_simulated_participants_are_told_their_count_and_choose_by_it():
    """simulate(..., n_blickets=...) writes the counts into the data (a refit's learner knows them) and draws the
    choices from the told learner: the share of single-object first tests of 600 simulated participants (eig_softmax,
    beta 3) is the probability build_features of the simulated data gives, within 4 binomial SEs, and that
    probability differs from the untold learner's by more than 4 SEs (0.120 against 0.198 when measured)."""
    from causalplay.fitting import simulate

    cm = get_model("eig_softmax")
    P = 600
    theta = {p.name: {"beta": 3.0, "stop_a": -3.0, "lapse": 0.01, "judge_lapse": 0.01}.get(p.name, 0.0)
             for p in cm.all_params()}
    th = {k: torch.full((P,), v, dtype=torch.float64) for k, v in theta.items()}
    share, prob = {}, {}
    for told in (1, None):
        sim = simulate(cm, theta, [("disjunctive", (1,))] * P, 4, seed=0, n_blickets=[told] * P if told else None)
        assert set(sim.known_counts().values()) == {told}
        feats = build_features(sim)
        assert (feats.set_log_prior is not None) == (told is not None)
        first = feats.test_index == 1
        single = feats.sizes == 1
        p = cm.log_probs(feats, th)[first][:, :16][:, single].exp().sum(-1)  # no stop before the first test
        assert float(p.std()) < 1e-12  # the same first decision for everybody
        prob[told], share[told] = float(p[0]), float(single[feats.choice[first]].double().mean())
    se = math.sqrt(prob[1] * (1 - prob[1]) / P)
    assert abs(share[1] - prob[1]) < 4 * se and abs(share[None] - prob[None]) < 4 * se
    assert abs(prob[1] - prob[None]) > 4 * se
