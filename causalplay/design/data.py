"""Designs and trial data: the design each participant of a data set met, and the shipped Nexiom study's designs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.design import Design

if TYPE_CHECKING:
    from ..data import TrialData

__all__ = ["designs_of", "nexiom_designs"]


def designs_of(data: TrialData, max_tests: int | None = None) -> dict[str, Design]:
    """``participant -> Design`` of trial data: the world (``rule``, ``true_blickets``), the demonstrations (the
    ``source=demonstration`` rows before the participant's first own test) and the told count (``n_blickets``).

    Raises
    ------
    ValueError
        A participant whose demonstrations come after their own first test (a design's demonstrations are a prefix),
        or whose demonstrations disagree with their stated world.
    """
    from ..data import TrialData

    if not isinstance(data, TrialData):
        raise TypeError(f"data must be causalplay.data.TrialData, got {type(data).__name__}")
    hist, chosen, told = data.histories(), data.choice_indices(), data.known_counts()
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
                              tuple(h.pairs()[:first]), told[pid], max_tests)
        except ValueError as e:
            raise ValueError(f"participant {pid!r}: {e}") from None
    return out


def nexiom_designs() -> list[Design]:
    """The designs of the shipped Nexiom study (:func:`causalplay.data.load_nexiom`): every (rule, blicket pair) its
    participants met, sorted (12: both rules x the 6 pairs of 4 objects), each :meth:`Design.nexiom`."""
    from ..data import load_nexiom

    worlds = sorted({(r, tuple(b)) for r, b in zip(load_nexiom().participants["rule"],
                                                   load_nexiom().participants["true_blickets"], strict=True)})
    return [Design.nexiom(r, b) for r, b in worlds]


def design_space(n_objects: int = 4, rules=("conjunctive", "disjunctive"), n_blickets=(2,), demonstrations: int = 0,
                 told=(False,), max_tests=(None,)) -> list[Design]:
    """Every design in a stated space: each rule x each blicket set of a size in ``n_blickets`` x each history of up to
    ``demonstrations`` demonstrations (non-empty object sets, no set shown twice, in order) x told count or not x
    each budget. The list grows fast (4 objects, 2 rules, 2 blickets, up to 2 demonstrations: 12 x 226 = 2,712
    designs); subsample it with a seeded generator for a search.
    """
    from itertools import combinations, permutations

    from ..core import _validate as V

    n = V.integer(n_objects, "n_objects", low=1, high=12)
    k_max = V.integer(demonstrations, "demonstrations", low=0)
    sets = [c for r in range(1, n + 1) for c in combinations(range(n), r)]
    histories = [h for k in range(k_max + 1) for h in permutations(sets, k)]
    out = []
    for rule in ([rules] if isinstance(rules, str) else rules):
        for nb in n_blickets:
            for b in combinations(range(n), V.integer(nb, "n_blickets", low=0, high=n)):
                for h in histories:
                    for t in told:
                        for m in max_tests:
                            out.append(Design(n, b, rule, h, len(b) if t else None, m))
    return out
