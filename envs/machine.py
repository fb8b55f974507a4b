"""The Blicket machine and the oracle: how a trial lights the machine, and what an ideal observer knows.

The machine's response comes from :meth:`causalplay.core.rules.Rule.p_lit` -- the one place the likelihood lives,
shared with the Pyro models and the exact engine. The oracle (:class:`Oracle`) is the blicket marginal given the
panels under a uniform prior over all ``2^N`` sets and the task's rules.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from causalplay.core.rules import Rule
from causalplay.core.spec import HypothesisSpace, WorldSpec

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
def p_lit_table(rules: tuple[Rule, ...], n_objects: int) -> np.ndarray:
    """``[R, N + 1]``: ``rules[r].p_lit(k)`` for ``k = 0..N`` blickets on the machine (float64, read-only)."""
    k = torch.arange(n_objects + 1, dtype=torch.float64)
    table = torch.stack([r.p_lit(k) for r in rules]).numpy()
    table.flags.writeable = False
    return table


def machine_lit(rules: tuple[Rule, ...], rule_idx, blickets, trial, uniform) -> np.ndarray:
    """Whether the machine lights for ``trial [..., N]`` (bool numpy arrays; ``rule_idx`` broadcasts with the
    leading dims): ``uniform < P(lit)`` with the episode's own pre-drawn uniform, so the same episode gives the
    same response whatever else happens in the batch."""
    k = (trial & blickets).sum(-1)
    return uniform < p_lit_table(rules, trial.shape[-1])[rule_idx, k]


class Oracle:
    """The oracle of ``B`` episodes: weights ``w [B, R, S]`` over the task's rules and all ``S = 2^N`` blicket sets
    (uniform prior over both), updated panel by panel (numpy, float64); its marginals are P(blicket | panels).

    The oracle does not know the episode's rule when the task has several (uniform over them): it is what an
    ideal observer of the panels knows, so it cannot leak the hidden rule through the reward or ``info``. With
    one rule (IVRE, EST) it is the blicket marginal under that rule. For ``N <= 10`` the likelihood of every
    (rule, outcome, trial, set) is tabulated once (``rule.p_lit(|trial & set|)``), so an update is one gather
    and one product -- the single env's hot path; larger ``N`` computes the counts per update.
    """

    def __init__(self, rules: tuple[Rule, ...], n_objects: int, batch_size: int):
        space = oracle_space(rules[0], n_objects, dtype=torch.float64)
        self.rules, self.sets = rules, space.sets.numpy()  # [S, N] in code order
        R, S = len(rules), len(self.sets)
        self.pow2 = 2 ** np.arange(n_objects)
        self.table = None
        if n_objects <= 10:
            k = torch.as_tensor(self.sets @ self.sets.T)  # [2^N trials, S]: blickets on the machine
            p = torch.stack([r.p_lit(k) for r in rules], 1)  # [2^N, R, S]
            self.table = torch.stack([1.0 - p, p]).numpy()  # [lit, 2^N, R, S]: one gather per update
        self.w = np.full((batch_size, R, S), 1.0 / (R * S))
        # torch views: torch's matmul keeps to torch.set_num_threads, where numpy's BLAS would start threads
        self._w, self._sets = torch.from_numpy(self.w), torch.from_numpy(self.sets)

    def reset(self, idx: np.ndarray) -> None:
        self.w[idx] = 1.0 / (self.w.shape[1] * self.w.shape[2])

    def update(self, idx: np.ndarray | None, trial: np.ndarray, lit: np.ndarray) -> None:
        """Rows ``idx`` (``None``: all) saw ``trial [n, N]`` (bool) with outcome ``lit [n]``."""
        if self.table is not None:
            lik = self.table[lit.astype(np.int64), trial @ self.pow2]  # [n, R, S]
        else:
            k = torch.from_numpy(trial.astype(np.float64)) @ self._sets.T  # [n, S]
            p = torch.stack([r.p_lit(k) for r in self.rules], 1).numpy()
            lik = np.where(lit[:, None, None], p, 1.0 - p)
        if idx is None:  # every row: in place, no fancy-index copies
            self.w *= lik
            self.w /= self.w.sum((1, 2), keepdims=True)
        else:
            lik *= self.w[idx]
            lik /= lik.sum((1, 2), keepdims=True)
            self.w[idx] = lik

    def marginals(self) -> np.ndarray:
        """``[B, N]`` P(object is a blicket | panels so far)."""
        return (self._w.sum(1) @ self._sets).numpy()
