"""A task family: what the one runner needs to know to benchmark one kind of task.

The runner (:mod:`.runner`) cuts every (env, variant, agent, seed) into shards and hands each to a worker; the worker
calls :meth:`Family.episodes`, which builds the batched task, builds the agent once, plays it with
:func:`~causalplay.bench.play.play` and turns ``task.record()`` into one record per episode. After the run the
family's scorer turns records into summary rows (:meth:`Family.summarise`) and the table users read
(:meth:`Family.table`). Families: :mod:`.blicket` (IVRE / EST, AUCCESS), :mod:`.sequences` (Overhypothesis
sequences), :mod:`.nexiom` (the human task), :mod:`.dag` (causal-DAG worlds, reward as a fraction of optimal),
:mod:`.physics` (PHYRE's folds, AUCCESS).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pandas as pd

from causalplay.agents import make_agent
from causalplay.core.metrics import mean_ci

__all__ = ["Family", "Variant", "build_agent", "ci_columns"]

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


class Family:
    """Base class; subclasses set :attr:`name` and :attr:`columns` and implement the abstract methods."""

    #: the agent registry (``causalplay.agents.REGISTRIES``) and the family's name in tables
    name = "family"
    #: the columns every record of this family starts with (the shard check), ``env, agent, seed, ...``
    columns: tuple[str, ...] = ()
    #: default episodes per shard
    shard_size = 2000
    #: the table's value columns: name -> header (each printed as ``mean ± CI``)
    display: dict[str, str] = {}

    def owns(self, env_id: str) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

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
