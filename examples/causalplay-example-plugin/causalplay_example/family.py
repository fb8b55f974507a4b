"""The ``oneblicket`` task family: find the one blicket among ``N`` objects.

``N`` objects (default 4), exactly one of them a blicket, drawn uniformly; the machine lights when the blicket is
on it. Each step the action is ``[trial (N), belief (N)]`` in [0, 1]: the belief is checked first (solved when
every object's belief is on the right side of 0.5: ``+10``, the episode ends); otherwise the trial is run (objects
with a value above 0.5 go on the machine; ``-1`` per test). After ``budget`` tests (default 4) one last guess is
checked, then the episode ends. Observation: ``on`` (the last test's objects), ``lit``, ``tests`` (run / budget).

This module declares the family (:data:`ONE_BLICKET`, the object the entry point names); the scorer lives in
:mod:`causalplay_example.scoring` and the agents in :mod:`causalplay_example.agents`, imported when used.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from causalplay.envs.families import EnvEntry, TaskFamily
from causalplay.envs.task import ObsLayout, PlayerInfo, RewardSpec, as_rows, batch_action
from gymnasium import spaces


class OneBlicketBatch:
    """``batch_size`` episodes stepped together (a :class:`causalplay.envs.task.Task`); ``rng`` a numpy Generator."""

    def __init__(self, batch_size: int, rng: np.random.Generator, n_objects: int = 4, budget: int = 4):
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
        if not (isinstance(n_objects, int) and n_objects >= 2 and isinstance(budget, int) and budget >= 1):
            raise ValueError(f"need an integer n_objects >= 2 and budget >= 1, got {n_objects!r} and {budget!r}")
        self.B, self.n_objects, self.budget, self.rng = batch_size, n_objects, budget, rng
        self.horizon = budget + 1
        self.layout = ObsLayout.of(("on", n_objects, 1.0, "objects in the last test"), ("lit", 1, 1.0, "lit"),
                                   ("tests", 1, float(budget), "tests run / budget"))
        self.rewards = RewardSpec(solve_reward=10.0, step_cost=1.0, tol=0.5)
        B, N = batch_size, n_objects
        self.truth = torch.zeros(B, N, dtype=torch.bool)
        self.obs = torch.zeros(B, self.obs_size, dtype=torch.float64)
        self.tests = torch.zeros(B, dtype=torch.long)
        self.solved_step = torch.zeros(B, dtype=torch.long)
        self.t = torch.zeros(B, dtype=torch.long)
        self.done = torch.ones(B, dtype=torch.bool)

    @property
    def obs_size(self) -> int:
        return self.layout.size

    @property
    def action_size(self) -> int:
        return 2 * self.n_objects

    def reset(self, rows=None) -> torch.Tensor:
        rows = as_rows(rows, self.B)
        self.truth[rows] = False
        self.truth[rows, torch.from_numpy(self.rng.integers(self.n_objects, size=len(rows)))] = True
        for x in (self.obs, self.tests, self.solved_step, self.t):
            x[rows] = 0
        self.done[rows] = False
        return self.obs.clone()

    def step(self, action, check: bool = True):
        a = batch_action(action, self.action_size, self.B, check)
        N = self.n_objects
        trial, belief = a[:, :N] > 0.5, a[:, N:] > 0.5
        live = ~self.done
        solved = live & (belief == self.truth).all(1)
        test = live & ~solved & (self.tests < self.budget)
        ended = live & ~solved & ~test  # the last guess was wrong
        self.t += live.long()
        self.solved_step[solved] = self.t[solved]
        self.tests += test.long()
        lit = (trial & self.truth).any(1)
        shown = torch.cat([trial.double(), lit[:, None].double(), self.tests[:, None] / self.budget], 1)
        self.obs[test] = shown[test]
        self.done |= solved | ended
        reward = torch.where(solved, self.rewards.solve_reward, torch.where(test, -self.rewards.step_cost, 0.0))
        return self.obs.clone(), reward.double(), solved, ended

    def info(self) -> PlayerInfo:
        """What every player is told: ``N`` objects, ``budget + 1`` steps, the observation's fields and the rewards
        (nothing of this family beyond what every family tells, so the base type)."""
        return PlayerInfo(self.n_objects, self.horizon, layout=self.layout, rewards=self.rewards)

    def record(self) -> dict[str, np.ndarray]:
        """Per row: ``solved`` (bool), ``tests`` run, ``solved_step`` (1-based step of the right guess; 0: never)."""
        return {"solved": (self.solved_step > 0).numpy(), "tests": self.tests.numpy(),
                "solved_step": self.solved_step.numpy()}


class OneBlicketEnv(gym.Env):
    """The single-episode gymnasium env of ``example/OneBlicket-v0`` (a batch of one)."""

    metadata = {"render_modes": []}

    def __init__(self, n_objects: int = 4, budget: int = 4):
        self.kwargs = {"n_objects": n_objects, "budget": budget}
        probe = OneBlicketBatch(1, np.random.default_rng(0), **self.kwargs)
        self.observation_space = spaces.Box(0.0, 1.0, (probe.obs_size,), np.float64)
        self.action_space = spaces.Box(0.0, 1.0, (probe.action_size,), np.float64)
        self._batch = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._batch = OneBlicketBatch(1, self.np_random, **self.kwargs)
        return self._batch.reset()[0].numpy(), {}

    def step(self, action):
        if self._batch is None or bool(self._batch.done[0]):
            raise RuntimeError("call reset() first")
        obs, r, term, trunc = self._batch.step(np.asarray(action)[None])
        return obs[0].numpy(), float(r[0]), bool(term[0]), bool(trunc[0]), {}


ONE_BLICKET = TaskFamily(
    "oneblicket",
    envs=(EnvEntry("example/OneBlicket-v0", "causalplay_example.family:OneBlicketEnv",
                   "causalplay_example.family:OneBlicketBatch", vector=False),),
    scorer="causalplay_example.scoring:OneBlicketScorer",
    agents="causalplay_example.agents:AGENTS",
    default_agents=("halving", "random"),
)
