"""The benchmark: agents x envs x seeds through one play loop and one runner, every task family scored by its
own scorer (:mod:`.blicket`, :mod:`.sequences`, :mod:`.nexiom`, :mod:`.dag`, :mod:`.physics`); results.json,
per-episode CSV, plots.

Command line: ``causalplay bench --env causalplay/IVRE-v0 --agents eig,planner``.
"""

from __future__ import annotations

from causalplay.core.metrics import (
    assign_split,
    auccess,
    mean_ci,
    ratio_ci,
    stable_unit,
    success_curve,
    template_folds,
    wilcoxon,
    wilson_ci,
)

from .executors import EXECUTORS, SerialExecutor, make_executor
from .play import play
from .runner import families, family_of, run_benchmark, run_episodes, run_shard, summarise, table, write_results
from .shards import RunLock, RunLocked, Shard, ShardError

__all__ = ["play", "run_benchmark", "run_episodes", "run_shard", "summarise", "table", "write_results", "families",
           "family_of", "SerialExecutor", "make_executor", "EXECUTORS", "Shard", "ShardError", "RunLock",
           "RunLocked", "auccess", "success_curve", "wilcoxon", "mean_ci", "wilson_ci", "ratio_ci", "stable_unit",
           "assign_split", "template_folds"]
