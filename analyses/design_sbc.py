"""Simulation-based calibration of the best model of the shipped Nexiom people on the Nexiom design.

Each simulation draws every parameter of ``--model`` from its prior, simulates the 78 participants of the shipped
study on their own designs (world; no demonstrations, not told the count, at most 30 tests), fits them with
``--method`` exactly as ``causalplay.fit`` fits people, and records the rank of each true population parameter among
``--L`` posterior draws (:func:`causalplay.fitting.sbc`). Simulations run in chunks of ``--chunk``; each chunk is
saved to ``--out`` as it finishes (a rerun skips chunks already there), then the uniformity table is printed and the
ECDF-difference / rank-histogram plot written.

Usage::

    OMP_NUM_THREADS=1 nice python analyses/design_sbc.py --sims 60 [--method svi] [--out runs/design_sbc]
    OMP_NUM_THREADS=1 python analyses/design_sbc.py --method nuts --model "eig_sweep_single:shared=[gamma,stop_a]" \
        --nuts-chains 2 --nuts-warmup 500 --nuts-draws 500 --nuts-workers 2 --nuts-retry --sims 40 --chunk 2 \
        --out runs/design_sbc_nuts      # docs/design.md's NUTS run (``--nuts-retry`` alone: no retries)
"""

from __future__ import annotations

import argparse
import json
import pickle
import time
from pathlib import Path

import pandas as pd
import torch

from causalplay.data import load_nexiom
from causalplay.design import designs_of
from causalplay.fitting import NUTSOptions, SBCResult, SVIOptions, sbc


def check_settings(out: Path, stem: str, settings: dict) -> None:
    """Record ``settings`` as ``out/<stem>.json``, or check them against the record there.

    Chunk files carry no fit options, so a chunk made with (say) 300 NUTS warm-up iterations would otherwise be
    joined silently to chunks of a rerun with 500. Raises ``SystemExit`` naming each setting that differs, or when
    chunks of ``stem`` exist without a record (made by an older version of this script: their settings are unknown).
    """
    rec = out / f"{stem}.json"
    if rec.exists():
        old = json.loads(rec.read_text())
        diff = {k: (old.get(k), v) for k, v in settings.items() if old.get(k) != v}
        if diff:
            said = "; ".join(f"{k}: {a!r} there, {b!r} now" for k, (a, b) in diff.items())
            raise SystemExit(f"{out} holds simulations of {stem} made with other settings ({said}); "
                             "pass a new --out or the same settings")
        return
    if any(out.glob(f"{stem}_[0-9][0-9][0-9][0-9].pkl")):
        raise SystemExit(f"{out} holds chunks of {stem} with no record of their settings (an older run); "
                         "pass a new --out, or delete those chunks")
    rec.write_text(json.dumps(settings, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="eig_sweep_single")
    ap.add_argument("--method", default="svi", choices=("svi", "nuts"))
    ap.add_argument("--sims", type=int, default=60)
    ap.add_argument("--chunk", type=int, default=5)
    ap.add_argument("--L", type=int, default=99)
    ap.add_argument("--svi-steps", type=int, default=1500)
    ap.add_argument("--nuts-chains", type=int, default=4)
    ap.add_argument("--nuts-warmup", type=int, default=500)
    ap.add_argument("--nuts-draws", type=int, default=1000)
    ap.add_argument("--nuts-workers", type=int, default=None, help="processes per NUTS fit (default: one per chain "
                    "up to the core count)")
    ap.add_argument("--nuts-retry", type=float, nargs="*", default=[0.95, 0.99],
                    help="target acceptances of fit's retry ladder (none: keep each simulation's first fit)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs/design_sbc")
    ap.add_argument("--plot", default=None, help="where to write the plot (default: OUT/sbc_<model>_<method>.png)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    designs = list(designs_of(load_nexiom()).values())
    parts = []
    slug = "".join(c if c.isalnum() or c in "_-" else "-" for c in a.model)  # a spec may hold [ ] , = :
    stem = f"{slug}_{a.method}_{a.seed}"
    fit = ({"svi_steps": a.svi_steps} if a.method == "svi" else
           {"nuts_chains": a.nuts_chains, "nuts_warmup": a.nuts_warmup, "nuts_draws": a.nuts_draws,
            "nuts_retry": list(a.nuts_retry)})
    check_settings(out, stem, {"model": a.model, "method": a.method, "L": a.L, "seed": a.seed, **fit})
    for first in range(0, a.sims, a.chunk):
        path = out / f"{stem}_{first:04d}.pkl"
        if path.exists():
            parts.append(pickle.loads(path.read_bytes()))
            continue
        t0 = time.perf_counter()
        r = sbc(a.model, designs, method=a.method, sims=min(a.chunk, a.sims - first), L=a.L, first=first,
                svi=SVIOptions(steps=a.svi_steps, progress=False), seed=a.seed,
                nuts=NUTSOptions(chains=a.nuts_chains, warmup=a.nuts_warmup, draws=a.nuts_draws,
                                 workers=a.nuts_workers, progress=False), retry_target_accept=a.nuts_retry)
        path.write_bytes(pickle.dumps(r))
        parts.append(r)
        print(f"simulations {first}..{first + r.sims - 1}: {time.perf_counter() - t0:.0f} s", flush=True)
    res = SBCResult.concat(parts)
    pd.set_option("display.width", 160)
    print(f"SBC of {res.model} ({res.method}) on the {len(designs)} Nexiom designs: {res.sims} simulations, "
          f"L = {res.L}")
    print(res.uniformity().round(3).to_string())
    d = res.diagnostics
    if "elbo_converged" in d:
        print(f"ELBO converged (last tenth vs the tenth before, within 2 SE) in {int(d['elbo_converged'].sum())} of "
              f"{len(d)} fits")
    if "divergences" in d:
        print(f"NUTS: {int((d['divergences'] > 0).sum())} fits with divergences; worst R-hat {d['rhat_max'].max():.3f}")
    plot = a.plot or out / f"sbc_{slug}_{res.method}.png"
    res.plot(plot)
    print(f"wrote {plot}")


if __name__ == "__main__":
    main()
