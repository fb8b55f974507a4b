"""The Blicket family (IVRE / EST and their variants, symbolic and pixel): the IVRE Table-2 scores and AUCCESS."""

from __future__ import annotations

import time
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from causalplay.agents import make_agent
from causalplay.core.metrics import assign_split, auccess, auccess_weights, mean_ci
from causalplay.envs import make_batch
from causalplay.envs.core import BlicketInfo
from causalplay.envs.pixels import PIXEL_IDS, PixelBatch

from .family import Family, build_agent
from .play import play

__all__ = ["BlicketFamily", "EPISODE_COLUMNS", "check_pairing"]

EPISODE_COLUMNS = ["env", "agent", "seed", "episode", "template", "split", "n_blickets", "solved_step",
                   "context_solved", "episode_solved", "context_reward", "episode_reward", "seconds"]
_SCORES = ("context_acc", "context_reward", "episode_acc", "episode_reward", "auccess")
_PER_EPISODE = {"context_acc": "context_solved", "context_reward": "context_reward",
                "episode_acc": "episode_solved", "episode_reward": "episode_reward"}


@lru_cache(maxsize=64)
def horizon(env_id: str) -> tuple[int, int]:
    """``(n_context, horizon)`` of a Blicket id."""
    b = make_batch(env_id, 1, seed=0)
    return b.n_context, b.horizon


def check_pairing(env_id: str, agent_name: str, pixels: bool, agent=None) -> None:
    """``ValueError`` unless the agent and the env agree on pixels (``pixels``: the env renders its panels).

    ``agent`` is the built agent, or None to build ``agent_name`` once (the CLI checks before any work starts)."""
    if agent is None:
        agent = make_agent(agent_name, seed=0)
    if pixels != bool(getattr(agent, "reads_pixels", False)):
        raise ValueError(f"agent {agent_name!r} cannot play {env_id}: " + (
            "it is a pixel env; pick an agent that reads pixels (eig-pixels)" if pixels
            else "that agent reads rendered panels; pick a pixel id (causalplay/IVRE-Pixels-v0, EST-Pixels-v1)"))


class BlicketFamily(Family):
    """Context panels then trials: context / episode accuracy and reward (IVRE Table 2) and AUCCESS over the
    trial steps; means with 95 % CIs over seeds (over episodes when there is one seed)."""

    columns = EPISODE_COLUMNS
    paired_column = "episode_reward"
    display = {"context_acc": "context Acc %", "context_reward": "context R", "episode_acc": "episode Acc %",
               "episode_reward": "episode R", "auccess": "AUCCESS %"}

    def check_agent(self, env_id: str, agent: str) -> None:
        """A symbolic agent on a pixel env (or the reverse) is refused here, not in a worker."""
        check_pairing(env_id, agent, env_id in PIXEL_IDS)

    def check_env(self, env_id: str, env_kwargs: dict | None = None) -> None:
        info = make_batch(env_id, 1, seed=0, **(env_kwargs or {})).info()
        if not isinstance(info, BlicketInfo) or info.n_context == 0:
            raise ValueError(f"{env_id} has no context/trial structure the Blicket scorer reads")

    def episodes(self, env_id, agent, n, seed, shard=0, start=0, env_kwargs=None, agent_kwargs=None):
        t0 = time.perf_counter()
        ag = build_agent(self.name, agent, seed * 100003 + shard, agent_kwargs)
        # an agent may ask for another observation mode (e.g. the RL agents' "history")
        obs_mode = {"obs_mode": ag.obs_mode} if getattr(ag, "obs_mode", None) else {}
        env = make_batch(env_id, n, seed=[seed, shard], **{**obs_mode, **(env_kwargs or {})})
        check_pairing(env_id, agent, isinstance(env, PixelBatch), ag)
        rec = play(env, ag)
        episodes = np.arange(start, start + n)
        df = pd.DataFrame({
            "env": env_id, "agent": agent, "seed": seed, "episode": episodes, "template": rec["template"],
            "split": [assign_split(f"{tpl}/{seed}/{e}") for tpl, e in zip(rec["template"], episodes, strict=True)],
            **{k: rec[k] for k in EPISODE_COLUMNS[6:-1]},
            "seconds": (time.perf_counter() - t0) / n,
        })
        # Agents that talk to a model add per-episode counts (tokens, parse failures) and their dialogues.
        for col, values in (ag.episode_columns() if hasattr(ag, "episode_columns") else {}).items():
            df[col] = values
        if hasattr(ag, "dialogues"):
            df.attrs["dialogues"] = ag.dialogues()
        return df

    def summarise(self, df: pd.DataFrame) -> list[dict]:
        """One row per env x agent x seed (accuracies as fractions); with the per-episode CI half-widths of the
        seed's mean (``*_ep_ci``), which the table uses when a run has one seed."""
        rows = []
        for (env, agent, seed), g in df.groupby(["env", "agent", "seed"], sort=False):
            C, T = horizon(env)
            rec = {"env": env, "agent": agent, "seed": int(seed), "episodes": int(len(g)),
                   **{score: float(g[col].mean()) for score, col in _PER_EPISODE.items()},
                   "auccess": auccess(g["solved_step"].to_numpy(), C, T),
                   "seconds_per_episode": float(g["seconds"].mean())}
            for score, col in _PER_EPISODE.items():
                rec[score + "_ep_ci"] = mean_ci(g[col].astype(float).tolist())[1]
            # AUCCESS is the mean over episodes of each episode's weighted share of trial steps it was solved by
            w = auccess_weights(T - C)
            s = g["solved_step"].to_numpy()[:, None]
            per_ep = (((s > 0) & (s <= C + np.arange(1, T - C + 1))) * w).sum(1) / w.sum()
            rec["auccess_ep_ci"] = mean_ci(per_ep.tolist())[1]
            if "llm_calls" in g and g["llm_calls"].notna().any():  # language-model agents (causalplay.agents.llm)
                calls = float(g["llm_calls"].sum())
                rec.update({
                    "parse_failure_rate": float(g["parse_failures"].sum()) / calls if calls else 0.0,
                    "prompt_tokens_per_episode": float(g["prompt_tokens"].mean()),
                    "completion_tokens_per_episode": float(g["completion_tokens"].mean()),
                })
            rows.append(rec)
        return rows

    def table(self, rows: list[dict], level: float = 0.95) -> pd.DataFrame:
        """Table-2 layout: mean +- CI half-width over seeds per env x agent (one seed: over episodes)."""
        df = pd.DataFrame(rows)
        out = []
        for (env, agent), g in df.groupby(["env", "agent"], sort=False):
            rec = {"env": env, "agent": agent, "seeds": len(g), "episodes": int(g["episodes"].sum())}
            for col in _SCORES:
                scale = 100.0 if col.endswith("acc") or col == "auccess" else 1.0
                m, h = mean_ci((g[col] * scale).tolist(), level)
                if len(g) == 1 and col + "_ep_ci" in g:
                    h = float(g[col + "_ep_ci"].iloc[0]) * scale
                rec[col], rec[col + "_ci"] = m, h
            for col in ("parse_failure_rate", "prompt_tokens_per_episode", "completion_tokens_per_episode"):
                if col in g and g[col].notna().any():  # language-model agents: means over seeds
                    rec[col] = float(g[col].mean())
            out.append(rec)
        return pd.DataFrame(out)

    def plots(self, df: pd.DataFrame, out: str | Path) -> list[Path]:
        from .plots import plot_rewards, plot_success

        return plot_success(df, {e: horizon(e) for e in df["env"].unique()}, out) + plot_rewards(df, out)
