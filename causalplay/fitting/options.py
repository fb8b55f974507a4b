"""Settings of the two fitting methods, as validated dataclasses."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..core import _validate as V

__all__ = ["NUTSOptions", "SVIOptions"]


@dataclass(frozen=True)
class NUTSOptions:
    """NUTS settings.

    Attributes
    ----------
    chains : int
        Independent chains (4 by default: R-hat needs several, and 4 x 500 draws give bulk ESS well above 400
        when the chains mix).
    warmup, draws : int
        Warm-up (adaptation) and kept iterations per chain.
    target_accept : float
        Step-size adaptation target; higher means smaller steps and fewer divergences.
    max_tree_depth : int
    dense_mass : bool
        Adapt a dense mass matrix (all correlations) instead of a diagonal one.
    workers : int or None
        Processes running chains at once; ``None``: ``min(chains, os.cpu_count())``; 1 runs them in this process.
    init_jitter : float
        Chains start at the prior centre plus ``init_jitter`` x N(0, 1) on every unconstrained site
        (over-dispersed starts, so R-hat can detect chains that never meet).
    jit : bool
        Trace the log density with ``torch.jit.trace`` (removes Python overhead; the graph has no data-dependent
        branches, so the trace is exact).
    threads : int or None
        torch threads per chain (1: small tensors are much faster on one thread; ``None`` leaves it alone).
    progress : bool
        Progress bars (only when chains run in this process).
    """

    chains: int = 4
    warmup: int = 500
    draws: int = 500
    target_accept: float = 0.9
    max_tree_depth: int = 8
    dense_mass: bool = False
    workers: int | None = None
    init_jitter: float = 0.5
    jit: bool = True
    threads: int | None = 1
    progress: bool = False

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
        V.real(self.init_jitter, "NUTSOptions.init_jitter", low=0)
        if self.threads is not None:
            V.integer(self.threads, "NUTSOptions.threads", low=1)

    def n_workers(self) -> int:
        """Processes to use: ``workers`` or ``min(chains, cpu count)``."""
        return min(self.chains, self.workers if self.workers is not None else (os.cpu_count() or 1))


@dataclass(frozen=True)
class SVIOptions:
    """SVI settings: a mean-field normal on the unconstrained sites trained with Adam (gradient norm clipped at 10).

    Attributes
    ----------
    steps : int
        Optimisation steps (the learning rate decays by 10x over them).
    lr : float
        Initial Adam learning rate.
    draws : int
        Guide draws kept as the "posterior".
    init_scale : float
        Initial guide scale.
    progress : bool
    """

    steps: int = 1500
    lr: float = 0.05
    draws: int = 400
    init_scale: float = 0.05
    progress: bool = False

    def __post_init__(self):
        V.integer(self.steps, "SVIOptions.steps", low=1)
        V.real(self.lr, "SVIOptions.lr", low=0, low_open=True)
        V.integer(self.draws, "SVIOptions.draws", low=1)
        V.real(self.init_scale, "SVIOptions.init_scale", low=0, low_open=True)
