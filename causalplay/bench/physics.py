"""The physics benchmark (PHYRE protocol): a budget-enforcing evaluator, per-task records and fold scores.

:func:`evaluate` is a pure worker: one (fold, tier, setting, agent spec, seed, task range) -> a DataFrame with one
row per test task. It trains the agent on the fold's train + dev tasks (PHYRE trains test-time agents on both),
then plays the test tasks: at most ``budget`` valid attempts each; an invalid action is rejected without
counting (after ``max_invalid`` of them in a row the task is given up). Online agents (``*-o``) play their
tasks one after another and learn between them; the others play the whole range as one batch.
:func:`summarise` turns records into AUCCESS (PHYRE's weights, :func:`causalplay.bench.metrics.auccess`) and
success at 10 attempts per fold, and their mean and SD over folds. :func:`run` fans (fold, tier, setting,
agent) shards over an executor (:func:`causalplay.bench.executors.make_executor`: serial, process, Ray, Dask).
"""

from __future__ import annotations

import time
from itertools import product

import numpy as np
import pandas as pd
import torch

from causalplay.agents.physics import make_physics_agent
from causalplay.envs.physics import BUDGET, PhysicsBatch
from causalplay.envs.physics_templates import TEMPLATES, folds, load_tasks

from .metrics import auccess, stable_unit, success_curve

__all__ = ["evaluate", "summarise", "run", "test_tasks"]


def test_tasks(tier: str, fold: int, setting: str, max_test: int | None = None, cache: str = "runs/physics"):
    """The fold's ``(train + dev, test)`` tasks; ``max_test`` keeps that many test tasks, chosen by stable hash."""
    tasks = load_tasks(tier, cache)
    split = folds(tier, fold, setting, [t.key for t in tasks])
    by_key = {t.key: t for t in tasks}
    test = sorted(split["test"], key=lambda k: stable_unit(f"{tier}:{setting}:{fold}:{k}"))[:max_test]
    return [by_key[k] for k in split["train"] + split["dev"]], [by_key[k] for k in sorted(test)]


def _play(agent, batch: PhysicsBatch, max_invalid: int) -> None:
    agent.begin(batch.tasks)
    batch.reset()
    streak = np.zeros(batch.B, dtype=np.int64)
    while not batch.done.all():
        active = ~batch.done.numpy()
        a = np.clip(np.asarray(agent.act(active), dtype=np.float64), 0, 1)
        batch.step(a, check=False)
        valid, solved = batch.last["valid"] & active, batch.last["solved"] & active
        agent.observe(a, valid, solved, [batch.last["traj"][b] for b in range(batch.B)])
        streak = np.where(valid, 0, streak + active)
        batch.done |= torch.from_numpy(streak >= max_invalid)  # an agent stuck on invalid actions gives up
    agent.end()


def evaluate(fold: int, tier: str, setting: str, agent: str, seed: int = 0, tasks: range | None = None, *,
             budget: int = BUDGET, max_test: int | None = None, max_invalid: int = 1000,
             cache: str = "runs/physics") -> pd.DataFrame:
    """Score agent spec ``agent`` on the test tasks ``tasks`` (a range over the fold's test list; all when
    ``None``) of ``fold`` in ``tier`` / ``setting``; returns one row per task: ``fold, tier, setting, agent,
    seed, key, template, solved_at`` (0: unsolved within the budget), ``attempts, invalid, seconds``."""
    train, test = test_tasks(tier, fold, setting, max_test, cache)
    test = test if tasks is None else test[tasks.start:tasks.stop:tasks.step]
    ag = make_physics_agent(agent, tier, seed, cache)
    t0 = time.perf_counter()
    ag.train(train, setting)
    t_train, rows = time.perf_counter() - t0, []
    chunks = [[t] for t in test] if ag.online else [test]
    for chunk in chunks:
        if not chunk:
            continue
        t0 = time.perf_counter()
        batch = PhysicsBatch(chunk, tier, budget, record=10 if agent.startswith("ssup") else 0)
        _play(ag, batch, max_invalid)
        rec, dt = batch.record(), (time.perf_counter() - t0) / len(chunk)
        rows += [dict(fold=fold, tier=tier, setting=setting, agent=agent, seed=seed, key=rec["key"][i],
                      template=TEMPLATES[rec["template"][i]], solved_at=int(rec["solved_at"][i]),
                      attempts=int(rec["attempts"][i]), invalid=int(rec["invalid"][i]), seconds=dt,
                      train_seconds=t_train) for i in range(len(chunk))]
    return pd.DataFrame(rows)


def summarise(records: pd.DataFrame, budget: int = BUDGET) -> pd.DataFrame:
    """Per (tier, setting, agent): AUCCESS and success@10 (%) as mean and SD over folds (and the fold count)."""
    per_fold = records.groupby(["tier", "setting", "agent", "fold"]).solved_at.agg(
        auccess=lambda s: 100 * auccess(s.to_numpy(), 0, budget),
        success10=lambda s: 100 * success_curve(s.to_numpy(), budget)[9]).reset_index()
    out = per_fold.groupby(["tier", "setting", "agent"]).agg(
        auccess_mean=("auccess", "mean"), auccess_sd=("auccess", "std"), success10_mean=("success10", "mean"),
        success10_sd=("success10", "std"), folds=("fold", "nunique"))
    return out.reset_index()


def run(tiers=("B", "2B"), settings=("within", "cross"), agents=("rand", "mem", "mem-o", "dqn", "dqn-o", "ssup"),
        fold_ids=range(10), seed: int = 0, executor=None, max_test: int | None = None, on_result=None,
        cache: str = "runs/physics") -> pd.DataFrame:
    """Every (tier, setting, agent, fold) shard through ``executor`` (serial when ``None``); ``on_result`` gets
    each shard's DataFrame as it arrives (write results incrementally). Returns all records."""
    from .executors import make_executor

    jobs = list(product(tiers, settings, agents, fold_ids))
    ex = executor or make_executor("serial")
    futs = [ex.submit(evaluate, f, t, s, a, seed, max_test=max_test, cache=cache) for t, s, a, f in jobs]
    out = []
    for fut in futs:
        df = fut.result()
        out.append(df)
        if on_result is not None:
            on_result(df)
    return pd.concat(out, ignore_index=True)
