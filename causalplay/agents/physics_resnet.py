"""PHYRE's DQN architecture family: a ResNet-18 image encoder fused with the action, trained on simulated attempts,
with a learning curve (AUCCESS of its ranking on held-out tasks against training attempts).

The network is written in plain torch (ResNet-18's layout: a 7x7 stride-2 stem, max-pool, four stages of two
basic blocks with ``width, 2 width, 4 width, 8 width`` channels, global average pooling). The action goes through
an MLP that outputs a gain and a bias per channel (FiLM) applied to the input of the last stage, so one scene's
first three stages are computed once when ranking many actions. ``width=64`` and ``res=256`` are PHYRE's size;
the defaults are smaller so that it trains on a CPU, and ``device="cuda"`` runs the same code on a GPU.

:func:`train_curve` trains on the outcomes of the fixed action set on training tasks (the same data as
:func:`causalplay.agents.physics_dqn.train_dqn`) and, every ``eval_every`` batches, ranks the action set on the
held-out tasks; a task's ``solved_at`` is the rank of the first solving action among the valid ones (invalid
actions do not count, as in the benchmark), so the curve's AUCCESS is what the ranking would score there.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from torch import nn

from causalplay.core.metrics import auccess
from causalplay.envs.physics_sim import render

__all__ = ["ResNetFilm", "balanced_batch", "scene_images", "solved_at_of_ranking", "train_curve"]


class _Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.skip = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                     if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(self.b2(self.c2(y)) + self.skip(x))


class ResNetFilm(nn.Module):
    """``forward(img [n, 7, R, R], action [n, 3m]) -> logit [n]``: ResNet-18 (``width`` channels in the first
    stage) with the action fused by FiLM before the last stage; :meth:`trunk` / :meth:`head` split it there."""

    def __init__(self, m: int, width: int = 16):
        super().__init__()
        if width < 1 or m < 1:
            raise ValueError(f"need m >= 1 and width >= 1, got m={m!r}, width={width!r}")
        w = [width, 2 * width, 4 * width, 8 * width]
        self.stem = nn.Sequential(nn.Conv2d(7, w[0], 7, 2, 3, bias=False), nn.BatchNorm2d(w[0]), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))

        def stage(cin, cout, stride):
            return nn.Sequential(_Block(cin, cout, stride), _Block(cout, cout, 1))

        self.stages = nn.Sequential(stage(w[0], w[0], 1), stage(w[0], w[1], 2), stage(w[1], w[2], 2))
        self.last = stage(w[2], w[3], 2)
        self.act = nn.Sequential(nn.Linear(3 * m, 256), nn.ReLU(), nn.Linear(256, 2 * w[2]))
        self.out = nn.Linear(w[3], 1)

    def trunk(self, img: torch.Tensor) -> torch.Tensor:
        return self.stages(self.stem(img))

    def head(self, feat: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        gain, bias = self.act(action).chunk(2, -1)
        x = self.last(feat * (1 + gain[..., None, None]) + bias[..., None, None])
        return self.out(x.mean((2, 3))).squeeze(-1)

    def forward(self, img: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.head(self.trunk(img), action)


def scene_images(scenes, res: int) -> torch.Tensor:
    """Scenes as one-hot float images ``[n, 7, res, res]``."""
    idx = torch.from_numpy(np.stack([render(s, res=res) for s in scenes]).astype(np.int64))
    return nn.functional.one_hot(idx, 7).permute(0, 3, 1, 2).float()


def solved_at_of_ranking(order: np.ndarray, outcome: np.ndarray, budget: int = 100) -> int:
    """The attempt (1-based, valid attempts only) at which playing actions in ``order`` first solves a task whose
    outcomes on the action set are ``outcome`` (1 solved, 0 not, -1 invalid); 0 when not within ``budget``."""
    o = outcome[order]
    valid = o[o >= 0][:budget]
    hit = np.flatnonzero(valid == 1)
    return int(hit[0]) + 1 if len(hit) else 0


def _rank_all(net: ResNetFilm, imgs: torch.Tensor, acts: torch.Tensor, chunk: int = 250) -> list[np.ndarray]:
    net.eval()
    out = []
    with torch.no_grad():
        for f in net.trunk(imgs):
            s = torch.cat([net.head(f[None].expand(len(a), -1, -1, -1), a) for a in acts.split(chunk)])
            out.append(torch.argsort(-s.cpu(), stable=True).numpy())
    net.train()
    return out


def balanced_batch(gen: np.random.Generator, pos: np.ndarray, neg: np.ndarray, n_pos: int,
                   n_neg: int) -> np.ndarray:
    """``[n_pos + n_neg, 2]`` rows drawn with replacement, the first ``n_pos`` from ``pos`` and the rest from
    ``neg`` (``(task, action)`` index pairs of solving and failing attempts): the balanced batches every DQN
    trains on, whose outcomes are mostly failures. ``pos`` is drawn from ``gen`` first."""
    for rows, n, what in ((pos, n_pos, "solving"), (neg, n_neg, "failing")):
        if n and not len(rows):
            raise ValueError(f"balanced_batch asked for {n} {what} attempts, but there are none to draw from")
    return np.concatenate([pos[gen.integers(0, len(pos), n_pos)], neg[gen.integers(0, len(neg), n_neg)]])


def train_curve(scenes: list[np.ndarray], outcomes: np.ndarray, actions: np.ndarray, held_out: np.ndarray,
                out: str | Path, m: int, seed: int = 0, steps: int = 200, batch: int = 32, res: int = 64,
                width: int = 16, lr: float = 1e-3, eval_every: int = 50, device: str = "cpu") -> ResNetFilm:
    """Train :class:`ResNetFilm` on balanced batches of ``(task, action)`` outcomes of the tasks not in
    ``held_out`` (bool ``[n_tasks]``) and write ``out/curve.csv`` (``batches, attempts, loss, auccess``: AUCCESS %
    of the ranking on the held-out tasks, every ``eval_every`` batches and at the end) and ``out/config.json``.
    ``seed`` fixes the initial weights and the batches; ``device`` is a torch device (``"cuda"`` on a GPU)."""
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but torch sees no CUDA device")
    held_out = np.asarray(held_out, dtype=bool)
    if held_out.shape != (len(scenes),) or not held_out.any() or held_out.all():
        raise ValueError("held_out must be a bool mask over the tasks with at least one task on each side")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    gen = np.random.default_rng(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = ResNetFilm(m, width).to(device)
    imgs = scene_images(scenes, res).to(device)
    acts = torch.as_tensor(actions, dtype=torch.float32, device=device)
    train_o = np.where(held_out[:, None], -1, outcomes)
    pos, neg = np.argwhere(train_o == 1), np.argwhere(train_o == 0)
    if not len(pos) or not len(neg):
        raise ValueError("the training tasks need at least one solving and one failing attempt")
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    test = np.flatnonzero(held_out)
    rows, loss = [], float("nan")

    def evaluate(b: int) -> None:
        ranks = _rank_all(net, imgs[test], acts)
        s = np.array([solved_at_of_ranking(r, outcomes[t]) for r, t in zip(ranks, test, strict=True)])
        rows.append({"batches": b, "attempts": b * batch, "loss": loss, "auccess": 100 * auccess(s, 0, 100)})
        (out / "curve.csv").write_text("batches,attempts,loss,auccess\n" + "".join(
            f"{r['batches']},{r['attempts']},{r['loss']:.5f},{r['auccess']:.3f}\n" for r in rows))

    net.train()
    for b in range(1, steps + 1):
        pick = balanced_batch(gen, pos, neg, batch // 2, batch - batch // 2)
        y = torch.as_tensor(outcomes[pick[:, 0], pick[:, 1]] == 1, dtype=torch.float32, device=device)
        l_ = nn.functional.binary_cross_entropy_with_logits(net(imgs[pick[:, 0]], acts[pick[:, 1]]), y)
        opt.zero_grad()
        l_.backward()
        opt.step()
        loss = float(l_.detach())
        if b % eval_every == 0 or b == steps:
            evaluate(b)
    (out / "config.json").write_text(json.dumps({"m": m, "seed": seed, "steps": steps, "batch": batch, "res": res,
                                                 "width": width, "lr": lr, "device": device,
                                                 "train_tasks": int((~held_out).sum()),
                                                 "held_out_tasks": int(held_out.sum()),
                                                 "positives": int(len(pos))}))
    return net.eval()
