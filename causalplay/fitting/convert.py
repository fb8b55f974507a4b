"""Posterior draws -> ArviZ InferenceData with named dims (participant, choice, object)."""

from __future__ import annotations

import numpy as np
import torch

from ..models.choice import Features
from .parameterisation import Parameterisation

__all__ = ["to_idata", "pointwise_log_lik"]


def pointwise_log_lik(par: Parameterisation, feats: Features, theta: dict, chunk: int = 200):
    """Log-likelihood of every choice ``[S, D]`` and every judgement ``[S, P]`` for ``S`` parameter draws."""
    cm = par.model
    S = next(iter(theta.values())).shape[0]
    choice_ll = torch.empty(S, feats.n_decisions, dtype=torch.float64)
    judge_ll = torch.empty(S, feats.n_participants, dtype=torch.float64)
    with torch.no_grad():
        for s in range(0, S, chunk):
            th = {k: v[s:s + chunk] for k, v in theta.items()}
            lp = cm.log_probs(feats, th)
            choice_ll[s:s + chunk] = lp.gather(-1, feats.choice.expand(lp.shape[0], -1)[..., None]).squeeze(-1)
            jl = cm.judgement_log_probs(feats, th)
            judge_ll[s:s + chunk] = jl.gather(-1, feats.judgement.clamp_min(0).expand(jl.shape[0], -1)[..., None]
                                              ).squeeze(-1)
    return choice_ll, judge_ll


def to_idata(par: Parameterisation, feats: Features, raw: dict, judgements: bool, diverging: np.ndarray | None, data):
    """InferenceData of a fit.

    ``posterior``: every raw site (participant-level ones with dim ``participant``) and every constrained parameter;
    ``log_likelihood``: ``choice`` over a flat ``choice`` dim (coords ``participant_of_choice`` and ``test`` say whose
    choice at which test) and ``judgement`` over ``participant`` (participants without a judgement have NaN);
    ``observed_data``; ``constant_data.true_blickets`` (participant x object); ``sample_stats.diverging`` for NUTS.
    """
    import arviz as az

    C, S = next(iter(raw.values())).shape[:2]
    flat = {k: v.reshape(C * S, *v.shape[2:]) for k, v in raw.items()}
    theta = par.theta(flat)
    choice_ll, judge_ll = pointwise_log_lik(par, feats, theta)
    judge_ll[:, feats.judgement < 0] = float("nan")
    posterior = {k: v.numpy() for k, v in raw.items()}
    dims = {k: ["participant"] for k, v in raw.items() if v.dim() == 3}
    for p in par.params:
        if p.level == "participant":
            posterior[p.name] = theta[p.name].reshape(C, S, -1).numpy()
            dims[p.name] = ["participant"]
        else:
            posterior[p.name] = theta[p.name][:, 0].reshape(C, S).numpy()
    ll = {"choice": choice_ll.reshape(C, S, -1).numpy()}
    if judgements:
        ll["judgement"] = judge_ll.reshape(C, S, -1).numpy()
    dims.update({"choice": ["choice"], "judgement": ["participant"]})
    pid = np.asarray(feats.ids)[feats.pid.numpy()]
    coords = {"participant": feats.ids, "choice": np.arange(feats.n_decisions), "object": np.arange(data.n_objects)}
    obs = {"choice": feats.choice.numpy(), "judgement": feats.judgement.numpy()}
    idata = az.from_dict(posterior=posterior, log_likelihood=ll, observed_data=obs, dims=dims, coords=coords,
                         sample_stats=None if diverging is None else {"diverging": diverging})
    for grp in ("log_likelihood", "observed_data"):
        idata[grp] = idata[grp].assign_coords(participant_of_choice=("choice", pid),
                                              test=("choice", feats.test_index.numpy()))
    idata.posterior.attrs.update({"causalplay_model": par.model.name, "causalplay_judgement": par.model.judge.name,
                                  "causalplay_hierarchical": int(par.hierarchical)})
    idata["constant_data"] = az.from_dict(constant_data={"true_blickets": np.stack([
        np.isin(np.arange(data.n_objects), b) for b in data.participants["true_blickets"]]).astype(int)},
        dims={"true_blickets": ["participant", "object"]},
        coords={"participant": feats.ids, "object": np.arange(data.n_objects)}).constant_data
    return idata
