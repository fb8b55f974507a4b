"""Blicket sets as integer codes (``code = sum_i x_i 2**i``): :func:`set_to_code` and :func:`code_to_set`, the
batched :func:`codes_to_vectors` / :func:`vectors_to_codes`, and :func:`popcount` (set sizes)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch

from .checks import integer

__all__ = ["set_to_code", "code_to_set", "codes_to_vectors", "vectors_to_codes", "popcount"]


# -- blicket sets <-> integer codes ------------------------------------------------------------------------------
def set_to_code(objects: Iterable[int]) -> int:
    """Integer code ``sum_i 2**i`` of a set of object indices (``{0, 2} -> 5``)."""
    code = 0
    for i in objects:
        i = integer(i, "object index", low=0)
        code |= 1 << i
    return code


def code_to_set(code: int) -> tuple[int, ...]:
    """Object indices of an integer code, ascending (``5 -> (0, 2)``)."""
    code = integer(code, "code", low=0)
    return tuple(i for i in range(code.bit_length()) if code >> i & 1)


def vectors_to_codes(x: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """Codes ``sum_i x_i 2**i`` (int64) of 0/1 vectors ``x[..., N]`` (``N <= 62``); numpy in, numpy out."""
    n = x.shape[-1]
    if n > 62:
        raise ValueError(f"integer codes need at most 62 objects, got {n}")
    if isinstance(x, np.ndarray):
        return (x.astype(np.int64) << np.arange(n, dtype=np.int64)).sum(-1)
    return (x.to(torch.int64) << torch.arange(n, device=x.device)).sum(-1)


def popcount(codes: np.ndarray) -> np.ndarray:
    """Number of objects in each blicket set of int64 ``codes`` (the number of set bits)."""
    out = np.zeros_like(codes)
    for i in range(int(codes.max(initial=0)).bit_length()):
        out += (codes >> i) & 1
    return out


def codes_to_vectors(codes: torch.Tensor | np.ndarray, n_objects: int) -> torch.Tensor | np.ndarray:
    """``bool [..., n_objects]`` vectors of int64 codes; numpy in, numpy out."""
    if isinstance(codes, np.ndarray):
        return ((codes.astype(np.int64)[..., None] >> np.arange(n_objects, dtype=np.int64)) & 1).astype(bool)
    return ((codes.to(torch.int64)[..., None] >> torch.arange(n_objects, device=codes.device)) & 1).bool()
