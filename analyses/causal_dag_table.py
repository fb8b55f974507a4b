"""Causal DAG worlds (Lampinen et al. 2023): the agents' table -- reward as a fraction of optimal and match
with the optimal action, on train and test structures, nonlinear and linear -- plus the figures.

Single file, CleanRL style: every setting is a field of :class:`Config`; the run writes ``config.json``,
``shards/`` and ``episodes.csv`` (the benchmark runner's: resumable, any executor), ``results.json``, ``table.md``
and ``*.png`` under ``runs/<name>/``. The behaviour-cloned passive learner is trained first (on train-split expert
episodes of the nonlinear task) unless ``bc_episodes`` is 0.

    python analyses/causal_dag_table.py                     # the docs table (10^3 episodes per cell)
    python analyses/causal_dag_table.py --smoke             # seconds; what the test runs
    python analyses/causal_dag_table.py --help              # every Config field is an option
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from causalplay.core.specs import format_spec


@dataclass
class Config:
    name: str = "causal_dag_table"
    env_id: str = "causalplay/CausalDAG-v1"
    agents: tuple[str, ...] = ("expert", "random", "value", "change", "total-corr", "partial-corr", "notears",
                               "eig", "eig:target='action'", "bc")
    episodes: int = 1000
    seeds: tuple[int, ...] = (0,)
    splits: tuple[str, ...] = ("train", "test")
    linear: tuple[bool, ...] = (False, True)
    notears_episodes: int = 1000
    eig_episodes: int = 1000
    eig_action_episodes: int = 1000
    bc_episodes: int = 20000
    bc_epochs: int = 15
    runs_dir: str = "runs"
    episodes_per_agent: dict[str, int] = field(default_factory=dict)
    executor: str = "serial"  # serial, process, ray or dask (causalplay.bench.executors)
    workers: int | None = None
    address: str | None = None


SMOKE = dict(name="causal_dag_smoke", episodes=8, agents=("expert", "random", "value", "change", "total-corr",
                                                          "partial-corr", "eig", "bc"),
             bc_episodes=200, bc_epochs=2, eig_episodes=8, eig_action_episodes=8)


def run(cfg: Config) -> list[dict]:
    from causalplay.bench.runner import family_of, run_benchmark
    from causalplay.rl.bc import train_bc

    out = Path(cfg.runs_dir) / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=1))
    t0 = time.perf_counter()
    agents = list(cfg.agents)
    if "bc" in agents:
        if cfg.bc_episodes > 0 and not (out / "bc" / "policy.pt").exists():  # an existing checkpoint is reused
            train_bc(out / "bc", n_episodes=cfg.bc_episodes, epochs=cfg.bc_epochs, env_id=cfg.env_id,
                     log=lambda s: None)
        agents[agents.index("bc")] = format_spec("bc", path=str(out / "bc" / "policy.pt"))
    caps = {"notears": cfg.notears_episodes, "eig": cfg.eig_episodes,
            "eig:target='action'": cfg.eig_action_episodes, **cfg.episodes_per_agent}
    keep = [v for v in family_of(cfg.env_id).variants(cfg.env_id)
            if dict(v)["split"] in cfg.splits and dict(v)["linear"] in cfg.linear]
    df = run_benchmark([cfg.env_id], agents, cfg.episodes, cfg.seeds, out, executor=cfg.executor,
                       workers=cfg.workers, address=cfg.address, episodes_per_agent=caps, variants=keep)
    rows = family_of(cfg.env_id).summarise(df)
    for r in rows:
        if r["agent"].startswith("bc:"):
            r["agent"] = "bc"
    (out / "results.json").write_text(json.dumps(rows, indent=1))
    (out / "table.md").write_text(markdown_table(rows))
    figures(rows, out)
    print(f"wall time {time.perf_counter() - t0:.1f} s")
    return rows


def markdown_table(rows: list[dict]) -> str:
    """Per agent and world and split: reward % of optimal (min-max), the paper's plain ratio of mean reward to mean
    optimal reward, and % matching the optimal action; mean ± 95% CI half-width."""
    df = pd.DataFrame(rows)
    head = [f"{split}: {what}" for split in ("train", "test") for what in ("reward % of optimal", "ratio %", "match %")]
    lines = ["| agent | world | episodes | " + " | ".join(head) + " |", "|---|---|---|" + "---|" * len(head)]
    for (agent, lin), g in df.groupby(["agent", "linear"], sort=False):
        cells, eps = [], []
        for split in ("train", "test"):
            r = g[g.split == split]
            if len(r):
                r = r.iloc[0]
                eps.append(str(r["episodes"]))
                cells += [f"{100 * r[m]:.1f} ± {100 * r[m + '_ci']:.1f}"
                          for m in ("reward_pct_optimal", "reward_ratio_optimal", "match_optimal")]
            else:
                cells += ["", "", ""]
        lines.append(f"| {agent} | {'linear' if lin else 'nonlinear'} | {'/'.join(eps)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def figures(rows: list[dict], out: Path) -> None:
    """Bar charts as the appendix shows: reward % of optimal, and match with the optimal (expert) action."""
    import numpy as np
    from matplotlib.figure import Figure  # no pyplot: files, no display

    df = pd.DataFrame(rows)
    for metric, label, fname in (("reward_pct_optimal", "goal reward (% of optimal)", "reward_pct_optimal.png"),
                                 ("match_optimal", "goal action matches optimal (%)", "match_optimal.png")):
        fig = Figure(figsize=(11, 3.6))
        axes = fig.subplots(1, 2, sharey=True)
        for ax, lin in zip(axes, (False, True), strict=True):
            g = df[df.linear == lin]
            agents = list(dict.fromkeys(g.agent))
            x = np.arange(len(agents))
            for k, split in enumerate(("train", "test")):
                s = g[g.split == split].set_index("agent").reindex(agents)
                ax.bar(x + (k - 0.5) * 0.4, 100 * s[metric], 0.4, yerr=100 * s[metric + "_ci"], label=split,
                       capsize=2)
            ax.set_xticks(x, agents, rotation=45, ha="right", fontsize=8)
            ax.set_title("linear" if lin else "nonlinear (leaky ReLU)")
            ax.set_ylim(0, 105)
        axes[0].set_ylabel(label)
        axes[0].legend(title="structures", fontsize=8)
        fig.tight_layout()
        fig.savefig(out / fname, dpi=110)


def main(argv: list[str] | None = None) -> None:
    """Every :class:`Config` field is an option; ``--smoke`` starts from the smoke settings."""
    from causalplay.cli.config import parse_config
    from causalplay.core.beliefs import single_thread

    cfg = parse_config(Config, argv, smoke=Config(**SMOKE), description=__doc__.splitlines()[0])
    with single_thread(1):  # small tensors: threads only add contention
        run(cfg)


if __name__ == "__main__":
    main()
