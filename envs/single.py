"""Gymnasium single-episode environments on top of the batched tasks (``B = 1``, same code path)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from causalplay.rules import Rule, make_rule

from .core import OBJECT_POOL, BlicketBatch, TaskConfig, validate_action
from .nexiom import NexiomBatch

__all__ = ["BlicketEnv", "NexiomEnv", "IVRE", "EST"]

IVRE = TaskConfig(name="IVRE", n_blickets=(1, 2, 3, 4), n_context=4, context_size=(1, 4), context="random")
EST = TaskConfig(name="EST", n_blickets=(3, 4, 5, 6, 7, 8), n_context=4, context_size=(2, 6), context="acre")


def _rules(rule: str | Rule, noise: float) -> tuple[Rule, ...]:
    if isinstance(rule, Rule):
        return (rule,) if noise == 0 else (make_rule(rule.name.split("(")[0], noise),)
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


class BlicketEnv(_Single):
    """A symbolic Blicket task (IVRE / EST and their conjunctive / noisy variants) as a gymnasium env.

    Observation ``Box(0, 1, (N + 4,), float32)``, for the panel currently shown:
    ``[on_0 .. on_{N-1}, lit, announced blicket count / N, panel number / T, phase]`` where ``phase`` is 0 for
    a context panel and 1 for the outcome of one of the agent's trials.

    Action ``Box(0, 1, (2N,), float32)``: ``[trial_0 .. trial_{N-1}, belief_0 .. belief_{N-1}]``; object ``i``
    is in the trial when ``trial_i > 0.5``. NaN, a wrong shape or values outside [0, 1] raise ``ValueError``.

    Timing (IVRE: ``T = 10``, ``C = 4``): the observation before action ``t`` shows panel ``t``; panels
    ``1..C`` are context, panel ``t > C`` the outcome of the trial in action ``t - 1``. So the trials of
    actions ``C..T-1`` run (6 in IVRE) and the trials of actions ``1..C-1`` and ``T`` are ignored. Action
    ``t``'s belief is scored against the oracle of panels ``1..t``:

    * solved (every ``|belief_i - truth_i| < 0.5``): reward ``+20``, ``terminated=True``;
    * otherwise ``-1 - JSD(oracle, belief)`` (Jensen-Shannon distance, natural log, both vectors normalised
      to sum 1; an all-zero vector counts as uniform); after action ``T`` ``truncated=True``.

    The oracle is the blicket marginal under a uniform prior over all ``2^N`` sets and the true rule, i.e. for
    a deterministic rule the fraction of assignments consistent with the panels that contain the object.

    ``info`` from :meth:`reset` holds ``objects`` (N dicts ``shape``/``material``/``color``, distinct CLEVR
    combinations drawn with ``self.np_random``), ``n_blickets`` and ``step``; every step's ``info`` holds
    ``step``, ``oracle`` and ``solved``; the ground truth (``blickets``, ``rule``) only once the episode ended.
    :meth:`panel` describes the panel shown in the current observation. The same seed gives the same episode.

    Parameters
    ----------
    config : TaskConfig
        The task (``IVRE`` or ``EST`` here); ``rule`` / ``noise`` override its rule.

    Version History
    ---------------
    * v0: initial release (IVRE, EST and variants, Nexiom).
    """

    def __init__(self, config: TaskConfig = IVRE, rule: str | Rule | None = None, noise: float = 0.0,
                 n_blickets: tuple[int, ...] | None = None):
        import dataclasses

        if rule is not None or noise:
            base = rule if rule is not None else config.rules[0]
            config = dataclasses.replace(config, rules=_rules(base, noise))
        if n_blickets is not None:
            config = dataclasses.replace(config, n_blickets=tuple(n_blickets))
        self.config = config
        self.n_objects = N = config.n_objects
        self.observation_space = spaces.Box(0.0, 1.0, (N + 4,), np.float32)
        self.action_space = spaces.Box(0.0, 1.0, (2 * N,), np.float32)
        self._batch = None

    def _make_batch(self) -> BlicketBatch:
        return BlicketBatch(self.config, 1, self.np_random)

    def step(self, action):
        self._check_running()
        a = validate_action(action, 2 * self.n_objects)
        if a.ndim != 1:
            raise ValueError(f"action must have shape ({2 * self.n_objects},), got {tuple(a.shape)}")
        oracle = self._batch.oracle()[0].numpy().copy()
        obs, reward, term, trunc = self._batch.step(a[None])
        info = {"step": self._batch.t, "oracle": oracle, "solved": bool(term[0])}
        if bool(term[0] or trunc[0]):
            self._ended = True
            info.update(self._final_info())
        return obs[0].numpy(), float(reward[0]), bool(term[0]), bool(trunc[0]), info

    def panel(self) -> dict:
        """The panel in the current observation: ``on`` (bool [N]), ``lit``, ``step`` (1-based panel number),
        ``phase`` ("context" or "trial")."""
        if self._batch is None:
            raise RuntimeError("call reset() first")
        k = self._batch.current_panel()
        return {"on": self._batch.panels[0, k].numpy().copy(), "lit": bool(self._batch.lit[0, k]), "step": k + 1,
                "phase": "context" if k < self.config.n_context else "trial"}


class NexiomEnv(_Single):
    """The Nexiom human task (see :mod:`causalplay.envs.nexiom`) as a gymnasium env.

    Observation ``Box(0, 1, (8,), float32)``: ``[on_0..on_3, lit, 2 / 4, tests used / budget, tested yet]``
    for the last test (nothing on, unlit before the first). Action ``Box(0, 1, (10,))``:
    ``[trial (4), belief (4), stop, P(conjunctive)]``. ``panel()`` shows the last test (``phase="trial"``) or
    the empty machine at ``step=0`` (``phase="context"``). ``info`` after the answer: ``blickets``, ``rule``,
    ``solved``, ``rule_correct``, ``tests``.

    Version History
    ---------------
    * v0: initial release.
    """

    def __init__(self, budget: int = 16):
        self.n_objects = 4
        self.budget = budget
        self.observation_space = spaces.Box(0.0, 1.0, (8,), np.float32)
        self.action_space = spaces.Box(0.0, 1.0, (10,), np.float32)
        self._batch = None

    def _make_batch(self) -> NexiomBatch:
        return NexiomBatch(1, self.np_random, budget=self.budget)

    def step(self, action):
        self._check_running()
        a = validate_action(action, 10)
        if a.ndim != 1:
            raise ValueError(f"action must have shape (10,), got {tuple(a.shape)}")
        obs, reward, term, trunc = self._batch.step(a[None])
        info = {"step": self._batch.t, "tests": int(self._batch.tests[0])}
        if bool(term[0]):
            self._ended = True
            info.update(self._final_info())
            info["solved"] = bool(self._batch.solved[0])
            info["rule_correct"] = bool(self._batch.rule_correct[0])
        return obs[0].numpy(), float(reward[0]), bool(term[0]), bool(trunc[0]), info

    def panel(self) -> dict:
        if self._batch is None:
            raise RuntimeError("call reset() first")
        b = self._batch
        tested = int(b.tests[0])
        return {"on": b.on[0].numpy().copy(), "lit": bool(b.lit_now[0]), "step": tested,
                "phase": "trial" if tested else "context"}


def make_ivre(**kwargs) -> BlicketEnv:
    """``causalplay/IVRE-v0`` (keyword arguments as :class:`BlicketEnv`: ``rule``, ``noise``, ``n_blickets``)."""
    return BlicketEnv(IVRE, **kwargs)


def make_est(**kwargs) -> BlicketEnv:
    """``causalplay/EST-v0`` (keyword arguments as :class:`BlicketEnv`)."""
    return BlicketEnv(EST, **kwargs)
