"""`causalplay demo`: the main job on built-in defaults.

Runs the classic Blicket phenomena through the exact learner (backward blocking, indirect screening-off,
a conjunctive machine), prints the evidence, the learner's prior, its beliefs and the most informative next trial,
and writes them as JSON; then a small IVRE/EST benchmark (heuristic vs exact-EIG agents) with its table, JSON, CSV
and plots.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from rich.console import Console

from causalplay.learners.api import infer

SCENARIOS = {
    # Sobel et al. (2004): AB lights, then A alone lights -> B drops back towards its prior.
    "backward blocking": dict(history=[([0, 1], True), ([0], True)], n_objects=2, rules="disjunctive",
                              blicket_prior=1 / 3),
    # Sobel et al. (2004): AB lights, A alone does not -> B must be a blicket.
    "indirect screening-off": dict(history=[([0, 1], True), ([0], False)], n_objects=2, rules="disjunctive",
                                   blicket_prior=1 / 3),
    # Lucas & Griffiths (2010): evidence that only pairs light the machine favours the conjunctive rule.
    "conjunctive evidence": dict(history=[([0], False), ([1], False), ([0, 1], True)], n_objects=3),
}


def evidence(history: list) -> str:
    """``[([0, 1], True), ([0], False)]`` -> ``"AB lit; A dark"`` (objects lettered from A)."""
    name = lambda objs: "".join(chr(65 + i) for i in objs) or "(none)"  # noqa: E731
    return "; ".join(f"{name(objs)} {'lit' if lit else 'dark'}" for objs, lit in history)


def run_demo(out: str | Path = "runs/demo", bench_episodes: int = 2000) -> dict:
    console = Console()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    console.print("[bold]causalplay: an ideal learner on the Blicket detector[/bold] (objects A, B, C, ...)")
    for name, kw in SCENARIOS.items():
        t0 = time.perf_counter()
        b = infer(**kw)
        best = b.best_trial()
        eig = max(float(b.eig([list(best)])[0]), 0.0)  # rounding can leave -1e-17 when nothing is left to learn
        results[name] = {"history": kw["history"], "blicket_prob": b.blicket_prob.tolist(), "rule_prob": b.rule_prob,
                         "best_trial": list(best), "eig_bits": eig, "seconds": time.perf_counter() - t0}
        rules = kw.get("rules", "disjunctive or conjunctive (1/2 each)")
        console.print(f"\n[bold]{name}[/bold]: {evidence(kw['history'])}   "
                      f"(prior: each object a blicket with p = {kw.get('blicket_prior', 1 / 3):.2f}; {rules})")
        console.print("  P(blicket): " + "  ".join(f"{chr(65 + i)} {p:.3f}" for i, p in enumerate(b.blicket_prob))
                      + "    P(rule): " + ", ".join(f"{k} {v:.2f}" for k, v in b.rule_prob.items()))
        trial = evidence([(best, True)])[:-4]
        console.print(f"  most informative next trial: {trial} ({eig:.3f} bits)" if eig > 1e-9
                      else "  nothing left to learn: every trial carries 0 bits")
    (out / "results.json").write_text(json.dumps(results, indent=2))
    console.print(f"wrote {out / 'results.json'}")
    if bench_episodes > 0:
        from .bench import bench

        console.print(f"\nBenchmark: {bench_episodes} episodes per env and agent (the same episodes for every agent)")
        bench(env="causalplay/IVRE-v0,causalplay/EST-v1", agents="random,naive,search-naive,eig,planner",
              episodes=bench_episodes, seeds=1, out=str(out / "bench"), shard_size=500, executor="process",
              workers=0, notears_episodes=1, compare="eig,planner", wide=False)
    return results
