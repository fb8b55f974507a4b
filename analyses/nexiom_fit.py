"""Which model of people's experiments explains the Nexiom adults best? The whole workflow in one file.

1. Load the shipped data; hold out a stratified quarter of the participants.
2. Fit every choice model hierarchically to the rest (SVI) and score the held-out participants' choices
   (nats per choice; uniform = log 17 = 2.833); LOO comparison of the same fits.
3. Fit the main model to **all** participants with NUTS; timing and diagnostics (R-hat, ESS, divergences).
4. Posterior predictive checks against the humans: number of tests, object-set size per test index,
   accuracy by rule, and the rank of each chosen set under EIG.

Run ``python analyses/nexiom_fit.py`` (full) or ``python analyses/nexiom_fit.py smoke`` (seconds). Everything is
written under ``runs/<name>/`` as it is produced: ``config.json``, ``heldout.csv``, ``loo.csv``,
``nuts_summary.csv``, ``nuts_diagnostics.json``, ``ppc_*.png``, ``eig_rank.png``, ``results.json``.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from causalplay.models.choice_base import build_features, get_model  # noqa: E402
from tqdm.auto import tqdm  # noqa: E402

import causalplay  # noqa: E402
from causalplay.data import load_nexiom  # noqa: E402


@dataclass
class Config:
    name: str = "nexiom_fit"
    models: tuple[str, ...] = ("random", "naive", "positive", "eig_softmax", "eig_size", "eig_sweep")
    main_model: str = "eig_softmax"
    max_participants: int | None = None  # None: all 78
    test_fraction: float = 0.25
    split_seed: int = 0
    svi_steps: int = 1500
    svi_draws: int = 400
    score_draws: int = 400
    nuts_warmup: int = 400
    nuts_samples: int = 700
    nuts_chains: int = 2
    ppc_replicas: int = 20
    seed: int = 0
    out_root: str = "runs"


SMOKE = Config(name="smoke", models=("random", "eig_softmax"), max_participants=12, svi_steps=30, svi_draws=30,
               score_draws=30, nuts_warmup=10, nuts_samples=10, ppc_replicas=1)


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _set_sizes(data) -> pd.DataFrame:
    t = data.tests.copy()
    t["size"] = t["objects_on"].map(len)
    return t


def _eig_ranks(data, rho: float = 0.0) -> np.ndarray:
    """Rank (1 = highest EIG, ties share the best rank) of each chosen object set among the 16, under the
    learner with rule prior logit ``rho``."""
    feats = build_features(data)
    cm = get_model("eig_softmax")
    with torch.no_grad():
        log_w = cm.posterior(feats, feats.ll, torch.full((feats.n_decisions,), rho, dtype=torch.float64))
        eig = cm.eig(feats, log_w)
    tests = feats.choice < 16
    chosen = eig[tests].gather(-1, feats.choice[tests][:, None])
    return (1 + (eig[tests] > chosen + 1e-9).sum(-1)).numpy()


def run(cfg: Config) -> dict:
    out = Path(cfg.out_root) / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(asdict(cfg), indent=2))
    warnings.filterwarnings("ignore", category=FutureWarning)
    data = load_nexiom()
    if cfg.max_participants is not None:
        data = data.subset(data.ids[: cfg.max_participants])
    fit_data, held = data.split(cfg.test_fraction, seed=cfg.split_seed)
    results: dict = {"n_participants": len(data), "n_fit": len(fit_data), "n_heldout": len(held),
                     "heldout_choices": held.n_choices, "uniform_nats_per_choice": math.log(17),
                     "cpu_count": os.cpu_count(), "torch": torch.__version__}

    # 2. held-out score and LOO of every model (hierarchical SVI on the fitting split)
    rows, fits = [], {}
    for m in tqdm(cfg.models, desc="models"):
        f = causalplay.fit(fit_data, model=m, method="svi", svi_steps=cfg.svi_steps, num_samples=cfg.svi_draws,
                           seed=cfg.seed, progress=False)
        s = f.score(held, n_draws=cfg.score_draws, seed=cfg.seed)
        fits[m] = f
        rows.append({"model": m, "nats_per_choice": s.nats_per_choice, "total_log_p": s.total_nats,
                     "n_choices": s.n_choices, "fit_seconds": round(f.seconds, 1),
                     "description": get_model(m).description})
        pd.DataFrame(rows).to_csv(out / "heldout.csv", index=False)
    held_table = pd.DataFrame(rows).sort_values("nats_per_choice")
    held_table.to_csv(out / "heldout.csv", index=False)
    results["heldout"] = held_table[["model", "nats_per_choice", "n_choices"]].to_dict("records")
    loo = causalplay.compare(fits)
    loo.to_csv(out / "loo.csv")

    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.barh(held_table["model"], held_table["nats_per_choice"], color="#4c72b0")
    ax.axvline(math.log(17), color="k", ls="--", lw=1, label="uniform (log 17)")
    ax.axvline(2.40, color="#c44e52", ls=":", lw=1, label="goal 2.40")
    ax.set_xlabel("held-out nats per choice (lower is better)")
    ax.legend(fontsize=8)
    _save(fig, out / "heldout.png")

    # 3. main model, all participants, NUTS
    t0 = time.perf_counter()
    nuts = causalplay.fit(data, model=cfg.main_model, method="nuts", warmup=cfg.nuts_warmup,
                          num_samples=cfg.nuts_samples, chains=cfg.nuts_chains, seed=cfg.seed, progress=True)
    wall = time.perf_counter() - t0
    diag = nuts.diagnostics(warn=False)
    diag.update({"wall_seconds": round(wall, 1), "load_average_after": os.getloadavg()})
    (out / "nuts_diagnostics.json").write_text(json.dumps(diag, indent=2, default=str))
    nuts.summary().to_csv(out / "nuts_summary.csv")
    nuts.participant_means().to_csv(out / "nuts_participant_means.csv")
    results["nuts"] = diag

    # 4. posterior predictive checks: replicas of every participant (own posterior draw, own world)
    sims = [nuts.simulate(seed=cfg.seed + 100 + r) for r in range(cfg.ppc_replicas)]
    human_n = data.participants["n_tests"].to_numpy()
    sim_n = np.concatenate([s.participants["n_tests"].to_numpy() for s in sims])
    fig, ax = plt.subplots(figsize=(5, 3.2))
    bins = np.arange(0.5, max(human_n.max(), sim_n.max()) + 1.5)
    ax.hist(human_n, bins=bins, density=True, alpha=0.6, label="humans")
    ax.hist(sim_n, bins=bins, density=True, histtype="step", lw=2, label=f"{cfg.main_model} (PPC)")
    ax.set_xlabel("number of tests")
    ax.legend()
    _save(fig, out / "ppc_n_tests.png")

    hs = _set_sizes(data).groupby("test")["size"].agg(["mean", "count"])
    ss = pd.concat([_set_sizes(s) for s in sims]).groupby("test")["size"].mean()
    fig, ax = plt.subplots(figsize=(5, 3.2))
    keep = hs.index[hs["count"] >= 5]
    ax.plot(keep, hs.loc[keep, "mean"], "o-", label="humans")
    ax.plot(keep, ss.reindex(keep), "s--", label=f"{cfg.main_model} (PPC)")
    ax.set_xlabel("test index")
    ax.set_ylabel("mean objects on the machine")
    ax.legend()
    _save(fig, out / "ppc_set_size.png")

    def acc(df):
        return df.assign(both=df["blickets_correct"] & df["rule_correct"]).groupby("rule")[
            ["blickets_correct", "rule_correct", "both"]].mean()

    ha, sa = acc(data.participants), acc(pd.concat([s.participants for s in sims]))
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    x = np.arange(len(ha.index))
    for k, col in enumerate(["blickets_correct", "rule_correct"]):
        ax.bar(x + k * 0.4 - 0.3, ha[col], 0.18, label=f"humans: {col}")
        ax.bar(x + k * 0.4 - 0.1, sa[col], 0.18, label=f"model: {col}", hatch="//", alpha=0.7)
    ax.set_xticks(x, ha.index)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("proportion correct")
    ax.legend(fontsize=7)
    _save(fig, out / "ppc_accuracy.png")
    pd.concat({"humans": ha, "model": sa}).to_csv(out / "ppc_accuracy.csv")

    hr = _eig_ranks(data)
    sr = np.concatenate([_eig_ranks(s) for s in sims[: max(1, min(5, len(sims)))]])
    fig, ax = plt.subplots(figsize=(5, 3.2))
    b = np.arange(0.5, 17.5)
    ax.hist(hr, bins=b, density=True, alpha=0.6, label="humans")
    ax.hist(sr, bins=b, density=True, histtype="step", lw=2, label=f"{cfg.main_model} (PPC)")
    ax.set_xlabel("rank of the chosen set under EIG (1 = most informative)")
    ax.legend()
    _save(fig, out / "eig_rank.png")
    results["ppc"] = {"human_mean_tests": float(human_n.mean()), "model_mean_tests": float(sim_n.mean()),
                      "human_top_eig_rank_share": float((hr == 1).mean()),
                      "model_top_eig_rank_share": float((sr == 1).mean())}
    (out / "results.json").write_text(json.dumps(results, indent=2, default=str))
    return results


def main(argv: list[str]) -> None:
    cfg = SMOKE if argv[:1] == ["smoke"] else Config()
    for kv in argv[1:] if argv[:1] == ["smoke"] else argv:
        k, v = kv.split("=", 1)
        cur = getattr(cfg, k)
        cfg = replace(cfg, **{k: type(cur)(v) if cur is not None and not isinstance(cur, tuple) else
                              (tuple(v.split(",")) if isinstance(cur, tuple) else int(v))})
    print(json.dumps(run(cfg), indent=2, default=str))


if __name__ == "__main__":
    main(sys.argv[1:])
