"""Agents, batched, one protocol (see :mod:`causalplay.agents.base`), one registry per task family, one spec
grammar (:mod:`causalplay.core.specs`): ``make_agent("planner:depth=2")``, ``make_agent("eig", family="dag")``.

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

import inspect
import warnings

from causalplay.core.plugins import AGENT_GROUP, Plugin, plugins
from causalplay.core.specs import Spec, parse_spec, split_specs

from .base import Agent, BlicketInfo, MemoryAgent, PlayerInfo, TaskInfo, map_side_belief
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
from .physics import MemAgent, MemOAgent, RandomPhysicsAgent, SsupAgent
from .physics_dqn import DqnAgent, DqnOAgent
from .pixels import EIGPixelsAgent
from .rl import RLAgent
from .transfer import TransferEIGAgent

__all__ = ["AGENTS", "NEXIOM_AGENTS", "PHYSICS_AGENTS", "DAG_AGENTS", "agent_registry", "agent_plugins", "agent_class",
           "make_agent", "parse_agent_spec", "split_agent_specs", "agent_label", "resolve_agent_name",
           "canonical_agent_spec", "Agent", "PlayerInfo", "BlicketInfo",
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

#: The Nexiom family's agents and the physics puzzles' (the causal-DAG agents': :data:`DAG_AGENTS`).
NEXIOM_AGENTS: dict[str, type[Agent]] = {NexiomEIGAgent.name: NexiomEIGAgent}
PHYSICS_AGENTS: dict[str, type[Agent]] = {c.name: c for c in (RandomPhysicsAgent, MemAgent, MemOAgent, DqnAgent,
                                                              DqnOAgent, SsupAgent)}

#: The IVRE paper's baselines under its names (the rows of its Table 2), in its order.
PAPER_AGENTS = ("random", "bayes", "naive", "search-random", "search-naive", "notears")


def agent_registry(family: str = "blicket") -> dict[str, type[Agent] | str]:
    """A task family's own agents, name -> class (or ``module:Class``, imported when used): the registry its
    :class:`~causalplay.envs.families.TaskFamily` names. Plug-in agents are not in it (:func:`agent_plugins`)."""
    from causalplay.core.plugins import load_object
    from causalplay.envs.families import get_family

    reg = get_family(family).agents
    return dict(load_object(reg) if isinstance(reg, str) else reg)


def agent_plugins() -> dict[str, Plugin]:
    """The agents installed by other distributions (entry-point group ``causalplay.agents``; not imported yet)."""
    return plugins(AGENT_GROUP)


def _known(family: str) -> dict[str, type[Agent] | str | Plugin]:
    """Every agent name ``family`` accepts: its own registry's, then plug-ins' (a built-in name wins)."""
    return {**agent_plugins(), **agent_registry(family)}


def resolve_agent_name(name: str, family: str = "blicket") -> str:
    """``name``, or the name that replaced it when ``family`` lists it among its former agent names
    (``deprecated_agents`` of its :class:`~causalplay.envs.families.TaskFamily`), with a ``DeprecationWarning``
    naming the new one. A family's former names are its own and come before plug-ins' names.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     resolve_agent_name("rand", "physics")
    'random'
    """
    from causalplay.envs.families import get_family

    new = get_family(family).deprecated_agents.get(name)
    if new is None:
        return name
    level, frame = 1, inspect.currentframe()
    while frame is not None and frame.f_back is not None and frame.f_back.f_code.co_filename == __file__:
        level, frame = level + 1, frame.f_back  # attribute the warning to the first caller outside this module
    warnings.warn(f"{family} agent name {name!r} is deprecated; use {new!r}", DeprecationWarning, stacklevel=level + 1)
    return new


def canonical_agent_spec(spec: str, family: str = "blicket") -> str:
    """``spec`` as written, with a former agent name replaced by its new one (:func:`resolve_agent_name`, which
    warns): ``"rand"`` -> ``"random"`` in the physics family, options kept as written. ``ValueError`` for a name
    ``family`` does not know."""
    s, new = _parse(spec, family)
    text = str(s)
    return text if new == s.name else new + text[len(s.name):]


def _parse(spec: str | Spec, family: str) -> tuple[Spec, str]:
    """``spec`` parsed, and its agent's name with a former name resolved; ``ValueError`` for an unknown name (the
    message lists the current names)."""
    s = parse_spec(spec, None, f"{family} agent")
    name = resolve_agent_name(s.name, family)
    if name not in (known := _known(family)):
        raise ValueError(f"unknown {family} agent {s.name!r} in {str(spec)!r}; expected one of {list(known)}")
    return s, name


def agent_class(name: str, family: str = "blicket") -> type[Agent]:
    """The class of agent ``name`` in ``family`` (a plug-in's is imported now).

    Raises
    ------
    ValueError
        ``name`` is not an agent of ``family``, or a plug-in agent's class says it plays other families.
    causalplay.core.plugins.PluginError
        A plug-in agent failed to import (the message names its distribution).
    """
    from causalplay.core.plugins import load_object

    name = resolve_agent_name(name, family)
    known = _known(family)
    if name not in known:
        raise ValueError(f"unknown {family} agent {name!r}; expected one of {list(known)}")
    ref = known[name]
    if isinstance(ref, Plugin):
        cls = ref.load()
        fams = getattr(cls, "families", None)
        if fams is not None and family not in fams:
            raise ValueError(f"agent {name!r} from {ref.source} plays the task families {list(fams)}, not {family!r}")
        return cls
    return load_object(ref) if isinstance(ref, str) else ref


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
    s, name = _parse(spec, family)
    return name, s.kwargs


def agent_label(spec: str, family: str = "blicket") -> str:
    """The benchmark table row of an agent spec: the spec itself (a former agent name replaced by its new one,
    :func:`canonical_agent_spec`), except for ``rl:path=DIR``, whose row is named by ``name=`` or else by the
    trained run's config (e.g. ``ppo-ff``); ``FileNotFoundError`` if DIR holds no run."""
    spec = canonical_agent_spec(spec, family)
    base, opts = parse_agent_spec(spec, family)
    if base != "rl":
        return spec
    if "path" not in opts:
        raise ValueError(f"{spec!r}: the rl agent needs path=DIR (a `causalplay train` output folder)")
    if opts.get("name"):
        return str(opts["name"])
    from .rl import read_run

    return read_run(opts["path"]).name


def make_agent(name: str | Spec, seed: int = 0, family: str = "blicket", **kwargs) -> Agent:
    """Build an agent by name or spec (``"planner:depth=2"``; :func:`causalplay.core.specs.parse_spec`) from the
    registry of a task family (:func:`agent_registry`) or from a plug-in (:func:`agent_plugins`)."""
    base, opts = parse_agent_spec(name, family)
    return agent_class(base, family)(seed=seed, **{**opts, **kwargs})
