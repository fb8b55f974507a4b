"""RAND's AUCCESS on the physics puzzles, estimated from per-task success probabilities (far cheaper than playing
RAND's episodes, with the same expectation).

RAND tries uniform actions; invalid ones do not count, so its valid attempts on task ``t`` are independent draws
that each solve with probability ``p_t`` (the fraction of valid uniform actions that solve ``t``). Its expected
success curve is ``s_k = 1 - mean_t (1 - p_t)^k`` and its expected AUCCESS ``sum_k w_k s_k / sum_k w_k``
(``k = 1..100``, PHYRE's weights). Per task the script simulates ``--actions`` valid uniform actions (seeded by
the task key) and counts ``h`` successes; ``C(n - h, k) / C(n, k)`` (``n >= 100``) is an unbiased estimate of
``(1 - p_t)^k``, so the estimate of the expected AUCCESS is unbiased over the sampled tasks.

Under RAND the within- and cross-template protocols differ only in how tasks are grouped into folds, so both
have the all-task mean as their expectation; the 95% interval resamples templates, then tasks within each
(10,000 bootstrap draws), i.e. a new set of templates like ours. Rows are appended to ``--out`` as tasks finish
(a rerun resumes). The per-template lines give each template's mean success probability and mean expected
AUCCESS over its tasks.

    python analyses/physics_rand.py --tier B-v2 --tasks 20 --actions 300
    python analyses/physics_rand.py --tier 2B-v2 --tasks 12 --actions 300
    python analyses/physics_rand.py --tier B --tasks 8
    python analyses/physics_rand.py --tier 2B-v1 --tasks 8
"""

from __future__ import annotations

import argparse
import csv
import logging
import time
from pathlib import Path

import numpy as np
from causalplay.envs.physics_sim import invalid, simulate
from causalplay.envs.physics_templates import TEMPLATES, TIERS, get_task, to_balls
from scipy.special import gammaln

from causalplay.core.metrics import auccess_weights, stable_unit

PHYRE = {"B": (13.7, 13.0), "2B": (3.6, 2.6)}  # RAND AUCCESS, within / cross (Table 1a)
BUDGET = 100


def task_hits(tier: str, key: str, n: int, cache: str) -> tuple[int, int]:
    """``(successes, n)`` over ``n`` valid uniform actions on task ``key`` (seeded by tier and key)."""
    task = get_task(tier, key, cache)
    rng = np.random.default_rng(int(stable_unit(f"rand:{tier}:{key}") * 2**63))
    hits = done = 0
    while done < n:
        a = rng.random((256, 3 * TIERS[tier]))
        balls = to_balls(a)
        for b in balls[~invalid(task.scene, balls)][: n - done]:
            hits += simulate(task.scene, b, check=False).solved
            done += 1
    return hits, n


def expected_curve(hits: np.ndarray, n: np.ndarray, budget: int = BUDGET) -> np.ndarray:
    """``[tasks, budget]``: unbiased estimates of ``P(solved within k)`` per task, ``k = 1..budget``."""
    k = np.arange(1, budget + 1)
    f = (n - hits)[:, None]
    # C(f, k) / C(n, k) = prod_{j<k} (f - j) / (n - j); zero once k > f
    logc = gammaln(f + 1) - gammaln(f - k + 1) - gammaln(n[:, None] + 1) + gammaln(n[:, None] - k + 1)
    return 1.0 - np.where(k[None] <= f, np.exp(np.where(k[None] <= f, logc, 0.0)), 0.0)


def task_auccess(rows: list[dict]) -> np.ndarray:
    """Each row's (task's) unbiased estimate of RAND's expected AUCCESS (%)."""
    curves = expected_curve(np.array([r["hits"] for r in rows]), np.array([r["n"] for r in rows]))
    w = auccess_weights(BUDGET)
    return curves @ w / w.sum() * 100


def per_template(rows: list[dict]) -> dict[int, tuple[float, float, int]]:
    """Template index -> ``(mean success probability, mean expected AUCCESS %, tasks)`` over its rows."""
    tmpl = np.array([int(r["key"][:2]) for r in rows])
    p = np.array([r["hits"] / r["n"] for r in rows])
    auc = task_auccess(rows)
    return {int(t): (float(p[tmpl == t].mean()), float(auc[tmpl == t].mean()), int((tmpl == t).sum()))
            for t in np.unique(tmpl)}


def rand_auccess(rows: list[dict], boot: int = 10_000, seed: int = 0) -> tuple[float, float, float]:
    """Estimate and 95% bootstrap interval (templates, then tasks within each) of RAND's expected AUCCESS (%)."""
    tmpl = np.array([int(r["key"][:2]) for r in rows])
    per_task = task_auccess(rows)
    groups = [per_task[tmpl == t] for t in np.unique(tmpl)]
    rng = np.random.default_rng(seed)
    draws = np.empty(boot)
    for b in range(boot):
        pick = rng.integers(0, len(groups), len(groups))
        draws[b] = np.mean(np.concatenate([rng.choice(groups[g], len(groups[g])) for g in pick]))
    return float(per_task.mean()), float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tier", default="B", choices=list(TIERS))
    p.add_argument("--tasks", type=int, default=8, help="tasks 0..N-1 of every template")
    p.add_argument("--actions", type=int, default=100, help="valid uniform actions per task (>= 100)")
    p.add_argument("--cache", default="runs/physics")
    p.add_argument("--out", default=None, help="CSV (default runs/physics_rand/<tier>.csv)")
    a = p.parse_args()
    if a.actions < BUDGET:
        raise SystemExit(f"--actions must be >= {BUDGET}, got {a.actions}")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    out = Path(a.out or f"runs/physics_rand/{a.tier}.csv")
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = list(csv.DictReader(out.open())) if out.exists() else []
    rows = [{"key": r["key"], "hits": int(r["hits"]), "n": int(r["n"])} for r in rows if int(r["n"]) == a.actions]
    done = {r["key"] for r in rows}
    keys = [f"{t:02d}:{i:03d}" for i in range(a.tasks) for t in range(len(TEMPLATES))]
    t0 = time.perf_counter()
    with out.open("a", newline="") as fh:
        wr = csv.DictWriter(fh, ["key", "hits", "n"])
        if not done:
            fh.seek(0)
            fh.truncate()
            wr.writeheader()
        for key in (k for k in keys if k not in done):
            h, n = task_hits(a.tier, key, a.actions, a.cache)
            rows.append({"key": key, "hits": h, "n": n})
            wr.writerow(rows[-1])
            fh.flush()
            logging.info("%s %s: %d/%d  (%d/%d tasks, %.0f s)", a.tier, key, h, n, len(rows), len(keys),
                         time.perf_counter() - t0)
    rows = [r for r in rows if r["key"] in set(keys)]
    by_t = per_template(rows)
    for t, (pt, auc, k) in by_t.items():
        print(f"  {t:2d} {TEMPLATES[t]:18s} p = {pt:.4f}  AUCCESS {auc:5.1f}  ({k} tasks)")
    aucs = np.array([v[1] for v in by_t.values()])
    print(f"per template: AUCCESS median {np.median(aucs):.1f}, quartiles {np.percentile(aucs, 25):.1f}-"
          f"{np.percentile(aucs, 75):.1f}, range {aucs.min():.1f}-{aucs.max():.1f}; mean p "
          f"{np.mean([r['hits'] / r['n'] for r in rows]):.4f}")
    est, lo, hi = rand_auccess(rows)
    ref = PHYRE["2B" if a.tier.startswith("2B") else "B"]
    print(f"{a.tier}: RAND expected AUCCESS {est:.1f} % (95% CI {lo:.1f}-{hi:.1f}) over {len(rows)} tasks "
          f"({a.tasks} per template) x {a.actions} valid uniform actions; PHYRE within {ref[0]}, cross {ref[1]}: "
          f"{est - ref[0]:+.1f} / {est - ref[1]:+.1f} points")


if __name__ == "__main__":
    main()
