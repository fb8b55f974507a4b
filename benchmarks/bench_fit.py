"""Speed of one cross-validation fit of a choice model: where a model-recovery or ``crossval`` fit spends its time.

Workload: ``--participants`` synthetic participants drawn from the population of ``eig_sweep_single`` fitted (SVI)
to the shipped Nexiom people, on worlds resampled from theirs (the model-recovery design of
``analyses/nexiom_fit.py --model-recovery-participants``); one fold of ``--folds``-fold cross-validation: every
model is fitted (hierarchical SVI, ``--svi-steps`` steps, tempered judgements) to the other folds' participants and
scores this fold's. Timed per model, one process, one torch thread (as each model-recovery worker runs):

* ``fit_s``: ``causalplay.fit(..., method="svi")`` -- features, the traced density, the SVI steps;
* ``score_s``: ``Fit.score(held)`` -- held-out nats per choice (400 population draws x 5 new participants);
* ``idata_s``: ``Fit.idata`` -- the ArviZ conversion with the pointwise log-likelihood of every draw. Since
  2026-11-26 it is built on first use, so ``fit_and_score`` (cross-validation, model recovery) no longer pays it:
  ``fit_and_score_s`` = fit + score is what a fit costs now, ``with_idata_s`` = fit + idata + score what it cost
  before.

Wall and CPU seconds are reported with the load average (the machine may be shared). Results are written to
``runs/bench_fit/results.json`` after every model.

Usage::

    python benchmarks/bench_fit.py [--participants 468] [--models random,positive,sweep,eig_sweep]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch

import causalplay
from causalplay.data import load_nexiom
from causalplay.fitting import SVIOptions


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--participants", type=int, default=468)
    ap.add_argument("--folds", type=int, default=4)
    ap.add_argument("--models", default="random,positive,sweep,eig_sweep,eig_sweep_single")
    ap.add_argument("--svi-steps", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs/bench_fit/results.json")
    a = ap.parse_args()
    torch.set_num_threads(1)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    people = load_nexiom()
    svi = SVIOptions(steps=a.svi_steps)
    pop = causalplay.fit(people, "eig_sweep_single", method="svi", svi=svi, judgement="softmax", seed=a.seed)
    data = pop.simulate(a.participants, seed=a.seed)
    fit_data, held = data.folds(a.folds, seed=a.seed)[0]
    res = {"machine": platform.platform(), "cpus": os.cpu_count(), "torch": torch.__version__, "torch_threads": 1,
           "participants": a.participants, "fitted": len(fit_data), "held_out": len(held),
           "fitted_choices": fit_data.n_choices, "held_out_choices": held.n_choices, "svi_steps": a.svi_steps,
           "models": {}}
    print(f"{len(fit_data)} participants fitted ({fit_data.n_choices} choices), {len(held)} held out", flush=True)
    for m in a.models.split(","):
        load = os.getloadavg()[0]
        f, fit_s, fit_c = timed(lambda m=m: causalplay.fit(fit_data, m, method="svi", svi=svi, judgement="softmax",
                                                           seed=a.seed))
        s, score_s, score_c = timed(lambda f=f: f.score(held, seed=a.seed))
        _, idata_s, idata_c = timed(lambda f=f: f.idata)
        row = {"fit_s": fit_s, "score_s": score_s, "idata_s": idata_s, "fit_and_score_s": fit_s + score_s,
               "with_idata_s": fit_s + idata_s + score_s, "cpu_s": fit_c + score_c + idata_c,
               "ms_per_svi_step": 1e3 * f.seconds / a.svi_steps, "nats_per_choice": s.nats_per_choice,
               "load_average_before": load}
        res["models"][m] = row
        out.write_text(json.dumps(res, indent=2))
        print(f"{m:>18}: fit {fit_s:6.2f} s ({row['ms_per_svi_step']:.2f} ms/step), score {score_s:5.2f} s, "
              f"idata {idata_s:5.2f} s -> fit_and_score {row['fit_and_score_s']:6.2f} s "
              f"(was {row['with_idata_s']:6.2f} s, {row['fit_and_score_s'] / row['with_idata_s']:.2f}x); "
              f"load {load:.2f}", flush=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
