"""The physics-puzzle Task (PHYRE's attempt budget over a batch of tasks, or over a sequence of tasks) and its
single-attempt gymnasium env.

:class:`PhysicsBatch` is the :class:`causalplay.envs.task.Task` of the physics worlds; :func:`draw_batch` makes
one of tasks drawn at random (``make_batch`` for the physics ids).
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces

from .physics_sim import COLS, object_list, render, simulate
from .physics_templates import N_TASKS, TEMPLATES, TIERS, PhysicsTask, get_task, to_balls
from .task import PlayerInfo, RewardSpec, as_rows, batch_action

__all__ = ["PhysicsBatch", "PhysicsInfo", "PhysicsEnv", "MAX_BODIES", "TIER_BODIES", "BUDGET", "TIER_OF_ID",
           "draw_batch", "make_b", "make_2b", "make_2b_v0", "make_b_v2", "make_2b_v2", "batch_b", "batch_2b",
           "batch_2b_v0", "batch_b_v2", "batch_2b_v2"]

MAX_BODIES, BUDGET = 10, 100
#: Object-list rows per tier (a 2B-v1 or 2B-v2 scene holds two template scenes and the wall between them).
TIER_BODIES = {"B": MAX_BODIES, "2B": MAX_BODIES, "2B-v1": 16, "B-v2": MAX_BODIES, "2B-v2": 16}
#: The tier each physics id plays.
TIER_OF_ID = {"causalplay/PhysicsB-v2": "B-v2", "causalplay/Physics2B-v2": "2B-v2",
              "causalplay/PhysicsB-v0": "B", "causalplay/Physics2B-v1": "2B-v1", "causalplay/Physics2B-v0": "2B"}


@dataclass(frozen=True)
class PhysicsInfo(PlayerInfo):
    """What a physics puzzle's instructions tell a player: :class:`~causalplay.envs.task.PlayerInfo` (``n_objects``
    the object-list rows, ``horizon`` the valid attempts allowed, ``layout=None``: the observation is a dict) and
    the tier, which says how many balls an action places (:data:`~causalplay.envs.physics_templates.TIERS`).

    Attributes
    ----------
    tier : {"B-v2", "2B-v2", "B", "2B-v1", "2B"}
    """

    tier: str = field(kw_only=True)


class PhysicsBatch:
    """Physics tasks (:class:`~causalplay.envs.physics_templates.PhysicsTask`) under PHYRE's attempt budget.

    Row ``b`` plays ``tasks[b]``, or (``sequential``) one row plays every task in order, the next starting after the
    step that ends the previous one (PHYRE's online setting). An action places the tier's balls; a **valid** attempt
    is simulated (reward 1 and the task ends when the goal relation holds); an **invalid** one (overlap, out of the
    world) gives 0 and does not count towards ``budget`` (PHYRE's rule). A task also ends after ``budget`` valid
    attempts, or after ``max_invalid`` invalid actions in a row.

    The observation is a dict of per-row entries: the row's task -- ``scene`` (float64 ``[B, n, 8]``, ``n`` the
    tier's :data:`TIER_BODIES`: the
    object list, bodies in world units, columns ``COLS``, zero rows after ``n_bodies``), ``n_bodies``,
    ``template``, ``task`` (its index in ``tasks``), ``attempts`` (valid ones used) -- and what the row's last action
    did: ``valid``, ``solved`` (False after a reset) and ``traj``, a list of each row's trajectory (every body's
    ``x, y, angle`` each ``record`` steps) of a valid attempt when ``record > 0``, else None: the rollout PHYRE
    shows the agent.

    Parameters
    ----------
    tasks : list of PhysicsTask
    tier : {"B-v2", "2B-v2", "B", "2B-v1", "2B"}
    budget, record, max_invalid : int
        Valid attempts per task (PHYRE: 100); steps between trajectory frames (0: none); invalid actions in a row
        after which a task is given up.
    sequential : bool
        One row plays the tasks in order.
    """

    rewards = RewardSpec(solve_reward=1.0, step_cost=0.0)

    def __init__(self, tasks: list[PhysicsTask], tier: str = "B", budget: int = BUDGET, record: int = 0,
                 max_invalid: int = 1000, sequential: bool = False):
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {list(TIERS)}, got {tier!r}")
        if budget < 1 or max_invalid < 1:
            raise ValueError(f"budget and max_invalid must be >= 1, got {budget!r} and {max_invalid!r}")
        n_max = TIER_BODIES[tier]
        if not tasks or any(len(t.scene) > n_max for t in tasks):
            raise ValueError(f"need at least one task, each scene with at most {n_max} bodies (tier {tier!r})")
        self.tasks, self.tier, self.m, self.horizon, self.n_objects = list(tasks), tier, TIERS[tier], budget, n_max
        self.record_every, self.max_invalid, self.sequential = record, max_invalid, sequential
        self.B = 1 if sequential else len(tasks)
        self.attempts, self.invalid, self.solved_at = (np.zeros(len(tasks), dtype=np.int64) for _ in range(3))
        self.cur, self.streak = np.arange(self.B), np.zeros(self.B, dtype=np.int64)
        self.valid, self.solved, self.traj = np.zeros(self.B, bool), np.zeros(self.B, bool), [None] * self.B
        self.done = torch.zeros(self.B, dtype=torch.bool)

    @property
    def action_size(self) -> int:
        return 3 * self.m

    def info(self) -> PhysicsInfo:
        """What every player is told (:class:`PhysicsInfo`): the tier, the attempt budget (``horizon``), the
        object-list rows (``n_objects``) and the reward constants; the observation is the dict above
        (``layout=None``)."""
        return PhysicsInfo(self.n_objects, self.horizon, rewards=self.rewards, tier=self.tier)

    def obs(self) -> dict:
        """The observation (see the class docstring)."""
        tasks = [self.tasks[i] for i in self.cur]
        scene = np.zeros((self.B, self.n_objects, len(COLS)))
        for b, t in enumerate(tasks):
            scene[b, :len(t.scene)] = t.scene
        return {"scene": torch.from_numpy(scene), "n_bodies": torch.tensor([len(t.scene) for t in tasks]),
                "template": torch.tensor([t.template for t in tasks]), "task": torch.from_numpy(self.cur.copy()),
                "attempts": torch.from_numpy(self.attempts[self.cur]), "valid": torch.from_numpy(self.valid.copy()),
                "solved": torch.from_numpy(self.solved.copy()), "traj": list(self.traj)}

    def image(self, rows=None, res: int = 256) -> np.ndarray:
        """Initial scenes of ``rows``' tasks as colour-index images ``[len(rows), res, res]`` (uint8)."""
        return np.stack([render(self.tasks[self.cur[b]].scene, res=res) for b in as_rows(rows, self.B).tolist()])

    def reset(self, rows=None) -> dict:
        r = as_rows(rows, self.B).numpy()
        self.cur[r] = 0 if self.sequential else r
        played = np.arange(len(self.tasks)) if self.sequential else r
        self.attempts[played] = self.invalid[played] = self.solved_at[played] = 0
        self.streak[r], self.valid[r], self.solved[r], self.done[r] = 0, False, False, False
        self.traj = [None if b in r else t for b, t in enumerate(self.traj)]
        return self.obs()

    def step(self, action, check: bool = True):
        """Attempt ``action [B, 3m]`` in every active row; returns ``obs, reward, terminated, truncated``."""
        a = np.asarray(batch_action(action, self.action_size, self.B, check), dtype=np.float64)
        reward, term, trunc = np.zeros(self.B), np.zeros(self.B, bool), np.zeros(self.B, bool)
        self.valid[:], self.solved[:], self.traj = False, False, [None] * self.B
        for b in np.flatnonzero(~self.done.numpy()):
            i = self.cur[b]
            r = simulate(self.tasks[i].scene, to_balls(a[b]), record=self.record_every)
            self.valid[b], self.solved[b], self.traj[b] = r.valid, r.solved, r.traj
            self.attempts[i] += r.valid
            self.invalid[i] += not r.valid
            self.streak[b] = 0 if r.valid else self.streak[b] + 1
            if r.solved:
                self.solved_at[i], reward[b] = self.attempts[i], self.rewards.solve_reward
            if r.solved or self.attempts[i] >= self.horizon or self.streak[b] >= self.max_invalid:
                if self.sequential and i + 1 < len(self.tasks):  # on to the next task of the sequence
                    self.cur[b], self.streak[b] = i + 1, 0
                else:
                    term[b], trunc[b] = r.solved, not r.solved
        self.done |= torch.from_numpy(term | trunc)
        return self.obs(), torch.from_numpy(reward), torch.from_numpy(term), torch.from_numpy(trunc)

    def record(self) -> dict[str, np.ndarray]:
        """Per task (in ``tasks`` order): ``key``, ``template``, ``attempts`` (valid), ``invalid``, ``solved_at``
        (0: unsolved)."""
        return {"key": np.array([t.key for t in self.tasks]), "template": np.array([t.template for t in self.tasks]),
                "attempts": self.attempts.copy(), "invalid": self.invalid.copy(), "solved_at": self.solved_at.copy()}


def draw_batch(batch_size: int, rng, tier: str = "B", templates=None, n_tasks: int = N_TASKS,
               **kwargs) -> PhysicsBatch:
    """A :class:`PhysicsBatch` of ``batch_size`` tasks, each drawn as :class:`PhysicsEnv` draws one (``rng``: a
    numpy Generator, or one per row); ``kwargs`` go to :class:`PhysicsBatch`."""
    if not 1 <= n_tasks <= N_TASKS:
        raise ValueError(f"n_tasks must lie in [1, {N_TASKS}], got {n_tasks!r}")
    templates = tuple(range(len(TEMPLATES)) if templates is None else templates)
    gens = rng if isinstance(rng, list | tuple) else [rng] * batch_size
    # each task key: a template, then a task index
    keys = [f"{templates[int(g.integers(len(templates)))]:02d}:{int(g.integers(n_tasks)):03d}" for g in gens]
    return PhysicsBatch([get_task(tier, key) for key in keys], tier, **kwargs)


class PhysicsEnv(gym.Env):
    """Single-attempt play of a PHYRE-style physics puzzle.

    Each episode is one task of the tier, drawn with ``self.np_random`` (template, then task index). The agent
    places its ball(s); the simulation runs; the goal is the green body touching the blue/purple one for 0.5 s
    within 3 s (:mod:`causalplay.envs.physics_sim`).

    ## Action Space
    ``Box(0, 1, (3m,), float32)``: ``m`` balls (1 for tiers B-v2 and B, 2 for the 2B tiers), each ``(x, y, r)`` with
    ``x = a0 W``, ``y = a1 W``, ``r = RMIN + a2 (RMAX - RMIN)`` (:mod:`causalplay.envs.physics_templates`).

    ## Observation Space
    ``Dict(image=Box(0, 6, (256, 256), uint8), objects=Box(0, 1, (n, 8), float32))`` (``n``: 10 for B-v2, B and
    2B, 16 for 2B-v2 and 2B-v1, :data:`TIER_BODIES`): the initial
    scene in PHYRE's 7 colour indices (row 0 at the top) and the object list (columns ``COLS``, scaled to
    [0, 1], zero rows after the last body). The observation does not change within an episode.

    ## Rewards
    1 when the attempt solves the task, else 0.

    ## Episode End
    Terminates after the first **valid** attempt. An invalid action (a ball out of the world or overlapping a
    body) gives reward 0, ``info["invalid"] = True`` and the episode goes on (PHYRE does not count it).

    ## Arguments
    ``tier`` ("B-v2", "2B-v2", or the deprecated "B", "2B-v1" and "2B"), ``templates`` (template indices to
    draw from; default all), ``n_tasks`` (task indices ``0..n_tasks-1`` per template; default 100).

    ## Version History
    * v0: initial version (25 templates, 100 tasks each).
    * Physics2B-v1: every task needs both balls (two scaled template scenes side by side, a wall between, every
      green body must touch a target; :mod:`causalplay.envs.physics_templates`); ``Physics2B-v0`` is deprecated.
    * PhysicsB-v2, Physics2B-v2: world version 2, whose templates are about as hard for a random agent as PHYRE's
      (thicker sticks, smaller or farther targets, roofs; tiers ``B-v2`` and ``2B-v2``); ``PhysicsB-v0`` and
      ``Physics2B-v1`` are deprecated. There is no ``PhysicsB-v1``: version 1 of the world changed only the
      two-ball tier.
    """

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, tier: str = "B", templates=None, n_tasks: int = N_TASKS, render_mode: str | None = None):
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {list(TIERS)}, got {tier!r}")
        if not 1 <= n_tasks <= N_TASKS:
            raise ValueError(f"n_tasks must lie in [1, {N_TASKS}], got {n_tasks!r}")
        self.tier, self.n_tasks, self.render_mode = tier, n_tasks, render_mode
        self.templates = tuple(range(len(TEMPLATES)) if templates is None else templates)
        self.action_space = spaces.Box(0.0, 1.0, (3 * TIERS[tier],), np.float32)
        self.observation_space = spaces.Dict({"image": spaces.Box(0, 6, (256, 256), np.uint8),
                                              "objects": spaces.Box(0.0, 1.0, (TIER_BODIES[tier], len(COLS)),
                                                                    np.float32)})

    def _obs(self) -> dict:  # the object list scaled to [0, 1] (zero rows stay zero)
        return {"image": self.batch.image()[0], "objects": object_list(self.batch.obs()["scene"][0].numpy())}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.batch = draw_batch(1, self.np_random, self.tier, self.templates, self.n_tasks, budget=1)
        self.task = self.batch.tasks[0]
        self.batch.reset()
        return self._obs(), {"key": self.task.key, "template": TEMPLATES[self.task.template]}

    def step(self, action):
        if not self.action_space.contains(np.asarray(action, dtype=np.float32)):
            raise ValueError(f"action must be {self.action_space.shape} values in [0, 1], got {action!r}")
        obs, rew, term, trunc = self.batch.step(np.asarray(action, dtype=np.float64)[None])
        info = {"invalid": not bool(obs["valid"][0]), "key": self.task.key}
        return self._obs(), float(rew[0]), bool(term[0] or trunc[0]), False, info

    def render(self):
        from .physics_sim import render_rgb

        return render_rgb(self.batch.image()[0])


#: The entry points of ``causalplay/PhysicsB-v2`` and ``causalplay/Physics2B-v2``.
make_b_v2, make_2b_v2 = functools.partial(PhysicsEnv, tier="B-v2"), functools.partial(PhysicsEnv, tier="2B-v2")
#: The batch entry points of the same ids (``(batch_size, rng, **kwargs) -> PhysicsBatch``, see :func:`draw_batch`).
batch_b_v2, batch_2b_v2 = functools.partial(draw_batch, tier="B-v2"), functools.partial(draw_batch, tier="2B-v2")

# Each deprecated tier: its id, why it is deprecated, and what to use instead.
_DEPRECATED = {
    "B": ("causalplay/PhysicsB-v0", "a random agent's AUCCESS on it is about twice PHYRE's",
          "causalplay/PhysicsB-v2"),
    "2B-v1": ("causalplay/Physics2B-v1", "a random agent's AUCCESS on it is about three times PHYRE's",
              "causalplay/Physics2B-v2"),
    "2B": ("causalplay/Physics2B-v0", "most of its tasks fall to one ball",
           "causalplay/Physics2B-v2, whose tasks need both balls"),
}


def _warn(tier: str) -> None:
    old, why, new = _DEPRECATED[tier]
    warnings.warn(f"{old} is deprecated: {why}; use {new}", FutureWarning, stacklevel=3)


def make_b(**kwargs) -> PhysicsEnv:
    """``causalplay/PhysicsB-v0`` (deprecated, warns): world version 0's one-ball tasks."""
    _warn("B")
    return PhysicsEnv(tier="B", **kwargs)


def make_2b(**kwargs) -> PhysicsEnv:
    """``causalplay/Physics2B-v1`` (deprecated, warns): paired version-0 scenes, both balls needed."""
    _warn("2B-v1")
    return PhysicsEnv(tier="2B-v1", **kwargs)


def make_2b_v0(**kwargs) -> PhysicsEnv:
    """``causalplay/Physics2B-v0`` (deprecated, warns): tier-B scenes played with two balls."""
    _warn("2B")
    return PhysicsEnv(tier="2B", **kwargs)


def batch_b(batch_size: int, rng, **kwargs) -> PhysicsBatch:
    """The batch entry point of ``causalplay/PhysicsB-v0`` (deprecated, warns)."""
    _warn("B")
    return draw_batch(batch_size, rng, tier="B", **kwargs)


def batch_2b(batch_size: int, rng, **kwargs) -> PhysicsBatch:
    """The batch entry point of ``causalplay/Physics2B-v1`` (deprecated, warns)."""
    _warn("2B-v1")
    return draw_batch(batch_size, rng, tier="2B-v1", **kwargs)


def batch_2b_v0(batch_size: int, rng, **kwargs) -> PhysicsBatch:
    """The batch entry point of ``causalplay/Physics2B-v0`` (deprecated, warns)."""
    _warn("2B")
    return draw_batch(batch_size, rng, tier="2B", **kwargs)
