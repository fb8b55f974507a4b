"""Meta-RL on Overhypothesis-v0: RL policies vs the EIG agents, scored by machine index (issue 15).

Agents: the ``causalplay train`` folders in ``Config.runs`` (``rl:path=DIR``; a RecurrentPPO, whose LSTM state
carries across the machines of a sequence, and a feed-forward PPO, which sees only the current machine and its
index), plus ``eig-transfer`` and ``eig-transfer:transfer=False``. Each agent plays ``n_sequences`` sequences
with the rule drawn per sequence (the task) and per machine (the control); rows seeded ``[seed, i]``, so every
agent meets the same machines (:func:`causalplay.bench.sequences.run_sequences`).

Reported by (condition, agent, machine): mean trials-to-solve (``T + 1`` when unsolved), solve rate, episode R,
with 95% normal CIs, and the paired difference to ``eig-transfer`` (``fewer_trials`` < 0: the agent needs more).

``python analyses/overhypothesis_rl.py --runs ppo-re-belief runs/oh_rl/ppo-re-belief ...`` (name, folder pairs;
``folder:which=last`` for the last checkpoint) writes ``runs/<name>/records.csv`` (appended after every agent),
``summary.csv``, ``summary.md``, ``by_machine.png``. ``--eig-agents`` with no value scores only the runs;
``--smoke`` trains two tiny policies first (seconds) and scores them on a few sequences; ``--merge DIR ...``
summarises runs scored apart (same seed, so the same sequences) together. ``--help`` lists every option.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd

from causalplay.bench.sequences import run_sequences, summarise_by_machine
from causalplay.core.beliefs import single_thread
from causalplay.core.specs import format_spec, parse_spec

REFERENCE = "eig-transfer"


@dataclass
class Config:
    name: str = "overhypothesis_rl"
    #: row name -> ``causalplay train`` folder
    runs: dict[str, str] = field(default_factory=dict)
    eig_agents: tuple[str, ...] = ("eig-transfer:transfer=False", "eig-transfer")
    n_sequences: int = 240
    rule_per: tuple[Literal["sequence", "episode"], ...] = ("sequence", "episode")
    seed: int = 0
    threads: int = 1
    out: str = "runs"
    #: smoke only: train tiny policies into runs/<name>/train first
    train_tiny: bool = False
    #: instead of scoring: summarise the records.csv of these run folders together into runs/<name>/
    merge: tuple[str, ...] = ()


SMOKE = Config(name="overhypothesis_rl_smoke", n_sequences=4, eig_agents=("eig-transfer",), train_tiny=True)


def _train_tiny(out: Path) -> dict[str, str]:
    from causalplay.rl.train import TrainConfig, train

    hp = {"net_arch": [16], "n_steps": 16, "batch_size": 64, "n_epochs": 1}
    runs = {}
    for agent, extra in (("recurrent-ppo", {"lstm": 8}), ("ppo", {})):
        cfg = TrainConfig(agent=agent, out=str(out / agent), env="causalplay/Overhypothesis-v0", steps=128,
                          envs=8, eval_every=128, eval_episodes=4, belief_input=True, hyper={**hp, **extra})
        runs[cfg.name] = str(train(cfg, progress=False))
    return runs


def figure(summary: pd.DataFrame, path: Path) -> None:
    from matplotlib.figure import Figure  # no pyplot: a file, no display

    fig = Figure(figsize=(10, 3.6))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, rp in zip(axes, ("sequence", "episode"), strict=True):
        for agent, g in summary[summary.rule_per == rp].groupby("agent", sort=False):
            ax.errorbar(g.machine, g.trials_to_solve, yerr=[g.trials_to_solve - g.trials_to_solve_lo,
                                                            g.trials_to_solve_hi - g.trials_to_solve],
                        marker="o", capsize=3, label=agent)
        ax.set_title("rule per sequence (task)" if rp == "sequence" else "rule per machine (control)")
        ax.set_xlabel("machine in the sequence")
        ax.set_xticks(sorted(summary.machine.unique()))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("trials to solve (11 = unsolved), 95% CI")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def run(cfg: Config) -> pd.DataFrame:
    out = Path(cfg.out) / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    runs = dict(cfg.runs)
    if cfg.train_tiny:
        runs.update(_train_tiny(out / "train"))
    if not runs and not cfg.eig_agents:
        raise ValueError("nothing to score: give runs (name -> causalplay train folder) and/or eig_agents")
    for name, d in runs.items():
        if not (Path(d.split(":")[0]) / "config.json").is_file():  # DIR[:which=last]
            raise FileNotFoundError(f"run {name!r}: {d!r} is not a `causalplay train` output folder")
    (out / "config.json").write_text(json.dumps({**dataclasses.asdict(cfg), "runs": runs}, indent=2))
    runs_ = {n: parse_spec(d, what="run") for n, d in runs.items()}  # DIR[:which=last]: the folder, then rl options
    specs = [(format_spec("rl", path=r.name, name=n, **r.kwargs), n) for n, r in runs_.items()]
    specs += [(a, a) for a in cfg.eig_agents]
    frames = []
    with single_thread(cfg.threads):
        for rp in cfg.rule_per:
            for spec, label in specs:
                df = run_sequences(spec, cfg.n_sequences, cfg.seed, rule_per=rp, label=label)
                frames.append(df)
                df.to_csv(out / "records.csv", mode="w" if len(frames) == 1 else "a", header=len(frames) == 1,
                          index=False)
                print(f"{rp:8s} {label:28s} trials {df.trials_to_solve.mean():.2f} R {df.episode_reward.mean():.2f}",
                      flush=True)
    return write_summary(pd.concat(frames, ignore_index=True), out)


def write_summary(records: pd.DataFrame, out: Path) -> pd.DataFrame:
    """``summary.csv``, ``summary.md`` and ``by_machine.png`` of the records in ``out``."""
    summary = summarise_by_machine(records, reference=REFERENCE if REFERENCE in set(records.agent) else None)
    summary.to_csv(out / "summary.csv", index=False)
    (out / "summary.md").write_text(summary.round(3).to_string(index=False))
    (out / "table.md").write_text(table(summary))
    figure(summary, out / "by_machine.png")
    return summary


def table(summary: pd.DataFrame) -> str:
    """Markdown: one row per (condition, agent, measure), machines as columns, ``mean [95% CI]``."""
    K = int(summary.machine.max())
    head = "| condition | agent | measure | " + " | ".join(f"machine {k}" for k in range(1, K + 1)) + " |"
    lines = [head, "|" + "---|" * (K + 3)]
    for (rp, agent), g in summary.groupby(["rule_per", "agent"], sort=False):
        g = g.sort_values("machine")
        cond = "rule per sequence" if rp == "sequence" else "rule per machine (control)"
        for col, what, fmt in (("trials_to_solve", "trials to solve", ".2f"), ("solved", "solved", ".3f"),
                               ("episode_reward", "episode R", ".2f")):
            cells = [f"{m:{fmt}} [{lo:{fmt}}, {hi:{fmt}}]" for m, lo, hi in
                     zip(g[col], g[f"{col}_lo"], g[f"{col}_hi"], strict=True)]
            lines.append(f"| {cond} | {agent} | {what} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def merge(dirs: list[str], out: Path) -> pd.DataFrame:
    """Summarise the ``records.csv`` of several runs (e.g. the EIG agents and the RL policies scored apart,
    with the same seed and sequences) together in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    records = pd.concat([pd.read_csv(Path(d) / "records.csv") for d in dirs], ignore_index=True)
    records.to_csv(out / "records.csv", index=False)
    return write_summary(records, out)


def main(argv: list[str] | None = None) -> None:
    from causalplay.cli.config import parse_config

    cfg = parse_config(Config, argv, smoke=SMOKE, description=__doc__.split("\n")[0])
    summary = merge(list(cfg.merge), Path(cfg.out) / cfg.name) if cfg.merge else run(cfg)
    print(summary.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
