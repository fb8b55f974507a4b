"""Designs and trial data: the design each participant of a data set met, and the shipped Nexiom study's designs."""

from __future__ import annotations

from ..core.design import Design, designs_of

__all__ = ["designs_of", "nexiom_designs", "design_space"]


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

    from ..core import checks as V

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
