"""Agents for the Blicket tasks, batched, one protocol (see :mod:`causalplay.agents.base`).

==================  ===================================================================  ==================
name                trials / belief                                                      knows
==================  ===================================================================  ==================
``random``          random / random                                                      nothing
``bayes``           random / Bernoulli naive Bayes per object                            count
``naive``           one untested object / co-occurrence                                  count
``search-random``   random / fraction of consistent assignments (core engine)            rule
``search-naive``    most uncertain single object / as search-random                      rule
``notears``         as naive / DAGMA (NOTEARS-family) edges object -> lit                nothing
``eig``             max exact EIG / MAP of the exact posterior (+ "did not end" update)  rule, count
``planner``         max P(solve next step) / as eig                                      rule, count
==================  ===================================================================  ==================
"""

from __future__ import annotations

from .base import Agent, MemoryAgent, TaskInfo, map_side_belief
from .bayesian import EIGAgent, PlannerAgent
from .heuristics import BayesAgent, NaiveAgent, RandomAgent, SearchNaiveAgent, SearchRandomAgent
from .notears import NotearsAgent

__all__ = ["AGENTS", "make_agent", "Agent", "MemoryAgent", "TaskInfo", "map_side_belief", "EIGAgent",
           "PlannerAgent", "BayesAgent", "NaiveAgent", "RandomAgent", "SearchNaiveAgent", "SearchRandomAgent",
           "NotearsAgent"]

#: name -> class, in the benchmark's table order.
AGENTS: dict[str, type[Agent]] = {
    cls.name: cls
    for cls in (RandomAgent, BayesAgent, NaiveAgent, SearchRandomAgent, SearchNaiveAgent, NotearsAgent, EIGAgent,
                PlannerAgent)
}


def make_agent(name: str, seed: int = 0, **kwargs) -> Agent:
    """Build an agent by name (see :data:`AGENTS`)."""
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; expected one of {list(AGENTS)}")
    return AGENTS[name](seed=seed, **kwargs)
