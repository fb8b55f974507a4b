"""Pixel learners' observation and training env: the rendered panels seen so far, stacked, plus what is told.

The paper's pixel agents (DDPG-V, TD-3-V) read every panel shown so far through an image encoder. Here the
observation of a pixel id is ``Dict(frames=uint8 [3T, 60, 80], vec=float32 [2 + N])``: the ``T`` panel frames
(each 2x2 average-pooled from 120x160, channels first, black until shown) and ``vec = [announced count / N,
panels shown / T, last belief (N)]`` -- the same fields as the symbolic history observation, with the panels as
pixels. SB3's ``MultiInputPolicy`` reads ``frames`` with its NatureCNN (trained from scratch) and ``vec`` as is.

:class:`PixelHistory` keeps the frames per row; :class:`PixelRLVecEnv` is the SB3 ``VecEnv`` over a
:class:`causalplay.envs.pixels.PixelBatch` (auto-reset rows, actions rescaled from ``[-1, 1]``, every episode
end terminal), and the ``rl`` bench agent uses the same :class:`PixelHistory` when it plays a pixel id.
"""

from __future__ import annotations

from collections import deque

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv

from causalplay.render.scene import HEIGHT, WIDTH

from .envs import to_env_action

__all__ = ["PixelHistory", "PixelRLVecEnv", "pixel_obs_space", "POOL"]

#: frames are average-pooled by this factor per side (120x160 -> 60x80)
POOL = 2


def pixel_obs_space(T: int, N: int) -> spaces.Dict:
    """The pixel learners' observation space for horizon ``T`` and ``N`` objects."""
    return spaces.Dict({"frames": spaces.Box(0, 255, (3 * T, HEIGHT // POOL, WIDTH // POOL), np.uint8),
                        "vec": spaces.Box(0.0, 1.0, (2 + N,), np.float32)})


def downsample(frames: np.ndarray) -> np.ndarray:
    """uint8 ``[b, 120, 160, 3]`` -> uint8 ``[b, 3, 60, 80]`` (mean of each 2x2 block, channels first)."""
    b = frames.shape[0]
    x = frames.reshape(b, HEIGHT // POOL, POOL, WIDTH // POOL, POOL, 3).mean((2, 4), dtype=np.float32)
    return np.rint(x).astype(np.uint8).transpose(0, 3, 1, 2)


class PixelHistory:
    """Per-row stacked frames and the told fields, as :func:`pixel_obs_space` observations."""

    def __init__(self, batch_size: int, T: int, N: int):
        self.B, self.T, self.N = batch_size, T, N
        self.frames = np.zeros((batch_size, T, 3, HEIGHT // POOL, WIDTH // POOL), np.uint8)
        self.vec = np.zeros((batch_size, 2 + N), np.float32)

    def reset_rows(self, rows: np.ndarray, count: np.ndarray) -> None:
        """Start new episodes in ``rows`` with announced counts ``count [len(rows)]``."""
        self.frames[rows] = 0
        self.vec[rows, 0] = np.asarray(count, np.float32) / self.N
        self.vec[rows, 1] = 0.0
        self.vec[rows, 2:] = 0.5

    def push(self, rows: np.ndarray, k: np.ndarray, frames: np.ndarray) -> None:
        """Panel ``k + 1`` (0-based index ``k [len(rows)]``) of ``rows`` is ``frames [len(rows), 120, 160, 3]``."""
        if len(rows):
            self.frames[rows, k] = downsample(np.asarray(frames))
            self.vec[rows, 1] = (np.minimum(k, self.T - 1) + 1) / self.T

    def set_belief(self, rows: np.ndarray, belief: np.ndarray) -> None:
        self.vec[rows, 2:] = belief

    def obs(self, rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
        f, v = (self.frames, self.vec) if rows is None else (self.frames[rows], self.vec[rows])
        return {"frames": f.reshape(f.shape[0], 3 * self.T, HEIGHT // POOL, WIDTH // POOL).copy(), "vec": v.copy()}


class PixelRLVecEnv(VecEnv):
    """SB3 ``VecEnv`` on a pixel id: :class:`PixelHistory` observations, actions in ``[-1, 1]``.

    Parameters
    ----------
    batch : causalplay.envs.pixels.PixelBatch
    window : int
        Episodes kept for the recent accuracy / return.
    """

    render_mode = None  # nothing to show: SB3 asks before wrapping

    def __init__(self, batch, window: int = 1000):
        self.batch = batch
        N, T = batch.n_objects, batch.horizon
        self.horizon = T
        self.solve_reward = float(batch.rewards.solve_reward)
        self.hist = PixelHistory(batch.B, T, N)
        super().__init__(batch.B, pixel_obs_space(T, N), spaces.Box(-1.0, 1.0, (2 * N,), np.float32))
        self._ret = np.zeros(batch.B)
        self.recent_solved: deque = deque(maxlen=window)
        self.recent_return: deque = deque(maxlen=window)
        self.episodes = 0
        self._actions = None

    def _push_current(self, obs: dict, rows: np.ndarray) -> None:
        k = self.batch.current_panel().numpy()[rows]
        self.hist.push(rows, k, obs["frame"].numpy()[rows])

    def reset(self):
        obs = self.batch.reset()
        rows = np.arange(self.num_envs)
        self.hist.reset_rows(rows, self.batch.n_blickets.numpy())
        self._push_current(obs, rows)
        self._ret[:] = 0.0
        return self.hist.obs()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = to_env_action(actions)

    def step_wait(self):
        a = self._actions
        obs, reward, solved, truncated = self.batch.step(a, check=False)
        reward = reward.numpy().astype(np.float32)
        done = (solved | truncated).numpy()
        live = np.flatnonzero(~done)
        self.hist.set_belief(np.arange(self.num_envs), a[:, self.batch.n_objects:])
        self._push_current(obs, live)
        self._ret += reward
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        rows = np.flatnonzero(done)
        if len(rows):
            final = self.hist.obs(rows)
            for j, i in enumerate(rows):
                infos[i] = {"terminal_observation": {k: v[j] for k, v in final.items()}, "TimeLimit.truncated": False}
                self.recent_solved.append(float(reward[i] >= self.solve_reward))
                self.recent_return.append(float(self._ret[i]))
            self.episodes += len(rows)
            self._ret[rows] = 0.0
            obs = self.batch.reset(rows)
            self.hist.reset_rows(rows, self.batch.n_blickets.numpy()[rows])
            self._push_current(obs, rows)
        return self.hist.obs(), reward, done, infos

    def recent(self) -> tuple[float, float]:
        if not self.recent_solved:
            return float("nan"), float("nan")
        return float(np.mean(self.recent_solved)), float(np.mean(self.recent_return))

    # -- VecEnv plumbing (one batched task: no sub-envs to reach) ------------------------------------------
    def close(self) -> None:
        pass

    def get_attr(self, attr_name, indices=None):
        return [getattr(self, attr_name)] * len(self._idx(indices))

    def set_attr(self, attr_name, value, indices=None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name, *args, indices=None, **kwargs):
        raise NotImplementedError("PixelRLVecEnv has no sub-envs")

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False] * len(self._idx(indices))

    def _idx(self, indices):
        if indices is None:
            return range(self.num_envs)
        return [indices] if isinstance(indices, int) else list(indices)
