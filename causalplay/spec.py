"""WorldSpec (what a learner assumes) and HypothesisSpace (that assumption, enumerated).

A hypothesis is a pair (blicket set, rule). The space is laid out **rule-major**: hypothesis
``h = r * S + s`` pairs rule ``r`` with blicket set ``s`` (``S`` allowed sets, ``R`` rules, ``H = R * S``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import torch

from .priors import BlicketSetPrior
from .rules import Rule, _check_probability, make_rules

__all__ = ["WorldSpec", "HypothesisSpace"]


def _normalise_counts(n_blickets, n_objects: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    if isinstance(n_blickets, Mapping):
        items = list(n_blickets.items())
    elif isinstance(n_blickets, bool):
        raise TypeError(f"n_blickets must be an int, an iterable of ints or a dict count->weight, got {n_blickets!r}")
    elif isinstance(n_blickets, int):
        items = [(n_blickets, 1.0)]
    elif isinstance(n_blickets, Iterable):
        items = [(c, 1.0) for c in n_blickets]
    else:
        raise TypeError(f"n_blickets must be an int, an iterable of ints or a dict count->weight, got {n_blickets!r}")
    if not items:
        raise ValueError("n_blickets must allow at least one count")
    for c, w in items:
        if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c <= n_objects:
            raise ValueError(f"n_blickets: count {c!r} is not an integer in [0, n_objects={n_objects}]")
        if not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            raise ValueError(f"n_blickets: weight {w!r} of count {c} must be a finite number >= 0")
    total = float(sum(w for _, w in items))
    if total <= 0:
        raise ValueError(f"n_blickets weights must not all be zero, got {n_blickets!r}")
    items = sorted(items)
    return tuple(c for c, _ in items), tuple(w / total for _, w in items)


@dataclass(frozen=True)
class WorldSpec:
    """What a learner assumes about the Blicket world.

    Parameters
    ----------
    n_objects : int
        Number of objects ``N``.
    rules : tuple of Rule
        Candidate overhypotheses (see :mod:`causalplay.rules`). Names are accepted and turned into rules.
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
        n = self.n_objects
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n_objects must be a positive integer, got {n!r}")
        rules = make_rules(self.rules)
        object.__setattr__(self, "rules", rules)
        if self.rule_prior is None:
            prior = tuple(1.0 / len(rules) for _ in rules)
        else:
            prior = tuple(self.rule_prior)
            if len(prior) != len(rules):
                raise ValueError(f"rule_prior has {len(prior)} entries for {len(rules)} rules")
            for r, p in zip(rules, prior, strict=True):
                if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or p < 0:
                    raise ValueError(f"rule_prior[{r.name!r}] must be a finite weight >= 0, got {p!r}")
            total = sum(prior)
            if total <= 0:
                raise ValueError(f"rule_prior must not be all zero, got {prior}")
            prior = tuple(p / total for p in prior)
        object.__setattr__(self, "rule_prior", prior)
        _check_probability(self.blicket_prior, "blicket_prior")
        object.__setattr__(self, "blicket_prior", float(self.blicket_prior))
        if self.n_blickets is not None:
            weights = None if self.count_prior is None else dict(zip(self.n_blickets, self.count_prior, strict=True))
            counts, w = _normalise_counts(weights if weights is not None else self.n_blickets, n)
            object.__setattr__(self, "n_blickets", counts)
            object.__setattr__(self, "count_prior", w)
        elif self.count_prior is not None:
            raise ValueError("count_prior needs n_blickets")

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
            return sum(math.comb(self.n_objects, c) for c in self.n_blickets)
        if self.blicket_prior in (0.0, 1.0):
            return 1
        return 2**self.n_objects

    def n_hypotheses(self) -> int:
        return self.n_sets() * sum(1 for p in self.rule_prior if p > 0)


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
    """

    spec: WorldSpec
    sets: torch.Tensor
    set_log_prior: torch.Tensor
    rules: tuple[Rule, ...]
    rule_log_prior: torch.Tensor
    lit_table: torch.Tensor

    @staticmethod
    def build(spec: WorldSpec, device: torch.device | str | None = None, dtype: torch.dtype = torch.float64):
        """Enumerate ``spec`` (cached: the same spec, device and dtype return the same object)."""
        return _build_space(spec, str(torch.device(device or "cpu")), dtype)

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
        """``[H]`` joint log prior."""
        return (self.rule_log_prior[:, None] + self.set_log_prior[None, :]).reshape(-1)

    def to(self, device=None, dtype: torch.dtype | None = None) -> HypothesisSpace:
        return HypothesisSpace.build(self.spec, device or self.device, dtype or self.dtype)

    def lit_prob(self, trials: torch.Tensor) -> torch.Tensor:
        """``P(lit | h, trial)`` for candidate trials ``[D, N]``: returns ``[H, D]`` (rule-major ``H``)."""
        k = (self.sets @ trials.to(self.dtype).T).round().long()  # [S, D]
        return self.lit_table[:, k].reshape(self.n_hypotheses, -1)


@lru_cache(maxsize=64)
def _build_space(spec: WorldSpec, device: str, dtype: torch.dtype) -> HypothesisSpace:
    if spec.n_hypotheses() > 2**26:
        raise ValueError(
            f"the hypothesis space of this WorldSpec has {spec.n_hypotheses():,} members, too many to enumerate; "
            "use method='svi' or fewer objects"
        )
    prior = spec.set_prior()
    with torch.device("cpu"):
        old = torch.get_default_dtype()
        torch.set_default_dtype(dtype)
        try:
            sets = prior.enumerate_support(expand=False)
            set_log_prior = prior.log_prob(sets)
        finally:
            torch.set_default_dtype(old)
    keep = [i for i, p in enumerate(spec.rule_prior) if p > 0]
    rules = tuple(spec.rules[i] for i in keep)
    rule_log_prior = torch.tensor([math.log(spec.rule_prior[i]) for i in keep], dtype=dtype)
    lit_table = torch.stack([r.table(spec.n_objects, dtype=dtype) for r in rules])
    dev = torch.device(device)
    return HypothesisSpace(
        spec=spec,
        sets=sets.to(dev),
        set_log_prior=set_log_prior.to(dev),
        rules=rules,
        rule_log_prior=rule_log_prior.to(dev),
        lit_table=lit_table.to(dev),
    )
