"""WorldSpec (what a learner assumes) and HypothesisSpace (that assumption, enumerated).

A hypothesis is a pair (blicket set, rule). The space is laid out **rule-major**: hypothesis
``h = r * S + s`` pairs rule ``r`` with blicket set ``s`` (``S`` allowed sets, ``R`` rules, ``H = R * S``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import torch

from .checks import float_dtype, integer, probability, real
from .codes import codes_to_vectors, vectors_to_codes
from .priors import BlicketSetPrior
from .rules import Rule, make_rules

__all__ = ["WorldSpec", "HypothesisSpace"]


def _is_int_scalar(x) -> bool:
    try:
        integer(x, "")
    except TypeError:
        return False
    return True


def _normalise_counts(n_blickets, n_objects: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    kinds = "an int, an iterable of ints or a dict count->weight"
    if isinstance(n_blickets, Mapping):
        items = list(n_blickets.items())
    elif isinstance(n_blickets, (bool, np.bool_, str, bytes)):
        raise TypeError(f"n_blickets must be {kinds}, got {n_blickets!r}")
    elif _is_int_scalar(n_blickets):
        items = [(n_blickets, 1.0)]
    elif isinstance(n_blickets, Iterable):
        items = [(c, 1.0) for c in n_blickets]
    else:
        raise TypeError(f"n_blickets must be {kinds}, got {n_blickets!r}")
    if not items:
        raise ValueError("n_blickets must allow at least one count")
    clean = {}
    for c, w in items:
        try:
            ci = integer(c, "n_blickets: count", low=0, high=n_objects)
        except (TypeError, ValueError):
            raise ValueError(f"n_blickets: count {c!r} is not an integer in [0, n_objects={n_objects}]") from None
        if ci in clean:
            raise ValueError(f"n_blickets: count {ci} is given twice")
        try:
            clean[ci] = real(w, f"n_blickets: weight of count {ci}", low=0.0)
        except (TypeError, ValueError):
            raise ValueError(f"n_blickets: weight {w!r} of count {ci} must be a finite number >= 0") from None
    total = float(sum(clean.values()))
    if total <= 0:
        raise ValueError(f"n_blickets weights must not all be zero, got {n_blickets!r}")
    items = sorted(clean.items())
    return tuple(c for c, _ in items), tuple(w / total for _, w in items)


def _n_objects(n_objects) -> int:
    try:
        return integer(n_objects, "n_objects", low=1)
    except TypeError:
        raise ValueError(f"n_objects must be a positive integer, got {n_objects!r}") from None


@dataclass(frozen=True)
class WorldSpec:
    """What a learner assumes about the Blicket world.

    Parameters
    ----------
    n_objects : int
        Number of objects ``N``.
    rules : tuple of Rule
        Candidate overhypotheses (see :mod:`causalplay.core.rules`). Names are accepted and turned into rules.
    rule_prior : tuple of float, optional
        Prior probability of each rule, aligned with ``rules``; uniform when omitted.
    blicket_prior : float
        Independent per-object blicket probability (ignored when ``n_blickets`` is given).
    n_blickets : tuple of int, optional
        Allowed numbers of blickets; replaces the independent prior. Given a count every set of that size is
        equally likely.
    count_prior : tuple of float, optional
        Prior weight of each count in ``n_blickets`` (uniform when omitted).
    """

    n_objects: int
    rules: tuple[Rule, ...] = field(default_factory=lambda: make_rules(("disjunctive", "conjunctive")))
    rule_prior: tuple[float, ...] | None = None
    blicket_prior: float = 1.0 / 3.0
    n_blickets: tuple[int, ...] | None = None
    count_prior: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        n = _n_objects(self.n_objects)
        object.__setattr__(self, "n_objects", n)
        rules = self.rules
        if not (isinstance(rules, tuple) and rules and all(isinstance(r, Rule) for r in rules)
                and len({r.name for r in rules}) == len(rules)):
            rules = make_rules(rules)
        object.__setattr__(self, "rules", rules)
        if self.rule_prior is None:
            prior = tuple(1.0 / len(rules) for _ in rules)
        else:
            prior = tuple(self.rule_prior)
            if len(prior) != len(rules):
                raise ValueError(f"rule_prior has {len(prior)} entries for {len(rules)} rules")
            clean = []
            for r, p in zip(rules, prior, strict=True):
                try:
                    clean.append(real(p, f"rule_prior[{r.name!r}]", low=0.0))
                except (TypeError, ValueError):
                    raise ValueError(f"rule_prior[{r.name!r}] must be a finite weight >= 0, got {p!r}") from None
            prior = tuple(clean)
            total = sum(prior)
            if total <= 0:
                raise ValueError(f"rule_prior must not be all zero, got {prior}")
            prior = tuple(p / total for p in prior)
        object.__setattr__(self, "rule_prior", prior)
        object.__setattr__(self, "blicket_prior", probability(self.blicket_prior, "blicket_prior"))
        if self.n_blickets is not None:
            weights = None if self.count_prior is None else dict(zip(self.n_blickets, self.count_prior, strict=True))
            counts, w = _normalise_counts(weights if weights is not None else self.n_blickets, n)
            object.__setattr__(self, "n_blickets", counts)
            object.__setattr__(self, "count_prior", w)
        elif self.count_prior is not None:
            raise ValueError("count_prior needs n_blickets")

    @classmethod
    def from_options(cls, n_objects: int, rules: str | Rule | Iterable = ("disjunctive", "conjunctive"),
                     rule_prior: Mapping[str, float] | Sequence[float] | None = None,
                     blicket_prior: float = 1.0 / 3.0, n_blickets=None, noise: float = 0.0) -> WorldSpec:
        """Build a WorldSpec from :func:`causalplay.infer`'s keyword arguments, validated with clear errors.

        Parameters
        ----------
        n_objects : int
        rules : rule name, Rule, or iterable of them
        rule_prior : dict rule name -> weight, or weights aligned with ``rules``; uniform when None
        blicket_prior : float
            Independent per-object blicket probability (ignored when ``n_blickets`` is given).
        n_blickets : int, iterable of int, or dict count -> weight, optional
        noise : float
            Flip probability, applied to named rules.

        Returns
        -------
        WorldSpec
        """
        noise = probability(noise, "noise")
        rules_t = make_rules(rules, noise)
        if rule_prior is None:
            prior = None
        elif isinstance(rule_prior, Mapping):
            names = [r.name for r in rules_t]
            unknown = [k for k in rule_prior if k not in names]
            if unknown:
                raise ValueError(f"rule_prior names unknown rule {unknown[0]!r}; rules are {names}")
            prior = tuple(rule_prior.get(n, 0.0) for n in names)
        elif isinstance(rule_prior, (str, bytes)) or not isinstance(rule_prior, Iterable):
            raise TypeError(f"rule_prior must be a dict rule -> weight or a sequence of weights, got {rule_prior!r}")
        else:
            prior = tuple(rule_prior)
        if n_blickets is not None:
            counts, weights = _normalise_counts(n_blickets, _n_objects(n_objects))
            return cls(n_objects, rules_t, prior, blicket_prior, counts, weights)
        return cls(n_objects, rules_t, prior, blicket_prior)

    @property
    def rule_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rules)

    def set_prior(self) -> BlicketSetPrior:
        """The prior over blicket sets as a Pyro distribution (used by the world models)."""
        if self.n_blickets is not None:
            return BlicketSetPrior(self.n_objects, counts=dict(zip(self.n_blickets, self.count_prior, strict=True)))
        return BlicketSetPrior(self.n_objects, p=self.blicket_prior)

    def rule_probs(self, dtype: torch.dtype = torch.float64, device=None) -> torch.Tensor:
        return torch.tensor(self.rule_prior, dtype=dtype, device=device)

    def lit_table(self, dtype: torch.dtype = torch.float64, device=None) -> torch.Tensor:
        """``P(lit | rule r, k blickets on)`` as ``[R, N + 1]``."""
        return torch.stack([r.table(self.n_objects, dtype=dtype, device=device) for r in self.rules])

    def n_sets(self) -> int:
        """Number of blicket sets with non-zero prior probability."""
        if self.n_blickets is not None:
            return sum(math.comb(self.n_objects, c) for c, w in zip(self.n_blickets, self.count_prior, strict=True)
                       if w > 0)
        if self.blicket_prior in (0.0, 1.0):
            return 1
        return 2**self.n_objects

    def n_hypotheses(self) -> int:
        return self.n_sets() * sum(1 for p in self.rule_prior if p > 0)


#: Largest space :meth:`HypothesisSpace.build` enumerates (method="exact"); "auto" switches at ``EXACT_LIMIT``.
MAX_HYPOTHESES = 2**26


@dataclass(frozen=True, eq=False)
class HypothesisSpace:
    """A :class:`WorldSpec` enumerated: every (blicket set, rule) with non-zero prior.

    Attributes
    ----------
    spec : WorldSpec
    sets : Tensor ``[S, N]``
        The allowed blicket sets (0/1), sorted by integer code.
    set_log_prior : Tensor ``[S]``
    rule_log_prior : Tensor ``[R]``
        Rules with zero prior are dropped; ``rules`` lists those kept.
    rules : tuple of Rule
    lit_table : Tensor ``[R, N + 1]``
        ``P(lit | rule, k)``.
    log_lit_table : Tensor ``[R, 2, N + 1]``
        ``log P(unlit | rule, k)`` and ``log P(lit | rule, k)``, computed without forming ``1 - noise``.
    """

    spec: WorldSpec
    sets: torch.Tensor
    set_log_prior: torch.Tensor
    rules: tuple[Rule, ...]
    rule_log_prior: torch.Tensor
    lit_table: torch.Tensor
    log_lit_table: torch.Tensor | None = None
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.log_lit_table is None:
            t = torch.stack([r.log_table(self.spec.n_objects, dtype=self.dtype) for r in self.rules])
            object.__setattr__(self, "log_lit_table", t.to(self.device))

    @staticmethod
    def build(spec: WorldSpec, device: torch.device | str | None = None,
              dtype: torch.dtype = torch.float64) -> HypothesisSpace:
        """Enumerate ``spec`` (cached: the same spec, device and dtype return the same object).

        Only the sets the prior allows are built (a count prior of 1 at N = 25 is 25 sets, not ``2**25``).

        Raises
        ------
        ValueError
            More than :data:`MAX_HYPOTHESES` hypotheses (the message says how many and suggests SVI).
        """
        if not isinstance(spec, WorldSpec):
            raise TypeError(f"spec must be a causalplay.WorldSpec, got {type(spec).__name__}")
        float_dtype(dtype)
        try:
            dev = torch.device(device or "cpu")
        except (RuntimeError, TypeError) as e:
            raise ValueError(f"device {device!r} is not a torch device ({e})") from None
        return _build_space(spec, str(dev), dtype)

    # -- sizes -------------------------------------------------------------------------------------------
    @property
    def n_objects(self) -> int:
        return self.spec.n_objects

    @property
    def n_sets(self) -> int:
        return self.sets.shape[0]

    @property
    def n_rules(self) -> int:
        return len(self.rules)

    @property
    def n_hypotheses(self) -> int:
        return self.n_sets * self.n_rules

    @property
    def rule_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rules)

    @property
    def device(self) -> torch.device:
        return self.sets.device

    @property
    def dtype(self) -> torch.dtype:
        return self.sets.dtype

    @property
    def max_count(self) -> int:
        """Largest number of blickets any allowed set has."""
        return self.cached("max_count", lambda: int(self.sets.sum(-1).max().item()))

    def cached(self, key, build):
        """``build()``, computed on first use and kept on this space under ``key`` (spaces are immutable)."""
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def all_trials(self) -> torch.Tensor:
        """``[2**N - 1, N]`` every non-empty trial in integer-code order, on this space's device and dtype (cached
        for N <= 16; do not modify)."""
        hit = self._cache.get("all_trials")
        if hit is not None:
            return hit
        n = self.n_objects
        t = codes_to_vectors(torch.arange(1, 2**n, device=self.device), n).to(self.dtype)
        if n <= 16:
            self._cache["all_trials"] = t
        return t

    # -- the flat [H] view ---------------------------------------------------------------------------------
    @property
    def members(self) -> torch.Tensor:
        """``[H, N]`` blicket set of every hypothesis."""
        return self.sets.repeat(self.n_rules, 1)

    @property
    def rule(self) -> torch.Tensor:
        """``[H]`` rule index of every hypothesis."""
        return torch.arange(self.n_rules, device=self.device).repeat_interleave(self.n_sets)

    @property
    def log_prior(self) -> torch.Tensor:
        """``[H]`` joint log prior (computed once per space)."""
        return self.cached("log_prior", lambda: (self.rule_log_prior[:, None] + self.set_log_prior).reshape(-1))

    @property
    def set_codes(self) -> torch.Tensor:
        """``[S]`` int64 integer code of every allowed set (ascending)."""
        return self.cached("set_codes", lambda: vectors_to_codes(self.sets))

    def to(self, device=None, dtype: torch.dtype | None = None) -> HypothesisSpace:
        return HypothesisSpace.build(self.spec, device or self.device, dtype or self.dtype)

    def counts(self, trials: torch.Tensor) -> torch.Tensor:
        """``[S, D]`` int64: blickets of each allowed set on each candidate trial ``[D, N]``."""
        return (self.sets @ trials.to(self.dtype).T).round().long()

    def lit_prob(self, trials: torch.Tensor) -> torch.Tensor:
        """``P(lit | h, trial)`` for candidate trials ``[D, N]``: returns ``[H, D]`` (rule-major ``H``)."""
        return self.lit_table[:, self.counts(trials)].reshape(self.n_hypotheses, -1)

    def predictive(self, trials: torch.Tensor, *, max_entries: int = 2**24, pad_to: int = 512) -> torch.Tensor:
        """:meth:`lit_prob` with zero columns padding ``D`` up to a multiple of ``pad_to`` (when ``D >= pad_to/2``),
        cached per candidate set (the last four sets of at most ``max_entries`` numbers).

        Agents and one-history calls score the same candidates again and again; the table is built once. The
        padding makes BLAS run its fast aligned kernels (``[B, H] @ [H, 512]`` is faster than ``@ [H, 511]``);
        drop the extra columns from results (``[:, :D]``).
        """
        if trials is self._cache.get("all_trials"):
            key = ("lit_prob", "all")
        else:
            key = ("lit_prob", trials.shape, hash(trials.to(torch.uint8).cpu().numpy().tobytes()))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        P = self.lit_prob(trials)
        D = P.shape[1]
        if pad_to > 1 and D >= pad_to // 2 and D % pad_to:
            P = torch.cat([P, P.new_zeros(P.shape[0], pad_to - D % pad_to)], dim=1)
        if P.numel() <= max_entries:
            old = [k for k in self._cache if k[0] == "lit_prob"]
            for k in old[:-3]:  # keep at most 4 candidate sets per space
                del self._cache[k]
            self._cache[key] = P
        return P


@lru_cache(maxsize=64)
def _build_space(spec: WorldSpec, device: str, dtype: torch.dtype) -> HypothesisSpace:
    H = spec.n_hypotheses()
    if H > MAX_HYPOTHESES:
        raise ValueError(f"the hypothesis space of this WorldSpec has {H:,} members (more than MAX_HYPOTHESES = "
                         f"{MAX_HYPOTHESES:,}), too many to enumerate; use method='svi' (or 'auto'), fewer objects, "
                         "or a count prior (n_blickets=...)")
    if spec.n_objects > 62:
        raise ValueError(f"the exact engine codes blicket sets as 64-bit integers: at most 62 objects, "
                         f"got n_objects={spec.n_objects}; use method='svi'")
    prior = spec.set_prior()
    codes = torch.from_numpy(prior.support_codes())
    sets = codes_to_vectors(codes, spec.n_objects).to(dtype)
    set_log_prior = prior.log_prob_of_size(sets.sum(-1))
    keep = [i for i, p in enumerate(spec.rule_prior) if p > 0]
    rules = tuple(spec.rules[i] for i in keep)
    rule_log_prior = torch.tensor([math.log(spec.rule_prior[i]) for i in keep], dtype=dtype)
    lit_table = torch.stack([r.table(spec.n_objects, dtype=dtype) for r in rules])
    dev = torch.device(device)  # log_lit_table: built by __post_init__
    return HypothesisSpace(spec=spec, sets=sets.to(dev), set_log_prior=set_log_prior.to(dev), rules=rules,
                           rule_log_prior=rule_log_prior.to(dev), lit_table=lit_table.to(dev))
