"""The shared base of the single-episode gymnasium envs: a batched task run with ``B = 1`` (same code path)."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np

from causalplay.core.rules import Rule, make_rule

from .sampling import OBJECT_POOL
from .task import numpy_obs, validate_action

__all__ = ["SingleEnv", "noisy_rules", "unit_box"]  # for the envs of this package


def noisy_rules(rule: str | Rule, noise: float) -> tuple[Rule, ...]:
    """``(rule,)`` with response noise ``noise`` (a rule name or a Rule)."""
    if isinstance(rule, Rule):
        return (rule,) if noise == 0 else (dataclasses.replace(rule, noise=noise),)
    return (make_rule(rule, noise),)


class SingleEnv(gym.Env):
    """A gymnasium env that runs its batched task (``_make_batch``) with ``B = 1``."""

    metadata = {"render_modes": []}
    _batch = None  # the batched task, made on the first reset

    def _make_batch(self):  # pragma: no cover - subclasses override
        raise NotImplementedError

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if self._batch is None:
            self._batch = self._make_batch()
        self._batch.rng = self.np_random  # reset(seed=...) replaces the generator; the batch draws from it
        obs = self._batch.reset()
        objects = getattr(self._batch, "objects", None)
        self.objects = ([] if objects is None else
                        [dict(zip(("shape", "material", "color"), OBJECT_POOL[int(i)], strict=True))
                         for i in objects[0]])
        self._ended = False
        info = {"objects": [dict(o) for o in self.objects], "n_blickets": int(self._batch.n_blickets[0]), "step": 0}
        return numpy_obs(obs, 0), info

    def _check_running(self) -> None:
        if self._batch is None or not self._batch._started:
            raise RuntimeError("call reset() before step()")
        if self._ended:
            raise RuntimeError("the episode has ended; call reset()")

    def _one_action(self, action, n_values: int):
        """The running check and the action of one episode, validated, as a ``[n_values]`` float64 tensor."""
        self._check_running()
        a = validate_action(action, n_values)
        if a.ndim != 1:
            raise ValueError(f"action must have shape ({n_values},), got {tuple(a.shape)}")
        return a

    def _final_info(self) -> dict:
        b = self._batch
        return {"blickets": b.blickets[0].numpy().copy(), "rule": b.rules[int(b.rule_idx[0])].name}


def unit_box(shape, low: float = 0.0, high: float = 1.0) -> gym.spaces.Box:
    """A float32 Box of ``shape`` in ``[low, high]``."""
    return gym.spaces.Box(low, high, shape, np.float32)
