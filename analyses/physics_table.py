"""Physics puzzles (PHYRE protocol): the agents' AUCCESS table over 10 folds, success curves, a contact sheet of
every template and a GIF of one solved task.

Single file: every setting is a field of :class:`Config`. The run generates (or reads) the task pools and the
training-pool outcomes, then scores every (tier, setting, agent, fold) shard through an executor, appending each
shard's per-task records to ``records.csv`` as it arrives (a rerun skips the shards already there), and writes
``table.md``, ``summary.csv``, ``config.json`` and the figures under ``runs/<name>/`` (``--docs`` also copies the
figures to ``docs/img/physics_*``).

    python analyses/physics_table.py --workers 2            # the docs table
    python analyses/physics_table.py --name physics_full --n-tasks 100 --max-test 0   # PHYRE's sizes of tasks
    python analyses/physics_table.py --smoke                # a minute; what the test runs
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

#: PHYRE's Table 1a (AUCCESS, mean +- SD over 10 folds): a reference, not a reproduction (different templates).
PAPER = {("B", "cross"): {"rand": "13.0 ± 5.0", "mem": "18.5 ± 5.1", "mem-o": "22.8 ± 5.0", "dqn": "36.8 ± 9.7",
                          "dqn-o": "56.2 ± 10.5"},
         ("B", "within"): {"rand": "13.7 ± 0.5", "mem": "2.4 ± 0.3", "dqn": "77.6 ± 1.1"},
         ("2B", "cross"): {"rand": "2.6 ± 1.5", "mem": "3.7 ± 2.3", "mem-o": "4.9 ± 3.1", "dqn": "23.2 ± 9.1",
                           "dqn-o": "39.6 ± 11.1"},
         ("2B", "within"): {"rand": "3.6 ± 0.6", "mem": "3.2 ± 0.2", "dqn": "67.8 ± 1.5"}}


@dataclass
class Config:
    name: str = "physics_table"
    tiers: tuple[str, ...] = ("B", "2B")
    settings: tuple[str, ...] = ("within", "cross")
    agents: tuple[str, ...] = ("rand", "mem", "mem-o", "dqn", "dqn-o", "ssup")
    folds: tuple[int, ...] = tuple(range(10))
    seed: int = 0
    max_test: int | None = 8  # test tasks per fold (stable-hash sample); None: the whole test split
    templates: tuple[int, ...] | None = None  # None: all
    n_tasks: int = 20  # tasks 0..n_tasks-1 of each template (100 exist; compute, see docs/physics.md)
    executor: str = "process"
    workers: int = 2
    runs_dir: str = "runs"


SMOKE = dict(name="physics_smoke", tiers=("B",), agents=("rand", "mem", "mem-o", "dqn:steps=20", "dqn-o:steps=20",
                                                         "ssup:n_cand=6"),
             folds=(0,), max_test=3, templates=(0, 2, 10), n_tasks=10, executor="serial", workers=1)


def prepare(cfg: Config, out: Path, ex) -> None:
    """Task pools and training-pool outcomes for every tier (cached in ``out``)."""
    from causalplay.envs.physics_templates import load_tasks

    from causalplay.agents.physics import outcomes

    for tier in cfg.tiers:
        t0 = time.perf_counter()
        tasks = load_tasks(tier, out, ex, cfg.templates, cfg.n_tasks)
        outcomes(tier, out, ex)
        print(f"[{tier}] {len(tasks)} tasks and training-pool outcomes ready ({time.perf_counter() - t0:.0f} s)",
              flush=True)


def table(summary: pd.DataFrame, cfg: Config) -> str:
    """Markdown: AUCCESS mean ± SD over folds per agent (rows) and tier/setting (columns), paper beside."""
    cols = [(t, s) for t in cfg.tiers for s in cfg.settings]
    head = "| agent | " + " | ".join(f"{t} {s} (ours)" for t, s in cols) + " | " + " | ".join(
        f"{t} {s} (PHYRE)" for t, s in cols) + " |"
    lines = [head, "|" + "---|" * (1 + 2 * len(cols))]
    for a in cfg.agents:
        cells = []
        for t, s in cols:
            r = summary[(summary.tier == t) & (summary.setting == s) & (summary.agent == a)]
            cells.append(f"{r.auccess_mean.iloc[0]:.1f} ± {r.auccess_sd.iloc[0]:.1f}" if len(r) else "")
        ref = [PAPER.get(c, {}).get(a.split(":")[0], "–") for c in cols]  # a spec's row: its agent's reference
        lines.append(f"| {a} | " + " | ".join(cells) + " | " + " | ".join(ref) + " |")
    return "\n".join(lines) + "\n"


def plot_curves(rec: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from causalplay.bench.metrics import success_curve

    groups = sorted(rec.groupby(["tier", "setting"]).groups)
    fig, axes = plt.subplots(1, len(groups), figsize=(4 * len(groups), 3.4), squeeze=False)
    for ax, (tier, setting) in zip(axes[0], groups, strict=True):
        sub = rec[(rec.tier == tier) & (rec.setting == setting)]
        for agent, g in sub.groupby("agent", sort=False):
            curves = np.stack([100 * success_curve(f.solved_at.to_numpy(), 100) for _, f in g.groupby("fold")])
            m, sd = curves.mean(0), curves.std(0)
            ax.plot(np.arange(1, 101), m, label=agent)
            ax.fill_between(np.arange(1, 101), m - sd, m + sd, alpha=0.15)
        ax.set(xscale="log", title=f"{tier} {setting}", xlabel="attempts", ylim=(0, 100))
    axes[0, 0].set_ylabel("% tasks solved")
    axes[0, -1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def contact_sheet(tasks, path: Path, res: int = 128) -> None:
    """Task 0 of every template with its stored solution ball(s), 5 per row, labelled."""
    from causalplay.envs.physics_sim import render, render_rgb
    from causalplay.envs.physics_templates import TEMPLATES, to_balls
    from PIL import Image, ImageDraw

    firsts = {}
    for t in tasks:
        firsts.setdefault(t.template, t)
    tiles = []
    for k, t in sorted(firsts.items()):
        im = Image.fromarray(render_rgb(render(t.scene, to_balls(t.solution), res=res)))
        ImageDraw.Draw(im).text((3, 2), TEMPLATES[k], fill=(0, 0, 0))
        tiles.append(np.asarray(im))
    blank = np.full_like(tiles[0], 230)
    rows = [np.concatenate((tiles[i:i + 5] + [blank] * 5)[:5], 1) for i in range(0, len(tiles), 5)]
    Image.fromarray(np.concatenate(rows, 0)).save(path)


def rollout_gif(task, path: Path, res: int = 192) -> None:
    """The stored solution of ``task`` simulated and drawn every 4 steps (15 frames/s of simulated time)."""
    from causalplay.envs.physics_sim import add_balls, render, render_rgb, simulate
    from causalplay.envs.physics_templates import to_balls
    from PIL import Image

    balls = to_balls(task.solution)
    r = simulate(task.scene, balls, record=4)
    full = add_balls(task.scene, balls)
    frames = [Image.fromarray(render_rgb(render(full, poses=p, res=res))) for p in r.traj]
    frames[0].save(path, save_all=True, append_images=frames[1:] + [frames[-1]] * 10, duration=66, loop=0)


def run(cfg: Config, docs: bool = False) -> pd.DataFrame:
    from causalplay.envs.physics_templates import load_tasks

    from causalplay.bench.executors import make_executor
    from causalplay.bench.physics import evaluate, summarise

    out = Path(cfg.runs_dir) / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=1))
    rec_path = out / "records.csv"
    done = set()
    if rec_path.exists():
        old = pd.read_csv(rec_path, keep_default_na=False)
        done = set(zip(old.tier, old.setting, old.agent, old.fold, strict=True))
    t0 = time.perf_counter()
    with make_executor(cfg.executor, workers=cfg.workers) as ex:
        prepare(cfg, out, ex)
        jobs = [(t, s, a, f) for f in cfg.folds for t in cfg.tiers for s in cfg.settings for a in cfg.agents
                if (t, s, a, f) not in done]  # fold by fold: an interrupted run still covers every cell
        futs = {ex.submit(evaluate, f, t, s, a, cfg.seed, max_test=cfg.max_test, cache=str(out)): (t, s, a, f)
                for t, s, a, f in jobs}
        for i, (fut, job) in enumerate(futs.items()):
            df = fut.result()
            df.to_csv(rec_path, mode="a", header=not rec_path.exists(), index=False)
            print(f"[{i + 1}/{len(jobs)}] {job}: solved {(df.solved_at > 0).mean():.2f}, "
                  f"{df.seconds.sum() + df.train_seconds.iloc[0]:.0f} s  (elapsed {time.perf_counter() - t0:.0f} s)",
                  flush=True)
    rec = pd.read_csv(rec_path, keep_default_na=False)
    rec = rec[rec.agent.isin(cfg.agents) & rec.tier.isin(cfg.tiers) & rec.fold.isin(cfg.folds)]
    summary = summarise(rec)
    summary.to_csv(out / "summary.csv", index=False)
    from causalplay.bench.metrics import auccess, wilcoxon

    notes = []
    for (t, s), g in rec.groupby(["tier", "setting"]):
        per = g.groupby(["agent", "fold"]).solved_at.apply(lambda x: auccess(x.to_numpy(), 0, 100))
        ag = [a for a in ("ssup", "dqn-o") if a in per.index.get_level_values(0)]
        if len(ag) == 2:
            stat, p = wilcoxon(per["ssup"].to_numpy(), per["dqn-o"].to_numpy())
            notes.append(f"- {t} {s}: ssup - dqn-o = {100 * (per['ssup'] - per['dqn-o']).mean():+.1f} AUCCESS points"
                         f" (mean over folds), Wilcoxon two-sided p = {p:.3g}")
    text = table(summary, cfg) + "\n" + "\n".join(notes) + "\n"
    (out / "table.md").write_text(text)
    print(text)
    plot_curves(rec, out / "physics_curves.png")
    tasks = load_tasks(cfg.tiers[0], out)
    contact_sheet(tasks, out / "physics_templates.png")
    chain = [t for t in tasks if t.template == 7]  # chain_push_shelf: a two-collision solution
    rollout_gif((chain or tasks)[0], out / "physics_rollout.gif")
    if docs:
        for f in ("physics_curves.png", "physics_templates.png", "physics_rollout.gif"):
            shutil.copy(out / f, Path("docs/img") / f)
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny run (what the test runs)")
    ap.add_argument("--docs", action="store_true", help="copy the figures to docs/img")
    for f in dataclasses.fields(Config):
        if f.type in ("int", "str", "int | None"):
            ap.add_argument(f"--{f.name.replace('_', '-')}", type=str if f.type == "str" else int)
    ap.add_argument("--agents", help="comma-separated agent specs")
    ap.add_argument("--folds", help="e.g. 0-9 or 0,3")
    args = ap.parse_args()
    cfg = Config(**SMOKE) if args.smoke else Config()
    for f in dataclasses.fields(Config):
        v = getattr(args, f.name, None)
        if v is not None and f.name not in ("agents", "folds"):
            setattr(cfg, f.name, None if f.name == "max_test" and v == 0 else v)  # --max-test 0: whole split
    if args.agents:
        cfg.agents = tuple(a.strip() for a in args.agents.split(","))
    if args.folds:
        lo, _, hi = args.folds.partition("-")
        cfg.folds = tuple(range(int(lo), int(hi) + 1)) if hi else tuple(int(x) for x in args.folds.split(","))
    run(cfg, docs=args.docs)


if __name__ == "__main__":
    main()
