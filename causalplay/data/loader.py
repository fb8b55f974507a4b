"""Read and validate a folder of human Blicket-detector trial data.

The schema is ``docs/data-schema.md``: one folder, two CSV files (UTF-8, comma-separated, header on line 1),
``participants.csv`` with one row per participant and the columns :data:`PARTICIPANT_COLUMNS` at least, and
``tests.csv`` with one row per test, in order, and the columns :data:`TEST_COLUMNS` at least; the optional columns
the loader checks are listed there, and any further column is kept as text. Objects are numbered **from 0**: in a
study with ``n_objects=4`` the indices are ``0 1 2 3``.

**Multi-round data** (several machines per person): one ``participants.csv`` row per round, the
``participant`` code unique per round (e.g. ``p07-r2``), ``learner`` naming the person and ``round`` numbering
that person's rounds ``1, 2, ...`` (each number once, no gaps). :meth:`TrialData.sequences` returns each
learner's rounds in order, the input of :func:`causalplay.infer_overhypothesis`.

Validation reports every bad cell as ``file, row (line number in the file, header = line 1), column, value:
problem`` and raises :class:`DataValidationError` listing all of them; so are file-level problems (not UTF-8,
a line with more or fewer fields than the header, an empty file, a missing column). A test whose outcome is
impossible under the participant's stated true rule and blickets (decided with :mod:`causalplay.core.rules`) is
**flagged**: ``tests["possible"]`` is False, the problem is listed in ``TrialData.flags`` and a warning is
issued (``impossible="raise"`` makes it an error instead).
"""

from __future__ import annotations

import csv
import io
import re
import warnings
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..core.rules import make_rule
from .trials import SOURCES, DataValidationError, RowIssue, TrialData

__all__ = ["load_trials", "PARTICIPANT_COLUMNS", "TEST_COLUMNS"]

PARTICIPANT_COLUMNS = ("participant", "rule", "true_blickets", "judged_blickets", "rule_choice", "n_tests")
TEST_COLUMNS = ("participant", "test", "objects_on", "lit")
_BOOL = {"true": True, "false": False, "1": True, "0": False}
_NOT_UTF8 = re.compile("[\udc80-\udcff]")
# What a cell of a typed column looks like, to tell where an unquoted comma split a line (_comma_split).
_SHAPE = {**dict.fromkeys(("test", "n_tests", "n_objects", "n_blickets", "round", "max_tests"), r"\d*"),
          **dict.fromkeys(("true_blickets", "judged_blickets", "objects_on"), r"[\d ]*"),
          **dict.fromkeys(("lit", "blickets_correct", "rule_correct", "prior_experience"), r"(?i)(true|false|1|0)?"),
          **dict.fromkeys(("round_seconds", "seconds_since_previous"), r"[\d.eE+-]*")}
# Columns the loader parses; any other column is free text, where an unquoted comma usually hides.
_TYPED = {*PARTICIPANT_COLUMNS, *TEST_COLUMNS, "n_objects", "n_blickets", "blickets_correct", "rule_correct",
          "prior_experience", "round_seconds", "learner", "round", "source", "seconds_since_previous", "max_tests"}


def _read_csv(path: Path, required: tuple[str, ...]) -> pd.DataFrame:
    """All cells as text (types are checked cell by cell so each bad value is reported with its place); the
    index is each row's line number. File-level problems raise :class:`DataValidationError`."""
    if not path.is_file():
        raise FileNotFoundError(f"missing {path.name} in {path.parent} (expected the participants/tests schema)")
    name = path.name
    # Undecodable bytes become lone surrogates (U+DC80..U+DCFF), reported cell by cell below; -sig: Excel's
    # "CSV UTF-8" starts with a byte-order mark.
    raw = path.read_bytes()
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise DataValidationError([RowIssue(name, 1, "", "UTF-16", "the file is UTF-16 text (Excel's 'Unicode "
                                            "Text'); save it as UTF-8 (in Excel: 'CSV UTF-8')")])
    text = raw.decode("utf-8-sig", "surrogateescape")
    reader = csv.reader(io.StringIO(text, newline=""))
    issues, rows, lines, header = [], [], [], []

    def utf8(line: int, cells: list[str], names: list[str]) -> None:
        for k, v in enumerate(cells):
            if m := _NOT_UTF8.search(v):
                issues.append(RowIssue(name, line, names[k] if k < len(names) else f"field {k + 1}",
                                       v.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"),
                                       f"byte 0x{ord(m[0]) - 0xDC00:02x} is not UTF-8 text; save the file as UTF-8 "
                                       "(in Excel: 'CSV UTF-8')"))

    try:
        header = [c.strip() for c in next(reader, [])]
        utf8(1, header, [f"field {k + 1}" for k in range(len(header))])
        end = reader.line_num
        for row in reader:
            line, end = end + 1, reader.line_num  # where the row starts and ends (a quoted value may hold newlines)
            if not any(f.strip() for f in row):  # blank lines and the ",,,," rows spreadsheets leave
                continue
            utf8(line, row, header)
            if len(row) == len(header):
                rows.append(row)
                lines.append(line)
                continue
            why = f"the line has {len(row)} fields but the header {len(header)}: " + (
                "a value spans several lines: is a quote left open?" if line < end else
                'a comma inside a value must be quoted, e.g. "red, then blue"' if len(row) > len(header) else
                "values are missing")
            col, val = _comma_split(header, row) if len(row) > len(header) else (header[len(row)], "")
            issues.append(RowIssue(name, line, col, val, why))
    except csv.Error as e:  # e.g. a field over csv's size limit: a quote left open in a large file
        issues.append(RowIssue(name, reader.line_num, "", "", f"unreadable CSV: {e}; is a quote left open?"))
    issues += [RowIssue(name, 1, c, c, "the column appears twice in the header") for k, c in enumerate(header)
               if c in header[:k]]
    hint = " (the file is empty)" if not header else \
        " (the header looks ';'-separated; expected commas)" if ";" in "".join(header) else ""
    issues += [RowIssue(name, 1, c, "", "required column is missing" + hint) for c in required if c not in header]
    if issues:
        raise DataValidationError(issues)
    return pd.DataFrame(rows, columns=header, index=lines, dtype=object)


def _comma_split(header: list[str], row: list[str]) -> tuple[str, str]:
    """(column, value) of the text an unquoted comma most likely split: of the free-text columns, the one whose
    re-joined reading puts the most cells in the shape of their typed columns (ties: the rightmost)."""
    extra = len(row) - len(header)

    def fit(j: int) -> int:
        cells = row[:j] + [",".join(row[j:j + extra + 1])] + row[j + extra + 1:]
        return sum(bool(re.fullmatch(_SHAPE[c], v.strip())) for c, v in zip(header, cells, strict=True) if c in _SHAPE)

    free = [j for j, c in enumerate(header) if c not in _TYPED] or [len(header) - 1]
    j = max(reversed(free), key=fit)
    return header[j], ",".join(row[j:j + extra + 1])


def _count(value: str) -> int | None:
    """A non-negative integer in ASCII digits, else None (``'²'.isdigit()`` is True but ``int`` fails, and
    ``int('١')`` is 1: neither belongs in a data file)."""
    v = value.strip()
    return int(v) if v.isascii() and v.isdigit() else None


def _ascii(value: str) -> str:
    """The problem's tail for a value holding non-ASCII characters (superscripts, circled or Arabic-Indic
    digits, ...), which often look like digits."""
    odd = "".join(dict.fromkeys(c for c in value if not c.isascii()))
    return f"; {odd!r} is not one of the digits 0-9" if odd else ""


def _indices(value: str, n_objects: int | None) -> tuple[int, ...] | str:
    parts = value.split()
    if not all(p.isascii() and p.isdigit() for p in parts):
        return "expected space-separated object indices (0-based non-negative integers), e.g. '0 2'" + _ascii(value)
    idx = tuple(int(p) for p in parts)
    if len(set(idx)) != len(idx):
        return "an object index is repeated"
    if n_objects is not None and any(i >= n_objects for i in idx):
        return (f"object index {max(idx)} is outside range(n_objects={n_objects}): objects are numbered from 0, "
                f"so the largest index is {n_objects - 1}")
    return tuple(sorted(idx))


def load_trials(folder: str | Path, *, n_objects: int | None = None, impossible: str = "flag",
                warn: bool = True) -> TrialData:
    """Read and validate a folder holding ``participants.csv`` and ``tests.csv`` (see the module docstring).

    Parameters
    ----------
    folder : path
    n_objects : int, optional
        Number of objects (indices ``0 .. n_objects - 1``). Required unless ``participants.csv`` has an
        ``n_objects`` column; when both are given they must agree. It is never guessed from the indices, so a
        typo such as ``4`` in a 4-object study is an error instead of a fifth object.
    impossible : {"flag", "raise"}
        What to do with a test outcome that cannot happen under the participant's true rule and blickets.
    warn : bool
        With ``impossible="flag"``, warn when outcomes are flagged (``False``: they are only in ``.flags``).

    Returns
    -------
    TrialData

    Raises
    ------
    DataValidationError
        Listing every bad cell with file, row number, column and value.
    """
    data = _load(folder, n_objects=n_objects, impossible=impossible)
    if data.flags:
        if impossible == "raise":
            raise DataValidationError(data.flags)
        if warn:
            warnings.warn(f"{len(data.flags)} test outcome(s) impossible under the stated true rule/blickets are "
                          f"flagged (tests['possible'] is False); first: {data.flags[0]}", stacklevel=2)
    return data


def _load(folder: str | Path, *, n_objects: int | None = None, impossible: str = "flag") -> TrialData:
    """:func:`load_trials` without the warning for flagged outcomes (they are in ``.flags``)."""
    if impossible not in ("flag", "raise"):
        raise ValueError(f"impossible must be 'flag' or 'raise', got {impossible!r}")
    if n_objects is not None and (isinstance(n_objects, (bool, np.bool_))
                                  or not isinstance(n_objects, (int, np.integer)) or n_objects < 1):
        raise ValueError(f"n_objects must be a positive integer, got {n_objects!r}")
    folder = Path(folder)
    P = _read_csv(folder / "participants.csv", PARTICIPANT_COLUMNS)
    T = _read_csv(folder / "tests.csv", TEST_COLUMNS)
    if P.empty:
        raise DataValidationError([RowIssue("participants.csv", 2, "participant", "",
                                            "no participant rows (only a header)")])
    if "round" in P.columns and "learner" not in P.columns:
        raise DataValidationError([RowIssue("participants.csv", 1, "learner", "",
                                            "a round column needs a learner column (who played the rounds)")])
    issues: list[RowIssue] = []

    def bad(file, line, col, val, problem):
        issues.append(RowIssue(file, int(line), col, str(val), problem))

    n_objects = _object_count(P, T, n_objects, bad)

    # participants.csv
    prow: dict[str, dict] = {}
    parsed_p = []
    for i, r in P.iterrows():
        out = _participant_row(i, r, P.columns, n_objects, prow, bad)
        if out["participant"] and out["participant"] not in prow:
            prow[out["participant"]] = out
        parsed_p.append(out)

    # tests.csv
    parsed_t = []
    seen: dict[str, list[int]] = {}
    flags: list[RowIssue] = []
    for i, r in T.iterrows():
        parsed_t.append(_test_row(i, r, T.columns, n_objects, prow, seen, flags, bad))

    if "round" in P.columns:
        _check_rounds(parsed_p, bad)

    own: dict[str, int] = {}  # each participant's own tests (not demonstrations), what a budget counts
    for t in parsed_t:
        if "source" not in T.columns or SOURCES.get(str(t["source"]).strip().lower(), True):
            own[t["participant"]] = own.get(t["participant"], 0) + 1
    for pid, p in prow.items():
        if p["n_tests"] is not None and p["n_tests"] != len(seen.get(pid, [])):
            bad("participants.csv", p["_row"], "n_tests", p["n_tests"],
                f"tests.csv has {len(seen.get(pid, []))} test(s) for {pid}")
        if p.get("max_tests") is not None and p["max_tests"] >= 1 and own.get(pid, 0) > p["max_tests"]:
            bad("participants.csv", p["_row"], "max_tests", p["max_tests"],
                f"{pid} ran {own[pid]} test(s) of their own in tests.csv, more than the budget")

    if issues:
        raise DataValidationError(issues)

    part = pd.DataFrame(parsed_p).drop(columns=["_row", "_rule"])
    tests = pd.DataFrame(parsed_t, columns=list(T.columns) + ["possible"])
    order = {pid: k for k, pid in enumerate(part["participant"])}
    tests = tests.sort_values(["participant", "test"], key=lambda s: s.map(order) if s.name == "participant" else s)
    return TrialData(part, tests.reset_index(drop=True), n_objects, flags, str(folder))


def _object_count(P: pd.DataFrame, T: pd.DataFrame, n_objects: int | None, bad) -> int | None:
    """The number of objects: ``n_objects`` or the files' ``n_objects`` column, which must agree and be one
    positive integer (None when a row is bad: ``bad`` has the row)."""
    found = False
    if "n_objects" in P.columns:
        first: tuple[int, int] | None = None
        for i, v in P["n_objects"].items():
            n = _count(v)
            if n is None or n < 1:
                found = True
                bad("participants.csv", i, "n_objects", v, "expected a positive integer" + _ascii(v))
            elif n_objects is not None and n != n_objects:
                found = True
                bad("participants.csv", i, "n_objects", v, f"disagrees with load_trials(n_objects={n_objects})")
            elif first is not None and n != first[0]:
                found = True
                bad("participants.csv", i, "n_objects", v, f"differs from row {first[1]} ({first[0]}): every "
                    "participant must have the same number of objects")
            elif first is None:
                first = (n, i)
        if n_objects is None and first is not None and not found:
            n_objects = first[0]
    elif n_objects is None:
        mx = max((int(p) for col, df in (("true_blickets", P), ("judged_blickets", P), ("objects_on", T))
                  for v in df[col] for p in v.split() if p.isascii() and p.isdigit()), default=None)
        hint = ("no object index appears in the files, so any N >= 1" if mx is None else
                f"the largest index in the files is {mx}, so N >= {mx + 1}")
        raise DataValidationError([RowIssue(
            "participants.csv", 1, "n_objects", "",
            "the number of objects is not given: add an n_objects column to participants.csv or pass "
            f"load_trials(folder, n_objects=N) (objects are numbered from 0; {hint})")])
    return n_objects


def _participant_row(i: int, r: pd.Series, columns, n_objects: int | None, prow: dict, bad) -> dict:
    """Row ``i`` of participants.csv parsed and checked (``prow``: the rows seen so far, by code)."""
    f = "participants.csv"
    out = dict(r)
    pid = r["participant"].strip()
    if not pid:
        bad(f, i, "participant", r["participant"], "empty participant code")
    elif pid in prow:
        bad(f, i, "participant", pid, f"duplicate participant code (first at row {prow[pid]['_row']})")
    out.update(participant=pid, _row=int(i))
    try:
        rule = make_rule(r["rule"].strip())
        out["rule"] = rule.name
    except (ValueError, TypeError) as e:
        bad(f, i, "rule", r["rule"], str(e))
        rule = None
    out["_rule"] = rule
    for col in ("true_blickets", "judged_blickets"):
        v = _indices(r[col], n_objects)
        if isinstance(v, str):
            bad(f, i, col, r[col], v)
            v = None
        out[col] = v
    rc = r["rule_choice"].strip()
    if rc:
        try:
            out["rule_choice"] = make_rule(rc).name
        except (ValueError, TypeError) as e:
            bad(f, i, "rule_choice", r["rule_choice"], str(e))
    else:
        out["rule_choice"] = None
    out["n_tests"] = _count(r["n_tests"])
    if out["n_tests"] is None:
        bad(f, i, "n_tests", r["n_tests"], "expected a non-negative integer" + _ascii(r["n_tests"]))
    if "n_objects" in columns:
        out["n_objects"] = _count(r["n_objects"])
    if "n_blickets" in columns:
        out["n_blickets"] = k = _count(r["n_blickets"])
        if r["n_blickets"].strip() and k is None:
            bad(f, i, "n_blickets", r["n_blickets"],
                "expected a non-negative integer (or empty)" + _ascii(r["n_blickets"]))
        elif k is not None and out["true_blickets"] is not None and k != len(out["true_blickets"]):
            bad(f, i, "n_blickets", r["n_blickets"], f"the count told must equal the number of true_blickets "
                f"({len(out['true_blickets'])})")
    if "max_tests" in columns:
        out["max_tests"] = m = _count(r["max_tests"])
        if r["max_tests"].strip() and not (m is not None and m >= 1):
            bad(f, i, "max_tests", r["max_tests"],
                "expected a positive integer (the participant's test budget) or empty" + _ascii(r["max_tests"]))
    for col in ("blickets_correct", "rule_correct", "prior_experience"):
        if col in columns:
            v = r[col].strip().lower()
            if v and v not in _BOOL:
                bad(f, i, col, r[col], "expected true/false (or empty)")
            out[col] = _BOOL.get(v)
    if "round" in columns:
        rd = _count(r["round"])
        if not (rd is not None and rd >= 1):
            bad(f, i, "round", r["round"],
                "expected a positive integer (1-based round of the learner)" + _ascii(r["round"]))
            rd = None
        out["round"] = rd
        out["learner"] = r["learner"].strip()
        if not out["learner"]:
            bad(f, i, "learner", r["learner"], "empty learner code (needed with a round column)")
    if "round_seconds" in columns:
        out["round_seconds"] = _nonneg_float(r["round_seconds"],
                                             partial(bad, f, i, "round_seconds", r["round_seconds"]))
    if out.get("blickets_correct") is not None and out["true_blickets"] is not None \
            and out["judged_blickets"] is not None \
            and out["blickets_correct"] != (out["true_blickets"] == out["judged_blickets"]):
        bad(f, i, "blickets_correct", r["blickets_correct"], "disagrees with true_blickets/judged_blickets")
    if out.get("rule_correct") is not None and rule is not None and isinstance(out["rule_choice"], str) \
            and out["rule_correct"] != (out["rule_choice"] == rule.name):
        bad(f, i, "rule_correct", r["rule_correct"], "disagrees with rule/rule_choice")
    return out


def _test_row(i: int, r: pd.Series, columns, n_objects: int | None, prow: dict, seen: dict, flags: list,
              bad) -> dict:
    """Row ``i`` of tests.csv parsed and checked against its participant (``seen``: each participant's test
    numbers so far; an outcome the rule makes impossible goes to ``flags``)."""
    f = "tests.csv"
    out = dict(r)
    pid = r["participant"].strip()
    out["participant"] = pid
    if pid not in prow:
        bad(f, i, "participant", r["participant"], "participant code not in participants.csv")
    tt = _count(r["test"])
    if tt is not None and tt >= 1:
        out["test"] = tt
        seen.setdefault(pid, []).append(tt)
        if seen[pid][-1] != len(seen[pid]):
            bad(f, i, "test", r["test"], f"tests of {pid} must be numbered 1, 2, ... in order; "
                                          f"expected {len(seen[pid])}")
    else:
        bad(f, i, "test", r["test"], "expected a positive integer (1-based test index)" + _ascii(r["test"]))
        out["test"] = None
    v = _indices(r["objects_on"], n_objects)
    if isinstance(v, str):
        bad(f, i, "objects_on", r["objects_on"], v)
        v = None
    out["objects_on"] = v
    lit = r["lit"].strip().lower()
    if lit not in _BOOL:
        bad(f, i, "lit", r["lit"], "expected true/false (or 1/0)")
    out["lit"] = _BOOL.get(lit)
    if "source" in columns and r["source"].strip().lower() not in SOURCES:
        bad(f, i, "source", r["source"], "expected choice, demonstration, participant (read as choice) or "
            "context (read as demonstration); empty = choice")
    if "seconds_since_previous" in columns:
        out["seconds_since_previous"] = _nonneg_float(
            r["seconds_since_previous"], partial(bad, f, i, "seconds_since_previous", r["seconds_since_previous"]))
    out["possible"] = True
    p = prow.get(pid)
    if p is not None and p["_rule"] is not None and p["true_blickets"] is not None and v is not None \
            and out["lit"] is not None:
        k = torch.tensor(float(len(set(v) & set(p["true_blickets"]))), dtype=torch.float64)
        p_lit = float(p["_rule"].p_lit(k))
        if (out["lit"] and p_lit == 0.0) or (not out["lit"] and p_lit == 1.0):
            out["possible"] = False
            flags.append(RowIssue(f, int(i), "lit", r["lit"],
                                  f"impossible outcome: objects {list(v)} with true blickets "
                                  f"{list(p['true_blickets'])} under the {p['rule']} rule give "
                                  f"P(lit)={p_lit:g} (participant {pid})"))
    return out


def _check_rounds(parsed_p: list[dict], bad) -> None:
    """Each learner's rounds are numbered 1..n, each once."""
    rounds: dict[str, list[tuple[int, int]]] = {}
    for p in parsed_p:
        if p.get("learner") and p.get("round") is not None:
            rounds.setdefault(p["learner"], []).append((p["round"], p["_row"]))
    for who, rs in rounds.items():
        nums = sorted(n for n, _ in rs)
        if nums != list(range(1, len(nums) + 1)):
            row = max(rs)[1] if len(set(nums)) == len(nums) else \
                [r for n, r in rs if [m for m, _ in rs].count(n) > 1][-1]
            bad("participants.csv", row, "round", str(nums),
                f"rounds of learner {who!r} must be numbered 1..{len(nums)}, each once; got {nums}")


def _nonneg_float(value: str, report) -> float | None:
    v = value.strip()
    if not v:
        return None
    try:
        x = float(v)
    except ValueError:
        x = float("nan")
    if not v.isascii() or not np.isfinite(x) or x < 0:  # float() also reads Arabic-Indic digits
        report("expected a number >= 0 (or empty)" + _ascii(v))
        return None
    return x
