"""The ``oneblicket`` family's scorer: one record per episode; solved % and tests used per agent (95 % CIs over
episodes)."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from causalplay.envs import make_batch

from causalplay.bench.family import Family, build_agent, ci_columns
from causalplay.bench.play import play


class OneBlicketScorer(Family):
    columns = ("env", "agent", "seed", "episode", "solved", "tests", "seconds")
    display = {"solved": "solved %", "tests": "tests"}

    def episodes(self, env_id, agent, n, seed, shard=0, start=0, env_kwargs=None, agent_kwargs=None):
        t0 = time.perf_counter()
        rec = play(make_batch(env_id, n, seed=[seed, shard], **(env_kwargs or {})),
                   build_agent(self.name, agent, seed * 100003 + shard, agent_kwargs))
        return pd.DataFrame({"env": env_id, "agent": agent, "seed": seed, "episode": np.arange(start, start + n),
                             "solved": rec["solved"], "tests": rec["tests"],
                             "seconds": (time.perf_counter() - t0) / n})

    def summarise(self, df: pd.DataFrame) -> list[dict]:
        rows = []
        for (env, agent), g in df.groupby(["env", "agent"], sort=False):
            rec = {"env": env, "agent": agent, "episodes": len(g), "seeds": int(g["seed"].nunique())}
            rows.append(ci_columns(rec, g, {"solved": "solved", "tests": "tests"}, scale={"solved": 100.0}))
        return rows
