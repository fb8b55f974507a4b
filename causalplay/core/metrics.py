"""Benchmark metrics (PHYRE-style protocol): success curves, AUCCESS, Wilcoxon tests, CIs, stable splits."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import numpy as np

__all__ = ["success_curve", "auccess", "auccess_weights", "wilcoxon", "mean_ci", "wilson_ci", "ratio_ci",
           "stable_unit", "assign_split", "template_folds", "SPLITS"]

SPLITS = ("train", "dev", "test")


def success_curve(solved_at: np.ndarray, horizon: int) -> np.ndarray:
    """Fraction of episodes solved by action ``t`` for ``t = 1..horizon`` (``solved_at`` 0 = never solved)."""
    s = np.asarray(solved_at)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"solved_at must be a non-empty 1-d array, got shape {s.shape}")
    steps = np.arange(1, horizon + 1)
    return ((s[None, :] > 0) & (s[None, :] <= steps[:, None])).mean(1)


def auccess_weights(n_trials: int) -> np.ndarray:
    """PHYRE weights ``w_k = log(k + 1) - log(k)`` for ``k = 1..n_trials``."""
    k = np.arange(1, n_trials + 1, dtype=np.float64)
    return np.log(k + 1) - np.log(k)


def auccess(solved_at: np.ndarray, n_context: int, horizon: int) -> float:
    """AUCCESS over the trial steps: ``sum_k w_k s_k / sum_k w_k`` with ``s_k`` the fraction solved by action
    ``n_context + k`` (``k = 1..horizon - n_context``; a context solve counts as solved for every ``k``)."""
    K = horizon - n_context
    if K < 1:
        raise ValueError(f"AUCCESS needs at least one trial step, got horizon={horizon}, n_context={n_context}")
    s = success_curve(solved_at, horizon)[n_context:]
    w = auccess_weights(K)
    return float((w * s).sum() / w.sum())


def wilcoxon(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Two-sided Wilcoxon signed-rank test of paired per-seed scores; returns ``(statistic, p-value)``.

    scipy's exact distribution for small samples; with all differences zero the p-value is 1.
    """
    from scipy.stats import wilcoxon as _wilcoxon

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"need two paired 1-d samples of the same length, got shapes {a.shape} and {b.shape}")
    if np.all(a == b):
        return 0.0, 1.0
    res = _wilcoxon(a, b)
    return float(res.statistic), float(res.pvalue)


def mean_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Mean and half-width of the Student-t confidence interval over seeds (half-width 0 for one seed)."""
    from scipy.stats import t as _t

    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        raise ValueError("mean_ci needs at least one value")
    if v.size == 1:
        return float(v[0]), 0.0
    half = _t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return float(v.mean()), float(half)


def _z(level: float) -> float:
    from scipy.stats import norm

    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    return float(norm.ppf(0.5 + level / 2))


def wilson_ci(successes: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """A proportion and its Wilson score interval ``(p, lo, hi)`` from 0/1 outcomes.

    Unlike the normal interval it stays inside [0, 1] and is not empty at 0 or n successes.
    """
    x = np.asarray(successes, dtype=np.float64)
    if x.ndim != 1 or x.size == 0 or not np.isin(x, (0.0, 1.0)).all():
        raise ValueError(f"successes must be a non-empty 1-d sequence of 0/1 (or bool), got {successes!r}")
    n, z = x.size, _z(level)
    p = float(x.mean())
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # exactly 0 / 1 at the ends (c -+ h rounds there), inside [0, 1] everywhere
    return p, 0.0 if p == 0 else max(0.0, c - h), 1.0 if p == 1 else min(1.0, c + h)


def ratio_ci(x: Sequence[float], y: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """``mean(x) / mean(y)`` and its CI half-width by the delta method (paired samples; NaN for one pair)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise ValueError(f"need two paired non-empty 1-d samples of the same length, got shapes {x.shape} and "
                         f"{y.shape}")
    if y.mean() == 0:
        raise ValueError("ratio_ci: mean(y) is 0, so the ratio is undefined")
    z, r = _z(level), float(x.mean() / y.mean())
    if x.size < 2:
        return r, float("nan")
    c = np.cov(x, y)
    var = (c[0, 0] - 2 * r * c[0, 1] + r * r * c[1, 1]) / (x.size * y.mean() ** 2)
    return r, float(z * math.sqrt(max(var, 0.0)))


def stable_unit(key: str) -> float:
    """A number in [0, 1) from the first 8 bytes of ``sha256(key)`` (stable across runs, machines, Pythons)."""
    if not isinstance(key, str):
        raise TypeError(f"key must be a str, got {key!r}")
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2.0**64


def assign_split(key: str, fractions: Sequence[float] = (0.8, 0.1, 0.1)) -> str:
    """``"train"``, ``"dev"`` or ``"test"`` for ``key`` by stable hashing, with the given fractions."""
    f = np.asarray(fractions, dtype=np.float64)
    if f.shape != (3,) or (f < 0).any() or not math.isclose(f.sum(), 1.0):
        raise ValueError(f"fractions must be three numbers >= 0 summing to 1, got {fractions!r}")
    u = stable_unit(key)
    return SPLITS[int(np.searchsorted(np.cumsum(f), u, side="right").clip(0, 2))]


def template_folds(templates: Sequence[str], n_folds: int = 5) -> dict[int, dict[str, list[str]]]:
    """Cross-template folds: templates are ranked by stable hash; fold ``i`` tests on every ``n_folds``-th
    template starting at ``i``, develops on the next one, trains on the rest.

    Within-template splits use :func:`assign_split` on episode keys instead.
    """
    ts = sorted(set(templates), key=stable_unit)
    if len(ts) < 2:
        raise ValueError(f"cross-template folds need at least 2 templates, got {list(ts)}")
    folds = {}
    for i in range(n_folds):
        test = ts[i % len(ts)::n_folds] or [ts[i % len(ts)]]
        rest = [t for t in ts if t not in test]
        folds[i] = {"train": rest[1:], "dev": rest[:1], "test": test}
    return folds
