"""Human Blicket-detector trial data: a long-format schema, a validating loader and the shipped Nexiom data.

Schema (one folder, two CSV files; see ``docs/human-data.md``)
---------------------------------------------------------------
``participants.csv`` -- one row per participant

=================  ========  =================================================================
column             required  meaning
=================  ========  =================================================================
participant        yes       unique non-empty code
rule               yes       true rule: ``disjunctive``, ``conjunctive`` or ``threshold<m>``
true_blickets      yes       space-separated object indices of the true blickets
judged_blickets    yes       indices the participant judged to be blickets (may be empty)
rule_choice        yes       the participant's choice of rule (a rule name; empty = not asked)
n_tests            yes       number of tests the participant ran (rows in ``tests.csv``)
blickets_correct   no        ``true``/``false``; checked against the two columns above
rule_correct       no        ``true``/``false``; checked against ``rule``/``rule_choice``
prior_experience   no        ``true``/``false``
round_seconds      no        number >= 0 (empty allowed)
learner            no        the person who played this round (needed with ``round``)
round              no        1-based order of this round among the ``learner``'s rounds
rule_text, ...     no        any further column is kept as text
=================  ========  =================================================================

**Multi-round data** (several machines per person, issue 15): one ``participants.csv`` row per round, the
``participant`` code unique per round (e.g. ``p07-r2``), ``learner`` naming the person and ``round`` numbering
that person's rounds ``1, 2, ...`` (each number once, no gaps). :meth:`TrialData.sequences` returns each
learner's rounds in order, the input of :func:`causalplay.infer_overhypothesis`.

``tests.csv`` -- one row per test, in order

======================  ========  =============================================================
column                  required  meaning
======================  ========  =============================================================
participant             yes       a code from ``participants.csv``
test                    yes       1-based index of the test within the participant's round
objects_on              yes       space-separated object indices on the machine (empty = none)
lit                     yes       ``true``/``false`` (also ``1``/``0``)
seconds_since_previous  no        number >= 0 (empty allowed)
======================  ========  =============================================================

Validation reports every bad row as ``file, row (1-based line number in the file, header = line 1), column,
value, problem`` and raises :class:`DataValidationError` listing all of them. A test whose outcome is
impossible under the participant's stated true rule and blickets (decided with :mod:`causalplay.rules`) is
**flagged**: ``tests["possible"]`` is False, the problem is listed in ``TrialData.flags`` and a warning is
issued (``impossible="raise"`` makes it an error instead).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import partial
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..history import History
from ..rules import make_rule

__all__ = ["TrialData", "RowIssue", "DataValidationError", "load_trials", "load_nexiom",
           "PARTICIPANT_COLUMNS", "TEST_COLUMNS"]

PARTICIPANT_COLUMNS = ("participant", "rule", "true_blickets", "judged_blickets", "rule_choice", "n_tests")
TEST_COLUMNS = ("participant", "test", "objects_on", "lit")
_BOOL = {"true": True, "false": False, "1": True, "0": False}


@dataclass(frozen=True)
class RowIssue:
    """One problem in one cell of an input file."""

    file: str
    row: int
    column: str
    value: str
    problem: str

    def __str__(self) -> str:
        return f"{self.file}, row {self.row}, column {self.column!r}, value {self.value!r}: {self.problem}"


class DataValidationError(ValueError):
    """Raised by :func:`load_trials` for bad rows; ``.issues`` lists every :class:`RowIssue`."""

    def __init__(self, issues: list[RowIssue]):
        self.issues = list(issues)
        head = "\n  ".join(str(i) for i in issues[:25])
        more = f"\n  ... and {len(issues) - 25} more" if len(issues) > 25 else ""
        super().__init__(f"{len(issues)} bad value(s) in the trial data:\n  {head}{more}")


@dataclass
class TrialData:
    """Validated human trial data in the long-format schema.

    Attributes
    ----------
    participants : DataFrame
        One row per participant; ``true_blickets``/``judged_blickets`` are tuples of ints, ``rule_choice`` a
        rule name or ``None``, ``n_tests`` an int.
    tests : DataFrame
        One row per test sorted by (participant order, test); ``objects_on`` is a tuple of ints, ``lit`` a bool,
        ``possible`` whether the outcome can happen under the participant's true rule and blickets.
    n_objects : int
    flags : list of RowIssue
        Impossible outcomes (kept, but flagged).
    source : str
    """

    participants: pd.DataFrame
    tests: pd.DataFrame
    n_objects: int
    flags: list[RowIssue] = field(default_factory=list)
    source: str = ""

    @property
    def ids(self) -> list[str]:
        return self.participants["participant"].tolist()

    def __len__(self) -> int:
        return len(self.participants)

    @property
    def n_choices(self) -> int:
        """Choices to score: every test plus each participant's decision to stop."""
        return len(self.tests) + len(self.participants)

    def histories(self) -> dict[str, History]:
        """``participant -> History`` of the tests they ran, in order."""
        out = {}
        groups = dict(iter(self.tests.groupby("participant", sort=False)))
        for pid in self.ids:
            g = groups.get(pid)
            pairs = [] if g is None else list(zip(g["objects_on"], g["lit"], strict=True))
            out[pid] = History.from_pairs(pairs, self.n_objects) if pairs else History(
                np.zeros((0, self.n_objects), dtype=bool), np.zeros(0, dtype=bool))
        return out

    def sequences(self) -> dict[str, list[History]]:
        """``learner -> [History of round 1, round 2, ...]`` for multi-round data (``learner`` and ``round``
        columns; see the module docstring), ready for :func:`causalplay.infer_overhypothesis`."""
        if "round" not in self.participants.columns:
            raise ValueError("this data has no round column: one round per participant (see the schema's "
                             "multi-round columns learner and round)")
        hs = self.histories()
        out: dict[str, list[History]] = {}
        for _, r in self.participants.sort_values(["learner", "round"], kind="stable").iterrows():
            out.setdefault(r["learner"], []).append(hs[r["participant"]])
        return out

    def subset(self, ids) -> TrialData:
        """The data of the participants in ``ids`` (in that order)."""
        ids = list(ids)
        unknown = [i for i in ids if i not in set(self.ids)]
        if unknown:
            raise ValueError(f"unknown participant(s) {unknown[:5]}")
        p = self.participants.set_index("participant").loc[ids].reset_index()
        t = self.tests[self.tests["participant"].isin(ids)].copy()
        order = {pid: i for i, pid in enumerate(ids)}
        t = t.sort_values(["participant", "test"], key=lambda s: s.map(order) if s.name == "participant" else s)
        keep = {f"(participant {i})" for i in ids}
        flags = [f for f in self.flags if any(f.problem.endswith(k) for k in keep)]
        return TrialData(p, t.reset_index(drop=True), self.n_objects, flags, self.source)

    def split(self, test_fraction: float = 0.25, seed: int = 0) -> tuple[TrialData, TrialData]:
        """Split participants at random into (fit, held-out), stratified by true rule."""
        if not 0.0 < test_fraction < 1.0:
            raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
        rng = np.random.default_rng(seed)
        held = []
        for _, g in self.participants.groupby("rule", sort=True):
            ids = g["participant"].to_numpy()
            k = int(round(test_fraction * len(ids)))
            held.extend(rng.choice(ids, size=k, replace=False).tolist())
        held_set = set(held)
        fit_ids = [i for i in self.ids if i not in held_set]
        return self.subset(fit_ids), self.subset([i for i in self.ids if i in held_set])

    def folds(self, k: int = 4, seed: int = 0) -> list[tuple[TrialData, TrialData]]:
        """``k`` (fit, held-out) pairs in which every participant is held out exactly once (participant-level
        k-fold cross-validation), stratified by true rule: each rule's participants are shuffled and dealt
        round-robin, starting each rule at the fold after the last one dealt, so fold sizes differ by at most one.
        """
        k = int(k)
        if not 2 <= k <= len(self):
            raise ValueError(f"k must be between 2 and the number of participants ({len(self)}), got {k!r}")
        rng = np.random.default_rng(seed)
        fold_of: dict = {}
        nxt = 0
        for _, g in self.participants.groupby("rule", sort=True):
            for pid in rng.permutation(g["participant"].to_numpy()).tolist():
                fold_of[pid] = nxt
                nxt = (nxt + 1) % k
        out = []
        for f in range(k):
            held = [i for i in self.ids if fold_of[i] == f]
            out.append((self.subset([i for i in self.ids if fold_of[i] != f]), self.subset(held)))
        return out


def _read_csv(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise FileNotFoundError(f"missing {path.name} in {path.parent} (expected the participants/tests schema)")
    # Everything as text: types are checked cell by cell so each bad value can be reported with its place.
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _indices(value: str, n_objects: int | None) -> tuple[int, ...] | str:
    parts = value.split()
    if not all(p.isdigit() for p in parts):
        return "expected space-separated object indices (non-negative integers), e.g. '0 2'"
    idx = tuple(int(p) for p in parts)
    if len(set(idx)) != len(idx):
        return "an object index is repeated"
    if n_objects is not None and any(i >= n_objects for i in idx):
        return f"object index outside range(n_objects={n_objects})"
    return tuple(sorted(idx))


def load_trials(folder: str | Path, *, n_objects: int | None = None, impossible: str = "flag") -> TrialData:
    """Read and validate a folder holding ``participants.csv`` and ``tests.csv`` (see the module docstring).

    Parameters
    ----------
    folder : path
    n_objects : int, optional
        Number of objects; when omitted, the largest object index mentioned anywhere plus one.
    impossible : {"flag", "raise"}
        What to do with a test outcome that cannot happen under the participant's true rule and blickets.

    Returns
    -------
    TrialData

    Raises
    ------
    DataValidationError
        Listing every bad cell with file, row number, column and value.
    """
    if impossible not in ("flag", "raise"):
        raise ValueError(f"impossible must be 'flag' or 'raise', got {impossible!r}")
    if n_objects is not None and (isinstance(n_objects, bool) or not isinstance(n_objects, int) or n_objects < 1):
        raise ValueError(f"n_objects must be a positive integer, got {n_objects!r}")
    folder = Path(folder)
    P = _read_csv(folder / "participants.csv")
    T = _read_csv(folder / "tests.csv")
    issues: list[RowIssue] = []

    def bad(file, row, col, val, problem):
        issues.append(RowIssue(file, int(row) + 2, col, str(val), problem))

    for name, df, cols in (("participants.csv", P, PARTICIPANT_COLUMNS), ("tests.csv", T, TEST_COLUMNS)):
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise DataValidationError([RowIssue(name, 1, c, "", "required column is missing") for c in missing])
    if "round" in P.columns and "learner" not in P.columns:
        raise DataValidationError([RowIssue("participants.csv", 1, "learner", "",
                                            "a round column needs a learner column (who played the rounds)")])

    if n_objects is None:
        mx = -1
        for col, df in (("true_blickets", P), ("judged_blickets", P), ("objects_on", T)):
            for v in df[col]:
                for p in v.split():
                    if p.isdigit():
                        mx = max(mx, int(p))
        n_objects = max(mx + 1, 1)

    # participants.csv
    prow: dict[str, dict] = {}
    parsed_p = []
    for i, r in P.iterrows():
        f = "participants.csv"
        out = dict(r)
        pid = r["participant"].strip()
        if not pid:
            bad(f, i, "participant", r["participant"], "empty participant code")
        elif pid in prow:
            bad(f, i, "participant", pid, f"duplicate participant code (first at row {prow[pid]['_row']})")
        out["participant"] = pid
        out["_row"] = int(i) + 2
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
        nt = r["n_tests"].strip()
        if nt.isdigit():
            out["n_tests"] = int(nt)
        else:
            bad(f, i, "n_tests", r["n_tests"], "expected a non-negative integer")
            out["n_tests"] = None
        for col in ("blickets_correct", "rule_correct", "prior_experience"):
            if col in P.columns:
                v = r[col].strip().lower()
                if v not in _BOOL:
                    bad(f, i, col, r[col], "expected true/false")
                out[col] = _BOOL.get(v)
        if "round" in P.columns:
            rd = r["round"].strip()
            if not (rd.isdigit() and int(rd) >= 1):
                bad(f, i, "round", r["round"], "expected a positive integer (1-based round of the learner)")
            out["round"] = int(rd) if rd.isdigit() and int(rd) >= 1 else None
            out["learner"] = r["learner"].strip() if "learner" in P.columns else None
            if "learner" in P.columns and not out["learner"]:
                bad(f, i, "learner", r["learner"], "empty learner code (needed with a round column)")
        if "round_seconds" in P.columns:
            out["round_seconds"] = _nonneg_float(r["round_seconds"],
                                                 partial(bad, f, i, "round_seconds", r["round_seconds"]))
        if out.get("blickets_correct") is not None and out["true_blickets"] is not None \
                and out["judged_blickets"] is not None \
                and out["blickets_correct"] != (out["true_blickets"] == out["judged_blickets"]):
            bad(f, i, "blickets_correct", r["blickets_correct"], "disagrees with true_blickets/judged_blickets")
        if out.get("rule_correct") is not None and rule is not None and isinstance(out["rule_choice"], str) \
                and out["rule_correct"] != (out["rule_choice"] == rule.name):
            bad(f, i, "rule_correct", r["rule_correct"], "disagrees with rule/rule_choice")
        if pid and pid not in prow:
            prow[pid] = out
        parsed_p.append(out)

    # tests.csv
    parsed_t = []
    seen: dict[str, list[int]] = {}
    flags: list[RowIssue] = []
    for i, r in T.iterrows():
        f = "tests.csv"
        out = dict(r)
        pid = r["participant"].strip()
        out["participant"] = pid
        if pid not in prow:
            bad(f, i, "participant", r["participant"], "participant code not in participants.csv")
        tt = r["test"].strip()
        if tt.isdigit() and int(tt) >= 1:
            out["test"] = int(tt)
            seen.setdefault(pid, []).append(int(tt))
            if seen[pid][-1] != len(seen[pid]):
                bad(f, i, "test", r["test"], f"tests of {pid} must be numbered 1, 2, ... in order; "
                                              f"expected {len(seen[pid])}")
        else:
            bad(f, i, "test", r["test"], "expected a positive integer (1-based test index)")
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
        if "seconds_since_previous" in T.columns:
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
                flags.append(RowIssue(f, int(i) + 2, "lit", r["lit"],
                                      f"impossible outcome: objects {list(v)} with true blickets "
                                      f"{list(p['true_blickets'])} under the {p['rule']} rule give "
                                      f"P(lit)={p_lit:g} (participant {pid})"))
        parsed_t.append(out)

    if "round" in P.columns:
        rounds: dict[str, list[tuple[int, int]]] = {}
        for p in parsed_p:
            if p.get("learner") and p.get("round") is not None:
                rounds.setdefault(p["learner"], []).append((p["round"], p["_row"]))
        for who, rs in rounds.items():
            nums = sorted(n for n, _ in rs)
            if nums != list(range(1, len(nums) + 1)):
                row = max(rs)[1] if len(set(nums)) == len(nums) else \
                    [r for n, r in rs if [m for m, _ in rs].count(n) > 1][-1]
                bad("participants.csv", row - 2, "round", str(nums),
                    f"rounds of learner {who!r} must be numbered 1..{len(nums)}, each once; got {nums}")

    for pid, p in prow.items():
        if p["n_tests"] is not None and p["n_tests"] != len(seen.get(pid, [])):
            bad("participants.csv", p["_row"] - 2, "n_tests", p["n_tests"],
                f"tests.csv has {len(seen.get(pid, []))} test(s) for {pid}")

    if issues:
        raise DataValidationError(issues)
    if flags:
        if impossible == "raise":
            raise DataValidationError(flags)
        warnings.warn(f"{len(flags)} test outcome(s) impossible under the stated true rule/blickets are flagged "
                      f"(tests['possible'] is False); first: {flags[0]}", stacklevel=2)

    part = pd.DataFrame(parsed_p).drop(columns=["_row", "_rule"])
    tests = pd.DataFrame(parsed_t, columns=list(T.columns) + ["possible"]) if parsed_t else \
        pd.DataFrame(columns=list(T.columns) + ["possible"])
    order = {pid: k for k, pid in enumerate(part["participant"])}
    tests = tests.sort_values(["participant", "test"], key=lambda s: s.map(order) if s.name == "participant" else s)
    return TrialData(part, tests.reset_index(drop=True), n_objects, flags, str(folder))


def _nonneg_float(value: str, report) -> float | None:
    v = value.strip()
    if not v:
        return None
    try:
        x = float(v)
    except ValueError:
        report("expected a number >= 0 (or empty)")
        return None
    if not np.isfinite(x) or x < 0:
        report("expected a number >= 0 (or empty)")
        return None
    return x


def load_nexiom() -> TrialData:
    """The shipped Nexiom adult data (78 participants, 4 objects, 2 blickets; see ``nexiom/README.md``)."""
    folder = resources.files(__name__) / "nexiom"
    with resources.as_file(folder) as path:
        return load_trials(path, n_objects=4)
