"""The one Pyro driver: NUTS chains and SVI loops for every caller.

:func:`run_nuts` runs NUTS chains on a potential function -- in forked worker processes where cores allow, a
progress bar per chain -- and :func:`run_svi` runs an SVI loop with a progress bar showing the ELBO. Their
settings are :class:`NUTSOptions` and :class:`SVIOptions`. ``causalplay.fit``, the NUTS/SVI cross-checks of
``infer_overhypothesis`` and the learners' SVI all run through them, with one optimiser (:func:`adam_step`: torch
Adam with a 10x learning-rate decay and gradient clipping); a Pyro model and guide take it through
:func:`elbo_step` inside :func:`pyro_sandbox`, which leaves the caller's random streams and param store alone.
"""

from __future__ import annotations

import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from multiprocessing import get_all_start_methods, get_context

import numpy as np
import torch

from . import checks as V
from ._futures import POLL_SECONDS
from .resources import single_thread

__all__ = ["NUTSOptions", "SVIOptions", "NUTSRun", "run_nuts", "run_svi", "adam_step", "elbo_step",
           "pyro_sandbox", "show_progress", "kernel_state"]


def show_progress(progress: bool | None) -> bool:
    """``progress``, or where it is None whether this is interactive use (a terminal on stderr, or Jupyter)."""
    if progress is not None:
        return bool(progress)
    return sys.stderr.isatty() or "ipykernel" in sys.modules


def _tqdm():
    """tqdm's notebook bars where Jupyter can draw them (ipywidgets installed), its text bars otherwise."""
    try:
        import ipywidgets  # noqa: F401
        from tqdm.auto import tqdm
    except ImportError:
        from tqdm import tqdm
    return tqdm


def _bool_or_none(value, name: str) -> None:
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"{name} must be True, False or None, got {V.describe(value)}")


def _deprecated_fields(options, replacements: dict[str, str]) -> None:
    """Warn for each deprecated field of ``options`` that is set (not None), naming what replaces it."""
    for name, new in replacements.items():
        if getattr(options, name) is not None:
            warnings.warn(f"{type(options).__name__}.{name} is deprecated and will be removed in 0.4; use {new}",
                          DeprecationWarning, stacklevel=4)


def check_retry_ladder(values, name: str = "retry_target_accept") -> tuple[float, ...]:
    """``values`` checked as target acceptance probabilities in (0, 1), as a tuple (NUTS's retry ladder)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence of numbers in (0, 1), got {V.describe(values)}")
    return tuple(V.real(a, name, low=0, high=1, low_open=True, high_open=True) for a in values)


def check_noise_floor(value, name: str = "noise_floor") -> float:
    """``value`` checked as a flip probability in (0, 0.5] (the learners' SVI's floor on a noiseless machine)."""
    return V.real(value, name, low=0, high=0.5, low_open=True)


@dataclass(frozen=True)
class NUTSOptions:
    """NUTS settings.

    Attributes
    ----------
    chains : int
        Independent chains (4 by default: R-hat needs several).
    warmup, draws : int
        Warm-up (adaptation) and kept iterations per chain (500 and 1000: the best model of docs/human-data.md
        needs 1000 draws for R-hat <= 1.01; 500 gave 1.013).
    target_accept : float
        Step-size adaptation target; higher means smaller steps and fewer divergences.
    max_tree_depth : int
    dense_mass : bool
        Adapt a dense mass matrix (all correlations) instead of a diagonal one.
    workers : int or None
        Processes running chains at once; ``None``: ``min(chains, os.cpu_count())``; 1 runs them in this process.
    threads : int or None
        torch threads per chain (1: small tensors are much faster on one thread; ``None`` leaves it alone).
    progress : bool or None
        A progress bar per chain; ``None``: in interactive use (a terminal, Jupyter).
    init_jitter, jit, retry_target_accept :
        Deprecated (settings of one caller, ``causalplay.fit``, which takes ``init_jitter`` and
        ``retry_target_accept`` as its own arguments and always traces the density). Setting one warns and still
        works in 0.3; they are removed in 0.4.
    """

    chains: int = 4
    warmup: int = 500
    draws: int = 1000
    target_accept: float = 0.9
    max_tree_depth: int = 8
    dense_mass: bool = False
    workers: int | None = None
    threads: int | None = 1
    progress: bool | None = None
    # deprecated (see the docstring); None: not set
    init_jitter: float | None = None
    jit: bool | None = None
    retry_target_accept: tuple[float, ...] | None = None

    def __post_init__(self):
        V.integer(self.chains, "NUTSOptions.chains", low=1)
        V.integer(self.warmup, "NUTSOptions.warmup", low=0)
        V.integer(self.draws, "NUTSOptions.draws", low=1)
        V.real(self.target_accept, "NUTSOptions.target_accept", low=0, high=1, low_open=True, high_open=True)
        V.integer(self.max_tree_depth, "NUTSOptions.max_tree_depth", low=1, high=15)
        if not isinstance(self.dense_mass, bool):
            raise TypeError(f"NUTSOptions.dense_mass must be a bool, got {V.describe(self.dense_mass)}")
        if self.workers is not None:
            V.integer(self.workers, "NUTSOptions.workers", low=1)
        if self.threads is not None:
            V.integer(self.threads, "NUTSOptions.threads", low=1)
        _bool_or_none(self.progress, "NUTSOptions.progress")
        _deprecated_fields(self, {"init_jitter": "causalplay.fit(..., init_jitter=...)",
                                  "jit": "nothing (causalplay.fit always traces the density)",
                                  "retry_target_accept": "causalplay.fit(..., retry_target_accept=...)"})
        if self.init_jitter is not None:
            V.real(self.init_jitter, "NUTSOptions.init_jitter", low=0)
        _bool_or_none(self.jit, "NUTSOptions.jit")
        if self.retry_target_accept is not None:
            object.__setattr__(self, "retry_target_accept", check_retry_ladder(self.retry_target_accept,
                                                                         "NUTSOptions.retry_target_accept"))

    def without_deprecated(self) -> NUTSOptions:
        """A copy with the deprecated fields unset (a caller that has read them passes the rest on)."""
        return replace(self, init_jitter=None, jit=None, retry_target_accept=None)

    def n_workers(self) -> int:
        """Processes to use: ``workers`` or ``min(chains, cpu count)``."""
        return min(self.chains, self.workers if self.workers is not None else (os.cpu_count() or 1))


@dataclass(frozen=True)
class SVIOptions:
    """SVI settings, one type for every caller. A field left at None takes the caller's default:

    ============================  =====  =========  =====  =====
    caller                        steps  particles  draws  seed
    ============================  =====  =========  =====  =====
    ``causalplay.fit``            1500   1          400    ``fit(seed=)``
    ``causalplay.infer`` (SVI)    800    64         --     0
    ``infer_overhypothesis``      1000   16         1000   its ``seed``
    ============================  =====  =========  =====  =====

    Attributes
    ----------
    steps : int or None
        Optimisation steps (the learning rate decays by 10x over them).
    lr : float
        Initial learning rate.
    particles : int or None
        Guide draws per step for the gradient estimate.
    draws : int or None
        Guide draws kept as the "posterior".
    seed : int or None
        Seed of the optimisation (``None``: the caller's seed).
    progress : bool or None
        A progress bar with the ELBO; ``None``: in interactive use (a terminal, Jupyter).
    init_scale, noise_floor :
        Deprecated (settings of one caller each: ``init_scale`` is the initial scale of ``causalplay.fit``'s guide,
        fixed at 0.05 from 0.4; ``noise_floor`` is the learners' SVI's, now an argument of
        :func:`causalplay.learners.svi.svi_fit` and a key of ``causalplay.infer(svi_options=...)``). Setting one
        warns and still works in 0.3; they are removed in 0.4.
    """

    steps: int | None = None
    lr: float = 0.05
    particles: int | None = None
    draws: int | None = None
    seed: int | None = None
    progress: bool | None = None
    # deprecated (see the docstring); None: not set
    init_scale: float | None = None
    noise_floor: float | None = None

    def __post_init__(self):
        for name in ("steps", "particles", "draws"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, V.integer(getattr(self, name), f"SVIOptions.{name}", low=1))
        if self.seed is not None:
            object.__setattr__(self, "seed", V.integer(self.seed, "SVIOptions.seed", low=0))
        object.__setattr__(self, "lr", V.real(self.lr, "SVIOptions.lr", low=0, low_open=True))
        _bool_or_none(self.progress, "SVIOptions.progress")
        _deprecated_fields(self, {"init_scale": "nothing (causalplay.fit's guide starts at scale 0.05)",
                                  "noise_floor": "causalplay.learners.svi.svi_fit(..., noise_floor=...) or "
                                                 "causalplay.infer(svi_options={'noise_floor': ...})"})
        if self.init_scale is not None:
            object.__setattr__(self, "init_scale", V.real(self.init_scale, "SVIOptions.init_scale", low=0,
                                                          low_open=True))
        if self.noise_floor is not None:
            object.__setattr__(self, "noise_floor", check_noise_floor(self.noise_floor, "SVIOptions.noise_floor"))

    def resolve(self, **defaults) -> SVIOptions:
        """A copy with every field that is None set from ``defaults`` (the caller's defaults), and no deprecated
        field (read those first)."""
        return replace(self.without_deprecated(), **{k: v for k, v in defaults.items() if getattr(self, k) is None})

    def without_deprecated(self) -> SVIOptions:
        """A copy with the deprecated fields unset (a caller that has read them passes the rest on)."""
        return replace(self, init_scale=None, noise_floor=None)

    @classmethod
    def from_dict(cls, options) -> SVIOptions:
        """From a dict of field names, naming unknown keys."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(f"unknown SVI option(s) {unknown}; expected fields of SVIOptions {sorted(known)}")
        return cls(**options)


# ---- SVI ------------------------------------------------------------------------------------------------------
def adam_step(params: list[torch.Tensor], loss_fn: Callable[[], torch.Tensor], options: SVIOptions,
              clip_norm: float | None = None, clip_value: float | None = None) -> Callable[[], float]:
    """One optimisation step of ``loss_fn`` (a differentiable loss, e.g. -ELBO) for :func:`run_svi`: torch Adam at
    ``options.lr`` decaying 10x over ``options.steps``; the gradient's norm clipped at ``clip_norm`` (one posterior:
    the whole gradient scaled down together) or each element at ``clip_value`` (a batch of independent posteriors:
    one episode's large gradient must not shrink the others' steps), if given."""
    optim = torch.optim.Adam(params, lr=options.lr)
    sched = torch.optim.lr_scheduler.ExponentialLR(optim, 0.1 ** (1 / options.steps))

    def step() -> float:
        optim.zero_grad()
        loss = loss_fn()
        loss.backward()
        if clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, clip_norm)
        if clip_value is not None:
            torch.nn.utils.clip_grad_value_(params, clip_value)
        optim.step()
        sched.step()
        return float(loss.detach())

    return step


def elbo_step(model, guide, elbo, options: SVIOptions, *args, clip_norm: float | None = None,
              clip_value: float | None = None) -> Callable[[], float]:
    """One SVI step of a Pyro ``model`` and ``guide`` on ``args`` for :func:`run_svi`: ``elbo.differentiable_loss``
    (a ``Trace_ELBO`` or ``TraceEnum_ELBO``) minimised by :func:`adam_step` over the guide's parameters (Pyro's
    param store: run it inside :func:`pyro_sandbox`). The parameters are created by one evaluation of the loss
    whose random draws are not kept, so the optimisation draws the same numbers whatever the guide."""
    from pyro import poutine

    with torch.random.fork_rng(devices=[]), poutine.trace(param_only=True) as found:
        elbo.differentiable_loss(model, guide, *args)
    params = [site["value"].unconstrained() for site in found.trace.nodes.values()]
    if not params:
        raise ValueError("the guide has no parameters to optimise (no pyro.param site and no PyroParam)")
    return adam_step(params, lambda: elbo.differentiable_loss(model, guide, *args), options, clip_norm=clip_norm,
                     clip_value=clip_value)


@contextmanager
def pyro_sandbox(seed: int) -> Iterator[None]:
    """Run Pyro seeded at ``seed`` with an empty param store; afterwards the caller's random streams (Python's,
    numpy's and torch's) and param store are as they were."""
    import pyro

    V.integer(seed, "seed", low=0)
    state = pyro.util.get_rng_state()
    try:
        with pyro.get_param_store().scope():
            pyro.set_rng_seed(seed)
            yield
    finally:
        pyro.util.set_rng_state(state)


def run_svi(step: Callable[[], float], options: SVIOptions, *, desc: str = "SVI") -> list[float]:
    """The SVI loop: ``options.steps`` calls of ``step`` (one optimisation step returning the loss, -ELBO), with
    a progress bar showing the ELBO. Returns the losses; a non-finite loss stops it with a
    ``FloatingPointError`` naming the step."""
    tqdm = _tqdm()
    steps = V.integer(options.steps, "SVIOptions.steps", low=1)
    losses: list[float] = []
    with tqdm(total=steps, desc=desc, disable=not show_progress(options.progress), mininterval=0.5) as bar:
        for i in range(steps):
            loss = step()
            if not math.isfinite(loss):
                raise FloatingPointError(f"{desc}: the loss became {loss} at step {i}; the evidence may be impossible "
                                         f"under the model, or lr={options.lr:g} too large")
            losses.append(loss)
            bar.update()
            if not bar.disable and (i % 25 == 0 or i == steps - 1):
                bar.set_postfix_str(f"ELBO {-loss:.4g}", refresh=False)
    return losses


# ---- NUTS -----------------------------------------------------------------------------------------------------
@dataclass
class NUTSRun:
    """What :func:`run_nuts` returns.

    Attributes
    ----------
    samples : dict site -> Tensor ``[chains, draws, ...]``
    diverging : ndarray ``[chains, draws]`` of bool
    step_size : list of float, the adapted step size of each chain
    cpu_seconds : float, CPU time of the chains (summed over worker processes)
    in_workers : bool, whether the chains ran in worker processes
    stats : dict name -> ndarray ``[chains, draws]``, the sampler's statistics of every kept draw (ArviZ's
        ``sample_stats`` names): ``lp`` (log density at the draw, unconstrained space: minus the potential),
        ``acceptance_rate`` (mean acceptance probability of the draw's trajectory), ``step_size``, ``n_steps``
        (leapfrog steps) and ``tree_depth`` (doublings of the trajectory, ``ceil(log2(n_steps + 1))``)
    """

    samples: dict
    diverging: np.ndarray
    step_size: list
    cpu_seconds: float
    in_workers: bool
    stats: dict = field(default_factory=dict)


_QUEUE = None  # a worker's end of the progress queue (set by the pool's initializer)


class _ChainBars:
    """Progress of NUTS chains: a bar per chain where the display stacks bars (a terminal, Jupyter's widgets), else
    one bar for all chains (a notebook's text output, a log), which stacked bars would garble."""

    def __init__(self, chains: int, total: int, desc: str):
        tqdm = _tqdm()
        self.stacked = sys.stderr.isatty() or tqdm.__module__ != "tqdm.std"
        self.done = [0] * chains
        if self.stacked:
            self.bars = [tqdm(total=total, desc=f"{desc} chain {c}", position=c, mininterval=0.5)
                         for c in range(chains)]
        else:
            self.bars = [tqdm(total=total * chains, desc=f"{desc}, {chains} chains", mininterval=0.5)]

    def update(self, chain: int, done: int, info: str) -> None:
        self.done[chain] = done
        bar = self.bars[chain] if self.stacked else self.bars[0]
        bar.n = done if self.stacked else sum(self.done)
        bar.set_postfix_str(info if self.stacked else f"chain {chain}: {info}", refresh=False)
        bar.update(0)  # redraws at most every mininterval

    def close(self) -> None:
        for b in self.bars:
            b.close()


def _set_queue(queue) -> None:
    global _QUEUE
    _QUEUE = queue


def kernel_state(kernel) -> tuple[float, float]:
    """The NUTS kernel's running mean acceptance probability and the potential energy at its current draw.

    The one place causalplay reads private state of a Pyro kernel: Pyro 1.9's public API shows the running mean
    only rounded to three decimals (``kernel.logging()["acc. prob"]``), too coarse to recover each draw's
    acceptance probability from, and keeps the potential energy of the current draw only in its cache. Everything
    else :func:`run_nuts` records comes through public API (``hook_fn``, ``kernel.step_size``,
    ``kernel.diagnostics()``, and counting the calls of the potential it passes in).
    ``tests/test_pyro.py`` checks both values against public ones (``kernel.logging()`` and the potential
    recomputed at the draw) at every draw, so an upgrade of Pyro that changes them fails there, not in a fit.

    Returns
    -------
    mean_accept_prob : float
        Mean acceptance probability since the start of the current stage (warm-up, then the kept draws).
    lp : float
        Minus the potential energy at the current draw (NaN where the kernel holds none).

    Raises
    ------
    RuntimeError
        Where this version of Pyro's kernel no longer has these attributes.
    """
    try:
        mean, pe = kernel._mean_accept_prob, kernel._potential_energy_last
    except AttributeError as e:
        import pyro

        raise RuntimeError(f"pyro {pyro.__version__}: {type(kernel).__name__} has no {e.name}; "
                           "causalplay.core.pyro.kernel_state reads it for the sampler statistics (see its docstring)"
                           ) from e
    return float(mean), float("nan") if pe is None else -float(pe)


class _DrawStats:
    """Per-draw statistics of one chain, recorded by the MCMC ``hook_fn`` (Pyro keeps only running means): the
    acceptance probability from the running mean's update, the leapfrog steps by counting the calls of the
    potential (one per leapfrog step while sampling), ``lp``, the step size and the divergent draws. Recording draws
    no random numbers, so the draws are the same with or without it."""

    def __init__(self, potential: Callable):
        self.potential = potential
        self.calls = 0
        self.mean_acc = 0.0
        self.rec: dict[str, list] = {"lp": [], "acceptance_rate": [], "step_size": [], "n_steps": []}
        self.divergences: list[int] = []

    def counted(self, q):
        self.calls += 1
        return self.potential(q)

    def record(self, kernel, stage: str, i: int) -> None:
        if not stage.startswith("Sample"):
            self.calls = 0
            return
        n = i + 1  # Pyro's running mean restarts with the kept draws
        m, lp = kernel_state(kernel)
        self.rec["acceptance_rate"].append(n * m - (n - 1) * self.mean_acc)
        self.mean_acc = m
        self.rec["lp"].append(lp)
        self.rec["step_size"].append(float(kernel.step_size))
        self.rec["n_steps"].append(self.calls)
        self.calls = 0
        # the kept draws that diverged: what Pyro yields as the chain's diagnostics after its last draw (read here,
        # not from MCMC.diagnostics(), which also computes ESS and R-hat by FFT: in a forked worker whose parent ran
        # an FFT before, that FFT never returns)
        self.divergences = list(kernel.diagnostics()["divergences"])

    def arrays(self) -> dict:
        stats = {k: np.asarray(v, dtype=np.int64 if k == "n_steps" else float) for k, v in self.rec.items()}
        stats["tree_depth"] = np.ceil(np.log2(stats["n_steps"] + 1)).astype(np.int64)
        return stats


def _chain(setup: Callable, opts: NUTSOptions, seed: int | None, chain: int, bars: _ChainBars | None = None) -> dict:
    """One chain: ``setup(chain) -> (potential_fn, initial_params)``, seeded ``seed + 1000 * chain``."""
    from pyro.infer import MCMC, NUTS
    from pyro.util import set_rng_seed

    c0 = time.process_time()
    total, last = opts.warmup + opts.draws, [0.0]

    def hook(kernel, params, stage, i):
        stats.record(kernel, stage, i)
        if bars is None and _QUEUE is None:
            return
        sampling = stage.startswith("Sample")
        done = i + 1 + (opts.warmup if sampling else 0)
        now = time.monotonic()
        if done < total and now - last[0] < 0.5:
            return
        last[0] = now
        # Pyro records divergences of the kept draws only (none in warm-up); kernel.diagnostics() divides by the
        # kept draws so far, so it is read only once there are some
        n_div = len(kernel.diagnostics()["divergences"]) if sampling else 0
        info = f"step {float(kernel.step_size):.2g}, {n_div} divergent"
        if bars is not None:
            bars.update(chain, done, info)
        elif _QUEUE is not None:
            _QUEUE.put((chain, done, info))

    with single_thread(opts.threads):
        potential, q0 = setup(chain)
        stats = _DrawStats(potential)
        if seed is not None:
            set_rng_seed(seed + 1000 * chain)
        kernel = NUTS(potential_fn=stats.counted, target_accept_prob=opts.target_accept,
                      max_tree_depth=opts.max_tree_depth, full_mass=opts.dense_mass)
        mcmc = MCMC(kernel, num_samples=opts.draws, warmup_steps=opts.warmup, num_chains=1, initial_params=q0,
                    disable_progbar=True, hook_fn=hook)
        mcmc.run()
    smp = {k: v.detach() for k, v in mcmc.get_samples().items()}
    div = np.zeros(opts.draws, dtype=bool)
    div[np.asarray(stats.divergences, dtype=int)] = True
    step = float(kernel.step_size) if hasattr(kernel, "step_size") else float("nan")
    return {"samples": smp, "diverging": div, "cpu": time.process_time() - c0, "step_size": step,
            "stats": stats.arrays()}


def run_nuts(setup: Callable, options: NUTSOptions, *, seed: int | None = 0, desc: str = "NUTS") -> NUTSRun:
    """NUTS chains on the potential (negative log density) that ``setup(chain)`` builds.

    Parameters
    ----------
    setup : callable ``chain -> (potential_fn, initial_params)``
        Builds chain ``chain``'s potential (a function of a dict site -> unconstrained tensor) and its start; it
        runs in the chain's process, so a traced density is traced there. Picklable (a module-level function or
        a ``functools.partial`` of one) when chains run in worker processes.
    options : NUTSOptions
        ``chains`` chains in ``n_workers()`` processes (forked where the platform can), ``threads`` torch threads
        each; a progress bar per chain when ``progress`` (by default in interactive use).
    seed : int or None
        Chain ``c`` seeds Pyro's RNGs with ``seed + 1000 * c`` right before sampling; None leaves them as they are.
    desc : str
        Label of the progress bars.

    Notes
    -----
    Each chain is one ``MCMC(num_chains=1)`` in a process pool of ours, not Pyro's ``MCMC(num_chains=...)``,
    because measured (``benchmarks/bench_nuts_chains.py``, ``docs/dev/pyro.md``) Pyro's multi-chain path

    * runs the chains in parallel only where ``num_chains <= cpu_count() - 1``, otherwise one after another in
      one RNG stream, so a seed's draws depend on the machine's core count (4 chains on 2 cores: other draws than
      the same run in parallel); here chain ``c``'s draws depend on ``seed`` and ``c`` only, in 1 process or many;
    * was slower: 4 chains x (100 + 100) on 2 loaded cores, median of 2 rounds, eight schools 92 s (one after
      another) and 136 s (4 spawned processes) against 69 s for this pool (2 processes); 10 normals 42 s and
      52 s against 32 s;
    * sends one potential to every chain, pickled for spawned workers: a ``torch.jit`` traced density cannot be
      pickled, while ``setup(chain)`` here traces it in the chain's process; and the per-draw statistics a
      ``hook_fn`` records stay in Pyro's workers.

    It shows a progress bar per chain too (where it runs them in parallel).
    """
    workers = options.n_workers()
    progress = show_progress(options.progress)
    bars = _ChainBars(options.chains, options.warmup + options.draws, desc) if progress else None
    try:
        if workers > 1:
            # fork: worker processes need no re-import of the caller's script (spawn would, and breaks unguarded
            # scripts); each chain sets its own torch threads before any tensor work.
            ctx = get_context("fork" if "fork" in get_all_start_methods() else "spawn")
            queue = ctx.SimpleQueue() if progress else None
            with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_set_queue, initargs=(queue,)) as ex:
                futs = [ex.submit(_chain, setup, options, seed, c) for c in range(options.chains)]
                while pending := [f for f in futs if not f.done()]:  # polls: Ctrl-C stops the wait, bars move
                    wait_futures(pending, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                    while queue is not None and not queue.empty():
                        bars.update(*queue.get())
                out = [f.result() for f in futs]
        else:
            out = [_chain(setup, options, seed, c, bars) for c in range(options.chains)]
    finally:
        if bars is not None:
            bars.close()
    samples = {k: torch.stack([o["samples"][k] for o in out]) for k in out[0]["samples"]}
    return NUTSRun(samples, np.stack([o["diverging"] for o in out]), [o["step_size"] for o in out],
                   sum(o["cpu"] for o in out), workers > 1,
                   {k: np.stack([o["stats"][k] for o in out]) for k in out[0]["stats"]})
