"""The trial-data loader: the shipped Nexiom data and every bad-row case the validator must report."""

import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

from causalplay.data import DataValidationError, load_nexiom, load_trials

SRC = Path(__file__).resolve().parents[1] / "causalplay" / "data" / "nexiom"


def test_nexiom_shipped_counts_match_readme():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no impossible outcome in the shipped data
        d = load_nexiom()
    assert len(d) == 78 and len(d.tests) == 608 and d.n_objects == 4
    assert d.n_choices == 608 + 78
    assert d.flags == []
    assert set(d.participants["rule"]) == {"conjunctive", "disjunctive"}
    first = d.tests.iloc[0]
    assert (first["participant"], first["test"], first["objects_on"], first["lit"]) == ("P001", 1, (0, 1), False)
    assert d.histories()["P001"].pairs()[3] == ((1, 3), True)
    assert (SRC / "README.md").read_text().count("BSD 3-Clause License") == 1


def test_split_is_disjoint_stratified_and_seeded():
    d = load_nexiom()
    a, b = d.split(0.25, seed=3)
    assert set(a.ids).isdisjoint(b.ids) and len(a) + len(b) == 78
    assert len(b) == round(0.25 * 40) + round(0.25 * 38)  # per-rule rounding
    assert b.ids == d.split(0.25, seed=3)[1].ids
    assert a.n_choices + b.n_choices == d.n_choices


def _copy(tmp_path, edit_file=None, row=None, column=None, value=None):
    dst = tmp_path / "d"
    shutil.copytree(SRC, dst)
    if edit_file is not None:
        df = pd.read_csv(dst / edit_file, dtype=str, keep_default_na=False)
        df.loc[row, column] = value
        df.to_csv(dst / edit_file, index=False)
    return dst


# (file, 0-based data row, column, bad value, words the problem must contain). Reported row = data row + 2
# because line 1 is the header.
CASES = [
    ("tests.csv", 10, "lit", "maybe", "true/false"),
    ("tests.csv", 4, "objects_on", "0 7", "outside range"),
    ("tests.csv", 4, "objects_on", "0 4", "outside range"),  # the boundary: index == n_objects
    ("participants.csv", 6, "true_blickets", "4", "outside range"),
    ("participants.csv", 6, "judged_blickets", "1 4", "outside range"),
    ("tests.csv", 4, "objects_on", "0 x", "indices"),
    ("tests.csv", 4, "objects_on", "1 1", "repeated"),
    ("tests.csv", 7, "participant", "P999", "not in participants.csv"),
    ("tests.csv", 2, "test", "zero", "positive integer"),
    ("tests.csv", 2, "seconds_since_previous", "-3", ">= 0"),
    ("participants.csv", 5, "rule", "sometimes", "unknown rule"),
    ("participants.csv", 5, "rule_choice", "both", "unknown rule"),
    ("participants.csv", 6, "true_blickets", "0 9", "outside range"),
    ("participants.csv", 3, "n_tests", "many", "non-negative integer"),
    ("participants.csv", 3, "blickets_correct", "yes", "true/false"),
    ("participants.csv", 3, "round_seconds", "soon", ">= 0"),
]


@pytest.mark.parametrize(("file", "row", "column", "value", "words"), CASES)
def test_bad_cell_is_reported_with_file_row_column_value(tmp_path, file, row, column, value, words):
    folder = _copy(tmp_path, file, row, column, value)
    with pytest.raises(DataValidationError) as e:
        load_trials(folder, n_objects=4)
    hits = [i for i in e.value.issues if (i.file, i.row, i.column, i.value) == (file, row + 2, column, value)]
    assert hits, e.value.issues
    assert words in hits[0].problem
    assert f"{file}, row {row + 2}, column {column!r}, value {value!r}" in str(e.value)


def test_largest_valid_object_index_is_accepted(tmp_path):
    """Index n_objects - 1 is the last valid one (the boundary beside the rejected index == n_objects); when
    n_objects is not given it is the largest index mentioned plus one."""
    folder = _copy(tmp_path, "tests.csv", 4, "objects_on", "3 0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the edited outcome may be flagged impossible; that is not the point
        d = load_trials(folder, n_objects=4)
        assert d.tests.loc[4, "objects_on"] == (0, 3) and d.n_objects == 4
        assert load_trials(folder).n_objects == 4
        e = _copy(tmp_path / "e", "participants.csv", 6, "judged_blickets", "6")
        assert load_trials(e).n_objects == 7


def test_duplicate_participant(tmp_path):
    folder = _copy(tmp_path, "participants.csv", 1, "participant", "P001")
    with pytest.raises(DataValidationError) as e:
        load_trials(folder, n_objects=4)
    assert any(i.row == 3 and i.column == "participant" and "duplicate" in i.problem for i in e.value.issues)


def test_n_tests_must_match_tests_table(tmp_path):
    folder = _copy(tmp_path, "participants.csv", 0, "n_tests", "14")  # P001 ran 15 tests
    with pytest.raises(DataValidationError) as e:
        load_trials(folder, n_objects=4)
    assert [(i.row, i.column, i.value) for i in e.value.issues] == [(2, "n_tests", "14")]


def test_tests_must_be_numbered_in_order(tmp_path):
    folder = _copy(tmp_path, "tests.csv", 1, "test", "3")  # P001: 1, 3, 3, ...
    with pytest.raises(DataValidationError) as e:
        load_trials(folder, n_objects=4)
    assert e.value.issues[0].row == 3 and e.value.issues[0].column == "test"


def test_correctness_columns_are_checked(tmp_path):
    folder = _copy(tmp_path, "participants.csv", 0, "rule_correct", "false")  # P001 chose the true rule
    with pytest.raises(DataValidationError, match="disagrees with rule/rule_choice"):
        load_trials(folder, n_objects=4)


def test_missing_column(tmp_path):
    folder = _copy(tmp_path)
    df = pd.read_csv(folder / "tests.csv", dtype=str, keep_default_na=False).drop(columns="lit")
    df.to_csv(folder / "tests.csv", index=False)
    with pytest.raises(DataValidationError, match="column 'lit'.*required column is missing"):
        load_trials(folder)


def test_all_bad_rows_are_reported_at_once(tmp_path):
    folder = _copy(tmp_path, "tests.csv", 0, "lit", "?")
    df = pd.read_csv(folder / "tests.csv", dtype=str, keep_default_na=False)
    df.loc[5, "objects_on"] = "9"
    df.to_csv(folder / "tests.csv", index=False)
    with pytest.raises(DataValidationError) as e:
        load_trials(folder, n_objects=4)
    assert {(i.row, i.column) for i in e.value.issues} == {(2, "lit"), (7, "objects_on")}


def test_impossible_outcome_is_flagged_not_silently_kept(tmp_path):
    # P001 (conjunctive, blickets 1 3), test 1 put objects 0 1 on: one blicket, so under the conjunctive
    # rule the machine cannot light. Make it light.
    folder = _copy(tmp_path, "tests.csv", 0, "lit", "true")
    with pytest.warns(UserWarning, match="impossible"):
        d = load_trials(folder, n_objects=4)
    assert d.tests["possible"].tolist().count(False) == 1
    assert not d.tests.loc[0, "possible"]
    (flag,) = d.flags
    assert (flag.file, flag.row, flag.column, flag.value) == ("tests.csv", 2, "lit", "true")
    assert "P001" in flag.problem and "conjunctive" in flag.problem
    with pytest.raises(DataValidationError, match="impossible outcome"):
        load_trials(folder, n_objects=4, impossible="raise")


def test_unlit_with_a_blicket_under_disjunctive_is_impossible(tmp_path):
    # P003: disjunctive, blickets 0 1. Find a test with a blicket on that lit, and make it unlit.
    d = load_nexiom()
    t = d.tests
    row = t.index[(t.participant == "P003") & t.lit][0]
    folder = _copy(tmp_path, "tests.csv", row, "lit", "false")
    with pytest.warns(UserWarning):
        d2 = load_trials(folder, n_objects=4)
    assert [f.row for f in d2.flags] == [row + 2]


def test_bad_arguments(tmp_path):
    with pytest.raises(FileNotFoundError, match="participants.csv"):
        load_trials(tmp_path)
    with pytest.raises(ValueError, match="impossible"):
        load_trials(SRC, impossible="keep")
    with pytest.raises(ValueError, match="n_objects"):
        load_trials(SRC, n_objects=0)
