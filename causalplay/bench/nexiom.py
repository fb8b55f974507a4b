"""The Nexiom family (``causalplay/Nexiom-v0``, the human task): agents and people on the same task.

People (``causalplay/data/nexiom/participants.csv``) chose when to stop testing and then judged the blickets and
the rule; agents are scored by the same criteria (``blickets_correct``, ``rule_correct``, tests used), per rule.
:func:`run_nexiom` plays the exact EIG learner (:class:`causalplay.agents.bayesian.NexiomEIGAgent`) in this process;
:func:`compare_nexiom` puts it beside the people.
"""

from __future__ import annotations

import time
from importlib import resources

import pandas as pd

from causalplay.agents.bayesian import NexiomEIGAgent
from causalplay.envs import make_batch

from .family import Family, build_agent, ci_columns
from .play import play

__all__ = ["NexiomFamily", "run_nexiom", "human_nexiom", "compare_nexiom"]

_SCORES = ("rule", "blickets_correct", "rule_correct", "n_tests")


class NexiomFamily(Family):
    """Free testing then one answer: blickets correct, rule correct and tests used, per rule (95 % CIs over
    episodes)."""

    columns = ("env", "agent", "seed", "episode", *_SCORES, "seconds")
    display = {"blickets_correct": "blickets correct %", "rule_correct": "rule correct %", "n_tests": "tests"}

    def episodes(self, env_id, agent, n, seed, shard=0, start=0, env_kwargs=None, agent_kwargs=None):
        t0 = time.perf_counter()
        rec = play(make_batch(env_id, n, seed=[seed, shard], **(env_kwargs or {})),
                   build_agent(self.name, agent, seed * 100003 + shard, agent_kwargs))
        return pd.DataFrame({"env": env_id, "agent": agent, "seed": seed, "episode": range(start, start + n),
                             **{k: rec[k] for k in _SCORES}, "seconds": (time.perf_counter() - t0) / n})

    def summarise(self, df: pd.DataFrame) -> list[dict]:
        rows = []
        for (env, agent, rule), g in df.groupby(["env", "agent", "rule"], sort=False):
            rec = {"env": env, "agent": agent, "rule": rule, "episodes": len(g), "seeds": int(g["seed"].nunique())}
            rows.append(ci_columns(rec, g, {c: c for c in self.display},
                                   scale={"blickets_correct": 100.0, "rule_correct": 100.0}))
        return rows


def run_nexiom(episodes: int = 1000, seed: int = 0, budget: int = 16, min_eig: float = 1e-9) -> pd.DataFrame:
    """Play Nexiom with the exact EIG learner (episodes from ``default_rng(seed)``); one row per episode:
    ``rule, blickets_correct, rule_correct, n_tests``."""
    rec = play(make_batch("causalplay/Nexiom-v0", episodes, seed=seed, budget=budget),
               NexiomEIGAgent(seed, min_eig=min_eig))
    return pd.DataFrame({k: rec[k] for k in _SCORES})


def human_nexiom() -> pd.DataFrame:
    """The participants' table (``causalplay/data/nexiom/participants.csv``)."""
    path = resources.files("causalplay.data").joinpath("nexiom/participants.csv")
    with resources.as_file(path) as p:
        return pd.read_csv(p)


def compare_nexiom(episodes: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Mean ``blickets_correct``, ``rule_correct`` and ``n_tests`` per rule for people and the EIG learner."""
    cols = ["blickets_correct", "rule_correct", "n_tests"]
    scored = {"people": human_nexiom(), "eig": run_nexiom(episodes, seed)}
    return pd.concat([df.groupby("rule")[cols].mean().assign(who=who, n=df.groupby("rule").size())
                      for who, df in scored.items()]).reset_index()
