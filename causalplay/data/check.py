"""``check_data(folder)``: validate a folder of trial data and summarise it (what ``causalplay check-data`` prints)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .loader import load_trials
from .trials import DataValidationError, RowIssue

__all__ = ["DataSummary", "check_data"]


@dataclass(frozen=True)
class DataSummary:
    """What :func:`check_data` found. Counts are 0 / empty when the data did not validate (see ``issues``).

    Attributes
    ----------
    folder : str
    participants, tests, demonstrations : int
        Rows of ``participants.csv``; rows of ``tests.csv``; those of them marked ``demonstration``.
    demonstrated_to : int
        Participants who watched at least one demonstration.
    n_objects : int or None
    rules : dict
        True rule -> participants.
    rule_asked : int
        Participants with a non-empty ``rule_choice``.
    known_counts : dict
        Blicket count told -> participants (``n_blickets`` column); participants not told are left out.
    learners : int or None
        People in multi-round data (``learner`` column), else None.
    flags : list of RowIssue
        Test outcomes impossible under the stated true rule and blickets (kept, but flagged).
    issues : list of RowIssue
        Every bad cell; empty when the data loads.
    """

    folder: str
    participants: int = 0
    tests: int = 0
    demonstrations: int = 0
    demonstrated_to: int = 0
    n_objects: int | None = None
    rules: dict[str, int] = field(default_factory=dict)
    rule_asked: int = 0
    known_counts: dict[int, int] = field(default_factory=dict)
    learners: int | None = None
    flags: list[RowIssue] = field(default_factory=list)
    issues: list[RowIssue] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the data loads (flags do not count against it)."""
        return not self.issues

    def rows(self) -> list[tuple[str, str]]:
        """``(label, text)`` pairs, one per line of :meth:`__str__` after the first (a two-column table)."""
        if not self.ok:
            return [("problem", str(i)) for i in self.issues]
        n_told = sum(self.known_counts.values())
        told = f"to {n_told} of {self.participants} (" + ", ".join(
            f"{k} blicket(s): {n}" for k, n in sorted(self.known_counts.items())) + ")"
        demos = (f", {self.demonstrations} demonstrations (watched by {self.demonstrated_to} participants)"
                 if self.demonstrations else ", no demonstrations")
        out = [("participants", f"{self.participants}" + (f" ({self.learners} learners)" if self.learners else "")),
               ("rules", ", ".join(f"{r} {n}" for r, n in sorted(self.rules.items()))
                + f"; rule asked of {self.rule_asked}"),
               ("objects", f"{self.n_objects} (indices 0-{self.n_objects - 1})"),
               ("tests", f"{self.tests}: {self.tests - self.demonstrations} choices{demos}"),
               ("blicket count told", told if n_told else "to nobody"),
               ("flags", f"{len(self.flags)} impossible outcome(s)")]
        return out + [("flag", str(f)) for f in self.flags]

    def __str__(self) -> str:
        head = f"{self.folder}: " + ("valid" if self.ok else f"{len(self.issues)} problem(s)")
        width = max(len(k) for k, _ in self.rows())
        return "\n".join([head] + [f"  {k:<{width}}  {v}" for k, v in self.rows()])


def check_data(folder: str | Path, *, n_objects: int | None = None) -> DataSummary:
    """Validate ``folder`` like :func:`load_trials` and summarise it; bad cells are returned, not raised.

    Parameters
    ----------
    folder : path
        A folder with ``participants.csv`` and ``tests.csv``.
    n_objects : int, optional
        As in :func:`load_trials` (needed when ``participants.csv`` has no ``n_objects`` column).

    Returns
    -------
    DataSummary
        ``str(summary)`` is the text report; ``summary.ok`` whether the data loads.
    """
    try:
        d = load_trials(folder, n_objects=n_objects, warn=False)  # the report lists the flags itself
    except DataValidationError as e:
        return DataSummary(str(folder), issues=e.issues)
    ch = d.is_choice
    p = d.participants
    return DataSummary(str(folder), participants=len(d), tests=len(d.tests), demonstrations=int((~ch).sum()),
                       demonstrated_to=d.tests["participant"][~ch].nunique(), n_objects=d.n_objects,
                       rules=dict(Counter(p["rule"])), rule_asked=int(p["rule_choice"].notna().sum()),
                       known_counts=dict(Counter(k for k in d.known_counts().values() if k is not None)),
                       learners=p["learner"].nunique() if "learner" in p.columns else None, flags=list(d.flags))
