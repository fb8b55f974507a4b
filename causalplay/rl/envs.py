"""The training env: the native SB3 vector env (:mod:`causalplay.envs.sb3`) seen through the learner's eyes.

:class:`RLVecEnv` wraps :class:`causalplay.envs.sb3.SB3VecEnv` (one batched task, ``num_envs`` rows) and

* rescales actions: the learner acts in ``[-1, 1]`` (what SB3's and our squashing policies assume), the env
  takes ``(a + 1) / 2`` clipped to ``[0, 1]`` -- gymnasium's ``RescaleAction`` done once for the whole batch
  (:func:`to_env_action`, shared with the benchmark agent);
* maps observations to features (:class:`causalplay.rl.features.FeatureMap`: the history observation, plus the
  exact posterior with ``belief=True``), ``terminal_observation`` included;
* marks every episode end as terminal (``TimeLimit.truncated = False``): the horizon is part of the task and
  the observation shows the step, so nothing is bootstrapped past the last action;
* keeps the recent episodes' accuracy and return for the progress bar and ``progress.csv``.
"""

from __future__ import annotations

from collections import deque

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnvWrapper

from causalplay.envs.sb3 import make_sb3_vec

from .features import FeatureMap

__all__ = ["RLVecEnv", "make_train_env", "to_env_action"]


def to_env_action(action: np.ndarray) -> np.ndarray:
    """Learner action in ``[-1, 1]`` -> env action in ``[0, 1]`` (float64; out-of-range values are clipped)."""
    return np.clip((np.asarray(action, dtype=np.float64) + 1.0) / 2.0, 0.0, 1.0)


class RLVecEnv(VecEnvWrapper):
    """Action rescaling, features and episode statistics over an :class:`~causalplay.envs.sb3.SB3VecEnv`.

    Parameters
    ----------
    venv : SB3VecEnv
        Built with ``obs_mode="history"``.
    belief : bool
        Append the exact posterior to the observation (see :class:`~causalplay.rl.features.FeatureMap`).
    window : int
        Episodes kept for the recent accuracy / return.
    task : Task, optional
        A task of the same id in history mode, for the layout and constants (default: built by ``venv``;
        needed when ``venv`` is another SB3 ``VecEnv``, e.g. a ``DummyVecEnv`` of single envs).
    tracker : bool
        The posterior also excludes the guesses the env rejected, plus its MAP set (``FeatureMap(tracker=True)``;
        its state is reset for the rows the vector env auto-resets).
    """

    def __init__(self, venv, belief: bool = False, window: int = 1000, task=None, tracker: bool = False):
        if task is None:
            task = venv._factory(1, [np.random.default_rng(0)])
        self.horizon = int(task.horizon)
        self.features = FeatureMap.for_task(task, belief, tracker)
        self.solve_reward = float(task.rewards.solve_reward)
        n_act = task.action_size
        obs_space = spaces.Box(-np.inf, np.inf, (self.features.size,), np.float32)
        act_space = spaces.Box(-1.0, 1.0, (n_act,), np.float32)
        super().__init__(venv, observation_space=obs_space, action_space=act_space)
        self._ret = np.zeros(self.num_envs)
        self.recent_solved: deque = deque(maxlen=window)
        self.recent_return: deque = deque(maxlen=window)
        self.episodes = 0

    def reset(self) -> np.ndarray:
        self._ret[:] = 0.0
        self.features.reset(self.num_envs)
        return self.features(self.venv.reset())

    def step_async(self, actions: np.ndarray) -> None:
        self.venv.step_async(to_env_action(actions))

    def step_wait(self):
        obs, reward, done, infos = self.venv.step_wait()
        self._ret += reward
        if done.any():
            rows = np.flatnonzero(done)
            final = self.features(np.stack([infos[i]["terminal_observation"] for i in rows]), rows, commit=False)
            self.features.reset_rows(rows)  # `obs` of these rows is already the next episode's first
            for j, i in enumerate(rows):
                infos[i]["terminal_observation"] = final[j]
                infos[i]["TimeLimit.truncated"] = False
                # a solved episode ends on the solve reward (the only positive reward)
                self.recent_solved.append(float(reward[i] >= self.solve_reward))
                self.recent_return.append(float(self._ret[i]))
            self.episodes += len(rows)
            self._ret[rows] = 0.0
        return self.features(obs), reward, done, infos

    def recent(self) -> tuple[float, float]:
        """Episode accuracy and mean return over the recent window (NaN before the first episode ends)."""
        if not self.recent_solved:
            return float("nan"), float("nan")
        return float(np.mean(self.recent_solved)), float(np.mean(self.recent_return))


def make_train_env(env_id: str, num_envs: int, seed: int, belief: bool = False, tracker: bool = False) -> RLVecEnv:
    """An :class:`RLVecEnv` on ``env_id`` (history observations), row ``i`` seeded ``seed + i``."""
    return RLVecEnv(make_sb3_vec(env_id, num_envs, seed=seed, obs_mode="history"), belief=belief, tracker=tracker)
