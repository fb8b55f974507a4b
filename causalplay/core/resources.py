"""Resources of the tensor code: the memory budget of temporary tensors (:func:`max_memory`) and torch's thread
count for a block (:func:`single_thread`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from .checks import real

__all__ = ["max_memory", "default_max_memory", "single_thread"]


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
