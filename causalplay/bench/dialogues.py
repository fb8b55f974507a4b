"""``causalplay bench --show-dialogue N``: print language-model agents' dialogues from a run's shards."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .shards import Shard

__all__ = ["load_dialogues", "print_dialogues"]


def load_dialogues(out: str | Path, env: str, agent: str, seed: int = 0, n: int = 1) -> list[dict]:
    """The first ``n`` episodes' dialogues of ``(env, agent, seed)`` from ``out/shards/*.dialogues.jsonl``.

    Returns a list of ``{"episode": int, "messages": [...]}`` in episode order (empty when the agent wrote none).
    """
    found: list[dict] = []
    for path in sorted(Path(out, "shards").glob("*.dialogues.jsonl")):
        # Shard files are named from (env, agent, seed, index, start, size): match the prefix of this triple.
        prefix = Shard(env, agent, seed, 0, 0, 0).filename.split(f"__{0:05d}__")[0] + "__"
        if not path.name.startswith(prefix):
            continue
        for line in path.read_text().splitlines():
            if line.strip():
                found.append(json.loads(line))
    found.sort(key=lambda d: d["episode"])
    return found[:n]


def print_dialogues(out: str | Path, df: pd.DataFrame, n: int, console=None) -> None:
    """Print the first ``n`` dialogues (seed 0) of every agent of ``df`` that wrote dialogues."""
    from causalplay.agents.llm.template import format_transcript

    def say(text: str) -> None:
        if console is None:
            print(text)
        else:  # verbatim: no rich markup or highlighting, no wrapping of long lines
            console.print(text, markup=False, highlight=False, soft_wrap=True)

    for (env, agent), g in df.groupby(["env", "agent"], sort=False):
        for d in load_dialogues(out, env, agent, 0, n):
            row = g[(g["seed"] == 0) & (g["episode"] == d["episode"])]
            solved = int(row["solved_step"].iloc[0]) if len(row) else -1
            say(f"--- {env} | {agent} | seed 0 | episode {d['episode']} | "
                + (f"solved at step {solved}" if solved > 0 else "not solved") + " ---")
            say(format_transcript(d["messages"]))
