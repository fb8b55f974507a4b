"""The IVRE / EST papers' baseline table (IVRE Table 2; EST Tables 2-3) beside ours, with 95% CIs of ours.

Usage::

    .venv/bin/python analyses/ivre_table.py                      # 10^4 episodes per row, NOTEARS 200
    .venv/bin/python analyses/ivre_table.py --episodes 2000 --notears-episodes 0 --out runs/paper_table.md
    .venv/bin/python analyses/ivre_table.py --help               # every Config field is an option

Ours: every row is one seeded run of :func:`causalplay.bench.runner.run_episodes` (seed 0, one shard), on
``causalplay/IVRE-v0`` and ``causalplay/EST-v1``, with the agent spec in :data:`ROWS`. The CI is mean
+- 1.96 standard errors over episodes. ``ok`` marks rows within the issue's goal (|Acc - paper| <= 3 points and
|R - paper| <= 0.75 on episode Acc / R). Why some rows use options (EST: the earlier code behind the EST paper)
is explained in ``docs/benchmark.md`` and in :mod:`causalplay.agents.paper`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import pandas as pd

IVRE, EST = "causalplay/IVRE-v0", "causalplay/EST-v1"

#: The papers' numbers (issue 8): context Acc %, context R, episode Acc %, episode R; 10^4 episodes each.
PAPER: dict[tuple[str, str], tuple[float, float, float, float]] = {
    (IVRE, "Random"): (0.86, -5.42, 1.87, -14.14),
    (IVRE, "Bayes"): (15.60, -2.98, 43.03, -3.78),
    (IVRE, "Naive"): (3.50, -3.91, 43.62, -1.69),
    (IVRE, "NOTEARS"): (9.10, -4.66, 12.70, -13.02),
    (IVRE, "Search-Naive"): (1.51, -3.68, 83.80, 9.39),
    (IVRE, "Search-Random"): (1.80, -3.62, 34.15, -1.87),
    (IVRE, "Human"): (33.33, 5.01, 98.15, 12.70),
    (EST, "Random"): (0.71, -5.67, 2.02, -14.11),
    (EST, "Bayes"): (0.24, -4.30, 3.39, -11.15),
    (EST, "Naive"): (1.71, -3.95, 25.85, -5.03),
    (EST, "Search-Random"): (0.24, -4.00, 2.70, -9.36),
    (EST, "Search-Naive"): (0.40, -3.91, 36.83, -1.65),
    (EST, "NOTEARS"): (3.21, -3.83, 4.30, -9.99),
}

#: (env, paper row) -> our agent specs, the first one set beside the paper's row (None: no agent, e.g. humans).
#: Further specs are printed as extra rows (the public IVRE code's version where the EST row differs).
ROWS: dict[tuple[str, str], tuple[str, ...]] = {
    (IVRE, "Random"): ("random",),
    (IVRE, "Bayes"): ("bayes", "bayes:trials='in-order'"),
    (IVRE, "Naive"): ("naive",),
    (IVRE, "NOTEARS"): ("notears",),
    (IVRE, "Search-Naive"): ("search-naive", "search-naive-exact"),
    (IVRE, "Search-Random"): ("search-random",),
    (IVRE, "Human"): (),
    (EST, "Random"): ("random:belief='binary'", "random"),
    (EST, "Bayes"): ("bayes:belief='proba'", "bayes"),
    (EST, "Naive"): ("naive",),
    (EST, "Search-Random"): ("search-random:eps=0", "search-random"),
    (EST, "Search-Naive"): ("search-naive:eps=0", "search-naive"),
    (EST, "NOTEARS"): ("notears",),
}

COLUMNS = ("context_acc", "context_reward", "episode_acc", "episode_reward")


def measure(env: str, agent: str, episodes: int, seed: int = 0) -> dict:
    """Our row: mean and 95% CI half-width (1.96 s.e. over episodes) of the four Table-2 columns."""
    from causalplay.bench.runner import run_episodes

    t0 = time.perf_counter()
    df = run_episodes(env, agent, episodes, seed=seed)
    cols = {"context_acc": "context_solved", "context_reward": "context_reward",
            "episode_acc": "episode_solved", "episode_reward": "episode_reward"}
    out: dict = {"episodes": episodes, "seconds": round(time.perf_counter() - t0, 1)}
    for name, col in cols.items():
        x = df[col].astype(float) * (100.0 if name.endswith("acc") else 1.0)
        out[name], out[name + "_ci"] = float(x.mean()), float(1.96 * x.std(ddof=1) / len(x) ** 0.5)
    return out


def build(episodes: int, notears_episodes: int, envs: tuple[str, ...] = (IVRE, EST)) -> pd.DataFrame:
    """One row per (env, paper row, our spec): the paper's numbers, ours with CIs, differences, goal check."""
    if episodes < 2:
        raise ValueError(f"episodes must be >= 2 (a CI needs two), got {episodes}")
    rows = []
    for (env, name), paper in PAPER.items():
        if env not in envs:
            continue
        specs = ROWS[(env, name)] or (None,)
        for i, spec in enumerate(specs):
            n = notears_episodes if spec and spec.startswith("notears") else episodes
            rec: dict = {"env": env.split("/")[1], "paper row": name if i == 0 else f"  ({name}, other)",
                         "ours": spec or "-", **{"paper " + col: v for col, v in zip(COLUMNS, paper, strict=True)}}
            if spec is not None and n >= 2:
                m = measure(env, spec, n)
                for col in COLUMNS:
                    rec[col] = f"{m[col]:.2f} ± {m[col + '_ci']:.2f}"
                d_acc, d_r = m["episode_acc"] - paper[2], m["episode_reward"] - paper[3]
                rec["Δ ep Acc"], rec["Δ ep R"] = round(d_acc, 2), round(d_r, 2)
                rec["ok"] = "yes" if abs(d_acc) <= 3 and abs(d_r) <= 0.75 else "no"
                rec["episodes"] = n
            rows.append(rec)
    df = pd.DataFrame(rows)
    if "episodes" in df:
        df["episodes"] = df["episodes"].astype("Int64")
    return df


@dataclass
class Config:
    episodes: int = 10000  # episodes per row (one seed)
    notears_episodes: int = 200  # episodes of the NOTEARS rows (0: skip)
    envs: tuple[str, ...] = (IVRE, EST)  # the papers' tables exist for these two
    out: str | None = None  # also write the markdown table here


def main(argv: list[str] | None = None) -> int:
    from causalplay.cli.config import parse_config

    cfg = parse_config(Config, argv, description=__doc__.splitlines()[0])
    bad = [e for e in cfg.envs if e not in (IVRE, EST)]
    if bad:
        raise SystemExit(f"unknown env {bad}; the papers' tables exist for {IVRE} and {EST}")
    import torch

    torch.set_num_threads(1)
    table = build(cfg.episodes, cfg.notears_episodes, cfg.envs)
    text = table.to_markdown(index=False) if find_spec("tabulate") else table.to_string(index=False)
    print(text)
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
