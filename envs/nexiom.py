"""The Nexiom human task as a gymnasium env."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from ._single import SingleEnv
from .nexiom_core import NexiomBatch

__all__ = ["NexiomEnv"]


class NexiomEnv(SingleEnv):
    """The Nexiom human task (``causalplay/data/nexiom``): free exploration with a stop-and-answer action.

    ## Description
    4 objects, exactly 2 blickets, a deterministic conjunctive or disjunctive machine (50/50 per episode). No
    context panels: the agent tests any subset until it stops to answer which objects are blickets and which
    rule holds -- the task the adults in the shipped data did. Batched engine:
    :class:`causalplay.envs.nexiom_core.NexiomBatch`.

    ## Action Space
    ``Box(0, 1, (10,), float32)``: ``[trial (4), belief (4), stop, P(conjunctive)]``; object ``i`` is in the
    trial when ``trial_i > 0.5``; ``stop > 0.5`` answers. Bad actions raise ``ValueError``.

    ## Observation Space
    ``Box(0, 1, (8,), float32)``: ``[on_0..on_3, lit, 2 / 4, tests used / budget, tested yet]`` for the last
    test (nothing on and unlit before the first).

    ## Rewards
    ``-1`` per test; answering gives ``+20`` when every belief is strictly within 0.5 of the truth, else 0.

    ## Starting State
    Blickets and rule drawn from ``self.np_random`` (same seed, same episode).

    ## Episode End
    ``terminated`` when the agent answers, or when the test budget is used up (the next step answers).

    ## Info
    After the answer: ``blickets``, ``rule``, ``solved``, ``rule_correct``, ``tests``. :meth:`panel` shows the
    last test (``phase="trial"``) or the empty machine at ``step=0`` (``phase="context"``).

    ## Arguments
    * ``budget`` (int, default 16): the most tests before the answer is forced.

    ## Version History
    * v0: initial release.
    """

    def __init__(self, budget: int = 16):
        self.n_objects = 4
        self.budget = budget
        self.observation_space = spaces.Box(0.0, 1.0, (8,), np.float32)
        self.action_space = spaces.Box(0.0, 1.0, (10,), np.float32)

    def _make_batch(self) -> NexiomBatch:
        return NexiomBatch(1, self.np_random, budget=self.budget)

    def step(self, action):
        a = self._one_action(action, 10)
        b = self._batch
        obs, reward, term, trunc = b.step(a[None], check=False)
        info = {"step": int(b.t[0]), "tests": int(b.tests[0])}
        if bool(term[0]):
            self._ended = True
            info.update(self._final_info(), solved=bool(b.solved[0]), rule_correct=bool(b.rule_correct[0]))
        return obs[0].numpy(), float(reward[0]), bool(term[0]), bool(trunc[0]), info

    def panel(self) -> dict:
        b = self._batch
        if b is None or not b._started:
            raise RuntimeError("call reset() first")
        tested = int(b.tests[0])
        return {"on": b.on[0].numpy().copy(), "lit": bool(b.lit_now[0]), "step": tested,
                "phase": "trial" if tested else "context"}
