"""``eig-pixels``: the exact Bayesian learner behind a perception model, playing the pixel envs.

Each rendered panel goes through :class:`causalplay.agents.perception.Perception` (on-bit and light probabilities);
the readout is the evidence of the exact learner of :class:`~causalplay.agents.bayesian.EIGAgent` (same
posterior, EIG trial choice, MAP guess and "did not end" update).

**Evidence.** When every probability of a panel is at least ``sure`` away from a coin flip (``max(p, 1 - p) >=
sure``) the rounded readout is used as the symbolic panel (hard evidence): with a perfect reader the agent is
the symbolic ``eig`` agent, decision for decision. Otherwise the panel is soft evidence, the probabilities
treated as the reader's likelihoods (a flat prior over labels)::

    L(h) = sum_{on} q(on) [ q_lit P(lit | on, h) + (1 - q_lit) P(dark | on, h) ]

over every combination of the unsure on-bits (at most ``max_unsure`` of them, the rest rounded), with ``q_lit``
kept in ``[floor, 1 - floor]``: an unsure light is a machine that may have flipped, the learner's noise.
If confident evidence ever contradicts the deterministic machine (a misread panel the learner cannot explain,
so no hypothesis is left), that episode's posterior is rebuilt from all its readouts as soft evidence with the
light flipped with probability ``floor``, so a single misread panel costs information, not the episode.
"""

from __future__ import annotations

import itertools
import os

import torch

from causalplay.core.exact import log_likelihood

from .base import TaskInfo
from .bayesian import EIGAgent

__all__ = ["EIGPixelsAgent"]


class EIGPixelsAgent(EIGAgent):
    """Exact learner reading rendered panels through a perception CNN (see the module docstring).

    Knows: the task's rule family and the announced count (told, not drawn), like ``eig``; sees only pixels.

    Parameters
    ----------
    seed : int
        Unused (deterministic); kept for the agent protocol.
    perception : str or object, optional
        Path of a ``model.pt`` from ``analyses/train_perception.py`` (default: the shipped weights), or any
        object with ``probs(frames, n_objects) -> (on [B, N], lit [B])`` probabilities.
    sure : float
        Readouts with every bit at least this sure are hard evidence (in ``(0.5, 1]``).
    floor : float
        Smallest probability given to a light reading (in ``(0, 0.5)``).
    max_unsure : int
        Most on-bits of one panel enumerated as uncertain (``>= 0``).
    """

    name = "eig-pixels"
    #: plays the pixel batch (``causalplay.envs.pixels.PixelBatch``)
    reads_pixels = True

    def __init__(self, seed: int = 0, perception=None, sure: float = 0.999, floor: float = 0.01,
                 max_unsure: int = 4, use_not_ended: bool = True):
        super().__init__(seed, use_not_ended)
        if not isinstance(sure, (int, float)) or isinstance(sure, bool) or not 0.5 < sure <= 1.0:
            raise ValueError(f"eig-pixels: sure must be a number in (0.5, 1], got {sure!r}")
        if not isinstance(floor, (int, float)) or isinstance(floor, bool) or not 0.0 < floor < 0.5:
            raise ValueError(f"eig-pixels: floor must be a number in (0, 0.5), got {floor!r}")
        if isinstance(max_unsure, bool) or not isinstance(max_unsure, int) or max_unsure < 0:
            raise ValueError(f"eig-pixels: max_unsure must be an int >= 0, got {max_unsure!r}")
        if perception is None or isinstance(perception, (str, os.PathLike)):
            from causalplay.agents.perception import Perception

            perception = Perception.load(perception)
        elif not callable(getattr(perception, "probs", None)):
            raise TypeError(f"eig-pixels: perception must be a weights path or an object with probs(frames, "
                            f"n_objects), got {type(perception).__name__}")
        self.perception = perception
        self.sure, self.floor, self.max_unsure = float(sure), float(floor), max_unsure
        self.stats = {"panels": 0, "soft": 0, "rebuilt": 0}

    def reset(self, task: TaskInfo, obs) -> None:
        if not isinstance(obs, dict) or "frame" not in obs:
            raise ValueError("eig-pixels reads rendered panels: play it on a pixel id (causalplay/IVRE-Pixels-v0, "
                             f"causalplay/EST-Pixels-v1), got a {type(obs).__name__} observation")
        super().reset(task, obs["frame"])
        self.readouts: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.soft_panels = torch.zeros(self.B, dtype=torch.long)  # per episode, for the benchmark's columns
        self.rebuilt = torch.zeros(self.B, dtype=torch.long)
        self.excluded: list[tuple[torch.Tensor, torch.Tensor]] = []

    # -- evidence ----------------------------------------------------------------------------------------------
    def _read(self, obs: dict, active: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        N = self.task.n_objects
        p_on = torch.full((self.B, N), 0.5, dtype=torch.float64)
        p_lit = torch.full((self.B,), 0.5, dtype=torch.float64)
        idx = torch.nonzero(active).flatten()
        if len(idx):
            on, lit = self.perception.probs(obs["frame"][idx], N)
            p_on[idx], p_lit[idx] = torch.as_tensor(on, dtype=torch.float64), torch.as_tensor(lit, dtype=torch.float64)
        self.stats["panels"] += len(idx)
        return p_on, p_lit

    def _soft_ll(self, p_on: torch.Tensor, p_lit: torch.Tensor, flip: float) -> torch.Tensor:
        """``[H]`` log-likelihood of one panel read as ``p_on [N]``, ``p_lit`` (see the module docstring)."""
        space = self.post.space
        q_lit = float(p_lit.clamp(flip, 1.0 - flip))
        margin = (p_on - 0.5).abs()
        unsure = [int(i) for i in torch.argsort(margin)[: self.max_unsure] if float(margin[i]) < self.sure - 0.5]
        base = p_on > 0.5
        combos, weights = [], []
        for bits in itertools.product((False, True), repeat=len(unsure)):
            on = base.clone()
            w = 1.0
            for i, b in zip(unsure, bits, strict=True):
                on[i] = b
                w *= float(p_on[i]) if b else 1.0 - float(p_on[i])
            combos.append(on)
            weights.append(w)
        trials = torch.stack(combos).to(space.dtype)  # [C, N]
        C = trials.shape[0]
        both = log_likelihood(space, trials.repeat(2, 1)[:, None, :],
                              torch.cat([torch.ones(C), torch.zeros(C)]).to(space.dtype)[:, None])  # [2C, H]
        lw = torch.log(torch.tensor(weights, dtype=torch.float64)).to(space.dtype)
        lit_part = both[:C] + lw[:, None] + torch.log(torch.tensor(q_lit, dtype=space.dtype))
        dark_part = both[C:] + lw[:, None] + torch.log(torch.tensor(1.0 - q_lit, dtype=space.dtype))
        return torch.logsumexp(torch.cat([lit_part, dark_part]), 0)

    def _rebuild(self, rows: list[int]) -> None:
        """Posterior of ``rows`` from scratch: count, every "did not end" exclusion, every readout as soft evidence
        (light flipped with probability ``floor``)."""
        mask = torch.zeros(self.B, dtype=torch.bool)
        mask[rows] = True
        self.post.reset_(mask)
        self.post.condition_count_(self.count)  # the other rows are conditioned already: unchanged
        for codes, act in self.excluded:
            self.post.exclude_(codes, act & mask)
        self.post.observe_soft_(torch.stack([sum(self._soft_ll(p_on[b], p_lit[b], self.floor)
                                                 for p_on, p_lit in self.readouts) for b in rows]), rows)
        self.rebuilt[rows] += 1
        self.stats["rebuilt"] += len(rows)

    def _belief_step(self, obs: dict, active: torch.Tensor) -> torch.Tensor:
        self.t += 1
        p_on, p_lit = self._read(obs, active)
        if self.t == 1:
            self.count = obs["count"].long()
            self.post.condition_count_(self.count)
        if self.use_not_ended and self.last_code is not None:
            self.post.exclude_(self.last_code, active)
            self.excluded.append((self.last_code.clone(), active.clone()))
        self.readouts.append((p_on, p_lit))
        sure = ((p_on - 0.5).abs() >= self.sure - 0.5).all(1) & ((p_lit - 0.5).abs() >= self.sure - 0.5)
        hard = active & sure
        soft = torch.nonzero(active & ~sure).flatten().tolist()
        if soft:
            self.stats["soft"] += len(soft)
            self.soft_panels[soft] += 1
            self.post.observe_soft_(torch.stack([self._soft_ll(p_on[b], p_lit[b], self.floor) for b in soft]), soft)
        if bool(hard.any()):
            self.post.observe_(p_on > 0.5, p_lit > 0.5, hard)
        dead = torch.nonzero(active & ~torch.isfinite(self.post.log_w).any(1)).flatten().tolist()
        dead += torch.nonzero(active & torch.isnan(self.post.log_w).any(1)).flatten().tolist()
        if dead:
            self._rebuild(sorted(set(dead)))
        code = self.post.map_code()
        self.last_code = code
        return code

    def episode_columns(self) -> dict[str, object]:
        """Per-episode counts for the benchmark: panels read as soft evidence, posterior rebuilds."""
        return {"soft_panels": self.soft_panels.numpy().copy(), "rebuilt": self.rebuilt.numpy().copy()}

    def act(self, obs, active: torch.Tensor) -> torch.Tensor:
        if not isinstance(obs, dict) or "frame" not in obs:
            raise ValueError("eig-pixels reads rendered panels: play it on a pixel id, got a "
                             f"{type(obs).__name__} observation")
        return super().act(obs, active)
