"""Train PHYRE's DQN architecture (ResNet-18 fused with the action, :mod:`causalplay.agents.physics_resnet`) on
simulated attempts and write its learning curve: AUCCESS of its ranking of the fixed action set on held-out tasks
(the last ``--held-out`` tasks of each template's pool, task 5 by default: within-template) against training
attempts. ``--n-actions 10000 --pool all`` trains on PHYRE's data (every task of every template, its 10,000
actions; the outcomes are simulated once and cached, about 40 CPU minutes a tier).

    python analyses/physics_dqn_resnet.py --templates 0 2 10 --steps 60 --eval-every 20      # minutes on a CPU
    python analyses/physics_dqn_resnet.py --tier B-v2 --n-actions 10000 --pool all --held-out 2 --steps 30000 \
        --batch 64 --eval-every 5000 --threads 1 --cache runs/physics_full_b --out runs/physics_dqn_resnet_b_v2
        # docs/physics.md's run: about 45 minutes on one core
    python analyses/physics_dqn_resnet.py --device cuda --res 256 --width 64 --steps 20000 --batch 64   # PHYRE size

Writes ``<out>/curve.csv`` (batches, attempts, loss, auccess), ``config.json`` and ``curve_resnet_<tier>.png``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from causalplay.envs.physics_templates import N_TASKS, TEMPLATES, TIERS, action_set, task_keys

from causalplay.agents.physics import POOL, outcomes
from causalplay.agents.physics_resnet import solved_at_of_ranking, train_curve
from causalplay.bench.plots import figure_axes, save_png
from causalplay.core.metrics import auccess


def mem_auccess(o: np.ndarray, templates: np.ndarray, held: np.ndarray) -> float:
    """AUCCESS % on the held-out tasks of MEM's within-template ranking (``MemAgent``: actions by their success
    rate on the template's training tasks, stable order), from the outcome table ``o [tasks, actions]``."""
    solved = []
    for t in np.flatnonzero(held):
        train = ~held & (templates == templates[t])
        order = np.argsort(-(o[train] == 1).mean(0), kind="stable")
        solved.append(solved_at_of_ranking(order, o[t]))
    return 100 * auccess(np.array(solved), 0, 100)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tier", default="B", choices=list(TIERS))
    p.add_argument("--templates", type=int, nargs="+", default=list(range(len(TEMPLATES))))
    p.add_argument("--n-actions", type=int, default=500, help="the first n of the tier's fixed actions (PHYRE: 10000)")
    p.add_argument("--pool", default=str(POOL), help="tasks per template learned from (task index < pool), or 'all'")
    p.add_argument("--held-out", type=int, default=1, help="the last n tasks of each template's pool are held out")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--res", type=int, default=64)
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--cache", default="runs/physics")
    p.add_argument("--out", default="runs/physics_dqn_resnet")
    a = p.parse_args()
    n_pool = N_TASKS if a.pool == "all" else int(a.pool)
    if not 1 <= a.held_out < n_pool:
        raise SystemExit(f"--held-out {a.held_out}: expected 1 .. {n_pool - 1} (tasks per template: {n_pool})")
    if a.threads:
        torch.set_num_threads(a.threads)
    t0 = time.perf_counter()
    pool, o = outcomes(a.tier, task_keys(a.templates, n_pool), a.cache, n_actions=a.n_actions, pool=None)
    held = np.array([int(t.key.split(":")[1]) >= n_pool - a.held_out for t in pool])
    print(f"{len(pool)} tasks ({held.sum()} held out) x {o.shape[1]} actions ready ({time.perf_counter() - t0:.0f} s)")
    train_curve([t.scene for t in pool], o, action_set(a.tier, a.n_actions), held, a.out, TIERS[a.tier], a.seed,
                a.steps, a.batch, a.res, a.width, a.lr, a.eval_every, a.device)
    curve = pd.read_csv(Path(a.out) / "curve.csv")
    print(curve.to_string(index=False))
    mem = mem_auccess(o, np.array([t.template for t in pool]), held)
    print(f"MEM's ranking (per-template success rates on the same training tasks) on the held-out tasks: "
          f"AUCCESS {mem:.3f}")
    (Path(a.out) / "mem.txt").write_text(f"{mem:.3f}\n")
    fig, ax = figure_axes(1, 1, figsize=(4.5, 3.2))
    ax.plot(curve.attempts, curve.auccess, marker="o", label="ResNet-18 DQN")
    ax.axhline(mem, color="gray", ls="--", label="MEM, same data")
    ax.legend(loc="lower right")
    ax.set(xlabel="training attempts (task, action outcomes seen)", ylabel="held-out AUCCESS %",
           title=f"ResNet-18 DQN, tier {a.tier}, {a.res}x{a.res}, width {a.width}")
    png = save_png(fig, a.out, "curve", f"resnet_{a.tier}")
    print(f"done in {time.perf_counter() - t0:.0f} s; {a.out}/curve.csv, {png}")


if __name__ == "__main__":
    main()
