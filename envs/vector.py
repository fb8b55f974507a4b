"""Native vector envs: ``gymnasium.make_vec(id, num_envs=B)`` backed by one batched Task.

:class:`TaskVectorEnv` steps ``B`` episodes with one call into the torch engine (no loop over sub-envs).
Row ``i`` owns its generator, seeded as a single env would be (``reset(seed=s)`` gives row ``i`` the seed
``s + i``, like gymnasium's own vector envs), so row ``i`` plays exactly the episodes of
``gymnasium.make(id)`` reset with seed ``s + i`` and then without a seed after each episode. Autoreset follows
gymnasium's default ``NEXT_STEP`` mode: the step after a row's episode ended resets that row (its action is
ignored; reward 0, ``terminated = truncated = False``) and returns the new episode's first observation.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .task import Task, as_rows, numpy_obs, positive_int, validate_action

__all__ = ["TaskVectorEnv"]


class TaskVectorEnv(VectorEnv):
    """A gymnasium ``VectorEnv`` over a batched :class:`~causalplay.envs.task.Task`.

    Parameters
    ----------
    make_task : callable ``(num_envs, rngs) -> Task``
        Builds the task with one generator per row.
    num_envs : int
    single_observation_space, single_action_space : gymnasium.spaces.Space
        The spaces of one sub-env (the single env's).
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, make_task: Callable[[int, list], Task], num_envs: int, single_observation_space,
                 single_action_space):
        self.num_envs = positive_int(num_envs, "num_envs")
        self.single_observation_space = single_observation_space
        self.single_action_space = single_action_space
        self.observation_space = batch_space(single_observation_space, num_envs)
        self.action_space = batch_space(single_action_space, num_envs)
        self._make_task = make_task
        self.task: Task | None = None
        self._rngs: list[np.random.Generator] | None = None
        self._autoreset = np.zeros(num_envs, dtype=bool)

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict | None = None):
        """Reset every row (``options={"reset_mask": mask}`` resets only the masked rows)."""
        B = self.num_envs
        if seed is not None or self._rngs is None:
            if seed is None or isinstance(seed, int):
                seeds = [None if seed is None else seed + i for i in range(B)]
            else:
                seeds = list(seed)
                if len(seeds) != B:
                    raise ValueError(f"seed must be an int or a list of {B} seeds, got {len(seeds)}")
            self._rngs = [seeding.np_random(s)[0] for s in seeds]
            self.task = None
        if self.task is None:
            self.task = self._make_task(B, self._rngs)
            obs = self.task.reset()
            self._autoreset[:] = False
        else:
            mask = None if not options or "reset_mask" not in options else options["reset_mask"]
            rows = as_rows(None if mask is None else np.asarray(mask, dtype=bool), B)
            obs = self.task.reset(rows)
            self._autoreset[rows.numpy()] = False
        return numpy_obs(obs), {}

    def step(self, actions):
        if self.task is None:
            raise RuntimeError("call reset() before step()")
        task, B = self.task, self.num_envs
        a = validate_action(actions, task.action_size, B)
        pending = torch.as_tensor(self._autoreset)
        reward = torch.zeros(B, dtype=torch.float64)
        terminated = truncated = torch.zeros(B, dtype=torch.bool)
        if not bool(task.done.all()):
            _, reward, terminated, truncated = task.step(a, check=False)
        obs = task.reset(pending) if bool(pending.any()) else task.observation()
        self._autoreset = (terminated | truncated).numpy()
        return numpy_obs(obs), reward.numpy(), terminated.numpy(), truncated.numpy(), {}
