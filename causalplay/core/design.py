"""A study design as data: the world a participant explores, what they are shown first, what they are told.

A :class:`Design` is what one participant of a Blicket study meets: ``n_objects`` objects of which ``blickets`` are
blickets under ``rule`` (a deterministic machine), a list of ``demonstrations`` (tests the participant watches
before exploring freely: the ``source=demonstration`` rows of ``tests.csv``, a prefix of their history), the number
of blickets they are told (or None) and a test budget (or None: they stop when they like).

The shipped Nexiom study is one such design per participant (4 objects, 2 blickets, conjunctive or disjunctive, no
demonstrations, no told count, no budget): :meth:`Design.nexiom`. The simulator
(:func:`causalplay.fitting.simulate`), :mod:`causalplay.design` (predictions and the utility of a design for telling
models of people apart) and the data helpers there all take Designs. This module sits in the core layer so that
every layer can import the type; :mod:`causalplay.design` re-exports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .checks import describe, integer
from .rules import make_rule

__all__ = ["Design", "designs_of"]


def _objects(value, n_objects: int, what: str) -> tuple[int, ...]:
    """Sorted distinct object indices in ``range(n_objects)`` from a sequence of ints or a 0/1 vector."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray, Iterable)):
        raise TypeError(f"{what} must be a sequence of object indices, got {describe(value)}")
    vals = list(value)
    arr = np.asarray(vals)
    if arr.dtype == bool and arr.ndim == 1 and len(vals) == n_objects:  # a 0/1 vector
        vals = np.flatnonzero(arr).tolist()
    out = []
    for v in vals:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{what} must hold integer object indices, got {v!r} in {value!r}")
        if not 0 <= int(v) < n_objects:
            raise ValueError(f"{what}: object index {int(v)} is outside range(n_objects={n_objects}) "
                             f"(objects are numbered from 0), in {value!r}")
        out.append(int(v))
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: an object index is repeated in {value!r}")
    return tuple(sorted(out))


@dataclass(frozen=True)
class Design:
    """One participant's study design (frozen, validated, hashable).

    Parameters
    ----------
    n_objects : int
        Objects on the table, numbered ``0 .. n_objects - 1``.
    blickets : sequence of int
        The blickets' indices (stored sorted).
    rule : str
        The machine's rule: ``"disjunctive"``, ``"conjunctive"`` or ``"threshold<m>"`` (noise-free).
    demonstrations : sequence
        Tests shown before the participant explores, in order: each ``(objects_on, lit)`` or just ``objects_on``
        (then ``lit`` is what the machine does). A stated ``lit`` must be what the machine does.
    n_blickets_told : int, optional
        The number of blickets the participant is told; it must be the true number.
    max_tests : int, optional
        The participant's own test budget (demonstrations not counted); None: no limit.

    Raises
    ------
    ValueError, TypeError
        Naming the bad value.

    Examples
    --------
    >>> d = Design(4, (0, 1), "conjunctive", demonstrations=[(0, 1)], n_blickets_told=2)
    >>> d.demonstrations
    (((0, 1), True),)
    """

    n_objects: int
    blickets: tuple[int, ...]
    rule: str
    demonstrations: tuple[tuple[tuple[int, ...], bool], ...] = ()
    n_blickets_told: int | None = None
    max_tests: int | None = None

    def __post_init__(self) -> None:
        n = integer(self.n_objects, "n_objects", low=1, high=20)
        object.__setattr__(self, "n_objects", n)
        object.__setattr__(self, "blickets", _objects(self.blickets, n, "blickets"))
        if not isinstance(self.rule, str):
            raise TypeError(f"rule must be a rule name such as 'conjunctive', got {describe(self.rule)}")
        r = make_rule(self.rule)
        object.__setattr__(self, "rule", r.name)
        demos = self.demonstrations
        if isinstance(demos, (str, bytes)) or not isinstance(demos, Iterable):
            raise TypeError(f"demonstrations must be a sequence of (objects_on, lit) pairs, got {describe(demos)}")
        out = []
        for i, item in enumerate(demos):
            if (isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], (bool, np.bool_))
                    and not isinstance(item[0], (int, np.integer))):
                objs, lit = item
            else:
                objs, lit = item, None
            on = _objects(objs, n, f"demonstration {i}")
            truth = self.lights(on)
            if lit is not None and bool(lit) != truth:
                raise ValueError(f"demonstration {i} {on} says lit={bool(lit)}, but a {self.rule} machine with "
                                 f"blickets {self.blickets} {'lights' if truth else 'stays dark'} for it")
            out.append((on, truth))
        object.__setattr__(self, "demonstrations", tuple(out))
        if self.n_blickets_told is not None:
            k = integer(self.n_blickets_told, "n_blickets_told", low=0, high=n)
            if k != len(self.blickets):
                raise ValueError(f"n_blickets_told={k} differs from the design's {len(self.blickets)} blicket(s) "
                                 f"{self.blickets}; participants are told the true count")
            object.__setattr__(self, "n_blickets_told", k)
        if self.max_tests is not None:
            object.__setattr__(self, "max_tests", integer(self.max_tests, "max_tests", low=1))

    # ---- the machine --------------------------------------------------------------------------------------------
    def lights(self, objects_on) -> bool:
        """Whether the design's (noise-free) machine lights for ``objects_on`` (indices)."""

        k = len(set(objects_on) & set(self.blickets))
        return bool(make_rule(self.rule).p_lit(torch.tensor(float(k), dtype=torch.float64)) > 0.5)

    def lit_table(self):
        """``bool [2**n_objects]``: whether the machine lights for each object set, by code ``sum_i 2**i``."""

        from .codes import codes_to_vectors

        sets = codes_to_vectors(torch.arange(2**self.n_objects), self.n_objects)
        k = sets[:, list(self.blickets)].sum(-1).to(torch.float64)  # an empty index list sums to 0
        return make_rule(self.rule).p_lit(k) > 0.5

    # ---- views --------------------------------------------------------------------------------------------------
    @property
    def world(self) -> tuple[str, tuple[int, ...]]:
        """``(rule, blickets)``, the form :func:`causalplay.fitting.simulate` takes."""
        return self.rule, self.blickets

    def history(self):
        """The demonstrations as a :class:`causalplay.core.history.History`."""
        from .history import History

        return History.from_pairs(self.demonstrations, self.n_objects)

    def relabel(self, perm: Sequence[int]) -> Design:
        """The same design with object ``i`` renamed ``perm[i]`` (blickets and demonstrations)."""
        p = _objects(perm, self.n_objects, "perm")
        if len(p) != self.n_objects:
            raise ValueError(f"perm must be a permutation of range({self.n_objects}), got {list(perm)!r}")
        perm = [int(x) for x in perm]
        return Design(self.n_objects, tuple(perm[b] for b in self.blickets), self.rule,
                      tuple((tuple(perm[o] for o in on), lit) for on, lit in self.demonstrations),
                      self.n_blickets_told, self.max_tests)

    def to_dict(self) -> dict:
        """A JSON-ready dict (lists, not tuples); :meth:`from_dict` reads it back."""
        return {"n_objects": self.n_objects, "blickets": list(self.blickets), "rule": self.rule,
                "demonstrations": [[list(on), lit] for on, lit in self.demonstrations],
                "n_blickets_told": self.n_blickets_told, "max_tests": self.max_tests}

    @classmethod
    def from_dict(cls, d: dict) -> Design:
        """The design :meth:`to_dict` wrote."""
        if not isinstance(d, dict):
            raise TypeError(f"Design.from_dict needs a dict, got {describe(d)}")
        if bad := sorted(set(d) - {"n_objects", "blickets", "rule", "demonstrations", "n_blickets_told",
                                   "max_tests"}):
            raise ValueError(f"Design.from_dict: unknown key(s) {bad}")
        demos = [(tuple(on), bool(lit)) for on, lit in d.get("demonstrations", [])]
        return cls(d["n_objects"], tuple(d["blickets"]), d["rule"], tuple(demos), d.get("n_blickets_told"),
                   d.get("max_tests"))

    @classmethod
    def nexiom(cls, rule: str = "conjunctive", blickets: Sequence[int] = (0, 1)) -> Design:
        """A participant's design in the shipped Nexiom study: 4 objects, 2 blickets, no demonstrations, not told the
        count, no test budget (they stopped when they liked); ``rule`` and ``blickets`` varied between people."""
        d = cls(4, tuple(blickets), rule)
        if len(d.blickets) != 2 or d.rule not in ("conjunctive", "disjunctive"):
            raise ValueError(f"a Nexiom design has 2 blickets and a conjunctive or disjunctive rule, got blickets "
                             f"{d.blickets} and rule {d.rule!r}")
        return d

    def __str__(self) -> str:
        demo = "; ".join(f"{list(on)}->{'lit' if lit else 'dark'}" for on, lit in self.demonstrations) or "none"
        return (f"{self.rule} {list(self.blickets)} of {self.n_objects} | demos: {demo} | told: "
                f"{self.n_blickets_told if self.n_blickets_told is not None else '-'} | budget: "
                f"{self.max_tests if self.max_tests is not None else '-'}")


def designs_of(data, max_tests: int | None = None) -> dict[str, Design]:
    """``participant -> Design`` of trial data: the world (``rule``, ``true_blickets``), the demonstrations (the
    ``source=demonstration`` rows before the participant's first own test), the told count (``n_blickets``) and the
    budget (``max_tests``: the data's column where it has one for the participant, else the argument).

    Raises
    ------
    ValueError
        A participant whose demonstrations come after their own first test (a design's demonstrations are a prefix),
        or whose demonstrations disagree with their stated world.
    """
    if not all(hasattr(data, a) for a in ("histories", "choice_indices", "known_counts", "participants")):
        raise TypeError(f"data must be causalplay.data.TrialData, got {type(data).__name__}")
    hist, chosen, told = data.histories(), data.choice_indices(), data.known_counts()
    budget = data.budgets() if hasattr(data, "budgets") else {}
    out = {}
    for _, row in data.participants.iterrows():
        pid = row["participant"]
        h, own = hist[pid], chosen[pid]
        first = int(own[0]) if len(own) else len(h)
        if len(own) and list(own) != list(range(first, len(h))):
            raise ValueError(f"participant {pid!r} watched a demonstration after their own first test (positions "
                             f"{sorted(set(range(len(h))) - set(own.tolist()))}); a design's demonstrations come first")
        try:
            out[pid] = Design(data.n_objects, tuple(row["true_blickets"]), row["rule"],
                              tuple(h.pairs()[:first]), told[pid],
                              max_tests if budget.get(pid) is None else budget[pid])
        except ValueError as e:
            raise ValueError(f"participant {pid!r}: {e}") from None
    return out
