"""The Blicket machine and the oracle: how a trial lights the machine, and what an ideal observer knows.

The machine's response comes from :meth:`causalplay.rules.Rule.p_lit` -- the one place the likelihood lives,
shared with the Pyro models and the exact engine. The oracle is the blicket marginal under a uniform prior
over all ``2^N`` sets and the episode's true rule (for a deterministic rule: the fraction of assignments
consistent with the panels that contain the object), computed with :func:`causalplay.exact.observe`.
"""

from __future__ import annotations

import functools

import torch

from causalplay.rules import Rule
from causalplay.spec import HypothesisSpace, WorldSpec

__all__ = ["ORACLE_DTYPE", "oracle_space", "p_lit", "machine_lit", "Oracle"]

#: The oracle runs in float32: its values are fractions k / 2^N (exact in float32 for N <= 16 up to rounding
#: of the final division) and half the memory traffic of float64 on the env's hot path.
ORACLE_DTYPE = torch.float32


def oracle_space(rule: Rule, n_objects: int, dtype: torch.dtype = ORACLE_DTYPE) -> HypothesisSpace:
    """The oracle's space: all ``2**N`` blicket sets, uniform prior, one (the true) rule."""
    return HypothesisSpace.build(WorldSpec(n_objects, (rule,), blicket_prior=0.5), dtype=dtype)


def p_lit(rules: tuple[Rule, ...], rule_idx: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """P(lit) for ``k`` blickets on the machine (any shape), each entry under ``rules[rule_idx]``; float64."""
    if len(rules) == 1:
        return rules[0].p_lit(k.to(torch.float64))
    p = torch.zeros(k.shape, dtype=torch.float64)
    for r, rule in enumerate(rules):
        sel = rule_idx == r
        if bool(sel.any()):
            p[sel] = rule.p_lit(k[sel].to(torch.float64))
    return p


@functools.lru_cache(maxsize=64)
def p_lit_table(rules: tuple[Rule, ...], n_objects: int) -> torch.Tensor:
    """``[R, N + 1]``: ``rules[r].p_lit(k)`` for ``k = 0..N`` blickets on the machine (float64)."""
    k = torch.arange(n_objects + 1, dtype=torch.float64)
    return torch.stack([r.p_lit(k) for r in rules])


def machine_lit(rules: tuple[Rule, ...], rule_idx: torch.Tensor, blickets: torch.Tensor, trial: torch.Tensor,
                uniform: torch.Tensor) -> torch.Tensor:
    """Whether the machine lights for ``trial [..., N]`` (bool): ``uniform < P(lit)`` with the episode's own
    pre-drawn uniform, so the same episode gives the same response whatever else happens in the batch."""
    k = (trial & blickets).sum(-1)
    return uniform < p_lit_table(rules, trial.shape[-1])[rule_idx, k]


class Oracle:
    """The oracle of ``B`` episodes: weights ``w [B, S]`` over all ``S = 2^N`` blicket sets (uniform prior), each
    row under its episode's rule, updated panel by panel.

    For ``N <= 10`` the likelihood of every (rule, trial, set) is tabulated once (``P(lit) = rule.p_lit(|trial &
    set|)``, ``R x 2^N x S`` floats), so an update is one gather and one product -- the single env's hot path;
    larger ``N`` computes the blicket counts per update. float64 throughout (weights renormalised every update).
    """

    def __init__(self, rules: tuple[Rule, ...], n_objects: int, batch_size: int):
        space = oracle_space(rules[0], n_objects, dtype=torch.float64)
        self.rules, self.sets = rules, space.sets  # [S, N] in code order
        self.pow2 = 2 ** torch.arange(n_objects)
        self.table = None
        if n_objects <= 10:
            k = (self.sets @ self.sets.T)  # [2^N trials, S]: blickets on the machine (trial codes = set codes)
            self.table = torch.stack([r.p_lit(k) for r in rules])  # [R, 2^N, S]
        self.w = torch.full((batch_size, len(self.sets)), 1.0 / len(self.sets), dtype=torch.float64)

    def reset(self, idx: torch.Tensor) -> None:
        self.w[idx] = 1.0 / self.w.shape[1]

    def update(self, idx: torch.Tensor, rule_idx: torch.Tensor, trial: torch.Tensor, lit: torch.Tensor) -> None:
        """Rows ``idx`` saw ``trial [n, N]`` (bool) with outcome ``lit [n]`` under rules ``rule_idx [n]``."""
        if self.table is not None:
            p = self.table[rule_idx, (trial.long() * self.pow2).sum(-1)]
        else:
            p = p_lit(self.rules, rule_idx[:, None].expand(-1, len(self.sets)), trial.to(torch.float64) @ self.sets.T)
        w = self.w[idx] * torch.where(lit[:, None], p, 1.0 - p)
        self.w[idx] = w / w.sum(-1, keepdim=True)

    def marginals(self) -> torch.Tensor:
        """``[B, N]`` P(object is a blicket | panels so far)."""
        return self.w @ self.sets
