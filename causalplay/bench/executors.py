"""The executor registry: ``serial``, ``process``, ``ray`` and ``dask``, all plain ``concurrent.futures`` executors.

The benchmark (and any other sweep, e.g. ``causalplay train`` over seeds) hands pure functions to an executor
and gets their return values back through futures; only the driver writes files. Every executor here adds one
method to the ``concurrent.futures.Executor`` interface, :meth:`abort`: stop everything now (Ctrl-C), dropping
queued work and killing running tasks where the backend allows.

>>> from causalplay.bench.executors import make_executor
>>> with make_executor("serial") as ex:
...     ex.submit(pow, 2, 10).result()
1024

``ray`` and ``dask`` are extras (``pip install 'causalplay[ray]'`` / ``'causalplay[dask]'``). Both connect to an
existing cluster when given an address and otherwise start a local one that lives as long as the executor.
The functions they run must be importable on every worker (``causalplay`` installed on every node).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from multiprocessing.connection import wait as wait_for_sentinels
from pathlib import Path

from ..core._futures import wait_result  # re-exported: part of this module's API (see __all__)

__all__ = ["EXECUTORS", "EXTRAS", "SerialExecutor", "ProcessExecutor", "RayExecutor", "DaskExecutor",
           "make_executor", "check_executor", "abort", "wait_result", "available"]


def _one_thread() -> None:
    """One torch thread: each worker has one CPU, so intra-op threads would oversubscribe."""
    import torch

    torch.set_num_threads(1)


def _private_tqdm_lock() -> None:
    """Give this forked worker tqdm write locks of its own.

    tqdm guards every bar with a lock that spans processes (a ``multiprocessing.RLock`` the driver created and
    the fork handed down) plus a thread lock. :meth:`ProcessExecutor.abort` terminates workers wherever they
    are; one killed inside a progress bar (dagma draws one per NOTEARS fit) left that semaphore held for ever,
    and the driver's own bar then blocked on it: Ctrl-C never returned (a flake of the suite, reproduced with
    a worker stuck in ``SemLock.acquire`` under ``tqdm.__init__``). A fork can likewise copy a thread lock held
    by the driver's tqdm monitor thread. Nobody sees a worker's bars, so each worker gets private locks: no lock
    the driver takes can ever be held by a process it kills.
    """
    from tqdm import std

    std.TqdmDefaultWriteLock.mp_lock = None  # tqdm's own fallback where multiprocessing locks are unavailable
    std.TqdmDefaultWriteLock.th_lock = std.TRLock()
    classes = [std.tqdm]
    while classes:  # bar classes keep the lock object they built in the driver: drop it, the next bar makes one
        cls = classes.pop()
        classes += cls.__subclasses__()
        if "_lock" in vars(cls):
            delattr(cls, "_lock")


def _init_worker() -> None:
    """Process-pool initialiser: one torch thread, private tqdm locks; Ctrl-C is the driver's to handle (it
    aborts the pool)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _private_tqdm_lock()
    _one_thread()


class SerialExecutor(Executor):
    """Runs each task in this process when it is submitted (debugging, tests, 1-core machines).

    An ``Exception`` raised by a task is handed to the caller through its future; ``KeyboardInterrupt`` and
    ``SystemExit`` are not caught, so Ctrl-C stops the whole run, not just the current task.
    """

    #: At most this many tasks are worth having in flight at once (the runner submits lazily).
    slots = 1

    def __init__(self) -> None:
        self._shutdown = False

    def submit(self, fn: Callable, /, *args, **kwargs) -> Future:
        """Run ``fn(*args, **kwargs)`` now and return a finished future."""
        if self._shutdown:
            raise RuntimeError("cannot submit to a SerialExecutor after shutdown")
        f: Future = Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except Exception as e:  # noqa: BLE001 - handed to the caller through the future
            f.set_exception(e)
        return f

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Refuse further tasks (nothing is ever pending)."""
        self._shutdown = True

    def abort(self) -> None:
        """Nothing runs in the background: same as :meth:`shutdown`."""
        self.shutdown()


class ProcessExecutor(ProcessPoolExecutor):
    """A process pool whose workers ignore SIGINT and use one torch thread; :meth:`abort` kills them.

    Parameters
    ----------
    workers : int or None
        Number of processes (``None``: one per CPU).
    """

    def __init__(self, workers: int | None = None) -> None:
        self.slots = workers or os.cpu_count() or 1
        super().__init__(max_workers=self.slots, initializer=_init_worker)

    def abort(self) -> None:
        """Cancel queued tasks and terminate the worker processes (their results are lost, never half-written).

        When it returns, every future of the pool is done: cancelled, or failed with ``BrokenProcessPool``."""
        procs = list((getattr(self, "_processes", None) or {}).values())
        manager = getattr(self, "_executor_manager_thread", None)  # shutdown() forgets it
        self.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            if p.is_alive():
                p.terminate()
        # The pool's manager thread also joins these processes. Its waitpid can reap a child while ours gets
        # ECHILD, and then ``join``/``is_alive`` report "running" until that thread stores the exit code; so
        # wait on the sentinels (readable once a child is gone, whoever reaps it), then until an exit code is
        # known. A worker that outlives SIGTERM gets SIGKILL.
        sentinels = {p.sentinel: p for p in procs}
        # (waiting on no sentinels would sleep the whole timeout)
        stubborn = set(sentinels) - set(wait_for_sentinels(list(sentinels), timeout=5)) if sentinels else set()
        if stubborn:
            for fd in stubborn:
                sentinels[fd].kill()
            wait_for_sentinels(list(stubborn), timeout=5)
        deadline = time.monotonic() + 5
        while any(p.exitcode is None for p in procs) and time.monotonic() < deadline:
            time.sleep(0.01)
        # Tasks already handed to a worker are "running" and cannot be cancelled; the manager thread marks them
        # failed (BrokenProcessPool) once it sees their worker gone, then exits. Wait for it, so that every future
        # is settled when abort returns (seen: a future still "running" after abort, 4 times in 20 when both
        # tasks had reached the worker's queue).
        if manager is not None:
            manager.join(timeout=5)


def _call(fn: Callable, args: tuple, kwargs: dict):
    """Body of a Ray or Dask task: one torch thread (each task has one CPU), then the function."""
    _one_thread()
    return fn(*args, **kwargs)


class RayExecutor(Executor):
    """Ray core behind the ``Executor`` interface: one Ray task (``num_cpus=1``) per :meth:`submit`.

    Parameters
    ----------
    workers : int or None
        CPUs of the local cluster started when ``address`` is ``None`` (``None``: all of them). Ignored when
        connecting to a cluster, whose size is its own.
    address : str or None
        ``"host:port"`` of a running cluster (``ray start --head`` prints it) or ``"auto"``; ``None`` starts a
        local cluster for the lifetime of this executor.
    temp_dir : str or None
        Ray's session folder for a local cluster (sockets, logs). Default: a fresh folder under the system temp
        dir, removed on :meth:`shutdown`, so nothing is left in the user's home.

    Notes
    -----
    A local cluster is started with usage statistics off and without the dashboard. Ray's token authentication
    stays on: when no token is configured (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH``, ``~/.ray/auth_token``) a
    random one is put in this process's environment (inherited by the cluster's processes) instead of Ray
    writing ``~/.ray/auth_token``.
    """

    def __init__(self, workers: int | None = None, address: str | None = None, temp_dir: str | None = None) -> None:
        import ray

        self._ray = ray
        self._own_temp = None
        self._refs: dict = {}
        self._connected_here = not ray.is_initialized()
        if self._connected_here:
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            kwargs: dict = {"log_to_driver": False, "logging_level": "WARNING"}
            if address is None:
                _ray_token_without_home()
                if temp_dir is None:
                    temp_dir = self._own_temp = tempfile.mkdtemp(prefix="causalplay-ray-")
                kwargs.update(num_cpus=workers or os.cpu_count() or 1, include_dashboard=False,
                              _temp_dir=str(Path(temp_dir).resolve()))
            ray.init(address=address, **kwargs)
        self.slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._task = ray.remote(num_cpus=1, max_retries=0)(_call)

    def submit(self, fn: Callable, /, *args, **kwargs) -> Future:
        """Start ``fn(*args, **kwargs)`` as a Ray task; its future resolves to the return value."""
        ref = self._task.remote(fn, args, kwargs)
        fut = ref.future()
        self._refs[fut] = ref
        fut.add_done_callback(lambda f: self._refs.pop(f, None))
        return fut

    def abort(self) -> None:
        """Force-cancel every task not finished yet, then :meth:`shutdown`."""
        for ref in list(self._refs.values()):
            with contextlib.suppress(Exception):  # finished meanwhile, or the cluster is gone
                self._ray.cancel(ref, force=True)
        self.shutdown(wait=False)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Disconnect (and stop the local cluster if this executor started it; remove its temp dir)."""
        if cancel_futures:
            for ref in list(self._refs.values()):
                self._ray.cancel(ref)
        if self._connected_here and self._ray.is_initialized():
            self._ray.shutdown()
        if self._own_temp:
            shutil.rmtree(self._own_temp, ignore_errors=True)
            self._own_temp = None


def _ray_token_without_home() -> None:
    """Give a new local Ray cluster a token through the environment unless one is configured already."""
    configured = any(os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"))
    if configured or (Path.home() / ".ray" / "auth_token").exists():
        return
    import secrets

    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)


class DaskExecutor(Executor):
    """Dask distributed: ``Client(...).get_executor()`` (a real ``concurrent.futures.Executor``).

    Parameters
    ----------
    workers : int or None
        Worker processes (one thread each) of the local cluster started when ``address`` is ``None``.
    address : str or None
        Scheduler address of a running cluster (``tcp://host:8786``); ``None`` starts a ``LocalCluster`` on
        127.0.0.1 for the lifetime of this executor (its scratch folder in the system temp dir, removed after).
    """

    def __init__(self, workers: int | None = None, address: str | None = None) -> None:
        import dask
        from distributed import Client, LocalCluster

        self._cluster, self._own_temp = None, None
        if address is None:
            n = workers or os.cpu_count() or 1
            self._own_temp = tempfile.mkdtemp(prefix="causalplay-dask-")
            with dask.config.set({"temporary-directory": self._own_temp}):  # the scheduler's scratch folder too
                self._cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                             host="127.0.0.1", local_directory=self._own_temp)
            self._client = Client(self._cluster)
        else:
            self._client = Client(address)
        self.slots = max(1, sum(self._client.nthreads().values()))
        self._executor = self._client.get_executor(pure=False)

    def submit(self, fn: Callable, /, *args, **kwargs) -> Future:
        """Run ``fn(*args, **kwargs)`` on a Dask worker."""
        return self._executor.submit(_call, fn, args, kwargs)

    def abort(self) -> None:
        """Cancel everything not finished yet, then :meth:`shutdown`."""
        self.shutdown(wait=False, cancel_futures=True)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Close the client (and the local cluster if this executor started it)."""
        try:
            if cancel_futures:
                self._client.cancel(list(getattr(self._executor, "_futures", ())), force=True)
            self._executor.shutdown(wait=wait and not cancel_futures)
        finally:
            self._client.close()
            if self._cluster is not None:
                self._cluster.close()
            if self._own_temp:
                shutil.rmtree(self._own_temp, ignore_errors=True)
                self._own_temp = None


#: kind -> (factory(workers, address), extra that provides it or None, module that must be importable).
EXECUTORS: dict[str, tuple[Callable[[int | None, str | None], Executor], str | None, str | None]] = {
    "serial": (lambda workers, address: SerialExecutor(), None, None),
    "process": (lambda workers, address: ProcessExecutor(workers), None, None),
    "ray": (lambda workers, address: RayExecutor(workers, address), "ray", "ray"),
    "dask": (lambda workers, address: DaskExecutor(workers, address), "dask", "distributed"),
}

#: kinds that take ``address``.
EXTRAS = {kind for kind, (_, extra, _) in EXECUTORS.items() if extra}


def available(kind: str) -> bool:
    """Whether ``kind`` is registered and its extra (if any) is installed."""
    if kind not in EXECUTORS:
        return False
    module = EXECUTORS[kind][2]
    return module is None or importlib.util.find_spec(module) is not None


def check_executor(kind: str, workers: int | None = None, address: str | None = None) -> None:
    """Raise ``ValueError`` (naming the argument) unless ``make_executor(kind, workers, address)`` can work.

    Parameters
    ----------
    kind : str
        One of :data:`EXECUTORS`.
    workers : int or None
        ``None`` or an int >= 1.
    address : str or None
        Only for ``ray`` and ``dask``.

    Raises
    ------
    ValueError
        Unknown kind, missing extra, bad ``workers``, or an ``address`` for a kind without clusters.
    """
    if kind not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}; got {kind!r}")
    if not available(kind):
        extra = EXECUTORS[kind][1]
        raise ValueError(f"executor {kind!r} needs the {extra!r} extra: pip install 'causalplay[{extra}]'")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be None or an int >= 1, got {workers!r}")
    if address is not None:
        if kind not in EXTRAS:
            raise ValueError(f"address is only for the executors {sorted(EXTRAS)}, not {kind!r}; got {address!r}")
        if not isinstance(address, str) or not address.strip():
            raise ValueError(f"address must be a non-empty 'host:port' string, got {address!r}")


def make_executor(kind: str = "process", workers: int | None = None, address: str | None = None) -> Executor:
    """Build an executor from the registry (:data:`EXECUTORS`).

    Parameters
    ----------
    kind : {"serial", "process", "ray", "dask"}
        ``serial``: in this process; ``process``: a local process pool; ``ray`` / ``dask``: a cluster (local, or
        the one at ``address``).
    workers : int or None
        Processes of a local pool or cluster (``None``: one per CPU).
    address : str or None
        Cluster to connect to (``ray`` and ``dask`` only).

    Returns
    -------
    concurrent.futures.Executor
        With a ``slots`` attribute (tasks worth having in flight) and an ``abort()`` method (stop now). Use it as
        a context manager or call ``shutdown()``.

    Examples
    --------
    Any sweep over seeds can use it the way the benchmark does (``causalplay train --executor``)::

        with make_executor(kind, workers, address) as ex:
            futures = [ex.submit(train_one, cfg, seed) for seed in seeds]  # train_one: a module-level function
            results = [f.result() for f in futures]                        # returned to the driver
    """
    check_executor(kind, workers, address)
    return EXECUTORS[kind][0](workers, address)


def abort(executor: Executor) -> None:
    """Stop ``executor`` now: its ``abort()`` if it has one, else ``shutdown(wait=False, cancel_futures=True)``."""
    stop = getattr(executor, "abort", None)
    if callable(stop):
        stop()
    else:
        executor.shutdown(wait=False, cancel_futures=True)
