"""Single gymnasium env steps per CPU second, for an A/B comparison across commits.

It uses only the gymnasium API, so the same file runs in any checkout of causalplay::

    git worktree add ../causalplay-old <commit>      # plus a venv with that checkout installed
    python benchmarks/bench_single_env.py causalplay/IVRE-v0 causalplay/EST-v0          # in the old tree
    python benchmarks/bench_single_env.py causalplay/IVRE-v0 causalplay/EST-ACRE-v0     # in this tree

Alternate the two a few times: on a machine shared with other jobs the CPU-time rate (``time.process_time``,
one torch thread) is far steadier than the wall-clock rate. Prints the best of 5 repetitions of 1000 steps
(random actions from a fixed generator, resets included) as JSON.
"""

from __future__ import annotations

import json
import sys
import time

import gymnasium as gym
import numpy as np
import torch

import causalplay  # noqa: F401  (registers the ids)


def steps_per_cpu_second(env_id: str, n_steps: int = 1000, reps: int = 5) -> float:
    env = gym.make(env_id)
    acts = np.random.default_rng(0).random((64, env.action_space.shape[0])).astype(np.float32)
    env.reset(seed=0)
    best = 0.0
    for _ in range(reps):
        t0 = time.process_time()
        for i in range(n_steps):
            _, _, term, trunc, _ = env.step(acts[i % 64])
            if term or trunc:
                env.reset()
        best = max(best, n_steps / (time.process_time() - t0))
    return best


if __name__ == "__main__":
    torch.set_num_threads(1)
    print(json.dumps({e: round(steps_per_cpu_second(e)) for e in (sys.argv[1:] or ["causalplay/IVRE-v0"])}))
