"""Which two-ball physics tasks need both balls: a dense single-ball search and the stored two-ball solution.

For each task (tasks ``0..N-1`` of every template of ``--tier``) the script simulates every valid single-ball
action of a grid (:func:`causalplay.envs.physics_templates.single_ball_search`: ``--nx x --ny`` ball centres
times ``--nr`` radii, 1,600 actions by default) until one solves the task, and the task's stored two-ball
solution. A task **needs two balls** when no grid action solves it and the stored solution does. Rows go to
``--out`` as tasks finish (a rerun resumes); the last line sums them up.

    python analyses/physics_two_ball.py --tier 2B-v1 --tasks 2
    python analyses/physics_two_ball.py --tier 2B --tasks 2      # the deprecated Physics2B-v0 world
"""

from __future__ import annotations

import argparse
import csv
import logging
import time
from pathlib import Path

from causalplay.envs.physics_sim import simulate
from causalplay.envs.physics_templates import TEMPLATES, TIERS, get_task, single_ball_search, to_balls

FIELDS = ["key", "template", "single_ball", "valid_tried", "solution_solves", "seconds"]


def check(tier: str, key: str, cache: str, nx: int, ny: int, nr: int) -> dict:
    """One task's row: whether a grid ball solves it (``single_ball``: the action, or empty), how many valid
    grid actions were simulated, and whether the stored solution solves it."""
    t0 = time.perf_counter()
    task = get_task(tier, key, cache)
    hit, tried = single_ball_search(task.scene, nx, ny, nr)
    solves = simulate(task.scene, to_balls(task.solution)).solved
    return {"key": key, "template": TEMPLATES[task.template],
            "single_ball": "" if hit is None else " ".join(f"{v:.3f}" for v in hit), "valid_tried": tried,
            "solution_solves": int(solves), "seconds": round(time.perf_counter() - t0, 2)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tier", default="2B-v1", choices=[t for t, m in TIERS.items() if m == 2])
    p.add_argument("--tasks", type=int, default=2, help="tasks 0..N-1 of every template")
    p.add_argument("--nx", type=int, default=20)
    p.add_argument("--ny", type=int, default=20)
    p.add_argument("--nr", type=int, default=4)
    p.add_argument("--cache", default="runs/physics")
    p.add_argument("--out", default=None, help="CSV (default runs/physics_two_ball/<tier>-<nx>x<ny>x<nr>.csv)")
    a = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    out = Path(a.out or f"runs/physics_two_ball/{a.tier}-{a.nx}x{a.ny}x{a.nr}.csv")
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = list(csv.DictReader(out.open())) if out.exists() else []
    done = {r["key"] for r in rows}
    keys = [f"{t:02d}:{i:03d}" for i in range(a.tasks) for t in range(len(TEMPLATES))]
    t0 = time.perf_counter()
    with out.open("a", newline="") as fh:
        wr = csv.DictWriter(fh, FIELDS)
        if not rows:
            wr.writeheader()
        for key in (k for k in keys if k not in done):
            rows.append(check(a.tier, key, a.cache, a.nx, a.ny, a.nr))
            wr.writerow(rows[-1])
            fh.flush()
            r = rows[-1]
            logging.info("%s %s %-18s one ball: %-17s (%s valid tried)  solution solves: %s  (%d/%d, %.0f s)",
                         a.tier, key, r["template"], r["single_ball"] or "none", r["valid_tried"],
                         r["solution_solves"], len(rows), len(keys), time.perf_counter() - t0)
    rows = [r for r in rows if r["key"] in set(keys)]
    one = [r["key"] for r in rows if r["single_ball"]]
    bad = [r["key"] for r in rows if not int(r["solution_solves"])]
    tmpl = sorted({r["template"] for r in rows if r["single_ball"]})
    print(f"{a.tier}: {len(rows)} tasks ({a.tasks} per template), grid {a.nx} x {a.ny} x {a.nr} = "
          f"{a.nx * a.ny * a.nr} single-ball actions: {len(one)} fall to one ball ({len(tmpl)} templates), "
          f"{len(rows) - len(one)} need two; stored solution fails on {len(bad)}"
          + (f"; one-ball templates: {', '.join(tmpl)}" if tmpl else ""))


if __name__ == "__main__":
    main()
