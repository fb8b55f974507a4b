"""causalplay.fitting.ppc.summary_statistics: the statistics of a data set from its parts, checked by hand; bad
input named; and the analysis script's ``stats`` (first test = test 1) agrees with ``ppc.statistics`` (first own
test) on data where the two coincide."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from analysis import load_analysis

from causalplay.data import load_nexiom
from causalplay.fitting.ppc import statistics, summary_statistics


def _participants() -> pd.DataFrame:
    return pd.DataFrame({
        "participant": ["a", "b", "c", "d"],
        "rule": ["disjunctive", "disjunctive", "conjunctive", "conjunctive"],
        "rule_choice": ["disjunctive", "conjunctive", "conjunctive", None],
        "true_blickets": [(0, 1), (1, 2), (0, 3), (2, 3)],
        "judged_blickets": [(0, 1), (1, 2), (0,), (2, 3)],
    })


def test_summary_statistics_by_hand():
    first = pd.Series([(0,), (0, 1), (2,), (1, 2, 3)])
    size = pd.Series({1: 1.75, 2: 2.0, 3: 1.5})
    s = summary_statistics(first, size, np.array([3, 5, 3, 1]), _participants(), 0.25, max_test=4)
    # first tests: two contain object 0, two are one object, one is two objects
    assert (s["first_has_0"], s["first_single"], s["first_pair"]) == (0.5, 0.5, 0.25)
    assert s["mean_tests"] == 3.0 and s["median_tests"] == 3.0  # (3 + 5 + 3 + 1) / 4; median of 1 3 3 5
    assert s["tests_eq_3"] == 0.5 and s["tests_eq_1"] == 0.25 and s["tests_eq_5"] == 0.25 and s["tests_eq_2"] == 0
    assert s["top_eig_share"] == 0.25
    assert (s["size_t1"], s["size_t2"], s["size_t3"]) == (1.75, 2.0, 1.5) and math.isnan(s["size_t4"])
    assert "size_t5" not in s and "tests_eq_15" in s
    # disjunctive a, b: blickets both right, rule a right, b wrong; conjunctive c, d: blickets d right, rule c
    # right, d gave none (not right)
    assert s["blickets_correct_disjunctive"] == 1.0 and s["rule_correct_disjunctive"] == 0.5
    assert s["blickets_correct_conjunctive"] == 0.5 and s["rule_correct_conjunctive"] == 0.5


def test_summary_statistics_without_a_rule_is_nan():
    p = _participants().iloc[:2]
    s = summary_statistics(pd.Series([(0,), (1,)]), pd.Series(dtype=float), [2, 4], p, 0.0)
    assert math.isnan(s["blickets_correct_conjunctive"]) and math.isnan(s["rule_correct_conjunctive"])
    assert s["rule_correct_disjunctive"] == 0.5 and math.isnan(s["size_t1"])


def test_summary_statistics_names_bad_input():
    p = _participants()
    with pytest.raises(ValueError, match=r"no column\(s\) \['rule_choice'\]"):
        summary_statistics(pd.Series([(0,)]), pd.Series(dtype=float), [1] * 4, p.drop(columns="rule_choice"), 0.0)
    with pytest.raises(ValueError, match=r"n_tests has shape \(3,\); expected one count per participant, \(4,\)"):
        summary_statistics(pd.Series([(0,)]), pd.Series(dtype=float), [1, 2, 3], p, 0.0)
    with pytest.raises(ValueError, match="max_test"):
        summary_statistics(pd.Series([(0,)]), pd.Series(dtype=float), [1] * 4, p, 0.0, max_test=0)


def test_script_stats_equal_ppc_statistics_where_test_1_is_the_first_own_test():
    # the shipped data have no demonstrations and n_tests counts each person's own tests, so the script's inputs
    # (test 1, the n_tests column) and ppc.statistics's (first own test, own tests counted) are the same
    script = load_analysis("nexiom_fit")
    d = load_nexiom()
    assert bool(np.all(d.is_choice))
    a, b = script.stats(d, -0.5), statistics(d, -0.5)
    assert list(a) == list(b)
    assert all(a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in a)
    assert a["first_has_0"] == pytest.approx(73 / 78)  # human-data.md: 73 of 78 first tests contain object 0
