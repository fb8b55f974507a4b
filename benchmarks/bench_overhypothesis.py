"""Speed of batched overhypothesis inference (issue 15): 10^4 sequences x 5 episodes.

Workload: ``B`` synthetic learners, each a sequence of ``K`` machines sharing a rule drawn per sequence
(disjunctive / conjunctive, noise 0.05), ``T`` random trials per machine (each object on with prob. 0.4),
blicket prior 1/3. Timed: ``causalplay.infer_overhypothesis(SequenceBatch, ...)`` end to end (per-episode exact
marginals for every component, then the Dirichlet-mixture DP or the grid posterior), plus the predictive rule
prior of every sequence. Cases:

* ``rules`` form (R = 2), N = 4 and N = 9;
* ``sigmoid`` form on a 21 x 21 grid (441 components), N = 4.

Each case is timed ``--repeats`` times after one warm-up call; the median is reported with the workload and
the machine's load average and the process CPU time (the shared CPU is busy: wall time depends on the load;
CPU time, summed over torch's threads, much less). Results are written to
``runs/bench_overhypothesis/results.json`` after every case.

Usage::

    python benchmarks/bench_overhypothesis.py [--sequences 10000] [--episodes 5] [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

from causalplay.core.overhypothesis import SequenceBatch, infer_overhypothesis


def synthetic(B: int, K: int, T: int, N: int, seed: int = 0, noise: float = 0.05) -> SequenceBatch:
    """``B`` sequences of ``K`` machines (rule per sequence), ``T`` random trials each, drawn in numpy."""
    rng = np.random.default_rng(seed)
    rule = rng.integers(0, 2, size=B)  # 0 disjunctive (>= 1 blicket), 1 conjunctive (>= 2)
    blickets = rng.random((B, K, N)) < 1 / 3
    trials = rng.random((B, K, T, N)) < 0.4
    k = (trials & blickets[:, :, None, :]).sum(-1)
    lit = k >= (1 + rule)[:, None, None]
    lit ^= rng.random(lit.shape) < noise
    return SequenceBatch(torch.from_numpy(trials).double(), torch.from_numpy(lit).double(),
                         torch.ones(B, K, T, dtype=torch.bool))


def time_case(seqs: SequenceBatch, repeats: int, **kw) -> dict:
    infer_overhypothesis(SequenceBatch(seqs.trials[:64], seqs.lit[:64], seqs.mask[:64]), **kw)  # warm-up
    times, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        post = infer_overhypothesis(seqs, **kw)
        rho = post.predictive_rule_probs()
        if seqs.trials.is_cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    med = float(np.median(times))
    B, K = seqs.batch_size, seqs.trials.shape[1]
    return {"median_s": med, "times_s": times, "cpu_s": cpu, "median_cpu_s": float(np.median(cpu)),
            "sequences_per_s": B / med, "episodes_per_s": B * K / med,
            "mean_predictive": np.asarray(rho).mean(0).round(4).tolist()[:4]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sequences", type=int, default=10_000)
    ap.add_argument("--episodes", type=int, default=5)
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default="runs/bench_overhypothesis/results.json")
    a = ap.parse_args()
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    results = {"machine": platform.platform(), "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
               "device": a.device, "sequences": a.sequences, "episodes": a.episodes, "trials": a.trials, "cases": {}}
    cases = [("rules N=4", 4, {"form": "rules"}), ("rules N=9", 9, {"form": "rules"}),
             ("sigmoid 21x21 N=4", 4, {"form": "sigmoid", "grid": 21})]
    for name, N, kw in cases:
        seqs = synthetic(a.sequences, a.episodes, a.trials, N).to(a.device)
        load = os.getloadavg()[0]
        r = time_case(seqs, a.repeats, noise=0.05, device=a.device, **kw)
        r["load_avg_1min"] = load
        results["cases"][name] = r
        out.write_text(json.dumps(results, indent=2))
        print(f"{name:>20}: {r['median_s']:.3f} s wall, {r['median_cpu_s']:.3f} s CPU for {a.sequences} x "
              f"{a.episodes} ({r['episodes_per_s']:,.0f} episodes/s wall; load {load:.1f})", flush=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
