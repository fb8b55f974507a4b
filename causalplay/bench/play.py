"""The one play loop: every task family (Blicket, Nexiom, Overhypothesis sequences, CausalDAG, physics) is played
by :func:`play`, and the benchmark, RL evaluation and the choice-model simulator all call it."""

from __future__ import annotations

import numpy as np

from causalplay.agents.base import Agent
from causalplay.envs.task import PlayerInfo

__all__ = ["play"]


def play(task, agent: Agent, info: PlayerInfo | None = None) -> dict[str, np.ndarray]:
    """Play every row of a batched task (a :class:`causalplay.envs.task.Task`) to its end with one agent.

    Parameters
    ----------
    task : Task
        ``B`` episodes stepped together; reset here.
    agent : Agent
        Batched; ``reset(info, obs)`` then ``act(obs, active)`` until every row is done. An agent whose class sets
        ``uses_oracle = True`` (an expert that knows the ground truth) is handed the task as ``agent.oracle``.
    info : PlayerInfo, optional
        What the task tells the player (default ``task.info()``: a :class:`~causalplay.envs.task.PlayerInfo` or
        the family's subclass of it).

    Returns
    -------
    dict of str to ndarray
        ``task.record()``: one entry per row, the episode as the family's scorer reads it.
    """
    obs = task.reset()
    if getattr(agent, "uses_oracle", False):
        agent.oracle = task
    if info is None:
        if not hasattr(task, "info"):
            raise TypeError(f"{type(task).__name__} has no info() method: a causalplay.envs.task.Task states what "
                            "its players are told (info() returns a causalplay.envs.task.PlayerInfo)")
        info = task.info()
    agent.reset(info, obs)
    while not bool(task.done.all()):
        obs, *_ = task.step(agent.act(obs, ~task.done))
    return task.record()
