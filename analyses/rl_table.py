"""The IVRE / EST papers' RL rows beside ours: trained checkpoints scored by the benchmark, with budgets and curves.

Usage::

    .venv/bin/python analyses/rl_table.py                  # every run under runs/rl, 10^4 episodes each
    .venv/bin/python analyses/rl_table.py --smoke          # tiny runs trained here, 2 x 50 episodes (tests)

A single file in the CleanRL style: one :class:`Config` dataclass, one ``main``. It scores every
``causalplay train`` folder under ``Config.runs`` (folders whose name ends in ``-s<seed>`` are training seeds of
one row, e.g. ``ppo-ff-s0``, ``ppo-ff-s1``) with the benchmark (:func:`causalplay.bench.runner.run_benchmark`,
spec ``rl:path=DIR:name=FOLDER``) on ``Config.env`` -- ``eval_seeds`` seeds x ``episodes / eval_seeds`` episodes
each -- and writes under ``runs/<name>/``:

* ``table.md`` / ``table.csv``: per row, training seeds, env steps trained, wall time, steps/s, context and
  episode Acc / R (mean over training seeds; the 95% CI is over training seeds when there are >= 2, else over
  evaluation seeds), the within-template **test fold** episode Acc (PHYRE-style split of the benchmark's
  episodes), and the paper's row beside ours;
* ``learning_curves.png``: every run's held-out eval curve in one figure;
* ``cross_template.md``: the best row's checkpoints on ``Config.cross_env`` (trained on the disjunctive IVRE,
  scored on the conjunctive variant).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from causalplay.core.specs import format_spec

IVRE, EST = "causalplay/IVRE-v0", "causalplay/EST-v1"

#: The papers' RL rows (10^7 training steps, Tianshou): context Acc %, context R, episode Acc %, episode R.
#: The EST paper reports episode Acc / R only (None for the context columns).
PAPER: dict[tuple[str, str], tuple] = {
    (IVRE, "ddpg-ff"): (22.47, -0.17, 32.47, -3.70),
    (IVRE, "ddpg-re"): (13.55, -2.03, 46.03, -0.29),
    (IVRE, "td3-re"): (12.57, -2.40, 36.83, -2.71),
    (IVRE, "td3-ff"): (21.91, -0.42, 30.05, -4.48),
    (IVRE, "ppo-ff"): (6.87, -3.87, 28.56, -5.85),
    (EST, "ddpg-ff"): (None, None, 11.86, -8.73),
    (EST, "ddpg-re"): (None, None, 8.51, -10.32),
    (EST, "td3-ff"): (None, None, 6.39, -9.55),
    (EST, "td3-re"): (None, None, 7.11, -11.60),
    (EST, "ppo-ff"): (None, None, 2.70, -10.60),
}


@dataclass
class Config:
    """What to score and where to write it."""

    name: str = "rl_table"
    runs: str = "runs/rl"
    env: str = IVRE
    cross_env: str = "causalplay/IVRE-Conjunctive-v0"
    episodes: int = 10_000
    eval_seeds: int = 5
    workers: int = 1
    smoke: bool = False
    #: episodes of the belief-input rows' trials-vs-belief diagnosis (:func:`belief_diagnosis`)
    diagnosis_episodes: int = 2000
    #: smoke setting: tiny runs trained here (agent, --recurrent, steps) on tiny networks
    smoke_runs: tuple[tuple[str, bool, int], ...] = (("ppo", False, 128), ("td3", True, 128))
    out_root: str = "runs"


SMOKE = Config(name="rl_table_smoke", episodes=100, eval_seeds=2, diagnosis_episodes=40, smoke=True)


def row_of(folder: str) -> str:
    """``ppo-ff-s2`` -> ``ppo-ff`` (training seeds of one row share it)."""
    return re.sub(r"-s\d+$", "", folder)


def paper_row(row: str) -> str | None:
    """The papers' row a row of ours stands beside: ``ddpg-ff-4m`` -> ``ddpg-ff`` (a budget suffix such as
    ``-4m`` or ``-10m`` names a longer run of the same agent); ``None`` for belief-input rows (no paper row)."""
    if "-belief" in row:
        return None
    return re.sub(r"-\d+(?:\.\d+)?[km]$", "", row)


def train_smoke(cfg: Config, root: Path) -> None:
    from causalplay.rl.train import TrainConfig, train

    tiny = {"ppo": {"net_arch": [32, 32], "n_steps": 16, "batch_size": 128},
            "td3": {"net_arch": [32, 32], "learning_starts": 64, "batch_size": 32, "buffer_size": 2000}}
    for agent, recurrent, steps in cfg.smoke_runs:
        tc = TrainConfig(agent=agent, out=str(root / f"{agent}-{'re' if recurrent else 'ff'}-s0"), env=cfg.env,
                         steps=steps, seed=0, envs=8, recurrent=recurrent, eval_every=steps // 2, eval_episodes=20,
                         hyper=tiny[agent])
        train(tc, progress=False)


def runs_found(root: Path) -> dict[str, Path]:
    """Folder name -> folder for every finished-at-least-once training run under ``root``."""
    return {d.name: d for d in (sorted(root.iterdir()) if root.exists() else ())
            if (d / "config.json").is_file() and any(d.glob("best.*"))}


def score(cfg: Config, runs: dict[str, Path], env: str, out: Path) -> pd.DataFrame:
    """Benchmark episodes of every run on ``env`` (``agent`` column = folder name)."""
    from causalplay.bench.runner import make_executor, run_benchmark

    per_seed = max(1, cfg.episodes // cfg.eval_seeds)
    specs = [format_spec("rl", path=str(d), name=n) for n, d in runs.items()]
    return run_benchmark([env], specs, per_seed, range(cfg.eval_seeds), out, shard_size=per_seed,
                         executor=make_executor("serial" if cfg.workers <= 1 else "process", cfg.workers),
                         progress=not cfg.smoke)


def summarise(cfg: Config, runs: dict[str, Path], df: pd.DataFrame) -> pd.DataFrame:
    from causalplay.core.metrics import mean_ci

    rows = []
    for row in dict.fromkeys(row_of(n) for n in runs):
        folders = [n for n in runs if row_of(n) == row]
        per_run = []
        for n in folders:
            g = df[df.agent == n]
            prog = pd.read_csv(runs[n] / "progress.csv")
            state = json.loads((runs[n] / "state.json").read_text())
            per_seed = g.groupby("seed").agg(ca=("context_solved", "mean"), cr=("context_reward", "mean"),
                                             ea=("episode_solved", "mean"), er=("episode_reward", "mean"))
            test = g[g.split == "test"]
            per_run.append({"steps": int(state["num_timesteps"]), "wall_s": float(state["wall_s"]),
                            "best_step": int(prog.loc[prog.eval_reward.idxmax(), "steps"]),
                            "episodes": len(g), "per_seed": per_seed, "test_acc": test.episode_solved.mean(),
                            "test_n": len(test)})
        preset = json.loads((runs[folders[0]] / "config.json").read_text()).get("preset") or "fast"
        rec = {"env": cfg.env, "row": row, "preset": preset, "train_seeds": len(folders),
               "steps": int(np.mean([r["steps"] for r in per_run])),
               "wall_min": float(np.mean([r["wall_s"] for r in per_run])) / 60,
               "steps_per_s": float(np.mean([r["steps"] / max(r["wall_s"], 1e-9) for r in per_run])),
               "best_step": ",".join(str(r["best_step"]) for r in per_run),
               "episodes": int(np.sum([r["episodes"] for r in per_run]))}
        for key, col, scale in (("ca", "context_acc", 100), ("cr", "context_reward", 1),
                                ("ea", "episode_acc", 100), ("er", "episode_reward", 1)):
            if len(per_run) >= 2:  # CI over training seeds (each run's mean over its evaluation episodes)
                rec[col], rec[col + "_ci"] = mean_ci([float(r["per_seed"][key].mean()) * scale for r in per_run])
            else:  # one training seed: CI over evaluation seeds
                rec[col], rec[col + "_ci"] = mean_ci((per_run[0]["per_seed"][key] * scale).tolist())
        rec["test_fold_acc"] = 100 * float(np.mean([r["test_acc"] for r in per_run]))
        rec["test_fold_episodes"] = int(np.sum([r["test_n"] for r in per_run]))
        paper = PAPER.get((cfg.env, paper_row(row)), (None,) * 4)
        rec.update(dict(zip(("paper_context_acc", "paper_context_reward", "paper_episode_acc",
                             "paper_episode_reward"), paper, strict=True)))
        rows.append(rec)
    return pd.DataFrame(rows)


def markdown(tab: pd.DataFrame, cfg: Config) -> str:
    def pm(r, c):
        return f"{r[c]:.2f} ± {r[c + '_ci']:.2f}"

    def paper(v):
        return "–" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.2f}"

    lines = [f"{cfg.env}: ours (mean ± 95% CI) beside the paper's row (10^7 steps, Tianshou).", "",
             "| row | preset | train seeds | env steps | wall min | steps/s | ctx Acc % | ctx R | ep Acc % | ep R | "
             "test-fold ep Acc % | paper ctx Acc | paper ctx R | paper ep Acc | paper ep R |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in tab.iterrows():
        lines.append(f"| {r.row} | {r.preset} | {r.train_seeds} | {r.steps:,} | {r.wall_min:.1f} | "
                     f"{r.steps_per_s:.0f} | {pm(r, 'context_acc')} | {pm(r, 'context_reward')} | "
                     f"{pm(r, 'episode_acc')} | {pm(r, 'episode_reward')} | "
                     f"{r.test_fold_acc:.2f} (n={r.test_fold_episodes}) | "
                     f"{paper(r.paper_context_acc)} | {paper(r.paper_context_reward)} | "
                     f"{paper(r.paper_episode_acc)} | {paper(r.paper_episode_reward)} |")
    return "\n".join(lines) + "\n"


def belief_diagnosis(run: Path, env: str, episodes: int, seed: int = 7) -> dict[str, dict[str, float]]:
    """Is a belief-input policy limited by the trials it runs or by the beliefs it reports?

    The same ``episodes`` (the benchmark's shard ``[seed, 0]``) played three ways: ``policy``, the policy as
    trained; ``exact-belief``, the policy's trials with its beliefs replaced by the EIG agent's (exact posterior,
    MAP guess, a guess the env did not accept excluded); ``eig``, the EIG agent alone. ``exact-belief`` far below
    ``eig``: the policy's trials do not gather the evidence; ``exact-belief`` far above ``policy``: its belief
    readout is the limit.
    """
    from causalplay.envs import make_batch

    from causalplay.agents import make_agent
    from causalplay.bench.runner import run_episodes

    def scores(solved_ctx, solved, reward) -> dict[str, float]:
        return {"context_acc": 100 * float(np.mean(solved_ctx)), "episode_acc": 100 * float(np.mean(solved)),
                "episode_reward": float(np.mean(reward))}

    out = {}
    for mode, spec in (("policy", format_spec("rl", path=str(run))), ("eig", "eig")):
        df = run_episodes(env, spec, episodes, seed, shard=0)
        out[mode] = scores(df.context_solved, df.episode_solved, df.episode_reward)
    # the mixed player: the policy reads the "history" observation and the EIG agent the panel one, so two copies
    # of the same batch (same seed: same episodes and machine noise), stepped with the same actions
    rl, eig = make_agent(format_spec("rl", path=str(run)), seed=seed), make_agent("eig", seed=seed)
    hist = make_batch(env, episodes, seed=[seed, 0], obs_mode="history")
    panel = make_batch(env, episodes, seed=[seed, 0])
    obs_h, obs_p = hist.reset(), panel.reset()
    rl.reset(hist.info(), obs_h)
    eig.reset(panel.info(), obs_p)
    n = hist.config.n_objects
    while not bool(hist.done.all()):
        active = ~hist.done
        a, b = rl.act(obs_h, active), eig.act(obs_p, active)
        a = torch.cat([a[:, :n], b[:, n:].to(a.dtype)], 1)
        obs_h, _, _, _ = hist.step(a)
        obs_p, _, _, _ = panel.step(a)
        assert bool((hist.done == panel.done).all())  # the two copies cannot drift apart
    rec = hist.record()
    out["exact-belief"] = scores(rec["context_solved"], rec["episode_solved"], rec["episode_reward"])
    return {m: out[m] for m in ("policy", "exact-belief", "eig")}


def plot_rows(runs: dict[str, Path], path: Path) -> None:
    """Held-out learning curves, one colour per row: each training seed a thin line, their mean (over the
    evaluation steps all seeds reached) a thick one; log-scaled steps, since budgets span 10^5 to 10^7."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure  # no pyplot: a file, no display

    fig = Figure(figsize=(12, 4.5))
    axes = fig.subplots(1, 2)
    rows = list(dict.fromkeys(row_of(n) for n in runs))
    colours = colormaps["tab10"](np.linspace(0, 1, 10))
    for k, row in enumerate(rows):
        curves = [pd.read_csv(runs[n] / "progress.csv") for n in runs if row_of(n) == row]
        curves = [c for c in curves if len(c)]
        if not curves:
            continue
        common = sorted(set.intersection(*(set(c.steps) for c in curves)))
        for ax, col, scale in ((axes[0], "eval_acc", 100), (axes[1], "eval_reward", 1)):
            for c in curves:
                ax.plot(c.steps, scale * c[col], color=colours[k % 10], alpha=0.3, lw=0.8)
            mean = [scale * np.mean([c.loc[c.steps == s, col].iloc[0] for c in curves]) for s in common]
            ax.plot(common, mean, color=colours[k % 10], lw=2, label=f"{row} ({len(curves)} seed"
                    f"{'s' if len(curves) > 1 else ''})")
    for ax, what in zip(axes, ("held-out episode Acc %", "held-out episode R"), strict=True):
        ax.set_xscale("log")
        ax.set_xlabel("env steps")
        ax.set_ylabel(what)
        ax.grid(alpha=0.3, which="both")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(cfg: Config) -> pd.DataFrame:
    out = Path(cfg.out_root) / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    root = out / "train" if cfg.smoke else Path(cfg.runs)
    if cfg.smoke:
        train_smoke(cfg, root)
    runs = runs_found(root)
    if not runs:
        raise SystemExit(f"no training runs (folders with config.json and best.*) under {root}")
    t0 = time.perf_counter()
    df = score(cfg, runs, cfg.env, out / "bench")
    tab = summarise(cfg, runs, df)
    tab.to_csv(out / "table.csv", index=False)
    text = markdown(tab, cfg)
    plot_rows(runs, out / "learning_curves.png")
    # cross-template: the best non-belief row, trained on the disjunctive env, scored on the conjunctive one
    pure = tab[[paper_row(r) is not None for r in tab.row]]
    best = (pure if len(pure) else tab).sort_values("episode_reward").iloc[-1].row
    cross_runs = {n: d for n, d in runs.items() if row_of(n) == best}
    cdf = score(cfg, cross_runs, cfg.cross_env, out / "bench_cross")
    ctab = summarise(replace(cfg, env=cfg.cross_env), cross_runs, cdf)
    cross = markdown(ctab, replace(cfg, env=cfg.cross_env))
    (out / "cross_template.md").write_text(f"Trained on {cfg.env}, scored on {cfg.cross_env}:\n\n{cross}")
    # belief-input rows: trials or belief readout? (each training seed on the same held-out episodes)
    diag = []
    for n, d in runs.items():
        if "-belief" in row_of(n):
            res = belief_diagnosis(d, cfg.env, cfg.diagnosis_episodes)
            diag.append({"run": n, **{f"{k}_{m}": v for k, r in res.items() for m, v in r.items()}})
    if diag:
        dd = pd.DataFrame(diag)
        dd.to_csv(out / "belief_diagnosis.csv", index=False)
        text += (f"\nBelief-input rows, {cfg.diagnosis_episodes} episodes each (episode Acc %): the policy / its "
                 "trials with the exact posterior as the belief / the EIG agent\n\n"
                 + "\n".join(f"- {r.run}: {r['policy_episode_acc']:.1f} / {r['exact-belief_episode_acc']:.1f} / "
                             f"{r['eig_episode_acc']:.1f}" for _, r in dd.iterrows()) + "\n")
    (out / "table.md").write_text(text)
    print(text)
    print(f"cross-template ({best}): trained on {cfg.env}, scored on {cfg.cross_env}\n{cross}")
    print(f"scored in {time.perf_counter() - t0:.0f} s; written to {out}/")
    return tab


def parse(argv: list[str] | None = None) -> Config:
    """The config from the command line (every field an option; ``--smoke`` starts from :data:`SMOKE`)."""
    from causalplay.cli.config import parse_config

    return parse_config(Config, argv, smoke=SMOKE, description=__doc__.split("\n")[0])


if __name__ == "__main__":
    torch.set_num_threads(1)
    main(parse())
