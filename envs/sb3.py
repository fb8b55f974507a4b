"""Stable-Baselines3 ``VecEnv`` over a batched Task (needs the ``rl`` extra).

SB3's vector-env contract differs from gymnasium's: a row whose episode ends is reset **in the same step**; the
returned observation is the new episode's first and ``infos[i]["terminal_observation"]`` holds the last
one, with ``infos[i]["TimeLimit.truncated"]`` telling a time limit from a true end. :class:`SB3VecEnv` follows
that contract on the batched engine (one torch call per step for all rows). Row ``i`` seeded with
``seed + i`` plays the episodes of SB3's ``DummyVecEnv`` over ``gymnasium.make(id)`` envs seeded the same way.
"""

from __future__ import annotations

import numpy as np
import torch
from gymnasium.utils import seeding
from stable_baselines3.common.vec_env import VecEnv

from .task import as_rows, numpy_obs, validate_action

__all__ = ["SB3VecEnv", "make_sb3_vec"]


class SB3VecEnv(VecEnv):
    """``num_envs`` episodes of a registered symbolic id as one SB3 ``VecEnv``.

    Parameters
    ----------
    env_id : str
        A symbolic id (see :data:`causalplay.envs.ENV_IDS`).
    num_envs : int
    **kwargs
        The id's keyword arguments (``obs_mode``, ``rule``, ``noise``, ...).
    """

    def __init__(self, env_id: str, num_envs: int, **kwargs):
        import gymnasium as gym

        from .families import task_factory

        #: ``(batch_size, rng) -> Task`` of this id and options (Overhypothesis-v0: one SB3 episode is a sequence)
        self.task_factory = task_factory(env_id, **kwargs)
        single = gym.make(env_id, **kwargs).unwrapped
        self.render_mode = None
        super().__init__(num_envs, single.observation_space, single.action_space)
        self.task = None
        self._actions = None

    def reset(self):
        rngs = [seeding.np_random(s)[0] for s in self._seeds]
        self._reset_seeds()
        self._reset_options()
        self.task = self.task_factory(self.num_envs, rngs)
        return numpy_obs(self.task.reset())

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self):
        if self.task is None:
            raise RuntimeError("call reset() before step()")
        a = validate_action(self._actions, self.task.action_size, self.num_envs)
        obs, reward, term, trunc = self.task.step(a, check=False)
        done = (term | trunc).numpy()
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        if done.any():
            rows = np.flatnonzero(done)
            final = numpy_obs(obs, torch.as_tensor(rows))
            for j, i in enumerate(rows):
                infos[i]["terminal_observation"] = ({k: v[j] for k, v in final.items()} if isinstance(final, dict)
                                                    else final[j])
                infos[i]["TimeLimit.truncated"] = bool(trunc[i]) and not bool(term[i])
            obs = self.task.reset(as_rows(done, self.num_envs))
        return numpy_obs(obs), reward.numpy().astype(np.float32), done, infos

    def close(self) -> None:
        self.task = None

    def get_attr(self, attr_name: str, indices=None) -> list:
        return [getattr(self, attr_name, None) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value, indices=None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list:
        raise NotImplementedError(f"SB3VecEnv rows are rows of one batched task; they have no {method_name!r}")

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]


def make_sb3_vec(env_id: str, num_envs: int, seed: int | None = None, **kwargs) -> SB3VecEnv:
    """An :class:`SB3VecEnv`, seeded (row ``i`` gets ``seed + i``) when ``seed`` is given."""
    env = SB3VecEnv(env_id, num_envs, **kwargs)
    if seed is not None:
        env.seed(seed)
    return env
