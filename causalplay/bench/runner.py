"""The one runner: every task family's episodes in deterministic shards, verified resumable runs, any executor.

Workers run :func:`run_shard` and return records; :func:`run_benchmark` (the driver) validates and writes them
(:mod:`.shards`). Which family an env id belongs to -- and so how its episodes are played, recorded and scored --
is :func:`family_of`'s answer: the scorer of the :class:`~causalplay.envs.families.TaskFamily` that registers the
id (built-in, or a plug-in's, which every worker resolves the same way). Executors come from :mod:`.executors`.
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

import pandas as pd
from tqdm.auto import tqdm

from causalplay.agents import agent_label
from causalplay.core._futures import POLL_SECONDS
from causalplay.core._version import __version__
from causalplay.core.resources import single_thread
from causalplay.envs import families as _families

from .blicket import EPISODE_COLUMNS, check_pairing
from .executors import SerialExecutor, abort, make_executor
from .family import Family, scorer
from .shards import RunLock, RunLocked, Shard, ShardError, atomic_write, check_shard, read_shard, write_shard

__all__ = ["families", "family_of", "run_episodes", "run_shard", "run_benchmark", "plan_shards", "check_env",
           "check_pairing", "SerialExecutor", "make_executor", "summarise", "table", "write_results", "Shard",
           "ShardError", "RunLocked", "EPISODE_COLUMNS"]

def families() -> tuple[Family, ...]:
    """The scorer of every registered task family (installed plug-ins included), in the order their tables print."""
    return tuple(scorer(f) for f in _families.families())


def family_of(env_id: str) -> Family:
    """The scorer of the family that registers ``env_id`` (:func:`causalplay.envs.families.family_of`);
    ``ValueError`` naming the id and the known ones otherwise."""
    return scorer(_families.family_of(env_id))


def run_episodes(env_id: str, agent_name: str, n_episodes: int, seed: int, shard: int = 0, start: int = 0,
                 env_kwargs: dict | None = None, agent_kwargs: dict | None = None) -> pd.DataFrame:
    """Play ``n_episodes`` of ``env_id`` with one agent in this process; the family's records (Blicket ids: one
    row per episode, :data:`EPISODE_COLUMNS`).

    Episodes are drawn from ``numpy.random.default_rng([seed, shard])`` and the agent is seeded with
    ``seed * 100003 + shard``, so a shard is the same whoever runs it and whenever. Every agent meets the same
    episodes (and the same machine noise) for a given ``(seed, shard)``.
    """
    return family_of(env_id).episodes(env_id, agent_name, n_episodes, seed, shard, start, env_kwargs,
                                      agent_kwargs)


def check_env(env_id: str, env_kwargs: dict | None = None) -> Family:
    """The family of a benchmark env, after checking it can be benchmarked (``ValueError`` naming the id)."""
    fam = family_of(env_id)
    fam.check_env(env_id, env_kwargs)
    return fam


def run_shard(shard: Shard, env_kwargs: dict | None = None) -> dict:
    """The worker's task: play one shard and *return* its records (workers never write files).

    Returns
    -------
    dict
        ``shard``, ``records`` (DataFrame: the family's columns, then any per-episode columns the agent adds),
        ``dialogues`` (language-model agents' messages per episode, else ``None``), ``seconds`` (wall time),
        ``host``, ``pid`` and ``causalplay`` (the worker's package version; the driver refuses records from
        another version).
    """
    t0 = time.perf_counter()
    # one torch thread in every executor (the pools' workers have one already): a reduction's rounding can depend
    # on the thread count (MKL_CBWR=COMPATIBLE makes it so), and the table must not depend on the executor
    with single_thread(1):
        df = run_episodes(shard.env, shard.agent, shard.size, shard.seed, shard.index, shard.start,
                          {**(env_kwargs or {}), **dict(shard.variant)})
    dialogues = df.attrs.pop("dialogues", None)  # language-model agents: one message list per episode
    return {"shard": shard, "records": df, "dialogues": dialogues, "seconds": time.perf_counter() - t0,
            "host": socket.gethostname(), "pid": os.getpid(), "causalplay": __version__}


def plan_shards(envs: Sequence[str], agents: Sequence[str], episodes: int, seeds: Iterable[int],
                shard_size: int, variants: Sequence | None = None) -> list[Shard]:
    """Every shard of ``envs x variants x agents x seeds``, ``episodes`` each, cut into shards of ``shard_size``
    (each env's variants are its family's, e.g. the DAG worlds' split x linearity; ``variants`` keeps some)."""
    if episodes < 1 or shard_size < 1:
        raise ValueError(f"episodes and shard_size must be >= 1, got {episodes} and {shard_size}")
    out = []
    for env in envs:
        for variant in family_of(env).variants(env):
            if variants is not None and variant not in variants:
                continue
            for agent in agents:
                for seed in seeds:
                    for i, start in enumerate(range(0, episodes, shard_size)):
                        out.append(Shard(env, agent, seed, i, start, min(shard_size, episodes - start), variant))
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
    tqdm.write(msg, file=sys.stderr)


def run_benchmark(envs: Sequence[str], agents: Sequence[str] | dict[str, Sequence[str]], episodes: int,
                  seeds: Iterable[int], out: str | Path,
                  *, shard_size: int | None = None, executor: Executor | str | None = None, workers: int | None = None,
                  address: str | None = None, env_kwargs: dict | None = None, progress: bool = True,
                  episodes_per_agent: dict[str, int] | None = None,
                  log: Callable[[str], None] | None = None, variants: Sequence | None = None) -> pd.DataFrame:
    """Run every (env, agent, seed) shard by shard; workers return records, this process writes them.

    Parameters
    ----------
    envs : sequence of str
        Env ids, each listed once.
    agents : sequence of str, or dict env id -> sequence of str
        Agent specs, each listed once: the same for every env, or each env's own (envs of several families).
    episodes : int
        Episodes per env x agent x seed.
    seeds : iterable of int
        Seeds, each listed once.
    out : str or Path
        Output folder: ``shards/`` (one verified CSV + JSON manifest per shard, see :mod:`.shards`) and
        ``episodes.csv``. Locked for the duration of the run (:class:`~.shards.RunLock`).
    shard_size : int, optional
        Episodes per shard: the unit of parallel work and of resuming (default: the family's, e.g. 2000 for
        Blicket ids, 500 for the DAG worlds).
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
    variants : sequence of Variant, optional
        Run only these of each env's variants (e.g. only the linear DAG worlds); default all.

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
    log = log or _stderr
    envs, seeds = _unique("envs", envs), _unique("seeds", seeds)
    per_env = {e: _unique("agents", agents[e] if isinstance(agents, dict) else agents) for e in envs}
    out = Path(out)
    shards = []
    for agent in dict.fromkeys(a for e in envs for a in per_env[e]):
        n = min(episodes, (episodes_per_agent or {}).get(agent, episodes))
        for env in envs:
            if agent in per_env[env]:
                shards += plan_shards([env], [agent], n, seeds, shard_size or family_of(env).shard_size, variants)
    folder = out / "shards"
    with RunLock(out):
        todo = _shards_to_run(folder, shards, env_kwargs, log)
        own = not isinstance(executor, Executor)
        if own:
            executor = make_executor(executor or "process", workers, address)
        total = sum(s.size for s in shards)
        _execute(executor, own, todo, folder, env_kwargs, total=total, progress=progress)
        df = pd.concat([read_shard(folder, s, env_kwargs, __version__) for s in shards], ignore_index=True)
        # Shards keep the spec (their manifests are checked against it); the table names rows by agent_label
        # (an rl:path=DIR row is named after the trained run).
        labels = {(e, a): agent_label(a, family_of(e).name) for e in envs for a in per_env[e]}
        df["agent"] = [labels[e, a] for e, a in zip(df["env"], df["agent"], strict=True)]
        atomic_write(out / "episodes.csv", df.to_csv(index=False).encode())
    return df


def _shards_to_run(folder: Path, shards: list, env_kwargs: dict | None, log: Callable[[str], None]) -> list:
    """The shards not on disk or not verifying (the reason for each one recomputed goes to ``log``); the caller holds
    the run's lock."""
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
    return todo


def _execute(executor: Executor, own: bool, todo: list, folder: Path, env_kwargs: dict | None, *, total: int,
             progress: bool) -> None:
    """Run the shards ``todo`` on ``executor``, writing each as it comes back; ``own``: this run made the executor,
    so it shuts it down (or aborts it on an error or Ctrl-C)."""
    bar = tqdm(total=total, initial=total - sum(s.size for s in todo), unit="ep", desc="episodes",
               disable=not progress)
    slots = getattr(executor, "slots", None)
    limit = 2 * slots if slots else len(todo)  # lazy submission: Ctrl-C has little to cancel
    queue, pending, running = iter(todo), set(), {}

    def harvest(done: set) -> None:
        for f in done:
            res = f.result()
            if res["causalplay"] != __version__:
                raise ShardError(f"worker {res['host']} runs causalplay {res['causalplay']}, this driver "
                                 f"{__version__}: install the same version on every node")
            write_shard(folder, res["shard"], res["records"], columns=family_of(res["shard"].env).columns,
                        env_kwargs=env_kwargs, version=__version__, dialogues=res.get("dialogues"),
                        extra={"host": res["host"], "seconds": round(res["seconds"], 3)})
            bar.update(res["shard"].size)
            running.pop(f, None)

    try:
        while True:
            while len(pending) < limit and (s := next(queue, None)) is not None:
                f = executor.submit(run_shard, s, env_kwargs)
                pending.add(f)
                running[f] = (s, time.monotonic())
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
            # a slow agent (NOTEARS, a language model) can hold a shard for minutes: say what is running
            if running:
                s, t = min(running.values(), key=lambda v: v[1])
                bar.set_postfix_str(f"{len(running)} shard(s) running, oldest {s.agent} on {s.env.split('/')[-1]} "
                                    f"for {time.monotonic() - t:.0f} s", refresh=False)
            bar.refresh()
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


def summarise(df: pd.DataFrame) -> list[dict]:
    """The summary rows of a run's records, each env by its family's scorer."""
    rows = []
    for env, g in df.groupby("env", sort=False):
        rows += family_of(env).summarise(g)
    return rows


def table(rows: list[dict], level: float = 0.95) -> pd.DataFrame:
    """The users' table of summary rows (one family's rows; see :meth:`Family.table`)."""
    fams = {family_of(r["env"]).name: family_of(r["env"]) for r in rows}
    if len(fams) != 1:
        raise ValueError(f"table() takes one family's rows; got {sorted(fams)}")
    return next(iter(fams.values())).table(rows, level)


def write_results(rows: list[dict], out: str | Path) -> Path:
    """Write ``rows`` (from :func:`summarise`) to ``out/results.json`` atomically; return the path."""
    path = Path(out) / "results.json"
    atomic_write(path, json.dumps(rows, indent=1).encode())
    return path
