"""The Overhypothesis family (``causalplay/Overhypothesis-v0``): scores by machine index within a sequence.

One record per (sequence, machine): ``trials_to_solve`` (``T + 1`` when unsolved), ``solved``, ``episode_reward``,
``context_reward``, ``rule``, ``n_blickets``. Sequence ``i`` draws from its own generator seeded ``[seed, i]``
(:class:`~causalplay.envs.overhypothesis.OverhypothesisBatch` rows own generators), so every agent scored with the
same ``seed`` meets the same machines, in whatever shard, and per-machine differences are paired. The benchmark
runs both variants: ``rule_per="sequence"`` (the task) and ``"episode"`` (the control: nothing to transfer).

:func:`run_sequences` plays sequences in this process; :func:`summarise_by_machine` gives the means with 95% CIs by
(rule_per, agent, machine) -- the numbers of ``docs/overhypotheses.md``.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from causalplay.agents import Agent, make_agent
from causalplay.core.metrics import wilson_ci

from .family import Family, build_agent
from .play import play

__all__ = ["SequenceFamily", "run_sequences", "summarise_by_machine", "SEQUENCE_COLUMNS"]

SEQUENCE_COLUMNS = ("agent", "rule_per", "sequence", "machine", "rule", "n_blickets", "trials_to_solve", "solved",
                    "episode_reward", "context_reward", "seconds")
_SCORES = ("rule", "n_blickets", "trials_to_solve", "solved", "episode_reward", "context_reward")


def _play_sequences(agent, first: int, B: int, seed: int, rule_per: str, n_episodes: int, noise: float) -> dict:
    """Sequences ``first .. first + B - 1`` (generators ``[seed, i]``) played by ``agent``; their records,
    flattened to one entry per (sequence, machine), with ``sequence`` and ``machine`` indices."""
    from causalplay.envs.overhypothesis import OVERHYPOTHESIS, OverhypothesisBatch

    rngs = [np.random.default_rng([seed, first + i]) for i in range(B)]
    task = OverhypothesisBatch(OVERHYPOTHESIS, B, rngs, n_episodes=n_episodes, rule_per=rule_per, noise=noise,
                               obs_mode=getattr(agent, "obs_mode", "panel") or "panel")
    rec, K = play(task, agent), task.K
    out = {k: rec["episode_solved" if k == "solved" else k].reshape(-1) for k in _SCORES}
    out["sequence"], out["machine"] = np.repeat(np.arange(first, first + B), K), np.tile(np.arange(K), B)
    return out


class SequenceFamily(Family):
    """Sequences of machines sharing a rule; per-machine trials to solve, solve rate and reward (95 % CIs over
    sequences), in both variants (``rule_per``: the task and the control)."""

    columns = ("env", "agent", "seed", "episode", "machine", "rule_per", *_SCORES, "seconds")
    shard_size = 500
    display = {"trials_to_solve": "trials to solve", "solved": "solved %", "episode_reward": "episode R"}

    def variants(self, env_id: str) -> list:
        return [(("rule_per", "sequence"),), (("rule_per", "episode"),)]

    def episodes(self, env_id, agent, n, seed, shard=0, start=0, env_kwargs=None, agent_kwargs=None):
        kw = {"rule_per": "sequence", "n_episodes": 5, "noise": 0.0, **(env_kwargs or {})}
        t0 = time.perf_counter()
        rec = _play_sequences(build_agent(self.name, agent, seed * 100003 + shard, agent_kwargs), start, n, seed,
                              kw["rule_per"], kw["n_episodes"], kw["noise"])
        return pd.DataFrame({"env": env_id, "agent": agent, "seed": seed, "episode": rec["sequence"],
                             "machine": rec["machine"], "rule_per": kw["rule_per"], **{k: rec[k] for k in _SCORES},
                             "seconds": (time.perf_counter() - t0) / n})

    def summarise(self, df: pd.DataFrame) -> list[dict]:
        out = []
        for env, g in df.groupby("env", sort=False):
            for r in summarise_by_machine(g.rename(columns={"episode": "sequence"})).to_dict("records"):
                out.append({"env": env, **r})
        return out

    def table(self, rows: list[dict], level: float = 0.95) -> pd.DataFrame:
        df = pd.DataFrame(rows)
        for col in self.display:
            scale = 100.0 if col == "solved" else 1.0
            df[col], df[col + "_ci"] = df[col] * scale, (df[col + "_hi"] - df[col + "_lo"]) / 2 * scale
        return df[["env", "rule_per", "agent", "machine", "n", *(c for k in self.display for c in (k, k + "_ci"))]]


def run_sequences(agent, n_sequences: int, seed: int = 0, *, rule_per: str = "sequence", n_episodes: int = 5,
                  noise: float = 0.0, agent_kwargs: dict | None = None, label: str | None = None) -> pd.DataFrame:
    """Play ``n_sequences`` sequences of ``n_episodes`` machines with one agent, all rows batched.

    Parameters
    ----------
    agent : str or causalplay.agents.Agent
        An agent spec (``"eig-transfer"``, ``"rl:path=runs/oh/rppo"``) or a built agent. Its ``obs_mode``
        attribute, when present (the ``rl`` agent: ``"history"``), sets the task's observation mode.
    n_sequences : int
        Sequences (rows of the batch).
    seed : int
        Sequence ``i`` draws from ``numpy.random.default_rng([seed, i])``; also the agent's seed.
    rule_per : {"sequence", "episode"}
        The task (one rule per sequence) or the control (rule redrawn on every machine).
    n_episodes : int
        Machines per sequence ``K``.
    noise : float
        Flip probability of every machine's response.
    agent_kwargs : dict, optional
        Passed to :func:`causalplay.agents.make_agent` with a spec.
    label : str, optional
        The ``agent`` column (default: the agent's ``label`` if it has one, else the spec, else its name).

    Returns
    -------
    pandas.DataFrame
        ``n_sequences * n_episodes`` rows with :data:`SEQUENCE_COLUMNS`; ``seconds`` is wall time per sequence.
    """
    if isinstance(n_sequences, bool) or not isinstance(n_sequences, (int, np.integer)) or n_sequences < 1:
        raise ValueError(f"n_sequences must be a positive integer, got {n_sequences!r}")
    if isinstance(agent, str):
        ag = make_agent(agent, seed=seed, **(agent_kwargs or {}))
        default = getattr(ag, "label", None) or agent
    elif isinstance(agent, Agent):
        if agent_kwargs:
            raise ValueError("agent_kwargs need an agent spec (a string), not a built agent")
        ag = agent
        default = getattr(ag, "label", None) or type(ag).__name__
    else:
        raise TypeError(f"agent must be an agent spec string or an Agent, got {type(agent).__name__}")
    B = int(n_sequences)
    t0 = time.perf_counter()
    rec = _play_sequences(ag, 0, B, seed, rule_per, n_episodes, noise)
    return pd.DataFrame({"agent": label or default, "rule_per": rule_per, "sequence": rec["sequence"],
                         "machine": rec["machine"], **{k: rec[k] for k in _SCORES},
                         "seconds": (time.perf_counter() - t0) / B})[list(SEQUENCE_COLUMNS)]


def _ci(x: np.ndarray) -> tuple[float, float, float]:
    m = float(np.mean(x))
    h = 1.96 * float(np.std(x, ddof=1)) / np.sqrt(len(x)) if len(x) > 1 else float("nan")
    return m, m - h, m + h


def summarise_by_machine(df: pd.DataFrame, reference: str | None = None) -> pd.DataFrame:
    """Means with 95% CIs by (rule_per, agent, machine); machines numbered from 1. Normal intervals for
    trials-to-solve and episode R, Wilson intervals for the solve rate.

    With ``reference`` (an agent name in ``df``), also the paired difference to it on the same sequences:
    ``fewer_trials`` (reference's trials minus the agent's) and ``gain_R`` (agent's episode R minus the
    reference's), each with its CI.
    """
    need = {"rule_per", "agent", "machine", "sequence", "trials_to_solve", "episode_reward", "solved"}
    if missing := need - set(df.columns):
        raise ValueError(f"records lack the column(s) {sorted(missing)}; expected run_sequences output")
    if reference is not None and reference not in set(df.agent):
        raise ValueError(f"reference agent {reference!r} is not in the records ({sorted(set(df.agent))})")
    out = []
    for (rp, agent, k), g in df.groupby(["rule_per", "agent", "machine"], sort=True):
        row = {"rule_per": rp, "agent": agent, "machine": int(k) + 1, "n": len(g)}
        for col in ("trials_to_solve", "episode_reward", "solved"):
            m, lo, hi = (wilson_ci if col == "solved" else _ci)(g[col].to_numpy(float))
            row.update({col: m, f"{col}_lo": lo, f"{col}_hi": hi})
        if reference is not None and agent != reference:
            base = df[(df.rule_per == rp) & (df.agent == reference) & (df.machine == k)].set_index("sequence")
            common = base.index.intersection(g.sequence)
            if len(common):
                gi, bi = g.set_index("sequence").loc[common], base.loc[common]
                for col, sign, name in (("trials_to_solve", -1, "fewer_trials"), ("episode_reward", 1, "gain_R")):
                    m, lo, hi = _ci(sign * (gi[col].to_numpy(float) - bi[col].to_numpy(float)))
                    row.update({name: m, f"{name}_lo": lo, f"{name}_hi": hi})
        out.append(row)
    return pd.DataFrame(out)
