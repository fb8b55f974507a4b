"""Validation at the public edge, in one place.

Every public entry (``infer``, ``infer_batch``, ``Beliefs`` methods, ``fit``, the envs, the loaders) turns its
arguments into plain Python values here, so inner tensor code can assume valid input. Python numbers, numpy
scalars and 0-d numpy/torch arrays are accepted wherever a number is; booleans are never numbers. Every error
names the argument, shows the value and says what was expected.

Also the one helper pair for blicket sets as integer codes (``code = sum_i x_i 2**i``):
:func:`set_to_code` and :func:`code_to_set` (and the batched :func:`codes_to_vectors` /
:func:`vectors_to_codes`).
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import numpy as np
import torch

__all__ = ["real", "probability", "integer", "choice", "float_dtype", "set_to_code", "code_to_set", "codes_to_vectors",
           "vectors_to_codes", "popcount", "describe", "single_thread"]


def describe(value) -> str:
    """``repr`` of a value with its type, short enough for an error message."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    module = type(value).__module__
    return f"{text} ({'' if module == 'builtins' else module + '.'}{type(value).__name__})"


def _scalar(value):
    """Unwrap numpy/torch scalars and 0-d arrays to a Python number; anything else is returned unchanged."""
    if type(value) in (float, int):
        return value
    if isinstance(value, torch.Tensor):
        number = value.ndim == 0 and value.dtype != torch.bool and not value.is_complex()
    else:
        number = isinstance(value, (np.ndarray, np.generic)) and value.ndim == 0 and value.dtype.kind in "iuf"
    return value.item() if number else value


def real(value, name: str, *, low: float | None = None, high: float | None = None,
         low_open: bool = False, high_open: bool = False, finite: bool = True) -> float:
    """``value`` as a Python float, checked against ``[low, high]`` (open ends with ``low_open``/``high_open``).

    Raises
    ------
    TypeError
        Not a real number (booleans, strings, arrays with more than one element).
    ValueError
        NaN, infinite (when ``finite``), or outside the range.
    """
    v = _scalar(value)
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a real number (Python, numpy or 0-d torch scalar), got {describe(value)}")
    v = float(v)
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    rng = f"{lo}{'-inf' if low is None else f'{low:g}'}, {'inf' if high is None else f'{high:g}'}{hi}"
    if math.isnan(v) or (finite and math.isinf(v)):
        raise ValueError(f"{name} must be a finite number in {rng}, got {v!r}")
    if ((low is not None and (v < low or (low_open and v == low)))
            or (high is not None and (v > high or (high_open and v == high)))):
        raise ValueError(f"{name} must be in {rng}, got {v!r}")
    return v


def probability(value, name: str) -> float:
    """``value`` as a probability in ``[0, 1]`` (a Python float)."""
    v = _scalar(value)
    if type(v) is float and 0.0 <= v <= 1.0:
        return v
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a probability in [0, 1] (a Python, numpy or 0-d torch number), "
                        f"got {describe(value)}")
    v = float(v)
    if not 0.0 <= v <= 1.0:  # also catches NaN
        raise ValueError(f"{name} must be a probability in [0, 1], got {v!r}")
    return v


def integer(value, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` as a Python int in ``[low, high]``; integral floats such as ``2.0`` are rejected."""
    v = _scalar(value)
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an integer (Python, numpy or 0-d torch), got {describe(value)}")
    v = int(v)
    if (low is not None and v < low) or (high is not None and v > high):
        bound = f">= {low}" if high is None else f"<= {high}" if low is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be an integer {bound}, got {v}")
    return v


def choice(value, name: str, options: Iterable[str]) -> str:
    """``value`` if it is one of ``options`` (strings), else a ``ValueError`` listing them."""
    opts = tuple(options)
    if not isinstance(value, str) or value not in opts:
        raise ValueError(f"{name} must be one of {', '.join(repr(o) for o in opts)}, got {value!r}")
    return value


def float_dtype(dtype) -> torch.dtype:
    """``dtype`` if it is ``torch.float32`` or ``torch.float64`` (the dtypes inference runs in), else a
    ``ValueError``."""
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype!r}")
    return dtype


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


# -- memory budget -----------------------------------------------------------------------------------------------
def _available_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


@functools.lru_cache(maxsize=1)
def default_max_memory() -> int:
    """Default bound on temporary tensors, bytes: a quarter of the RAM available when first asked (read once per
    process), clamped to [256 MiB, 2 GiB]."""
    avail = _available_bytes()
    if avail is None:
        return 1 << 30
    return int(min(max(avail // 4, 256 << 20), 2 << 30))


_UNITS = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "kib": 1024, "mib": 1024**2, "gib": 1024**3}


def max_memory(value, name: str = "max_memory") -> int:
    """A memory budget in bytes: None (the default), a positive number of bytes, or a string like ``"2GiB"``."""
    if value is None:
        return default_max_memory()
    if isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        for unit in sorted(_UNITS, key=len, reverse=True):
            if text.endswith(unit):
                try:
                    number = float(text[: -len(unit)])
                except ValueError:
                    break
                if number > 0 and math.isfinite(number):
                    return int(number * _UNITS[unit])
                break
        raise ValueError(f"{name} must be a positive number of bytes or a size such as '2GiB' or '500MB', "
                         f"got {value!r}")
    return int(real(value, name, low=0, low_open=True))


@contextmanager
def single_thread(threads: int | None = 1) -> Iterator[None]:
    """Run the block with ``torch.set_num_threads(threads)`` and restore the caller's setting afterwards.

    One history is a few small tensor operations; two or more OpenMP threads only add synchronisation
    (and oversubscribe when callers loop). ``threads=None`` leaves torch's setting alone.
    """
    old = torch.get_num_threads()
    if threads is None or threads == old:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(old)
