"""The physics-puzzle Task (``B`` tasks played at once under PHYRE's attempt budget) and its single-attempt env.

:class:`PhysicsBatch` is the :class:`causalplay.envs.task.Task` of the physics worlds: row ``b`` plays one
task (a :class:`~causalplay.envs.physics_templates.PhysicsTask`); an action places the tier's balls; a valid
attempt is simulated (reward 1 when the goal relation holds, the episode ends); an **invalid** one (overlap,
out of the world) gives reward 0 and does not count towards the ``budget`` (PHYRE's rule). The observation is
the object list flattened (:func:`causalplay.envs.physics_sim.object_list`, padded to ``MAX_BODIES`` rows) and
the attempts used so far divided by the budget; :meth:`PhysicsBatch.image` renders the initial scenes.
"""

from __future__ import annotations

import functools
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces

from .physics_sim import COLS, object_list, render, simulate
from .physics_templates import N_TASKS, TEMPLATES, TIERS, PhysicsTask, load_tasks, make_task, to_balls
from .task import ObsLayout, RewardSpec, as_rows, batch_action

__all__ = ["PhysicsBatch", "PhysicsEnv", "MAX_BODIES", "BUDGET", "make_b", "make_2b"]

MAX_BODIES, BUDGET = 10, 100


@functools.lru_cache(maxsize=4096)
def _task(tier: str, template: int, index: int) -> PhysicsTask:
    if (Path("runs/physics") / f"tasks-{tier}.pkl").exists():  # the cached pool (``load_tasks``): no search
        pool = {t.key: t for t in load_tasks(tier)}
        if f"{template:02d}:{index:03d}" in pool:
            return pool[f"{template:02d}:{index:03d}"]
    return make_task(tier, template, index)


class PhysicsBatch:
    """``B`` physics tasks under an attempt budget (see the module docstring).

    Parameters
    ----------
    tasks : list of PhysicsTask
        The tasks; row ``b`` plays ``tasks[b]`` (:meth:`set_tasks` swaps them).
    tier : {"B", "2B"}
    budget : int
        Valid attempts per task (PHYRE: 100).
    record : int
        With ``record > 0`` every attempt's trajectory (:class:`~causalplay.envs.physics_sim.Rollout`, a frame
        each ``record`` steps) is kept in ``last["traj"]`` (what PHYRE shows the agent after an attempt).
    """

    n_context, rules = 0, ()
    rewards = RewardSpec(solve_reward=1.0, step_cost=0.0)

    def __init__(self, tasks: list[PhysicsTask], tier: str = "B", budget: int = BUDGET, record: int = 0):
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {list(TIERS)}, got {tier!r}")
        if budget < 1:
            raise ValueError(f"budget must be >= 1, got {budget!r}")
        self.tier, self.m, self.horizon, self.n_objects = tier, TIERS[tier], budget, MAX_BODIES
        self.record_every = record
        self.layout = ObsLayout.of(("objects", MAX_BODIES * len(COLS), 1.0, "object list, row-major, 0-padded"),
                                   ("attempts", 1, float(budget), "valid attempts used / budget"))
        self.set_tasks(tasks)

    def set_tasks(self, tasks: list[PhysicsTask]) -> None:
        """Play ``tasks`` (one per row) from the next :meth:`reset`."""
        if any(len(t.scene) > MAX_BODIES for t in tasks):
            raise ValueError(f"scenes may have at most {MAX_BODIES} bodies")
        self.tasks, self.B = list(tasks), len(tasks)
        self.attempts = np.zeros(self.B, dtype=np.int64)
        self.invalid = np.zeros(self.B, dtype=np.int64)
        self.solved_at = np.zeros(self.B, dtype=np.int64)
        self.done = torch.zeros(self.B, dtype=torch.bool)

    @property
    def obs_size(self) -> int:
        return self.layout.size

    @property
    def action_size(self) -> int:
        return 3 * self.m

    def obs(self) -> torch.Tensor:
        out = np.zeros((self.B, self.obs_size), dtype=np.float32)
        for b, t in enumerate(self.tasks):
            o = object_list(t.scene).ravel()
            out[b, :len(o)] = o
        out[:, -1] = self.attempts / self.horizon
        return torch.from_numpy(out)

    def image(self, rows=None, res: int = 256) -> np.ndarray:
        """Initial scenes of ``rows`` as colour-index images ``[len(rows), res, res]`` (uint8)."""
        return np.stack([render(self.tasks[b].scene, res=res) for b in as_rows(rows, self.B).tolist()])

    def reset(self, rows=None) -> torch.Tensor:
        r = as_rows(rows, self.B).numpy()
        self.attempts[r] = self.invalid[r] = self.solved_at[r] = 0
        self.done[r] = False
        return self.obs()

    def step(self, action, check: bool = True):
        """Attempt ``action [B, 3m]`` in every active row; returns ``obs, reward, terminated, truncated``; the
        rows' last outcome (``"valid"``, ``"solved"``) is in :attr:`last`."""
        a = np.asarray(batch_action(action, self.action_size, self.B, check), dtype=np.float64)
        reward, term, trunc = np.zeros(self.B), np.zeros(self.B, bool), np.zeros(self.B, bool)
        self.last = {"valid": np.zeros(self.B, bool), "solved": np.zeros(self.B, bool), "traj": [None] * self.B}
        for b in np.flatnonzero(~self.done.numpy()):
            r = simulate(self.tasks[b].scene, to_balls(a[b]), record=self.record_every)
            self.last["valid"][b], self.last["solved"][b], self.last["traj"][b] = r.valid, r.solved, r.traj
            if not r.valid:
                self.invalid[b] += 1
                continue
            self.attempts[b] += 1
            if r.solved:
                self.solved_at[b], reward[b], term[b] = self.attempts[b], self.rewards.solve_reward, True
            trunc[b] = not r.solved and self.attempts[b] >= self.horizon
        self.done |= torch.from_numpy(term | trunc)
        return self.obs(), torch.from_numpy(reward), torch.from_numpy(term), torch.from_numpy(trunc)

    def record(self) -> dict[str, np.ndarray]:
        """Per row: ``key``, ``template``, ``attempts`` (valid), ``invalid``, ``solved_at`` (0: unsolved)."""
        return {"key": np.array([t.key for t in self.tasks]), "template": np.array([t.template for t in self.tasks]),
                "attempts": self.attempts.copy(), "invalid": self.invalid.copy(), "solved_at": self.solved_at.copy()}


class PhysicsEnv(gym.Env):
    """Single-attempt play of a PHYRE-style physics puzzle.

    Each episode is one task of the tier, drawn with ``self.np_random`` (template, then task index). The agent
    places its ball(s); the simulation runs; the goal is the green body touching the blue/purple one for 0.5 s
    within 3 s (:mod:`causalplay.envs.physics_sim`).

    ## Action Space
    ``Box(0, 1, (3m,), float32)``: ``m`` balls (``m = 1`` for tier B, 2 for 2B), each ``(x, y, r)`` with
    ``x = a0 W``, ``y = a1 W``, ``r = RMIN + a2 (RMAX - RMIN)`` (:mod:`causalplay.envs.physics_templates`).

    ## Observation Space
    ``Dict(image=Box(0, 6, (256, 256), uint8), objects=Box(0, 1, (MAX_BODIES, 8), float32))``: the initial
    scene in PHYRE's 7 colour indices (row 0 at the top) and the object list (columns ``COLS``, scaled to
    [0, 1], zero rows after the last body). The observation does not change within an episode.

    ## Rewards
    1 when the attempt solves the task, else 0.

    ## Episode End
    Terminates after the first **valid** attempt. An invalid action (a ball out of the world or overlapping a
    body) gives reward 0, ``info["invalid"] = True`` and the episode goes on (PHYRE does not count it).

    ## Arguments
    ``tier`` ("B" or "2B"), ``templates`` (template indices to draw from; default all), ``n_tasks`` (task
    indices ``0..n_tasks-1`` per template; default 100).

    ## Version History
    * v0: initial version (25 templates, 100 tasks each).
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
                                              "objects": spaces.Box(0.0, 1.0, (MAX_BODIES, len(COLS)), np.float32)})

    def _obs(self) -> dict:
        objs = np.zeros((MAX_BODIES, len(COLS)), np.float32)
        o = object_list(self.task.scene)
        objs[:len(o)] = o
        return {"image": self.batch.image()[0], "objects": objs}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        t = self.templates[int(self.np_random.integers(len(self.templates)))]
        self.task = _task(self.tier, t, int(self.np_random.integers(self.n_tasks)))
        self.batch = PhysicsBatch([self.task], self.tier, budget=1)
        self.batch.reset()
        return self._obs(), {"key": self.task.key, "template": TEMPLATES[t]}

    def step(self, action):
        if not self.action_space.contains(np.asarray(action, dtype=np.float32)):
            raise ValueError(f"action must be {self.action_space.shape} values in [0, 1], got {action!r}")
        _, rew, term, trunc = self.batch.step(np.asarray(action, dtype=np.float64)[None])
        info = {"invalid": not bool(self.batch.last["valid"][0]), "key": self.task.key}
        return self._obs(), float(rew[0]), bool(term[0] or trunc[0]), False, info

    def render(self):
        from .physics_sim import render_rgb

        return render_rgb(self.batch.image()[0])


def make_b(**kw) -> PhysicsEnv:
    """``causalplay/PhysicsB-v0``."""
    return PhysicsEnv(tier="B", **kw)


def make_2b(**kw) -> PhysicsEnv:
    """``causalplay/Physics2B-v0``."""
    return PhysicsEnv(tier="2B", **kw)
