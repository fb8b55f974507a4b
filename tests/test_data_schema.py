"""The schema's guard rails: every mistake a new user makes in a data folder is a DataValidationError naming file,
row, column and value; demonstrations, told blicket counts and n_objects in the data; check_data; the example."""

import csv
import shutil
import warnings

import numpy as np
import pytest

from causalplay.data import DataValidationError, check_data, example_folder, load_nexiom, load_trials

EXAMPLE = example_folder()
NEXIOM = EXAMPLE.parent / "nexiom"


def _rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _edit(tmp_path, file, line, new, src=EXAMPLE):
    """A copy of ``src`` with line ``line`` (1-based, header = 1) of ``file`` replaced by ``new`` (str or bytes)."""
    dst = tmp_path / "d"
    shutil.copytree(src, dst)
    lines = (dst / file).read_bytes().split(b"\n")
    lines[line - 1] = new if isinstance(new, bytes) else new.encode()
    (dst / file).write_bytes(b"\n".join(lines))
    return dst


def _issues(folder, **kw):
    with pytest.raises(DataValidationError) as e:
        load_trials(folder, **kw)
    return [(i.file, i.row, i.column, i.value, i.problem) for i in e.value.issues], str(e.value)


P, T = "participants.csv", "tests.csv"
S01 = "S01,4,disjunctive,0 2,2,0 2,true,disjunctive,true,{},5,84.2,explore"  # the example's line 2, rule_text open
# (file, line, new line, column, value, problem) -- one mistake each, each reported alone and in full
CASES = {
    "object index == n_objects (a typo of 2 3 in a 4-object study)": (
        T, 3, "S01,2,2 4,false,choice,6.4", "objects_on", "2 4",
        "object index 4 is outside range(n_objects=4): objects are numbered from 0, so the largest index is 3"),
    "superscript digit in objects_on": (
        T, 3, "S01,2,²,false,choice,6.4", "objects_on", "²",
        "expected space-separated object indices (0-based non-negative integers), e.g. '0 2'; '²' is not one of "
        "the digits 0-9"),
    "circled digit in objects_on": (
        T, 3, "S01,2,0 ①,false,choice,6.4", "objects_on", "0 ①",
        "expected space-separated object indices (0-based non-negative integers), e.g. '0 2'; '①' is not one of "
        "the digits 0-9"),
    "Arabic-Indic digit in objects_on (int() would read it as 1)": (
        T, 3, "S01,2,١,false,choice,6.4", "objects_on", "١",
        "expected space-separated object indices (0-based non-negative integers), e.g. '0 2'; '١' is not one of "
        "the digits 0-9"),
    "full-width digit in n_blickets": (
        P, 3, "S02,4,conjunctive,1 3,２,1 3,true,conjunctive,true,,6,131.0,explore", "n_blickets", "２",
        "expected a non-negative integer (or empty); '２' is not one of the digits 0-9"),
    "superscript digit in n_tests": (
        P, 2, S01.replace(",5,84.2", ",⁵,84.2").format("x"), "n_tests", "⁵",
        "expected a non-negative integer; '⁵' is not one of the digits 0-9"),
    "Arabic-Indic digits in seconds (float() would read them)": (
        T, 3, "S01,2,1,false,choice,٦.٤", "seconds_since_previous", "٦.٤",
        "expected a number >= 0 (or empty); '٦٤' is not one of the digits 0-9"),
    "unquoted comma in the last free-text column": (
        P, 2, "S01,4,disjunctive,0 2,2,0 2,true,disjunctive,true,x,5,84.2,explore, then test", "condition",
        "explore, then test", 'the line has 14 fields but the header 13: a comma inside a value must be quoted, '
        'e.g. "red, then blue"'),
    "unquoted comma in a free-text column followed by typed columns": (
        P, 2, S01.format("0 or 2, either one"), "rule_text", "0 or 2, either one",
        'the line has 14 fields but the header 13: a comma inside a value must be quoted, e.g. "red, then blue"'),
    "a line with fields missing": (
        T, 3, "S01,2,1", "lit", "", "the line has 3 fields but the header 6: values are missing"),
    "a quote left open": (
        T, 30, 'S06,3,2 3,false,"choice,7.4', "seconds_since_previous", "",
        "the line has 5 fields but the header 6: a value spans several lines: is a quote left open?"),
    "Latin-1 byte (not UTF-8) in a free-text column": (
        P, 2, S01.format("Caf\xe9 rule").encode("latin-1"), "rule_text", "Caf\\xe9 rule",
        "byte 0xe9 is not UTF-8 text; save the file as UTF-8 (in Excel: 'CSV UTF-8')"),
    "Latin-1 byte after a quoted comma (the column is found by CSV, not by counting commas)": (
        P, 2, S01.format('"a, b"').replace("explore", "expl\xf6re").encode("latin-1"), "condition", "expl\\xf6re",
        "byte 0xf6 is not UTF-8 text; save the file as UTF-8 (in Excel: 'CSV UTF-8')"),
    "n_objects not a positive integer": (
        P, 3, "S02,0,conjunctive,1 3,2,1 3,true,conjunctive,true,,6,131.0,explore", "n_objects", "0",
        "expected a positive integer"),
    "n_objects differs between participants": (
        P, 3, "S02,5,conjunctive,1 3,2,1 3,true,conjunctive,true,,6,131.0,explore", "n_objects", "5",
        "differs from row 2 (4): every participant must have the same number of objects"),
    "n_blickets not the number of true blickets": (
        P, 3, "S02,4,conjunctive,1 3,3,1 3,true,conjunctive,true,,6,131.0,explore", "n_blickets", "3",
        "the count told must equal the number of true_blickets (2)"),
    "n_blickets not a number": (
        P, 3, "S02,4,conjunctive,1 3,two,1 3,true,conjunctive,true,,6,131.0,explore", "n_blickets", "two",
        "expected a non-negative integer (or empty)"),
    "unknown source": (
        T, 20, "S04,3,0,false,demo,15.8", "source", "demo",
        "expected choice, demonstration, participant (read as choice) or context (read as demonstration); "
        "empty = choice"),
    "an extra field where every column is typed (the last column is named)": (
        T, 3, "S01,2,1,false,choice,6.4,7", "seconds_since_previous", "6.4,7",
        'the line has 7 fields but the header 6: a comma inside a value must be quoted, e.g. "red, then blue"'),
    "duplicate header column": (
        T, 1, "participant,test,objects_on,lit,source,lit", "lit", "lit", "the column appears twice in the header"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_mistake_is_one_issue_naming_file_row_column_value(tmp_path, case):
    file, line, new, column, value, problem = CASES[case]
    got, text = _issues(_edit(tmp_path, file, line, new))
    assert got == [(file, line, column, value, problem)]
    assert f"{file}, row {line}, column {column!r}, value {value!r}: {problem}" in text


def test_empty_tests_file_names_every_required_column(tmp_path):
    folder = _edit(tmp_path, T, 1, "")
    (folder / T).write_bytes(b"")
    got, _ = _issues(folder)
    assert got == [(T, 1, c, "", "required column is missing (the file is empty)")
                   for c in ("participant", "test", "objects_on", "lit")]


def test_utf16_file_is_named(tmp_path):
    """Excel's "Unicode text" is UTF-16 (its byte-order mark is not UTF-8, every other byte a NUL)."""
    folder = _edit(tmp_path, T, 1, "participant,test,objects_on,lit,source,seconds_since_previous")
    (folder / T).write_bytes((EXAMPLE / T).read_text().encode("utf-16"))
    assert _issues(folder)[0] == [(T, 1, "", "UTF-16", "the file is UTF-16 text (Excel's 'Unicode Text'); save it "
                                   "as UTF-8 (in Excel: 'CSV UTF-8')")]


def test_non_utf8_byte_in_the_header(tmp_path):
    folder = _edit(tmp_path, T, 1, "participant,test,objects_on,lit,s\xf6urce,seconds_since_previous".encode("latin-1"))
    assert _issues(folder)[0] == [(T, 1, "field 5", "s\\xf6urce", "byte 0xf6 is not UTF-8 text; save the file as "
                                   "UTF-8 (in Excel: 'CSV UTF-8')")]


def test_semicolon_separated_file_gets_a_hint(tmp_path):
    folder = _edit(tmp_path, T, 1, "participant;test;objects_on;lit;source;seconds_since_previous")
    (folder / T).write_text((folder / T).read_text().replace(",", ";"))
    got, _ = _issues(folder)
    assert got == [(T, 1, c, "", "required column is missing (the header looks ';'-separated; expected commas)")
                   for c in ("participant", "test", "objects_on", "lit")]


def test_header_only_participants_file(tmp_path):
    folder = tmp_path / "d"
    shutil.copytree(EXAMPLE, folder)
    (folder / P).write_text((EXAMPLE / P).read_text().splitlines()[0] + "\n")
    assert _issues(folder)[0] == [(P, 2, "participant", "", "no participant rows (only a header)")]


def test_open_quote_in_a_large_file_is_reported_not_raised(tmp_path):
    folder = _edit(tmp_path, T, 2, 'S01,1,0,true,choice,"9.1')
    (folder / T).write_text((folder / T).read_text() + "x" * 140_000)  # past csv's 131072-character field limit
    ((file, row, col, val, problem),), _ = _issues(folder)
    assert (file, col, val) == (T, "", "") and problem.startswith("unreadable CSV: field larger than field limit")
    assert row == 32  # the header, 30 rows, then the line of x's (line 32) where the open field passes the limit
    assert problem.endswith("is a quote left open?")


def test_n_objects_is_never_guessed(tmp_path):
    """Without an n_objects column or argument the loader refuses (the old default took the largest index + 1,
    so a typo made a 5-object world); with both they must agree."""
    folder = tmp_path / "d"
    shutil.copytree(EXAMPLE, folder)
    rows = _rows(folder / P)
    with open(folder / P, "w", newline="") as f:
        w = csv.DictWriter(f, [c for c in rows[0] if c != "n_objects"])
        w.writeheader()
        w.writerows({k: v for k, v in r.items() if k != "n_objects"} for r in rows)
    got, _ = _issues(folder)
    assert got == [(P, 1, "n_objects", "", "the number of objects is not given: add an n_objects column to "
                    "participants.csv or pass load_trials(folder, n_objects=N) (objects are numbered from 0; the "
                    "largest index in the files is 3, so N >= 4)")]
    assert load_trials(folder, n_objects=4).n_objects == 4
    assert load_trials(folder, n_objects=6).n_objects == 6  # more objects than used is allowed when said
    got, _ = _issues(EXAMPLE, n_objects=5)
    assert got == [(P, r, "n_objects", "4", "disagrees with load_trials(n_objects=5)") for r in range(2, 8)]


def test_optional_columns_may_be_empty(tmp_path):
    """S03 (the example) was not asked the rule: rule_choice and rule_correct empty; here blickets_correct and
    n_blickets are emptied too."""
    folder = _edit(tmp_path, P, 4, "S03,4,disjunctive,1 2,,1 2,,,,,5,,")
    p = load_trials(folder).participants.set_index("participant").loc["S03"]
    assert p["rule_choice"] is None and p["rule_correct"] is None and p["blickets_correct"] is None
    assert np.isnan(p["round_seconds"]) and p["condition"] == "" and p["rule_text"] == ""
    assert load_trials(folder).known_counts()["S03"] is None


def test_bom_blank_lines_and_crlf_load_unchanged(tmp_path):
    """Excel's "CSV UTF-8" (byte-order mark, CRLF) and the empty ",,,," rows spreadsheets append."""
    folder = tmp_path / "d"
    shutil.copytree(EXAMPLE, folder)
    for name in (P, T):
        text = (EXAMPLE / name).read_text()
        width = text.splitlines()[0].count(",")
        (folder / name).write_bytes(b"\xef\xbb\xbf" + (text + "," * width + "\n\n").replace("\n", "\r\n").encode())
    a, b = load_trials(EXAMPLE), load_trials(folder)
    assert a.participants.equals(b.participants) and a.tests.equals(b.tests)


def test_example_folder_summary_matches_a_count_by_hand():
    """check_data's numbers against counts made here with the csv module."""
    prow, trow = _rows(EXAMPLE / P), _rows(EXAMPLE / T)
    demos = [r for r in trow if r["source"] == "demonstration"]
    s = check_data(EXAMPLE)
    assert s.ok and s.issues == [] and s.flags == []
    assert (s.participants, s.tests, s.demonstrations) == (len(prow), len(trow), len(demos)) == (6, 30, 4)
    assert s.demonstrated_to == len({r["participant"] for r in demos}) == 2
    assert s.n_objects == 4 and s.learners is None
    assert s.rules == {"disjunctive": 3, "conjunctive": 3}
    assert s.rule_asked == sum(bool(r["rule_choice"]) for r in prow) == 5
    assert s.known_counts == {2: 4, 1: 1}
    assert str(s) == (f"{EXAMPLE}: valid\n"
                      "  participants        6\n"
                      "  rules               conjunctive 3, disjunctive 3; rule asked of 5\n"
                      "  objects             4 (indices 0-3)\n"
                      "  tests               30: 26 choices, 4 demonstrations (watched by 2 participants)\n"
                      "  blicket count told  to 5 of 6 (1 blicket(s): 1, 2 blicket(s): 4)\n"
                      "  flags               0 impossible outcome(s)")


def test_check_data_returns_problems_and_flags_instead_of_raising(tmp_path):
    bad = check_data(_edit(tmp_path / "a", T, 3, "S01,2,2 4,false,choice,6.4"))
    assert not bad.ok and [(i.row, i.column) for i in bad.issues] == [(3, "objects_on")]
    assert str(bad).startswith(f"{tmp_path / 'a' / 'd'}: 1 problem(s)\n  problem  tests.csv, row 3, column "
                               "'objects_on', value '2 4': object index 4")
    flagged = _edit(tmp_path / "b", T, 2, "S01,1,0,false,choice,9.1")  # 0 is a blicket, disjunctive: must light
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # check_data reports flags without warning
        s = check_data(flagged)
    assert s.ok and [(f.row, f.column, f.value) for f in s.flags] == [(2, "lit", "false")]
    assert str(s).endswith("flags               1 impossible outcome(s)\n  flag                tests.csv, row 2, "
                           "column 'lit', value 'false': impossible outcome: objects [0] with true blickets [0, 2] "
                           "under the disjunctive rule give P(lit)=1 (participant S01)")
    assert check_data(NEXIOM, n_objects=4).participants == 78


def test_demonstrations_are_history_but_not_choices():
    """S04 watched 2 demonstrations then ran 4 tests; S05 2 and 2 (the example's tests.csv)."""
    d = load_trials(EXAMPLE)
    assert d.is_choice.tolist() == [r["source"] == "choice" for r in _rows(EXAMPLE / T)]
    h, idx = d.histories(), d.choice_indices()
    assert h["S04"].pairs() == [((0, 3), True), ((0, 1), False), ((0,), False), ((3,), False), ((0, 2), False),
                                ((0, 3), True)]
    assert idx["S04"].tolist() == [2, 3, 4, 5] and idx["S05"].tolist() == [2, 3]
    assert idx["S01"].tolist() == [0, 1, 2, 3, 4] and idx["S01"].dtype == np.int64
    assert d.n_choices == 26 + 6  # tests chosen + one stop each
    assert d.known_counts() == {"S01": 2, "S02": 2, "S03": None, "S04": 2, "S05": 1, "S06": 2}
    s = d.subset(["S05", "S01"])
    assert s.choice_indices()["S05"].tolist() == [2, 3] and s.n_choices == 2 + 5 + 2
    assert s.known_counts() == {"S05": 1, "S01": 2}
    nex = load_nexiom()  # no source / n_blickets columns: everything a choice, nobody told a count
    assert nex.is_choice.all() and set(nex.known_counts().values()) == {None}
    assert all(len(v) == len(h) for v, h in zip(nex.choice_indices().values(), nex.histories().values(),
                                                strict=True))


def test_serve_export_with_context_panels_loads_as_demonstrations(tmp_path):
    """``causalplay export`` writes source=context for the panels shown before a participant's own tests
    (source=participant); they load as demonstrations."""
    pytest.importorskip("sqlalchemy")
    pytest.importorskip("alembic")
    from sqlalchemy.orm import Session

    from causalplay.serve.store import Participant, TrialRow, export_trials, open_db

    url = f"sqlite:///{tmp_path / 'e.db'}"
    with Session(open_db(url)) as s, s.begin():
        p = Participant(code="C1", code_source="generated", session_token="t", task="causalplay/IVRE-v0", slot=0,
                        condition=0, design_seed=0, episode_seed=0, n_objects=4, rule="disjunctive",
                        true_blickets="1", stage="done", check_attempts=1, n_tests=3, consented_at=10.0,
                        task_started_at=20.0, finished_at=40.0, judged_blickets="1", rule_choice="disjunctive")
        s.add(p)
        s.flush()
        for k, (on, lit, src) in enumerate([("1", True, "context"), ("0 2", False, "context"),
                                            ("1 3", True, "participant")], start=1):
            s.add(TrialRow(participant_id=p.id, test=k, objects_on=on, lit=lit, source=src, created_at=20.0 + k))
    export_trials(url, tmp_path / "out")
    d = load_trials(tmp_path / "out", n_objects=4, impossible="raise")
    assert d.is_choice.tolist() == [False, False, True] and d.choice_indices()["C1"].tolist() == [2]
    assert d.n_choices == 2 and d.histories()["C1"].pairs()[0] == ((1,), True)


# ---- survivors of the 2026-11-26 validator rerun (the widened test selection) ----


def test_utf16_big_endian_file_is_named(tmp_path):
    """The byte-order mark of big-endian UTF-16 (FE FF) is named as well as the little-endian one (FF FE)."""
    folder = _edit(tmp_path, T, 1, "participant,test,objects_on,lit,source,seconds_since_previous")
    (folder / T).write_bytes(b"\xfe\xff" + (EXAMPLE / T).read_text().encode("utf-16-be"))
    assert _issues(folder)[0] == [(T, 1, "", "UTF-16", "the file is UTF-16 text (Excel's 'Unicode Text'); save it "
                                   "as UTF-8 (in Excel: 'CSV UTF-8')")]


def test_cr_line_endings_quoted_newlines_and_blank_lines_mid_file(tmp_path):
    """Old Mac Excel's CR-only line ends load like LF; a quoted value spanning lines of a CRLF file is kept as
    written (CR LF inside it); a blank line in the middle skips only itself, and line numbers count it."""
    a = load_trials(EXAMPLE)
    cr = tmp_path / "cr"
    shutil.copytree(EXAMPLE, cr)
    for name in (P, T):
        (cr / name).write_bytes((EXAMPLE / name).read_bytes().replace(b"\n", b"\r"))
    b = load_trials(cr)
    assert a.participants.equals(b.participants) and a.tests.equals(b.tests)
    crlf = _edit(tmp_path / "q", P, 2, S01.format('"two\nlines"'))
    (crlf / P).write_bytes((crlf / P).read_bytes().replace(b"\n", b"\r\n"))
    p = load_trials(crlf).participants.set_index("participant")
    assert p.loc["S01", "rule_text"] == "two\r\nlines" and p.loc["S02", "rule_text"] == "Only when 1 and 3 are both on."
    # a blank line and a spreadsheet's ",,,,," row after line 2, then a bad value on (old) line 5 = new line 7
    blank = tmp_path / "b"
    shutil.copytree(EXAMPLE, blank)
    lines = (EXAMPLE / T).read_text().split("\n")
    lines[4] = "S01,4,3,maybe,choice,4.8"
    (blank / T).write_text("\n".join(lines[:2] + ["", ",,,,,"] + lines[2:]))
    assert _issues(blank)[0] == [(T, 7, "lit", "maybe", "expected true/false (or 1/0)")]
    lines[4] = "S01,4,3,false,choice,4.8"
    (blank / T).write_text("\n".join(lines[:2] + ["", ",,,,,"] + lines[2:]))
    assert load_trials(blank).tests.equals(a.tests)  # the rows after the blank lines are all read


def test_non_utf8_byte_in_a_field_past_the_header(tmp_path):
    """A line with one field more than the header, the extra one holding a Latin-1 byte: the byte is reported
    at "field 7" (there is no 7th column name), then the extra field (every column of tests.csv is typed, so
    the comma is placed in the last column)."""
    folder = _edit(tmp_path, T, 3, "S01,2,1,false,choice,6.4,caf\xe9".encode("latin-1"))
    assert _issues(folder)[0] == [
        (T, 3, "field 7", "caf\\xe9", "byte 0xe9 is not UTF-8 text; save the file as UTF-8 (in Excel: 'CSV UTF-8')"),
        (T, 3, "seconds_since_previous", "6.4,caf\udce9", "the line has 7 fields but the header 6: a comma inside "
         'a value must be quoted, e.g. "red, then blue"')]


def _tiny(tmp_path, name, participants, tests, p_head="participant,n_objects,rule,true_blickets,judged_blickets,"
          "rule_choice,n_tests"):
    d = tmp_path / name
    d.mkdir()
    (d / P).write_text(p_head + "\n" + "".join(r + "\n" for r in participants))
    (d / T).write_text("participant,test,objects_on,lit\n" + "".join(r + "\n" for r in tests))
    return d


def test_n_objects_column_edge_cases(tmp_path):
    """n_objects = 1 is a valid study; when no n_objects cell is valid the loader still reports (not crashes);
    after a bad n_objects cell no object count is taken from the column, so indices are not range-checked."""
    one = load_trials(_tiny(tmp_path, "one", ["A,1,disjunctive,0,0,,1"], ["A,1,0,true"]))
    assert one.n_objects == 1 and one.tests.loc[0, "objects_on"] == (0,)
    assert _issues(_tiny(tmp_path, "allbad", ["A,x,disjunctive,0,0,,1"], ["A,1,0,true"]))[0] == [
        (P, 2, "n_objects", "x", "expected a positive integer")]
    # rows 2 and 3 disagree (4, 5): only that is reported, not index 4 as outside a range(4) taken from row 2
    assert _issues(_tiny(tmp_path, "differ", ["A,4,disjunctive,0,0,,1", "B,5,disjunctive,4,4,,0"],
                         ["A,1,0,true"]))[0] == [
        (P, 3, "n_objects", "5", "differs from row 2 (4): every participant must have the same number of objects")]


def test_missing_n_objects_message_reads_only_ascii_digits(tmp_path):
    """The largest index the message names skips tokens that are not ASCII digits ("x", "١"), and with no
    index at all the problem is still a DataValidationError, not a crash, which says N >= 1 (not "N >= 0")."""
    head = "participant,rule,true_blickets,judged_blickets,rule_choice,n_tests"
    got, _ = _issues(_tiny(tmp_path, "odd", ["A,disjunctive,\u0661,0 x,,1"], ["A,1,x 2,true"], p_head=head))
    assert got == [(P, 1, "n_objects", "", "the number of objects is not given: add an n_objects column to "
                    "participants.csv or pass load_trials(folder, n_objects=N) (objects are numbered from 0; the "
                    "largest index in the files is 2, so N >= 3)")]
    got, _ = _issues(_tiny(tmp_path, "none", ["A,disjunctive,,,,1"], ["A,1,,false"], p_head=head))
    assert got == [(P, 1, "n_objects", "", "the number of objects is not given: add an n_objects column to "
                    "participants.csv or pass load_trials(folder, n_objects=N) (objects are numbered from 0; no "
                    "object index appears in the files, so any N >= 1)")]


def test_the_example_s_optional_columns_are_parsed_in_place():
    """n_objects and n_blickets are parsed to ints (n_blickets empty -> missing) in their own columns: the
    participants table has exactly the file's columns, in the file's order."""
    d = load_trials(EXAMPLE)
    with open(EXAMPLE / P, newline="", encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert list(d.participants.columns) == header
    assert d.participants["n_objects"].tolist() == [4] * 6
    assert all(type(v) is int for v in d.participants["n_objects"])
    assert [None if v is None or v != v else int(v) for v in d.participants["n_blickets"]] == [2, 2, None, 2, 1, 2]
