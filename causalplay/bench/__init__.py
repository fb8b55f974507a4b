"""The benchmark: agents x envs x seeds -> the IVRE Table-2 layout, results.json, per-episode CSV, plots.

Command line: ``causalplay bench --env causalplay/IVRE-v0 --agents eig,planner --episodes 10000 --seeds 5``.
"""

from __future__ import annotations

from .executors import EXECUTORS, SerialExecutor, make_executor
from .metrics import assign_split, auccess, mean_ci, stable_unit, success_curve, template_folds, wilcoxon
from .runner import run_benchmark, run_episodes, run_shard, summarise, table, write_results
from .shards import RunLock, RunLocked, Shard, ShardError

__all__ = ["run_benchmark", "run_episodes", "run_shard", "summarise", "table", "write_results", "SerialExecutor",
           "make_executor", "EXECUTORS", "Shard", "ShardError", "RunLock", "RunLocked",
           "auccess", "success_curve", "wilcoxon", "mean_ci", "stable_unit", "assign_split",
           "template_folds"]
