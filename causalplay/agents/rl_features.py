"""What a trained RL policy sees and how its actions reach the env -- shared by training (``causalplay.rl``) and
the benchmark agent (:class:`causalplay.agents.rl.RLAgent`), so both build the same inputs.

* :func:`to_env_action` -- the learner acts in ``[-1, 1]``; the env takes ``(a + 1) / 2`` clipped to ``[0, 1]``.
* :class:`FeatureMap` -- the task's ``"history"`` observation, optionally with the exact posterior appended.
* :class:`HistoryLSTM` -- the IVRE paper's recurrent encoder of the history (an SB3 features extractor).
* :class:`PixelHistory` -- the pixel learners' observation: the panel frames shown so far, stacked.

**Belief features** (``belief=True``, ``causalplay train --belief-input``): the blicket marginals
``P(object i is a blicket | panels shown, announced count, task rules)`` (``N`` values) and, when the task allows
more than one rule, the rule marginals (``R`` values), from the agents' one belief tracker
(:func:`causalplay.agents.base.task_beliefs`: uniform over blicket sets and rules, conditioned on the count).
With ``tracker=True`` (``--belief-tracker``) the posterior also excludes the blicket sets the env rejected: an
episode ends exactly when every belief is on the right side of 0.5, so the set the last beliefs rounded to is not
the answer when the episode goes on. The history observation holds only the *last* belief, so the rejected sets
are the one piece of state: :meth:`FeatureMap.reset` / :meth:`FeatureMap.reset_rows` start episodes, and each
tracker call (once per env step per row) records the guess its observation shows.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from causalplay.envs.task import ObsLayout

from .base import BlicketInfo, task_beliefs

__all__ = ["to_env_action", "FeatureMap", "HistoryLSTM", "PixelHistory", "pixel_obs_space", "downsample", "POOL"]


def to_env_action(action: np.ndarray) -> np.ndarray:
    """Learner action in ``[-1, 1]`` -> env action in ``[0, 1]`` (float64; out-of-range values are clipped)."""
    return np.clip((np.asarray(action, dtype=np.float64) + 1.0) / 2.0, 0.0, 1.0)


class FeatureMap:
    """History observation ``[B, D]`` -> learner features ``[B, D (+ N (+ N) (+ R))]`` (float32 numpy).

    Parameters
    ----------
    n_objects, horizon : int
        The task's ``N`` and ``T``.
    rules : tuple of Rule
        The task's rules (what its instructions tell every player).
    layout : ObsLayout
        The task's ``"history"`` layout (:func:`causalplay.envs.core.history_layout`).
    belief : bool
        Append the exact posterior's blicket marginals (and rule marginals when ``R > 1``).
    tracker : bool
        Also exclude the guesses the env rejected, and append the MAP blicket set (implies ``belief``; stateful).
    """

    def __init__(self, n_objects: int, horizon: int, rules: tuple, layout: ObsLayout, belief: bool = False,
                 tracker: bool = False):
        if "history" not in layout or "count" not in layout:
            raise ValueError("RL features need the task's 'history' observation (obs_mode='history'); got fields "
                             f"{[f.name for f in layout.fields]}")
        self.N, self.T, self.layout, self.rules = int(n_objects), int(horizon), layout, tuple(rules)
        self.tracker = bool(tracker)
        self.belief = bool(belief) or self.tracker
        self.obs_size, self.n_rules = layout.size, len(self.rules)
        if self.belief:  # the space is built once; every call starts from its prior
            info = BlicketInfo(self.N, self.T, 0, self.rules, layout=layout)
            self._space = task_beliefs(info, 1, torch.float64).space
        self._guesses = None  # tracker state: [B, T] codes of the sets rejected this episode (-1: none)
        self._steps = None  # tracker state: [B] calls since the row's episode started

    @classmethod
    def for_task(cls, task, belief: bool = False, tracker: bool = False) -> FeatureMap:
        """From a Blicket :class:`causalplay.envs.task.Task` (or its :class:`~causalplay.envs.core.BlicketInfo`) in
        history mode."""
        layout = task.layout
        if layout is None:
            from causalplay.envs.core import history_layout

            layout = history_layout(task.n_objects, task.horizon)
        return cls(task.n_objects, task.horizon, tuple(task.rules), layout, belief, tracker)

    @property
    def size(self) -> int:
        """Length of one feature vector."""
        extra = (self.N + (self.n_rules if self.n_rules > 1 else 0)) if self.belief else 0
        return self.obs_size + extra + (self.N if self.tracker else 0)

    def reset(self, batch_size: int) -> None:
        """Start a batch of ``batch_size`` episodes (a tracker forgets every rejected guess)."""
        if self.tracker:
            self._guesses = torch.full((batch_size, self.T), -1, dtype=torch.long)
            self._steps = np.zeros(batch_size, dtype=np.int64)

    def reset_rows(self, rows: np.ndarray) -> None:
        """Start new episodes in ``rows`` (a vector env's auto-reset)."""
        if self.tracker:
            self._guesses[torch.as_tensor(rows, dtype=torch.long)] = -1
            self._steps[rows] = 0

    def _rejected(self, o: torch.Tensor, rows: np.ndarray | None, commit: bool) -> torch.Tensor:
        """``[b, T]`` codes of the rejected sets of ``rows`` after reading the guess in their observations ``o``."""
        if self._guesses is None:
            raise RuntimeError("a belief tracker needs reset(batch_size) before its first call")
        rows = np.arange(self._guesses.shape[0]) if rows is None else np.asarray(rows)
        if len(rows) != o.shape[0]:
            raise ValueError(f"{o.shape[0]} observations for {len(rows)} tracked rows")
        at = torch.as_tensor(rows, dtype=torch.long)
        last = self.layout.get(o, "last_belief")  # the previous action's beliefs
        # a guess exists after the first step, and names a set only if no belief sits exactly on 0.5 (which is
        # on neither side, so nothing could have been accepted); the env going on means it was wrong
        made = torch.from_numpy(self._steps[rows] >= 1) & ((last - 0.5).abs() > 0).all(-1)
        code = ((last > 0.5).long() << torch.arange(self.N)).sum(-1)
        g = self._guesses[at].clone()
        slot = torch.as_tensor(np.minimum(self._steps[rows], self.T) - 1).clamp_min(0)
        g[made, slot[made]] = code[made]
        if commit:
            self._guesses[at] = g
            self._steps[rows] += 1
        return g

    def posterior(self, obs, rejected: torch.Tensor | None = None):
        """The agents' tracker (:class:`~causalplay.core.beliefs.BatchBeliefs`) after the panels of history
        observations ``obs [B, D]``, the announced count and, when given, the rejected set codes ``[B, k]``."""
        from causalplay.core.beliefs import BatchBeliefs

        o = torch.as_tensor(np.asarray(obs), dtype=torch.float64)
        B, N, T = o.shape[0], self.N, self.T
        hist = self.layout.get(o, "history").reshape(B, T, N + 1) > 0.5
        shown = self.layout.get(o, "shown")[:, 0].round().long()
        post = BatchBeliefs.prior(self._space, B)
        post.condition_count_(self.layout.get(o, "count")[:, 0].round().long())
        for k in range(int(shown.max()) if B else 0):
            post.observe_(hist[:, k, :N], hist[:, k, N], shown > k)
        for j in range(rejected.shape[1] if rejected is not None else 0):
            post.exclude_(rejected[:, j].clamp_min(0), rejected[:, j] >= 0)
        post.normalise_()
        bad = ~torch.isfinite(post.log_w).any(-1)  # an impossible row (padding, never a real episode): uniform
        post.log_w[bad] = -float(np.log(post.log_w.shape[1]))
        return post

    def __call__(self, obs: np.ndarray | torch.Tensor, rows: np.ndarray | None = None,
                 commit: bool = True) -> np.ndarray:
        """Features of ``obs`` (a tracker: of ``rows`` of its batch, all by default; ``commit=False`` reads a
        final observation without recording its guess)."""
        o = np.asarray(obs.numpy() if isinstance(obs, torch.Tensor) else obs, dtype=np.float32)
        if o.ndim != 2 or o.shape[1] != self.obs_size:
            raise ValueError(f"expected history observations of shape (B, {self.obs_size}), got {o.shape}")
        if not self.belief:
            return o
        rejected = self._rejected(torch.as_tensor(o, dtype=torch.float64), rows, commit) if self.tracker else None
        post = self.posterior(o, rejected)
        parts = [o, post.marginals().numpy()]
        if self.tracker:  # the MAP blicket set (rules summed out: only the set is judged)
            parts.append(post.code_to_set(post.map_code()).numpy())
        if self.n_rules > 1:
            parts.append(post.rule_marginals().numpy())
        return np.concatenate(parts, 1, dtype=np.float32)


class HistoryLSTM(nn.Module):
    """The IVRE paper's recurrent encoder (its ``ProcessLSTM``), as a Stable-Baselines3 features extractor.

    A stateless function of the history observation: each of the ``T`` panel rows ``(on (N), lit)`` -- zero-padded
    past the panels shown, as in the paper -- goes through ``Linear(N + 1, H)``, one LSTM layer of ``H`` units runs
    over the ``T`` rows, and its last hidden state is concatenated with the announced count (``count / N``).
    The previous belief and the panel count are not read (the paper's encoder drops them too); features appended
    after the history observation (``--belief-input``) are passed through. Output ``[B, H + 1 (+ extra)]``.

    Parameters
    ----------
    observation_space : gymnasium.spaces.Box
        The learner's features (``D`` values; the history observation first).
    n_objects, horizon : int
        The task's ``N`` and ``T``.
    hidden : int
        ``H``: embedding and LSTM width (512 in the paper).
    """

    def __init__(self, observation_space, n_objects: int, horizon: int, hidden: int = 512):
        from causalplay.envs.core import history_layout

        self.layout = history_layout(n_objects, horizon)
        self.N, self.T = int(n_objects), int(horizon)
        extra = int(observation_space.shape[0]) - self.layout.size
        if extra < 0:
            raise ValueError(f"HistoryLSTM: {observation_space.shape[0]} observation values, fewer than the "
                             f"{self.layout.size} of a history observation with N={n_objects}, T={horizon}")
        super().__init__()
        self.features_dim = hidden + 1 + extra  # all SB3 asks of a features extractor (no SB3 import needed)
        self.embed = nn.Linear(self.N + 1, hidden)
        self.lstm = nn.LSTM(hidden, hidden, batch_first=True)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        hist = self.layout.get(obs, "history").reshape(obs.shape[0], self.T, self.N + 1)
        _, (h, _) = self.lstm(self.embed(hist))
        return torch.cat([h[-1], obs[:, self.layout["count"].slice], obs[:, self.layout.size:]], 1)


# -- pixel learners ------------------------------------------------------------------------------------------
#: frames are average-pooled by this factor per side (120x160 -> 60x80)
POOL = 2


def pixel_obs_space(T: int, N: int):
    """The pixel learners' observation space: ``Dict(frames=uint8 [3T, 60, 80], vec=float32 [2 + N])`` -- the ``T``
    panel frames (2x2 average-pooled, channels first, black until shown) and ``[count / N, shown / T, last
    belief (N)]``, the symbolic history observation's fields with the panels as pixels."""
    from gymnasium import spaces

    from causalplay.render.scene import HEIGHT, WIDTH

    return spaces.Dict({"frames": spaces.Box(0, 255, (3 * T, HEIGHT // POOL, WIDTH // POOL), np.uint8),
                        "vec": spaces.Box(0.0, 1.0, (2 + N,), np.float32)})


def downsample(frames: np.ndarray) -> np.ndarray:
    """uint8 ``[b, H, W, 3]`` -> uint8 ``[b, 3, H / 2, W / 2]`` (mean of each 2x2 block, channels first)."""
    b, h, w, _ = frames.shape
    x = frames.reshape(b, h // POOL, POOL, w // POOL, POOL, 3).mean((2, 4), dtype=np.float32)
    return np.rint(x).astype(np.uint8).transpose(0, 3, 1, 2)


class PixelHistory:
    """Per-row stacked frames and the told fields, as :func:`pixel_obs_space` observations."""

    def __init__(self, batch_size: int, T: int, N: int):
        from causalplay.render.scene import HEIGHT, WIDTH

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
        """Panel ``k + 1`` (0-based index ``k [len(rows)]``) of ``rows`` is ``frames [len(rows), H, W, 3]``."""
        if len(rows):
            self.frames[rows, k] = downsample(np.asarray(frames))
            self.vec[rows, 1] = (np.minimum(k, self.T - 1) + 1) / self.T

    def set_belief(self, rows: np.ndarray, belief: np.ndarray) -> None:
        self.vec[rows, 2:] = belief

    def obs(self, rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
        f, v = (self.frames, self.vec) if rows is None else (self.frames[rows], self.vec[rows])
        return {"frames": f.reshape(f.shape[0], 3 * self.T, *f.shape[-2:]).copy(), "vec": v.copy()}
