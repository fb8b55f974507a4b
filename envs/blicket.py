"""The symbolic Blicket tasks (IVRE, EST and variants) as a gymnasium env."""

from __future__ import annotations

import dataclasses
import functools
import warnings

import numpy as np
from gymnasium import spaces

from causalplay.core.rules import Rule

from ._single import SingleEnv, noisy_rules, unit_box
from .core import OBS_MODES, BlicketBatch, TaskConfig
from .task import numpy_obs

__all__ = ["BlicketEnv", "IVRE", "EST", "EST_ACRE", "make_ivre", "make_est", "make_est_acre", "make_est_v0",
           "observation_space", "batch_ivre", "batch_est", "batch_est_acre", "batch_est_v0"]

IVRE = TaskConfig(name="IVRE", n_blickets=(1, 2, 3, 4), n_context=4, context_size=(1, 4), context="random")
#: EST as the paper samples it (``causalplay/EST-v1``): 4 random context panels of 2-6 objects.
EST = TaskConfig(name="EST", n_blickets=(3, 4, 5, 6, 7, 8), n_context=4, context_size=(2, 6), context="random")
#: The designed, ACRE-guaranteed EST context (``causalplay/EST-ACRE-v0``, and the deprecated ``EST-v0``).
EST_ACRE = dataclasses.replace(EST, name="EST-ACRE", context="acre")


def observation_space(config: TaskConfig, obs_mode: str) -> spaces.Space:
    """The single-episode observation space of ``config`` in ``obs_mode`` (see :mod:`causalplay.envs.core`)."""
    N, T = config.n_objects, config.horizon
    panel = unit_box((N + 4,))
    if obs_mode == "panel":
        return panel
    if obs_mode == "history":
        return unit_box((2 + T * (N + 1) + N,))
    if obs_mode == "dict":
        return spaces.Dict({"panel": panel, "history": unit_box((T, N + 1)), "last_belief": unit_box((N,))})
    raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {obs_mode!r}")


def configure(config: TaskConfig, rule: str | Rule | None = None, noise: float = 0.0,
              n_blickets: tuple[int, ...] | None = None) -> TaskConfig:
    """``config`` with the keyword overrides of the registered ids (``rule``, ``noise``, ``n_blickets``)."""
    if rule is not None or noise:
        base = rule if rule is not None else config.rules[0]
        config = dataclasses.replace(config, rules=noisy_rules(base, noise))
    if n_blickets is not None:
        if isinstance(n_blickets, int) and not isinstance(n_blickets, bool):
            n_blickets = (n_blickets,)  # one allowed count
        try:
            counts = tuple(int(c) for c in n_blickets if isinstance(c, (int, np.integer)) and not isinstance(c, bool))
            ok = len(counts) == len(tuple(n_blickets))
        except TypeError:
            ok = False
        if not ok:
            raise ValueError(f"n_blickets must be an int or a tuple of ints (the allowed blicket counts), "
                             f"got {n_blickets!r}")
        config = dataclasses.replace(config, n_blickets=counts)
    return config


class BlicketEnv(SingleEnv):
    """A symbolic Blicket task (IVRE / EST and their conjunctive / noisy variants).

    ## Description
    ``N`` objects (9 in IVRE/EST), some of them blickets; a machine lights up according to a rule
    (:mod:`causalplay.core.rules`). The agent first sees ``C`` context panels (4), then proposes trials; at every
    step it also states its belief about which objects are blickets. Follows IVRE (Xu, Jiang et al., 2023)
    and its earlier version EST; the batched torch engine underneath is
    :class:`causalplay.envs.core.BlicketBatch` (``B = 1`` here, same code path), and
    ``gymnasium.make_vec(id, num_envs=B)`` runs ``B`` of them natively (:mod:`causalplay.envs.vector`).

    ## Action Space
    ``Box(0, 1, (2N,), float32)``: ``[trial_0 .. trial_{N-1}, belief_0 .. belief_{N-1}]``; object ``i`` is in
    the trial when ``trial_i > 0.5``. NaN, a wrong shape or values outside [0, 1] raise ``ValueError``.

    ## Observation Space
    ``obs_mode="panel"`` (default): ``Box(0, 1, (N + 4,), float32)`` for the panel currently shown:
    ``[on_0 .. on_{N-1}, lit, announced blicket count / N, panel number / T, phase]``, ``phase`` 0 for a
    context panel and 1 for the outcome of one of the agent's trials. ``obs_mode="history"``:
    ``Box(0, 1, (2 + T(N + 1) + N,))`` = ``[count / N, panels shown / T, (on, lit) of every panel so far
    zero-padded to T panels, last belief]`` (the public IVRE code's content; 111 values for IVRE).
    ``obs_mode="dict"``: ``Dict(panel, history [T, N + 1], last_belief [N])``. The ground truth is never in it.

    ## Rewards
    Action ``t``'s belief is scored against the oracle of panels ``1..t``: solved (every
    ``|belief_i - truth_i| < 0.5``) gives ``+20``; otherwise ``-1 - JSD(oracle, belief)``, the official IVRE
    Jensen-Shannon distance (:func:`causalplay.envs.reward.ivre_jsd`: both vectors padded to the 48 slots of
    the object pool, ``1e-7`` added to every slot, normalised, natural log, divergence clipped to [0, 1]).
    The oracle is the blicket marginal under a uniform prior over all ``2^N`` sets and the true rule -- for a
    deterministic rule, the fraction of assignments consistent with the panels that contain the object.

    ## Starting State
    ``reset`` draws the number of blickets and the set, the rule (if several), the context panels, the
    machine's uniforms and the objects (distinct CLEVR shape x material x colour combinations), all from
    ``self.np_random``: the same seed gives the same episode. The first observation shows context panel 1.

    ## Episode End
    The observation before action ``t`` shows panel ``t``; panels ``1..C`` are context, panel ``t > C`` the
    outcome of the trial in action ``t - 1`` (so the trials of actions ``C..T-1`` run -- 6 in IVRE -- and
    those of actions ``1..C-1`` and ``T`` are ignored). Solving sets ``terminated=True``; after action ``T``
    (10) ``truncated=True``. Stepping an ended episode raises ``RuntimeError("the episode has ended; call
    reset()")``.

    ## Info
    ``reset``: ``objects`` (N dicts ``shape``/``material``/``color``), ``n_blickets``, ``step``. Every step:
    ``step``, ``oracle`` (the marginals the belief was scored against: uniform over the task's rules when it
    has several, so it never reveals the hidden rule), ``solved``; the ground truth
    (``blickets``, ``rule``) only once the episode ended. :meth:`panel` describes the current panel.

    ## Arguments
    * ``config`` (:class:`causalplay.envs.core.TaskConfig`): the task (``IVRE``, ``EST``, ``EST_ACRE``).
    * ``rule`` (name or Rule) and ``noise`` (flip probability): override the task's rule.
    * ``n_blickets`` (int or tuple of int): override the allowed blicket counts.
    * ``obs_mode`` (``"panel"``, ``"history"`` or ``"dict"``): the observation, see above.

    ## Version History
    * IVRE-v0 and its variants: the reward is the official IVRE distance (48 slots, EPS 1e-7) since the release
      with ``EST-v1``; before, a 9-entry distance without EPS that scored an all-zero belief as uniform.
    * EST-v1: the EST paper's sampling (4 random context panels of 2-6 objects); conjunctive and noisy
      variants follow it (``EST-Conjunctive-v1``, ``EST-Noisy-v1``).
    * EST-ACRE-v0: the designed ACRE context EST-v0 had (easier: it settles objects before the first trial).
    * EST-v0 (deprecated, warns): the same as EST-ACRE-v0.
    """

    def __init__(self, config: TaskConfig = IVRE, rule: str | Rule | None = None, noise: float = 0.0,
                 n_blickets: tuple[int, ...] | None = None, obs_mode: str = "panel"):
        self.config = config = configure(config, rule, noise, n_blickets)
        self.n_objects = N = config.n_objects
        self.obs_mode = obs_mode
        self.observation_space = observation_space(config, obs_mode)
        self.action_space = unit_box((2 * N,))

    def _make_batch(self) -> BlicketBatch:
        return BlicketBatch(self.config, 1, self.np_random, obs_mode=self.obs_mode)

    def step(self, action):
        a = self._one_action(action, 2 * self.n_objects)
        b = self._batch
        obs, reward, term, trunc = b.step(a[None], check=False)
        terminated, truncated = bool(term[0]), bool(trunc[0])
        info = {"step": int(b.t[0]), "oracle": b.last_oracle[0].numpy().copy(), "solved": terminated}
        if terminated or truncated:
            self._ended = True
            info.update(self._final_info())
        return numpy_obs(obs, 0), float(reward[0]), terminated, truncated, info

    def panel(self) -> dict:
        """The panel in the current observation: ``on`` (bool [N]), ``lit``, ``step`` (1-based panel number),
        ``phase`` ("context" or "trial")."""
        if self._batch is None or not self._batch._started:
            raise RuntimeError("call reset() first")
        k = int(self._batch.current_panel()[0])
        return {"on": self._batch.panels[0, k].numpy().copy(), "lit": bool(self._batch.lit[0, k]), "step": k + 1,
                "phase": "context" if k < self.config.n_context else "trial"}


#: The entry points of ``causalplay/IVRE-v0``, ``causalplay/EST-v1`` (the EST paper's random context panels) and
#: ``causalplay/EST-ACRE-v0`` (the designed, ACRE-guaranteed context; easier than EST-v1); keyword arguments as
#: :class:`BlicketEnv` (``rule``, ``noise``, ``n_blickets``, ``obs_mode``).
make_ivre, make_est, make_est_acre = (functools.partial(BlicketEnv, config) for config in (IVRE, EST, EST_ACRE))


def warn_est_v0() -> None:
    warnings.warn("causalplay/EST-v0 (and its -v0 variants) designs its context panels from the truth, which "
                  "makes it easier than the EST paper; use causalplay/EST-v1 for the paper's task, or "
                  "causalplay/EST-ACRE-v0 for this same designed context under its own name",
                  FutureWarning, stacklevel=3)


def make_est_v0(**kwargs) -> BlicketEnv:
    """``causalplay/EST-v0`` (deprecated): the same as ``EST-ACRE-v0``, with a warning pointing to ``EST-v1``."""
    warn_est_v0()
    return BlicketEnv(EST_ACRE, **kwargs)


def _batch(config: TaskConfig, batch_size: int, rng, obs_mode: str = "panel", **kwargs) -> BlicketBatch:
    return BlicketBatch(configure(config, **kwargs), batch_size, rng, obs_mode=obs_mode)


#: The batch entry points of the same ids (:class:`causalplay.envs.families.EnvEntry`): ``(batch_size, rng,
#: **kwargs) -> BlicketBatch``, keyword arguments as :func:`configure` plus ``obs_mode``.
batch_ivre, batch_est, batch_est_acre = (functools.partial(_batch, config) for config in (IVRE, EST, EST_ACRE))


def batch_est_v0(batch_size: int, rng, **kwargs) -> BlicketBatch:
    """The batch of ``causalplay/EST-v0`` (deprecated, warns): ``EST-ACRE-v0``'s."""
    warn_est_v0()
    return _batch(EST_ACRE, batch_size, rng, **kwargs)
