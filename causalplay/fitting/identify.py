"""Which participant-level parameters do the data identify per participant? Pooling factors of a hierarchical fit.

The pooling factor of Gelman & Pardoe (2006, "Bayesian measures of explained variance and pooling in multilevel
(hierarchical) models", *Technometrics* 48(2)) for a participant-level parameter with participant deviations
``e_p = theta_p - mu`` (here on the unconstrained scale, ``e_p = sigma * z_p``) is

    lambda = 1 - V_p(E[e_p]) / E[V_p(e_p)]

with ``V_p`` the variance over participants and ``E`` the posterior mean. ``lambda`` near 0: each participant's
value is set by their own data (no pooling); near 1: the participants' values are their population's, the data
say next to nothing about who differs from whom (complete pooling). With ~8 choices per participant the Nexiom
design leaves ``gamma`` and ``stop_a`` there (their recovery correlations are 0.3-0.45 and 0.1-0.3). Such a
parameter costs NUTS long, badly mixing chains for nothing the data can show; sharing it (one value for everybody,
``"<model>:shared=[name]"``) loses no held-out accuracy on those data and converges.
"""

from __future__ import annotations

import torch

__all__ = ["pooling_factors", "unidentified", "POOLING_MAX"]

#: a parameter whose pooling factor reaches this is not identified per participant: at least 90% of the spread of
#: its participant deviations is the population's, not the participants' own data.
POOLING_MAX = 0.9


def pooling_factors(par, raw: dict[str, torch.Tensor]) -> dict[str, float]:
    """Pooling factor of every participant-level parameter of a hierarchical fit (``{}`` for a flat one).

    Parameters
    ----------
    par : causalplay.fitting.Parameterisation
    raw : dict site -> Tensor ``[chains, draws, ...]`` (Pyro naming: ``<name>_sigma``, ``<name>_z``), as
        :attr:`causalplay.fitting.Fit.raw`.

    Returns
    -------
    dict name -> float in [0, 1] (NaN with fewer than 2 participants; 1.0 where every deviation is 0)
    """
    if not par.hierarchical:
        return {}
    out = {}
    for p in par.params:
        if p.level != "participant":
            continue
        sigma, z = raw[p.name + "_sigma"], raw[p.name + "_z"]
        e = (sigma[..., None] * z).reshape(-1, z.shape[-1]).double()  # [draws, participants]
        if e.shape[-1] < 2:
            out[p.name] = float("nan")
            continue
        between = float(e.mean(0).var(unbiased=False))  # V_p(E[e_p])
        within = float(e.var(-1, unbiased=False).mean())  # E[V_p(e_p)]
        out[p.name] = 1.0 if within == 0.0 else min(max(1.0 - between / within, 0.0), 1.0)
    return out


def unidentified(par, raw: dict[str, torch.Tensor], pooling_max: float = POOLING_MAX) -> dict[str, float]:
    """The participant-level parameters whose pooling factor is at least ``pooling_max``, with their factors."""
    return {k: v for k, v in pooling_factors(par, raw).items() if v >= pooling_max}
