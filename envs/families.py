"""Task families: each kind of task is one registered :class:`TaskFamily`, and everything that asks "which family?"
(the gymnasium registry, :func:`causalplay.envs.make_batch`, the agents' registries, the benchmark runner and CLI,
``causalplay serve``) asks that object.

A family holds its env ids, each with the gymnasium entry point *and* the batch-task entry point (Gymnasium keeps
``entry_point`` and ``vector_entry_point`` on an ``EnvSpec``; :class:`EnvEntry` adds ``batch_entry_point``), its
agent registry and default agents, its scorer (a :class:`causalplay.bench.family.Family` subclass: records, summary,
table), how its tables state their spread, its default episodes and, where people play it, its
``causalplay serve`` adapter. Parts that live in higher layers are named as ``module:attr`` strings and imported
only when used, so this registry stays cheap to import and a family from another distribution is declared exactly
like a built-in one (entry-point group ``causalplay.families``, :mod:`causalplay.core.plugins`).

A new family is: a Task (``envs/``), a :class:`TaskFamily` (here, or a plug-in's module), a scorer (``bench/``),
and optionally agents; ``docs/architecture.md`` lists the files.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

from causalplay.core.plugins import FAMILY_GROUP, Plugin, PluginError, load_object, plugins

__all__ = ["EnvEntry", "TaskFamily", "BUILTIN_FAMILIES", "PIXEL_IDS", "families", "get_family", "family_of",
           "register_family", "family_plugins", "task_factory"]


@dataclass(frozen=True)
class EnvEntry:
    """One registered env id of a family.

    Attributes
    ----------
    id : str
        The gymnasium id, ``namespace/Name-vN``.
    entry_point : str
        ``module:callable`` for ``gymnasium.make`` (the single env).
    batch_entry_point : str
        ``module:callable`` with signature ``(batch_size, rng, **kwargs) -> Task``: the batched engine
        (:class:`causalplay.envs.task.Task`) that :func:`causalplay.envs.make_batch`, the native vector env and the
        benchmark play; ``rng`` is a numpy ``Generator`` or one per row.
    kwargs : mapping
        The id's keyword arguments, passed to both entry points (a caller's keyword arguments override them).
    vector : bool
        Also register the native vector env (``gymnasium.make_vec(id, num_envs=B)`` runs one batched Task; needs a
        flat Box observation and action, so not for the DAG worlds' Discrete actions or the physics ids' Dict
        observation).
    """

    id: str
    entry_point: str
    batch_entry_point: str
    kwargs: Mapping = field(default_factory=dict)
    vector: bool = True

    def batch_factory(self, **kwargs) -> Callable:
        """``(batch_size, rng) -> Task`` with ``kwargs`` over the id's own."""
        return partial(load_object(self.batch_entry_point), **{**self.kwargs, **kwargs})


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one registered object per family
class TaskFamily:
    """A kind of task, registered once (see the module docstring).

    Attributes
    ----------
    name : str
        The family's name (``causalplay bench --list-agents`` lists it; agent specs are looked up in its registry).
    envs : tuple of EnvEntry
        Its env ids, in the order the docs list them.
    scorer : str
        ``module:Class`` of its :class:`causalplay.bench.family.Family` subclass, built with this object: how a
        worker plays a shard into records, and how records become summary rows and tables.
    agents : str or mapping
        Its agent registry: ``module:attr`` naming a dict name -> Agent class, or such a dict whose values may be
        ``module:Class`` strings (imported when that agent is used). Agents from the ``causalplay.agents``
        entry-point group join every family their class names in ``families`` (all families without one).
    default_agents : tuple of str
        The agent specs ``causalplay bench`` runs when ``--agents`` is not given.
    spread : str
        What the tables' ``±`` is, e.g. ``"95% CI over episodes"``.
    spread_one_seed : str, optional
        What it is when a run has a single seed (default: ``spread``).
    default_episodes : int
        Episodes per env x variant x agent x seed when the CLI is not told.
    deprecated_agents : mapping of str to str
        Former agent names -> the names that replaced them: a spec that uses one still works, with a
        ``DeprecationWarning`` naming the new name (:func:`causalplay.agents.resolve_agent_name`).
    serve : str, optional
        ``module:Class`` of its :class:`causalplay.serve.tasks.ServedTask` adapter, where people play it.
    source : str
        Where it comes from: ``causalplay`` or the plug-in's distribution.
    """

    name: str
    envs: tuple[EnvEntry, ...]
    scorer: str
    agents: str | Mapping
    default_agents: tuple[str, ...]
    spread: str = "95% CI over episodes"
    spread_one_seed: str | None = None
    default_episodes: int = 1000
    deprecated_agents: Mapping[str, str] = field(default_factory=dict)
    serve: str | None = None
    source: str = "causalplay"

    def __post_init__(self):
        if not self.envs:
            raise ValueError(f"task family {self.name!r} registers no env id")
        if isinstance(self.default_agents, str):  # "a,b" would iterate by character
            raise TypeError(f"task family {self.name!r}: default_agents must be a tuple of specs, "
                            f"got the string {self.default_agents!r}")
        for old, new in self.deprecated_agents.items():
            if not (isinstance(old, str) and isinstance(new, str)) or old == new:
                raise ValueError(f"task family {self.name!r}: deprecated_agents maps a former agent name to the "
                                 f"name that replaced it, got {old!r} -> {new!r}")

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(e.id for e in self.envs)

    def env(self, env_id: str) -> EnvEntry:
        for e in self.envs:
            if e.id == env_id:
                return e
        raise ValueError(f"{env_id!r} is not an env of task family {self.name!r}; its ids are {self.ids}")

    def spread_label(self, seeds: int) -> str:
        """What the tables' ``±`` means for a run of ``seeds`` seeds."""
        return self.spread_one_seed if seeds == 1 and self.spread_one_seed else self.spread


# -- the built-in families ---------------------------------------------------------------------------------------
_B, _DAG, _PH = "causalplay.envs.blicket", "causalplay.envs.causal_dag", "causalplay.envs.physics"

#: pixel id -> the symbolic id it renders (``causalplay.envs.pixels``)
PIXEL_IDS = {
    "causalplay/IVRE-Pixels-v0": "causalplay/IVRE-v0",
    "causalplay/EST-Pixels-v1": "causalplay/EST-v1",
    "causalplay/EST-Pixels-v0": "causalplay/EST-v0",
}


def _blicket(id_: str, kind: str, **kwargs) -> EnvEntry:
    return EnvEntry(id_, f"{_B}:make_{kind}", f"{_B}:batch_{kind}", kwargs)


BLICKET = TaskFamily(
    "blicket",
    envs=(_blicket("causalplay/IVRE-v0", "ivre"),
          _blicket("causalplay/IVRE-Conjunctive-v0", "ivre", rule="conjunctive", n_blickets=(2, 3, 4)),
          _blicket("causalplay/IVRE-Noisy-v0", "ivre", noise=0.1),
          _blicket("causalplay/EST-v1", "est"),
          _blicket("causalplay/EST-Conjunctive-v1", "est", rule="conjunctive"),
          _blicket("causalplay/EST-Noisy-v1", "est", noise=0.1),
          _blicket("causalplay/EST-ACRE-v0", "est_acre"),
          _blicket("causalplay/EST-v0", "est_v0"),  # deprecated (warns): EST-ACRE-v0 under its old name
          _blicket("causalplay/EST-Conjunctive-v0", "est_v0", rule="conjunctive"),
          _blicket("causalplay/EST-Noisy-v0", "est_v0", noise=0.1),
          *(EnvEntry(p, "causalplay.envs.pixels:PixelBlicketEnv", "causalplay.envs.pixels:pixel_batch",
                     {"symbolic_id": s}, vector=False) for p, s in PIXEL_IDS.items())),
    scorer="causalplay.bench.blicket:BlicketFamily",
    agents="causalplay.agents:AGENTS",
    default_agents=("random", "bayes", "naive", "search-random", "search-naive", "eig", "planner"),
    spread="95% CI over seeds", spread_one_seed="95% CI over episodes",
    serve="causalplay.serve.tasks:BlicketServed",
)
SEQUENCE = TaskFamily(
    "sequence",
    envs=(EnvEntry("causalplay/Overhypothesis-v0", "causalplay.envs.overhypothesis:make_overhypothesis",
                   "causalplay.envs.overhypothesis:overhypothesis_batch"),),
    scorer="causalplay.bench.sequences:SequenceFamily",
    agents="causalplay.agents:AGENTS",
    default_agents=("eig-transfer:transfer=False", "eig-transfer"),
)
NEXIOM = TaskFamily(
    "nexiom",
    envs=(EnvEntry("causalplay/Nexiom-v0", "causalplay.envs.nexiom:NexiomEnv",
                   "causalplay.envs.nexiom_core:NexiomBatch"),),
    scorer="causalplay.bench.nexiom:NexiomFamily",
    agents="causalplay.agents:NEXIOM_AGENTS",
    default_agents=("eig",),
    serve="causalplay.serve.tasks:NexiomServed",
)
DAG = TaskFamily(
    "dag",
    envs=(EnvEntry("causalplay/CausalDAG-v1", f"{_DAG}:CausalDAGEnv", f"{_DAG}:dag_batch", vector=False),
          EnvEntry("causalplay/CausalDAG-Adaptive-v1", f"{_DAG}:make_adaptive", f"{_DAG}:adaptive_batch", vector=False),
          # deprecated (warn): v1 with the goal-phase no-op shown as an intervention in the last observation
          EnvEntry("causalplay/CausalDAG-v0", f"{_DAG}:CausalDAGEnv", f"{_DAG}:dag_batch", {"legacy_goal_obs": True},
                   vector=False),
          EnvEntry("causalplay/CausalDAG-Adaptive-v0", f"{_DAG}:make_adaptive", f"{_DAG}:adaptive_batch",
                   {"legacy_goal_obs": True}, vector=False)),
    scorer="causalplay.bench.dag:DAGFamily",
    agents="causalplay.agents.dag:DAG_AGENTS",
    default_agents=("expert", "random", "value", "change", "total-corr", "partial-corr", "eig"),
    deprecated_agents={"bayes": "eig"},  # the exact Bayesian experimenter; Blicket's `bayes` is a naive-Bayes baseline
)
PHYSICS = TaskFamily(
    "physics",
    envs=(EnvEntry("causalplay/PhysicsB-v2", f"{_PH}:make_b_v2", f"{_PH}:batch_b_v2", vector=False),
          EnvEntry("causalplay/Physics2B-v2", f"{_PH}:make_2b_v2", f"{_PH}:batch_2b_v2", vector=False),
          # deprecated (warn): world version 0's templates, about twice (B) and three times (2B-v1) PHYRE's RAND
          EnvEntry("causalplay/PhysicsB-v0", f"{_PH}:make_b", f"{_PH}:batch_b", vector=False),
          EnvEntry("causalplay/Physics2B-v1", f"{_PH}:make_2b", f"{_PH}:batch_2b", vector=False),
          # deprecated (warns): tier-B scenes played with two balls, most solvable with one
          EnvEntry("causalplay/Physics2B-v0", f"{_PH}:make_2b_v0", f"{_PH}:batch_2b_v0", vector=False)),
    scorer="causalplay.bench.physics:PhysicsFamily",
    agents="causalplay.agents:PHYSICS_AGENTS",
    default_agents=("random", "mem", "mem-o", "dqn", "dqn-o", "ssup"),
    deprecated_agents={"rand": "random"},  # PHYRE's name for the uniform baseline
    spread="SD over folds",
    default_episodes=8,  # test tasks per fold and setting (each is up to 100 simulated attempts)
)

#: The package's own families, in the order the benchmark prints their tables.
BUILTIN_FAMILIES: tuple[TaskFamily, ...] = (BLICKET, SEQUENCE, NEXIOM, DAG, PHYSICS)

# -- the registry ------------------------------------------------------------------------------------------------
_REGISTERED: dict[str, TaskFamily] = {}
_PLUGINS_LOADED: tuple | None = None  # the sys.path the installed plug-in families were imported under


def task_factory(env_id: str, **kwargs) -> Callable:
    """``(batch_size, rng) -> Task``: the one place a registered id becomes a batched Task (used by
    :func:`causalplay.envs.make_batch`, the native vector envs and the SB3 vector env): the batch entry point its
    family registered (:class:`EnvEntry`). ``rng`` is a numpy Generator, or one per row. ``kwargs`` override the
    id's keyword arguments."""
    return family_of(env_id).env(env_id).batch_factory(**kwargs)


def _make_vec(num_envs: int = 1, *, env_id: str, **kwargs):
    """``gymnasium.make_vec(env_id, num_envs)`` of an id registered with ``vector=True``: one batched Task
    (:func:`task_factory`) behind :class:`causalplay.envs.vector.TaskVectorEnv`, with the single env's spaces."""
    import gymnasium

    from .vector import TaskVectorEnv

    single = gymnasium.make(env_id, disable_env_checker=True, **kwargs).unwrapped
    return TaskVectorEnv(task_factory(env_id, **kwargs), num_envs, single.observation_space, single.action_space)


def register_family(family: TaskFamily) -> TaskFamily:
    """Register ``family`` and its env ids with gymnasium (ids already registered are kept); return it.

    ``ValueError`` if another family of that name, or another family's env id, is registered already."""
    import gymnasium

    if not isinstance(family, TaskFamily):
        raise TypeError(f"expected a TaskFamily, got {type(family).__name__}")
    old = _REGISTERED.get(family.name)
    if old is not None and old is not family:
        raise ValueError(f"task family {family.name!r} is registered already (from {old.source})")
    for other in _REGISTERED.values():
        if other is not family and (clash := set(other.ids) & set(family.ids)):
            raise ValueError(f"task family {family.name!r} ({family.source}) registers {sorted(clash)}, which "
                             f"family {other.name!r} ({other.source}) registers already")
    _REGISTERED[family.name] = family
    for e in family.envs:
        if e.id not in gymnasium.registry:
            gymnasium.register(id=e.id, entry_point=e.entry_point, kwargs=dict(e.kwargs),
                               vector_entry_point=partial(_make_vec, env_id=e.id) if e.vector else None)
    return family


def family_plugins() -> dict[str, Plugin]:
    """The ``causalplay.families`` entry points installed (not yet imported), by name."""
    return plugins(FAMILY_GROUP)


def _load_plugin(p: Plugin) -> TaskFamily:
    fam = p.load()
    if not isinstance(fam, TaskFamily):
        raise PluginError(f"plug-in family {p.name!r} of distribution {p.distribution} {p.version}: {p.value} is a "
                          f"{type(fam).__name__}, expected a causalplay.envs.families.TaskFamily")
    if fam.name != p.name:
        raise PluginError(f"plug-in family {p.name!r} of distribution {p.distribution} {p.version}: {p.value} is "
                          f"named {fam.name!r}; the entry point's name must be the family's name")
    if fam.source == "causalplay":  # say where it comes from in listings and messages
        import dataclasses

        fam = dataclasses.replace(fam, source=f"{p.distribution} {p.version}")
    return register_family(fam)


def _load_plugins() -> None:
    """Import every installed plug-in family (once per process and ``sys.path``, as the metadata is read): needed to
    find which family owns an unknown id."""
    global _PLUGINS_LOADED
    key = tuple(sys.path)  # a path added later (a plug-in installed into a running session) is scanned too
    if _PLUGINS_LOADED != key:
        _PLUGINS_LOADED = key
        for name, p in family_plugins().items():
            if name not in _REGISTERED:
                _load_plugin(p)


def get_family(name: str) -> TaskFamily:
    """The family called ``name`` (built-in, registered, or an installed plug-in, imported now); ``ValueError``
    listing the known names otherwise."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    p = family_plugins().get(name)
    if p is not None:
        return _load_plugin(p)
    raise ValueError(f"unknown task family {name!r}; expected one of {list(_REGISTERED) + list(family_plugins())}")


def families(load_plugins: bool = True) -> tuple[TaskFamily, ...]:
    """Every registered family: the built-in ones in table order, then plug-ins (imported now, unless
    ``load_plugins=False``)."""
    if load_plugins:
        _load_plugins()
    return tuple(_REGISTERED.values())


def family_of(env_id: str) -> TaskFamily:
    """The family that registers ``env_id`` (installed plug-in families are imported if no registered family has
    it); ``ValueError`` naming the id and the known ones otherwise."""
    for fam in _REGISTERED.values():
        if env_id in fam.ids:
            return fam
    _load_plugins()
    for fam in _REGISTERED.values():
        if env_id in fam.ids:
            return fam
    raise ValueError(f"unknown environment id {env_id!r}; expected one of "
                     f"{tuple(i for f in _REGISTERED.values() for i in f.ids)}")


for _fam in BUILTIN_FAMILIES:
    register_family(_fam)
