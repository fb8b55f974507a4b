"""A participant who used every test of their budget did not choose to stop: the choice models score that stop as
forced (probability 1), from the ``max_tests`` column the loader reads, the simulator writes and ``designs_of``
takes. Without it a fit reads each forced stop as a decision to stop, which pulls the stopping parameters (in SBC
on the Nexiom design, where prior draws that rarely stop meet the 30-test cap)."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pandas as pd
import pytest
import torch
from causalplay.models.choice import build_features, get_model

import causalplay
from causalplay.data import DataValidationError, example_folder, load_trials
from causalplay.design import designs_of
from causalplay.fitting import SVIOptions
from causalplay.fitting.simulation import simulate


def _with_budgets(data, budgets: dict):
    d = data.subset(data.ids)
    d.participants = d.participants.assign(max_tests=[budgets.get(k) for k in d.ids])
    return d


def test_a_forced_stop_has_probability_one_and_nothing_else_moves():
    """Example data; S05 (2 own tests after 2 demonstrations) gets budget 2, S04 (4 own) budget 6, the rest none.
    Only S05's stop is forced: its row is log 1 for stop and log 0 for every test; every other row is bit-equal to
    the fit without budgets, so the choices' log-likelihood is the budget-free one minus S05's log P(stop) there."""
    data = load_trials(example_folder())
    plain = build_features(data)
    assert plain.must_stop is None
    feats = build_features(_with_budgets(data, {"S05": 2, "S04": 6}))
    stops = torch.nonzero(feats.choice == feats.n_options - 1).flatten()
    s05 = int(stops[data.ids.index("S05")])
    assert torch.nonzero(feats.must_stop).flatten().tolist() == [s05]
    cm = get_model("eig_sweep_single")
    gen = torch.Generator().manual_seed(3)
    theta = {p.name: 0.2 + 0.6 * torch.rand(len(data), dtype=torch.float64, generator=gen) for p in cm.all_params()}
    lp0, lp1 = cm.log_probs(plain, theta), cm.log_probs(feats, theta)
    assert lp1[s05, -1].item() == 0.0 and bool(torch.isneginf(lp1[s05, :-1]).all())
    others = torch.arange(feats.n_decisions) != s05
    assert torch.equal(lp1[others], lp0[others])
    ll0 = lp0.gather(-1, plain.choice[:, None]).sum()
    ll1 = lp1.gather(-1, feats.choice[:, None]).sum()
    assert lp0[s05, -1].item() < -1e-3  # the stop was not certain without the budget
    assert math.isclose(ll1.item(), ll0.item() - lp0[s05, -1].item(), rel_tol=0, abs_tol=1e-12)


def test_the_budget_is_checked_where_it_is_read(tmp_path):
    """The loader refuses a budget that is not a positive integer and one smaller than the participant's own tests
    (demonstrations do not count: S05 ran 2 of their own after 2 demonstrations); build_features refuses data built
    past the loader the same way."""
    data = load_trials(example_folder())
    with pytest.raises(ValueError, match=r"'S02' ran 6 test\(s\) of their own but max_tests is 5"):
        build_features(_with_budgets(data, {"S02": 5}))
    folder = tmp_path / "d"
    shutil.copytree(example_folder(), folder)
    P = pd.read_csv(folder / "participants.csv", dtype=str, keep_default_na=False)
    P["max_tests"] = ["", "0", "x", "3", "2", "30"]  # S02 0, S03 'x', S04 3 < 4 own tests, S05 2 = its own tests
    P.to_csv(folder / "participants.csv", index=False)
    with pytest.raises(DataValidationError) as e:
        load_trials(folder)
    said = {(i.column, i.value): i.problem for i in e.value.issues}
    assert set(said) == {("max_tests", "0"), ("max_tests", "x"), ("max_tests", "3")}
    assert "positive integer" in said["max_tests", "0"] and "S04 ran 4 test(s) of their own" in said["max_tests", "3"]
    P["max_tests"] = ["", "6", "5", "4", "2", "30"]
    P.to_csv(folder / "participants.csv", index=False)
    ok = load_trials(folder)
    assert ok.budgets() == {"S01": None, "S02": 6, "S03": 5, "S04": 4, "S05": 2, "S06": 30}
    assert designs_of(ok)["S05"].max_tests == 2 and designs_of(ok, max_tests=9)["S01"].max_tests == 9


def test_simulated_participants_at_the_cap_are_forced_to_stop():
    """A population that almost never stops by itself (stop_a = -12) runs into the cap of 3 tests: the data record
    max_tests = 3, every stop is forced, so the stops add nothing to the log-likelihood of the choices; with the
    budget column dropped, the same stops cost log sigmoid(stop logit) each."""
    cm = get_model("random")
    P = 5
    theta = {p.name: torch.full((P,), 0.0, dtype=torch.float64) for p in cm.all_params()}
    theta["stop_a"] = torch.full((P,), -12.0, dtype=torch.float64)
    data = simulate(cm, theta, [("disjunctive", (0,))] * P, 4, max_tests=3, seed=0)
    assert data.budgets() == dict.fromkeys(data.ids, 3)
    assert (data.tests.groupby("participant").size() == 3).all()
    feats = build_features(data)
    stops = feats.choice == feats.n_options - 1
    assert torch.equal(feats.must_stop, stops)
    lp = cm.log_probs(feats, theta).gather(-1, feats.choice[:, None]).squeeze(-1)
    assert bool((lp[stops] == 0).all())
    unforced = data.subset(data.ids)
    unforced.participants = unforced.participants.drop(columns=["max_tests"])
    f0 = build_features(unforced)
    lp0 = cm.log_probs(f0, theta).gather(-1, f0.choice[:, None]).squeeze(-1)
    assert bool((lp0[stops] < -11).all())  # log sigmoid(-12 + ...): the stop was nearly impossible as a choice
    np.testing.assert_array_equal(lp0[~stops].numpy(), lp[~stops].numpy())
    # the fit (its traced density) and its ArviZ log-likelihood read the same: every forced stop is log 1
    f = causalplay.fit(data, "random", method="svi", svi=SVIOptions(steps=10, draws=4, progress=False), seed=0)
    ll = f.idata.log_likelihood["choice"].values.reshape(-1, feats.n_decisions)
    assert (ll[:, stops.numpy()] == 0).all() and (ll[:, ~stops.numpy()] < 0).all()
