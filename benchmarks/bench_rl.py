"""PPO training throughput (env steps/s, collection + updates) on the native SB3 vector env vs SB3's
``DummyVecEnv`` over single gymnasium envs, same PPO settings, measured side by side in one run, per wall
second and per CPU second of this process (the latter is what a shared, loaded machine cannot distort much).

Usage: ``.venv/bin/python benchmarks/bench_rl.py [--steps 32768] [--envs 64] [--threads 1]
[--out runs/bench_rl.json]``; prints JSON and writes it to ``--out``. Both envs see the ``history``
observation through the same :class:`causalplay.rl.envs.RLVecEnv` wrapper.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch


def ppo_steps_per_s(vec: str, steps: int, envs: int) -> dict:
    import gymnasium as gym
    from causalplay.envs import make_batch
    from causalplay.envs.sb3 import make_sb3_vec
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    from causalplay.rl.envs import RLVecEnv
    from causalplay.rl.train import DEFAULT_HYPER

    env_id = "causalplay/IVRE-v0"
    if vec == "native":
        base = make_sb3_vec(env_id, envs, seed=0, obs_mode="history")
    else:
        base = DummyVecEnv([lambda: gym.make(env_id, obs_mode="history") for _ in range(envs)])
        base.seed(0)
    env = RLVecEnv(base, task=make_batch(env_id, 1, seed=0, obs_mode="history"))
    hp = DEFAULT_HYPER["ppo"]
    model = PPO("MlpPolicy", env, n_steps=hp["n_steps"], batch_size=hp["batch_size"], n_epochs=hp["n_epochs"],
                policy_kwargs={"net_arch": {"pi": hp["net_arch"], "vf": hp["net_arch"]},
                               "log_std_init": hp["log_std_init"]}, seed=0, device="cpu")
    t0, c0 = time.perf_counter(), time.process_time()
    model.learn(steps)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    # collection alone: the env stepped with random actions in the learner's space
    env.reset()
    t1, c1 = time.perf_counter(), time.process_time()
    n = max(1, 20_000 // envs)
    for _ in range(n):
        env.step(torch.rand(envs, env.action_space.shape[0]).numpy() * 2 - 1)
    env_only, env_cpu = n * envs / (time.perf_counter() - t1), n * envs / (time.process_time() - c1)
    return {"vec": vec, "envs": envs, "steps": int(model.num_timesteps),
            "train_steps_per_s": model.num_timesteps / wall, "train_steps_per_cpu_s": model.num_timesteps / cpu,
            "env_only_steps_per_s": env_only, "env_only_steps_per_cpu_s": env_cpu}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=32768)
    p.add_argument("--envs", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default="runs/bench_rl.json")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    res = {"threads": a.threads, "runs": [ppo_steps_per_s(v, a.steps, a.envs) for v in ("native", "dummy")]}
    text = json.dumps(res, indent=1)
    print(text)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
