"""The batch-task interface every causalplay task implements (Blicket, Nexiom, and later tasks).

A **Task** is ``B`` episodes stepped together with torch. Gymnasium single envs (``B = 1``), native vector
envs (:mod:`causalplay.envs.vector`), the benchmark runner, the human-choice simulator and RL training all
drive Tasks through this interface and never re-implement one::

    task.reset()                         # every row; returns the observation [B, obs_size]
    obs, reward, terminated, truncated = task.step(action)   # action [B, action_size] in [0, 1]
    task.reset(rows)                     # a new episode in the rows of a bool mask / index list (autoreset)
    task.record()                        # one entry per row: the episode as the benchmark scores it
    task.info()                          # what the task's instructions tell every player (a PlayerInfo)

Rows whose episode has ended (``task.done``) ignore their action and get reward 0 until they are reset.
What a player is told is data the task states itself (:meth:`Task.info`): :class:`PlayerInfo` holds what every
family tells (the action's size, the horizon, the observation layout and the reward constants, so no agent
hard-codes them), and a family's own info type adds its fields (the Blicket tasks'
:class:`causalplay.envs.core.BlicketInfo`: context panels, rules, blicket counts; the causal-DAG worlds'
:class:`causalplay.envs.causal_dag.DAGInfo`; the physics puzzles' :class:`causalplay.envs.physics.PhysicsInfo`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import torch

__all__ = ["Task", "PlayerInfo", "ObsField", "ObsLayout", "RewardSpec", "validate_action", "batch_action", "as_rows"]


@dataclass(frozen=True)
class ObsField:
    """One named block of a flat observation: ``obs[..., start:start + size] * scale`` is the raw value."""

    name: str
    start: int
    size: int = 1
    scale: float = 1.0
    doc: str = ""

    @property
    def slice(self) -> slice:
        return slice(self.start, self.start + self.size)


@dataclass(frozen=True)
class ObsLayout:
    """The flat observation's fields, in order (see each task's docstring for their meaning)."""

    fields: tuple[ObsField, ...]

    @classmethod
    def of(cls, *spec: tuple) -> ObsLayout:
        """``ObsLayout.of(("on", 9, 1.0, "doc"), ("lit", 1), ...)``: consecutive fields (name, size[, scale, doc])."""
        out, start = [], 0
        for name, size, *rest in spec:
            out.append(ObsField(name, start, size, *rest))
            start += size
        return cls(tuple(out))

    @property
    def size(self) -> int:
        return sum(f.size for f in self.fields)

    def __getitem__(self, name: str) -> ObsField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"observation has no field {name!r}; fields are {[f.name for f in self.fields]}")

    def __contains__(self, name: str) -> bool:
        return any(f.name == name for f in self.fields)

    def get(self, obs: torch.Tensor, name: str) -> torch.Tensor:
        """The raw value of field ``name`` (``[B, size]``; scaled back, e.g. a count from count / N)."""
        f = self[name]
        return obs[..., f.slice] * f.scale


@dataclass(frozen=True)
class RewardSpec:
    """A task's reward constants.

    Blicket tasks: solving (every belief strictly within ``tol`` of the truth) gives ``+solve_reward``;
    otherwise a step gives ``-step_cost - JSD(oracle, belief)`` with the official IVRE distance on
    ``slots``-entry vectors with ``eps`` added (:func:`causalplay.envs.reward.ivre_jsd`). Nexiom: a test
    costs ``step_cost``; a right answer gives ``solve_reward``.
    """

    solve_reward: float = 20.0
    step_cost: float = 1.0
    tol: float = 0.5
    slots: int = 48
    eps: float = 1e-7


@dataclass(frozen=True)
class PlayerInfo:
    """What a task's instructions tell every player, whatever the family (never an episode's ground truth).

    A task builds it (:meth:`Task.info`); the play loop hands it to the agent's ``reset``. A family whose players
    are told more subclasses it (:class:`causalplay.envs.core.BlicketInfo`,
    :class:`causalplay.envs.causal_dag.DAGInfo`, :class:`causalplay.envs.physics.PhysicsInfo`).

    Attributes
    ----------
    n_objects : int
        The size of the world the action addresses: objects (Blicket tasks), variables (causal DAGs), object-list
        rows (physics).
    horizon : int
        Actions per episode at most (attempts, for the physics puzzles).
    layout : ObsLayout or None
        Where each field sits in a flat observation; ``None`` when the observation is not a flat vector (a dict,
        documented by the task) -- for the Blicket tasks, ``None`` stands for the panel layout.
    rewards : object or None
        The task's reward constants (a :class:`RewardSpec`, or the family's own type, e.g.
        :class:`causalplay.envs.causal_dag.DAGRewards`); ``None`` when the task does not state them.
    """

    n_objects: int
    horizon: int
    layout: ObsLayout | None = field(default=None, kw_only=True)
    rewards: object = field(default=None, kw_only=True)

    @classmethod
    def from_env(cls, env) -> PlayerInfo:
        """Deprecated since 0.3: ``env.info()`` (the task states what its players are told)."""
        warnings.warn(f"{cls.__name__}.from_env(task) is deprecated; use task.info()", DeprecationWarning,
                      stacklevel=2)
        return env.info()

    @property
    def obs_layout(self) -> ObsLayout:
        """:attr:`layout`; ``ValueError`` when the observation is not a flat vector."""
        if self.layout is None:
            raise ValueError(f"this task's observation is not a flat vector ({type(self).__name__}.layout is None); "
                             "read it as the task documents")
        return self.layout


@runtime_checkable
class Task(Protocol):
    """What every batched task provides (see the module docstring); a family's task may hold more (the Blicket
    tasks' ``n_context`` and ``rules``), and tells its players through :meth:`info`."""

    B: int
    n_objects: int
    horizon: int
    rewards: object
    done: torch.Tensor

    @property
    def obs_size(self) -> int: ...

    @property
    def action_size(self) -> int: ...

    def reset(self, rows=None) -> torch.Tensor: ...

    def step(self, action) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]: ...

    def record(self) -> dict[str, np.ndarray]: ...

    def info(self) -> PlayerInfo:
        """What the task's instructions tell every player: a :class:`PlayerInfo`, or the family's subclass of it."""
        ...


def as_rows(rows, B: int) -> torch.Tensor:
    """``None`` (all), a bool mask ``[B]`` or row indices -> sorted long index tensor, validated."""
    if rows is None:
        return torch.arange(B)
    r = torch.as_tensor(np.asarray(rows))
    if r.dtype == torch.bool:
        if r.shape != (B,):
            raise ValueError(f"rows mask must have shape ({B},), got {tuple(r.shape)}")
        return torch.nonzero(r).flatten()
    if r.dtype.is_floating_point or r.ndim != 1:
        raise ValueError(f"rows must be a bool mask of shape ({B},) or a 1-d list of row indices, got {rows!r}")
    if len(r) and (int(r.min()) < 0 or int(r.max()) >= B):
        raise ValueError(f"row indices must lie in [0, {B}), got {r.tolist()}")
    if len(torch.unique(r)) != len(r):
        raise ValueError(f"row indices must be distinct, got {r.tolist()}")
    return r.sort().values.long()


def positive_int(value, name: str) -> int:
    """``value`` if it is a positive Python int (not a bool), else a ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def row_rngs(rng, batch_size: int) -> list[np.random.Generator] | None:
    """``None`` when ``rng`` is one generator for the whole batch, else the checked list of one per row."""
    if isinstance(rng, np.random.Generator):
        return None
    rng = list(rng)
    if len(rng) != batch_size or not all(isinstance(g, np.random.Generator) for g in rng):
        raise ValueError(f"rng must be a numpy Generator or {batch_size} of them (one per row), got {len(rng)} items")
    return rng


def reset_rows(task, rows) -> torch.Tensor:
    """The rows a ``reset(rows)`` of ``task`` starts (:func:`as_rows`); the first reset must start every row."""
    if not task._started and rows is not None:
        raise RuntimeError("the first reset() must reset every row (rows=None)")
    task._started = True
    return as_rows(rows, task.B)


def numpy_obs(obs, rows=slice(None)):
    """A task's observation (a tensor, or a dict of them) as numpy, restricted to ``rows``."""
    if isinstance(obs, dict):
        return {k: v[rows].numpy() for k, v in obs.items()}
    return obs[rows].numpy()


def validate_action(action, n_values: int, batch: int | None = None) -> torch.Tensor:
    """Check an action batch ``[B, n_values]`` (or ``[n_values]``; with ``batch``, exactly ``[batch, n_values]``,
    as a vector env's step takes): finite, in [0, 1]; returns float64 tensor."""
    if isinstance(action, torch.Tensor):
        a = action.detach().to(torch.float64).cpu().numpy()
    else:
        try:
            a = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"action must be an array of numbers in [0, 1], got {action!r}") from None
    if batch is not None and a.shape != (batch, n_values):
        raise ValueError(f"actions must have shape ({batch}, {n_values}) (one row per env), got {tuple(a.shape)}")
    if a.shape[-1:] != (n_values,) or a.ndim > 2:
        raise ValueError(f"action must have shape ({n_values},) (trial probabilities then belief probabilities)"
                         f" or (B, {n_values}), got shape {tuple(a.shape)}")
    # numpy: on the single env's small arrays its checks cost a fraction of torch's per-op overhead
    if not (a.min(initial=0.0) >= 0.0 and a.max(initial=0.0) <= 1.0):  # False for NaN too
        if np.isnan(a).any():
            raise ValueError(f"action contains NaN: {a.tolist()}")
        bad = a[(a < 0) | (a > 1)].flatten()[0]
        raise ValueError(f"action values must lie in [0, 1], got {float(bad)!r}")
    return torch.from_numpy(np.array(a, dtype=np.float64))


def batch_action(action, n_values: int, batch_size: int, check: bool = True) -> torch.Tensor:
    """A task's ``step`` input as a float64 ``[batch_size, n_values]`` tensor: validated (:func:`validate_action`,
    a single row promoted to a batch of one) unless ``check=False`` says the caller already did."""
    if not check:
        return action
    a = validate_action(action, n_values)
    if a.ndim == 1:
        a = a[None]
    if a.shape[0] != batch_size:
        raise ValueError(f"action batch has {a.shape[0]} rows, expected batch_size={batch_size}")
    return a
