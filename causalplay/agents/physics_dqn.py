"""PHYRE's DQN baseline, scaled to CPU: an image encoder and an action encoder fused by FiLM, trained to predict
whether an action solves a task from simulated attempts, then used to rank the tier's fixed action set.

Network (PHYRE's design, smaller): the initial scene rendered at 64x64 as a 7-channel one-hot image through three
stride-2 convolutions; the action through an MLP with one hidden layer of 512 units that outputs a gain and a
bias per channel (FiLM) applied before the last convolution block; global average pooling; a linear logit.
Training: cross-entropy on batches with equal numbers of solving and failing attempts, Adam, the learning rate
annealed to 0 on a half cosine. PHYRE's DQN trains a ResNet-18 on 100,000 attempts per task; this one trains on
the training pool's outcomes (:func:`causalplay.agents.physics.outcomes`: 6 tasks per template x the ranked set's
500 actions, or ``n_actions``: PHYRE ranks 10,000) for ``steps`` batches of 64. ``arch="resnet"`` swaps the small
CNN for PHYRE's architecture family, :class:`~causalplay.agents.physics_resnet.ResNetFilm` (ResNet-18's layout,
``width`` channels in its first stage), trained the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import torch
from torch import nn

from causalplay.envs.physics_templates import ACTIONS, TIERS, action_set

from .physics import POOL, MemAgent, PhysicsAgent, outcomes
from .physics_resnet import ResNetFilm, balanced_batch, scene_images

__all__ = ["PhysicsNet", "train_dqn", "DqnAgent", "DqnOAgent", "images", "ARCHS"]

RES = 64
STEPS = 300
#: the networks :func:`train_dqn` trains, each with its learning rate (the ResNet's is the one its learning curve,
#: ``analyses/physics_dqn_resnet.py``, was measured with)
ARCHS = {"cnn": 3e-3, "resnet": 1e-3}


def images(scenes) -> torch.Tensor:
    """Scenes as one-hot float images ``[n, 7, RES, RES]`` (:func:`scene_images` at the DQN's resolution)."""
    return scene_images(scenes, RES)


class PhysicsNet(nn.Module):
    """``forward(img [n, 7, RES, RES], action [n, 3m]) -> logit [n]``; :meth:`trunk` and :meth:`head` split it so
    one scene's features are computed once when ranking many actions."""

    def __init__(self, m: int, ch: int = 32):
        super().__init__()
        self.ch = ch
        self.conv = nn.Sequential(nn.Conv2d(7, 8, 4, 2, 1), nn.ReLU(), nn.Conv2d(8, 16, 4, 2, 1), nn.ReLU(),
                                  nn.Conv2d(16, ch, 4, 2, 1), nn.ReLU())
        self.act = nn.Sequential(nn.Linear(3 * m, 512), nn.ReLU(), nn.Linear(512, 2 * ch))
        self.last = nn.Sequential(nn.Conv2d(ch, ch, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                  nn.Linear(ch, 1))

    def trunk(self, img: torch.Tensor) -> torch.Tensor:
        return self.conv(img)

    def head(self, feat: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        gain, bias = self.act(action).chunk(2, -1)
        return self.last(feat * (1 + gain[..., None, None]) + bias[..., None, None]).squeeze(-1)

    def forward(self, img: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.head(self.trunk(img), action)


def _network(arch: str, m: int, width: int) -> nn.Module:
    if arch not in ARCHS:
        raise ValueError(f"arch must be one of {sorted(ARCHS)}, got {arch!r}")
    return PhysicsNet(m) if arch == "cnn" else ResNetFilm(m, width)


def train_dqn(tier: str, keys, out: str | Path, seed: int = 0, steps: int = STEPS, batch: int = 64,
              lr: float | None = None, cache: str = "runs/physics", n_actions: int = ACTIONS,
              pool: int | None = POOL, arch: str = "cnn", width: int = 16) -> nn.Module:
    """Train on the outcomes of the training pool (``keys`` with task index below ``pool``; ``None``: all of
    ``keys``) on the tier's first ``n_actions`` fixed actions; writes ``out/config.json`` and ``out/model.pt``
    (atomically: workers training the same network at once never read half a file), read instead of retrained when
    present. ``arch`` is ``"cnn"`` (:class:`PhysicsNet`) or ``"resnet"`` (:class:`ResNetFilm` with ``width``);
    ``lr`` defaults to the arch's entry in :data:`ARCHS`. ``seed`` fixes the initial weights and the batches; the
    caller's torch generator is left as it was."""
    out = Path(out)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = _network(arch, TIERS[tier], width)
    lr = ARCHS[arch] if lr is None else lr
    if (out / "model.pt").exists():
        net.load_state_dict(torch.load(out / "model.pt"))
        return net.eval()
    tasks, o = outcomes(tier, keys, cache, n_actions=n_actions, pool=pool)
    imgs = images([t.scene for t in tasks])
    acts = torch.as_tensor(action_set(tier, n_actions), dtype=torch.float32)
    pos, neg = np.argwhere(o == 1), np.argwhere(o == 0)
    gen = np.random.default_rng(seed)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    net.train()
    for _ in range(steps if len(pos) and len(neg) else 0):  # no solving (or no failing) attempt: nothing to fit
        pick = balanced_batch(gen, pos, neg, batch // 2, batch // 2)
        y = torch.as_tensor(o[pick[:, 0], pick[:, 1]] == 1, dtype=torch.float32)
        loss = nn.functional.binary_cross_entropy_with_logits(net(imgs[pick[:, 0]], acts[pick[:, 1]]), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps({"tier": tier, "seed": seed, "steps": steps, "batch": batch,
                                                 "lr": lr, "tasks": len(tasks), "n_actions": n_actions,
                                                 "pool": pool, "arch": arch,
                                                 **({"width": width} if arch == "resnet" else {}),
                                                 "positives": int(len(pos)),
                                                 "final_loss": loss.item() if len(pos) and len(neg) else None}))
    tmp = out / f".model.{os.getpid()}.tmp"
    torch.save(net.state_dict(), tmp)
    os.replace(tmp, out / "model.pt")
    return net.eval()


class DqnAgent(MemAgent):
    """DQN: ranks the fixed action set (its first ``n_actions``, on whose outcomes on the training pool -- the
    training tasks with task index below ``pool``, or all with ``pool=None`` -- the network is trained) by the
    network's score for the test task's initial image. The network is the small CNN (``arch="cnn"``, trained for
    ``steps`` batches of 64) or PHYRE's ResNet-18 family (``arch="resnet"``, first-stage channels ``width``).

    Knows: the training tasks and the simulator (training only: the network is fit to simulated attempts);
    at test time only the initial image (rendered from the observation's object list).
    """

    name = "dqn"

    def __init__(self, seed: int = 0, steps: int = STEPS, updates: int = 10, lr_online: float = 1e-3,
                 n_actions: int = ACTIONS, pool: int | None = POOL, replay: int = 0, arch: str = "cnn",
                 width: int = 16):
        super().__init__(seed, n_actions=n_actions, pool=pool)
        if arch not in ARCHS:
            raise ValueError(f"{self.name}'s arch must be one of {sorted(ARCHS)} (the small CNN or PHYRE's ResNet-18 "
                             f"family), got {arch!r}")
        if isinstance(width, bool) or not isinstance(width, int | np.integer) or width < 1:
            raise ValueError(f"{self.name}'s width must be an integer >= 1 (the ResNet's first-stage channels), "
                             f"got {width!r}")
        if arch == "cnn" and width != 16:
            raise ValueError(f"{self.name}'s width={width!r} sets the ResNet's channels; it needs arch='resnet'")
        if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 1:
            raise ValueError(f"{self.name}'s steps must be an integer >= 1 (training batches), got {steps!r}")
        self.arch, self.width = arch, int(width)
        if isinstance(replay, bool) or not isinstance(replay, int | np.integer) or replay < 0 or replay % 2:
            raise ValueError(f"{self.name}'s replay must be an even integer >= 0 (training examples, half solving and "
                             f"half failing, in each online update; 0: none), got {replay!r}")
        if replay and not self.online:
            raise ValueError(f"replay={replay!r} mixes training examples into online updates, which {self.name} does "
                             "not make; use dqn-o")
        if isinstance(updates, bool) or not isinstance(updates, int | np.integer) or updates < 0:
            raise ValueError(f"{self.name}'s updates must be an integer >= 0 (gradient steps after each test task; "
                             f"0: none, the offline DQN's plays), got {updates!r}")
        if isinstance(lr_online, bool) or not isinstance(lr_online, int | float | np.floating) or not lr_online > 0:
            raise ValueError(f"{self.name}'s lr_online must be a number > 0 (the online steps' Adam rate), "
                             f"got {lr_online!r}")
        self.steps, self.updates, self.lr_online, self.replay = steps, int(updates), float(lr_online), int(replay)

    def train(self, tier, keys, setting, cache="runs/physics"):
        PhysicsAgent.train(self, tier, keys, setting, cache)
        self.actions = action_set(tier, self.n_actions)
        digest = hashlib.sha256(",".join(sorted(keys)).encode()).hexdigest()[:12]
        # the default networks (small CNN, 300 batches, 500 actions, pool 6) keep their path
        size = ("" if self.n_actions == ACTIONS else f"-a{self.n_actions}") + (
            "" if self.pool == POOL else f"-p{'all' if self.pool is None else self.pool}") + (
            "" if self.arch == "cnn" else f"-resnet{self.width}") + ("" if self.steps == STEPS else f"-n{self.steps}")
        self.net = train_dqn(tier, keys, Path(cache) / "dqn" / f"{tier}-{digest}-s{self.seed}{size}", self.seed,
                             self.steps, cache=cache, n_actions=self.n_actions, pool=self.pool, arch=self.arch,
                             width=self.width)
        self.acts_t = torch.as_tensor(self.actions, dtype=torch.float32)
        if self.online:
            self.opt = torch.optim.Adam(self.net.parameters(), lr=self.lr_online)
        if self.online and self.replay and self.updates:  # the training pool's examples, mixed into each update
            tasks, self.train_o = outcomes(tier, keys, cache, n_actions=self.n_actions, pool=self.pool)
            with torch.no_grad():
                self.train_feat = self.net.trunk(images([t.scene for t in tasks]))
            self.train_pos, self.train_neg = np.argwhere(self.train_o == 1), np.argwhere(self.train_o == 0)
            self.replay_rng = np.random.default_rng([self.seed, 4099])  # its own stream: the plays' stay as they were

    def ranks(self):
        self.imgs = images(self.scenes)
        with torch.no_grad():
            return [torch.argsort(-self.net.head(f[None].expand(len(self.acts_t), -1, -1, -1), self.acts_t),
                                  stable=True).numpy() for f in self.net.trunk(self.imgs)]

    def finish(self):
        if not self.online or not self.updates:  # no steps to take: the trunk features would go unused
            return
        for b, tried in enumerate(self.done_idx):
            if not tried:
                continue
            idx = torch.tensor([i for i, _ in tried])
            y = torch.tensor([float(s) for _, s in tried])
            with torch.no_grad():  # online steps adapt the fusion and head; the image trunk stays as trained
                feat = self.net.trunk(self.imgs[b:b + 1]).expand(len(idx), -1, -1, -1)
            # the network stays in eval mode: the ResNet's batch norms keep their training statistics (one task's
            # attempts share one image, so batch statistics would be one scene's); the CNN has no such layers
            for _ in range(self.updates):
                loss = nn.functional.binary_cross_entropy_with_logits(self.net.head(feat, self.acts_t[idx]), y)
                if self.replay and len(self.train_pos) and len(self.train_neg):
                    loss = loss + self._replay_loss()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()

    def _replay_loss(self) -> torch.Tensor:
        """Cross-entropy on ``replay`` training examples, half solving and half failing (as in training)."""
        half = self.replay // 2
        pick = balanced_batch(self.replay_rng, self.train_pos, self.train_neg, half, half)
        y = torch.as_tensor(self.train_o[pick[:, 0], pick[:, 1]] == 1, dtype=torch.float32)
        return nn.functional.binary_cross_entropy_with_logits(
            self.net.head(self.train_feat[pick[:, 0]], self.acts_t[pick[:, 1]]), y)


class DqnOAgent(DqnAgent):
    """DQN-O: DQN, plus ``updates`` gradient steps (learning rate ``lr_online``) of the fusion and head layers on
    each finished test task's attempts; the next task is played with the updated network. Knows what DQN knows
    and the outcomes of its own test attempts. With ``replay > 0`` each step's loss adds the cross-entropy of that
    many training examples (half solving, half failing), as PHYRE's online agents use examples from training and
    testing together; with the default 0 the steps see the test task's attempts alone, which drifts the network
    from what training taught it (docs/physics.md measures both)."""

    name, online = "dqn-o", True
