"""ssup's cost per test task, before and after its rollout speed-ups, with the same outcomes.

Trains ``ssup`` once on fold 0's training tasks (within-template, tier ``--tier``, templates ``--templates``,
tasks ``0..--n-tasks-1``), then plays each test task alone (a batch of one) under each ``--modes`` entry from the same
agent seed, and prints per task: the attempt that solved it (0: unsolved), the valid attempts used, and CPU seconds
(``time.process_time``: other jobs sharing the core do not count). Modes: ``before`` (the simulator of git
revision ``--before-rev``, read with ``git show`` and put in place of the package's for the agent and the task;
where that revision cannot stop a rollout early, every candidate rollout runs until solved, asleep or the
horizon) and ``after`` (the package's simulator: its per-step bookkeeping and shape set-up through Chipmunk's C
calls, each body's local geometry computed once, noise normals drawn in blocks, and ssup's candidate rollouts
stopped once their outcome is decided). ``--profile`` writes cProfile stats of the last mode's plays. A JSON line
per task goes to ``--out``; with both modes the script checks that every task has the same outcome.

    python benchmarks/bench_ssup.py                       # templates 0 2 10, 10 tasks each
    python benchmarks/bench_ssup.py --profile runs/bench_ssup/ssup.prof --modes after
    python benchmarks/bench_ssup.py --tier 2B-v2 --templates --n-tasks 20 --tests 8 --before-rev 731e79b \
        --cache runs/physics_table_v2 --out runs/bench_ssup/2b_v2.jsonl
"""

from __future__ import annotations

import argparse
import cProfile
import inspect
import json
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import torch
from causalplay.envs.physics import PhysicsBatch
from causalplay.envs.physics_templates import get_task

from causalplay.agents.physics import SsupAgent
from causalplay.bench.physics import fold_tasks
from causalplay.bench.play import play

_OWN = {}


def _use_simulator(rev: str | None) -> bool:
    """Put git revision ``rev``'s ``simulate`` (None: the package's own) where the agent and the task call it;
    returns whether that simulator can stop a rollout once its outcome is decided."""
    import causalplay.envs.physics as env_physics

    import causalplay.agents.physics as agents_physics

    _OWN.setdefault("sim", agents_physics.simulate)
    if rev is None:
        agents_physics.simulate = env_physics.simulate = _OWN["sim"]
        return True
    src = subprocess.run(["git", "show", f"{rev}:envs/physics_sim.py"], capture_output=True, text=True, check=True)
    mod = sys.modules["physics_sim_before"] = types.ModuleType("physics_sim_before")  # dataclasses look it up
    exec(compile(src.stdout, f"{rev}:envs/physics_sim.py", "exec"), mod.__dict__)
    early = "stop_decided" in inspect.signature(mod.simulate).parameters

    def old(*args, stop_decided=False, **kw):  # a revision without the early stop runs every rollout to its end
        return mod.simulate(*args, stop_decided=stop_decided, **kw) if early else mod.simulate(*args, **kw)

    agents_physics.simulate = env_physics.simulate = old
    return early


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tier", default="B", help="the tier whose tasks are played (B, B-v2, 2B-v2, ...)")
    p.add_argument("--templates", type=int, nargs="*", default=[0, 2, 10],
                   help="templates (the flag alone: all 25)")
    p.add_argument("--n-tasks", type=int, default=10)
    p.add_argument("--tests", type=int, default=3, help="test tasks played (fold 0's, stable-hash order)")
    p.add_argument("--modes", nargs="+", default=["before", "after"], choices=["before", "after"])
    p.add_argument("--before-rev", default="492a136", help="git revision whose envs/physics_sim.py is 'before'")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", default="runs/physics")
    p.add_argument("--profile", default=None)
    p.add_argument("--out", default="runs/bench_ssup/results.jsonl")
    a = p.parse_args()
    # ssup's belief update runs torch on a handful of particles: one thread, as the benchmark runner's workers use;
    # with two, each tiny op waits on the other thread, and on a busy machine that wait (counted as CPU) dominated
    torch.set_num_threads(1)
    train, test = fold_tasks(a.tier, 0, "within", a.templates or None, a.n_tasks)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    res = {}
    for j, mode in enumerate(a.modes):
        early = _use_simulator(a.before_rev if mode == "before" else None)
        ag = SsupAgent(seed=a.seed, early_stop=early)
        ag.train(a.tier, train, "within", a.cache)
        prof = cProfile.Profile() if a.profile and j == len(a.modes) - 1 else None
        for key in test[: a.tests]:
            ag.reseed(a.seed)  # every task and mode from the same agent stream
            batch = PhysicsBatch([get_task(a.tier, key, a.cache)], a.tier, record=ag.record)
            c0 = time.process_time()
            if prof:
                prof.enable()
            rec = play(batch, ag)
            if prof:
                prof.disable()
            cpu = time.process_time() - c0
            row = {"mode": mode, "key": key, "solved_at": int(rec["solved_at"][0]),
                   "attempts": int(rec["attempts"][0]), "cpu_s": round(cpu, 3)}
            res[(mode, key)] = row
            print(json.dumps(row), flush=True)
            with open(a.out, "a") as fh:
                fh.write(json.dumps(row) + "\n")
        if prof:
            prof.dump_stats(a.profile)
    if len(a.modes) == 2:
        keys = test[: a.tests]
        same = all(res[("before", k)]["solved_at"] == res[("after", k)]["solved_at"]
                   and res[("before", k)]["attempts"] == res[("after", k)]["attempts"] for k in keys)
        tf, tq = (sum(res[(m, k)]["cpu_s"] for k in keys) for m in ("before", "after"))
        print(f"{len(keys)} tasks: before {tf:.1f} CPU s, after {tq:.1f} CPU s ({tf / max(tq, 1e-9):.2f}x); "
              f"same outcomes: {same}; solved_at {[res[('after', k)]['solved_at'] for k in keys]}")
        np.testing.assert_equal(same, True)


if __name__ == "__main__":
    main()
