"""How far are SVI marginals from exact ones, and what does SVI cost? (issue 2, item 4)

For N in {12, 14, 16}: draw episodes from the prior (both rules, blicket prior 1/4, noise 0.05), 12 random
trials each, compute exact posteriors by enumeration and SVI posteriors with the default guide, and report
mean/max absolute error of blicket and rule marginals and the wall time of each method. Results go to
``runs/<name>/results.json`` (written after each N) and a markdown table.

Run ``python analyses/svi_vs_exact.py`` (full) or ``--smoke`` (tiny; used by the tests).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from causalplay.core.exact import log_posterior
from causalplay.core.history import History, HistoryBatch
from causalplay.core.spec import HypothesisSpace
from causalplay.learners.api import make_spec
from causalplay.learners.svi import SVIOptions, svi_fit


@dataclass
class Config:
    name: str = "svi_vs_exact"
    sizes: tuple[int, ...] = (12, 14, 16)
    episodes: int = 8
    trials: int = 12
    blicket_prior: float = 0.25
    noise: float = 0.05
    steps: int = 800
    particles: int = 64
    lr: float = 0.05
    seed: int = 0
    out: str = "runs"


SMOKE = Config(name="svi_vs_exact_smoke", sizes=(6,), episodes=2, trials=4, steps=20, particles=8)


def episodes(n: int, cfg: Config, rng: np.random.Generator) -> list[History]:
    out = []
    for b in range(cfg.episodes):
        true = rng.random(n) < cfg.blicket_prior
        need = 1 if b % 2 == 0 else 2
        pairs = []
        for _ in range(cfg.trials):
            trial = rng.random(n) < 0.3
            lit = int((trial & true).sum()) >= need
            pairs.append((trial, bool(lit) != bool(rng.random() < cfg.noise)))
        out.append(History.from_pairs(pairs, n))
    return out


def run(cfg: Config) -> dict:
    rng = np.random.default_rng(cfg.seed)
    out = Path(cfg.out) / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=2))
    rows = []
    for n in cfg.sizes:
        hs = episodes(n, cfg, rng)
        spec = make_spec(n, ("disjunctive", "conjunctive"), blicket_prior=cfg.blicket_prior, noise=cfg.noise)
        t0 = time.perf_counter()
        space = HypothesisSpace.build(spec, "cpu", torch.float64)
        lw = log_posterior(space, HistoryBatch.from_histories(hs, n))
        grid = lw.exp().reshape(len(hs), space.n_rules, space.n_sets)
        exact_b = (grid.sum(1) @ space.sets).numpy()
        exact_r = grid.sum(-1).numpy()
        t_exact = time.perf_counter() - t0
        res = svi_fit(HistoryBatch.from_histories(hs, n, dtype=torch.float32), spec=spec,
                      options=SVIOptions(steps=cfg.steps, particles=cfg.particles, lr=cfg.lr,
                                         seed=cfg.seed, progress=True))
        eb = np.abs(res.blicket_probs - exact_b)
        er = np.abs(res.rule_probs - exact_r)
        rows.append(dict(n_objects=n, episodes=len(hs), hypotheses=space.n_hypotheses,
                         blicket_mae=float(eb.mean()), blicket_max=float(eb.max()),
                         rule_mae=float(er.mean()), rule_max=float(er.max()),
                         exact_seconds=t_exact, svi_seconds=res.seconds, svi_steps=cfg.steps,
                         # per episode, so the errors above can be checked against an independent posterior
                         exact_blicket_probs=exact_b.tolist(), svi_blicket_probs=res.blicket_probs.tolist()))
        (out / "results.json").write_text(json.dumps(rows, indent=2))
        print(rows[-1], flush=True)
    lines = ["| N | hypotheses | blicket MAE | blicket max | rule MAE | rule max | exact s | SVI s |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['n_objects']} | {r['hypotheses']:,} | {r['blicket_mae']:.3f} | {r['blicket_max']:.3f} | "
              f"{r['rule_mae']:.3f} | {r['rule_max']:.3f} | {r['exact_seconds']:.2f} | {r['svi_seconds']:.1f} |"
              for r in rows]
    (out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return {"rows": rows}


if __name__ == "__main__":
    from causalplay.cli.config import parse_config

    run(parse_config(Config, smoke=SMOKE, description=__doc__.splitlines()[0]))
