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

Observation modes (``obs_mode``)
--------------------------------
* ``"panel"`` (default) -- ``[N + 4]``: the panel shown now: ``on (N), lit, count / N, panel / T, phase``.
* ``"history"`` -- ``[2 + T (N + 1) + N]``: ``count / N``, ``shown / T`` (panels shown so far), every panel
  so far as ``(on (N), lit)`` in order, zero-padded to ``T`` panels, then the agent's last belief (0.5
  before the first action). The public IVRE code's content (announced count, padded history, last belief) in
  our layout; feed-forward agents need it.
* ``"dict"`` -- ``{"panel": [N + 4], "history": [T, N + 1], "last_belief": [N]}`` (the history zero-padded).
"""

from __future__ import annotations

import numpy as np
import torch

from causalplay.rules import Rule

from .machine import ORACLE_DTYPE, Oracle, machine_lit, oracle_space, p_lit
from .reward import ivre_jsd, jsd
from .sampling import ACRE_TYPES, OBJECT_POOL, Episodes, TaskConfig, acre_types, sample_episodes
from .task import ObsLayout, RewardSpec, as_rows, validate_action

__all__ = ["TaskConfig", "BlicketBatch", "OBS_MODES", "jsd", "ivre_jsd", "oracle_space", "acre_types",
           "validate_action", "OBJECT_POOL", "ACRE_TYPES", "ORACLE_DTYPE"]

OBS_MODES = ("panel", "history", "dict")
_p_lit = p_lit  # the old private name, still imported by downstream code


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


class BlicketBatch:
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
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if obs_mode not in OBS_MODES:
            raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {obs_mode!r}")
        if isinstance(rng, np.random.Generator):
            self.rngs = None
        else:
            rng = list(rng)
            if len(rng) != batch_size or not all(isinstance(g, np.random.Generator) for g in rng):
                raise ValueError(f"rng must be a numpy Generator or {batch_size} of them (one per row), "
                                 f"got {len(rng)} items")
            self.rngs = rng
        self.config = config
        self.B = batch_size
        self.rng = rng
        self.obs_mode = obs_mode
        N, T = config.n_objects, config.horizon
        self.layout = panel_layout(N, T) if obs_mode != "history" else history_layout(N, T)
        self._oracle = Oracle(config.rules, N, batch_size)
        self._rows = torch.arange(batch_size)
        self._allocate()
        self.done[:] = True  # nothing runs before the first reset()
        self._started = False

    # -- what the task tells every player ----------------------------------------------------------------
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

    # -- sampling ----------------------------------------------------------------------------------------
    def _sample(self, rows: torch.Tensor) -> Episodes:
        if self.rngs is None:
            return sample_episodes(self.config, self.rng, len(rows))
        return Episodes.concat([sample_episodes(self.config, self.rngs[int(i)], 1) for i in rows])

    def _allocate(self) -> None:
        B, N, T = self.B, self.config.n_objects, self.config.horizon
        self.blickets = torch.zeros(B, N, dtype=torch.bool)
        self.rule_idx = torch.zeros(B, dtype=torch.long)
        self.n_blickets = torch.zeros(B, dtype=torch.long)
        self.objects = torch.zeros(B, N, dtype=torch.long)
        self.uniforms = torch.zeros(B, T, dtype=torch.float64)
        self.panels = torch.zeros(B, T, N, dtype=torch.bool)
        self.lit = torch.zeros(B, T, dtype=torch.bool)
        self.t = torch.zeros(B, dtype=torch.long)
        self.done = torch.zeros(B, dtype=torch.bool)
        self.solved_at = torch.zeros(B, dtype=torch.long)
        self.returns = torch.zeros(B, dtype=torch.float64)
        self.context_returns = torch.zeros(B, dtype=torch.float64)
        self.last_belief = torch.full((B, N), 0.5, dtype=torch.float64)
        self.last_oracle = torch.zeros(B, N, dtype=torch.float64)

    def reset(self, rows=None):
        """Start new episodes in ``rows`` (``None``: all; a bool mask ``[B]`` or indices); returns the observation
        of every row."""
        if not self._started and rows is not None:
            raise RuntimeError("the first reset() must reset every row (rows=None)")
        self._started = True
        idx = as_rows(rows, self.B)
        if len(idx) == 0:
            return self.observation()
        ep = self._sample(idx)
        C = self.config.n_context
        self.blickets[idx] = torch.as_tensor(ep.blickets)
        self.rule_idx[idx] = torch.as_tensor(ep.rule_idx)
        self.n_blickets[idx] = torch.as_tensor(ep.counts)
        self.objects[idx] = torch.as_tensor(ep.objects)
        self.uniforms[idx] = torch.as_tensor(ep.uniforms)
        panels = torch.zeros(len(idx), self.config.horizon, self.config.n_objects, dtype=torch.bool)
        lit = torch.zeros(len(idx), self.config.horizon, dtype=torch.bool)
        if C:
            panels[:, :C] = torch.as_tensor(ep.context)
            lit[:, :C] = machine_lit(self.rules, self.rule_idx[idx, None], self.blickets[idx, None], panels[:, :C],
                                     self.uniforms[idx, :C])
        self.panels[idx], self.lit[idx] = panels, lit
        for name in ("t", "solved_at"):
            getattr(self, name)[idx] = 0
        self.done[idx] = False
        self.returns[idx] = 0.0
        self.context_returns[idx] = 0.0
        self.last_belief[idx] = 0.5
        self._oracle.reset(idx)
        if C:
            self._oracle.update(idx, self.rule_idx[idx], panels[:, 0], lit[:, 0])
        return self.observation()

    # -- the oracle ----------------------------------------------------------------------------------------
    def oracle(self) -> torch.Tensor:
        """``[B, N]`` oracle marginals from the panels shown so far (uniform prior over all 2^N sets), float64."""
        return self._oracle.marginals()

    # -- the loop ------------------------------------------------------------------------------------------
    def current_panel(self) -> torch.Tensor:
        """``[B]`` index (0-based) of the panel in each row's current observation."""
        return self.t.clamp(max=self.config.horizon - 1)

    def observation(self):
        """The observation of every row in this task's ``obs_mode`` (float32; a dict of tensors for "dict")."""
        if self.obs_mode == "history":
            return self._history_obs()
        panel = self._panel_obs()
        if self.obs_mode == "panel":
            return panel
        return {"panel": panel, "history": self._history_block(), "last_belief": self.last_belief.float()}

    def _panel_obs(self) -> torch.Tensor:
        cfg, N = self.config, self.config.n_objects
        k = self.current_panel()
        return torch.cat([self.panels[self._rows, k], self.lit[self._rows, k, None], self.n_blickets[:, None] / N,
                          (k[:, None] + 1) / cfg.horizon, k[:, None] >= cfg.n_context], 1).float()

    def _history_block(self) -> torch.Tensor:
        T = self.config.horizon
        shown = (self.t + 1).clamp(max=T)
        hist = torch.cat([self.panels, self.lit[..., None]], -1).float()
        return hist * (torch.arange(T)[None, :] < shown[:, None])[..., None]

    def _history_obs(self) -> torch.Tensor:
        N, T = self.config.n_objects, self.config.horizon
        obs = torch.empty(self.B, self.obs_size, dtype=torch.float32)
        obs[:, 0] = self.n_blickets / N
        obs[:, 1] = (self.t + 1).clamp(max=T) / T
        obs[:, 2:2 + T * (N + 1)] = self._history_block().reshape(self.B, -1)
        obs[:, 2 + T * (N + 1):] = self.last_belief
        return obs

    def step(self, action, *, check: bool = True):
        """Apply ``action [B, 2N]``; returns ``obs, reward, terminated (solved), truncated (reached T)``.

        Rows already done get reward 0 and stay done; their action is ignored. ``check=False`` skips the
        validation of ``action`` (a float64 tensor ``[B, 2N]`` already checked, e.g. by a gymnasium env).
        """
        cfg, N, B = self.config, self.config.n_objects, self.B
        if not self._started:
            raise RuntimeError("call reset() before step()")
        if check:
            a = validate_action(action, 2 * N)
            if a.ndim == 1:
                a = a[None]
            if a.shape[0] != B:
                raise ValueError(f"action batch has {a.shape[0]} rows, expected batch_size={B}")
        else:
            a = action
        trial, belief = a[:, :N] > 0.5, a[:, N:]
        active = ~self.done
        t = self.t + active.long()
        solved = active & ((belief - self.blickets.double()).abs() < cfg.tol).all(-1)
        self.last_oracle = oracle = self.oracle()
        rw = cfg.rewards
        penalty = -cfg.step_cost - ivre_jsd(oracle, belief, rw.slots, rw.eps)
        reward = torch.where(solved, cfg.solve_reward, penalty)
        reward = torch.where(active, reward, 0.0)
        self.returns += reward
        self.context_returns += torch.where(t <= cfg.n_context, reward, 0.0)
        self.solved_at = torch.where(solved, t, self.solved_at)
        self.last_belief = torch.where(active[:, None], belief, self.last_belief)
        go = active & ~solved & (t < cfg.horizon)
        idx = torch.nonzero(go).flatten()
        if len(idx):
            k = t[idx]
            # panel t + 1 is the outcome of this action's trial (from action C on), else the next context panel
            on = torch.where((k >= cfg.n_context)[:, None], trial[idx], self.panels[idx, k])
            lit = machine_lit(self.rules, self.rule_idx[idx], self.blickets[idx], on, self.uniforms[idx, k])
            self.panels[idx, k], self.lit[idx, k] = on, lit
            self._oracle.update(idx, self.rule_idx[idx], on, lit)
        truncated = active & ~solved & (t >= cfg.horizon)
        self.t = t
        self.done = self.done | solved | truncated
        return self.observation(), reward, solved, truncated

    def record(self) -> dict[str, np.ndarray]:
        """The benchmark's episode record, one entry per row (read once every row is done)."""
        solved = self.solved_at.numpy().copy()
        C = self.config.n_context
        return {"n_blickets": self.n_blickets.numpy().copy(), "solved_step": solved,
                "context_solved": (solved > 0) & (solved <= C), "episode_solved": solved > 0,
                "context_reward": (self.context_returns if C else torch.zeros(self.B)).numpy().copy(),
                "episode_reward": self.returns.numpy().copy(), "template": np.full(self.B, self.config.template)}
