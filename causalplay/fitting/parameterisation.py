"""How a choice model's parameters are laid out for inference: one :class:`Parameterisation` object.

Every parameter lives on an unconstrained scale with a ``Normal(loc, scale)`` prior from its
:class:`~causalplay.models.choice.Param`, then ``Param.constrain`` maps it to its natural scale.

* ``shared`` parameters: one value ``<name>_raw ~ Normal(loc, scale)`` for everybody.
* participant-level parameters, **hierarchical** (non-centred): ``<name>_mu ~ Normal(loc, scale)``,
  ``<name>_sigma ~ HalfNormal(sigma_scale)``, ``<name>_z[p] ~ Normal(0, 1)``, value ``mu + sigma * z_p``. NUTS
  samples ``log sigma`` (with its Jacobian), so nothing has a hard boundary.
* participant-level parameters, **flat**: ``<name>_raw[p] ~ Normal(loc, scale)`` independently.

The same object gives the Pyro model's sample sites (SVI), the log density on the unconstrained scale
(NUTS), starting points, the constrained values, and new participants drawn from a fitted population.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pyro
import pyro.distributions as dist
import torch

from ..models.choice import ChoiceModel, Param

__all__ = ["Parameterisation"]

_F64 = torch.float64


@dataclass(frozen=True)
class Parameterisation:
    """The layout of ``model``'s parameters for ``n_participants`` participants.

    Parameters
    ----------
    model : ChoiceModel
    hierarchical : bool
    n_participants : int
    sigma_scale : float
        Scale of the HalfNormal prior on each group-level sd (unconstrained units).
    """

    model: ChoiceModel
    hierarchical: bool
    n_participants: int
    sigma_scale: float = 1.0

    @property
    def params(self) -> tuple[Param, ...]:
        return self.model.all_params()

    # ---- site layout ------------------------------------------------------------------------------------
    def _layout(self) -> list[tuple[Param, str, tuple[int, ...]]]:
        """``(parameter, site suffix, shape)`` of every unconstrained NUTS site, in site order."""
        P, out = self.n_participants, []
        for p in self.params:
            if p.level == "shared":
                out.append((p, "_raw", ()))
            elif self.hierarchical:
                out += [(p, "_mu", ()), (p, "_logsigma", ()), (p, "_z", (P,))]
            else:
                out.append((p, "_raw", (P,)))
        return out

    def sites(self) -> dict[str, tuple[int, ...]]:
        """Unconstrained NUTS sites and their shapes (hierarchical scales as ``<name>_logsigma``)."""
        return {p.name + s: shape for p, s, shape in self._layout()}

    def init(self, jitter: float = 0.0, generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
        """A starting point: the prior centre (``z = 0``, ``sigma = 0.5``) plus ``jitter`` x N(0, 1) noise, so
        chains start apart and R-hat can see chains that do not meet."""
        start = {"_logsigma": math.log(0.5), "_z": 0.0}  # _raw and _mu: the prior's loc
        q = {p.name + s: torch.full(shape, start.get(s, p.loc), dtype=_F64) for p, s, shape in self._layout()}
        if jitter:
            q = {k: v + jitter * torch.randn(v.shape, generator=generator, dtype=_F64) for k, v in q.items()}
        return q

    # ---- densities -------------------------------------------------------------------------------------
    def log_prior(self, q: dict) -> tuple[torch.Tensor, dict]:
        """Log prior density of the unconstrained NUTS point ``q`` (incl. the log-sigma Jacobian) and the raw
        sites in the Pyro model's naming (``_sigma`` instead of ``_logsigma``)."""
        one = torch.ones((), dtype=_F64)  # float64 constants: float32 ones cost 1e-7 relative accuracy
        lp = torch.zeros((), dtype=_F64)
        raw = {}
        for p in self.params:
            if p.level == "shared" or not self.hierarchical:
                v = q[p.name + "_raw"]
                lp = lp + dist.Normal(p.loc * one, p.scale * one).log_prob(v).sum()
                raw[p.name + "_raw"] = v
            else:
                mu, ls, z = q[p.name + "_mu"], q[p.name + "_logsigma"], q[p.name + "_z"]
                sigma = ls.exp()
                lp = (lp + dist.Normal(p.loc * one, p.scale * one).log_prob(mu)
                      + dist.HalfNormal(self.sigma_scale * one).log_prob(sigma) + ls
                      + dist.Normal(0.0 * one, one).log_prob(z).sum())
                raw.update({p.name + "_mu": mu, p.name + "_sigma": sigma, p.name + "_z": z})
        return lp, raw

    def pyro_sample(self) -> dict:
        """Sample every site inside a Pyro model (SVI); returns the raw sites."""
        one = torch.ones((), dtype=_F64)
        raw = {}
        for p in self.params:
            if p.level == "shared":
                raw[p.name + "_raw"] = pyro.sample(p.name + "_raw", dist.Normal(p.loc * one, p.scale * one))
            elif self.hierarchical:
                raw[p.name + "_mu"] = pyro.sample(p.name + "_mu", dist.Normal(p.loc * one, p.scale * one))
                raw[p.name + "_sigma"] = pyro.sample(p.name + "_sigma", dist.HalfNormal(self.sigma_scale * one))
        with pyro.plate("participant", self.n_participants, dim=-1):
            for p in self.params:
                if p.level == "participant":
                    site = p.name + ("_z" if self.hierarchical else "_raw")
                    loc, scale = (0.0, 1.0) if self.hierarchical else (p.loc, p.scale)
                    raw[site] = pyro.sample(site, dist.Normal(loc * one, scale * one))
        return raw

    # ---- values ----------------------------------------------------------------------------------------
    def theta(self, raw: dict, n_participants: int | None = None) -> dict[str, torch.Tensor]:
        """Constrained parameters ``[..., P]`` from raw site values (Pyro naming, any leading batch dims)."""
        P = self.n_participants if n_participants is None else n_participants
        out = {}
        for p in self.params:
            if p.level == "shared":
                r = raw[p.name + "_raw"]
                v = r[..., None].expand(*r.shape, P)
            elif self.hierarchical:
                v = raw[p.name + "_mu"][..., None] + raw[p.name + "_sigma"][..., None] * raw[p.name + "_z"]
            else:
                v = raw[p.name + "_raw"]
            out[p.name] = p.constrain(v)
        return out

    def group_sites(self) -> list[str]:
        """Raw sites that are not per participant (group-level and shared)."""
        return [p.name + ("_sigma" if s == "_logsigma" else s) for p, s, shape in self._layout() if shape == ()]

    def new_participants(self, group: dict | None, n_draws: int, n_new: int,
                         generator: torch.Generator) -> dict[str, torch.Tensor]:
        """Raw sites of ``n_new`` **new** participants for each of ``n_draws`` draws of the group-level sites
        (``group``: site -> ``[n_draws]``; ``None`` or flat fits: from the prior)."""
        def randn(*shape: int) -> torch.Tensor:
            return torch.randn(*shape, generator=generator, dtype=_F64)

        raw = {}
        for p in self.params:
            if p.level == "shared":
                key = p.name + "_raw"
                raw[key] = group[key] if group is not None and key in group else p.loc + p.scale * randn(n_draws)
            elif self.hierarchical:
                if group is None:
                    raw[p.name + "_mu"] = p.loc + p.scale * randn(n_draws)
                    raw[p.name + "_sigma"] = (self.sigma_scale * randn(n_draws)).abs()
                else:
                    raw[p.name + "_mu"] = group[p.name + "_mu"]
                    raw[p.name + "_sigma"] = group[p.name + "_sigma"]
                raw[p.name + "_z"] = randn(n_draws, n_new)
            else:
                raw[p.name + "_raw"] = p.loc + p.scale * randn(n_draws, n_new)
        return raw

    def prior_draws(self, n_draws: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
        """Raw sites of all ``n_participants`` drawn from the prior (prior predictive checks)."""
        return self.new_participants(None, n_draws, self.n_participants, generator)
