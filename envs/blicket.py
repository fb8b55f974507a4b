"""The symbolic Blicket tasks (IVRE, EST and variants) as a gymnasium env."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from causalplay.rules import Rule

from ._single import _rules, _Single
from .core import BlicketBatch, TaskConfig, validate_action

__all__ = ["BlicketEnv", "IVRE", "EST", "make_ivre", "make_est"]

IVRE = TaskConfig(name="IVRE", n_blickets=(1, 2, 3, 4), n_context=4, context_size=(1, 4), context="random")
EST = TaskConfig(name="EST", n_blickets=(3, 4, 5, 6, 7, 8), n_context=4, context_size=(2, 6), context="acre")


class BlicketEnv(_Single):
    """A symbolic Blicket task (IVRE / EST and their conjunctive / noisy variants).

    ## Description
    ``N`` objects (9 in IVRE/EST), some of them blickets; a machine lights up according to a rule
    (:mod:`causalplay.rules`). The agent first sees ``C`` context panels (4), then proposes trials; at every
    step it also states its belief about which objects are blickets. Follows IVRE (Xu, Jiang et al., 2023)
    and its earlier version EST; the batched torch engine underneath is
    :class:`causalplay.envs.core.BlicketBatch` (``B = 1`` here, same code path).

    ## Action Space
    ``Box(0, 1, (2N,), float32)``: ``[trial_0 .. trial_{N-1}, belief_0 .. belief_{N-1}]``; object ``i`` is in
    the trial when ``trial_i > 0.5``. NaN, a wrong shape or values outside [0, 1] raise ``ValueError``.

    ## Observation Space
    ``Box(0, 1, (N + 4,), float32)`` for the panel currently shown:
    ``[on_0 .. on_{N-1}, lit, announced blicket count / N, panel number / T, phase]``, ``phase`` 0 for a
    context panel and 1 for the outcome of one of the agent's trials. The ground truth is never in it.

    ## Rewards
    Action ``t``'s belief is scored against the oracle of panels ``1..t``: solved (every
    ``|belief_i - truth_i| < 0.5``) gives ``+20``; otherwise ``-1 - JSD(oracle, belief)`` (Jensen-Shannon
    distance, natural log, both vectors normalised to sum 1; an all-zero vector counts as uniform). The oracle
    is the blicket marginal under a uniform prior over all ``2^N`` sets and the true rule -- for a
    deterministic rule, the fraction of assignments consistent with the panels that contain the object.

    ## Starting State
    ``reset`` draws the objects (distinct CLEVR shape x material x colour combinations), the number of
    blickets and the set, the rule (if several) and the context panels, all from ``self.np_random``: the same
    seed gives the same episode. The first observation shows context panel 1.

    ## Episode End
    The observation before action ``t`` shows panel ``t``; panels ``1..C`` are context, panel ``t > C`` the
    outcome of the trial in action ``t - 1`` (so the trials of actions ``C..T-1`` run -- 6 in IVRE -- and
    those of actions ``1..C-1`` and ``T`` are ignored). Solving sets ``terminated=True``; after action ``T``
    (10) ``truncated=True``.

    ## Info
    ``reset``: ``objects`` (N dicts ``shape``/``material``/``color``), ``n_blickets``, ``step``. Every step:
    ``step``, ``oracle``, ``solved``; the ground truth (``blickets``, ``rule``) only once the episode ended.
    :meth:`panel` describes the panel in the current observation.

    ## Arguments
    * ``config`` (:class:`causalplay.envs.core.TaskConfig`): the task (``IVRE`` or ``EST``), every constant.
    * ``rule`` (name or Rule) and ``noise`` (flip probability): override the task's rule.
    * ``n_blickets`` (tuple of int): override the allowed blicket counts.

    ## Version History
    * v0: initial release (IVRE, EST, conjunctive and noisy variants).
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


def make_ivre(**kwargs) -> BlicketEnv:
    """``causalplay/IVRE-v0`` (keyword arguments as :class:`BlicketEnv`: ``rule``, ``noise``, ``n_blickets``)."""
    return BlicketEnv(IVRE, **kwargs)


def make_est(**kwargs) -> BlicketEnv:
    """``causalplay/EST-v0`` (keyword arguments as :class:`BlicketEnv`)."""
    return BlicketEnv(EST, **kwargs)
