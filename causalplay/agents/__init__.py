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
``planner``         max expected reward over the next ``depth`` steps (default 1) /       rule, count
                    oracle marginals on the MAP side
==================  ===================================================================  ==================
"""

from __future__ import annotations

import ast

from .base import Agent, MemoryAgent, TaskInfo, map_side_belief
from .bayesian import EIGAgent, PlannerAgent
from .heuristics import BayesAgent, NaiveAgent, RandomAgent, SearchNaiveAgent, SearchRandomAgent
from .notears import NotearsAgent

__all__ = ["AGENTS", "make_agent", "parse_agent_spec", "Agent", "MemoryAgent", "TaskInfo", "map_side_belief",
           "EIGAgent",
           "PlannerAgent", "BayesAgent", "NaiveAgent", "RandomAgent", "SearchNaiveAgent", "SearchRandomAgent",
           "NotearsAgent"]

#: name -> class, in the benchmark's table order.
AGENTS: dict[str, type[Agent]] = {
    cls.name: cls
    for cls in (RandomAgent, BayesAgent, NaiveAgent, SearchRandomAgent, SearchNaiveAgent, NotearsAgent, EIGAgent,
                PlannerAgent)
}


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
            raise ValueError(f"agent option {opt!r} in {spec!r}: {value!r} is not a Python literal") from None
    return name, kwargs


def make_agent(name: str, seed: int = 0, **kwargs) -> Agent:
    """Build an agent by name or spec (``"planner:depth=2"``, see :func:`parse_agent_spec` and :data:`AGENTS`)."""
    base, opts = parse_agent_spec(name)
    return AGENTS[base](seed=seed, **{**opts, **kwargs})
