"""Which design tells the models of people apart: the utility (mutual information, nats) of candidate Nexiom-like
designs for the models positive, random, eig_sweep and eig_sweep_single fitted to the shipped people.

Fits: each model by SVI on the 78 shipped participants (``causalplay.fit(..., method="svi")``, seed 0). Candidates:
:func:`causalplay.design.design_space` with 4 objects, both rules, 2 blickets, at most one demonstration, told the
count or not (384 designs); the shipped study's designs (no demonstration, not told) are among them. Utility of a
participant's first ``K`` choices, K = 1 and 2 (exact sums over the choice sequences), 200 new participants per model,
equal prior weights; the top designs at K = 2 are checked by nested Monte Carlo (its estimate and standard error).

Usage::

    OMP_NUM_THREADS=1 python analyses/design_utility.py
"""

from __future__ import annotations

import math

import pandas as pd
import torch

import causalplay
from causalplay.data import load_nexiom
from causalplay.design import Design, design_space, utility
from causalplay.fitting import SVIOptions

MODELS = ("positive", "random", "eig_sweep", "eig_sweep_single")


def main() -> None:
    torch.set_num_threads(1)
    people = load_nexiom()
    fits = {m: causalplay.fit(people, m, method="svi", svi=SVIOptions(progress=False), seed=0) for m in MODELS}
    cands = design_space(4, demonstrations=1, told=(False, True))
    u = {k: utility(fits, cands, choices=k, draws=200, seed=0) for k in (1, 2)}
    table = pd.DataFrame({"design": [str(d) for d in cands], "K1_nats": u[1].nats.numpy(),
                          "K2_nats": u[2].nats.numpy(),
                          "demonstrated": [len(d.demonstrations) > 0 for d in cands],
                          "told": [d.n_blickets_told is not None for d in cands]})
    nexiom = [i for i, d in enumerate(cands) if not d.demonstrations and d.n_blickets_told is None]
    assert all(cands[i] == Design.nexiom(*cands[i].world) for i in nexiom)
    pd.set_option("display.width", 200, "display.max_colwidth", 90)
    print(f"{len(cands)} candidate designs; models {list(fits)} (uniform prior: at most log 4 = {math.log(4):.3f} "
          "nats)")
    print("by kind of design (mean over designs, nats):")
    print(table.groupby(["demonstrated", "told"])[["K1_nats", "K2_nats"]].agg(["mean", "max"]).round(4).to_string())
    print(f"the shipped study's designs: K=1 {table.loc[nexiom, 'K1_nats'].mean():.4f}, K=2 "
          f"{table.loc[nexiom, 'K2_nats'].mean():.4f} .. {table.loc[nexiom, 'K2_nats'].max():.4f} nats")
    top = table.sort_values("K2_nats", ascending=False, kind="stable").head(5)
    print("top 5 designs at K=2:")
    print(top[["design", "K1_nats", "K2_nats"]].round(4).to_string())
    mc = utility(fits, [cands[i] for i in top.index[:3]], choices=2, draws=200, method="mc", samples=400, seed=1)
    for i, v, s in zip(top.index[:3], mc.nats.tolist(), mc.se.tolist(), strict=True):
        print(f"nested MC check, design {i}: {v:.4f} ± {s:.4f} (exact {table.loc[i, 'K2_nats']:.4f})")


if __name__ == "__main__":
    main()
