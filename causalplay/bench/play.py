"""The one play loop: every task family (Blicket, Nexiom, Overhypothesis sequences, CausalDAG, physics) is played
by :func:`play`, and the benchmark, RL evaluation and the choice-model simulator all call it."""

from __future__ import annotations

import numpy as np

from causalplay.agents.base import Agent, TaskInfo

__all__ = ["play"]


def play(task, agent: Agent, info: TaskInfo | None = None) -> dict[str, np.ndarray]:
    """Play every row of a batched task (a :class:`causalplay.envs.task.Task`) to its end with one agent.

    Parameters
    ----------
    task : Task
        ``B`` episodes stepped together; reset here.
    agent : Agent
        Batched; ``reset(info, obs)`` then ``act(obs, active)`` until every row is done. An agent whose class sets
        ``uses_oracle = True`` (an expert that knows the ground truth) is handed the task as ``agent.oracle``.
    info : TaskInfo, optional
        What the task tells the player (default ``TaskInfo.from_env(task)``).

    Returns
    -------
    dict of str to ndarray
        ``task.record()``: one entry per row, the episode as the family's scorer reads it.
    """
    obs = task.reset()
    if getattr(agent, "uses_oracle", False):
        agent.oracle = task
    agent.reset(info if info is not None else TaskInfo.from_env(task), obs)
    while not bool(task.done.all()):
        obs, *_ = task.step(agent.act(obs, ~task.done))
    return task.record()
