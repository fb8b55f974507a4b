"""Running agents on batched envs: deterministic shards, verified resumable runs, pluggable executors.

Workers run :func:`run_shard` and return records; :func:`run_benchmark` (the driver) validates and writes them
(:mod:`.shards`). Executors come from the registry in :mod:`.executors`.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, wait
from pathlib import Path

import numpy as np
import pandas as pd

from ..core._futures import POLL_SECONDS
from .executors import SerialExecutor, abort, make_executor
from .metrics import assign_split, auccess, mean_ci
from .play import play
from .shards import RunLock, RunLocked, Shard, ShardError, atomic_write, check_shard, read_shard, write_shard

__all__ = ["run_episodes", "run_shard", "run_benchmark", "plan_shards", "check_env", "SerialExecutor",
           "make_executor", "summarise", "table", "write_results", "Shard", "ShardError", "RunLocked",
           "EPISODE_COLUMNS"]

EPISODE_COLUMNS = ["env", "agent", "seed", "episode", "template", "split", "n_blickets", "solved_step",
                   "context_solved", "episode_solved", "context_reward", "episode_reward", "seconds"]


def run_episodes(env_id: str, agent_name: str, n_episodes: int, seed: int, shard: int = 0, start: int = 0,
                 env_kwargs: dict | None = None, agent_kwargs: dict | None = None) -> pd.DataFrame:
    """Play ``n_episodes`` of ``env_id`` with one agent; one row per episode (see ``EPISODE_COLUMNS``).

    Episodes are drawn from ``numpy.random.default_rng([seed, shard])`` and the agent is seeded with
    ``[seed, shard]`` too, so a shard is the same whoever runs it and whenever. Every agent meets the same
    episodes (and the same machine noise) for a given ``(seed, shard)``.
    """
    from causalplay.agents import make_agent
    from causalplay.envs import make_batch

    t0 = time.perf_counter()
    agent = make_agent(agent_name, seed=seed * 100003 + shard, **(agent_kwargs or {}))
    # an agent may ask for another observation mode (e.g. the RL agents' "history"); its row may carry a label
    obs_mode = {"obs_mode": agent.obs_mode} if getattr(agent, "obs_mode", None) else {}
    env = make_batch(env_id, n_episodes, seed=[seed, shard], **{**obs_mode, **(env_kwargs or {})})
    if env.n_context == 0 or not hasattr(env, "config"):
        raise ValueError(f"{env_id} has no context/trial structure the benchmark scores (Nexiom is scored "
                         "by its own answer step); pass a causalplay/IVRE- or EST- id")
    check_pairing(env_id, agent_name, bool(getattr(env, "pixels", False)), agent)
    rec = play(env, agent)
    episodes = np.arange(start, start + n_episodes)
    df = pd.DataFrame({
        "env": env_id, "agent": agent_name, "seed": seed, "episode": episodes, "template": rec["template"],
        "split": [assign_split(f"{tpl}/{seed}/{e}") for tpl, e in zip(rec["template"], episodes, strict=True)],
        **{k: rec[k] for k in ("n_blickets", "solved_step", "context_solved", "episode_solved", "context_reward",
                               "episode_reward")},
        "seconds": (time.perf_counter() - t0) / n_episodes,
    })
    # Agents that talk to a model add per-episode counts (tokens, parse failures) and their dialogues.
    for col, values in (agent.episode_columns() if hasattr(agent, "episode_columns") else {}).items():
        df[col] = values
    if hasattr(agent, "dialogues"):
        df.attrs["dialogues"] = agent.dialogues()
    return df


def check_pairing(env_id: str, agent_name: str, pixels: bool, agent=None) -> None:
    """``ValueError`` unless the agent and the env agree on pixels (``pixels``: the env renders its panels).

    ``agent`` is the built agent, or None to build ``agent_name`` once (the CLI checks before any work starts)."""
    if agent is None:
        from causalplay.agents import make_agent

        agent = make_agent(agent_name, seed=0)
    if pixels != bool(getattr(agent, "reads_pixels", False)):
        raise ValueError(f"agent {agent_name!r} cannot play {env_id}: " + (
            "it is a pixel env; pick an agent that reads pixels (eig-pixels)" if pixels
            else "that agent reads rendered panels; pick a pixel id (causalplay/IVRE-Pixels-v0, EST-Pixels-v1)"))


def check_env(env_id: str, env_kwargs: dict | None = None) -> tuple[int, int]:
    """``(n_context, horizon)`` of a benchmark env; ``ValueError`` naming the id if it cannot be benchmarked.

    Parameters
    ----------
    env_id : str
        A ``causalplay/...`` id.
    env_kwargs : dict, optional
        Options passed to ``make_batch``.

    Raises
    ------
    ValueError
        Unknown id, or an env without the context/trial structure the benchmark scores (Nexiom).
    """
    from causalplay.envs import make_batch

    b = make_batch(env_id, 1, seed=0, **(env_kwargs or {}))
    if b.n_context == 0 or not hasattr(b, "config"):
        raise ValueError(f"{env_id} has no context/trial structure the benchmark scores (Nexiom is scored "
                         "by its own answer step, see causalplay.bench.nexiom); pass a causalplay/IVRE- or EST- id")
    return b.n_context, b.horizon


def run_shard(shard: Shard, env_kwargs: dict | None = None) -> dict:
    """The worker's task: play one shard and *return* its records (workers never write files).

    Returns
    -------
    dict
        ``shard``, ``records`` (DataFrame: ``EPISODE_COLUMNS``, then any per-episode columns the agent adds),
        ``dialogues`` (language-model agents' messages per episode, else ``None``), ``seconds`` (wall time),
        ``host``, ``pid`` and ``causalplay`` (the worker's package version; the driver refuses records from
        another version).
    """
    from causalplay.core._version import __version__

    t0 = time.perf_counter()
    df = run_episodes(shard.env, shard.agent, shard.size, shard.seed, shard.index, shard.start, env_kwargs)
    dialogues = df.attrs.pop("dialogues", None)  # language-model agents: one message list per episode
    return {"shard": shard, "records": df, "dialogues": dialogues, "seconds": time.perf_counter() - t0,
            "host": socket.gethostname(), "pid": os.getpid(), "causalplay": __version__}


def plan_shards(envs: Sequence[str], agents: Sequence[str], episodes: int, seeds: Iterable[int],
                shard_size: int) -> list[Shard]:
    """Every shard of ``envs x agents x seeds``, ``episodes`` each, cut into shards of ``shard_size``."""
    if episodes < 1 or shard_size < 1:
        raise ValueError(f"episodes and shard_size must be >= 1, got {episodes} and {shard_size}")
    out = []
    for env in envs:
        for agent in agents:
            for seed in seeds:
                for i, start in enumerate(range(0, episodes, shard_size)):
                    out.append(Shard(env, agent, seed, i, start, min(shard_size, episodes - start)))
    return out


def _unique(name: str, values: Sequence) -> list:
    values = list(values)
    if not values:
        raise ValueError(f"{name} must not be empty")
    dup = sorted({str(v) for v in values if values.count(v) > 1})
    if dup:
        raise ValueError(f"{name} lists {dup} more than once")
    return values


def _stderr(msg: str) -> None:
    from tqdm.auto import tqdm

    tqdm.write(msg, file=sys.stderr)


def run_benchmark(envs: Sequence[str], agents: Sequence[str], episodes: int, seeds: Iterable[int], out: str | Path,
                  *, shard_size: int = 2000, executor: Executor | str | None = None, workers: int | None = None,
                  address: str | None = None, env_kwargs: dict | None = None, progress: bool = True,
                  episodes_per_agent: dict[str, int] | None = None,
                  log: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Run every (env, agent, seed) shard by shard; workers return records, this process writes them.

    Parameters
    ----------
    envs, agents : sequence of str
        Env ids and agent specs, each listed once.
    episodes : int
        Episodes per env x agent x seed.
    seeds : iterable of int
        Seeds, each listed once.
    out : str or Path
        Output folder: ``shards/`` (one verified CSV + JSON manifest per shard, see :mod:`.shards`) and
        ``episodes.csv``. Locked for the duration of the run (:class:`~.shards.RunLock`).
    shard_size : int
        Episodes per shard: the unit of parallel work and of resuming.
    executor : Executor or str or None
        A ``concurrent.futures.Executor`` (yours: cancelled-from but not shut down), or a registry kind
        (``"serial"``, ``"process"``, ``"ray"``, ``"dask"``; default ``"process"``) built with ``workers`` and
        ``address`` and shut down at the end.
    workers, address : optional
        See :func:`~.executors.make_executor`.
    env_kwargs : dict, optional
        Options for ``make_batch`` (part of every shard's identity).
    progress : bool
        Show a progress bar.
    episodes_per_agent : dict, optional
        Caps the episodes of slow agents (e.g. ``{"notears": 500}``).
    log : callable, optional
        Receives the messages for the user (why a shard on disk is recomputed); default: standard error.

    Returns
    -------
    pandas.DataFrame
        All episodes, in plan order (also written to ``out/episodes.csv``).

    Raises
    ------
    RunLocked
        Another run holds ``out``.
    ShardError
        A worker returned records that are not its shard's, or ran another package version.
    KeyboardInterrupt
        Ctrl-C: the executor is aborted; every shard completed before is on disk and verifies.

    Notes
    -----
    Shards already on disk are reused only if their manifest matches and their hash verifies, so an interrupted
    run resumes where it stopped and a damaged shard is recomputed (the reason goes to ``log``).
    """
    from tqdm.auto import tqdm

    from causalplay.core._version import __version__

    log = log or _stderr
    envs, agents, seeds = _unique("envs", envs), _unique("agents", agents), _unique("seeds", seeds)
    out = Path(out)
    shards = []
    for agent in agents:
        n = min(episodes, (episodes_per_agent or {}).get(agent, episodes))
        shards += plan_shards(envs, [agent], n, seeds, shard_size)
    folder = out / "shards"
    with RunLock(out):
        folder.mkdir(parents=True, exist_ok=True)
        for tmp in folder.glob(".*.tmp"):  # left by a killed run; nobody else writes here while we hold the lock
            tmp.unlink(missing_ok=True)
        todo = []
        for s in shards:
            why = check_shard(folder, s, env_kwargs, __version__)
            if why is not None:
                todo.append(s)
                if why != "missing":
                    log(f"recomputing shard {s.filename}: {why}")
        own = not isinstance(executor, Executor)
        if own:
            executor = make_executor(executor or "process", workers, address)
        total = sum(s.size for s in shards)
        bar = tqdm(total=total, initial=total - sum(s.size for s in todo), unit="ep", desc="episodes",
                   disable=not progress)
        slots = getattr(executor, "slots", None)
        limit = 2 * slots if slots else len(todo)  # lazy submission: Ctrl-C has little to cancel
        queue, pending = iter(todo), set()

        def harvest(done: set) -> None:
            for f in done:
                res = f.result()
                if res["causalplay"] != __version__:
                    raise ShardError(f"worker {res['host']} runs causalplay {res['causalplay']}, this driver "
                                     f"{__version__}: install the same version on every node")
                write_shard(folder, res["shard"], res["records"], columns=EPISODE_COLUMNS, env_kwargs=env_kwargs,
                            version=__version__, extra={"host": res["host"], "seconds": round(res["seconds"], 3)},
                            dialogues=res.get("dialogues"))
                bar.update(res["shard"].size)

        try:
            while True:
                while len(pending) < limit and (s := next(queue, None)) is not None:
                    pending.add(executor.submit(run_shard, s, env_kwargs))
                    done = {f for f in pending if f.done()}  # the serial executor finishes inside submit:
                    pending -= done                          # write before the next shard starts
                    harvest(done)
                if not pending:
                    break
                # Wake up now and then: Ctrl-C is raised in this (main) thread only when it runs Python code, and a
                # SIGINT the kernel hands to another thread (the pool's manager, a queue feeder, tqdm's monitor)
                # does not end a blocking wait; without a timeout the run carried on until a shard finished.
                done, pending = wait(pending, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                harvest(done)
        except BaseException:
            for f in pending:
                f.cancel()
            if own:
                abort(executor)
                own = False
            raise
        finally:
            bar.close()
            if own:
                executor.shutdown()
        df = pd.concat([read_shard(folder, s, env_kwargs, __version__) for s in shards], ignore_index=True)
        # Shards keep the spec (their manifests are checked against it); the table names rows by agent_label
        # (an rl:path=DIR row is named after the trained run).
        from causalplay.agents import agent_label

        df["agent"] = df["agent"].map({a: agent_label(a) for a in agents})
        atomic_write(out / "episodes.csv", df.to_csv(index=False).encode())
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
        if "llm_calls" in g and g["llm_calls"].notna().any():  # language-model agents (causalplay.agents.llm)
            calls = float(g["llm_calls"].sum())
            rows[-1].update({
                "parse_failure_rate": float(g["parse_failures"].sum()) / calls if calls else 0.0,
                "prompt_tokens_per_episode": float(g["prompt_tokens"].mean()),
                "completion_tokens_per_episode": float(g["completion_tokens"].mean()),
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
        for col in ("parse_failure_rate", "prompt_tokens_per_episode", "completion_tokens_per_episode"):
            if col in g and g[col].notna().any():  # language-model agents: means over seeds
                rec[col] = float(g[col].mean())
        out.append(rec)
    return pd.DataFrame(out)


def write_results(rows: list[dict], out: str | Path) -> Path:
    """Write ``rows`` (from :func:`summarise`) to ``out/results.json`` atomically; return the path."""
    path = Path(out) / "results.json"
    atomic_write(path, json.dumps(rows, indent=1).encode())
    return path
