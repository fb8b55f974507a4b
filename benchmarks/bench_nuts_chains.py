"""Multi-chain NUTS: causalplay's pool (``causalplay.core.pyro.run_nuts``) against Pyro's ``MCMC(num_chains=...)``.

Workload (``--model``): ``eight_schools``, the eight-schools model (non-centred; 10 unconstrained dimensions, a
funnel: the trees' depth varies with the draws, so variants whose draws differ do different work), or ``gauss``,
10 independent normals with scales 1 to 10 (trees of about the same depth in every chain: the variants do about
the same work whatever their draws); a plain-torch potential, ``--chains`` chains x (``--warmup`` + ``--draws``),
every chain started at its own point, one torch thread per chain. Run, in
turn, ``--rounds`` times each (interleaved, so every variant sees the same load):

* ``pool``: ``run_nuts`` with ``workers`` = ``--workers`` processes (forked), each chain seeded ``seed + 1000 c``;
* ``pool_1``: ``run_nuts`` with ``workers=1`` (the chains one after another in this process);
* ``pyro``: ``MCMC(NUTS(potential_fn=...), num_chains=chains, mp_context="spawn", initial_params=...)`` after
  ``pyro.set_rng_seed(seed)``, as Pyro runs it here: in parallel only where ``chains <= cpu_count() - 1``,
  otherwise one after another in this process (with a warning);
* ``pyro_parallel``: the same with Pyro told it has ``chains + 1`` CPUs (its worker processes, whatever the cores).

Reported per variant: wall seconds (median and every round), whether two runs at one seed give the same draws,
and whether the draws equal those of the other variants of the same driver (``pool`` vs ``pool_1``: the number of
worker processes; ``pyro`` vs ``pyro_parallel``: whether Pyro ran the chains in parallel). Per-chain progress is a
property of the code, listed as read from it. The load average before and after is recorded (the machine may be
shared). Results go to ``runs/bench_nuts_chains/results.json``.

Usage::

    python benchmarks/bench_nuts_chains.py [--model eight_schools] [--chains 4] [--warmup 300] [--draws 300]
        [--rounds 2] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
import warnings
from functools import partial
from pathlib import Path

import pyro
import pyro.infer.mcmc.api as pyro_mcmc_api
import torch
from pyro.infer import MCMC, NUTS

from causalplay.core.pyro import NUTSOptions, run_nuts

Y = torch.tensor([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0], dtype=torch.float64)
SIGMA = torch.tensor([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0], dtype=torch.float64)


def potential(q: dict) -> torch.Tensor:
    """Eight schools, non-centred: mu ~ N(0, 5), tau ~ HalfCauchy(5) (sampled as log tau), eta ~ N(0, 1),
    y ~ N(mu + tau eta, sigma). Minus the log density up to a constant, Jacobian of log tau included."""
    mu, log_tau, eta = q["mu"], q["log_tau"], q["eta"]
    tau = log_tau.exp()
    theta = mu + tau * eta
    lp = (-0.5 * (mu / 5) ** 2 - torch.log1p((tau / 5) ** 2) + log_tau - 0.5 * (eta ** 2).sum()
          - 0.5 * (((Y - theta) / SIGMA) ** 2).sum())
    return -lp


SCALES = torch.logspace(0, 1, 10, dtype=torch.float64)


def potential_gauss(q: dict) -> torch.Tensor:
    """10 independent normals, scales 1 to 10 (log-spaced)."""
    return 0.5 * ((q["x"] / SCALES) ** 2).sum()


POTENTIALS = {"eight_schools": potential, "gauss": potential_gauss}


def start(chain: int, model: str = "eight_schools") -> dict:
    g = torch.Generator().manual_seed(100 + chain)
    if model == "gauss":
        return {"x": torch.randn(10, generator=g, dtype=torch.float64)}
    return {"mu": torch.randn((), generator=g, dtype=torch.float64),
            "log_tau": torch.randn((), generator=g, dtype=torch.float64),
            "eta": torch.randn(8, generator=g, dtype=torch.float64)}


def setup(model: str, chain: int):
    return POTENTIALS[model], start(chain, model)


def run_pool(a, workers: int) -> torch.Tensor:
    opts = NUTSOptions(chains=a.chains, warmup=a.warmup, draws=a.draws, workers=workers, progress=False, threads=1)
    run = run_nuts(partial(setup, a.model), opts, seed=a.seed)
    return torch.cat([run.samples[k].reshape(a.chains, a.draws, -1) for k in sorted(run.samples)], -1)


def run_pyro(a, force_parallel: bool) -> torch.Tensor:
    inits = [start(c, a.model) for c in range(a.chains)]
    init = {k: torch.stack([i[k] for i in inits]) for k in inits[0]}
    real = pyro_mcmc_api.mp.cpu_count
    if force_parallel:
        pyro_mcmc_api.mp.cpu_count = lambda: a.chains + 1
    try:
        pyro.set_rng_seed(a.seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "num_chains=4 is more than available_cpu=1"
            mcmc = MCMC(NUTS(potential_fn=POTENTIALS[a.model], target_accept_prob=0.9, max_tree_depth=8),
                        num_samples=a.draws, warmup_steps=a.warmup, num_chains=a.chains, initial_params=init,
                        mp_context="spawn", disable_progbar=True)
            mcmc.run()
    finally:
        pyro_mcmc_api.mp.cpu_count = real
    smp = mcmc.get_samples(group_by_chain=True)
    return torch.cat([smp[k].reshape(a.chains, a.draws, -1) for k in sorted(smp)], -1)


PROGRESS = {
    "pool": "a bar per chain (stacked where the display can; one bar with the chain's postfix otherwise), fed "
            "from the workers through a queue",
    "pool_1": "a bar per chain, filled one chain after another",
    "pyro": "where Pyro runs the chains one after another (chains > cpu_count() - 1): one bar at a time, "
            "'Warmup [c]' / 'Sample [c]'",
    "pyro_parallel": "a bar per chain (Pyro's ProgressBar(num_bars=chains)), fed from the workers through a "
                     "logging queue",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=sorted(POTENTIALS), default="eight_schools")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--draws", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="default runs/bench_nuts_chains/<model>.json")
    a = ap.parse_args()
    torch.set_num_threads(1)
    runners = {"pool": lambda: run_pool(a, a.workers), "pool_1": lambda: run_pool(a, 1),
               "pyro": lambda: run_pyro(a, False), "pyro_parallel": lambda: run_pyro(a, True)}
    res = {"config": vars(a), "cpu_count": os.cpu_count(), "pyro": pyro.__version__, "torch": torch.__version__,
           "python": platform.python_version(), "load_before": os.getloadavg(),
           "pyro_runs_in_parallel_here": a.chains <= max(os.cpu_count() - 1, 1), "variants": {}}
    draws: dict[str, list[torch.Tensor]] = {k: [] for k in runners}
    walls: dict[str, list[float]] = {k: [] for k in runners}
    for r in range(a.rounds):
        for name, fn in runners.items():
            t0 = time.perf_counter()
            draws[name].append(fn())
            walls[name].append(time.perf_counter() - t0)
            print(f"round {r}: {name:14s} {walls[name][-1]:6.2f} s", flush=True)
    res["load_after"] = os.getloadavg()
    same = {("pool", "pool_1"): None, ("pyro", "pyro_parallel"): None}
    for x, y in same:
        same[(x, y)] = bool(torch.equal(draws[x][0], draws[y][0]))
    for name in runners:
        d = draws[name]
        res["variants"][name] = {
            "wall_s_median": statistics.median(walls[name]), "wall_s": walls[name],
            "reproducible_at_one_seed": all(torch.equal(d[0], x) for x in d[1:]),
            "mean_of_first_site": float(d[0][..., 0].mean()), "progress": PROGRESS[name]}
    res["same_draws"] = {f"{x} == {y}": v for (x, y), v in same.items()}
    out = Path(a.out or f"runs/bench_nuts_chains/{a.model}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2))
    print(f"cpu_count {res['cpu_count']}, load {res['load_before']} -> {res['load_after']}; Pyro runs "
          f"{a.chains} chains in parallel here: {res['pyro_runs_in_parallel_here']}")
    for name, v in res["variants"].items():
        print(f"{name:14s} wall {v['wall_s_median']:6.2f} s (rounds {', '.join(f'{w:.2f}' for w in v['wall_s'])}), "
              f"same draws at one seed: {v['reproducible_at_one_seed']}")
    for k, v in res["same_draws"].items():
        print(f"draws {k}: {v}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
