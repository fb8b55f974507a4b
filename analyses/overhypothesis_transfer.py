"""Overhypotheses: the Lucas & Griffiths transfer pattern and the transfer gain on Overhypothesis-v0 (issue 15).

1. **Pattern** (exact, fast): training machines whose evidence is conjunctive or disjunctive (or none), then an
   ambiguous test machine; the learned overhypothesis (both forms) sets the test machine's prior
   (``causalplay.infer(test, overhypothesis=post)``). Reported: P(D lights alone), P(D blicket), P(F blicket).
2. **Transfer on Overhypothesis-v0**: ``eig-transfer`` (learns the rule prior across machines) vs
   ``eig-transfer:transfer=False`` (uniform rule prior on every machine), with the rule drawn per sequence (the
   task) and per machine (the control). Rows own generators seeded ``[seed, i]``, so every agent meets the same
   machines (paired differences). Reported by machine index: mean trials-to-solve (``T + 1`` when unsolved),
   solve rate, episode R, and the paired gain with a 95% normal CI.

Results go to ``runs/<name>/`` (``pattern.csv``, ``records.csv`` appended after every run, ``summary.csv``,
``summary.md``, ``transfer.png``, ``crosscheck.csv``).
``python analyses/overhypothesis_transfer.py [--smoke] [--part env|pattern|crosscheck]``.

3. **Cross-check** (``--part crosscheck``): exact vs NUTS vs SVI posterior means and sds of the shared
   parameters on 6 synthetic sequences per form.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import causalplay
from causalplay.bench.runner import family_of, run_benchmark
from causalplay.bench.sequences import summarise_by_machine
from causalplay.cli.config import parse_config
from causalplay.core.beliefs import single_thread


@dataclass
class Config:
    name: str = "overhypothesis_transfer"
    n_sequences: int = 240
    n_episodes: int = 5
    agents: tuple[str, ...] = ("eig-transfer:transfer=False", "eig-transfer", "eig-transfer:concentration=0.1")
    rule_per: tuple[str, ...] = ("sequence", "episode")
    training_machines: int = 3
    noise: float = 0.05
    seed: int = 0
    threads: int = 1
    out: str = "runs"
    parts: tuple[str, ...] = ("pattern", "env")  # of "pattern", "env", "crosscheck"
    executor: str = "process"  # the env part runs on the benchmark runner: serial, process, ray or dask
    workers: int | None = None
    shard_size: int = 60  # sequences per shard (the unit of parallel work and of resuming)


SMOKE = Config(name="overhypothesis_transfer_smoke", n_sequences=4, n_episodes=2,
               agents=("eig-transfer:transfer=False", "eig-transfer"), training_machines=2)

BASELINE = "eig-transfer:transfer=False"

#: Training machines of three objects A, B, C (noise explains the evidence a rule cannot).
#: Conjunctive: A, B, C each alone dark, AB dark, AC lit, BC dark -> A and C are blickets, both needed.
#: Disjunctive: A alone lit, B, C alone dark, AB lit, AC lit, BC dark -> A alone is a blicket.
TRAINING = {
    "conjunctive": [([0], False), ([1], False), ([2], False), ([0, 1], False), ([0, 2], True), ([1, 2], False)],
    "disjunctive": [([0], True), ([1], False), ([2], False), ([0, 1], True), ([0, 2], True), ([1, 2], False)],
}
#: The ambiguous test machine (objects D, E, F = 0, 1, 2): D and E together lit, F alone dark.
TEST = [([0, 1], True), ([2], False)]


def pattern(cfg: Config) -> pd.DataFrame:
    """The transfer pattern: one row per (training, form)."""
    rows = []
    for form in ("rules", "sigmoid"):
        for training in ("none", "conjunctive", "disjunctive"):
            rho = np.nan
            if training == "none" and form == "rules":
                b = causalplay.infer(TEST, n_objects=3, noise=cfg.noise)
            else:
                if training == "none":  # the sigmoid prior itself: the grid posterior of no data is the prior
                    post = _prior_only(causalplay.infer_overhypothesis([[([0], False)]], n_objects=3, form=form,
                                                                       noise=cfg.noise))
                else:
                    post = causalplay.infer_overhypothesis([TRAINING[training]] * cfg.training_machines,
                                                           n_objects=3, form=form, noise=cfg.noise)
                    rho = float(post.predictive_rule_probs()[0, 1]) if form == "rules" else np.nan
                b = causalplay.infer(TEST, n_objects=3, overhypothesis=post)
            rows.append({"form": form, "training": training, "machines": 0 if training == "none" else
                         cfg.training_machines, "P(conjunctive next)": rho, "P(D lights alone)": b.predict([0]),
                         "P(D blicket)": float(b.blicket_prob[0]), "P(F blicket)": float(b.blicket_prob[2])})
    return pd.DataFrame(rows)


def _prior_only(post):
    """The sigmoid posterior replaced by its prior (the grid's prior mass), for the no-training row."""
    from causalplay.core.overhypothesis import sigmoid_grid

    gb, gg, glp = sigmoid_grid(None, post.info["grid"], post.info["grid_width"])
    post.log_w = glp[None, :].to(post.log_w)
    return post


def crosscheck(cfg: Config, n_sequences: int = 6, num_samples: int = 1000, warmup: int = 500,
               svi_steps: int = 1000) -> pd.DataFrame:
    """Exact vs NUTS vs SVI posterior mean and sd of the shared parameters on synthetic sequences (N = 3,
    K = 4 machines of 6 random trials, rule per sequence, noise ``cfg.noise``): one row per (form, sequence)."""
    from causalplay.core.overhypothesis import SequenceBatch

    rng = np.random.default_rng(cfg.seed)
    B, K, T, N = n_sequences, 4, 6, 3
    rule = np.arange(B) % 2
    blickets = rng.random((B, K, N)) < 0.5
    trials = rng.random((B, K, T, N)) < 0.5
    lit = (trials & blickets[:, :, None]).sum(-1) >= (1 + rule)[:, None, None]
    lit ^= rng.random(lit.shape) < cfg.noise
    seqs = SequenceBatch(torch.from_numpy(trials).double(), torch.from_numpy(lit).double(),
                         torch.ones(B, K, T, dtype=torch.bool))
    rows = []
    for form in ("rules", "sigmoid"):
        ex = causalplay.infer_overhypothesis(seqs, form=form, noise=cfg.noise)
        for b in range(B):
            one = SequenceBatch(seqs.trials[b:b + 1], seqs.lit[b:b + 1], seqs.mask[b:b + 1])
            res = {"exact": ex[b]}
            for method in ("nuts", "svi"):
                t0 = time.perf_counter()
                res[method] = causalplay.infer_overhypothesis(one, form=form, noise=cfg.noise, method=method,
                                                              num_samples=num_samples, warmup_steps=warmup,
                                                              svi_steps=svi_steps, seed=cfg.seed + b)
                res[method + "_s"] = time.perf_counter() - t0
            for par in ex.parameters:
                row = {"form": form, "sequence": b, "true_rule": int(rule[b]), "parameter": par}
                for m in ("exact", "nuts", "svi"):
                    row[f"{m}_mean"] = float(res[m].mean()[par].iloc[0])
                    row[f"{m}_sd"] = float(res[m].sd()[par].iloc[0])
                row["nuts_n_eff"] = float(np.ravel(res["nuts"].info["n_eff"])[list(ex.parameters).index(par)]
                                          if form == "sigmoid" else np.ravel(res["nuts"].info["n_eff"])[0])
                row["nuts_s"], row["svi_s"] = res["nuts_s"], res["svi_s"]
                rows.append(row)
            if form == "rules":
                rows = [r for r in rows if not (r["form"] == "rules" and r["parameter"].endswith("[disjunctive]"))]
    return pd.DataFrame(rows)


def figure(summary: pd.DataFrame, path: Path) -> None:
    from matplotlib.figure import Figure  # no pyplot: a file, no display

    fig = Figure(figsize=(9, 3.4))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, rp in zip(axes, ("sequence", "episode"), strict=True):
        s = summary[(summary.rule_per == rp) & summary.get("fewer_trials", pd.Series(dtype=float)).notna()]
        for agent, g in s.groupby("agent"):
            ax.errorbar(g.machine, g.fewer_trials, yerr=[g.fewer_trials - g.fewer_trials_lo,
                                                         g.fewer_trials_hi - g.fewer_trials], marker="o",
                        capsize=3, label=agent.replace("eig-transfer", "transfer"))
        ax.axhline(0, color="k", lw=0.8)
        ax.set_title("rule per sequence (task)" if rp == "sequence" else "rule per machine (control)")
        ax.set_xlabel("machine in the sequence")
    axes[0].set_ylabel("fewer trials to solve than\nno transfer (paired, 95% CI)")
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def run(cfg: Config, parts: tuple[str, ...] | None = None) -> dict:
    parts = cfg.parts if parts is None else parts
    out = Path(cfg.out) / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=2))
    result: dict = {}
    with single_thread(cfg.threads):
        if "crosscheck" in parts:
            cc = crosscheck(cfg)
            cc.to_csv(out / "crosscheck.csv", index=False)
            result["crosscheck"] = cc
        if "pattern" in parts:
            pat = pattern(cfg)
            pat.to_csv(out / "pattern.csv", index=False)
            result["pattern"] = pat
        if "env" in parts:  # sequence i of every agent from default_rng([seed, i]): paired comparisons
            env = "causalplay/Overhypothesis-v0"
            keep = [v for v in family_of(env).variants(env) if dict(v)["rule_per"] in cfg.rule_per]
            df = run_benchmark([env], cfg.agents, cfg.n_sequences, [cfg.seed], out, shard_size=cfg.shard_size,
                               executor=cfg.executor, workers=cfg.workers, env_kwargs={"n_episodes": cfg.n_episodes},
                               variants=keep)
            # means with 95% CIs by (rule_per, agent, machine), and paired gains over the baseline
            summary = summarise_by_machine(df.rename(columns={"episode": "sequence"}),
                                           reference=BASELINE if BASELINE in set(df.agent) else None)
            summary.to_csv(out / "summary.csv", index=False)
            (out / "summary.md").write_text(summary.round(3).to_markdown(index=False) if find_spec("tabulate")
                                            else summary.round(3).to_string(index=False))
            figure(summary, out / "transfer.png")
            result["summary"] = summary
    return result


def main(argv: list[str] | None = None) -> None:
    cfg = parse_config(Config, argv, smoke=SMOKE, description=__doc__.split("\n")[0])
    for k, v in run(cfg).items():
        print(k)
        print(v.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
