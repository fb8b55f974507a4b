"""The Nexiom task (the human study in ``causalplay/data/nexiom``), batched in torch.

4 objects, exactly 2 blickets, the machine conjunctive or disjunctive (drawn 50/50 per episode, deterministic).
No context panels: the agent tests any subset as often as it likes, up to a budget (16 by default), and
stops to answer which objects are blickets and which rule holds -- as the adults did.

Action ``[2N + 2]`` = trial probabilities (N), belief probabilities (N), stop (> 0.5 answers), P(conjunctive).
Step with stop <= 0.5: the trial is run (reward ``-test_cost``) and its outcome is the next observation. Step
with stop > 0.5, or any step once the budget is used up: the answer is scored -- ``+solve_reward`` when every
belief is strictly within 0.5 of the truth (the people's ``blickets_correct``), else 0 -- and the episode
ends (``terminated``). ``info["rule_correct"]`` records the rule judgement.
"""

from __future__ import annotations

import numpy as np
import torch

from causalplay.rules import make_rule

from .core import _p_lit, validate_action

__all__ = ["NexiomBatch"]


class NexiomBatch:
    """``B`` Nexiom episodes in lock-step; same interface as :class:`causalplay.envs.core.BlicketBatch`."""

    def __init__(self, batch_size: int, rng: np.random.Generator, *, n_objects: int = 4, n_blickets: int = 2,
                 budget: int = 16, solve_reward: float = 20.0, test_cost: float = 1.0):
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise ValueError(f"budget must be a positive integer, got {budget!r}")
        if not 1 <= n_blickets <= n_objects:
            raise ValueError(f"need 1 <= n_blickets <= n_objects, got {n_blickets} and {n_objects}")
        self.B, self.rng, self.n_objects, self.budget = batch_size, rng, n_objects, budget
        self.count, self.solve_reward, self.test_cost = n_blickets, solve_reward, test_cost
        self.rules = (make_rule("disjunctive"), make_rule("conjunctive"))
        self.n_context = 0
        self.horizon = budget + 1

    @property
    def obs_size(self) -> int:
        return self.n_objects + 4

    @property
    def action_size(self) -> int:
        return 2 * self.n_objects + 2

    def reset(self) -> torch.Tensor:
        B, N = self.B, self.n_objects
        self.rule_idx = torch.as_tensor(self.rng.integers(0, 2, size=B))
        rank = self.rng.random((B, N)).argsort(-1).argsort(-1)
        self.blickets = torch.as_tensor(rank < self.count)
        self.n_blickets = torch.full((B,), self.count)
        self.t = 0
        self.tests = torch.zeros(B, dtype=torch.long)
        self.on = torch.zeros(B, N, dtype=torch.bool)
        self.lit_now = torch.zeros(B, dtype=torch.bool)
        self.done = torch.zeros(B, dtype=torch.bool)
        self.solved = torch.zeros(B, dtype=torch.bool)
        self.rule_correct = torch.zeros(B, dtype=torch.bool)
        return self.observation()

    def observation(self) -> torch.Tensor:
        """``[B, N + 4]``: on (N), lit, announced count / N, tests used / budget, 1 once a test was run."""
        N = self.n_objects
        obs = torch.empty(self.B, self.obs_size, dtype=torch.float32)
        obs[:, :N] = self.on.float()
        obs[:, N] = self.lit_now.float()
        obs[:, N + 1] = self.count / N
        obs[:, N + 2] = self.tests.float() / self.budget
        obs[:, N + 3] = (self.tests > 0).float()
        return obs

    def step(self, action):
        N = self.n_objects
        if bool(self.done.all()):
            raise RuntimeError("all episodes have answered; call reset()")
        a = validate_action(action, 2 * N + 2)
        if a.ndim == 1:
            a = a[None]
        if a.shape[0] != self.B:
            raise ValueError(f"action batch has {a.shape[0]} rows, expected batch_size={self.B}")
        self.t += 1
        active = ~self.done
        answer = active & ((a[:, 2 * N] > 0.5) | (self.tests >= self.budget))
        test = active & ~answer
        correct = ((a[:, N:2 * N] - self.blickets.double()).abs() < 0.5).all(-1)
        solved = answer & correct
        self.solved |= solved
        self.rule_correct |= answer & ((a[:, 2 * N + 1] > 0.5) == (self.rule_idx == 1))
        trial = (a[:, :N] > 0.5) & test[:, None]
        k = (trial & self.blickets).sum(-1)
        # A deterministic machine: P(lit) is 0 or 1, the uniform only matters for noisy rules.
        u = torch.as_tensor(self.rng.random(self.B))
        lit = u < _p_lit(self.rules, self.rule_idx, k)
        self.on = torch.where(test[:, None], trial, self.on)
        self.lit_now = torch.where(test, lit, self.lit_now)
        self.tests += test.long()
        reward = torch.where(test, torch.full((self.B,), -self.test_cost, dtype=torch.float64),
                             torch.where(solved, self.solve_reward, 0.0).double())
        self.done = self.done | answer
        return self.observation(), reward, answer, torch.zeros_like(answer)
