"""``rl:path=DIR``: a policy trained by ``causalplay train`` (needs the ``rl`` extra), as a benchmark agent.

Knows: what its training run saw -- the announced count, the padded history and its last belief (the
``"history"`` observation, which this agent asks the runner for through :attr:`RLAgent.obs_mode`), plus the
exact posterior under the task's rules when trained with ``--belief-input`` (``--belief-tracker``: also excluding
the guesses the env rejected, which it tracks over the episode). Its benchmark row is named from
the run's config (e.g. ``ppo-ff``; ``causalplay train --name`` sets it).
"""

from __future__ import annotations

import torch

from .base import Agent, TaskInfo

__all__ = ["RLAgent"]


class RLAgent(Agent):
    """Plays the deterministic policy of a ``causalplay train`` folder.

    Parameters
    ----------
    seed : int
        Unused (the policy is deterministic); kept for the agent protocol.
    path : str
        The training output folder (``--out`` of ``causalplay train``).
    which : {"best", "last"}
        Checkpoint to load.
    name : str, optional
        The benchmark row name (default: the run's config name, e.g. ``ppo-ff``); give one per checkpoint when
        several runs share a config name (``rl:path=runs/rl/ppo-s1:name=ppo-ff-s1``).
    policy : causalplay.rl.train.Policy, optional
        An in-memory policy instead of ``path`` (used by training's own evaluation).
    """

    name = "rl"
    #: the observation mode the runner must build the task with
    obs_mode = "history"

    def __init__(self, seed: int = 0, path: str | None = None, which: str = "best", name: str | None = None,
                 policy=None):
        super().__init__(seed)
        if (path is None) == (policy is None):
            raise ValueError("the rl agent needs path=DIR (a `causalplay train` output folder), e.g. "
                             "rl:path=runs/rl/ppo-ff")
        if policy is None:
            if not isinstance(path, str):
                raise TypeError(f"rl agent: path must be a folder name, got {path!r}")
            from causalplay.rl.train import load_policy

            policy = load_policy(path, which)
        self.policy = policy
        if getattr(policy.config, "pixels", False):  # trained on rendered panels: plays the pixel batch
            self.obs_mode, self.reads_pixels = None, True
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"rl agent: name must be a non-empty string, got {name!r}")
        self.label = name or policy.config.name

    def reset(self, task: TaskInfo, obs: torch.Tensor) -> None:
        if getattr(self, "reads_pixels", False):
            return self._reset_pixels(task, obs)
        from causalplay.rl.features import FeatureMap

        super().reset(task, obs)
        cfg = self.policy.config
        self.features = FeatureMap.for_task(task, belief=cfg.belief_input, tracker=cfg.belief_tracker)
        self.features.reset(self.B)
        want = getattr(self.policy.model, "observation_space", None)
        n = want.shape[0] if want is not None else self.policy.model.obs_dim
        if self.features.size != n:
            raise ValueError(f"rl agent {self.label!r} (trained on {self.policy.config.env}) expects {n} observation "
                             f"values; this task gives {self.features.size} (another object count or horizon?)")
        self.policy.reset(self.B)

    def _reset_pixels(self, task: TaskInfo, obs: dict) -> None:
        import numpy as np

        from causalplay.rl.pixels import PixelHistory, pixel_obs_space

        if not isinstance(obs, dict) or "frame" not in obs:
            raise ValueError(f"rl agent {self.label!r} was trained on pixels ({self.policy.config.env}); play it "
                             "on a pixel id")
        super().reset(task, obs["frame"])
        want = pixel_obs_space(task.horizon, task.n_objects)
        have = getattr(self.policy.model, "observation_space", None)
        if have is not None and have != want:
            raise ValueError(f"rl agent {self.label!r} (trained on {self.policy.config.env}) expects {have}; this "
                             f"task gives {want}")
        self.hist = PixelHistory(self.B, task.horizon, task.n_objects)
        self.hist.reset_rows(np.arange(self.B), obs["count"].numpy())
        self.policy.reset(self.B)

    def _act_pixels(self, obs: dict, active: torch.Tensor) -> torch.Tensor:
        import numpy as np

        from causalplay.rl.envs import to_env_action

        rows = np.flatnonzero(active.numpy())
        self.hist.push(rows, np.full(len(rows), self.t), obs["frame"].numpy()[rows])
        self.t += 1
        a = to_env_action(self.policy.act(self.hist.obs()))
        self.hist.set_belief(np.arange(self.B), a[:, self.task.n_objects:])
        return torch.from_numpy(a)

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        if getattr(self, "reads_pixels", False):
            return self._act_pixels(obs, active)
        from causalplay.rl.envs import to_env_action

        self.t += 1
        a = self.policy.act(self.features(obs))
        return torch.from_numpy(to_env_action(a))
