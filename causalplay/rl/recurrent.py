"""Recurrent TD3 and DDPG (SB3 has neither): LSTM actor and critics trained on whole episodes.

Why our own small module rather than TorchRL: Blicket episodes are at most ``T`` (10) steps, so the replay
buffer can hold **whole episodes** padded to ``T`` and every update unrolls the LSTMs from the episode's first
step -- no stored hidden states, no burn-in, no sequence slicing, which is most of what a general recurrent
off-policy library is for. That keeps the algorithm in ~300 readable lines on torch alone, with the same
``learn`` / ``predict`` / ``save`` / ``load`` surface as SB3's models, and deterministic on CPU for a seed,
without pinning TorchRL and an older tensordict in the ``rl`` extra.

Architecture (after the EST paper's recurrent agents): an MLP encoder, an LSTM over the observation stream,
then an MLP head -- for the actor (``tanh`` action in ``[-1, 1]``) and for each critic (the head also takes the
action). TD3: twin critics, target-policy smoothing (``policy_noise``, ``noise_clip``) and delayed actor
updates (``policy_delay``); DDPG: one critic, no smoothing, ``policy_delay = 1``. Exploration: Gaussian noise
``action_noise`` on the actor's action, uniform random actions for the first ``learning_starts`` steps.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

__all__ = ["RecurrentTD3", "RecurrentConfig", "EpisodeBuffer"]


@dataclass
class RecurrentConfig:
    """Hyper-parameters of :class:`RecurrentTD3` (``algo`` is ``"td3"`` or ``"ddpg"``)."""

    algo: str = "td3"
    hidden: int = 256
    lstm: int = 128
    lr: float = 3e-4
    gamma: float = 0.99
    tau: float = 0.005
    batch_episodes: int = 64
    buffer_episodes: int = 20_000
    learning_starts: int = 5_000
    gradient_steps: int = 1
    action_noise: float = 0.1
    policy_noise: float = 0.2
    noise_clip: float = 0.5
    policy_delay: int = 2


class _Recurrent(nn.Module):
    """MLP encoder -> LSTM -> MLP head; ``forward(obs [b, L, D], extra [b, L, k] | None) -> [b, L, out]``."""

    def __init__(self, n_in: int, n_out: int, hidden: int, lstm: int, n_extra: int = 0, tanh: bool = False):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU())
        self.lstm = nn.LSTM(hidden, lstm, batch_first=True)
        self.head = nn.Sequential(nn.Linear(lstm + n_extra, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                  nn.Linear(hidden, n_out))
        self.tanh = tanh

    def forward(self, obs: torch.Tensor, extra: torch.Tensor | None = None, state=None):
        h, state = self.lstm(self.enc(obs), state)
        if extra is not None:
            h = torch.cat([h, extra], -1)
        out = self.head(h)
        return (torch.tanh(out) if self.tanh else out), state


class EpisodeBuffer:
    """Ring buffer of whole episodes: ``obs [E, T + 1, D]`` (the last valid entry is the final observation),
    ``act [E, T, A]``, ``rew [E, T]``, ``end [E, T]`` (1 at the episode's last action), ``mask [E, T]``."""

    def __init__(self, capacity: int, horizon: int, obs_dim: int, act_dim: int):
        self.capacity, self.T = int(capacity), int(horizon)
        self.obs = np.zeros((capacity, horizon + 1, obs_dim), np.float32)
        self.act = np.zeros((capacity, horizon, act_dim), np.float32)
        self.rew = np.zeros((capacity, horizon), np.float32)
        self.end = np.zeros((capacity, horizon), np.float32)
        self.mask = np.zeros((capacity, horizon), np.float32)
        self.pos = self.size = 0

    def add(self, obs: np.ndarray, act: np.ndarray, rew: np.ndarray) -> None:
        """One episode: ``obs [L + 1, D]``, ``act [L, A]``, ``rew [L]`` with ``L <= T``."""
        L, i = len(act), self.pos
        if not 1 <= L <= self.T or len(obs) != L + 1 or len(rew) != L:
            raise ValueError(f"episode of {L} actions does not fit horizon {self.T} (obs {len(obs)}, rew {len(rew)})")
        for arr in (self.obs, self.act, self.rew, self.end, self.mask):
            arr[i] = 0
        self.obs[i, :L + 1], self.act[i, :L], self.rew[i, :L] = obs, act, rew
        self.end[i, L - 1] = 1.0
        self.mask[i, :L] = 1.0
        self.pos = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, n: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
        idx = torch.randint(self.size, (n,), generator=gen).numpy()
        return {k: torch.from_numpy(getattr(self, k)[idx]) for k in ("obs", "act", "rew", "end", "mask")}

    def state_dict(self) -> dict:
        return {"obs": self.obs, "act": self.act, "rew": self.rew, "end": self.end, "mask": self.mask,
                "pos": np.array(self.pos), "size": np.array(self.size)}

    def load_state_dict(self, d) -> None:
        for k in ("obs", "act", "rew", "end", "mask"):
            getattr(self, k)[:] = d[k]
        self.pos, self.size = int(d["pos"]), int(d["size"])


class RecurrentTD3:
    """Recurrent TD3 / DDPG on an :class:`causalplay.rl.envs.RLVecEnv` (see the module docstring).

    Parameters
    ----------
    env : RLVecEnv or None
        The training env (``None`` for a policy loaded only to act).
    config : RecurrentConfig
    seed : int
        Seeds the networks' initialisation, exploration noise and replay sampling.
    obs_dim, act_dim, horizon : int, optional
        Needed when ``env`` is None.
    """

    def __init__(self, env, config: RecurrentConfig, seed: int = 0, obs_dim: int | None = None,
                 act_dim: int | None = None, horizon: int | None = None):
        if config.algo not in ("td3", "ddpg"):
            raise ValueError(f"algo must be 'td3' or 'ddpg', got {config.algo!r}")
        self.env, self.cfg, self.seed = env, config, int(seed)
        if env is not None:
            obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
            horizon = env.horizon
        self.obs_dim, self.act_dim, self.T = int(obs_dim), int(act_dim), int(horizon)
        torch.manual_seed(self.seed)
        c = config
        self.actor = _Recurrent(self.obs_dim, self.act_dim, c.hidden, c.lstm, tanh=True)
        n_critics = 2 if c.algo == "td3" else 1
        self.critics = nn.ModuleList(_Recurrent(self.obs_dim, 1, c.hidden, c.lstm, n_extra=self.act_dim)
                                     for _ in range(n_critics))
        self.actor_targ, self.critics_targ = copy.deepcopy(self.actor), copy.deepcopy(self.critics)
        for p in (*self.actor_targ.parameters(), *self.critics_targ.parameters()):
            p.requires_grad_(False)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=c.lr)
        self.critic_opt = torch.optim.Adam(self.critics.parameters(), lr=c.lr)
        self.gen = torch.Generator().manual_seed(self.seed + 1)
        self.buffer = EpisodeBuffer(c.buffer_episodes, self.T, self.obs_dim, self.act_dim)
        self.num_timesteps = 0
        self.n_updates = 0
        self._last_obs = None

    # -- acting ------------------------------------------------------------------------------------------
    @torch.no_grad()
    def predict(self, obs: np.ndarray, state=None, episode_start: np.ndarray | None = None,
                deterministic: bool = True):
        """Actions ``[B, A]`` in ``[-1, 1]`` for one step of ``B`` episodes and the new LSTM state (SB3's
        recurrent ``predict`` signature; ``episode_start`` rows start from a zero state)."""
        o = torch.as_tensor(np.asarray(obs, dtype=np.float32))[:, None]
        if state is not None and episode_start is not None:
            keep = torch.as_tensor(~np.asarray(episode_start, dtype=bool), dtype=torch.float32)[None, :, None]
            state = (state[0] * keep, state[1] * keep)
        a, state = self.actor(o, state=state)
        a = a[:, 0]
        if not deterministic:
            a = (a + self.cfg.action_noise * torch.randn(a.shape, generator=self.gen)).clamp(-1.0, 1.0)
        return a.numpy(), state

    # -- learning ----------------------------------------------------------------------------------------
    def learn(self, total_timesteps: int, callback: Callable[[int], None] | None = None,
              reset_num_timesteps: bool = False) -> RecurrentTD3:
        """Collect ``total_timesteps`` more env steps (``num_envs`` per vector step), updating after each."""
        env, B, c = self.env, self.env.num_envs, self.cfg
        if reset_num_timesteps:
            self.num_timesteps = 0
        if self._last_obs is None:
            self._last_obs = env.reset()
            self._ep_obs = [[o] for o in self._last_obs]
            self._ep_act: list[list] = [[] for _ in range(B)]
            self._ep_rew: list[list] = [[] for _ in range(B)]
            self._state = None
            self._starts = np.ones(B, dtype=bool)
        target = self.num_timesteps + int(total_timesteps)
        while self.num_timesteps < target:
            if self.num_timesteps < c.learning_starts:
                action = torch.rand((B, self.act_dim), generator=self.gen).numpy() * 2.0 - 1.0
                _, self._state = self.predict(self._last_obs, self._state, self._starts)  # keep the state in step
            else:
                action, self._state = self.predict(self._last_obs, self._state, self._starts, deterministic=False)
            obs, reward, done, infos = env.step(action.astype(np.float32))
            for i in range(B):
                self._ep_act[i].append(action[i])
                self._ep_rew[i].append(reward[i])
                if done[i]:
                    self._ep_obs[i].append(infos[i]["terminal_observation"])
                    self.buffer.add(np.stack(self._ep_obs[i]), np.stack(self._ep_act[i]), np.asarray(self._ep_rew[i]))
                    self._ep_obs[i], self._ep_act[i], self._ep_rew[i] = [obs[i]], [], []
                else:
                    self._ep_obs[i].append(obs[i])
            self._starts = done.astype(bool)
            self._last_obs = obs
            self.num_timesteps += B
            if self.num_timesteps >= c.learning_starts and self.buffer.size > 0:
                for _ in range(c.gradient_steps):
                    self.train_step()
            if callback is not None:
                callback(self.num_timesteps)
        return self

    def train_step(self) -> None:
        """One critic update (and, every ``policy_delay`` updates, one actor update and target update)."""
        c = self.cfg
        b = self.buffer.sample(c.batch_episodes, self.gen)
        obs, act, rew, end, mask = b["obs"], b["act"], b["rew"], b["end"], b["mask"]
        T = self.T
        with torch.no_grad():
            a_next, _ = self.actor_targ(obs)
            a_next = a_next[:, 1:]
            if c.algo == "td3":
                noise = (torch.randn(a_next.shape, generator=self.gen) * c.policy_noise).clamp(-c.noise_clip,
                                                                                                c.noise_clip)
                a_next = (a_next + noise).clamp(-1.0, 1.0)
            # the critic's LSTM reads observations 0..T; Q(o_{t+1}, a_{t+1}) uses its output at t + 1
            pad = torch.cat([a_next[:, :1] * 0, a_next], 1)
            q_next = torch.stack([q(obs, pad)[0][:, 1:, 0] for q in self.critics_targ]).min(0).values
            y = rew + c.gamma * (1.0 - end) * q_next
        act_pad = torch.cat([act, act[:, :1] * 0], 1)
        n = mask.sum()
        loss = sum((((q(obs, act_pad)[0][:, :T, 0] - y) ** 2) * mask).sum() / n for q in self.critics)
        self.critic_opt.zero_grad()
        loss.backward()
        self.critic_opt.step()
        self.n_updates += 1
        if self.n_updates % c.policy_delay == 0:
            a, _ = self.actor(obs)
            q1 = self.critics[0](obs, torch.cat([a[:, :T], a[:, T:] * 0], 1))[0][:, :T, 0]
            actor_loss = -(q1 * mask).sum() / n
            self.actor_opt.zero_grad()
            actor_loss.backward()
            self.actor_opt.step()
            with torch.no_grad():
                for net, targ in ((self.actor, self.actor_targ), (self.critics, self.critics_targ)):
                    for p, pt in zip(net.parameters(), targ.parameters(), strict=True):
                        pt.mul_(1.0 - c.tau).add_(p, alpha=c.tau)

    # -- checkpoints -------------------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Networks, optimisers and counters in ``path`` (a ``.pt`` file)."""
        torch.save({"config": asdict(self.cfg), "seed": self.seed, "dims": [self.obs_dim, self.act_dim, self.T],
                    "actor": self.actor.state_dict(), "critics": self.critics.state_dict(),
                    "actor_targ": self.actor_targ.state_dict(), "critics_targ": self.critics_targ.state_dict(),
                    "actor_opt": self.actor_opt.state_dict(), "critic_opt": self.critic_opt.state_dict(),
                    "gen": self.gen.get_state(), "num_timesteps": self.num_timesteps, "n_updates": self.n_updates},
                   path)

    def save_replay_buffer(self, path: str | Path) -> None:
        np.savez(path, **self.buffer.state_dict())

    def load_replay_buffer(self, path: str | Path) -> None:
        with np.load(path) as d:
            self.buffer.load_state_dict(d)

    @classmethod
    def load(cls, path: str | Path, env=None) -> RecurrentTD3:
        """A model saved by :meth:`save` (to act with ``env=None``, or to continue training on ``env``)."""
        d = torch.load(path, weights_only=False)
        obs_dim, act_dim, T = d["dims"]
        cfg = RecurrentConfig(**d["config"])
        if env is None:
            cfg.buffer_episodes = 1  # acting only: no replay memory
        model = cls(env, cfg, d["seed"], obs_dim, act_dim, T)
        if env is not None and env.observation_space.shape[0] != obs_dim:
            raise ValueError(f"checkpoint {path} expects {obs_dim} observation values, the env gives "
                             f"{env.observation_space.shape[0]}")
        for k in ("actor", "critics", "actor_targ", "critics_targ", "actor_opt", "critic_opt"):
            getattr(model, k).load_state_dict(d[k])
        model.gen.set_state(d["gen"])
        model.num_timesteps, model.n_updates = int(d["num_timesteps"]), int(d["n_updates"])
        return model

    def __repr__(self) -> str:
        return f"RecurrentTD3({json.dumps(asdict(self.cfg))})"
