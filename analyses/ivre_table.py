"""Reproduce the IVRE paper's Table 2 layout with our agents, next to the numbers the paper reports.

Usage::

    .venv/bin/python analyses/ivre_table.py --runs runs/ivre            # uses runs/ivre/results.json
    .venv/bin/python analyses/ivre_table.py --runs runs/ivre --run      # runs the benchmark first if missing

The paper's per-agent rows are not bundled with causalplay; the reference numbers below are the ones quoted
in issue 3 (best heuristic agent and humans). Fill :data:`PAPER` from the paper to compare row by row.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

#: Reference numbers quoted in issue 3 (IVRE / EST papers): episode Acc in %, episode R.
PAPER = {
    ("causalplay/IVRE-v0", "best heuristic (paper)"): {"episode_acc": 83.8, "episode_reward": None},
    ("causalplay/IVRE-v0", "humans (paper)"): {"episode_acc": 98.15, "episode_reward": 12.70},
    ("causalplay/EST-v0", "best heuristic (paper)"): {"episode_acc": 36.8, "episode_reward": None},
}

AGENTS = "random,bayes,naive,search-random,search-naive,notears,eig,planner"


def load(runs: Path) -> pd.DataFrame:
    from causalplay.bench.runner import table

    rows = json.loads((runs / "results.json").read_text())
    return table(rows)


def side_by_side(ours: pd.DataFrame) -> pd.DataFrame:
    out = []
    for _, r in ours.iterrows():
        out.append({"env": r["env"], "agent": r["agent"], "source": "causalplay", "episodes": r["episodes"],
                    "context_acc": r["context_acc"], "context_reward": r["context_reward"],
                    "episode_acc": r["episode_acc"], "episode_reward": r["episode_reward"], "auccess": r["auccess"]})
    for (env, agent), v in PAPER.items():
        if env in set(ours["env"]):
            out.append({"env": env, "agent": agent, "source": "paper", **v})
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", default="runs/ivre", help="benchmark output folder holding results.json")
    p.add_argument("--run", action="store_true", help="run `causalplay bench` first when results are missing")
    p.add_argument("--episodes", type=int, default=10000)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--env", default="causalplay/IVRE-v0")
    args = p.parse_args(argv)
    runs = Path(args.runs)
    if not (runs / "results.json").exists():
        if not args.run:
            print(f"{runs}/results.json not found; pass --run to run the benchmark", file=sys.stderr)
            return 1
        subprocess.run([sys.executable, "-m", "causalplay", "bench", "--env", args.env, "--agents", AGENTS,
                        "--episodes", str(args.episodes), "--seeds", str(args.seeds), "--out", str(runs)],
                       check=True)
    table = side_by_side(load(runs))
    text = table.to_markdown(index=False, floatfmt=".2f") if _has_tabulate() else table.to_string(index=False)
    print(text)
    (runs / "ivre_table.md").write_text(text + "\n")
    return 0


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    raise SystemExit(main())
