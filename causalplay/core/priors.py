"""The prior over blicket sets, as one Pyro distribution shared by the world models and the exact engine.

A blicket set over ``N`` objects is a 0/1 vector of length ``N``. Two families:

* **independent** -- each object is a blicket with probability ``p``:
  ``log P(x) = c log p + (N - c) log(1 - p)`` with ``c = sum(x)``.
* **counts** -- the number of blickets ``c`` has a prior ``w_c`` over allowed counts and, given ``c``, every
  set of that size is equally likely: ``log P(x) = log w_c - log C(N, c)``. A known count (IVRE/EST announce
  it) is ``counts={n: 1}``.

The distribution enumerates its support (every set of non-zero prior probability), which is how Pyro's
enumeration and :class:`causalplay.core.spec.HypothesisSpace` both see the same hypotheses in the same order:
sets sorted by their integer code ``sum_i x_i 2^i``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pyro.distributions as pdist
import torch
from torch.distributions import constraints

from .checks import probability
from .codes import codes_to_vectors, popcount, vectors_to_codes

__all__ = ["BlicketSetPrior", "SigmoidPrior", "all_subsets", "subset_codes"]


@lru_cache(maxsize=32)
def _all_subsets_cpu(n_objects: int) -> torch.Tensor:
    return codes_to_vectors(torch.arange(2**n_objects), n_objects)


def all_subsets(n_objects: int, dtype: torch.dtype = torch.float64, device=None) -> torch.Tensor:
    """Every subset of ``n_objects`` objects as a ``[2**n_objects, n_objects]`` 0/1 tensor, by integer code."""
    if n_objects > 26:
        raise ValueError(f"cannot enumerate 2**{n_objects} subsets; use SVI or a candidate set instead")
    return _all_subsets_cpu(n_objects).to(dtype=dtype, device=device)


def subset_codes(x: torch.Tensor) -> torch.Tensor:
    """Integer code ``sum_i x_i 2^i`` of 0/1 vectors ``x[..., N]`` (int64); see :mod:`causalplay.core.codes`."""
    return vectors_to_codes(x)


def codes_of_size(n_objects: int, sizes) -> np.ndarray:
    """Sorted int64 codes of every subset of ``n_objects`` objects whose size is in ``sizes``.

    Costs what it returns, not ``2**N``: sparse size sets (a count prior of 1 at N = 25 is 25 sets) are built
    from combinations; dense ones by filtering ``arange(2**N)`` by popcount.
    """
    sizes = sorted({int(c) for c in sizes if 0 <= int(c) <= n_objects})
    total = sum(math.comb(n_objects, c) for c in sizes)
    if n_objects <= 26 and total * 8 >= 2**n_objects:
        codes = np.arange(2**n_objects, dtype=np.int64)
        return codes[np.isin(popcount(codes), sizes)]
    if n_objects > 62:
        raise ValueError(f"blicket sets are coded as 64-bit integers: at most 62 objects, got {n_objects}")
    out = np.empty(total, dtype=np.int64)
    j = 0
    for c in sizes:
        for combo in itertools.combinations(range(n_objects), c):
            out[j] = sum(1 << i for i in combo)
            j += 1
    out.sort()
    return out


class BlicketSetPrior(pdist.TorchDistribution):
    """Prior over blicket sets: a distribution over 0/1 vectors of length ``n_objects``.

    Parameters
    ----------
    n_objects : int
        Number of objects ``N``; the event shape is ``[N]``.
    p : float, optional
        Independent per-object blicket probability. Exactly one of ``p`` and ``counts`` is given.
    counts : dict[int, float], optional
        Prior weight of each allowed number of blickets (normalised here).
    """

    arg_constraints: dict = {}
    support = constraints.independent(constraints.boolean, 1)
    has_enumerate_support = True

    def __init__(self, n_objects: int, p: float | None = None, counts: dict[int, float] | None = None,
                 validate_args: bool | None = None):
        if (p is None) == (counts is None):
            raise ValueError("give exactly one of p (independent prior) and counts (prior over set sizes)")
        self.n_objects = int(n_objects)
        self.p = None if p is None else float(p)
        if counts is not None:
            total = float(sum(counts.values()))
            if total <= 0:
                raise ValueError(f"count prior must have positive total weight, got {counts!r}")
            counts = {int(c): float(w) / total for c, w in counts.items() if w > 0}
        self.counts = counts
        super().__init__(torch.Size(), torch.Size([self.n_objects]), validate_args=validate_args)

    # -- closed-form log prior of a set, by its size ------------------------------------------------------
    def log_prob_of_size(self, c: torch.Tensor) -> torch.Tensor:
        """``log P(x)`` for any one set ``x`` with ``c = |x|`` blickets (float tensor ``c``)."""
        n = self.n_objects
        if self.p is not None:
            lp = c.new_tensor(math.log(self.p) if self.p > 0 else -math.inf)
            lq = c.new_tensor(math.log1p(-self.p) if self.p < 1 else -math.inf)
            # 0 * log 0 counts as 0: a set with no blickets has probability (1-p)^N even when p = 0.
            a = torch.where(c > 0, c * lp, torch.zeros_like(c))
            b = torch.where(n - c > 0, (n - c) * lq, torch.zeros_like(c))
            return a + b
        table = torch.full((n + 1,), -math.inf, dtype=c.dtype, device=c.device)
        for cnt, w in self.counts.items():
            if 0 <= cnt <= n:
                table[cnt] = math.log(w) - math.log(math.comb(n, cnt))
        return table[c.long()]

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        value = value.to(torch.get_default_dtype()) if not torch.is_floating_point(value) else value
        lp = self.log_prob_of_size(value.sum(-1))
        # Pyro checks that log_prob covers every plate: broadcast the (size-only) result to the batch shape.
        return lp.expand(torch.broadcast_shapes(lp.shape, self.batch_shape))

    def support_codes(self) -> np.ndarray:
        """Sorted int64 codes of every set of non-zero prior probability, built without enumerating ``2**N``
        when the prior allows few sets (counts, or ``p`` in {0, 1})."""
        n = self.n_objects
        if self.p is not None:
            if self.p == 0.0:
                return np.zeros(1, dtype=np.int64)
            if self.p == 1.0:
                return np.array([2**n - 1], dtype=np.int64)
            return codes_of_size(n, range(n + 1))
        return codes_of_size(n, self.counts.keys())

    def enumerate_support(self, expand: bool = True) -> torch.Tensor:
        sets = codes_to_vectors(torch.from_numpy(self.support_codes()), self.n_objects).to(torch.get_default_dtype())
        sets = sets.reshape((sets.shape[0],) + (1,) * len(self.batch_shape) + (self.n_objects,))
        if expand:
            sets = sets.expand((sets.shape[0],) + self.batch_shape + (self.n_objects,))
        return sets

    def sample(self, sample_shape: torch.Size = torch.Size()) -> torch.Tensor:
        shape = torch.Size(sample_shape) + self.batch_shape
        n = self.n_objects
        dtype = torch.get_default_dtype()
        if self.p is not None:
            return torch.bernoulli(torch.full(shape + (n,), self.p, dtype=dtype))
        sizes = torch.tensor(list(self.counts.keys()), dtype=torch.int64)
        weights = torch.tensor(list(self.counts.values()), dtype=dtype)
        c = sizes[torch.multinomial(weights, int(shape.numel()) or 1, replacement=True)][: shape.numel()]
        # A uniformly random set of size c: the c objects with the smallest uniform keys.
        ranks = torch.rand(shape.numel(), n).argsort(-1).argsort(-1)
        return (ranks < c[:, None]).to(dtype).reshape(shape + (n,))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(BlicketSetPrior, _instance)
        new.n_objects, new.p, new.counts = self.n_objects, self.p, self.counts
        super(BlicketSetPrior, new).__init__(torch.Size(batch_shape), self.event_shape, validate_args=False)
        return new


@dataclass(frozen=True)
class SigmoidPrior:
    """Priors of the sigmoid family. Defaults put most mass on 0.5 < bias < 1.5 and gains of 2-20.

    The Lucas & Griffiths (2010) defaults: a learner unsure whether the machine is disjunctive- or
    conjunctive-like.
    """

    bias_loc: float = 1.0
    bias_scale: float = 0.5
    gain_loc: float = 1.8  # exp(1.8) ~ 6
    gain_scale: float = 0.6
    blicket_prior: float = 1.0 / 3.0

    def __post_init__(self) -> None:
        probability(self.blicket_prior, "blicket_prior")
        for name in ("bias_scale", "gain_scale"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
