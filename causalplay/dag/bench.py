"""The causal-DAG benchmark loop: agents x splits x (non)linear worlds, per-episode scores, 95% CIs.

Called by ``causalplay bench --env causalplay/CausalDAG-v0 --agents ...`` (a branch in the bench CLI) and
by ``analyses/causal_dag_table.py``. Scores (see :meth:`causalplay.envs.causal_dag.CausalDAGBatch.score`):
``reward_pct_optimal`` (mean over episodes of the goal-phase action's expected goal value, min-max normalised
over the 2n actions, so the optimal action scores 1 and the worst 0), ``match_optimal`` (fraction of goal actions
as good as the optimal one, i.e. matching the expert's) and ``reward`` (the realised goal value), each also on
the "nontrivial" episodes (those in which the actions' expected goal values differ; in training structures
the goal E is often a root, and then every action is optimal). CIs: Student-t over episodes, 95%.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from causalplay.core.metrics import mean_ci

__all__ = ["run_dag_episodes", "run_dag_bench", "summarise_dag", "dag_cli", "DAG_ENV_IDS"]

from causalplay.envs import DAG_ENV_IDS  # noqa: E402


def run_dag_episodes(env_id: str, agent: str, episodes: int, seed: int, split: str = "train",
                     linear: bool = False, batch: int = 500, **env_kwargs) -> pd.DataFrame:
    """Play ``episodes`` episodes of ``env_id`` with one agent spec; one row per episode.

    Episodes come from ``numpy.random.default_rng([seed, chunk])`` per chunk of ``batch`` episodes, so every
    agent meets the same worlds for a given seed (paired comparisons). The agent is seeded with
    ``seed * 100003 + chunk``.
    """
    from causalplay.envs import make_batch

    from .agents import DAGTaskInfo, make_dag_agent

    if env_id not in DAG_ENV_IDS:
        raise ValueError(f"unknown DAG environment {env_id!r}; expected one of {DAG_ENV_IDS}")
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be a positive int, got {episodes!r}")
    frames = []
    for c, start in enumerate(range(0, episodes, batch)):
        size = min(batch, episodes - start)
        t0 = time.perf_counter()
        env = make_batch(env_id, size, seed=[seed, c], split=split, linear=linear, **env_kwargs)
        obs = env.reset()
        ag = make_dag_agent(agent, seed=seed * 100003 + c)
        ag.reset(DAGTaskInfo.from_env(env), obs, oracle=env)
        explore = []
        for _ in range(env.horizon):
            a = ag.act(obs, ~env.done)
            explore.append(a)
            obs, _, _, _ = env.step(a)
        sc = env.score()
        nontrivial = (env.goal_values.max(1).values - env.goal_values.min(1).values) > 1e-9
        frames.append(pd.DataFrame({
            "env": env_id, "agent": agent, "seed": seed, "split": split, "linear": linear,
            "episode": np.arange(start, start + size), "pct_optimal": sc["pct_optimal"].numpy(),
            "match": sc["match"].numpy(), "reward": sc["reward"].numpy(),
            "expected_reward": sc["expected_reward"].numpy(), "optimal_reward": sc["optimal_reward"].numpy(),
            "nontrivial": nontrivial.numpy(), "action": env.actions[:, -1].numpy(),
            "optimal_action": env.optimal_action.numpy(),
            "seconds": (time.perf_counter() - t0) / size,
        }))
    return pd.concat(frames, ignore_index=True)


def summarise_dag(df: pd.DataFrame, level: float = 0.95) -> list[dict]:
    """One row per (env, agent, split, linear): means and CI half-widths over episodes."""
    rows = []
    for (env, agent, split, linear), g in df.groupby(["env", "agent", "split", "linear"], sort=False):
        rec = {"env": env, "agent": agent, "split": split, "linear": bool(linear), "episodes": int(len(g)),
               "seeds": int(g["seed"].nunique()), "nontrivial_fraction": float(g["nontrivial"].mean())}
        for col, name in (("pct_optimal", "reward_pct_optimal"), ("match", "match_optimal"), ("reward", "reward")):
            m, h = mean_ci(g[col].astype(float).tolist(), level)
            rec[name], rec[name + "_ci"] = m, h
            nt = g[g["nontrivial"]]
            if len(nt):
                m2, h2 = mean_ci(nt[col].astype(float).tolist(), level)
                rec[name + "_nontrivial"], rec[name + "_nontrivial_ci"] = m2, h2
        rec["seconds_per_episode"] = float(g["seconds"].mean())
        rows.append(rec)
    return rows


def run_dag_bench(env_ids: list[str], agents: list[str], episodes: int, seeds: list[int], out: str | Path,
                  splits: tuple[str, ...] = ("train", "test"), linear: tuple[bool, ...] = (False, True),
                  episodes_per_agent: dict[str, int] | None = None, log=print, **env_kwargs) -> list[dict]:
    """Run every (env, agent, split, linear, seed); write ``episodes.csv`` (appended as each cell finishes)
    and ``results.json`` under ``out``; return the summary rows."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    frames = []
    for env_id in env_ids:
        for lin in linear:
            for split in splits:
                for agent in agents:
                    caps = episodes_per_agent or {}
                    n = min(episodes, caps.get(agent, caps.get(agent.split(":")[0], episodes)))
                    for seed in seeds:
                        torch.manual_seed(seed)
                        df = run_dag_episodes(env_id, agent, n, seed, split, lin, **env_kwargs)
                        frames.append(df)
                        pd.concat(frames, ignore_index=True).to_csv(out / "episodes.csv", index=False)
                        log(f"{env_id} linear={lin} {split} {agent} seed={seed}: pct_optimal="
                            f"{df['pct_optimal'].mean():.3f} match={df['match'].mean():.3f} "
                            f"({df['seconds'].mean() * 1e3:.1f} ms/episode)")
    rows = summarise_dag(pd.concat(frames, ignore_index=True))
    (out / "results.json").write_text(json.dumps(rows, indent=1))
    return rows


def dag_cli(env_ids: list[str], agents: list[str], episodes: int, seeds: int, out: str,
            notears_episodes: int = 200) -> None:
    """The ``causalplay bench`` branch for the DAG ids: train and test structures, nonlinear and linear;
    prints reward % of optimal and match with the optimal action (mean ± 95% CI over episodes)."""
    import typer
    from rich.console import Console
    from rich.table import Table

    from .agents import make_dag_agent

    if not all(e in DAG_ENV_IDS for e in env_ids):
        raise typer.BadParameter(f"the causal-DAG ids {DAG_ENV_IDS} cannot be mixed with other envs; got {env_ids}")
    for a in agents:
        try:
            name = a.split(":")[0]
            if name != "bc":
                make_dag_agent(a)
        except (ValueError, TypeError) as err:
            raise typer.BadParameter(str(err)) from None
    console = Console()
    rows = run_dag_bench(env_ids, agents, episodes, list(range(seeds)), out,
                         episodes_per_agent={"notears": notears_episodes}, log=lambda s: None)
    t = Table(title=f"causal DAG worlds ({seeds} seed(s); mean ± 95% CI over episodes)")
    for col in ("env", "agent", "world", "split", "episodes", "reward % of optimal", "match %"):
        t.add_column(col, justify="right", no_wrap=col == "agent")
    for r in rows:
        t.add_row(r["env"].split("/")[-1], r["agent"], "linear" if r["linear"] else "nonlinear", r["split"],
                  str(r["episodes"]), f"{100 * r['reward_pct_optimal']:.1f} ± {100 * r['reward_pct_optimal_ci']:.1f}",
                  f"{100 * r['match_optimal']:.1f} ± {100 * r['match_optimal_ci']:.1f}")
    console.print(t)
    console.print(f"results in {out}/results.json, episodes.csv")
