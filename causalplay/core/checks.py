"""Argument checks at the public edge.

Every public entry (``infer``, ``infer_batch``, ``Beliefs`` methods, ``fit``, the envs, the loaders) turns its
arguments into plain Python values here, so inner tensor code can assume valid input. Python numbers, numpy
scalars and 0-d numpy/torch arrays are accepted wherever a number is; booleans are never numbers. Every error
names the argument, shows the value and says what was expected.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import numpy as np
import torch

__all__ = ["real", "probability", "integer", "choice", "float_dtype", "describe"]


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
