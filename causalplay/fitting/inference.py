"""The fit itself: the posterior of a choice model given trial data, by NUTS or SVI, as a :class:`Fit`."""

from __future__ import annotations

import logging
import math
import os
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyro
import torch

from ..core import checks as V
from ..core.pyro import NUTSOptions, SVIOptions, adam_step, check_retry_ladder, run_nuts, run_svi
from ..core.resources import single_thread
from ..models.choice import ChoiceModel, Features, LearnerConfig, build_features, get_model
from .identify import POOLING_MAX, pooling_factors
from .parameterisation import Parameterisation

if TYPE_CHECKING:
    import arviz as az

    from ..data import TrialData

__all__ = ["fit", "load_fit", "Fit", "ConvergenceWarning", "log_density", "pyro_model"]


_log = logging.getLogger(__name__)


class ConvergenceWarning(UserWarning):
    """A NUTS fit missed a convergence criterion (R-hat, bulk ESS, divergences); do not interpret it as is."""


# ---- the model ----------------------------------------------------------------------------------------------
def _data_log_lik(feats: Features, cm: ChoiceModel, theta: dict, judgements: bool) -> torch.Tensor:
    lp = cm.log_probs(feats, theta).gather(-1, feats.choice[:, None]).sum()
    if judgements:
        jl = cm.judgement_log_probs(feats, theta)
        ok = feats.judgement >= 0
        lp = lp + jl.gather(-1, feats.judgement.clamp_min(0)[:, None]).squeeze(-1)[ok].sum()
    return lp


def pyro_model(feats: Features, par: Parameterisation, judgements: bool) -> None:
    """The model in Pyro (the specification; NUTS and SVI use :func:`log_density`, tested equal to it up to the
    log-sigma Jacobian)."""
    raw = par.pyro_sample()
    pyro.factor("data", _data_log_lik(feats, par.model, par.theta(raw), judgements))


def log_density(feats: Features, par: Parameterisation, judgements: bool, q: dict) -> torch.Tensor:
    """Log posterior density (unnormalised) at the unconstrained point ``q`` (NUTS's potential is its negative)."""
    lp, raw = par.log_prior(q)
    return lp + _data_log_lik(feats, par.model, par.theta(raw), judgements)


# ---- NUTS and SVI through the one driver (causalplay.core.pyro) ------------------------------------------------
def _pyro_name(site: str) -> str:
    """The Pyro model's name of an unconstrained site: ``<name>_logsigma`` is sampled as ``<name>_sigma``."""
    return site[: -len("_logsigma")] + "_sigma" if site.endswith("_logsigma") else site


def _chain_setup(feats: Features, par: Parameterisation, judgements: bool, opts: NUTSOptions, seed: int,
                 init_jitter: float, jit: bool, chain: int):
    """Chain ``chain``'s potential and start (run in the chain's process: the density is traced there)."""
    gen = torch.Generator().manual_seed(seed + 7919 * chain)
    q0 = par.init(init_jitter if opts.chains > 1 else 0.0, gen)
    keys, joint = _traced_density(feats, par, judgements, q0, jit)

    def potential(q):
        return -joint(*(q[k] for k in keys))

    return potential, q0


def _nuts(feats: Features, par: Parameterisation, judgements: bool, opts: NUTSOptions, seed: int, init_jitter: float,
          jit: bool):
    run = run_nuts(partial(_chain_setup, feats, par, judgements, opts, seed, init_jitter, jit), opts, seed=seed,
                   desc=f"NUTS {par.model.name}")
    smp = dict(run.samples)
    for k in [k for k in smp if k.endswith("_logsigma")]:  # moved to the end, as the posterior has always had them
        smp[_pyro_name(k)] = smp.pop(k).exp()
    return smp, run.diverging, run.cpu_seconds if run.in_workers else 0.0, run.step_size, run.stats


def _traced_density(feats: Features, par: Parameterisation, judgements: bool, q0: dict, jit: bool):
    """The site names and ``joint(*values)``: :func:`log_density` at the point with those values, ``jit``: traced."""
    # torch keeps every traced graph, with its constant tensors, for the life of the process (one global
    # compilation unit: pytorch/pytorch#35600). The data tensors therefore go in as inputs, not constants, so the
    # graph left behind does not hold a fit's data (with SVI's optimised plans off, see _svi, this took the
    # memory left per fit from ~6 MB to ~2 MB).
    keys = list(q0)
    names = [f.name for f in fields(feats) if isinstance(getattr(feats, f.name), torch.Tensor)]
    data = tuple(getattr(feats, n) for n in names)

    def density(*args):
        vals, tensors = args[:len(keys)], args[len(keys):]
        return log_density(replace(feats, **dict(zip(names, tensors, strict=True))), par, judgements,
                           dict(zip(keys, vals, strict=True)))

    if jit:
        with warnings.catch_warnings():  # tracer warnings about python scalars: the graph has no data branches
            warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
            density = torch.jit.trace(density, tuple(q0.values()) + data, check_trace=False)

    def joint(*vals):
        return density(*vals, *data)

    return keys, joint


def _svi(feats: Features, par: Parameterisation, judgements: bool, opts: SVIOptions, seed: int, init_scale: float):
    """Mean-field normal variational posterior on the unconstrained NUTS sites (the same density NUTS uses,
    JIT-traced), one reparameterised sample per step, Adam with gradient-norm clipping and a 10x decay.

    This is Pyro's ``AutoNormal`` (scales on the log scale) maximising ``Trace_ELBO`` through
    :func:`causalplay.core.pyro.elbo_step`, written out: the same draws to rounding (``tests/test_fit.py``), in
    half the time (Pyro traces some 60 sites per step, about 5 ms, where the density itself takes 1-3 ms). The
    loss leaves out the guide's log density of the standard normal draws, whose gradient is zero."""
    gen = torch.Generator().manual_seed(seed)
    q0 = par.init()
    keys, joint = _traced_density(feats, par, judgements, q0, True)
    loc = [q0[k].clone().requires_grad_(True) for k in keys]
    log_scale = [torch.full_like(q0[k], math.log(init_scale)).requires_grad_(True) for k in keys]

    def draw():
        eps = [torch.randn(m.shape, generator=gen, dtype=m.dtype) for m in loc]
        return joint(*(m + s.exp() * e for m, s, e in zip(loc, log_scale, eps, strict=True)))

    def loss_fn():  # -ELBO up to a constant (Gaussian entropy); one particle: exactly -(joint + entropy)
        return -(sum(draw() for _ in range(opts.particles)) / opts.particles + sum(s.sum() for s in log_scale))

    # Without the profiling executor's optimised plans: they are kept for the life of the process (~40 MB per fit, so a
    # model-recovery worker running hundreds of fits was killed for memory) and bought nothing here (7.9 s vs 8.4 s per
    # 1500-step fit of eig_sweep; losses equal to 1e-15). NUTS keeps them: its chains run in worker processes that exit,
    # and the NUTS numbers in the docs were made with them (a run without them adapts another step size).
    with torch.jit.optimized_execution(False):
        losses = run_svi(adam_step(loc + log_scale, loss_fn, opts, clip_norm=10.0), opts, desc=f"SVI {par.model.name}")
    with torch.no_grad():
        raw = {}
        for k, m, s in zip(keys, loc, log_scale, strict=True):
            d = m + s.exp() * torch.randn((opts.draws, *m.shape), generator=gen, dtype=m.dtype)
            raw[_pyro_name(k)] = (d.exp() if k.endswith("_logsigma") else d)[None]
    return raw, losses


# ---- the result -----------------------------------------------------------------------------------------------
@dataclass
class Fit:
    """A fitted choice model: posterior draws as ArviZ InferenceData plus helpers.

    Attributes
    ----------
    model : ChoiceModel
    par : Parameterisation
    method : {"nuts", "svi"}
    options : NUTSOptions or SVIOptions
    learner : LearnerConfig
    data : causalplay.data.TrialData -- the fitted participants
    feats : Features
    raw : dict site -> Tensor ``[chains, draws, ...]`` (Pyro naming)
    seconds, cpu_seconds : float -- wall and CPU time of the sampling (CPU summed over chain processes)
    judgements : bool -- whether the judgements were in the likelihood
    diverging : ndarray ``[chains, draws]`` of bool, or None -- NUTS's divergent transitions
    extra : dict -- ``load_average`` (after the fit), ``seed``; SVI: ``elbo_losses`` (the loss, -ELBO, at every
        step; see :attr:`elbo`); NUTS: ``step_size`` (per chain), ``sample_stats`` (per-draw sampler statistics,
        :attr:`causalplay.core.pyro.NUTSRun.stats`) and ``attempts`` (the earlier fits of the retry ladder that
        missed the convergence criteria, each a Fit)
    idata : arviz.InferenceData -- built from ``raw`` on first use; groups ``posterior`` (participant-level
        parameters over ``participant``), ``log_likelihood`` (``choice`` over ``decision``, ``judgement`` over
        ``participant``), ``posterior_predictive`` (a choice at every decision and a judgement drawn under every
        draw), ``observed_data``, ``constant_data`` (``true_blickets``: participant x object) and ``sample_stats``
        (NUTS: ``diverging``, ``lp``, ``acceptance_rate``, ``step_size``, ``n_steps``, ``tree_depth``; SVI:
        ``elbo`` over ``svi_step``); the layout is :mod:`causalplay.fitting.convert`'s. ArviZ's ``az.loo`` /
        ``az.waic`` / ``az.compare`` need ``var_name="choice"`` (what :func:`causalplay.compare` scores) or
        ``"judgement"`` when both are there.
    """

    model: ChoiceModel
    par: Parameterisation
    method: str
    options: NUTSOptions | SVIOptions
    learner: LearnerConfig
    data: TrialData
    feats: Features
    raw: dict
    seconds: float
    cpu_seconds: float
    judgements: bool = True
    diverging: np.ndarray | None = None
    extra: dict = field(default_factory=dict)
    _idata: az.InferenceData | None = field(default=None, repr=False)

    @property
    def idata(self) -> az.InferenceData:
        """The fit as ArviZ InferenceData, converted on first use: scoring held-out participants (cross-validation,
        model recovery) never needs it, and the pointwise log-likelihood it holds costs about a fifth of an SVI
        fit-and-score."""
        if self._idata is None:
            from .convert import to_idata

            self._idata = to_idata(self.par, self.feats, self.raw, self.judgements, self.diverging, self.data,
                                   stats=self.extra.get("sample_stats"),
                                   elbo=self.elbo if "elbo_losses" in self.extra else None,
                                   method=self.method, seed=self.extra.get("seed", 0))
        return self._idata

    @property
    def hierarchical(self) -> bool:
        return self.par.hierarchical

    # -- parameters
    def flat_raw(self) -> dict[str, torch.Tensor]:
        """Raw sites with chains and draws merged: ``[chains * draws, ...]``."""
        return {k: v.reshape(-1, *v.shape[2:]) for k, v in self.raw.items()}

    def theta(self) -> dict[str, torch.Tensor]:
        """Constrained parameters per participant, ``[chains * draws, P]`` each."""
        return self.par.theta(self.flat_raw())

    def participant_means(self) -> pd.DataFrame:
        """Posterior mean of each participant-level parameter (rows: participants)."""
        th = self.theta()
        cols = {p.name: th[p.name].mean(0).numpy() for p in self.model.all_params() if p.level == "participant"}
        return pd.DataFrame(cols, index=pd.Index(self.feats.ids, name="participant"))

    def participant_table(self, prob: float = 0.9) -> pd.DataFrame:
        """Per participant and participant-level parameter: posterior mean, sd and central ``prob`` interval."""
        prob = V.real(prob, "prob", low=0, high=1, low_open=True, high_open=True)
        th = self.theta()
        lo, hi = (1 - prob) / 2, 1 - (1 - prob) / 2
        rows = []
        for p in self.model.all_params():
            if p.level != "participant":
                continue
            v = th[p.name].numpy()
            q = np.quantile(v, [lo, hi], axis=0)
            rows += [{"participant": pid, "parameter": p.name, "mean": v[:, i].mean(), "sd": v[:, i].std(),
                      f"q{lo * 100:g}": q[0, i], f"q{hi * 100:g}": q[1, i]} for i, pid in enumerate(self.feats.ids)]
        return pd.DataFrame(rows)

    def summary(self, **kw) -> pd.DataFrame:
        """``az.summary`` of the group-level and shared parameters (participant-level ones with ``var_names``).

        Rows: ``<name>_mu`` and ``<name>_sigma``, the population mean and sd of a participant-level parameter on
        its unconstrained scale (before ``exp``/``sigmoid``; see the priors table of docs/human-data.md), and each
        shared parameter on its natural scale (``lapse``, ``rho``, ...). The sampler's own site of a shared
        parameter, ``<name>_raw`` (the unconstrained value; the same numbers as ``<name>`` where there is no
        transform), is left out; ``var_names=`` chooses other rows.
        """
        import arviz as az

        shared_raw = {p.name + "_raw" for p in self.model.all_params() if p.level == "shared"}
        kw.setdefault("var_names", [v for v in self.idata.posterior.data_vars
                                    if "participant" not in self.idata.posterior[v].dims and v not in shared_raw])
        if self.idata.posterior.sizes["chain"] < 2:
            kw.setdefault("kind", "stats")  # one chain (SVI): no R-hat/ESS to report
        return az.summary(self.idata, **kw)

    @property
    def elbo(self) -> np.ndarray:
        """SVI: the ELBO estimate (one guide draw, nats up to a constant) at every step (``-extra["elbo_losses"]``)."""
        if self.method != "svi" or "elbo_losses" not in self.extra:
            raise AttributeError(f"elbo: a {self.method} fit has no ELBO trace (it is SVI's)")
        return -np.asarray(self.extra["elbo_losses"], dtype=float)

    def diagnostics(self, rhat_max: float = 1.01, ess_min: float = 400.0, warn: bool = True,
                    nuts_check: bool | NUTSOptions = False, _stacklevel: int = 2) -> dict:
        """Whether the fit can be used as it is, and what to change if not.

        NUTS: worst R-hat, smallest bulk/tail ESS and divergences over all latent sites; not ``ok`` when they miss
        ``rhat_max`` / ``ess_min`` / 0 divergences. SVI: whether the ELBO stopped improving -- the mean over the
        last tenth of the steps against the tenth before (``elbo_drift`` nats, with its standard error ``se``
        from the step-to-step noise); not ``ok`` when it still rose by more than 2 SEs. With ``nuts_check`` (True
        or NUTSOptions) an SVI fit is also compared with a short NUTS fit (:meth:`nuts_check`).

        ``problems`` name each miss and ``advice`` says what to change; with ``warn`` a :class:`ConvergenceWarning`
        carries both. NUTS fits also report ``pooling``, the pooling factor of each participant-level parameter
        (:func:`causalplay.fitting.identify.pooling_factors`; hierarchical fits), and ``unidentified``, those at
        0.9 or above: the data do not set them per participant, and the advice is to share them.
        """
        import arviz as az

        post = self.idata.posterior[list(self.raw)]
        out = {"method": self.method, "model": self.model.name, "chains": int(post.sizes["chain"]),
               "draws": int(post.sizes["draw"]), "seconds": round(self.seconds, 1),
               "cpu_seconds": round(self.cpu_seconds, 1)}
        problems, advice = [], []
        if self.method == "nuts":
            if out["chains"] >= 2:
                rhat = az.rhat(post)
                ess_b, ess_t = az.ess(post, method="bulk"), az.ess(post, method="tail")
                worst = max(rhat.data_vars, key=lambda v: float(rhat[v].max()))
                low = min(ess_b.data_vars, key=lambda v: float(ess_b[v].min()))
                out.update(rhat_max=float(rhat[worst].max()), rhat_worst_site=worst,
                           ess_bulk_min=float(ess_b[low].min()), ess_bulk_worst_site=low,
                           ess_tail_min=float(min(float(ess_t[v].min()) for v in ess_t.data_vars)))
            out["divergences"] = int(self.idata.sample_stats["diverging"].sum())
            if out.get("rhat_max", 1.0) > rhat_max:
                problems.append(f"R-hat {out['rhat_max']:.3f} > {rhat_max} ({out['rhat_worst_site']})")
            if out.get("ess_bulk_min", np.inf) < ess_min:
                problems.append(f"bulk ESS {out['ess_bulk_min']:.0f} < {ess_min:g} ({out['ess_bulk_worst_site']})")
            if out["divergences"] > 0:
                problems.append(f"{out['divergences']} divergent transitions")
            if out["chains"] < 2:
                problems.append("R-hat needs at least 2 chains")
            out["pooling"] = pooling_factors(self.par, self.raw)
            out["unidentified"] = {k: v for k, v in out["pooling"].items() if v >= POOLING_MAX}
            if problems:
                advice = self._nuts_advice(out)
        elif "elbo_losses" in self.extra:  # (a fit rebuilt from a file saved without an ELBO trace has none)
            out.update(self._elbo_check())
            if not out["elbo_converged"]:
                problems.append(f"the ELBO still rose by {out['elbo_drift']:.1f} ± {out['elbo_drift_se']:.1f} nats "
                                f"over the last tenth of the {len(self.elbo)} steps" if out["elbo_drift"] == out[
                                    "elbo_drift"] else f"{len(self.elbo)} steps are too few to judge convergence")
                advice.append(f"run longer: svi=SVIOptions(steps={max(2 * len(self.elbo), 100)})")
        if self.method == "svi":
            out["note"] = "SVI posterior sds are too small (mean-field); use NUTS for intervals"
            if nuts_check is not False:
                chk = self.nuts_check(None if nuts_check is True else nuts_check)
                worst = chk["z"].abs().idxmax()
                out.update(nuts_check_max_z=float(chk.loc[worst, "z"]), nuts_check_worst_site=worst,
                           nuts_check_sd_ratio=float(chk["sd_ratio"].median()))
                if abs(out["nuts_check_max_z"]) > 2:
                    problems.append(f"SVI's mean of {worst} is {out['nuts_check_max_z']:+.1f} NUTS sds from NUTS's")
                    advice.append("use NUTS for this model: method='nuts'")
        out.update(ok=not problems, problems=problems, advice=advice)
        if warn and problems:
            warnings.warn(f"fit diagnostics of {self.model.name}: " + "; ".join(problems)
                          + (". To change: " + "; ".join(advice) if advice else ""), ConvergenceWarning,
                          stacklevel=_stacklevel)
        return out

    def _elbo_check(self) -> dict:
        elbo = self.elbo
        w = len(elbo) // 10
        if w < 5:
            return {"elbo_last": float(elbo[-1]), "elbo_drift": float("nan"), "elbo_drift_se": float("nan"),
                    "elbo_converged": False}
        a, b = elbo[-2 * w:-w], elbo[-w:]
        drift, se = float(b.mean() - a.mean()), float(math.sqrt(a.var(ddof=1) / w + b.var(ddof=1) / w))
        return {"elbo_last": float(b.mean()), "elbo_drift": drift, "elbo_drift_se": se,
                "elbo_converged": drift <= 2 * se}

    def _nuts_advice(self, d: dict) -> list[str]:
        """What to change for a NUTS fit that missed a criterion (``d``: its diagnostics)."""
        opts, out = self.options, []
        if d["divergences"]:
            out.append(f"smaller steps: nuts=NUTSOptions(target_accept={0.99 if opts.target_accept < 0.99 else 0.995})"
                       if opts.target_accept < 0.995 else "reparameterise (share a parameter, below)")
        if d.get("rhat_max", 1.0) > 1.01 or d.get("ess_bulk_min", np.inf) < 400 or d["chains"] < 2:
            out.append(f"run longer: nuts=NUTSOptions(chains={max(opts.chains, 4)}, draws={2 * opts.draws})")
        # participant-level parameters the data do not set per participant (pooling factor >= POOLING_MAX), and
        # funnels (a population spread near 0): NUTS mixes badly in both, for nothing the data can show; share them
        flat = self.flat_raw()
        weak = d.get("unidentified", {})
        narrow = [p.name for p in self.model.all_params() if p.level == "participant" and (
            p.name in weak or f"{p.name}_sigma" in flat and float(flat[f"{p.name}_sigma"].median()) < 0.3)]
        if narrow:
            why = []
            if weak:
                why.append(f"{', '.join(f'{k} (pooling factor {v:.2f})' for k, v in weak.items())} "
                           f"{'is' if len(weak) == 1 else 'are'} not identified per participant by these data")
            if funnel := [n for n in narrow if n not in weak]:
                why.append(f"the population spread of {', '.join(funnel)} is near 0 (a funnel NUTS mixes badly in)")
            out.append(f"{'; '.join(why)}: share {'it' if len(narrow) == 1 else 'them'}: "
                       f"model={self.model.with_shared(narrow).name!r}")
        return out

    def nuts_check(self, nuts: NUTSOptions | None = None) -> pd.DataFrame:
        """Compare this (SVI) fit with a short NUTS fit of the same model, data and seed (default 2 chains x
        (200 warm-up + 200 draws)): per group-level site, both means and sds, ``z`` = (SVI mean - NUTS mean) /
        NUTS sd and ``sd_ratio`` = SVI sd / NUTS sd (mean-field SVI: typically about 0.5)."""
        nuts = nuts or NUTSOptions(chains=2, warmup=200, draws=200, progress=self.options.progress)
        ref = fit(self.data, self.model, hierarchical=self.hierarchical, method="nuts", nuts=nuts,
                  judgements=self.judgements, learner=self.learner, seed=self.extra.get("seed", 0),
                  warn=False, retry_target_accept=())
        a, b = self.flat_raw(), ref.flat_raw()
        rows = {k: {"svi_mean": float(a[k].mean()), "svi_sd": float(a[k].std()), "nuts_mean": float(b[k].mean()),
                    "nuts_sd": float(b[k].std())} for k in self.par.group_sites()}
        t = pd.DataFrame.from_dict(rows, orient="index")
        t["z"] = (t["svi_mean"] - t["nuts_mean"]) / t["nuts_sd"]
        t["sd_ratio"] = t["svi_sd"] / t["nuts_sd"]
        return t

    # -- prediction (implemented in scoring / simulation)
    def score(self, data: TrialData, *, n_draws: int = 400, n_new: int = 5, seed: int = 0):
        """Held-out log predictive probability; see :func:`causalplay.fitting.scoring.heldout_score`."""
        from .scoring import heldout_score

        return heldout_score(self, data, n_draws=n_draws, n_new=n_new, seed=seed)

    def predict(self, data: TrialData, *, n_draws: int = 400, n_new: int = 5, seed: int = 0) -> az.InferenceData:
        """Predictions for participants **not** used in fitting, as ArviZ InferenceData.

        Each held-out participant is a new member of the fitted population, as in :meth:`score` (``n_draws``
        posterior draws of the group-level parameters x ``n_new`` new participants each). ``predictions``
        holds, for each of these ``n_draws * n_new`` draws (one chain), a ``choice`` drawn at each of the
        participant's observed decisions (given their own tests before it) and a ``judgement`` (-1 where none
        was given), over the dims ``decision`` and ``participant`` of the held-out data.
        ``predictions_constant_data`` holds what they did (``observed_choice``, ``observed_judgement``) and
        ``true_blickets``. ``fit.idata.extend(fit.predict(held_out))`` adds both groups to the fit's
        InferenceData (``to_netcdf`` then saves them with it).
        """
        from .convert import predictions_idata

        overlap = set(data.ids) & set(self.feats.ids)
        if overlap:
            raise ValueError(f"predict() is for participants not used in fitting; {sorted(overlap)[:5]} were fitted")
        n_draws = V.integer(n_draws, "n_draws", low=1)
        n_new = V.integer(n_new, "n_new", low=1)
        return predictions_idata(self, data, n_draws=n_draws, n_new=n_new, seed=V.integer(seed, "seed"))

    def simulate(self, n_participants: int | None = None, *, worlds=None, seed: int = 0, max_tests: int = 30):
        """Synthetic participants; see :func:`causalplay.fitting.simulation.simulate_fit`."""
        from .simulation import simulate_fit

        return simulate_fit(self, n_participants, worlds=worlds, seed=seed, max_tests=max_tests)


# ---- the entry point ------------------------------------------------------------------------------------------
def fit(data: TrialData, model: str | ChoiceModel = "eig_sweep", *, hierarchical: bool = True,
        method: str = "nuts", nuts: NUTSOptions | None = None, svi: SVIOptions | None = None,
        judgement: str | None = None, judgements: bool = True, learner: LearnerConfig | None = None,
        seed: int = 0, warn: bool = True, retry_target_accept: Sequence[float] = (0.95, 0.99),
        init_jitter: float = 0.5) -> Fit:
    """Fit a choice model to trial data.

    Parameters
    ----------
    data : causalplay.data.TrialData
    model : name in ``causalplay.models.choice.REGISTRY``, or a ChoiceModel
    hierarchical : bool
        Participant-level parameters drawn from group-level priors (non-centred), else independent priors.
    method : {"nuts", "svi"}
    nuts, svi : NUTSOptions, SVIOptions
        Settings of the method (defaults: 4 chains x (500 warm-up + 1000 draws), a progress bar per chain in
        interactive use; SVI: 1500 steps of a mean-field normal guide starting at scale 0.05, a progress bar with
        the ELBO).
    judgement : {"sample", "softmax"}, optional
        Judgement model (default: the model's own, posterior sampling).
    judgements : bool
        Include the final judgements in the likelihood (they inform the rule prior).
    learner : LearnerConfig
        The modelled learner's fixed assumptions (set prior, machine noise, minimum tests before stopping).
    seed : int
    warn : bool
        Emit a :class:`ConvergenceWarning`, saying what to change, when a NUTS fit (after its retries) misses R-hat
        <= 1.01, bulk ESS >= 400 or 0 divergences.
    retry_target_accept : sequence of float
        NUTS: a fit that misses the convergence criteria is run again, same seed, at each of these target
        acceptances above ``nuts.target_accept`` in turn until one meets them (``()``: no retries) -- unless a
        participant-level parameter is not identified per participant (pooling factor >= 0.9,
        :mod:`causalplay.fitting.identify`): smaller steps cannot fix that, so the retries are skipped and the
        warning names the model with it shared.
    init_jitter : float
        NUTS with several chains: each starts at the prior centre plus ``init_jitter`` x N(0, 1) on every
        unconstrained site (over-dispersed starts, so R-hat can detect chains that never meet).

    Returns
    -------
    Fit
    """
    from ..data import TrialData

    if not isinstance(data, TrialData):
        raise TypeError(f"data must be causalplay.data.TrialData (see load_trials), got {type(data).__name__}")
    V.choice(method, "method", ("nuts", "svi"))
    if len(data) == 0:
        raise ValueError("data has no participants")
    nuts = NUTSOptions() if nuts is None else nuts
    svi = SVIOptions() if svi is None else svi
    if not isinstance(nuts, NUTSOptions):
        raise TypeError(f"nuts must be NUTSOptions, got {V.describe(nuts)}")
    if not isinstance(svi, SVIOptions):
        raise TypeError(f"svi must be SVIOptions, got {V.describe(svi)}")
    V.integer(seed, "seed")
    # the deprecated per-caller fields of the options (removed in 0.4) still win where set
    retry = check_retry_ladder(retry_target_accept if nuts.retry_target_accept is None else nuts.retry_target_accept)
    init_jitter = V.real(init_jitter if nuts.init_jitter is None else nuts.init_jitter, "init_jitter", low=0)
    jit = True if nuts.jit is None else nuts.jit
    init_scale = 0.05 if svi.init_scale is None else svi.init_scale
    nuts = nuts.without_deprecated()
    svi = svi.resolve(steps=1500, particles=1, draws=400, seed=seed)
    cm = get_model(model, judgement)
    learner = learner or LearnerConfig()
    feats = build_features(data, learner)
    par = Parameterisation(cm, bool(hierarchical), feats.n_participants)
    if method == "svi":
        t0, c0 = time.perf_counter(), time.process_time()
        with single_thread(1):
            raw, losses = _svi(feats, par, judgements, svi, svi.seed, init_scale)
        extra = {"elbo_losses": losses, "load_average": os.getloadavg(), "seed": seed}
        return Fit(cm, par, "svi", svi, learner, data, feats, raw, time.perf_counter() - t0,
                   time.process_time() - c0, judgements, None, extra)
    # NUTS, and again at each larger target acceptance of the retry ladder until the diagnostics are met
    ladder = [nuts.target_accept] + [a for a in retry if a > nuts.target_accept]
    attempts: list[Fit] = []
    for accept in ladder:
        opts = replace(nuts, target_accept=accept)
        t0, c0 = time.perf_counter(), time.process_time()
        with single_thread(opts.threads):
            raw, diverging, child_cpu, steps, stats = _nuts(feats, par, judgements, opts, seed, init_jitter, jit)
        f = Fit(cm, par, "nuts", opts, learner, data, feats, raw, time.perf_counter() - t0,
                time.process_time() - c0 + child_cpu, judgements, diverging,
                {"step_size": steps, "sample_stats": stats, "load_average": os.getloadavg(), "seed": seed})
        if accept == ladder[-1]:
            break
        d = f.diagnostics(warn=False)
        if d["ok"]:
            break
        if d["unidentified"]:
            # Smaller steps cannot give these parameters per-participant values the data do not hold: the ladder
            # would spend two more fits (25 minutes of the Nexiom fit on 2 cores) to miss again. Stop; the
            # ConvergenceWarning says which model to fit instead.
            _log.warning("NUTS of %s at target acceptance %s: %s; %s not identified per participant (pooling "
                         "factor >= %s), so the retries at %s are skipped: fit model=%r instead", cm.name, accept,
                         "; ".join(d["problems"]), ", ".join(d["unidentified"]), POOLING_MAX,
                         ", ".join(map(str, ladder[len(attempts) + 1:])), cm.with_shared(list(d["unidentified"])).name)
            break
        _log.warning("NUTS of %s at target acceptance %s: %s; fitting again at %s (fit's retry_target_accept)",
                     cm.name, accept, "; ".join(d["problems"]), ladder[len(attempts) + 1])
        attempts.append(f)
    f.extra["attempts"] = attempts
    if warn:
        f.diagnostics(warn=True, _stacklevel=3)  # the warning points at the caller's fit(...)
    return f


def load_fit(idata, data: TrialData, *, model: str | ChoiceModel | None = None, judgement: str | None = None,
             hierarchical: bool | None = None, learner: LearnerConfig | None = None) -> Fit:
    """Rebuild a :class:`Fit` from its saved InferenceData (``Fit.idata.to_netcdf(path)``) and the fitted data.

    Model, judgement model, parameterisation, method and seed are read from the posterior's attributes unless
    given; NUTS's divergences, step sizes and sampler statistics and SVI's ELBO trace from ``sample_stats``. The
    InferenceData is kept as it is (``fit.idata``), with every group it has.
    """
    import arviz as az

    if not isinstance(idata, az.InferenceData):
        idata = az.from_netcdf(idata)
    attrs = idata.posterior.attrs
    model = model if model is not None else attrs.get("causalplay_model")
    judgement = judgement if judgement is not None else attrs.get("causalplay_judgement")
    hierarchical = bool(attrs.get("causalplay_hierarchical", 1)) if hierarchical is None else hierarchical
    if model is None:
        raise ValueError("the InferenceData does not say which model it is; pass model=")
    cm = get_model(model, judgement)
    learner = learner or LearnerConfig()
    feats = build_features(data, learner)
    if list(idata.posterior["participant"].values) != feats.ids:
        raise ValueError("data are not the participants of this fit (participant lists differ)")
    par = Parameterisation(cm, hierarchical, feats.n_participants)
    raw = {k: torch.as_tensor(idata.posterior[k].values) for k in map(_pyro_name, par.sites())}
    ss = idata.sample_stats if "sample_stats" in idata.groups() else None
    # files written before the method was an attribute: NUTS's have sample_stats, SVI's none
    method = attrs.get("causalplay_method", "svi" if ss is None or "diverging" not in ss else "nuts")
    extra: dict = {"loaded": True, "seed": int(attrs.get("causalplay_seed", 0))}
    diverging = None
    if method == "nuts" and ss is not None:
        diverging = ss["diverging"].values.astype(bool)
        extra["sample_stats"] = {k: ss[k].values for k in ss.data_vars if k != "diverging"}
        if "step_size" in ss:
            extra["step_size"] = [float(v) for v in ss["step_size"].values[:, -1]]
    elif ss is not None and "elbo" in ss:
        extra["elbo_losses"] = [-float(v) for v in ss["elbo"].values]
    return Fit(cm, par, method, NUTSOptions() if method == "nuts" else SVIOptions(), learner, data, feats, raw,
               float("nan"), float("nan"), "judgement" in idata.log_likelihood.data_vars, diverging, extra,
               _idata=idata)
