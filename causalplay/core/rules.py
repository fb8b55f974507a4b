"""Causal overhypotheses: how a Blicket machine combines the blickets put on it.

This module is the **one place** the machine's likelihood lives. The Pyro world models, the exact engine,
the environments and the choice models all call :meth:`Rule.p_lit`; nothing else re-implements it.

Every rule is a function of a single number, ``k`` = how many blickets are on the machine, so a rule is
fully described by its table ``P(lit | k)`` for ``k = 0..N``. Noise flips the machine's response with
probability ``noise``: ``P(lit | k) = (1 - noise) * f(k) + noise * (1 - f(k))``.

==================  =====================================  ========================================
rule                f(k) = P(lit | k) before noise         source
==================  =====================================  ========================================
``disjunctive``     1 if k >= 1 else 0                     Gopnik & Sobel (2000)
``conjunctive``     1 if k >= 2 else 0                     Lucas & Griffiths (2010)
``threshold(m)``    1 if k >= m else 0                     generalises both
``sigmoid(g, b)``   1 / (1 + exp(-g (k - b)))              Lucas & Griffiths (2010), eq. 3
==================  =====================================  ========================================

The sigmoid family contains the others as limits: ``gain -> inf`` with ``bias = 0.5`` is disjunctive, with
``bias = 1.5`` conjunctive.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import torch

from .checks import integer, probability, real

__all__ = ["Rule", "Threshold", "Sigmoid", "disjunctive", "conjunctive", "make_rule", "make_rules", "RULE_NAMES",
           "apply_noise", "apply_log_noise", "sigmoid_response"]


def apply_noise(f: torch.Tensor, noise) -> torch.Tensor:
    """Flip a response probability ``f`` with probability ``noise`` (a float or a broadcastable tensor)."""
    return (1.0 - noise) * f + noise * (1.0 - f)


def apply_log_noise(log_f: torch.Tensor, log_g: torch.Tensor, noise: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log P(unlit), log P(lit))`` of a response ``f`` given as ``log f`` and ``log(1 - f)``, flipped with
    probability ``noise``, exact for tiny noise.

    ``1 - noise`` is never formed: with ``noise = 1e-17`` it would round to 1 and ``log P(lit | k)`` of an "off"
    count would become ``log 0``. Instead ``log P(lit) = logaddexp(log1p(-noise) + log f, log(noise) + log(1 - f))``.
    """
    if noise == 0.0:
        return log_g, log_f
    keep = math.log1p(-noise) if noise < 1.0 else -math.inf  # noise = 1: the machine always flips
    flip = math.log(noise)
    return torch.logaddexp(keep + log_g, flip + log_f), torch.logaddexp(keep + log_f, flip + log_g)


def sigmoid_response(k: torch.Tensor, gain, bias) -> torch.Tensor:
    """Lucas & Griffiths (2010): ``sigmoid(gain * (k - bias))``; ``gain``/``bias`` may be tensors."""
    return torch.sigmoid(gain * (k - bias))


@dataclass(frozen=True)
class Rule:
    """Base class: a rule maps the number of blickets on the machine to ``P(lit)``.

    Subclasses implement :meth:`base` (the noiseless response); ``noise`` flips it.
    """

    noise: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise", probability(self.noise, "noise"))

    @property
    def name(self) -> str:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    def base(self, k: torch.Tensor) -> torch.Tensor:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    def p_lit(self, k: torch.Tensor) -> torch.Tensor:
        """``P(lit | k blickets on the machine)``, elementwise, same dtype/device as ``k`` (floating)."""
        if not torch.is_floating_point(k):
            k = k.to(torch.get_default_dtype())
        f = self.base(k)
        return f if self.noise == 0.0 else apply_noise(f, self.noise)

    def table(self, n_objects: int, dtype: torch.dtype = torch.float64, device=None) -> torch.Tensor:
        """``P(lit | k)`` for ``k = 0..n_objects`` as a tensor of shape ``[n_objects + 1]``."""
        return self.p_lit(torch.arange(n_objects + 1, dtype=dtype, device=device))

    def log_base(self, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(log f(k), log(1 - f(k)))`` of the noiseless response; subclasses override for accuracy."""
        f = self.base(k)
        return torch.log(f), torch.log1p(-f)

    def log_table(self, n_objects: int, dtype: torch.dtype = torch.float64, device=None) -> torch.Tensor:
        """``[2, n_objects + 1]``: ``log P(unlit | k)`` and ``log P(lit | k)``, exact for tiny noise (see
        :func:`apply_log_noise`)."""
        log_f, log_g = self.log_base(torch.arange(n_objects + 1, dtype=dtype, device=device))
        return torch.stack(apply_log_noise(log_f, log_g, self.noise))

    @property
    def deterministic(self) -> bool:
        """True when ``P(lit | k)`` is always 0 or 1 (no noise, hard threshold)."""
        return False


@dataclass(frozen=True)
class Threshold(Rule):
    """The machine lights iff at least ``m`` blickets are on it (``m=1`` disjunctive, ``m=2`` conjunctive)."""

    m: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        try:
            m = integer(self.m, "threshold m", low=1)
        except TypeError as e:  # historically a ValueError; keep one exception type for a bad m
            raise ValueError(str(e)) from None
        object.__setattr__(self, "m", m)

    @property
    def name(self) -> str:
        # The name identifies the overhypothesis; noise is a property of the machine, shown in repr().
        return {1: "disjunctive", 2: "conjunctive"}.get(self.m, f"threshold{self.m}")

    def base(self, k: torch.Tensor) -> torch.Tensor:
        return (k >= self.m).to(k.dtype)

    @property
    def deterministic(self) -> bool:
        return self.noise == 0.0


@dataclass(frozen=True)
class Sigmoid(Rule):
    """Lucas & Griffiths (2010): ``P(lit | k) = sigmoid(gain * (k - bias))``, then noise."""

    gain: float = 10.0
    bias: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        try:
            gain = real(self.gain, "sigmoid gain")
            bias = real(self.bias, "sigmoid bias")
        except TypeError as e:  # historically a ValueError
            raise ValueError(str(e)) from None
        if gain <= 0:
            raise ValueError(f"sigmoid gain must be > 0, got {self.gain!r}")
        object.__setattr__(self, "gain", gain)
        object.__setattr__(self, "bias", bias)

    @property
    def name(self) -> str:
        return f"sigmoid(gain={self.gain:g},bias={self.bias:g})"

    def base(self, k: torch.Tensor) -> torch.Tensor:
        return sigmoid_response(k, self.gain, self.bias)

    def log_base(self, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.gain * (k - self.bias)
        return torch.nn.functional.logsigmoid(x), torch.nn.functional.logsigmoid(-x)


def disjunctive(noise: float = 0.0) -> Threshold:
    """Lights iff at least one blicket is on the machine."""
    return Threshold(noise=noise, m=1)


def conjunctive(noise: float = 0.0) -> Threshold:
    """Lights iff at least two blickets are on the machine."""
    return Threshold(noise=noise, m=2)


RULE_NAMES = ("disjunctive", "conjunctive")


def make_rule(rule: str | Rule, noise: float = 0.0) -> Rule:
    """Turn a rule name (``"disjunctive"``, ``"conjunctive"``, ``"threshold3"``) or a :class:`Rule` into a Rule.

    ``noise`` applies to named rules only; a :class:`Rule` instance keeps its own noise.
    """
    if isinstance(rule, Rule):
        return rule
    if not isinstance(rule, str):
        raise TypeError(f"a rule must be a rule name or a causalplay.core.rules.Rule, got {rule!r}")
    noise = probability(noise, "noise")
    m = {"disjunctive": 1, "conjunctive": 2}.get(rule)
    if m is None and rule.startswith("threshold") and rule[len("threshold") :].isdigit():
        m = int(rule[len("threshold") :])
    if m is None:
        raise ValueError(f"unknown rule {rule!r}; expected one of {RULE_NAMES + ('threshold<m>',)} or a "
                         "causalplay.core.rules.Rule")
    return Threshold(noise=noise, m=m)


def make_rules(rules: str | Rule | Iterable[str | Rule], noise: float = 0.0) -> tuple[Rule, ...]:
    """Normalise one rule or an iterable of rules to a non-empty tuple of distinct :class:`Rule` objects."""
    if isinstance(rules, (str, Rule)):
        rules = (rules,)
    try:
        out = tuple(make_rule(r, noise) for r in rules)
    except TypeError as e:
        if "iterable" in str(e):
            raise TypeError(f"rules must be a rule or an iterable of rules, got {rules!r}") from None
        raise
    if not out:
        raise ValueError("rules must name at least one rule")
    names = [r.name for r in out]
    if len(set(names)) != len(names):
        raise ValueError(f"rules must have distinct names, got {names}")
    return out
