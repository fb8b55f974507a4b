"""Simulation-based calibration (Talts, Betancourt, Simpson, Vehtari & Gelman 2018) of the fitting pipeline.

For each of ``sims`` simulations: draw every parameter from the model's prior (group-level and shared values, then
the participants), simulate participants of that population on the study's designs
(:func:`causalplay.fitting.simulate`), fit them exactly as real data are fitted (:func:`causalplay.fit`, NUTS or
SVI), and record the **rank** of each true population parameter among ``L`` posterior draws (how many draws fall
below it: ``0 .. L``). If the fit computes the posterior correctly, each rank is uniform on ``0 .. L``; a U shape
says the posterior is too narrow (typical of mean-field SVI), a hump too wide, a slope biased.

::

    from causalplay.fitting import sbc
    res = sbc("eig_sweep_single", designs, method="svi", sims=100)      # designs: one per participant
    res.uniformity()      # chi-square test per parameter
    res.plot("sbc.png")   # ECDF difference with 95% bands, and rank histograms

The simulations are independent: with ``executor`` (:func:`causalplay.bench.executors.make_executor`) they run in
parallel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from ..core import checks as V
from ..core._futures import wait_result
from ..core.design import Design
from ..core.pyro import NUTSOptions, SVIOptions, check_retry_ladder
from ..models.choice import ChoiceModel, LearnerConfig, get_model
from .parameterisation import Parameterisation

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from ..data import TrialData

__all__ = ["sbc", "SBCResult", "rank_uniformity"]


@dataclass
class SBCResult:
    """Ranks of the true population parameters among ``L`` posterior draws, one row per simulation.

    Attributes
    ----------
    ranks : DataFrame ``[sims, parameters]`` of ints in ``0 .. L`` (columns: the fit's group-level and shared sites,
        e.g. ``beta_mu``, ``beta_sigma``, ``rho_raw``, on the unconstrained scale the sampler sees)
    L : int
    model, method : str
    diagnostics : DataFrame -- per simulation: participants, choices, seconds, and the fit's convergence checks
        (NUTS: R-hat, bulk ESS, divergences; SVI: whether the ELBO stopped improving)
    """

    ranks: pd.DataFrame
    L: int
    model: str
    method: str
    diagnostics: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def sims(self) -> int:
        return len(self.ranks)

    @classmethod
    def concat(cls, parts: Sequence[SBCResult]) -> SBCResult:
        """One result of runs of the same model, method and ``L`` over disjoint simulations (``sbc(first=...)``)."""
        parts = list(parts)
        if not parts or len({(p.model, p.method, p.L) for p in parts}) != 1:
            raise ValueError("SBCResult.concat needs at least one result, all of one model, method and L")
        ranks = pd.concat([p.ranks for p in parts])
        if ranks.index.has_duplicates:
            twice = sorted(set(ranks.index[ranks.index.duplicated()]))
            raise ValueError(f"SBCResult.concat: simulation(s) {twice[:5]} appear twice")
        return cls(ranks.sort_index(), parts[0].L, parts[0].model, parts[0].method,
                   pd.concat([p.diagnostics for p in parts]).sort_index())

    def uniformity(self, bins: int | None = None) -> pd.DataFrame:
        """Per parameter: the chi-square test of uniform ranks (:func:`rank_uniformity`) and the mean rank
        relative to ``L / 2``."""
        return rank_uniformity(self.ranks, self.L, bins)

    def plot(self, path=None, kind: str = "both"):
        """ECDF-difference plots (the ranks' ECDF minus the uniform CDF, with a pointwise 95% binomial band) and/or
        rank histograms (with the 95% band of a bin's count under uniformity), one panel per parameter; saved to
        ``path`` if given. Returns the matplotlib figure."""
        import matplotlib

        if path is not None:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from scipy.stats import binom

        V.choice(kind, "kind", ("ecdf", "hist", "both"))
        cols = list(self.ranks.columns)
        kinds = ["ecdf", "hist"] if kind == "both" else [kind]
        width = min(5, len(cols))  # panels per row; a parameter's ECDF and histogram one above the other
        bands = math.ceil(len(cols) / width)
        fig, grid = plt.subplots(bands * len(kinds), width, figsize=(2.4 * width, 2.0 * bands * len(kinds)),
                                 squeeze=False)
        n, L = self.sims, self.L
        u = (np.arange(L + 1) + 1) / (L + 1)  # the uniform CDF at each rank
        lo, hi = binom.ppf(0.025, n, u) / n - u, binom.ppf(0.975, n, u) / n - u
        bins = max([b for b in range(2, min(20, L + 1) + 1) if (L + 1) % b == 0 and n / b >= 2] or [_bins(L, n)])
        for ax in grid.flat:
            ax.set_visible(False)
        for j, c in enumerate(cols):
            r = self.ranks[c].to_numpy()
            band, col = divmod(j, width)
            axes = {k: grid[band * len(kinds) + i, col] for i, k in enumerate(kinds)}
            for ax in axes.values():
                ax.set_visible(True)
            if "ecdf" in axes:
                ax = axes["ecdf"]
                ecdf = (r[None, :] <= np.arange(L + 1)[:, None]).mean(1)
                ax.fill_between(np.arange(L + 1), lo, hi, color="0.85", step="mid")
                ax.step(np.arange(L + 1), ecdf - u, where="mid", color="C0")
                ax.axhline(0, color="0.5", lw=0.5)
                ax.set_title(c, fontsize=8)
                ax.tick_params(labelsize=6)
            if "hist" in axes:
                ax = axes["hist"]
                counts = np.bincount(r * bins // (L + 1), minlength=bins)
                p = 1 / bins
                ax.fill_between([-0.5, bins - 0.5], binom.ppf(0.025, n, p), binom.ppf(0.975, n, p), color="0.85")
                ax.bar(np.arange(bins), counts, color="C0", width=0.9)
                ax.set_title(c, fontsize=8)
                ax.tick_params(labelsize=6)
        fig.suptitle(f"SBC of {self.model} ({self.method}, {n} simulations, L = {L})", fontsize=9)
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=120)
        return fig


def _bins(L: int, n: int) -> int:
    """Equal groups of the ``L + 1`` ranks with about 5 or more expected per group (the chi-square rule of thumb),
    at most 20."""
    ok = [b for b in range(2, min(20, L + 1) + 1) if (L + 1) % b == 0 and n / b >= 5]
    return max(ok) if ok else 1


def rank_uniformity(ranks: pd.DataFrame, L: int, bins: int | None = None) -> pd.DataFrame:
    """Chi-square test that each column of ``ranks`` (ints in ``0 .. L``) is uniform.

    The ``L + 1`` ranks are grouped into ``bins`` equal groups (default: the most, up to 20, that divide ``L + 1``
    and leave at least 5 expected per group); ``p_value`` is ``scipy.stats.chisquare``'s with ``bins - 1`` degrees of
    freedom. ``mean_rank`` is the mean of ``rank / L`` (0.5 when unbiased) with its standard error under uniformity.
    """
    from scipy.stats import chisquare

    L = V.integer(L, "L", low=1)
    r = ranks.to_numpy()
    if r.size and (r.min() < 0 or r.max() > L):
        raise ValueError(f"ranks must lie in 0 .. L={L}, got {r.min()} .. {r.max()}")
    n = len(ranks)
    b = _bins(L, n) if bins is None else V.integer(bins, "bins", low=2)
    if (L + 1) % b:
        raise ValueError(f"bins={b} does not divide the L + 1 = {L + 1} ranks into equal groups")
    if b < 2:
        raise ValueError(f"{n} simulations are too few for a chi-square test on {L + 1} ranks (5 per bin needed)")
    out = []
    for c in ranks.columns:
        counts = np.bincount(ranks[c].to_numpy() * b // (L + 1), minlength=b)
        stat, p = chisquare(counts)
        x = ranks[c].to_numpy() / L
        out.append({"parameter": c, "chi2": float(stat), "bins": b, "p_value": float(p), "mean_rank": float(x.mean()),
                    "mean_rank_se": math.sqrt((L + 2) / (12 * L) / n)})
    return pd.DataFrame(out).set_index("parameter")


def _one(i: int, model: str | ChoiceModel, judgement: str | None, designs: list[Design], n_objects: int, method: str,
         nuts: NUTSOptions, svi: SVIOptions, learner: LearnerConfig, hierarchical: bool, L: int, seed: int,
         max_tests: int, retry: tuple[float, ...]) -> dict:
    """Simulation ``i``: prior draw, simulated participants, fit, ranks (a module-level function for executors)."""
    import time
    import warnings

    from .inference import fit
    from .simulation import simulate

    cm = get_model(model, judgement)
    P = len(designs)
    gen = torch.Generator().manual_seed(seed + 7919 * i)
    par = Parameterisation(cm, hierarchical, P)
    raw = par.prior_draws(1, gen)
    theta = {k: v[0] for k, v in par.theta(raw).items()}
    data = simulate(cm, theta, None, n_objects, learner=learner, seed=seed + 7919 * i + 1, max_tests=max_tests,
                    designs=designs)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:  # kept and reported per simulation, not hidden
        warnings.simplefilter("always")
        f = fit(data, cm, hierarchical=hierarchical, method=method, nuts=nuts, svi=svi, learner=learner,
                seed=seed + i, warn=False, retry_target_accept=retry)
        d = f.diagnostics(warn=False)
    flat = f.flat_raw()
    total = flat[next(iter(flat))].shape[0]
    if total < L:
        raise ValueError(f"the fit has {total} posterior draws, fewer than L={L}")
    keep = torch.as_tensor(np.round(np.linspace(0, total - 1, L)).astype(np.int64))  # thinned: less autocorrelation
    ranks = {s: int((flat[s][keep] < raw[s][0]).sum()) for s in par.group_sites()}
    diag = {"sim": i, "participants": P, "choices": data.n_choices, "seconds": time.perf_counter() - t0,
            "ok": bool(d["ok"]), "problems": "; ".join(d["problems"]),
            "warnings": "; ".join(sorted({str(w.message)[:200] for w in caught}))}
    for k in ("rhat_max", "ess_bulk_min", "divergences", "elbo_drift", "elbo_converged"):
        if k in d:
            diag[k] = d[k]
    return {"ranks": ranks, "diag": diag}


def sbc(model: str | ChoiceModel, designs: Sequence[Design] | TrialData, *, method: str = "svi", sims: int = 100,
        L: int = 99, nuts: NUTSOptions | None = None, svi: SVIOptions | None = None, judgement: str | None = None,
        learner: LearnerConfig | None = None, hierarchical: bool = True, max_tests: int = 30, seed: int = 0,
        first: int = 0, executor: Executor | None = None,
        retry_target_accept: Sequence[float] = (0.95, 0.99)) -> SBCResult:
    """Simulation-based calibration of fitting ``model`` on a study (module docstring).

    Parameters
    ----------
    model : model name (spec) or ChoiceModel
    designs : sequence of causalplay.design.Design, or TrialData
        One design per simulated participant (the study); trial data stand for the designs their participants met
        (:func:`causalplay.design.designs_of`: world, demonstrations, told count).
    method : {"svi", "nuts"}
    sims : int
        Simulations (each one fit).
    L : int
        Posterior draws each rank is taken among (thinned evenly from the fit's draws; ``L + 1`` possible ranks).
    nuts, svi : NUTSOptions, SVIOptions
        Settings of the fits (as :func:`causalplay.fit`).
    judgement, learner, hierarchical
        As :func:`causalplay.fit`.
    max_tests : int
        Simulated participants stop by then (a design's own budget wins).
    seed : int
    first : int
        Index of the first simulation: runs ``first .. first + sims - 1`` (each simulation's seeds follow from
        ``seed`` and its index), so a long run can be split and joined with :meth:`SBCResult.concat`.
    executor : concurrent.futures.Executor, optional
        Runs the simulations in parallel; None: here, one after the other.
    retry_target_accept : sequence of float
        NUTS: the retry ladder of :func:`causalplay.fit` (the default is fit's, so each simulation is fitted as
        people are). ``()`` keeps each simulation's first fit: with few draws per chain the ESS criterion fails
        on most fits and the ladder triples the cost; each fit's R-hat, ESS and divergences stay in
        ``diagnostics`` either way.

    Returns
    -------
    SBCResult
    """
    from ..core.design import designs_of

    V.choice(method, "method", ("svi", "nuts"))
    sims = V.integer(sims, "sims", low=1)
    L = V.integer(L, "L", low=1)
    seed = V.integer(seed, "seed")
    if not isinstance(designs, Sequence):
        designs = list(designs_of(designs).values())
    designs = list(designs)
    if not designs or any(not isinstance(d, Design) for d in designs):
        raise TypeError("designs must be a non-empty sequence of causalplay.design.Design, or TrialData")
    if len({d.n_objects for d in designs}) > 1:
        raise ValueError(f"designs must share n_objects, got {sorted({d.n_objects for d in designs})}")
    cm = get_model(model, judgement)
    nuts = NUTSOptions(progress=False) if nuts is None else nuts
    svi = SVIOptions(progress=False) if svi is None else svi
    learner = learner or LearnerConfig()
    retry = check_retry_ladder(retry_target_accept)
    args = (cm, None, designs, designs[0].n_objects, method, nuts,
            svi, learner, bool(hierarchical), L, seed, max_tests, retry)
    first = V.integer(first, "first", low=0)
    idx = range(first, first + sims)
    if executor is None:
        res = [_one(i, *args) for i in idx]
    else:
        res = [wait_result(f) for f in [executor.submit(_one, i, *args) for i in idx]]
    ranks = pd.DataFrame([r["ranks"] for r in res], index=pd.Index(list(idx), name="sim"))
    return SBCResult(ranks, L, cm.name, method, pd.DataFrame([r["diag"] for r in res]).set_index("sim"))
