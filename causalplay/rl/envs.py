"""The training envs: the native SB3 vector env (:mod:`causalplay.envs.sb3`) or a pixel batch, seen through the
learner's eyes -- the same features and action rescaling the benchmark agent uses
(:mod:`causalplay.agents.rl_features`).

* :class:`RLVecEnv` wraps :class:`causalplay.envs.sb3.SB3VecEnv` (one batched task, ``num_envs`` rows): actions
  ``[-1, 1] -> [0, 1]`` once for the whole batch, observations -> :class:`~causalplay.agents.rl_features.FeatureMap`
  features (``terminal_observation`` included).
* :class:`PixelRLVecEnv` is the SB3 ``VecEnv`` over a :class:`causalplay.envs.pixels.PixelBatch`: auto-reset rows,
  :class:`~causalplay.agents.rl_features.PixelHistory` observations.

Both mark every episode end as terminal (``TimeLimit.truncated = False``: the horizon is part of the task and the
observation shows the step, so nothing is bootstrapped past the last action) and put SB3's ``info["episode"]``
(``r``, ``l`` and ``solved``) on it, which SB3 keeps in ``model.ep_info_buffer`` for the training curves.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from causalplay.agents.rl_features import FeatureMap, PixelHistory, pixel_obs_space, to_env_action
from causalplay.envs.sb3 import make_sb3_vec

__all__ = ["RLVecEnv", "PixelRLVecEnv", "make_train_env"]


class _Episodes:
    """Running return / length per row and SB3's ``info["episode"]`` at each end."""

    def _start_stats(self, B: int, solve_reward: float) -> None:
        self._ret, self._len, self.solve_reward = np.zeros(B), np.zeros(B, np.int64), float(solve_reward)

    def _end(self, infos: list, reward: np.ndarray, rows: np.ndarray) -> None:
        for i in rows:  # a solved episode ends on the solve reward (the only positive reward)
            infos[i]["episode"] = {"r": float(self._ret[i]), "l": int(self._len[i]),
                                   "solved": bool(reward[i] >= self.solve_reward)}
            infos[i]["TimeLimit.truncated"] = False
        self._ret[rows], self._len[rows] = 0.0, 0


class RLVecEnv(_Episodes, VecEnvWrapper):
    """Action rescaling and learner features over an :class:`~causalplay.envs.sb3.SB3VecEnv`.

    Parameters
    ----------
    venv : SB3VecEnv
        Built with ``obs_mode="history"``.
    belief, tracker : bool
        The :class:`~causalplay.agents.rl_features.FeatureMap` options (a tracker's state is reset for the rows the
        vector env auto-resets).
    task : Task, optional
        A task of the same id in history mode, for the layout and constants (default: built by ``venv``; needed
        when ``venv`` is another SB3 ``VecEnv``, e.g. a ``DummyVecEnv`` of single envs).
    """

    def __init__(self, venv, belief: bool = False, tracker: bool = False, task=None):
        if task is None:
            task = venv.task_factory(1, [np.random.default_rng(0)])
        self.n_objects, self.horizon = int(task.n_objects), int(task.horizon)
        self.features = FeatureMap.for_task(task, belief, tracker)
        obs_space = spaces.Box(-np.inf, np.inf, (self.features.size,), np.float32)
        super().__init__(venv, observation_space=obs_space,
                         action_space=spaces.Box(-1.0, 1.0, (task.action_size,), np.float32))
        self._start_stats(self.num_envs, task.rewards.solve_reward)

    def reset(self) -> np.ndarray:
        self._start_stats(self.num_envs, self.solve_reward)
        self.features.reset(self.num_envs)
        return self.features(self.venv.reset())

    def step_async(self, actions: np.ndarray) -> None:
        self.venv.step_async(to_env_action(actions))

    def step_wait(self):
        obs, reward, done, infos = self.venv.step_wait()
        self._ret += reward
        self._len += 1
        if done.any():
            rows = np.flatnonzero(done)
            final = self.features(np.stack([infos[i]["terminal_observation"] for i in rows]), rows, commit=False)
            self.features.reset_rows(rows)  # `obs` of these rows is already the next episode's first
            for j, i in enumerate(rows):
                infos[i]["terminal_observation"] = final[j]
            self._end(infos, reward, rows)
        return self.features(obs), reward, done, infos


def make_train_env(env_id: str, num_envs: int, seed: int, belief: bool = False, tracker: bool = False) -> RLVecEnv:
    """An :class:`RLVecEnv` on ``env_id`` (history observations), row ``i`` seeded ``seed + i``."""
    return RLVecEnv(make_sb3_vec(env_id, num_envs, seed=seed, obs_mode="history"), belief=belief, tracker=tracker)


class PixelRLVecEnv(_Episodes, VecEnv):
    """SB3 ``VecEnv`` on a pixel id: :class:`~causalplay.agents.rl_features.PixelHistory` observations, actions in
    ``[-1, 1]`` (``batch``: a :class:`causalplay.envs.pixels.PixelBatch`)."""

    render_mode = None  # nothing to show: SB3 asks before wrapping

    def __init__(self, batch):
        self.batch = batch
        self.n_objects, self.horizon = N, T = batch.n_objects, batch.horizon
        self.hist = PixelHistory(batch.B, T, N)
        super().__init__(batch.B, pixel_obs_space(T, N), spaces.Box(-1.0, 1.0, (2 * N,), np.float32))
        self._start_stats(batch.B, batch.rewards.solve_reward)
        self._actions = None

    def _push_current(self, obs: dict, rows: np.ndarray) -> None:
        self.hist.push(rows, self.batch.current_panel().numpy()[rows], obs["frame"].numpy()[rows])

    def reset(self):
        obs = self.batch.reset()
        rows = np.arange(self.num_envs)
        self.hist.reset_rows(rows, self.batch.n_blickets.numpy())
        self._push_current(obs, rows)
        self._start_stats(self.num_envs, self.solve_reward)
        return self.hist.obs()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = to_env_action(actions)

    def step_wait(self):
        a = self._actions
        obs, reward, solved, truncated = self.batch.step(a, check=False)
        reward = reward.numpy().astype(np.float32)
        done = (solved | truncated).numpy()
        self.hist.set_belief(np.arange(self.num_envs), a[:, self.n_objects:])
        self._push_current(obs, np.flatnonzero(~done))
        self._ret += reward
        self._len += 1
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        rows = np.flatnonzero(done)
        if len(rows):
            final = self.hist.obs(rows)
            for j, i in enumerate(rows):
                infos[i]["terminal_observation"] = {k: v[j] for k, v in final.items()}
            self._end(infos, reward, rows)
            obs = self.batch.reset(rows)
            self.hist.reset_rows(rows, self.batch.n_blickets.numpy()[rows])
            self._push_current(obs, rows)
        return self.hist.obs(), reward, done, infos

    # -- VecEnv plumbing (one batched task: no sub-envs to reach) ------------------------------------------
    def close(self) -> None:
        pass

    def get_attr(self, attr_name, indices=None):
        return [getattr(self, attr_name)] * len(self._get_indices(indices))

    def set_attr(self, attr_name, value, indices=None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name, *args, indices=None, **kwargs):
        raise NotImplementedError("PixelRLVecEnv has no sub-envs")

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False] * len(self._get_indices(indices))
