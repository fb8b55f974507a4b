"""Batched exact posterior over (blicket set, rule) for agents, on the core engine (``observe``)."""

from __future__ import annotations

import torch

from causalplay.core.exact import observe
from causalplay.core.spec import HypothesisSpace, WorldSpec

from .base import TaskInfo

__all__ = ["Posterior"]


class Posterior:
    """``log_w [B, H]`` over all ``2^N`` sets x the task's rules (uniform), rule-major ``h = r * S + code``.

    The set index equals the set's integer code ``sum_i x_i 2^i`` (the core space sorts sets by code).
    float32 by default: the agents' hot path, and their decisions (argmax of posteriors / EIG) do not need
    float64. :meth:`condition_count` and :meth:`exclude` only mask; the next :meth:`update` renormalises.
    Only active rows (episodes still running) are computed.
    """

    def __init__(self, task: TaskInfo, batch_size: int, dtype: torch.dtype = torch.float32):
        spec = WorldSpec.from_options(task.n_objects, task.rules, blicket_prior=0.5)
        self.space = HypothesisSpace.build(spec, dtype=dtype)
        self.log_w = self.space.log_prior.expand(batch_size, -1).clone()
        self.S, self.R = self.space.n_sets, self.space.n_rules
        self.sizes = self.space.sets.sum(-1).round().long()  # [S]
        self.weights = 2 ** torch.arange(task.n_objects)

    def update(self, on: torch.Tensor, lit: torch.Tensor, active: torch.Tensor) -> None:
        """One observed panel per episode (rows of ended episodes are left as they were)."""
        if bool(active.all()):
            self.log_w = observe(self.space, self.log_w, on.to(self.space.dtype), lit.to(self.space.dtype),
                                 check=False)
            return
        idx = torch.nonzero(active).flatten()
        if len(idx):
            self.log_w[idx] = observe(self.space, self.log_w[idx], on[idx].to(self.space.dtype),
                                      lit[idx].to(self.space.dtype), check=False)

    def condition_count(self, count: torch.Tensor) -> None:
        """Keep only sets of the announced size (normalised by the next :meth:`update`)."""
        bad = (self.sizes[None, :] != count[:, None]).repeat(1, self.R)
        self.log_w = self.log_w.masked_fill(bad, -torch.inf)

    def exclude(self, codes: torch.Tensor, active: torch.Tensor) -> None:
        """The episode went on, so the guessed set (integer code per episode) is not the truth (normalised by
        the next :meth:`update`)."""
        idx = torch.nonzero(active).flatten()
        for r in range(self.R):
            self.log_w[idx, r * self.S + codes[idx]] = -torch.inf

    def set_probs(self) -> torch.Tensor:
        """``[B, S]`` posterior of each blicket set (rule summed out)."""
        return self.log_w.exp().reshape(-1, self.R, self.S).sum(1)

    def marginals(self) -> torch.Tensor:
        return (self.set_probs() @ self.space.sets).clamp(0.0, 1.0)  # rounding can overshoot 1 by an ulp

    def map_code(self) -> torch.Tensor:
        return self.set_probs().argmax(-1)

    def code_to_set(self, codes: torch.Tensor) -> torch.Tensor:
        return (codes[:, None] & self.weights) > 0
