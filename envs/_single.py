"""The shared base of the single-episode gymnasium envs: a batched task run with ``B = 1`` (same code path)."""

from __future__ import annotations

import dataclasses

import gymnasium as gym

from causalplay.rules import Rule, make_rule

from .core import OBJECT_POOL

__all__: list[str] = []


def _rules(rule: str | Rule, noise: float) -> tuple[Rule, ...]:
    if isinstance(rule, Rule):
        return (rule,) if noise == 0 else (dataclasses.replace(rule, noise=noise),)
    return (make_rule(rule, noise),)


class _Single(gym.Env):
    metadata = {"render_modes": []}

    def _make_batch(self):  # pragma: no cover - subclasses override
        raise NotImplementedError

    def _sample_objects(self) -> list[dict]:
        pick = self.np_random.choice(len(OBJECT_POOL), size=self.n_objects, replace=False)
        return [dict(zip(("shape", "material", "color"), OBJECT_POOL[i], strict=True)) for i in pick]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._batch = self._make_batch()
        obs = self._batch.reset()
        self.objects = self._sample_objects()
        self._ended = False
        info = {"objects": [dict(o) for o in self.objects], "n_blickets": int(self._batch.n_blickets[0]), "step": 0}
        return obs[0].numpy(), info

    def _check_running(self) -> None:
        if getattr(self, "_batch", None) is None:
            raise RuntimeError("call reset() before step()")
        if self._ended:
            raise RuntimeError("the episode has ended; call reset()")

    def _final_info(self) -> dict:
        b = self._batch
        return {"blickets": b.blickets[0].numpy().copy(), "rule": b.rules[int(b.rule_idx[0])].name}


