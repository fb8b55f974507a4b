"""The Blicket task, batched in torch: ``B`` episodes of IVRE / EST (and variants) stepped together.

:class:`BlicketBatch` is a :class:`causalplay.envs.task.Task`. The pieces it stands on live beside it:
episode sampling and context design in :mod:`~causalplay.envs.sampling`, the machine and the oracle in
:mod:`~causalplay.envs.machine`, the official reward distance in :mod:`~causalplay.envs.reward`.

Randomness: each episode is drawn from one block of uniforms (see :mod:`~causalplay.envs.sampling`),
including one uniform per panel for the machine, so the same seed gives the same episode whatever the agent
does, and two agents run on the same seed face the same machines (common random numbers, good for paired
tests). ``rng`` is one ``numpy.random.Generator`` for the whole batch (the benchmark) or one per row (the
vector env: row ``i`` then equals a single env seeded like it, autoreset included).

Timing (all tasks with context panels, ``T = horizon`` steps, ``C = n_context``), per row
-------------------------------------------------------------------------------------------
* The observation before action ``t`` (``t = 1..T``) shows **panel t**: panels ``1..C`` are the context
  panels, panel ``t > C`` is the outcome of the trial the agent proposed in action ``t - 1``.
* Action ``t`` holds a trial and a belief. The belief is scored against the oracle computed from panels
  ``1..t`` (exactly what the agent has seen). The trial is run only in actions ``C..T-1`` (it becomes
  panel ``t + 1``); in actions ``1..C-1`` and ``T`` it is ignored. IVRE: 4 context panels, 6 trials.
* Context Acc / R count actions ``1..C``; episode Acc / R all ``T`` actions.

Observation modes (``obs_mode``): ``"panel"`` (default; fields :func:`panel_layout`), ``"history"`` (fields
:func:`history_layout`: the public IVRE code's content in our layout, which feed-forward agents need) and
``"dict"`` (both); their spaces are :class:`causalplay.envs.blicket.BlicketEnv`'s "Observation Space".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from causalplay.core.rules import Rule

from .machine import ORACLE_DTYPE, Oracle, machine_lit, oracle_space
from .reward import ivre_jsd, jsd
from .sampling import ACRE_TYPES, OBJECT_POOL, Episodes, TaskConfig, acre_types, sample_episodes
from .task import (
    ObsLayout,
    PlayerInfo,
    RewardSpec,
    batch_action,
    positive_int,
    reset_rows,
    row_rngs,
    validate_action,
)

__all__ = ["TaskConfig", "BlicketInfo", "BlicketBatch", "OBS_MODES", "jsd", "ivre_jsd", "oracle_space",
           "acre_types", "validate_action", "OBJECT_POOL", "ACRE_TYPES", "ORACLE_DTYPE"]

OBS_MODES = ("panel", "history", "dict")


def panel_layout(N: int, T: int) -> ObsLayout:
    """The ``"panel"`` observation's fields."""
    return ObsLayout.of(("on", N, 1.0, "objects on the machine"), ("lit", 1, 1.0, "machine lit"),
                        ("count", 1, float(N), "announced blicket count / N"),
                        ("step", 1, float(T), "panel number / T"), ("phase", 1, 1.0, "0 context, 1 trial outcome"))


def history_layout(N: int, T: int) -> ObsLayout:
    """The ``"history"`` observation's fields."""
    return ObsLayout.of(("count", 1, float(N), "announced blicket count / N"),
                        ("shown", 1, float(T), "panels shown so far / T"),
                        ("history", T * (N + 1), 1.0, "panels (on (N), lit) in order, zero-padded to T"),
                        ("last_belief", N, 1.0, "the agent's previous belief (0.5 before the first action)"))


@dataclass(frozen=True)
class BlicketInfo(PlayerInfo):
    """What a Blicket-style task's instructions tell a player (IVRE, EST, Overhypothesis, Nexiom, their pixel
    forms): :class:`~causalplay.envs.task.PlayerInfo` and the rule family, the context panels and the counts.

    ``BlicketInfo(n_objects, horizon, n_context, rules, layout=..., rewards=..., n_blickets=...)``;
    ``layout=None`` stands for the panel layout (:func:`panel_layout`) and ``rewards=None`` for the IVRE constants.

    Attributes
    ----------
    n_context : int
        Context panels shown before the first trial.
    rules : tuple of Rule
        The rules the machine may follow (the instructions name them; an episode's own rule is its truth).
    n_blickets : tuple of int
        Blicket counts the task may draw (the instructions' "up to four"); ``()`` when the task does not say.
    """

    n_context: int
    rules: tuple[Rule, ...]
    n_blickets: tuple[int, ...] = field(default=(), kw_only=True)

    @property
    def obs_layout(self) -> ObsLayout:
        """:attr:`layout`, or the panel layout when it is ``None``."""
        return self.layout if self.layout is not None else panel_layout(self.n_objects, self.horizon)

    @property
    def reward_spec(self) -> RewardSpec:
        """:attr:`rewards`, or the IVRE constants when they are ``None``."""
        return self.rewards if self.rewards is not None else RewardSpec()


class ConfigTask:
    """The Task constants a Blicket-style task reads off its ``config`` (a :class:`TaskConfig`) and ``layout``."""

    def info(self) -> BlicketInfo:
        """What the task's instructions tell every player (:class:`BlicketInfo`)."""
        return BlicketInfo(self.n_objects, self.horizon, self.n_context, tuple(self.rules), layout=self.layout,
                           rewards=self.rewards, n_blickets=tuple(int(c) for c in self.config.n_blickets))

    @property
    def rules(self) -> tuple[Rule, ...]:
        return self.config.rules

    @property
    def n_objects(self) -> int:
        return self.config.n_objects

    @property
    def n_context(self) -> int:
        return self.config.n_context

    @property
    def horizon(self) -> int:
        """``T``: actions per episode (per machine of a sequence)."""
        return self.config.horizon

    @property
    def rewards(self) -> RewardSpec:
        return self.config.rewards

    @property
    def obs_size(self) -> int:
        return self.layout.size

    @property
    def action_size(self) -> int:
        return 2 * self.config.n_objects


class BlicketBatch(ConfigTask):
    """``B`` episodes of a Blicket task stepped together (torch, CPU).

    Parameters
    ----------
    config : TaskConfig
    batch_size : int
    rng : numpy.random.Generator or sequence of them
        One generator for the batch, or one per row (row ``i`` then draws only from ``rng[i]``).
    obs_mode : {"panel", "history", "dict"}
        See the module docstring.

    Attributes after :meth:`reset`
    ------------------------------
    blickets : bool ``[B, N]`` (ground truth; never in the observation); rule_idx, n_blickets : long ``[B]``
    objects : long ``[B, N]`` (indices into :data:`OBJECT_POOL`, for rendering)
    panels : bool ``[B, T, N]``, lit : bool ``[B, T]`` -- panel ``k`` at index ``k - 1``
    t : long ``[B]`` -- actions taken in each row's episode; done : bool ``[B]``;
    solved_at : long ``[B]`` (0 = not yet); last_oracle : ``[B, N]`` the oracle the last action was scored on
    """

    def __init__(self, config: TaskConfig, batch_size: int, rng, *, obs_mode: str = "panel"):
        positive_int(batch_size, "batch_size")
        if obs_mode not in OBS_MODES:
            raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {obs_mode!r}")
        self.rngs = row_rngs(rng, batch_size)
        self.config, self.B, self.obs_mode = config, batch_size, obs_mode
        self.rng = rng if self.rngs is None else self.rngs
        N, T = config.n_objects, config.horizon
        self.layout = panel_layout(N, T) if obs_mode != "history" else history_layout(N, T)
        self._oracle = Oracle(config.rules, N, batch_size)
        self._rows = np.arange(batch_size)
        self._allocate()
        self._np["done"][:] = True  # nothing runs before the first reset()
        self._started = False

    # -- sampling ----------------------------------------------------------------------------------------
    def _sample(self, rows: np.ndarray) -> Episodes:
        if self.rngs is None:
            return sample_episodes(self.config, self.rng, len(rows))
        return Episodes.concat([sample_episodes(self.config, self.rngs[int(i)], 1) for i in rows])

    def _allocate(self) -> None:
        # State lives in numpy arrays, updated in place; the public attributes are torch views of the same memory
        # (torch.from_numpy shares it). numpy's per-call cost on the single env's tiny arrays is a fraction of
        # torch's, and large batches run at the same speed either way.
        B, N, T = self.B, self.config.n_objects, self.config.horizon
        spec = {"blickets": ((B, N), bool), "rule_idx": ((B,), np.int64), "n_blickets": ((B,), np.int64),
                "objects": ((B, N), np.int64), "uniforms": ((B, T), np.float64), "panels": ((B, T, N), bool),
                "lit": ((B, T), bool), "t": ((B,), np.int64), "done": ((B,), bool), "solved_at": ((B,), np.int64),
                "returns": ((B,), np.float64), "context_returns": ((B,), np.float64),
                "last_belief": ((B, N), np.float64), "last_oracle": ((B, N), np.float64)}
        self._np = {k: np.zeros(shape, dtype) for k, (shape, dtype) in spec.items()}
        self._np["last_belief"][:] = 0.5
        for k, arr in self._np.items():
            setattr(self, k, torch.from_numpy(arr))

    def reset(self, rows=None):
        """Start new episodes in ``rows`` (``None``: all; a bool mask ``[B]`` or indices); returns the observation
        of every row."""
        idx = reset_rows(self, rows).numpy()
        if len(idx) == 0:
            return self.observation()
        ep = self._sample(idx)
        C, x = self.config.n_context, self._np
        x["blickets"][idx], x["rule_idx"][idx], x["n_blickets"][idx] = ep.blickets, ep.rule_idx, ep.counts
        x["objects"][idx], x["uniforms"][idx] = ep.objects, ep.uniforms
        panels = np.zeros((len(idx), self.config.horizon, self.config.n_objects), dtype=bool)
        lit = np.zeros((len(idx), self.config.horizon), dtype=bool)
        if C:
            panels[:, :C] = ep.context
            lit[:, :C] = machine_lit(self.rules, ep.rule_idx[:, None], ep.blickets[:, None], ep.context,
                                     ep.uniforms[:, :C])
        x["panels"][idx], x["lit"][idx] = panels, lit
        for k in ("t", "solved_at", "done", "returns", "context_returns"):
            x[k][idx] = 0
        x["last_belief"][idx] = 0.5
        self._oracle.reset(idx)
        if C:
            self._oracle.update(idx, panels[:, 0], lit[:, 0])
        return self.observation()

    # -- the oracle ----------------------------------------------------------------------------------------
    def oracle(self) -> torch.Tensor:
        """``[B, N]`` oracle marginals from the panels shown so far (uniform prior over all 2^N sets), float64."""
        return torch.from_numpy(self._oracle.marginals())

    # -- the loop ------------------------------------------------------------------------------------------
    def current_panel(self) -> torch.Tensor:
        """``[B]`` index (0-based) of the panel in each row's current observation."""
        return torch.from_numpy(np.minimum(self._np["t"], self.config.horizon - 1))

    def observation(self):
        """The observation of every row in this task's ``obs_mode`` (float32; a dict of tensors for "dict")."""
        if self.obs_mode == "history":
            return torch.from_numpy(self._history_obs())
        panel = torch.from_numpy(self._panel_obs())
        if self.obs_mode == "panel":
            return panel
        return {"panel": panel, "history": torch.from_numpy(self._history_block()),
                "last_belief": torch.from_numpy(self._np["last_belief"].astype(np.float32))}

    def _panel_obs(self) -> np.ndarray:
        cfg, N, x = self.config, self.config.n_objects, self._np
        k = np.minimum(x["t"], cfg.horizon - 1)
        obs = np.empty((self.B, N + 4), dtype=np.float32)
        obs[:, :N] = x["panels"][self._rows, k]
        obs[:, N] = x["lit"][self._rows, k]
        obs[:, N + 1] = x["n_blickets"] / N
        obs[:, N + 2] = (k + 1) / cfg.horizon
        obs[:, N + 3] = k >= cfg.n_context
        return obs

    def _history_block(self) -> np.ndarray:
        T, x = self.config.horizon, self._np
        shown = np.minimum(x["t"] + 1, T)
        hist = np.concatenate([x["panels"], x["lit"][..., None]], -1).astype(np.float32)
        hist *= (np.arange(T)[None, :] < shown[:, None])[..., None]
        return hist

    def _history_obs(self) -> np.ndarray:
        N, T, x = self.config.n_objects, self.config.horizon, self._np
        obs = np.empty((self.B, self.obs_size), dtype=np.float32)
        obs[:, 0] = x["n_blickets"] / N
        obs[:, 1] = np.minimum(x["t"] + 1, T) / T
        obs[:, 2:2 + T * (N + 1)] = self._history_block().reshape(self.B, -1)
        obs[:, 2 + T * (N + 1):] = x["last_belief"]
        return obs

    def step(self, action, *, check: bool = True):
        """Apply ``action [B, 2N]``; returns ``obs, reward, terminated (solved), truncated (reached T)``.

        Rows already done get reward 0 and stay done; their action is ignored. ``check=False`` skips the
        validation of ``action`` (a float64 array or tensor ``[B, 2N]`` already checked, e.g. by a gymnasium env).
        """
        cfg, N, B, x = self.config, self.config.n_objects, self.B, self._np
        if not self._started:
            raise RuntimeError("call reset() before step()")
        a = batch_action(action, 2 * N, B, check)
        a = a.numpy() if isinstance(a, torch.Tensor) else np.asarray(a, dtype=np.float64)
        trial, belief = a[:, :N] > 0.5, a[:, N:]
        active = ~x["done"]
        t = x["t"] + active
        solved = active & (np.abs(belief - x["blickets"]) < cfg.tol).all(-1)
        oracle = self._oracle.marginals()
        x["last_oracle"][:] = oracle
        rw = cfg.rewards
        reward = np.where(solved, cfg.solve_reward, -cfg.step_cost - ivre_jsd(oracle, belief, rw.slots, rw.eps))
        reward[~active] = 0.0
        x["returns"] += reward
        x["context_returns"] += np.where(t <= cfg.n_context, reward, 0.0)
        x["solved_at"][solved] = t[solved]
        x["last_belief"][active] = belief[active]
        go = active & ~solved & (t < cfg.horizon)
        if go.all():
            idx, k, rows = self._rows, t, None
        else:
            idx = rows = np.flatnonzero(go)
            k = t[idx]
        if len(idx):
            # panel t + 1 is the outcome of this action's trial (from action C on), else the next context panel
            on = np.where((k >= cfg.n_context)[:, None], trial[idx], x["panels"][idx, k])
            ridx = x["rule_idx"][idx]
            lit = machine_lit(self.rules, ridx, x["blickets"][idx], on, x["uniforms"][idx, k])
            x["panels"][idx, k], x["lit"][idx, k] = on, lit
            self._oracle.update(rows, on, lit)
        truncated = active & ~solved & (t >= cfg.horizon)
        x["t"][:] = t
        x["done"] |= solved | truncated
        return self.observation(), torch.from_numpy(reward), torch.from_numpy(solved), torch.from_numpy(truncated)

    def record(self) -> dict[str, np.ndarray]:
        """The benchmark's episode record, one entry per row (read once every row is done)."""
        x, C = self._np, self.config.n_context
        solved = x["solved_at"].copy()
        return {"n_blickets": x["n_blickets"].copy(), "solved_step": solved,
                "context_solved": (solved > 0) & (solved <= C), "episode_solved": solved > 0,
                "context_reward": x["context_returns"].copy() if C else np.zeros(self.B),
                "episode_reward": x["returns"].copy(), "template": np.full(self.B, self.config.template)}
