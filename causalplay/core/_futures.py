"""Waiting on futures so that Ctrl-C still works.

The kernel may hand a process's SIGINT to any of its threads (a pool's manager thread, a queue feeder, a worker
thread of a ``ThreadPoolExecutor``). Python runs the handler in the main thread, but a main thread blocked in
``future.result()`` without a timeout only sees the ``KeyboardInterrupt`` when that future finishes, which may
be minutes later. Every place in the package that waits on workers uses :func:`wait_result` instead (the
benchmark runner, NUTS chains in processes, the LLM client's concurrent requests, the fitting script's pool).
Kept free of heavy imports so that any module can use it.
"""

from __future__ import annotations

from concurrent.futures import Future
from concurrent.futures import wait as wait_futures

__all__ = ["POLL_SECONDS", "wait_result"]

#: How often a driver waiting on its workers wakes up to notice Ctrl-C.
POLL_SECONDS = 0.2


def wait_result(future: Future, poll: float = POLL_SECONDS):
    """``future.result()``, waking every ``poll`` seconds so that Ctrl-C stops the waiting (main) thread promptly
    even when the signal went to another thread."""
    if not isinstance(future, Future):
        raise TypeError(f"wait_result needs a concurrent.futures.Future, got {type(future).__name__} {future!r}")
    while not future.done():
        wait_futures([future], timeout=poll)
    return future.result()
