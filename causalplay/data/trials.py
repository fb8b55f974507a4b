"""Validated human trial data: :class:`TrialData`, and the :class:`RowIssue` / :class:`DataValidationError`
the loader reports bad cells with."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.history import History

__all__ = ["TrialData", "RowIssue", "DataValidationError", "SOURCES"]

#: ``tests.csv`` ``source`` values (lower-cased, trimmed) -> whether the row is the participant's own choice.
#: ``participant`` / ``context`` are what ``causalplay export`` writes for the same two things.
SOURCES = {"": True, "choice": True, "participant": True, "demonstration": False, "context": False}


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
        One row per test sorted by (participant order, test); ``objects_on`` is a tuple of 0-based object
        indices, ``lit`` a bool, ``possible`` whether the outcome can happen under the participant's true rule
        and blickets. Demonstrations the participant watched are rows too (``source`` column; see
        :attr:`is_choice`).
    n_objects : int
    flags : list of RowIssue
        Impossible outcomes (kept, but flagged).
    source : str
        Where the data came from (the folder read).
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
        """Choices to score: every test the participants chose (not demonstrations) plus each one's decision to
        stop."""
        return int(self.is_choice.sum()) + len(self.participants)

    @property
    def is_choice(self) -> np.ndarray:
        """``bool [len(tests)]``: True for a test the participant chose, False for a demonstration they watched
        (``source`` column of ``tests.csv``; all True without one)."""
        if "source" not in self.tests.columns:
            return np.ones(len(self.tests), dtype=bool)
        vals = [str(v).strip().lower() for v in self.tests["source"]]
        if bad := [v for v in vals if v not in SOURCES]:
            raise ValueError(f"tests['source'] value {bad[0]!r} is neither {sorted(SOURCES)}")
        return np.array([SOURCES[v] for v in vals], dtype=bool)

    def choice_indices(self) -> dict[str, np.ndarray]:
        """``participant -> int64 array`` of the positions in ``histories()[participant]`` that are the
        participant's own choices; the other positions are demonstrations (part of what they saw, not chosen)."""
        ch = self.is_choice
        groups = self.tests.groupby("participant", sort=False).indices
        return {pid: np.flatnonzero(ch[groups[pid]]) if pid in groups else np.zeros(0, dtype=np.int64)
                for pid in self.ids}

    def known_counts(self) -> dict[str, int | None]:
        """``participant -> number of blickets the participant was told`` (``n_blickets`` column of
        ``participants.csv``), None where not told (empty cell or no such column)."""
        return self._optional_counts("n_blickets")

    def budgets(self) -> dict[str, int | None]:
        """``participant -> tests the participant was allowed`` (``max_tests`` column of ``participants.csv``: their
        own tests, demonstrations not counted), None where no budget is recorded (empty cell or no such column)."""
        return self._optional_counts("max_tests")

    def _optional_counts(self, column: str) -> dict[str, int | None]:
        """``participant -> int`` of an optional count column of ``participants.csv``; None for an empty cell or
        when the column is absent."""
        if column not in self.participants.columns:
            return dict.fromkeys(self.ids)
        return {pid: None if pd.isna(k) else int(k)
                for pid, k in zip(self.ids, self.participants[column], strict=True)}

    def histories(self) -> dict[str, History]:
        """``participant -> History`` of everything the participant saw, in order: their tests and any
        demonstrations (:meth:`choice_indices` says which positions they chose)."""
        pairs = {pid: list(zip(g["objects_on"], g["lit"], strict=True))
                 for pid, g in self.tests.groupby("participant", sort=False)}
        return {pid: History.from_pairs(pairs.get(pid, ()), self.n_objects) for pid in self.ids}

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
        ids, known = list(ids), set(self.ids)
        if unknown := [i for i in ids if i not in known]:
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
        held = set()
        for _, g in self.participants.groupby("rule", sort=True):
            ids = g["participant"].to_numpy()
            k = int(round(test_fraction * len(ids)))
            held.update(rng.choice(ids, size=k, replace=False).tolist())
        return self.subset([i for i in self.ids if i not in held]), self.subset([i for i in self.ids if i in held])

    def folds(self, k: int = 4, seed: int = 0) -> list[tuple[TrialData, TrialData]]:
        """``k`` (fit, held-out) pairs in which every participant is held out exactly once (participant-level
        k-fold cross-validation), stratified by true rule: each rule's participants are shuffled and dealt
        round-robin, starting each rule at the fold after the last one dealt, so fold sizes differ by at most one.
        """
        k = int(k)
        if not 2 <= k <= len(self):
            raise ValueError(f"k must be between 2 and the number of participants ({len(self)}), got {k!r}")
        rng = np.random.default_rng(seed)
        dealt = [pid for _, g in self.participants.groupby("rule", sort=True)
                 for pid in rng.permutation(g["participant"].to_numpy()).tolist()]
        fold_of = {pid: j % k for j, pid in enumerate(dealt)}
        return [(self.subset([i for i in self.ids if fold_of[i] != f]),
                 self.subset([i for i in self.ids if fold_of[i] == f])) for f in range(k)]


