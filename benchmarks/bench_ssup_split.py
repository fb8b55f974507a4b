"""CPU hours of an agent over a tier's whole test split, replaying a physics_table run's plays.

For each (fold, setting) of the run's ``episodes.csv`` the agent's plays are played again exactly as the
benchmark runner's worker plays them (``PhysicsFamily.episodes``: trained on the fold's train + dev tasks, the
fold's test tasks as one batch, torch on one thread), in ``--workers`` processes; each variant's CPU seconds
(``time.process_time`` in its process: other jobs sharing the core do not count) and whether every play ended
at the same attempt as in the run go to ``--out``, one JSON line per variant as it finishes (a rerun skips the
variants already there). The last line printed is the total::

    python benchmarks/bench_ssup_split.py --run runs/physics_full_2b --env causalplay/Physics2B-v2 --workers 2 \\
        --out runs/bench_ssup/split_2b_v2.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import pandas as pd


def _replay(run: str, env_id: str, agent: str, fold: int, setting: str, n_tasks: int) -> dict:
    import torch
    from causalplay.envs.physics_sim import rollout_engine

    from causalplay.bench.physics import PhysicsFamily

    torch.set_num_threads(1)
    old = pd.read_csv(Path(run) / "episodes.csv")
    old = old[(old.agent == agent) & (old.env == env_id) & (old.fold == fold) & (old.setting == setting)]
    c0 = time.process_time()
    df = PhysicsFamily().episodes(env_id, agent, len(old), 0, env_kwargs={"cache": run, "n_tasks": n_tasks,
                                                                           "fold": fold, "setting": setting})
    cpu = time.process_time() - c0
    same = old.set_index("key").loc[df.key, "solved_at"].to_numpy() == df.solved_at.to_numpy()
    return {"env": env_id, "agent": agent, "fold": fold, "setting": setting, "plays": len(df), "cpu_s": round(cpu, 2),
            "train_s": round(float(df.train_seconds.iloc[0]), 2), "same_solved_at": int(same.sum()),
            "engine": rollout_engine()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", default="runs/physics_full_2b", help="a physics_table run folder (its episodes.csv)")
    p.add_argument("--env", default="causalplay/Physics2B-v2")
    p.add_argument("--agent", default="ssup")
    p.add_argument("--n-tasks", type=int, default=100, help="tasks per template of the run")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", default="runs/bench_ssup/split_2b_v2.jsonl")
    a = p.parse_args()
    eps = pd.read_csv(Path(a.run) / "episodes.csv", usecols=["env", "agent", "fold", "setting"])
    eps = eps[(eps.env == a.env) & (eps.agent == a.agent)]
    if eps.empty:
        raise SystemExit(f"{a.run}/episodes.csv has no plays of {a.agent!r} on {a.env!r}")
    variants = sorted(set(zip(eps.fold, eps.setting, strict=True)))
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {}
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            if (r["env"], r["agent"]) == (a.env, a.agent):
                done[(r["fold"], r["setting"])] = r
    todo = [v for v in variants if v not in done]
    print(f"{len(variants)} variants, {len(done)} already in {out}; replaying {len(todo)}", flush=True)
    with ProcessPoolExecutor(a.workers) as ex:
        futs = [ex.submit(_replay, a.run, a.env, a.agent, int(f), s, a.n_tasks) for f, s in todo]
        for fut in as_completed(futs):
            r = fut.result()
            done[(r["fold"], r["setting"])] = r
            print(json.dumps(r), flush=True)
            with open(out, "a") as fh:
                fh.write(json.dumps(r) + "\n")
    rows = [done[v] for v in variants]
    plays, same = sum(r["plays"] for r in rows), sum(r["same_solved_at"] for r in rows)
    cpu = sum(r["cpu_s"] for r in rows)
    print(f"{a.agent} on {a.env}: {plays} plays in {cpu:.0f} CPU s = {cpu / 3600:.2f} CPU hours "
          f"(training included: {sum(r['train_s'] for r in rows):.0f} s); {same} of {plays} plays end at the run's "
          f"attempt; engine {sorted({r['engine'] for r in rows})}")


if __name__ == "__main__":
    main()
