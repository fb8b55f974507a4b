"""The Nexiom task (the human study in ``causalplay/data/nexiom``), batched in torch.

4 objects, exactly 2 blickets, the machine conjunctive or disjunctive (drawn 50/50 per episode, deterministic).
No context panels: the agent tests any subset as often as it likes, up to a budget (16 by default), and
stops to answer which objects are blickets and which rule holds -- as the adults did.

Action ``[2N + 2]`` = trial probabilities (N), belief probabilities (N), stop (> 0.5 answers), P(conjunctive).
Step with stop <= 0.5: the trial is run (reward ``-test_cost``) and its outcome is the next observation. Step
with stop > 0.5, or any step once the budget is used up: the answer is scored -- ``+solve_reward`` when every
belief is strictly within 0.5 of the truth (the people's ``blickets_correct``), else 0 -- and the episode
ends (``terminated``). :attr:`rule_correct` records the rule judgement.

This is the one Nexiom task loop: the gymnasium env, the benchmark's EIG learner
(:func:`causalplay.bench.nexiom.run_nexiom`) and the choice-model simulator (:func:`causalplay.fitting.simulate`)
all drive it. Each episode draws one block of uniforms (rule, blicket order, one per possible test for the
machine), so rows can own their generators as in :class:`causalplay.envs.core.BlicketBatch`.
"""

from __future__ import annotations

import numpy as np
import torch

from causalplay.core.rules import make_rule

from .core import BlicketInfo
from .machine import machine_lit
from .task import ObsLayout, RewardSpec, batch_action, positive_int, reset_rows, row_rngs

__all__ = ["NexiomBatch"]


class NexiomBatch:
    """``B`` Nexiom episodes; a :class:`causalplay.envs.task.Task`.

    Parameters
    ----------
    batch_size : int
    rng : numpy.random.Generator or a sequence of ``batch_size`` of them (one per row)
    n_objects, n_blickets, budget : int
    solve_reward, test_cost : float
    """

    def __init__(self, batch_size: int, rng, *, n_objects: int = 4, n_blickets: int = 2,
                 budget: int = 16, solve_reward: float = 20.0, test_cost: float = 1.0):
        positive_int(batch_size, "batch_size")
        positive_int(budget, "budget")
        if isinstance(n_objects, bool) or not isinstance(n_objects, int) or not 1 <= n_objects <= 16:
            raise ValueError(f"n_objects must be an integer in [1, 16], got {n_objects!r}")
        if not 1 <= n_blickets <= n_objects:
            raise ValueError(f"need 1 <= n_blickets <= n_objects, got {n_blickets} and {n_objects}")
        self.rngs = row_rngs(rng, batch_size)
        self.rng = rng if self.rngs is None else self.rngs
        self.B, self.n_objects, self.budget = batch_size, n_objects, budget
        self.count, self.solve_reward, self.test_cost = n_blickets, solve_reward, test_cost
        self.rules = (make_rule("disjunctive"), make_rule("conjunctive"))
        self.n_context = 0
        self.horizon = budget + 1
        self.rewards = RewardSpec(solve_reward=solve_reward, step_cost=test_cost, tol=0.5)
        N = n_objects
        self.layout = ObsLayout.of(("on", N, 1.0, "objects in the last test"), ("lit", 1, 1.0, "machine lit"),
                                   ("count", 1, float(N), "announced blicket count / N"),
                                   ("tests", 1, float(budget), "tests used / budget"),
                                   ("tested", 1, 1.0, "1 once a test was run"))
        self._allocate()
        self.done[:] = True  # nothing runs before the first reset()
        self._started = False

    @property
    def obs_size(self) -> int:
        return self.layout.size

    @property
    def action_size(self) -> int:
        return 2 * self.n_objects + 2

    def _allocate(self) -> None:
        B, N = self.B, self.n_objects
        self.rule_idx = torch.zeros(B, dtype=torch.long)
        self.blickets = torch.zeros(B, N, dtype=torch.bool)
        self.n_blickets = torch.full((B,), self.count)
        self.uniforms = torch.zeros(B, self.horizon, dtype=torch.float64)
        self.t = torch.zeros(B, dtype=torch.long)
        self.tests = torch.zeros(B, dtype=torch.long)
        self.on = torch.zeros(B, N, dtype=torch.bool)
        self.lit_now = torch.zeros(B, dtype=torch.bool)
        self.done = torch.zeros(B, dtype=torch.bool)
        self.solved = torch.zeros(B, dtype=torch.bool)
        self.rule_correct = torch.zeros(B, dtype=torch.bool)
        self.returns = torch.zeros(B, dtype=torch.float64)

    def reset(self, rows=None, *, rule_idx=None, blickets=None) -> torch.Tensor:
        """New episodes in ``rows`` (``None``: all). ``rule_idx [r]`` (0 disjunctive, 1 conjunctive) and
        ``blickets [r, N]`` (bool) fix those rows' worlds instead of drawing them (the uniforms are still
        drawn, so the generator advances the same way)."""
        idx = reset_rows(self, rows)
        n, N = len(idx), self.n_objects
        if n == 0:
            return self.observation()
        M = 1 + N + self.horizon
        if self.rngs is None:
            u = self.rng.random((n, M))
        else:
            u = np.stack([self.rngs[int(i)].random(M) for i in idx])
        r = torch.as_tensor(np.minimum((u[:, 0] * 2).astype(np.int64), 1))
        b = torch.as_tensor(u[:, 1:1 + N].argsort(-1).argsort(-1) < self.count)
        if rule_idx is not None:
            r = torch.as_tensor(np.asarray(rule_idx, dtype=np.int64)).reshape(n)
            if bool(((r < 0) | (r > 1)).any()):
                raise ValueError(f"rule_idx must be 0 (disjunctive) or 1 (conjunctive), got {r.tolist()}")
        if blickets is not None:
            b = torch.as_tensor(np.asarray(blickets, dtype=bool)).reshape(n, N)
        self.rule_idx[idx], self.blickets[idx] = r, b
        self.n_blickets[idx] = b.sum(-1)
        self.uniforms[idx] = torch.as_tensor(u[:, 1 + N:])
        for name in ("t", "tests", "on", "lit_now", "done", "solved", "rule_correct", "returns"):
            getattr(self, name)[idx] = 0
        return self.observation()

    def observation(self) -> torch.Tensor:
        """``[B, N + 4]``: on (N), lit, announced count / N, tests used / budget, 1 once a test was run."""
        N = self.n_objects
        obs = torch.empty(self.B, self.obs_size, dtype=torch.float32)
        obs[:, :N] = self.on
        obs[:, N] = self.lit_now
        obs[:, N + 1] = self.n_blickets / N
        obs[:, N + 2] = self.tests / self.budget
        obs[:, N + 3] = self.tests > 0
        return obs

    def step(self, action, *, check: bool = True):
        """Apply ``action [B, 2N + 2]``; returns ``obs, reward, terminated (answered), truncated (never)``."""
        N = self.n_objects
        if not self._started:
            raise RuntimeError("call reset() before step()")
        a = batch_action(action, 2 * N + 2, self.B, check)
        active = ~self.done
        self.t = self.t + active.long()
        answer = active & ((a[:, 2 * N] > 0.5) | (self.tests >= self.budget))
        test = active & ~answer
        correct = ((a[:, N:2 * N] - self.blickets.double()).abs() < 0.5).all(-1)
        solved = answer & correct
        self.solved |= solved
        self.rule_correct |= answer & ((a[:, 2 * N + 1] > 0.5) == (self.rule_idx == 1))
        trial = (a[:, :N] > 0.5) & test[:, None]
        u = self.uniforms.gather(1, self.tests.clamp(max=self.horizon - 1)[:, None])[:, 0]
        lit = torch.from_numpy(machine_lit(self.rules, self.rule_idx.numpy(), self.blickets.numpy(), trial.numpy(),
                                           u.numpy()))
        self.on = torch.where(test[:, None], trial, self.on)
        self.lit_now = torch.where(test, lit, self.lit_now)
        self.tests += test.long()
        reward = torch.where(test, -self.test_cost, torch.where(solved, self.solve_reward, 0.0)).double()
        reward = torch.where(active, reward, 0.0)
        self.returns += reward
        self.done = self.done | answer
        return self.observation(), reward, answer, torch.zeros_like(answer)

    def info(self) -> BlicketInfo:
        """What the instructions tell every player: the objects, the budget (``horizon - 1`` tests), both rules
        (:class:`~causalplay.envs.core.BlicketInfo`; the count is announced in the observation)."""
        return BlicketInfo(self.n_objects, self.horizon, self.n_context, tuple(self.rules), layout=self.layout,
                           rewards=self.rewards)

    def record(self) -> dict[str, np.ndarray]:
        """One entry per row: ``rule``, ``blickets_correct``, ``rule_correct``, ``n_tests``, ``episode_reward``."""
        return {"rule": np.array([self.rules[int(r)].name for r in self.rule_idx]),
                "blickets_correct": self.solved.numpy().copy(), "rule_correct": self.rule_correct.numpy().copy(),
                "n_tests": self.tests.numpy().copy(), "episode_reward": self.returns.numpy().copy()}
