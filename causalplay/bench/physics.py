"""The physics family (PHYRE protocol): agents x 10 folds x within / cross-template settings, scored by AUCCESS.

A variant is a ``(fold, setting)``; its episodes are the fold's test tasks in a stable-hash order (:func:`fold_tasks`:
``--episodes 8`` is the same 8-task sample of each fold for every agent). The worker trains the agent on the fold's
train + dev tasks (as PHYRE does), then plays the shard's tasks with :func:`~.play.play`: as a batch, or as one
sequence for an online agent, which learns between tasks. Env options: ``templates`` (default all) and ``n_tasks``
(per template, default 100) are the tasks the folds split; ``cache`` (``runs/physics``) keeps generated tasks,
simulated training outcomes and trained networks; ``stage="dev"`` trains on the train split alone and plays the dev
split instead (PHYRE tunes hyperparameters so, never on test tasks).
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import numpy as np
import pandas as pd

from causalplay.core.metrics import auccess, stable_unit, success_curve
from causalplay.envs.physics import BUDGET, TIER_OF_ID, PhysicsBatch
from causalplay.envs.physics_templates import N_TASKS, TEMPLATES, folds, get_task, task_keys

from .family import Family, build_agent
from .play import play

__all__ = ["STAGES", "PhysicsFamily", "fold_tasks", "tier_of"]

_OPTIONS = {"fold": 0, "setting": "within", "templates": None, "n_tasks": N_TASKS, "cache": "runs/physics",
            "stage": "test"}
STAGES = ("test", "dev")


def tier_of(env_id: str) -> str:
    """``"B"``, ``"2B-v1"`` or ``"2B"`` (deprecated ``Physics2B-v0``): the tier a physics id plays."""
    if env_id not in TIER_OF_ID:
        raise ValueError(f"{env_id!r} is not a physics id; expected one of {list(TIER_OF_ID)}")
    return TIER_OF_ID[env_id]


def _check_stage(stage, who: str = "stage") -> None:
    if stage not in STAGES:
        raise ValueError(f"{who} must be one of {STAGES} (play the test split, or the dev split after training on "
                         f"train alone), got {stage!r}")


def fold_tasks(tier: str, fold: int, setting: str, templates=None, n_tasks: int = N_TASKS,
               stage: str = "test") -> tuple[list[str], list[str]]:
    """The fold's task keys ``(trained on, played)`` among tasks ``0..n_tasks-1`` of ``templates``: ``(train + dev,
    test)`` at ``stage="test"``; ``(train, dev)`` at ``stage="dev"``, where hyperparameters are tuned. The played
    keys come in a stable-hash order, so any prefix is a fair sample of the split."""
    _check_stage(stage)
    split = folds(tier, fold, setting, task_keys(templates, n_tasks))
    if stage == "dev":
        return split["train"], sorted(split["dev"], key=lambda k: stable_unit(f"{tier}:{setting}:{fold}:dev:{k}"))
    test = sorted(split["test"], key=lambda k: stable_unit(f"{tier}:{setting}:{fold}:{k}"))
    return split["train"] + split["dev"], test


class PhysicsFamily(Family):
    """PHYRE's protocol on our templates: AUCCESS and success@10 per (tier, setting, agent), mean ± SD over folds."""

    columns = ("env", "agent", "seed", "episode", "fold", "setting", "key", "template", "solved_at", "attempts",
               "invalid", "seconds", "train_seconds")
    #: a variant's test tasks in one shard: an online agent learns across all the tasks of a fold it plays
    shard_size = 10_000
    display = {"auccess": "AUCCESS %", "success10": "success@10 %"}

    def variants(self, env_id: str) -> list:
        return [(("fold", f), ("setting", s)) for f in range(10) for s in ("within", "cross")]

    def check_env(self, env_id: str, env_kwargs: dict | None = None) -> None:
        unknown = set(env_kwargs or {}) - set(_OPTIONS)
        if unknown:
            raise ValueError(f"{env_id} has no option {sorted(unknown)}; options: {sorted(_OPTIONS)}")
        _check_stage((env_kwargs or {}).get("stage", "test"), f"{env_id}'s stage")
        if importlib.util.find_spec("pymunk") is None:
            raise ValueError(f"{env_id} needs the physics engine: pip install 'causalplay[physics]'")

    def episodes(self, env_id, agent, n, seed, shard=0, start=0, env_kwargs=None, agent_kwargs=None):
        self.check_env(env_id, env_kwargs)
        kw = {**_OPTIONS, **(env_kwargs or {})}
        tier, fold, setting, cache = tier_of(env_id), kw["fold"], kw["setting"], str(kw["cache"])
        train, test = fold_tasks(tier, fold, setting, kw["templates"], kw["n_tasks"], kw["stage"])
        if start + n > len(test):
            raise ValueError(f"{env_id} fold {fold} {setting}: episodes {start}..{start + n - 1} asked for, but the "
                             f"fold has {len(test)} {kw['stage']} tasks ({kw['n_tasks']} per template); ask for fewer")
        ag = build_agent(self.name, agent, seed * 100003 + shard, agent_kwargs)
        if ag.online and start > 0:
            raise ValueError(f"online agent {agent!r} learns across a fold's test tasks: play them in one shard "
                             f"(a shard size of at least the episodes)")
        t0 = time.perf_counter()
        ag.train(tier, train, setting, cache)
        t_train, t0 = time.perf_counter() - t0, time.perf_counter()
        keys = test[start:start + n]
        order = sorted(keys)  # the batch's rows (an online agent's sequence) in key order
        batch = PhysicsBatch([get_task(tier, k, cache) for k in order], tier, record=ag.record, sequential=ag.online)
        rec = play(batch, ag)
        at = [order.index(k) for k in keys]
        return pd.DataFrame({
            "env": env_id, "agent": agent, "seed": seed, "episode": np.arange(start, start + n), "fold": fold,
            "setting": setting, "key": keys, "template": [TEMPLATES[t] for t in rec["template"][at]],
            **{c: rec[c][at] for c in ("solved_at", "attempts", "invalid")},
            "seconds": (time.perf_counter() - t0) / n, "train_seconds": t_train})

    def summarise(self, df: pd.DataFrame) -> list[dict]:
        """One row per (env, setting, agent, fold): AUCCESS and success within 10 attempts (%) of the fold's task
        plays (every seed's)."""
        rows = []
        for (env, setting, agent, fold), g in df.groupby(["env", "setting", "agent", "fold"], sort=False):
            s = g["solved_at"].to_numpy()
            rows.append({"env": env, "agent": agent, "setting": setting, "fold": int(fold), "episodes": len(g),
                         "seeds": int(g["seed"].nunique()), "auccess": 100 * auccess(s, 0, BUDGET),
                         "success10": 100 * float(success_curve(s, BUDGET)[9])})
        return rows

    def table(self, rows: list[dict], level: float = 0.95) -> pd.DataFrame:
        """Per (env, setting, agent): each score's mean and SD (``*_sd``, n - 1) over folds."""
        g = pd.DataFrame(rows).groupby(["env", "setting", "agent"], sort=False)
        return g.agg(folds=("fold", "size"), episodes=("episodes", "sum"), auccess=("auccess", "mean"),
                     auccess_sd=("auccess", "std"), success10=("success10", "mean"),
                     success10_sd=("success10", "std")).reset_index()

    def plots(self, df: pd.DataFrame, out: str | Path) -> list[Path]:
        """``success_physics.png``: % of test tasks solved within k attempts (log scale), mean over folds ± 1 SD,
        a panel per env and setting."""
        from .plots import figure_axes, save_png

        k = np.arange(1, BUDGET + 1)
        groups = list(dict.fromkeys(zip(df["env"], df["setting"], strict=True)))  # in the run's order
        fig, axes = figure_axes(1, len(groups), figsize=(4 * len(groups), 3.4), squeeze=False)
        for ax, (env, setting) in zip(axes[0], groups, strict=True):
            for agent, g in df[(df["env"] == env) & (df["setting"] == setting)].groupby("agent", sort=False):
                c = np.stack([100 * success_curve(f["solved_at"].to_numpy(), BUDGET) for _, f in g.groupby("fold")])
                ax.plot(k, c.mean(0), label=agent)
                ax.fill_between(k, c.mean(0) - c.std(0), c.mean(0) + c.std(0), alpha=0.15)
            ax.set(xscale="log", title=f"{tier_of(env)} {setting}", xlabel="attempts", ylim=(0, 100))
        axes[0, 0].set_ylabel("% tasks solved")
        axes[0, -1].legend(fontsize=7)
        return [save_png(fig, out, "success", "physics")]
