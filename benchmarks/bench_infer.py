"""Speed of exact inference + exact EIG (issue 2's benchmark). Prints a table and writes JSON.

Workload (the agents' hot path): N = 9 objects, both rules, E episodes x 10 observations; after every
observation, one Bayesian update of every episode and the joint EIG of all 511 non-empty trials.
"Episode-steps per second" = E * 10 / wall time.

Reference points on comparable slices, same process:
* Pyro ``TraceEnum_ELBO.compute_marginals`` (exact posterior by Pyro's enumeration) on 100 episodes, called
  after each of the 10 observations; compared with our posterior-only throughput for the same outputs, both
  recomputed from scratch after each observation (same algorithm) and incrementally (``observe``, as agents do).
* ``pyro.contrib.oed.eig.nmc_eig`` (N=100, M=10, Pyro's defaults) on one episode, all 511 designs; compared
  with our per-episode-step cost (posterior + exact EIG).

Also N = 12 and N = 16 with restricted candidate trials (all trials of at most 3 resp. 2 objects).

Usage::

    python benchmarks/bench_infer.py                   # CPU (and CUDA when available)
    python benchmarks/bench_infer.py --episodes 100000 --device cuda
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import platform
import time
from pathlib import Path

import numpy as np
import pyro
import torch
from causalplay.models.blicket import BlicketWorld, blicket_model
from pyro.contrib.oed.eig import nmc_eig
from pyro.infer import TraceEnum_ELBO

from causalplay.api import make_spec
from causalplay.eig import eig_bits
from causalplay.exact import log_posterior, observe
from causalplay.history import HistoryBatch, all_trials
from causalplay.spec import HypothesisSpace

RULES = ("disjunctive", "conjunctive")


def make_episodes(space: HypothesisSpace, n_episodes: int, n_steps: int, seed: int):
    """Random true hypotheses from the prior and random trials (each object on with prob 0.4)."""
    g = torch.Generator().manual_seed(seed)
    h = torch.multinomial(space.log_prior.exp().cpu().float(), n_episodes, replacement=True, generator=g)
    sets = space.sets.cpu()[h % space.n_sets]
    rule = h // space.n_sets
    trials = (torch.rand(n_episodes, n_steps, space.n_objects, generator=g) < 0.4).to(space.dtype)
    trials[trials.sum(-1) == 0, 0] = 1  # no empty trials
    k = torch.einsum("btn,bn->bt", trials, sets.to(trials.dtype)).long()
    lit = torch.bernoulli(space.lit_table.cpu()[rule[:, None], k], generator=g)
    return trials.to(space.device), lit.to(space.device)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def run_agents_loop(space, trials, lit, candidates, chunk: int) -> float:
    """Update + EIG for every episode after every observation; returns seconds."""
    B, T, _ = trials.shape
    sync(space.device)
    t0 = time.perf_counter()
    P = space.predictive(candidates)  # cached (and 512-padded) once per candidate set, as agents get it
    for start in range(0, B, chunk):
        sl = slice(start, start + chunk)
        log_w = space.log_prior.expand(trials[sl].shape[0], -1)
        for t in range(T):
            log_w = observe(space, log_w, trials[sl, t], lit[sl, t], check=False)
            eig = eig_bits(space, log_w, candidates, "joint", lit_prob=P)
            eig.argmax(-1)  # an agent's choice; forces the work on lazy backends
    sync(space.device)
    return time.perf_counter() - t0


def bench_main(n: int, n_episodes: int, device: str, dtype: torch.dtype, noise: float, chunk: int,
               candidates: np.ndarray | None = None, seed: int = 0) -> dict:
    spec = make_spec(n, RULES, blicket_prior=1 / 3, noise=noise)
    space = HypothesisSpace.build(spec, device, dtype)
    trials, lit = make_episodes(space, n_episodes, 10, seed)
    cand = torch.as_tensor(all_trials(n) if candidates is None else candidates, device=space.device).to(dtype)
    run_agents_loop(space, trials[: min(chunk, n_episodes)], lit[: min(chunk, n_episodes)], cand, chunk)  # warm-up
    secs = run_agents_loop(space, trials, lit, cand, chunk)
    return dict(n_objects=n, episodes=n_episodes, steps=10, hypotheses=space.n_hypotheses, candidates=len(cand),
                device=str(space.device), dtype=str(dtype).replace("torch.", ""), noise=noise, seconds=secs,
                episode_steps_per_s=n_episodes * 10 / secs)


def bench_posterior_only(n_episodes: int, dtype: torch.dtype) -> float:
    """Our exact posterior recomputed from scratch after each of 10 observations (as compute_marginals must)."""
    spec = make_spec(9, RULES, blicket_prior=1 / 3)
    space = HypothesisSpace.build(spec, "cpu", dtype)
    trials, lit = make_episodes(space, n_episodes, 10, 1)
    t0 = time.perf_counter()
    for t in range(1, 11):
        mask = torch.zeros(n_episodes, 10, dtype=torch.bool)
        mask[:, :t] = True
        log_posterior(space, HistoryBatch(trials, lit, mask))
    return n_episodes * 10 / (time.perf_counter() - t0)


def bench_posterior_incremental(n_episodes: int, dtype: torch.dtype) -> float:
    """The same outputs (posterior after each of 10 observations) the way agents get them: ``observe``."""
    spec = make_spec(9, RULES, blicket_prior=1 / 3)
    space = HypothesisSpace.build(spec, "cpu", dtype)
    trials, lit = make_episodes(space, n_episodes, 10, 1)
    t0 = time.perf_counter()
    log_w = space.log_prior.expand(n_episodes, -1)
    for t in range(10):
        log_w = observe(space, log_w, trials[:, t], lit[:, t])
    return n_episodes * 10 / (time.perf_counter() - t0)


def bench_pyro_marginals(n_episodes: int) -> float:
    spec = make_spec(9, RULES, blicket_prior=1 / 3)
    space = HypothesisSpace.build(spec, "cpu", torch.float64)
    trials, lit = make_episodes(space, n_episodes, 10, 1)
    elbo = TraceEnum_ELBO(max_plate_nesting=2)
    t0 = time.perf_counter()
    for t in range(1, 11):
        mask = torch.zeros(n_episodes, 10, dtype=torch.bool)
        mask[:, :t] = True
        elbo.compute_marginals(blicket_model, lambda *a, **k: None, trials, lit, mask, spec=spec)
    return n_episodes * 10 / (time.perf_counter() - t0)


def bench_nmc(n_repeats: int = 1) -> float:
    """Seconds of one episode-step with Pyro's NMC EIG (N=100, M=10) over all 511 designs at N=9."""
    spec = make_spec(9, RULES, blicket_prior=1 / 3)
    space = HypothesisSpace.build(spec, "cpu", torch.float64)
    trials, lit = make_episodes(space, 1, 3, 2)
    hist = HistoryBatch(trials, lit, torch.ones(1, 3, dtype=torch.bool))
    world = BlicketWorld(spec, hist)
    design = torch.as_tensor(all_trials(9)).double()
    pyro.set_rng_seed(0)
    t0 = time.perf_counter()
    for _ in range(n_repeats):
        nmc_eig(world, design, ["lit"], ["blickets", "rule"], N=100, M=10)
    return (time.perf_counter() - t0) / n_repeats


def small_trials(n: int, max_size: int) -> np.ndarray:
    rows = []
    for k in range(1, max_size + 1):
        for combo in itertools.combinations(range(n), k):
            v = np.zeros(n, dtype=bool)
            v[list(combo)] = True
            rows.append(v)
    return np.stack(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=10_000)
    ap.add_argument("--device", default="all", help="cpu, cuda, or all (cpu + cuda when available)")
    ap.add_argument("--chunk", type=int, default=2048, help="episodes per chunk on CPU")
    ap.add_argument("--out", default="runs/bench_infer/results.json")
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    args = ap.parse_args()
    scale = 0.02 if args.quick else 1.0
    E = max(64, int(args.episodes * scale))
    devices = ["cpu"] if args.device in ("all", "cpu") else []
    if args.device in ("all", "cuda") and torch.cuda.is_available():
        devices.append("cuda")
    results: dict = {"machine": platform.platform(), "torch": torch.__version__, "threads": torch.get_num_threads(),
                     "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None, "rows": []}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def emit(row: dict) -> None:
        results["rows"].append(row)
        out.write_text(json.dumps(results, indent=2))  # incremental: an interrupted run keeps what it measured
        eps = row.get("episode_steps_per_s")
        print(f"{row['name']:<44} " + (f"{eps:>14,.0f} episode-steps/s" if eps else "")
              + (f"  ({row['seconds']:.2f} s)" if "seconds" in row else ""), flush=True)

    for dev in devices:
        chunk = args.chunk if dev == "cpu" else max(args.chunk, 65536)
        E_dev = E if dev == "cpu" else E * 10
        for dtype in (torch.float32, torch.float64):
            for noise in (0.0, 0.05):
                r = bench_main(9, E_dev, dev, dtype, noise, chunk)
                emit({"name": f"N=9 {dev} {r['dtype']} noise={noise}", **r})
        r = bench_main(12, max(64, E_dev // 5), dev, torch.float32, 0.0, max(256, chunk // 8), small_trials(12, 3))
        emit({"name": f"N=12 {dev} float32 (trials <= 3 objects)", **r})
        r = bench_main(16, max(32, E_dev // 50), dev, torch.float32, 0.0, 64, small_trials(16, 2))
        emit({"name": f"N=16 {dev} float32 (trials <= 2 objects)", **r})

    ours_post = bench_posterior_only(E, torch.float64)
    emit({"name": "ours: posterior from scratch, N=9 float64", "episode_steps_per_s": ours_post})
    ours_inc = bench_posterior_incremental(E, torch.float64)
    emit({"name": "ours: posterior incremental, N=9 float64", "episode_steps_per_s": ours_inc})
    pyro_post = bench_pyro_marginals(100 if not args.quick else 20)
    emit({"name": "pyro compute_marginals, N=9 (100 episodes)", "episode_steps_per_s": pyro_post})
    nmc_s = bench_nmc()
    emit({"name": "pyro nmc_eig N=100 M=10, 511 designs", "seconds": nmc_s, "episode_steps_per_s": 1 / nmc_s})
    cpu64 = next(r for r in results["rows"] if r["name"] == "N=9 cpu float64 noise=0.0")
    cpu32 = next(r for r in results["rows"] if r["name"] == "N=9 cpu float32 noise=0.0")
    ratios = {
        "posterior_vs_compute_marginals": ours_post / pyro_post,
        "incremental_posterior_vs_compute_marginals": ours_inc / pyro_post,
        "posterior+eig_float64_vs_nmc_eig": cpu64["episode_steps_per_s"] * nmc_s,
        "posterior+eig_float32_vs_nmc_eig": cpu32["episode_steps_per_s"] * nmc_s,
    }
    results["ratios"] = ratios
    goals = {"cpu_episode_steps_per_s >= 2e4": cpu32["episode_steps_per_s"] >= 2e4,
             ">= 10x compute_marginals": ratios["posterior_vs_compute_marginals"] >= 10,
             ">= 100x nmc_eig": ratios["posterior+eig_float64_vs_nmc_eig"] >= 100}
    cuda_rows = [r for r in results["rows"] if r.get("device", "").startswith("cuda") and r["n_objects"] == 9]
    if cuda_rows:
        goals["cuda_episode_steps_per_s >= 5e6"] = max(r["episode_steps_per_s"] for r in cuda_rows) >= 5e6
    results["goals_met"] = goals
    out.write_text(json.dumps(results, indent=2))
    for k, v in ratios.items():
        print(f"ratio {k:<40} {v:>10,.1f}x")
    for k, v in goals.items():
        print(f"goal  {k:<40} {'met' if v else 'NOT met'}")
    print(f"wrote {out}")
    assert math.isfinite(sum(ratios.values()))


if __name__ == "__main__":
    main()
