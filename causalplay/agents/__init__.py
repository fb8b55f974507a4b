"""Agents, batched, one protocol (see :mod:`causalplay.agents.base`), one registry per task family, one spec
grammar (:mod:`causalplay.core.specs`): ``make_agent("planner:depth=2")``, ``make_agent("bayes", family="dag")``.

Blicket agents (family ``"blicket"``; the causal-DAG agents are listed in :mod:`causalplay.agents.dag`, the physics
puzzles' in :mod:`causalplay.agents.physics`).
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
``llm``                  a language model's answers in IVRE's appendix-D dialogue (any      what the
                         OpenAI-compatible endpoint; ``llm:model=NAME``, docs/llm.md)       dialogue says
``rl``                   a ``causalplay train`` policy (``rl:path=DIR``; ``rl`` extra)       what it was trained
                                                                                            on (history)
``eig-pixels``           a perception CNN reads each rendered panel; as ``eig`` on its        rule, count;
                         readouts (pixel ids only; ``eig-pixels:perception=PATH``)          sees pixels
=======================  ================================================================  ==================
"""

from __future__ import annotations

from causalplay.core.specs import Spec, parse_spec, split_specs

from .base import Agent, MemoryAgent, TaskInfo, map_side_belief
from .bayesian import EIGAgent, NexiomEIGAgent, PlannerAgent
from .dag import DAG_AGENTS
from .heuristics import BayesAgent, NaiveAgent, RandomAgent, SearchNaiveAgent, SearchRandomAgent
from .llm import LLMAgent
from .notears import NotearsAgent
from .paper import (
    PaperBayesAgent,
    PaperNaiveAgent,
    PaperNotearsAgent,
    PaperRandomAgent,
    PaperSearchNaiveAgent,
    PaperSearchRandomAgent,
)
from .physics import MemAgent, MemOAgent, RandAgent, SsupAgent
from .physics_dqn import DqnAgent, DqnOAgent
from .pixels import EIGPixelsAgent
from .rl import RLAgent
from .transfer import TransferEIGAgent

__all__ = ["AGENTS", "REGISTRIES", "make_agent", "parse_agent_spec", "split_agent_specs", "agent_label", "Agent",
           "MemoryAgent", "TaskInfo", "map_side_belief", "EIGAgent", "PlannerAgent", "BayesAgent", "NaiveAgent",
           "RandomAgent", "SearchNaiveAgent", "SearchRandomAgent", "NotearsAgent", "PaperRandomAgent",
           "PaperBayesAgent", "PaperNaiveAgent", "PaperSearchRandomAgent", "PaperSearchNaiveAgent",
           "PaperNotearsAgent", "PAPER_AGENTS", "NexiomEIGAgent", "LLMAgent", "TransferEIGAgent", "RLAgent",
           "EIGPixelsAgent"]

#: name -> class, in the benchmark's table order (the Blicket family).
AGENTS: dict[str, type[Agent]] = {
    cls.name: cls
    for cls in (PaperRandomAgent, PaperBayesAgent, PaperNaiveAgent, PaperSearchRandomAgent, PaperSearchNaiveAgent,
                PaperNotearsAgent, RandomAgent, BayesAgent, NaiveAgent, SearchRandomAgent, SearchNaiveAgent,
                NotearsAgent, EIGAgent, PlannerAgent, TransferEIGAgent, LLMAgent, RLAgent, EIGPixelsAgent)
}

#: family -> its agents (Blicket tasks and the Overhypothesis sequences share one registry).
REGISTRIES: dict[str, dict[str, type[Agent]]] = {
    "blicket": AGENTS, "sequence": AGENTS, "dag": DAG_AGENTS, "nexiom": {NexiomEIGAgent.name: NexiomEIGAgent},
    "physics": {c.name: c for c in (RandAgent, MemAgent, MemOAgent, DqnAgent, DqnOAgent, SsupAgent)}}

#: The IVRE paper's baselines under its names (the rows of its Table 2), in its order.
PAPER_AGENTS = ("random", "bayes", "naive", "search-random", "search-naive", "notears")


def _registry(family: str) -> dict[str, type[Agent]]:
    if family not in REGISTRIES:
        raise ValueError(f"unknown task family {family!r}; expected one of {list(REGISTRIES)}")
    return REGISTRIES[family]


def split_agent_specs(text: str) -> list[str]:
    """``"eig,llm:model=m:base_url='http://h:8000/v1'"`` -> the two specs
    (:func:`causalplay.core.specs.split_specs`)."""
    return split_specs(text)


def parse_agent_spec(spec: str | Spec, family: str = "blicket") -> tuple[str, dict]:
    """``name:key=value:key=value`` -> ``(name, options)``, the name checked against the family's registry.

    Examples
    --------
    >>> parse_agent_spec("planner:depth=2:beam=4")
    ('planner', {'beam': 4, 'depth': 2})
    """
    what = "agent" if family in ("blicket", "sequence") else f"{family} agent"
    s = parse_spec(spec, _registry(family), what)
    return s.name, s.kwargs


def agent_label(spec: str, family: str = "blicket") -> str:
    """The benchmark table row of an agent spec: the spec itself, except for ``rl:path=DIR``, whose row is named
    by ``name=`` or else by the trained run's config (e.g. ``ppo-ff``); ``FileNotFoundError`` if DIR holds no run."""
    base, opts = parse_agent_spec(spec, family)
    if base != "rl":
        return str(spec)
    if "path" not in opts:
        raise ValueError(f"{spec!r}: the rl agent needs path=DIR (a `causalplay train` output folder)")
    if opts.get("name"):
        return str(opts["name"])
    from .rl import read_run

    return read_run(opts["path"]).name


def make_agent(name: str | Spec, seed: int = 0, family: str = "blicket", **kwargs) -> Agent:
    """Build an agent by name or spec (``"planner:depth=2"``; :func:`causalplay.core.specs.parse_spec`) from the
    registry of a task family (:data:`REGISTRIES`)."""
    base, opts = parse_agent_spec(name, family)
    return _registry(family)[base](seed=seed, **{**opts, **kwargs})
