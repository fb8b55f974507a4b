"""Choices that do not depend on floating-point noise: argmax, argmin and orderings with a stated tolerance.

Quantities the package chooses by -- EIGs, posterior probabilities, marginals, goal values -- are often *exactly*
equal in exact arithmetic (symmetric objects, Markov-equivalent structures, sets no evidence tells apart). Computed
in floating point, such values differ in their last bits, and which one comes out larger depends on the math
kernels: the CPU's instruction set (AVX2 or AVX-512 code paths), the BLAS library's reduction order
(``MKL_CBWR``), the batch's size and make-up. A plain ``argmax`` then lets that noise decide, and the same seed
gives different choices on different machines.

The rule used everywhere in causalplay: values within ``tol * max(1, |best|)`` of the best are tied, and ties go
to the **lowest index** (or, where an agent breaks ties at random, to a seeded random key among the tied; or, for
a lexicographic choice, to the next criterion). ``tol`` defaults by dtype (:data:`TOL`): ``1e-9`` for float64
and ``1e-5`` for float32 -- far above the rounding error of the quantities above (of order one: probabilities,
bits, rewards; log-probabilities, where the tolerance is relative to the probabilities) and far below any
difference that means something.

Examples
--------
>>> import torch
>>> x = torch.tensor([0.3, 0.7, 0.7 + 1e-12, 0.1], dtype=torch.float64)
>>> int(argmax_tol(x))  # 0.7 and 0.7 + 1e-12 are tied: the lower index wins
1
>>> stable_order(torch.tensor([0.5, 0.9, 0.5 + 1e-15, 0.9 - 1e-15], dtype=torch.float64), descending=True)
tensor([1, 3, 0, 2])
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["TOL", "default_tol", "tied_max", "argmax_tol", "argmin_tol", "argmax_lex", "stable_order", "stable_topk",
           "snap", "pick_lowest"]

#: Default absolute tolerance of each floating dtype (values within it of the best count as tied).
TOL: dict[torch.dtype, float] = {torch.float64: 1e-9, torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 1e-2}


def default_tol(dtype: torch.dtype | np.dtype) -> float:
    """The tolerance :data:`TOL` gives ``dtype`` (integer and bool dtypes: ``0``, exact comparison)."""
    if isinstance(dtype, np.dtype):
        if not np.issubdtype(dtype, np.floating):
            return 0.0
        dtype = {np.dtype(np.float64): torch.float64, np.dtype(np.float32): torch.float32,
                 np.dtype(np.float16): torch.float16}[dtype]
    if not dtype.is_floating_point:
        return 0.0
    return TOL[dtype]


def _tol(x: torch.Tensor, tol: float | None) -> float:
    if tol is None:
        return default_tol(x.dtype)
    if not (isinstance(tol, int | float) and tol >= 0 and np.isfinite(tol)):
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    return float(tol)


def tied_max(x: torch.Tensor, dim: int = -1, tol: float | None = None) -> torch.Tensor:
    """Bool mask of the entries within ``tol * max(1, |best|)`` of the maximum along ``dim`` (the tied best).

    ``-inf`` entries are never tied unless the whole slice is ``-inf``; NaN is an error upstream and is not tied.
    """
    t = _tol(x, tol)
    best = x.max(dim, keepdim=True).values
    scale = best.abs().clamp_min(1.0).nan_to_num(posinf=1.0)  # an all -inf slice: every entry tied
    return x >= best - t * scale


def argmax_tol(x: torch.Tensor, dim: int = -1, tol: float | None = None,
               key: torch.Tensor | None = None) -> torch.Tensor:
    """Index of the maximum along ``dim``, values within ``tol`` of it tied; ties go to the lowest index.

    Parameters
    ----------
    x : tensor
        Values to maximise.
    dim : int
        Dimension to reduce.
    tol : float, optional
        Absolute tolerance; default :func:`default_tol` of ``x.dtype``.
    key : tensor, optional
        Tie-break key broadcastable to ``x``: among the tied, the largest key wins (e.g. seeded uniform draws
        for a random tie-break, or ``-size`` to prefer smaller trials). Keys must be distinct among candidates
        that can tie; without it the lowest index wins.

    Returns
    -------
    Long tensor of ``x``'s shape without ``dim``.
    """
    tied = tied_max(x, dim, tol)
    if key is None:
        # argmax of a bool mask returns the first True (torch documents the first maximal index)
        return tied.to(torch.uint8).argmax(dim)
    key = torch.as_tensor(key, device=x.device).to(torch.float64).expand_as(x)
    return torch.where(tied, key, -torch.inf).argmax(dim)


def argmin_tol(x: torch.Tensor, dim: int = -1, tol: float | None = None,
               key: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`argmax_tol` of ``-x``: the minimum along ``dim``, ties to the lowest index (or the largest key)."""
    return argmax_tol(-x, dim, tol, key)


def argmax_lex(*keys: torch.Tensor, dim: int = -1, tol: float | None = None) -> torch.Tensor:
    """Lexicographic argmax: the entries tied (as in :func:`tied_max`) on the first key, then among those on the
    second key, and so on; remaining ties go to the lowest index.

    The robust form of ``argmax(primary + 1e-4 * secondary)``, where rounding noise in ``primary`` could outweigh
    the secondary term.
    """
    if not keys:
        raise ValueError("argmax_lex needs at least one key")
    mask = torch.ones_like(keys[0], dtype=torch.bool)
    for k in keys:
        k = torch.where(mask, k, torch.full_like(k, -torch.inf))
        mask = mask & tied_max(k, dim, tol)
    return mask.to(torch.uint8).argmax(dim)


def snap(x: torch.Tensor, tol: float | None = None) -> torch.Tensor:
    """``x`` rounded to a multiple of ``tol`` (default :func:`default_tol`), so values equal up to rounding compare
    equal; for grouping equal values (``==``) and for sort keys. Integer tensors are returned as they are."""
    t = _tol(x, tol)
    if t == 0.0:
        return x
    return torch.round(x / t) * t


def stable_order(x: torch.Tensor, dim: int = -1, descending: bool = False, tol: float | None = None) -> torch.Tensor:
    """Indices that sort ``x`` along ``dim``, values equal up to ``tol`` keeping their index order (a stable sort
    of :func:`snap`-ped values)."""
    return torch.sort(snap(x, tol), dim=dim, descending=descending, stable=True).indices


def stable_topk(x: torch.Tensor, k: int, dim: int = -1, tol: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(values, indices)`` of the ``k`` largest entries along ``dim``, ties (up to ``tol``) to the lowest index.

    ``torch.topk`` leaves the order of tied entries unspecified, and a tie at the cut-off then decides *which*
    entries are kept by rounding noise. Values are returned unrounded.
    """
    idx = stable_order(x, dim, descending=True, tol=tol).narrow(dim, 0, k)
    return x.gather(dim, idx), idx


def pick_lowest(values: np.ndarray, tol: float | None = None, key: np.ndarray | None = None) -> int:
    """NumPy twin of :func:`argmax_tol` for one vector: the index of the largest value, ties (within
    ``tol * max(1, |best|)``) to the smallest ``key`` and then to the lowest index."""
    v = np.asarray(values)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"values must be a non-empty 1-D array, got shape {v.shape}")
    t = default_tol(v.dtype) if tol is None else float(tol)
    best = v.max()
    tied = np.flatnonzero(v >= best - t * max(1.0, abs(best)))
    if key is None:
        return int(tied[0])
    return int(tied[np.argmin(np.asarray(key)[tied])])  # argmin returns the first minimum
