"""A task family's scorer: what the one runner needs to know to benchmark one kind of task.

Each :class:`causalplay.envs.families.TaskFamily` names its scorer class (``TaskFamily.scorer``); the runner builds
it once with the family (:func:`scorer`).

The runner (:mod:`.runner`) cuts every (env, variant, agent, seed) into shards and hands each to a worker; the worker
calls :meth:`Family.episodes`, which builds the batched task, builds the agent once, plays it with
:func:`~causalplay.bench.play.play` and turns ``task.record()`` into one record per episode. After the run the
family's scorer turns records into summary rows (:meth:`Family.summarise`) and the table users read
(:meth:`Family.table`). Families: :mod:`.blicket` (IVRE / EST, AUCCESS), :mod:`.sequences` (Overhypothesis
sequences), :mod:`.nexiom` (the human task), :mod:`.dag` (causal-DAG worlds, reward as a fraction of optimal),
:mod:`.physics` (PHYRE's folds, AUCCESS).
"""

from __future__ import annotations

from functools import cache, lru_cache
from pathlib import Path

import pandas as pd

from causalplay.agents import make_agent
from causalplay.core.metrics import mean_ci
from causalplay.core.plugins import load_object
from causalplay.envs.families import TaskFamily

__all__ = ["Family", "Variant", "build_agent", "ci_columns", "scorer"]

#: A variant of an env: the env options a family sweeps within one id (e.g. the DAG worlds' split and linearity),
#: as sorted ``(key, value)`` pairs -- part of every shard's identity.
Variant = tuple[tuple[str, object], ...]


@lru_cache(maxsize=64)
def _prototype(family: str, spec: str):
    return make_agent(spec, seed=0, family=family)


def build_agent(family: str, spec: str, seed: int, agent_kwargs: dict | None = None):
    """The agent of ``spec`` with seed ``seed``. Without extra ``agent_kwargs`` a worker builds each spec once
    (checkpoints and perception models are loaded once per worker process) and reseeds it per shard."""
    if agent_kwargs:
        return make_agent(spec, seed=seed, family=family, **agent_kwargs)
    agent = _prototype(family, spec)
    agent.reseed(seed)
    return agent


def ci_columns(rec: dict, g: pd.DataFrame, cols: dict[str, str], level: float = 0.95,
               scale: dict | None = None) -> dict:
    """Add ``name`` and ``name_ci`` (mean and Student-t half-width over the rows of ``g``) for ``cols`` {column:
    name}; ``scale`` multiplies a column first (e.g. 100 for percentages)."""
    for col, name in cols.items():
        m, h = mean_ci((g[col].astype(float) * (scale or {}).get(col, 1.0)).tolist(), level)
        rec[name], rec[name + "_ci"] = m, h
    return rec


@cache
def scorer(family: TaskFamily) -> Family:
    """The scorer of ``family`` (its ``scorer`` class built with it; one per family and process)."""
    cls = load_object(family.scorer)
    if not (isinstance(cls, type) and issubclass(cls, Family)):
        raise TypeError(f"task family {family.name!r} ({family.source}): scorer {family.scorer!r} is not a "
                        "causalplay.bench.family.Family subclass")
    return cls(family)


class Family:
    """Base class of the scorers; subclasses set :attr:`columns` and implement the abstract methods.

    Parameters
    ----------
    family : TaskFamily, optional
        The family this scores (:attr:`name` is its name: the agent registry and the tables' label); default the
        registered family whose ``scorer`` names this class.
    """

    #: the columns every record of this family starts with (the shard check), ``env, agent, seed, ...``
    columns: tuple[str, ...] = ()
    #: default episodes per shard
    shard_size = 2000
    #: the table's value columns: name -> header (each printed as ``mean ± CI``)
    display: dict[str, str] = {}
    #: a per-episode record column the CLI compares between two agents on the same episodes (``--compare``), or
    #: None; the records then have one row per (seed, episode) and agent
    paired_column: str | None = None

    def __init__(self, family: TaskFamily | None = None):
        if family is None:
            from causalplay.envs.families import families

            ref = f"{type(self).__module__}:{type(self).__qualname__}"
            family = next((f for f in families(load_plugins=False) if f.scorer == ref), None)
            if family is None:
                raise TypeError(f"no registered task family has the scorer {ref}; pass the TaskFamily")
        self.family, self.name = family, family.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def check_agent(self, env_id: str, agent: str) -> None:
        """``ValueError`` if the agent spec cannot play ``env_id`` (checked by the CLI before any work starts)."""

    def variants(self, env_id: str) -> list[Variant]:
        """The env options this family sweeps for ``env_id`` (one empty variant: none)."""
        return [()]

    def check_env(self, env_id: str, env_kwargs: dict | None = None) -> None:
        """``ValueError`` naming the id if the family cannot benchmark it."""

    def episodes(self, env_id: str, agent: str, n: int, seed: int, shard: int = 0, start: int = 0,
                 env_kwargs: dict | None = None, agent_kwargs: dict | None = None) -> pd.DataFrame:
        """Records of ``n`` episodes of ``env_id`` (the shard's work); episodes from ``default_rng([seed, shard])``
        and the agent seeded ``seed * 100003 + shard``, so a shard is the same whoever runs it."""
        raise NotImplementedError  # pragma: no cover - abstract

    def summarise(self, df: pd.DataFrame) -> list[dict]:  # pragma: no cover - abstract
        raise NotImplementedError

    def table(self, rows: list[dict], level: float = 0.95) -> pd.DataFrame:
        """The users' table (one row per env x variant x agent); by default the summary rows themselves."""
        return pd.DataFrame(rows)

    def plots(self, df: pd.DataFrame, out: str | Path) -> list[Path]:
        return []
