"""Speed of design utility (adaptive design optimisation): the mutual information between the model identity and a
participant's first K choices, for many candidate designs at once.

Workload: ``--models`` (default ``positive,random,eig_sweep,eig_sweep_single``) each fitted by SVI to the shipped
Nexiom people (hierarchical, ``--svi-steps`` steps; the fits are set-up, not timed); ``--designs`` candidate designs
drawn (seeded) from :func:`causalplay.design.design_space` (4 objects, both rules, 2 blickets, up to 2 demonstrations,
told the count or not: 5,424 designs); ``--draws`` new participants per model. Timed, one process, one torch thread:

* ``K = 1``: ``utility(fits, designs, choices=1, draws=...)`` -- the exact sum over the 17 first choices;
* ``K = 2, 3``: the exact sum over every sequence (``method="exact"``, 16 and 256 tree rows per design) and nested
  Monte Carlo (``method="mc"``, ``--samples`` sequences per model and design), on ``--designs-k2`` / ``--designs-k3``
  designs (the per-design cost grows with K); seconds per 1,000 designs are reported beside the measured time.

Each case is timed ``--repeats`` times; the median is reported with the CPU time and the load average (the machine
may be shared). Results go to ``runs/bench_design/results.json`` after every case.

Usage::

    python benchmarks/bench_design.py [--designs 1000] [--draws 200] [--repeats 3] [--cases K1_exact]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import torch

import causalplay
from causalplay.data import load_nexiom
from causalplay.design import design_space, utility
from causalplay.fitting import SVIOptions


def timed(fn, repeats: int):
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return out, statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="positive,random,eig_sweep,eig_sweep_single")
    ap.add_argument("--designs", type=int, default=1000)
    ap.add_argument("--designs-k2", type=int, default=1000)
    ap.add_argument("--designs-k3", type=int, default=100)
    ap.add_argument("--designs-mc", type=int, default=20)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--svi-steps", type=int, default=1500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cases", default="K1_exact,K2_exact,K3_exact,K2_mc,K3_mc", help="which cases to time")
    ap.add_argument("--out", default="runs/bench_design/results.json")
    a = ap.parse_args()
    torch.set_num_threads(1)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    people = load_nexiom()
    svi = SVIOptions(steps=a.svi_steps, progress=False)
    fits = {m: causalplay.fit(people, m, method="svi", svi=svi, seed=a.seed) for m in a.models.split(",")}
    space = design_space(4, demonstrations=2, told=(False, True))
    rng = np.random.default_rng(a.seed)
    pick = rng.permutation(len(space))
    res = {"machine": platform.platform(), "cpus": os.cpu_count(), "torch": torch.__version__, "torch_threads": 1,
           "models": list(fits), "draws": a.draws, "space": len(space), "cases": {}}
    cases = [("K1_exact", 1, "exact", a.designs), ("K2_exact", 2, "exact", a.designs_k2),
             ("K3_exact", 3, "exact", a.designs_k3), ("K2_mc", 2, "mc", a.designs_mc),
             ("K3_mc", 3, "mc", a.designs_mc)]
    for name, K, method, n in [c for c in cases if c[0] in a.cases.split(",")]:
        designs = [space[i] for i in pick[:n]]
        load = os.getloadavg()[0]
        u, wall, cpu = timed(lambda d=designs, K=K, m=method: utility(fits, d, choices=K, draws=a.draws, method=m,
                                                                      samples=a.samples, seed=a.seed), a.repeats)
        best = u.best()
        row = {"K": K, "method": method, "designs": n, "wall_s": wall, "cpu_s": cpu, "s_per_1000_designs":
               1000 * wall / n, "load_average_before": load, "best_nats": float(u.nats[best]),
               "best_design": str(designs[best]), "median_nats": float(u.nats.median()),
               "median_se": float(u.se.median()), **({"samples": a.samples} if method == "mc" else {})}
        res["cases"][name] = row
        out.write_text(json.dumps(res, indent=2))
        print(f"{name:>9}: {n:5d} designs x {a.draws} draws x {len(fits)} models: {wall:7.2f} s wall "
              f"({row['s_per_1000_designs']:7.1f} s per 1000 designs), {cpu:7.2f} s CPU, load {load:.1f}; "
              f"best {row['best_nats']:.3f} nats, median {row['median_nats']:.3f} (SE {row['median_se']:.3f})",
              flush=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
