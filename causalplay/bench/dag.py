"""The causal-DAG family (Lampinen et al. 2023): agents x (train, test) structures x (nonlinear, linear) worlds.

Scores per episode (see :meth:`causalplay.envs.causal_dag.CausalDAGBatch.score`): ``pct_optimal`` (the goal-phase
action's expected goal value, min-max normalised over the ``2n`` actions, so the optimal action scores 1 and the
worst 0), ``match`` (the action is as good as the optimal one, i.e. matches the expert's) and ``reward`` (the
realised goal value), each also on the "nontrivial" episodes (those in which the actions' expected goal values
differ; in training structures the goal E is often a root, and then every action is optimal). The paper's own
metric, "the percentage of the optimal rewards", is the plain ratio of the mean expected reward to the mean optimal
reward (``reward_ratio_optimal``); both are reported. CIs: Student-t over episodes, 95 % (the ratio's by the delta
method).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch

from causalplay.core.metrics import ratio_ci
from causalplay.envs import make_batch

from .family import Family, build_agent, ci_columns
from .play import play

__all__ = ["DAGFamily", "ratio_ci"]

_COLUMNS = ("pct_optimal", "match", "reward", "expected_reward", "optimal_reward", "nontrivial", "action",
            "optimal_action")


class DAGFamily(Family):
    """Five interventions then a goal-phase action; reward as a fraction of optimal and match with the optimal
    action, on train and test structures, nonlinear and linear (the four variants of every DAG id)."""

    columns = ("env", "agent", "seed", "episode", "split", "linear", *_COLUMNS, "seconds")
    shard_size = 500
    display = {"reward_pct_optimal": "reward % of optimal", "reward_ratio_optimal": "reward ratio (paper) %",
               "match_optimal": "match %"}

    def variants(self, env_id: str) -> list:
        return [(("linear", lin), ("split", split)) for lin in (False, True) for split in ("train", "test")]

    def episodes(self, env_id, agent, n, seed, shard=0, start=0, env_kwargs=None, agent_kwargs=None):
        t0 = time.perf_counter()
        kw = {"split": "train", "linear": False, **(env_kwargs or {})}
        torch.manual_seed(seed)  # no agent draws from torch's global generator; pinned in case one does
        env = make_batch(env_id, n, seed=[seed, shard], **kw)
        sc = play(env, build_agent(self.name, agent, seed * 100003 + shard, agent_kwargs))
        nontrivial = (env.goal_values.max(1).values - env.goal_values.min(1).values) > 1e-9
        return pd.DataFrame({
            "env": env_id, "agent": agent, "seed": seed, "episode": np.arange(start, start + n), "split": kw["split"],
            "linear": kw["linear"], **{c: sc[c] for c in _COLUMNS[:5]}, "nontrivial": nontrivial.numpy(),
            "action": env.actions[:, -1].numpy(), "optimal_action": env.optimal_action.numpy(),
            "seconds": (time.perf_counter() - t0) / n})

    def summarise(self, df: pd.DataFrame, level: float = 0.95) -> list[dict]:
        """One row per (env, agent, split, linear): means and CI half-widths over episodes."""
        rows = []
        names = {"pct_optimal": "reward_pct_optimal", "match": "match_optimal", "reward": "reward"}
        for (env, agent, split, linear), g in df.groupby(["env", "agent", "split", "linear"], sort=False):
            rec = {"env": env, "agent": agent, "split": split, "linear": bool(linear), "episodes": int(len(g)),
                   "seeds": int(g["seed"].nunique()), "nontrivial_fraction": float(g["nontrivial"].mean())}
            ci_columns(rec, g, names, level)
            rec["reward_ratio_optimal"], rec["reward_ratio_optimal_ci"] = ratio_ci(g["expected_reward"],
                                                                                   g["optimal_reward"], level)
            nt = g[g["nontrivial"]]
            if len(nt):
                ci_columns(rec, nt, {c: n + "_nontrivial" for c, n in names.items()}, level)
            rec["seconds_per_episode"] = float(g["seconds"].mean())
            rows.append(rec)
        return rows

    def table(self, rows: list[dict], level: float = 0.95) -> pd.DataFrame:
        df = pd.DataFrame(rows)
        for col in ("reward_pct_optimal", "reward_ratio_optimal", "match_optimal"):
            df[col], df[col + "_ci"] = 100 * df[col], 100 * df[col + "_ci"]
        cols = ["env", "agent", "linear", "split", "episodes", "seeds"]
        return df[cols + [c for k in self.display for c in (k, k + "_ci")]]
