"""Physics engine benchmark: pymunk 7.3 (Chipmunk2D) vs Box2D 2.3.10 on the same simulations.

``n`` scenes (default 1,000) are drawn from the task templates (raw draws, no solvability search) with one random
valid ball each; every scene runs for 3 s of simulated time at 60 Hz with the goal-contact check on every step,
stopping early once the goal holds or every body sleeps -- the same rules in both engines. Each engine runs
all scenes twice; "deterministic" means the final positions of every body matched bit for bit between the two
runs. Prints scenes per CPU second of this process (``time.process_time``, so other jobs sharing the core do not
count) and per wall second, and writes a JSON line to ``--out``.

    python benchmarks/bench_physics.py              # 1,000 scenes
    python benchmarks/bench_physics.py --n 200
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

import numpy as np
from causalplay.envs.physics_sim import DT, GOAL, HOLD, HORIZON, TARGET, add_balls, invalid, parts, simulate
from causalplay.envs.physics_templates import _T, to_balls


def scenes(n: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    rng, out = np.random.default_rng(seed), []
    while len(out) < n:
        scene = np.asarray(_T[len(out) % len(_T)][1](rng), dtype=np.float64)
        a = rng.random((64, 3))
        ok = np.flatnonzero(~invalid(scene, to_balls(a)))
        if len(ok):
            out.append((scene, to_balls(a[ok[0]])))
    return out


def run_pymunk(scene, balls):
    r = simulate(scene, balls, record=10**6)  # one frame at the start and the final one
    return r.solved, r.traj[-1].tobytes()


def run_box2d(scene, balls):
    import Box2D

    full = add_balls(scene, balls)
    world = Box2D.b2World(gravity=(0, -9.8))
    bodies = []
    for row in full:
        make = world.CreateDynamicBody if row[6] else world.CreateStaticBody
        body = make(position=(row[1], row[2]), angle=row[5])
        for _, kind, cx, cy, w, h, ang in parts(row[None]):
            if kind == 0:
                fx = body.CreateCircleFixture(radius=w, density=1.0, friction=0.5, restitution=0.2)
            else:
                lc = body.GetLocalPoint((cx, cy))
                fx = body.CreatePolygonFixture(box=(w / 2, h / 2, tuple(lc), ang - row[5]), density=1.0,
                                               friction=0.5, restitution=0.2)
            fx.userData = int(row[7])
        bodies.append(body)
    goal = bodies[int(np.flatnonzero(full[:, 7] == GOAL)[0])]
    n_steps, need, held, solved = int(round(HORIZON / DT)), int(round(HOLD / DT)), 0, False
    for step in range(1, n_steps + 1):
        world.Step(DT, 10, 10)
        touch = any(e.contact.touching and TARGET in (e.contact.fixtureA.userData, e.contact.fixtureB.userData)
                    for e in goal.contacts)
        held = held + 1 if touch else 0
        if held >= need:
            solved = True
            break
        if step % 6 == 0 and not any(b.awake for b in bodies if b.type == Box2D.b2_dynamicBody):
            solved = touch and held + (n_steps - step) >= need
            break
    final = np.array([(b.position.x, b.position.y, b.angle) for b in bodies])
    return solved, final.tobytes()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--out", default="runs/bench_physics.jsonl")
    args = ap.parse_args()
    data = scenes(args.n)
    res, solved = {}, {}
    for name, fn in (("pymunk", run_pymunk), ("box2d", run_box2d)):
        runs = []
        for _ in range(2):
            t0, c0 = time.perf_counter(), time.process_time()
            outs = [fn(s, b) for s, b in data]
            runs.append((time.process_time() - c0, outs, time.perf_counter() - t0))
        digest = [hashlib.sha256(b"".join(o[1] for o in outs)).hexdigest() for _, outs, _ in runs]
        res[name] = {"scenes_per_cpu_s": args.n / min(r[0] for r in runs),
                     "scenes_per_wall_s": args.n / min(r[2] for r in runs), "deterministic": digest[0] == digest[1],
                     "solved": sum(o[0] for o in runs[0][1])}
        solved[name] = np.array([o[0] for o in runs[0][1]])
        r = res[name]
        print(f"{name:7s} {r['scenes_per_cpu_s']:7.0f} scenes per CPU s ({r['scenes_per_wall_s']:5.0f} per wall s)"
              f"  deterministic={r['deterministic']}  solved {r['solved']}/{args.n}", flush=True)
    agree = float(np.mean(solved["pymunk"] == solved["box2d"]))
    print(f"same outcome in both engines: {agree:.3f}")
    with open(args.out, "a") as f:
        f.write(json.dumps({"n": args.n, **res, "agreement": float(agree)}) + "\n")


if __name__ == "__main__":
    main()
