"""Agents for the Blicket tasks, batched, one protocol (see :mod:`causalplay.agents.base`).

The paper's names (``random`` .. ``notears``) are the IVRE paper's baselines as its public code runs them,
quirks included where the paper's numbers depend on them (:mod:`causalplay.agents.paper`). The ``-exact`` /
``-uniform`` rows are our cleaner variants of the same ideas (:mod:`causalplay.agents.heuristics`,
:mod:`causalplay.agents.notears`), without those quirks.

=======================  ================================================================  ==================
name                     trials / belief                                                   knows
=======================  ================================================================  ==================
``random``               random / ``clip(1/2 + N(0, 1)/2)`` (paper)                         nothing
``bayes``                random / top-count of a Bernoulli naive-Bayes classifier (paper)   count
``naive``                first suspect alone / +-0.2 nudges from panels, carried (paper)    nothing
``search-random``        random / consistent-assignment frequency, ``/(c + 1e-7)`` (paper)  rule
``search-naive``         least certain object alone / as search-random (paper)              rule
``notears``              objects in index order / logistic NOTEARS, first positive (paper)  nothing
``random-uniform``       random / uniform in [0, 1]                                         nothing
``bayes-exact``          random / per-object Bernoulli posterior with a count prior         count
``naive-exact``          one untested object / co-occurrence                                count
``search-random-exact``  random / exact posterior marginal (exact 1/2 kept)                 rule
``search-naive-exact``   most uncertain single object / as search-random-exact              rule
``notears-exact``        as naive-exact / DAGMA (NOTEARS-family) edges object -> lit        nothing
``eig``                  max exact EIG / MAP of the exact posterior (+ "did not end")       rule, count
``planner``              max expected reward over the next ``depth`` steps (default 1) /    rule, count
                         oracle marginals on the MAP side
``rl``                   a ``causalplay train`` policy (``rl:path=DIR``; ``rl`` extra)       what it was trained
                                                                                            on (history)
=======================  ================================================================  ==================
"""

from __future__ import annotations

import ast

from .base import Agent, MemoryAgent, TaskInfo, map_side_belief
from .bayesian import EIGAgent, PlannerAgent
from .heuristics import BayesAgent, NaiveAgent, RandomAgent, SearchNaiveAgent, SearchRandomAgent
from .notears import NotearsAgent
from .paper import (
    PaperBayesAgent,
    PaperNaiveAgent,
    PaperNotearsAgent,
    PaperRandomAgent,
    PaperSearchNaiveAgent,
    PaperSearchRandomAgent,
)
from .rl import RLAgent

__all__ = ["AGENTS", "make_agent", "parse_agent_spec", "Agent", "MemoryAgent", "TaskInfo", "map_side_belief",
           "EIGAgent",
           "PlannerAgent", "BayesAgent", "NaiveAgent", "RandomAgent", "SearchNaiveAgent", "SearchRandomAgent",
           "NotearsAgent", "PaperRandomAgent", "PaperBayesAgent", "PaperNaiveAgent", "PaperSearchRandomAgent",
           "PaperSearchNaiveAgent", "PaperNotearsAgent", "PAPER_AGENTS", "RLAgent"]

#: name -> class, in the benchmark's table order.
AGENTS: dict[str, type[Agent]] = {
    cls.name: cls
    for cls in (PaperRandomAgent, PaperBayesAgent, PaperNaiveAgent, PaperSearchRandomAgent, PaperSearchNaiveAgent,
                PaperNotearsAgent, RandomAgent, BayesAgent, NaiveAgent, SearchRandomAgent, SearchNaiveAgent,
                NotearsAgent, EIGAgent, PlannerAgent, RLAgent)
}

#: The IVRE paper's baselines under its names (the rows of its Table 2), in its order.
PAPER_AGENTS = ("random", "bayes", "naive", "search-random", "search-naive", "notears")


def parse_agent_spec(spec: str) -> tuple[str, dict]:
    """``"planner:depth=2:beam=4"`` -> ``("planner", {"depth": 2, "beam": 4})``; values are Python literals.

    The benchmark accepts such specs wherever it takes an agent name, so variants get their own table rows.
    """
    name, *opts = spec.split(":")
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; expected one of {list(AGENTS)}")
    kwargs = {}
    for opt in opts:
        key, sep, value = opt.partition("=")
        if not sep or not key.isidentifier():
            raise ValueError(f"agent option {opt!r} in {spec!r} must look like key=value")
        try:
            kwargs[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            if not value or value[0] in "'\"([{" or any(c in value for c in "'\"") or any(c.isspace() for c in value):
                raise ValueError(f"agent option {opt!r} in {spec!r}: {value!r} is not a Python literal") from None
            kwargs[key] = value  # a bare string, e.g. rl:path=runs/rl/ppo-ff
    return name, kwargs


def make_agent(name: str, seed: int = 0, **kwargs) -> Agent:
    """Build an agent by name or spec (``"planner:depth=2"``, see :func:`parse_agent_spec` and :data:`AGENTS`)."""
    base, opts = parse_agent_spec(name)
    return AGENTS[base](seed=seed, **{**opts, **kwargs})
