"""causalplay.design trajectory scores against the ideal learner, checked on cases worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from causalplay.agents import make_agent
from causalplay.bench.play import play
from causalplay.core.history import History
from causalplay.data import example_folder, load_nexiom, load_trials
from causalplay.design import Design, nexiom_designs, record_nexiom, score_histories, score_people, summarise

H_QUARTER = -(0.25 * math.log2(0.25) + 0.75 * math.log2(0.75))  # 0.8113 bits


def test_two_objects_by_hand():
    """Two objects, 8 equally likely hypotheses (4 sets x disjunctive/conjunctive), a noise-free machine.

    Test {0}: lights only under disjunctive with 0 a blicket (2 of 8): EIG = H_b(1/4) = 0.811 bits.
    Test {0, 1}: lights under disjunctive with any blicket (3) or conjunctive with both (1): 4 of 8, EIG = 1 bit,
    the best. So choosing {0} first has regret 1 - 0.811. After {0} lit, disjunctive {0} and {0, 1} remain; {1}
    dark leaves disjunctive {0}: identified after test 2, where {1} and {0, 1} split the two (1 bit each, best)."""
    h = History.from_pairs([((0,), True), ((1,), False)], 2)
    s = score_histories([h], 2, ids=["a"])
    assert s["objects_on"].tolist() == [(0,), (1,)] and s["choice"].tolist() == [1, 2]
    assert s["eig_bits"].tolist() == pytest.approx([H_QUARTER, 1.0], abs=1e-12)
    assert s["best_eig_bits"].tolist() == pytest.approx([1.0, 1.0], abs=1e-12)
    assert s["regret_bits"].tolist() == pytest.approx([1.0 - H_QUARTER, 0.0], abs=1e-12)
    assert s["best"].tolist() == [False, True]
    assert s["entropy_bits"].tolist() == pytest.approx([3.0, 1.0], abs=1e-12)
    assert s["max_posterior_after"].tolist() == pytest.approx([0.5, 1.0], abs=1e-12)
    m = summarise(s)
    assert m.loc["a", "tests_to_identify"] == 2 and m.loc["a", "n_tests"] == 2
    assert m.loc["a", "total_regret_bits"] == pytest.approx(1.0 - H_QUARTER, abs=1e-12)
    assert m.loc["a", "frac_best"] == 0.5


def test_demonstrations_and_told_count():
    """The same world with {0} -> lit shown as a demonstration and one blicket told: 4 hypotheses ({0} or {1} x
    2 rules); with one blicket a conjunctive machine never lights, so {0} lit leaves disjunctive {0} alone. The
    first own test then has EIG 0, which is the best (every test is uninformative)."""
    h = History.from_pairs([((0,), True), ((1,), False)], 2)
    s = score_histories([h], 2, chosen=[[1]], told=[1], ids=["a"])
    assert s["choice"].tolist() == [1] and s["position"].tolist() == [1]
    assert s["eig_bits"].tolist() == [0.0] and s["best"].tolist() == [True]
    assert s["entropy_bits"].tolist() == pytest.approx([0.0], abs=1e-12)
    # told 2 blickets, nothing seen: {0, 1} under either rule; {0} lights under disjunctive only: 1 bit (untold:
    # H_b(1/4), as in the test above)
    s = score_histories([History.from_pairs([((0,), True)], 2)], 2, told=[2])
    assert s["eig_bits"].tolist() == pytest.approx([1.0], abs=1e-12)


def test_impossible_history_is_refused_then_scored_with_noise():
    h = History.from_pairs([((0,), True), ((0,), False)], 2)
    with pytest.raises(ValueError, match="impossible for the ideal learner by its test 2"):
        score_histories([h], 2, ids=["x"])
    assert len(score_histories([h], 2, noise=0.05)) == 2


def test_people_skip_demonstrations():
    data = load_trials(example_folder())
    s = score_people(data)
    assert len(s) == int(data.is_choice.sum())
    assert set(s["id"]) <= set(data.ids)
    assert (s["regret_bits"] >= 0).all() and (s["eig_bits"] <= s["best_eig_bits"] + 1e-12).all()
    nex = score_people(load_nexiom())
    assert len(nex) == len(load_nexiom().tests)


def test_the_eig_agent_has_no_regret():
    """The Nexiom EIG agent picks a best joint-EIG test given the told count, as the ideal learner scores it."""
    rec = record_nexiom(nexiom_designs(), seed=0)
    play(rec, make_agent("eig", family="nexiom"))
    s = rec.score()
    assert np.allclose(s["regret_bits"], 0.0, atol=1e-12) and s["best"].all()
    m = summarise(s)
    assert len(m) == 12 and (m["tests_to_identify"] <= m["n_tests"]).all()


def test_summarise_by_group_and_bad_input():
    h = [History.from_pairs([((0,), True)], 2), History.from_pairs([((0, 1), False)], 2)]
    s = score_histories(h, 2, ids=["a", "b"])
    m = summarise(s, by=pd.Series({"a": "x", "b": "y"}, name="rule"))
    assert m["rule"].tolist() == ["x", "y"]
    assert np.isnan(m.loc["a", "tests_to_identify"])  # {0} lit leaves 2 hypotheses
    with pytest.raises(ValueError, match="one entry per history"):
        score_histories(h, 2, ids=["a"])
    with pytest.raises(ValueError, match="chosen position 3"):
        score_histories(h, 2, chosen=[[3], [0]])
    with pytest.raises(ValueError, match="shows no demonstrations"):
        record_nexiom([Design(4, (0, 1), "conjunctive", demonstrations=[(0,)])])
