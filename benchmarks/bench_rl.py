"""RL training throughput of every preset row, side by side in one run: env steps per wall second and per CPU
second of this process (the latter is what a shared, loaded machine distorts least), SB3's ``learn`` with the
row's hyper-parameters on IVRE-v0 (collection + updates, no evaluation), plus the env alone stepped with random
actions through the same training wrapper.

Usage: ``.venv/bin/python benchmarks/bench_rl.py [--steps 20480] [--re-steps 3200] [--device cpu]
[--profile ROW] [--out runs/bench_rl.json]``; prints a table and writes JSON. ``--profile ddpg-ff`` runs that
row under cProfile instead and prints the top functions by cumulative time. ``--rows`` picks rows
(``{algo}-{ff|re}[@fast]``, e.g. ``ddpg-ff,ppo-ff@fast``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROWS = ("ddpg-ff", "td3-ff", "ppo-ff", "ddpg-re", "td3-re", "ppo-re",
        "ddpg-ff@fast", "td3-ff@fast", "ppo-ff@fast")


def model_for(row: str, device: str):
    from causalplay.rl.envs import make_train_env
    from causalplay.rl.train import TrainConfig, build_model

    name, _, preset = row.partition("@")
    algo, kind = name.split("-")
    cfg = TrainConfig(agent=algo, out=tempfile.mkdtemp(), recurrent=kind == "re", preset=preset or "paper",
                      device=device)
    env = make_train_env(cfg.env, cfg.hp["envs"], seed=0)
    if cfg.hp.get("normalize_reward"):
        from stable_baselines3.common.vec_env import VecNormalize

        env = VecNormalize(env, norm_obs=False, norm_reward=True, gamma=cfg.hp["gamma"])
    return build_model(cfg, env), cfg


def measure(row: str, steps: int, device: str) -> dict:
    model, cfg = model_for(row, device)
    model.learn(min(steps, 4 * cfg.hp["envs"] * cfg.hp.get("n_steps", cfg.hp.get("train_freq", 1))))  # warm up
    n0 = model.num_timesteps
    t0, c0 = time.perf_counter(), time.process_time()
    model.learn(steps, reset_num_timesteps=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    n = model.num_timesteps - n0
    env = model.get_env()
    env.reset()
    k = max(1, 20_000 // env.num_envs)
    act = np.random.default_rng(0).uniform(-1, 1, (k, env.num_envs, env.action_space.shape[0]))
    t1, c1 = time.perf_counter(), time.process_time()
    for a in act:
        env.step(a)
    return {"row": row, "preset": cfg.preset, "envs": env.num_envs, "steps": int(n), "device": device,
            "train_steps_per_s": n / wall, "train_steps_per_cpu_s": n / cpu,
            "env_only_steps_per_s": k * env.num_envs / (time.perf_counter() - t1),
            "env_only_steps_per_cpu_s": k * env.num_envs / (time.process_time() - c1),
            "cpu_hours_per_1e7": 1e7 / (n / cpu) / 3600}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=20_480, help="env steps measured per feed-forward row")
    p.add_argument("--re-steps", type=int, default=3_200, help="env steps measured per recurrent row")
    p.add_argument("--rows", default=",".join(ROWS))
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--profile", default="")
    p.add_argument("--out", default="runs/bench_rl.json")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    if a.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(measure, a.profile, a.re_steps if "-re" in a.profile else a.steps, a.device)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
        return
    res = [measure(r, a.re_steps if "-re" in r else a.steps, a.device) for r in a.rows.split(",")]
    print(f"{'row':14s} {'envs':>4s} {'steps':>6s} {'train/s':>8s} {'train/cpu s':>11s} {'env/cpu s':>9s} "
          f"{'CPU h per 1e7':>13s}")
    for r in res:
        print(f"{r['row']:14s} {r['envs']:4d} {r['steps']:6d} {r['train_steps_per_s']:8.0f} "
              f"{r['train_steps_per_cpu_s']:11.0f} {r['env_only_steps_per_cpu_s']:9.0f} {r['cpu_hours_per_1e7']:13.2f}")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"threads": a.threads, "torch": torch.__version__, "runs": res}, indent=1))


if __name__ == "__main__":
    main()
