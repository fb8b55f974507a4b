"""``rl:path=DIR``: a policy trained by ``causalplay train`` (needs the ``rl`` extra), as a benchmark agent.

Knows: what its training run saw -- the announced count, the padded history and its last belief (the
``"history"`` observation, which this agent asks the runner for through :attr:`RLAgent.obs_mode`), plus the
exact posterior under the task's rules when trained with ``--belief-input`` (``--belief-tracker``: also excluding
the guesses the env rejected, which it tracks over the episode). Its benchmark row is named from the run's config
(e.g. ``ppo-ff``; ``causalplay train --name`` sets it).

Everything needed to load and play a run lives here and in :mod:`causalplay.agents.rl_features` (the config, the
checkpoint, the features, the action rescaling, the pixel history); ``causalplay.rl`` only trains.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .base import Agent, BlicketInfo

__all__ = ["RLAgent", "RunInfo", "Policy", "read_run", "load_policy", "load_model", "sb3_class"]


@dataclass(frozen=True)
class RunInfo:
    """What a ``causalplay train`` folder's ``config.json`` tells a player of its policy."""

    agent: str
    env: str
    name: str
    recurrent: bool = False
    belief_input: bool = False
    belief_tracker: bool = False

    @property
    def pixels(self) -> bool:
        """Whether the run trained on rendered panels (a pixel id)."""
        from causalplay.envs.pixels import PIXEL_IDS

        return self.env in PIXEL_IDS

    @property
    def stateful(self) -> bool:
        """sb3-contrib's RecurrentPPO keeps LSTM state across steps (the ``--recurrent`` policies are stateless)."""
        return self.agent == "recurrent-ppo"


def read_run(path: str | Path) -> RunInfo:
    """The :class:`RunInfo` of a training folder (``FileNotFoundError`` naming it if it is not one)."""
    p = Path(path)
    if not p.is_dir():
        raise FileNotFoundError(f"RL checkpoint folder {str(path)!r} does not exist")
    f = p / "config.json"
    if not f.is_file():
        raise FileNotFoundError(f"{str(path)!r} holds no config.json: not a `causalplay train` output folder")
    d = json.loads(f.read_text())
    return RunInfo(**{k: d[k] for k in RunInfo.__dataclass_fields__ if k in d})


def sb3_class(agent: str):
    """The Stable-Baselines3 (or sb3-contrib) class of ``--agent``."""
    if agent == "recurrent-ppo":
        from sb3_contrib import RecurrentPPO

        return RecurrentPPO
    from stable_baselines3 import DDPG, PPO, TD3

    if agent not in ("ppo", "td3", "ddpg"):
        raise ValueError(f"unknown RL agent {agent!r}; expected ppo, td3, ddpg or recurrent-ppo")
    return {"ppo": PPO, "td3": TD3, "ddpg": DDPG}[agent]


class Policy:
    """A trained model acting deterministically on learner features; actions in ``[-1, 1]``.

    A stateful model (RecurrentPPO) keeps its LSTM state across :meth:`act` calls from :meth:`reset` on.
    """

    def __init__(self, model, info: RunInfo):
        self.model, self.config = model, info

    def reset(self, batch_size: int) -> None:
        self.state, self.start = None, np.ones(batch_size, dtype=bool)

    def act(self, features) -> np.ndarray:
        if self.config.stateful:
            a, self.state = self.model.predict(features, state=self.state, episode_start=self.start,
                                               deterministic=True)
            self.start = np.zeros_like(self.start)
        else:
            a, _ = self.model.predict(features, deterministic=True)
        return np.asarray(a, dtype=np.float32)


def load_policy(path: str | Path, which: str = "best", device: str = "cpu") -> Policy:
    """The policy saved in a ``causalplay train`` folder (``which``: ``"best"`` or ``"last"``), its tensors mapped
    to ``device`` (a checkpoint trained on a GPU loads on a CPU-only machine). Training-only state (the exploration
    noise) is not restored, so playing needs nothing from ``causalplay.rl``."""
    if which not in ("best", "last"):
        raise ValueError(f"which must be 'best' or 'last', got {which!r}")
    info = read_run(path)
    ckpt = Path(path) / f"{which}.zip"
    if not ckpt.is_file():
        raise FileNotFoundError(f"{str(path)!r} has no {ckpt.name} checkpoint yet (training writes it at the first "
                                "evaluation)")
    return Policy(load_model(info.agent, ckpt, device=device, custom_objects={"action_noise": None}), info)


def load_model(agent: str, path: str | Path, **kwargs):
    """``sb3_class(agent).load(path, **kwargs)``, quiet about the n-step replay buffer the model already records
    (SB3 warns that its ``n_steps`` argument is ignored when the class is set, which it is after a save)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`n_steps=\d+` is ignored")
        return sb3_class(agent).load(path, **kwargs)


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
    policy : Policy, optional
        An in-memory policy instead of ``path`` (used by training's own evaluation).
    """

    name = "rl"
    #: the observation mode the runner must build the task with
    obs_mode = "history"

    def __init__(self, seed: int = 0, path: str | None = None, which: str = "best", name: str | None = None,
                 policy: Policy | None = None):
        super().__init__(seed)
        if (path is None) == (policy is None):
            raise ValueError("the rl agent needs path=DIR (a `causalplay train` output folder), e.g. "
                             "rl:path=runs/rl/ppo-ff")
        if policy is None:
            if not isinstance(path, str):
                raise TypeError(f"rl agent: path must be a folder name, got {path!r}")
            policy = load_policy(path, which)
        self.policy = policy
        if policy.config.pixels:  # trained on rendered panels: plays the pixel batch
            self.obs_mode, self.reads_pixels = None, True
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"rl agent: name must be a non-empty string, got {name!r}")
        self.label = name or policy.config.name

    def reset(self, task: BlicketInfo, obs) -> None:
        if getattr(self, "reads_pixels", False):
            return self._reset_pixels(task, obs)
        from .rl_features import FeatureMap

        super().reset(task, obs)
        cfg = self.policy.config
        self.features = FeatureMap.for_task(task, belief=cfg.belief_input, tracker=cfg.belief_tracker)
        self.features.reset(self.B)
        n = self.policy.model.observation_space.shape[0]
        if self.features.size != n:
            raise ValueError(f"rl agent {self.label!r} (trained on {cfg.env}) expects {n} observation values; this "
                             f"task gives {self.features.size} (another object count or horizon?)")
        self.policy.reset(self.B)

    def _reset_pixels(self, task: BlicketInfo, obs: dict) -> None:
        from .rl_features import PixelHistory, pixel_obs_space

        if not isinstance(obs, dict) or "frame" not in obs:
            raise ValueError(f"rl agent {self.label!r} was trained on pixels ({self.policy.config.env}); play it "
                             "on a pixel id")
        super().reset(task, obs["frame"])
        want, have = pixel_obs_space(task.horizon, task.n_objects), self.policy.model.observation_space
        if have != want:
            raise ValueError(f"rl agent {self.label!r} (trained on {self.policy.config.env}) expects {have}; this "
                             f"task gives {want}")
        self.hist = PixelHistory(self.B, task.horizon, task.n_objects)
        self.hist.reset_rows(np.arange(self.B), obs["count"].numpy())
        self.policy.reset(self.B)

    def act(self, obs, active: torch.Tensor) -> torch.Tensor:
        from .rl_features import to_env_action

        if getattr(self, "reads_pixels", False):
            rows = np.flatnonzero(active.numpy())
            self.hist.push(rows, np.full(len(rows), self.t), obs["frame"].numpy()[rows])
            self.t += 1
            a = to_env_action(self.policy.act(self.hist.obs()))
            self.hist.set_belief(np.arange(self.B), a[:, self.task.n_objects:])
            return torch.from_numpy(a)
        self.t += 1
        return torch.from_numpy(to_env_action(self.policy.act(self.features(obs))))
