"""Physics puzzles (PHYRE protocol): the agents' AUCCESS table over 10 folds, success curves, a contact sheet of
every template and a GIF of one solved task.

Single file: every setting is a field of :class:`Config`. The agents run through the package's benchmark runner
(:func:`causalplay.bench.runner.run_benchmark`: a verified, resumable shard per tier x fold x setting x agent, on
any executor) into ``runs/<name>/`` (``shards/``, ``episodes.csv``: one row per task play); this script adds
``table.md`` (the table with PHYRE's beside, the Wilcoxon tests, and success@10 by position in the fold's
sequence: ``positions.csv``), ``summary.csv``, ``config.json`` and the figures (``--docs`` copies them to
``docs/img/physics_*``). A rerun reuses every finished shard.

    python analyses/physics_table.py --workers 2 --docs     # the docs table
    python analyses/physics_table.py --name physics_full --n-tasks 100 --test-tasks 200   # PHYRE's task counts
    python analyses/physics_table.py --smoke                # a minute; what the test runs

``--stage dev`` tunes instead: each agent trains on a fold's train split alone and plays its dev split, and
``tuned.md`` names the agent spec with the highest mean AUCCESS per tier and setting (PHYRE's procedure; the test
split is never seen). A ``--stage test`` run of that spec then trains on train + dev.

Every option is a field of :class:`Config` (``--help``; lists are space-separated: ``--folds 0 1 --agents random mem``).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

#: PHYRE's Table 1a (AUCCESS, mean +- SD over 10 folds): a reference, not a reproduction (different templates).
PAPER = {("B", "cross"): {"random": "13.0 ± 5.0", "mem": "18.5 ± 5.1", "mem-o": "22.8 ± 5.0", "dqn": "36.8 ± 9.7",
                          "dqn-o": "56.2 ± 10.5"},
         ("B", "within"): {"random": "13.7 ± 0.5", "mem": "2.4 ± 0.3", "dqn": "77.6 ± 1.1"},
         ("2B", "cross"): {"random": "2.6 ± 1.5", "mem": "3.7 ± 2.3", "mem-o": "4.9 ± 3.1", "dqn": "23.2 ± 9.1",
                           "dqn-o": "39.6 ± 11.1"},
         ("2B", "within"): {"random": "3.6 ± 0.6", "mem": "3.2 ± 0.2", "dqn": "67.8 ± 1.5"}}


@dataclass
class Config:
    name: str = "physics_table"
    tiers: tuple[str, ...] = ("B-v2", "2B-v2")  # world version 2; ("B", "2B"): the deprecated version 0's table
    settings: tuple[str, ...] = ("within", "cross")
    agents: tuple[str, ...] = ("random", "mem", "mem-o", "dqn", "dqn-o", "ssup")
    folds: tuple[int, ...] = tuple(range(10))
    seed: int = 0
    test_tasks: int = 8  # test tasks per fold and setting (a stable-hash sample of the fold's test split)
    templates: tuple[int, ...] | None = None  # None: all
    n_tasks: int = 20  # tasks 0..n_tasks-1 of each template (100 exist; compute, see docs/physics.md)
    executor: str = "process"
    workers: int = 2
    runs_dir: str = "runs"
    # where tasks, outcome tables and trained networks are kept (None: the run's own folder); another run's folder
    # lets a run score more agents on that run's tasks without simulating its outcome tables again
    cache: str | None = None
    docs: bool = False  # copy the figures to docs/img
    smoke: bool = False  # start from SMOKE: a tiny run (what the test runs)
    # paired comparisons over folds for table.md, each "A/B" (two agent specs): mean A - B, its SE, folds where A is
    # ahead, Wilcoxon p; ssup against each DQN-O spec is always there
    pairs: tuple[str, ...] = ()
    # "test": train on train + dev, play test (the table); "dev": train on train, play dev (tuning; writes tuned.md)
    stage: str = "test"


SMOKE = Config(name="physics_smoke", tiers=("B-v2",),
               agents=("random", "mem", "mem-o", "dqn:steps=20", "dqn-o:steps=20", "ssup:n_cand=6"),
               folds=(0,), test_tasks=3, templates=(0, 2, 10), n_tasks=10, executor="serial", workers=1, smoke=True)
# world version 0 (deprecated ids: the documented table) and version 2 (as hard as PHYRE for a random agent)
ENVS = {"B": "causalplay/PhysicsB-v0", "2B": "causalplay/Physics2B-v0", "2B-v1": "causalplay/Physics2B-v1",
        "B-v2": "causalplay/PhysicsB-v2", "2B-v2": "causalplay/Physics2B-v2"}


def prepare(cfg: Config, out: Path, ex) -> None:
    """The training pool's tasks and outcomes, which every shard's training reads, made in parallel (cached in
    ``out``) before the shards start, so the first workers do not all make them."""
    from causalplay.envs.physics_templates import ACTIONS, task_keys

    from causalplay.agents.physics import POOL, outcomes
    from causalplay.core.specs import parse_spec

    # every action set and pool an agent asks for (``mem:n_actions=10000:pool=None``); ssup and the defaults use
    # ACTIONS and POOL
    asked = {(ACTIONS, POOL)} | {(int(kw.get("n_actions", ACTIONS)), kw.get("pool", POOL))
                                 for kw in (parse_spec(a).kwargs for a in cfg.agents)}
    for tier in cfg.tiers:
        for n, pool_size in sorted(asked, key=lambda x: (x[0], x[1] is None, x[1] or 0)):
            t0 = time.perf_counter()
            pool, _ = outcomes(tier, task_keys(cfg.templates, cfg.n_tasks), out, ex, n_actions=n, pool=pool_size)
            print(f"[{tier}] {len(pool)} training-pool tasks and their outcomes on {n} actions ready "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)


def table(summary: pd.DataFrame, cfg: Config) -> str:
    """Markdown: AUCCESS mean ± SD over folds per agent (rows) and tier/setting (columns), paper beside
    (``summary``: :meth:`PhysicsFamily.table <causalplay.bench.physics.PhysicsFamily.table>` with a tier column)."""
    cols = [(t, s) for t in cfg.tiers for s in cfg.settings]
    ours = "ours" if cfg.stage == "test" else "ours, dev split"
    head = "| agent | " + " | ".join(f"{t} {s} ({ours})" for t, s in cols) + " | " + " | ".join(
        f"{t.split('-')[0]} {s} (PHYRE)" for t, s in cols) + " |"
    lines = [head, "|" + "---|" * (1 + 2 * len(cols))]
    for a in cfg.agents:
        cells = []
        for t, s in cols:
            r = summary[(summary.tier == t) & (summary.setting == s) & (summary.agent == a)]
            cells.append(f"{r.auccess.iloc[0]:.1f} ± {r.auccess_sd.iloc[0]:.1f}" if len(r) else "")
        # a spec's row: its agent's reference (B-v2 beside PHYRE's B, 2B-v1 and 2B-v2 beside PHYRE's 2B)
        ref = [PAPER.get((c[0].split("-")[0], c[1]), {}).get(a.split(":")[0], "–") for c in cols]
        lines.append(f"| {a} | " + " | ".join(cells) + " | " + " | ".join(ref) + " |")
    return "\n".join(lines) + "\n"


def paired(per_fold: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """Agent ``a`` minus agent ``b`` per (tier, setting) over the folds both played (``per_fold``: one AUCCESS per
    tier, setting, agent and fold): mean difference, its standard error (SD / sqrt(folds)), folds where ``a`` is
    ahead, and the two-sided Wilcoxon signed-rank p-value."""
    from causalplay.bench.metrics import wilcoxon

    rows = []
    for (t, s), g in per_fold.groupby(["tier", "setting"]):
        per = g.pivot(index="fold", columns="agent", values="auccess")
        missing = [x for x in (a, b) if x not in per]
        if missing:
            raise ValueError(f"pair {a}/{b}: no AUCCESS for {missing} in {t} {s}; agents run: {sorted(per)}")
        both = per[[a, b]].dropna()
        d = (both[a] - both[b]).to_numpy()
        rows.append({"tier": t, "setting": s, "a": a, "b": b, "folds": len(d), "diff": d.mean(),
                     "se": d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan"),
                     "ahead": int((d > 0).sum()), "p": wilcoxon(both[a].to_numpy(), both[b].to_numpy())[1]})
    return pd.DataFrame(rows)


def positions(rec: pd.DataFrame, edges: tuple[int, ...] = (1, 5, 20)) -> pd.DataFrame:
    """Success within 10 attempts (%) by a task's position in the fold's sequence (the order an online agent plays
    and learns in: the fold's played tasks in key order), per tier, setting and agent over all folds; positions
    binned at ``edges`` (``(1, 5, 20)``: task 1, tasks 2-5, 6-20, 21 on). Offline agents play the same positions,
    so their rows show how hard each bin's tasks are."""
    from causalplay.bench.physics import tier_of

    d = rec.assign(tier=rec.env.map(tier_of))
    d["position"] = d.groupby(["tier", "setting", "agent", "fold"]).key.rank(method="first").astype(int)
    bounds = [0, *edges, np.inf]
    names = [f"{lo + 1}" if hi == lo + 1 else f"{lo + 1}-{int(hi)}" if np.isfinite(hi) else f"{lo + 1}+"
             for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
    d["positions"] = pd.cut(d.position, bounds, labels=names)
    d["success10"] = 100.0 * d.solved_at.between(1, 10)
    g = d.groupby(["tier", "setting", "agent", "positions"], observed=True, sort=False)
    out = g.agg(tasks=("success10", "size"), success10=("success10", "mean")).reset_index()
    return out.sort_values(["tier", "setting", "agent", "positions"], kind="stable", ignore_index=True)


def tuned(per_fold: pd.DataFrame, agents) -> pd.DataFrame:
    """Per (tier, setting): the agent spec with the highest mean AUCCESS over folds (``per_fold``: one AUCCESS per
    tier, setting, agent and fold; a tie goes to the spec listed first in ``agents``, never to float noise: means are
    compared to 1e-9), with its mean and SE over folds, and the runner-up's paired difference."""
    rows = []
    for (t, s), g in per_fold.groupby(["tier", "setting"]):
        per = g.pivot(index="fold", columns="agent", values="auccess")
        order = [a for a in agents if a in per]
        mean = per[order].mean()
        best = next(a for a in order if mean[a] >= mean.max() - 1e-9)
        rest = [a for a in order if a != best]
        second = max(rest, key=lambda a: (mean[a], -rest.index(a))) if rest else None
        lead = paired(g, best, second).iloc[0] if second else {"diff": float("nan"), "se": float("nan")}
        rows.append({"tier": t, "setting": s, "best": best, "auccess": mean[best],
                     "se": per[best].std(ddof=1) / np.sqrt(len(per)) if len(per) > 1 else float("nan"),
                     "folds": len(per), "second": second, "lead": lead["diff"], "lead_se": lead["se"]})
    return pd.DataFrame(rows)


def contact_sheet(tasks, path: Path, res: int = 128) -> None:
    """``tasks`` (task 0 of every template) with their stored solution ball(s), 5 per row, labelled."""
    from causalplay.envs.physics_sim import render, render_rgb
    from causalplay.envs.physics_templates import TEMPLATES, to_balls
    from PIL import Image, ImageDraw

    tiles = []
    for t in tasks:
        im = Image.fromarray(render_rgb(render(t.scene, to_balls(t.solution), res=res)))
        ImageDraw.Draw(im).text((3, 2), TEMPLATES[t.template], fill=(0, 0, 0))
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


def run(cfg: Config) -> pd.DataFrame:
    from causalplay.envs.physics_templates import TEMPLATES, get_task

    from causalplay.bench.executors import make_executor
    from causalplay.bench.metrics import wilcoxon
    from causalplay.bench.physics import PhysicsFamily, tier_of
    from causalplay.bench.runner import run_benchmark

    out = Path(cfg.runs_dir) / cfg.name
    fam = PhysicsFamily()
    cache = Path(cfg.cache) if cfg.cache is not None else out
    env_kwargs = {"cache": str(cache), "n_tasks": cfg.n_tasks,
                  **({"templates": list(cfg.templates)} if cfg.templates is not None else {}),
                  **({"stage": cfg.stage} if cfg.stage != "test" else {})}  # test runs keep their shards' manifests
    fam.check_env(ENVS[cfg.tiers[0]], env_kwargs)  # a bad option fails before anything is written or simulated
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=1))
    variants = [v for v in fam.variants(ENVS[cfg.tiers[0]]) if dict(v)["fold"] in cfg.folds
                and dict(v)["setting"] in cfg.settings]
    with make_executor(cfg.executor, workers=cfg.workers) as ex:
        prepare(cfg, cache, ex)
        rec = run_benchmark([ENVS[t] for t in cfg.tiers], list(cfg.agents), cfg.test_tasks, [cfg.seed], out,
                            executor=ex, env_kwargs=env_kwargs, variants=variants)
    per_fold = pd.DataFrame(fam.summarise(rec)).assign(tier=lambda d: d.env.map(tier_of))
    summary = fam.table(per_fold.to_dict("records")).assign(tier=lambda d: d.env.map(tier_of))
    summary.to_csv(out / "summary.csv", index=False)
    notes = []
    for (t, s), g in per_fold.groupby(["tier", "setting"]):
        per = g.pivot(index="fold", columns="agent", values="auccess")
        for d in (c for c in per if c.split(":")[0] == "dqn-o" and "ssup" in per):  # each DQN-O spec run
            _, p = wilcoxon(per["ssup"].to_numpy(), per[d].to_numpy())
            notes.append(f"- {t} {s}: ssup - {d} = {(per['ssup'] - per[d]).mean():+.1f} AUCCESS points"
                         f" (mean over folds), Wilcoxon two-sided p = {p:.3g}")
    for pair in cfg.pairs:
        a, sep, b = pair.partition("/")
        if not sep or not a or not b:
            raise ValueError(f"pairs entry {pair!r} must be two agent specs joined by '/', e.g. 'ssup/dqn-o'")
        notes += [f"- {r.tier} {r.setting}: {a} - {b} = {r['diff']:+.1f} (SE {r.se:.1f}; ahead on {r.ahead} of "
                  f"{r.folds} folds), Wilcoxon two-sided p = {r.p:.3g}" for _, r in paired(per_fold, a, b).iterrows()]
    pos = positions(rec)
    pos.to_csv(out / "positions.csv", index=False)
    wide = pos.pivot_table(index=["tier", "setting", "agent"], columns="positions", values="success10",
                           observed=True, sort=False)
    bins = [f"task {c}" if c.isdigit() else f"tasks {c}" for c in wide.columns]
    notes += ["\nsuccess@10 (%) by position in the fold's sequence of tasks (an online agent learns along it):\n",
              "| tier | setting | agent | " + " | ".join(bins) + " |",
              "|---|---|---|" + "---|" * len(wide.columns)]
    notes += [f"| {t} | {s} | {a} | " + " | ".join(f"{v:.1f}" for v in row) + " |" for (t, s, a), row in
              zip(wide.index, wide.to_numpy(), strict=True)]
    text = table(summary, cfg) + "\n" + "\n".join(notes) + "\n"
    (out / "table.md").write_text(text)
    print(text)
    if cfg.stage == "dev":
        best = tuned(per_fold, cfg.agents)
        best.to_csv(out / "tuned.csv", index=False)
        lines = [f"- {r.tier} {r.setting}: `{r.best}` ({r.auccess:.1f} ± {r.se:.1f} SE over {r.folds} folds)"
                 + (f", {r.lead:+.1f} (SE {r.lead_se:.1f}) ahead of `{r.second}`" if r.second else "")
                 for r in best.itertuples()]
        text = "Best on the dev split (mean AUCCESS over folds):\n\n" + "\n".join(lines) + "\n"
        (out / "tuned.md").write_text(text)
        print(text)
    fam.plots(rec, out)
    tier, templates = cfg.tiers[0], cfg.templates or range(len(TEMPLATES))
    contact_sheet([get_task(tier, f"{t:02d}:000", str(cache)) for t in templates], out / "physics_templates.png")
    rollout_gif(get_task(tier, f"{7 if 7 in templates else templates[0]:02d}:000", str(cache)),  # chain_push_shelf:
                out / "physics_rollout.gif")  # a two-collision solution
    if cfg.docs:
        for f in ("physics_templates.png", "physics_rollout.gif", "success_physics.png"):
            shutil.copy(out / f, Path("docs/img") / f.replace("success_physics", "physics_curves"))
    return summary


def main(argv: list[str] | None = None) -> None:
    from causalplay.cli.config import parse_config

    run(parse_config(Config, argv, smoke=SMOKE, description=__doc__))


if __name__ == "__main__":
    main()
