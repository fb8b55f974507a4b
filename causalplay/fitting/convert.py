"""Posterior draws -> ArviZ InferenceData with named dims (participant, decision, object).

Layout of ``Fit.idata`` (every group once; a variable never shares its name with a dim):

* ``posterior``: every raw site (participant-level ones over ``participant``) and every constrained parameter;
  attributes ``causalplay_model``, ``causalplay_judgement``, ``causalplay_hierarchical``, ``causalplay_method``,
  ``causalplay_seed``.
* ``log_likelihood``: ``choice`` over ``decision`` (one per test and per stop; coords ``participant_of_choice``
  and ``test`` say whose decision at which test) and ``judgement`` over ``participant`` (NaN where a participant
  gave no judgement; absent when the fit left the judgements out of the likelihood).
* ``posterior_predictive``: for every draw, a ``choice`` drawn from the model at each decision given the
  participant's own tests before it, and a ``judgement`` drawn given all of them (-1 where none was given).
* ``observed_data``: ``choice`` (set code ``sum_i x_i 2**i``, ``2**N`` for stop) and ``judgement`` (``rule * 2**N +
  set``, -1 where none was given).
* ``constant_data``: ``true_blickets`` (participant x object).
* ``sample_stats``: NUTS: ``diverging``, ``lp``, ``acceptance_rate``, ``step_size``, ``n_steps``, ``tree_depth``
  per draw; SVI: ``elbo`` over ``svi_step`` (the optimisation's ELBO estimate at every step, not per draw).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from ..models.choice import Features
from .parameterisation import Parameterisation

if TYPE_CHECKING:
    from .inference import Fit

__all__ = ["to_idata", "pointwise_log_lik", "pointwise", "predictions_idata", "population_theta", "DECISION_DIM"]

DECISION_DIM = "decision"  # the dim of the choices (``choice`` is the variable's name: a dim may not share it)


def pointwise(par: Parameterisation, feats: Features, theta: dict, chunk: int = 200,
              generator: torch.Generator | None = None):
    """Log-likelihood of every choice ``[S, D]`` and every judgement ``[S, P]`` for ``S`` parameter draws, and with
    ``generator`` also a choice ``[S, D]`` and a judgement ``[S, P]`` drawn from the model under each draw (the
    choice at each decision given the participant's observed tests before it; the judgement given all of them;
    -1 where the participant gave no judgement), else None for both."""
    cm = par.model
    S = next(iter(theta.values())).shape[0]
    choice_ll = torch.empty(S, feats.n_decisions, dtype=torch.float64)
    judge_ll = torch.empty(S, feats.n_participants, dtype=torch.float64)
    rep_c = rep_j = None
    if generator is not None:
        rep_c = torch.empty(S, feats.n_decisions, dtype=torch.int32)
        rep_j = torch.empty(S, feats.n_participants, dtype=torch.int32)

    def draw(logp: torch.Tensor) -> torch.Tensor:  # Gumbel-max: one categorical draw per row, from ``generator``
        u = torch.rand(logp.shape, generator=generator, dtype=logp.dtype).clamp_min(torch.finfo(logp.dtype).tiny)
        return (logp - torch.log(-torch.log(u))).argmax(-1).to(torch.int32)

    with torch.no_grad():
        for s in range(0, S, chunk):
            th = {k: v[s:s + chunk] for k, v in theta.items()}
            lp = cm.log_probs(feats, th)
            choice_ll[s:s + chunk] = lp.gather(-1, feats.choice.expand(lp.shape[0], -1)[..., None]).squeeze(-1)
            jl = cm.judgement_log_probs(feats, th)
            judge_ll[s:s + chunk] = jl.gather(-1, feats.judgement.clamp_min(0).expand(jl.shape[0], -1)[..., None]
                                              ).squeeze(-1)
            if generator is not None:
                rep_c[s:s + chunk] = draw(lp)
                rep_j[s:s + chunk] = draw(jl)
    if rep_j is not None:
        rep_j[:, feats.judgement < 0] = -1
    return choice_ll, judge_ll, rep_c, rep_j


def pointwise_log_lik(par: Parameterisation, feats: Features, theta: dict, chunk: int = 200):
    """Log-likelihood of every choice ``[S, D]`` and every judgement ``[S, P]`` for ``S`` parameter draws."""
    return pointwise(par, feats, theta, chunk)[:2]


def _decision_coords(feats: Features) -> dict:
    """Coordinates of the ``decision`` dim: its index, whose decision it is and at which test (``T + 1``: the stop)."""
    return {DECISION_DIM: np.arange(feats.n_decisions),
            "participant_of_choice": (DECISION_DIM, np.asarray(feats.ids)[feats.pid.numpy()]),
            "test": (DECISION_DIM, feats.test_index.numpy())}


def _dataset(values: dict, dims: dict, coords: dict, sample: tuple[int, int] | None, attrs: dict | None = None):
    """An xarray Dataset of ``values`` (``sample``: leading ``(chains, draws)`` dims) with the coords it uses and
    ArviZ's usual attributes (``created_at``, ``arviz_version``)."""
    import xarray as xr
    from arviz.data.base import make_attrs

    lead = () if sample is None else ("chain", "draw")
    data_vars = {k: (lead + tuple(dims.get(k, ())), np.asarray(v)) for k, v in values.items()}
    used = {d for _, (dd, _) in data_vars.items() for d in dd}
    cs = {k: v for k, v in coords.items() if k in used or (isinstance(v, tuple) and v[0] in used)}
    if sample is not None:
        cs.update(chain=np.arange(sample[0]), draw=np.arange(sample[1]))
    return xr.Dataset(data_vars, coords=cs, attrs=make_attrs(attrs))


def _true_blickets(data) -> np.ndarray:
    return np.stack([np.isin(np.arange(data.n_objects), b) for b in data.participants["true_blickets"]]).astype(int)


def to_idata(par: Parameterisation, feats: Features, raw: dict, judgements: bool, diverging: np.ndarray | None, data,
             *, stats: dict | None = None, elbo: np.ndarray | None = None, method: str | None = None,
             seed: int = 0):
    """InferenceData of a fit (layout: the module's docstring).

    Parameters
    ----------
    par, feats, raw, judgements, data :
        The fit's parameterisation, features, raw draws ``[chains, draws, ...]``, whether the judgements were in
        the likelihood, and its data.
    diverging : ndarray ``[chains, draws]`` of bool, or None
        NUTS's divergent transitions (None: SVI).
    stats : dict name -> ndarray ``[chains, draws]``, optional
        NUTS's other sampler statistics (:class:`causalplay.core.pyro.NUTSRun.stats`).
    elbo : ndarray ``[steps]``, optional
        SVI's ELBO estimate at every step.
    method : {"nuts", "svi"}, optional
        Default: ``"nuts"`` when ``diverging`` is given.
    seed : int
        Seeds the ``posterior_predictive`` draws.
    """
    import arviz as az

    method = method or ("svi" if diverging is None else "nuts")
    C, S = next(iter(raw.values())).shape[:2]
    flat = {k: v.reshape(C * S, *v.shape[2:]) for k, v in raw.items()}
    theta = par.theta(flat)
    choice_ll, judge_ll, rep_c, rep_j = pointwise(par, feats, theta, generator=torch.Generator().manual_seed(seed))
    judge_ll[:, feats.judgement < 0] = float("nan")
    posterior = {k: v.numpy() for k, v in raw.items()}
    dims = {k: ["participant"] for k, v in raw.items() if v.dim() == 3}
    for p in par.params:
        if p.level == "participant":
            posterior[p.name] = theta[p.name].reshape(C, S, -1).numpy()
            dims[p.name] = ["participant"]
        else:
            posterior[p.name] = theta[p.name][:, 0].reshape(C, S).numpy()
    obs_dims = {"choice": [DECISION_DIM], "judgement": ["participant"]}
    coords = {"participant": np.asarray(feats.ids), "object": np.arange(data.n_objects), **_decision_coords(feats)}
    attrs = {"causalplay_model": par.model.name, "causalplay_judgement": par.model.judge.name,
             "causalplay_hierarchical": int(par.hierarchical), "causalplay_method": method,
             "causalplay_seed": int(seed)}
    ll = {"choice": choice_ll.reshape(C, S, -1).numpy()}
    if judgements:
        ll["judgement"] = judge_ll.reshape(C, S, -1).numpy()
    groups = {
        "posterior": _dataset(posterior, dims, coords, (C, S), attrs),
        "log_likelihood": _dataset(ll, obs_dims, coords, (C, S)),
        "posterior_predictive": _dataset({"choice": rep_c.reshape(C, S, -1).numpy(),
                                          "judgement": rep_j.reshape(C, S, -1).numpy()}, obs_dims, coords, (C, S)),
        "observed_data": _dataset({"choice": feats.choice.numpy().astype(np.int32),
                                   "judgement": feats.judgement.numpy().astype(np.int32)}, obs_dims, coords, None),
        "constant_data": _dataset({"true_blickets": _true_blickets(data)},
                                  {"true_blickets": ["participant", "object"]}, coords, None),
    }
    if method == "nuts" and diverging is not None:
        ss = {"diverging": np.asarray(diverging, dtype=bool), **(stats or {})}
        groups["sample_stats"] = _dataset(ss, {}, coords, (C, S))
    elif elbo is not None:
        groups["sample_stats"] = _dataset(
            {"elbo": np.asarray(elbo, dtype=float)}, {"elbo": ["svi_step"]}, {"svi_step": np.arange(len(elbo))},
            None, {"description": "SVI: the ELBO estimate (one guide draw, nats up to a constant) at every "
                                  "optimisation step; the posterior draws are independent draws of the fitted "
                                  "guide and have no sampler statistics"})
    return az.InferenceData(**groups)


def predictions_idata(fit, data, *, n_draws: int = 400, n_new: int = 5, seed: int = 0):
    """InferenceData with ``predictions`` for participants not used in fitting (see :meth:`Fit.predict`)."""
    import arviz as az

    from ..models.choice import build_features

    feats = build_features(data, fit.learner)
    gen = torch.Generator().manual_seed(seed)
    theta = population_theta(fit, feats, n_draws, n_new, gen)
    _, _, rep_c, rep_j = pointwise(fit.par, feats, theta, generator=gen)
    obs_dims = {"choice": [DECISION_DIM], "judgement": ["participant"]}
    coords = {"participant": np.asarray(feats.ids), "object": np.arange(data.n_objects), **_decision_coords(feats)}
    S = rep_c.shape[0]
    preds = _dataset({"choice": rep_c.reshape(1, S, -1).numpy(), "judgement": rep_j.reshape(1, S, -1).numpy()},
                     obs_dims, coords, (1, S),
                     {"description": f"held-out participants: each draw a new participant of the fitted population "
                                     f"({n_draws} posterior draws x {n_new} new participants), their choice at "
                                     f"each observed decision and their judgement drawn from the model",
                      "causalplay_seed": int(seed)})
    const = _dataset({"observed_choice": feats.choice.numpy().astype(np.int32),
                      "observed_judgement": feats.judgement.numpy().astype(np.int32),
                      "true_blickets": _true_blickets(data)},
                     {**{f"observed_{k}": v for k, v in obs_dims.items()}, "true_blickets": ["participant", "object"]},
                     coords, None)
    return az.InferenceData(predictions=preds, predictions_constant_data=const)


def population_theta(fit: Fit, feats, n_draws: int, n_new: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Constrained parameters ``[n_draws * n_new, P]`` of ``feats``' participants as new members of the fitted
    population: ``n_draws`` posterior draws of the group-level sites (drawn with replacement), ``n_new`` new
    participants each (flat fits: from the prior)."""
    flat = fit.flat_raw()
    total = flat[next(iter(flat))].shape[0]
    idx = torch.randint(total, (n_draws,), generator=gen)
    group = {k: v[idx].repeat_interleave(n_new, 0) for k, v in flat.items() if v.dim() == 1}
    raw = fit.par.new_participants(group, n_draws * n_new, feats.n_participants, gen)
    return fit.par.theta(raw, feats.n_participants)
