"""Throughput of the symbolic envs and agents: env steps/s (batched engine, gymnasium single env, native
``make_vec`` vector env, measured side by side in one run) and agent episodes/s.

Env rates are given twice: per wall-clock second and per CPU second of this process (``time.process_time``,
one torch thread). On a machine shared with other jobs the wall-clock rate drops with the load, the CPU-time
rate much less, so ratios are taken on CPU time (both are printed).

Usage: ``.venv/bin/python benchmarks/bench_envs.py [--episodes 10000] [--threads 1] [--envs-only]
[--out runs/bench_envs.json]``; prints JSON and writes it to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from causalplay.envs import make_batch  # also registers the env ids

from causalplay.bench import run_episodes


def batched_env_steps(env_id: str, batch: int) -> float:
    env = make_batch(env_id, batch, seed=0)
    env.reset()
    gen = torch.Generator().manual_seed(0)
    a = torch.rand(batch, env.action_size, generator=gen, dtype=torch.float64) * 0.4 + 0.3  # never solves
    t0 = time.perf_counter()
    for _ in range(env.horizon):
        env.step(a)
    return batch * env.horizon / (time.perf_counter() - t0)


def _rates(n: int, t0: tuple[float, float]) -> tuple[float, float]:
    """``n`` per wall second and per CPU second since ``t0 = (perf_counter, process_time)``."""
    return n / (time.perf_counter() - t0[0]), n / (time.process_time() - t0[1])


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def gym_env_steps(env_id: str, n_steps: int = 500) -> tuple[float, float]:
    """(wall, CPU) steps/s of ``gymnasium.make(env_id)`` with random actions, resets included."""
    env = gym.make(env_id)
    acts = np.random.default_rng(0).random((64, env.action_space.shape[0])).astype(np.float32)
    env.reset(seed=0)
    t0 = _clock()
    for i in range(n_steps):
        _, _, term, trunc, _ = env.step(acts[i % 64])
        if term or trunc:
            env.reset()
    return _rates(n_steps, t0)


def vector_env_steps(env_id: str, num_envs: int = 256, n_steps: int = 200) -> tuple[float, float]:
    """Steps/s (sub-env steps) of ``gymnasium.make_vec(env_id, num_envs)`` -- the native vector env --
    with random actions, autoreset included."""
    env = gym.make_vec(env_id, num_envs=num_envs)
    env.reset(seed=0)
    acts = np.random.default_rng(0).random((16, num_envs, env.single_action_space.shape[0])).astype(np.float32)
    t0 = _clock()
    for i in range(n_steps):
        env.step(acts[i % 16])
    return _rates(num_envs * n_steps, t0)


def agent_episodes(env_id: str, agent: str, episodes: int) -> float:
    t0 = time.perf_counter()
    run_episodes(env_id, agent, episodes, seed=0)
    return episodes / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=10000)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--envs-only", action="store_true", help="skip the agents")
    p.add_argument("--out", default="runs/bench_envs.json")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    out = {"threads": args.threads}
    for env_id in ("causalplay/IVRE-v0", "causalplay/EST-v1"):
        single = gym_env_steps(env_id, 3000)
        vec = vector_env_steps(env_id, 256)
        out[env_id] = {
            "batched_steps_per_s": {str(b): round(batched_env_steps(env_id, b)) for b in (1, 100, args.episodes)},
            "gym_steps_per_s": {"wall": round(single[0]), "cpu": round(single[1])},
            "make_vec_256_steps_per_s": {"wall": round(vec[0]), "cpu": round(vec[1])},
            "make_vec_256_over_single": {"wall": round(vec[0] / single[0], 1), "cpu": round(vec[1] / single[1], 1)},
        }
        if not args.envs_only:
            out[env_id]["agent_episodes_per_s"] = {
                a: round(agent_episodes(env_id, a, args.episodes if "notears" not in a else 10), 2)
                for a in ("random", "search-naive", "eig", "planner", "notears")}
        print(json.dumps({env_id: out[env_id]}), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
