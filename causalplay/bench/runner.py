"""Running agents on batched envs: deterministic shards, resumable runs, pluggable executors."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .metrics import assign_split, auccess, mean_ci

__all__ = ["run_episodes", "run_benchmark", "SerialExecutor", "summarise", "Shard"]

EPISODE_COLUMNS = ["env", "agent", "seed", "episode", "template", "split", "n_blickets", "solved_step",
                   "context_solved", "episode_solved", "context_reward", "episode_reward", "seconds"]


@dataclass(frozen=True)
class Shard:
    """One unit of work: episodes ``[start, start + size)`` of ``(env, agent, seed)``."""

    env: str
    agent: str
    seed: int
    index: int
    start: int
    size: int

    @property
    def filename(self) -> str:
        # start and size are in the name: a shard from a run with other sizes is never mistaken for this one.
        return (f"{self.env.replace('/', '_')}__{self.agent.replace('/', '_')}__s{self.seed}__{self.index:05d}"
                f"__{self.start}+{self.size}.csv")


def run_episodes(env_id: str, agent_name: str, n_episodes: int, seed: int, shard: int = 0, start: int = 0,
                 env_kwargs: dict | None = None, agent_kwargs: dict | None = None) -> pd.DataFrame:
    """Play ``n_episodes`` of ``env_id`` with one agent; one row per episode (see ``EPISODE_COLUMNS``).

    Episodes are drawn from ``numpy.random.default_rng([seed, shard])`` and the agent is seeded with
    ``[seed, shard]`` too, so a shard is the same whoever runs it and whenever. Every agent meets the same
    episodes (and the same machine noise) for a given ``(seed, shard)``.
    """
    from causalplay.agents import TaskInfo, make_agent
    from causalplay.envs import make_batch

    t0 = time.perf_counter()
    agent = make_agent(agent_name, seed=seed * 100003 + shard, **(agent_kwargs or {}))
    # an agent may ask for another observation mode (e.g. the RL agents' "history"); its row may carry a label
    obs_mode = {"obs_mode": agent.obs_mode} if getattr(agent, "obs_mode", None) else {}
    env = make_batch(env_id, n_episodes, seed=[seed, shard], **{**obs_mode, **(env_kwargs or {})})
    if env.n_context == 0 or not hasattr(env, "config"):
        raise ValueError(f"{env_id} has no context/trial structure the benchmark scores (Nexiom is scored "
                         "by its own answer step); pass a causalplay/IVRE- or EST- id")
    obs = env.reset()
    agent.reset(TaskInfo.from_env(env), obs)
    while not bool(env.done.all()):
        obs, _, _, _ = env.step(agent.act(obs, ~env.done))
    rec = env.record()
    episodes = np.arange(start, start + n_episodes)
    return pd.DataFrame({
        "env": env_id, "agent": getattr(agent, "label", agent_name), "seed": seed, "episode": episodes,
        "template": rec["template"],
        "split": [assign_split(f"{tpl}/{seed}/{e}") for tpl, e in zip(rec["template"], episodes, strict=True)],
        **{k: rec[k] for k in ("n_blickets", "solved_step", "context_solved", "episode_solved", "context_reward",
                               "episode_reward")},
        "seconds": (time.perf_counter() - t0) / n_episodes,
    })


def _work(shard: Shard, out_dir: str, env_kwargs: dict | None) -> tuple[str, int]:
    torch.set_num_threads(1)  # one process per core; intra-op threads would oversubscribe
    df = run_episodes(shard.env, shard.agent, shard.size, shard.seed, shard.index, shard.start, env_kwargs)
    path = Path(out_dir) / "shards" / shard.filename
    tmp = path.with_suffix(".tmp")
    df.to_csv(tmp, index=False)
    os.replace(tmp, path)  # atomic: an interrupted run never leaves a half shard behind
    return str(path), shard.size


class SerialExecutor(Executor):
    """Runs tasks in this process, one after another (for debugging, tests and 1-core machines)."""

    def submit(self, fn: Callable, /, *args, **kwargs) -> Future:
        f: Future = Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - handed to the caller through the future
            f.set_exception(e)
        return f


def make_executor(kind: str = "process", workers: int | None = None) -> Executor:
    """``"process"`` (default: a pool of ``workers`` processes, default the CPU count) or ``"serial"``."""
    if kind == "serial":
        return SerialExecutor()
    if kind == "process":
        return ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1)
    raise ValueError(f"executor must be 'process' or 'serial', got {kind!r}")


def plan_shards(envs: Sequence[str], agents: Sequence[str], episodes: int, seeds: Iterable[int],
                shard_size: int) -> list[Shard]:
    if episodes < 1 or shard_size < 1:
        raise ValueError(f"episodes and shard_size must be >= 1, got {episodes} and {shard_size}")
    out = []
    for env in envs:
        for agent in agents:
            for seed in seeds:
                for i, start in enumerate(range(0, episodes, shard_size)):
                    out.append(Shard(env, agent, seed, i, start, min(shard_size, episodes - start)))
    return out


def run_benchmark(envs: Sequence[str], agents: Sequence[str], episodes: int, seeds: Iterable[int], out: str | Path,
                  *, shard_size: int = 2000, executor: Executor | None = None, env_kwargs: dict | None = None,
                  progress: bool = True, episodes_per_agent: dict[str, int] | None = None) -> pd.DataFrame:
    """Run every (env, agent, seed), writing one CSV per shard under ``out/shards`` as each finishes.

    Shards already on disk are not run again, so an interrupted run resumes where it stopped.
    ``episodes_per_agent`` caps the episodes of slow agents (e.g. ``{"notears": 500}``).
    Returns all episodes (also written to ``out/episodes.csv``).
    """
    from tqdm.auto import tqdm

    out = Path(out)
    (out / "shards").mkdir(parents=True, exist_ok=True)
    seeds = list(seeds)
    shards = []
    for agent in agents:
        n = min(episodes, (episodes_per_agent or {}).get(agent, episodes))
        shards += plan_shards(envs, [agent], n, seeds, shard_size)
    todo = [s for s in shards if not (out / "shards" / s.filename).exists()]
    own = executor is None
    executor = executor or make_executor()
    bar = tqdm(total=sum(s.size for s in shards), initial=sum(s.size for s in shards) - sum(s.size for s in todo),
               unit="ep", desc="episodes", disable=not progress)
    try:
        futures = [executor.submit(_work, s, str(out), env_kwargs) for s in todo]
        for f in as_completed(futures):
            _, n = f.result()
            bar.update(n)
    finally:
        bar.close()
        if own:
            executor.shutdown()
    df = pd.concat([pd.read_csv(out / "shards" / s.filename) for s in shards], ignore_index=True)
    df.to_csv(out / "episodes.csv", index=False)
    return df


def summarise(df: pd.DataFrame, horizons: dict[str, tuple[int, int]] | None = None) -> list[dict]:
    """One row per env x agent x seed: ``env, agent, seed, episodes, context_acc, context_reward,
    episode_acc, episode_reward, auccess`` (accuracies as fractions)."""
    from causalplay.envs import make_batch

    rows = []
    for (env, agent, seed), g in df.groupby(["env", "agent", "seed"], sort=False):
        if horizons and env in horizons:
            C, T = horizons[env]
        else:
            b = make_batch(env, 1, seed=0)
            C, T = b.n_context, b.horizon
        rows.append({
            "env": env, "agent": agent, "seed": int(seed), "episodes": int(len(g)),
            "context_acc": float(g["context_solved"].mean()), "context_reward": float(g["context_reward"].mean()),
            "episode_acc": float(g["episode_solved"].mean()), "episode_reward": float(g["episode_reward"].mean()),
            "auccess": auccess(g["solved_step"].to_numpy(), C, T),
            "seconds_per_episode": float(g["seconds"].mean()),
        })
    return rows


def table(rows: list[dict], level: float = 0.95) -> pd.DataFrame:
    """Table-2 layout: mean +- CI half-width over seeds per env x agent."""
    df = pd.DataFrame(rows)
    out = []
    for (env, agent), g in df.groupby(["env", "agent"], sort=False):
        rec = {"env": env, "agent": agent, "seeds": len(g), "episodes": int(g["episodes"].sum())}
        for col in ("context_acc", "context_reward", "episode_acc", "episode_reward", "auccess"):
            scale = 100.0 if col.endswith("acc") or col == "auccess" else 1.0
            m, h = mean_ci((g[col] * scale).tolist(), level)
            rec[col], rec[col + "_ci"] = m, h
        out.append(rec)
    return pd.DataFrame(out)


def write_results(rows: list[dict], out: str | Path) -> Path:
    path = Path(out) / "results.json"
    path.write_text(json.dumps(rows, indent=1))
    return path
