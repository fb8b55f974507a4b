"""The causal-DAG world (Lampinen et al. 2023) as a Pyro model -- the spec the conjugate engine answers to.

``causal_dag_model(x, do, mask, space=..., prior=..., linear=False)`` draws, for each episode, a structure
from the uniform prior over the enumerated DAGs (:class:`causalplay.core.dag.StructureSpace`), a noise
variance per variable and a weight per (variable, parent slot), and scores the observed values; rows in
which a variable was intervened on do not score that variable (the do-operator).

Sample sites
------------
=============  =================================================  ====================  =================
site           distribution                                       support               shape
=============  =================================================  ====================  =================
``structure``  ``Categorical(uniform over S structures)``         ``{0, ..., S-1}``     ``[B]``
``noise_var``  ``InverseGamma(a0, b0)``                           ``(0, inf)``          ``[B, n]``
``weights``    ``Normal(0, sqrt(noise_var * g))`` per slot        reals                 ``[B, n, 2]``
``x``          ``leaky(Normal(w . x_pa, sqrt(noise_var)))``,      reals                 ``[B, R, n]``
               observed; masked where the row intervened on the
               variable or is padding
=============  =================================================  ====================  =================

Plates: ``episodes`` (size ``B``, dim -3), ``rows`` (``R``, dim -2), ``variables`` (``n``, dim -1); so ``structure`` has
shape ``[B, 1, 1]``, ``noise_var`` ``[B, 1, n]``, ``weights`` ``[B, 1, n, 2]`` (the last dim an event dim), and an outer
plate at dim -4 draws independent particles (as the tests do). ``weights[b, j, k]`` is the weight of the ``k``-th member
of variable ``j``'s parent set in the drawn structure (``space.members``); slots without a member are drawn from the
prior and unused, so they integrate out. ``x_pa`` are the observed parent values (all variables are observed). ``leaky``
is the leaky ReLU with leak 0.2 (the identity when ``linear``); its log-Jacobian is part of ``x``'s density. The exact
engine :mod:`causalplay.core.dag_posterior` integrates ``noise_var`` and ``weights`` in closed form
(Normal-Inverse-Gamma); tests check it against importance sampling and SVI on this model.
"""

from __future__ import annotations

import math

import pyro
import pyro.distributions as dist
import torch
from torch.distributions import constraints
from torch.distributions.transforms import Transform

__all__ = ["LeakyReLUTransform", "causal_dag_model"]


class LeakyReLUTransform(Transform):
    """``y = x`` for ``x >= 0``, ``0.2 x`` otherwise (a bijection of the reals)."""

    domain = constraints.real
    codomain = constraints.real
    bijective = True
    sign = +1

    def __init__(self, leak: float = 0.2, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.leak = leak

    def __eq__(self, other):
        return isinstance(other, LeakyReLUTransform) and other.leak == self.leak

    def _call(self, x):
        return torch.where(x >= 0, x, self.leak * x)

    def _inverse(self, y):
        return torch.where(y >= 0, y, y / self.leak)

    def log_abs_det_jacobian(self, x, y):
        return torch.where(x >= 0, torch.zeros_like(x), torch.full_like(x, math.log(self.leak)))


def causal_dag_model(x: torch.Tensor, do: torch.Tensor, mask: torch.Tensor, space, prior=None,
                     linear: bool = False) -> None:
    """The generative model (see the module docstring). ``x [B, R, n]``, ``do [B, R]`` (-1: observational),
    ``mask [B, R]`` bool; ``space`` a :class:`~causalplay.core.dag.StructureSpace`, ``prior`` a
    :class:`~causalplay.core.dag_posterior.NIGPrior`."""
    from causalplay.core.dag_posterior import NIGPrior

    prior = prior or NIGPrior()
    B, R, n = x.shape
    dtype = x.dtype
    S = space.size
    variables = pyro.plate("variables", n, dim=-1)
    with pyro.plate("episodes", B, dim=-3):
        s = pyro.sample("structure", dist.Categorical(logits=torch.zeros(S, dtype=dtype)))  # [..., B, 1, 1]
        with variables:
            v = pyro.sample("noise_var", dist.InverseGamma(torch.tensor(prior.a0, dtype=dtype),
                                                            torch.tensor(prior.b0, dtype=dtype)))  # [..., B, 1, n]
            w = pyro.sample("weights", dist.Normal(torch.zeros((), dtype=dtype), (v * prior.g).sqrt()[..., None]
                                                   .expand(*v.shape, 2)).to_event(1))  # [..., B, 1, n, 2]
        mem = space.members[torch.arange(n), space.pidx[s[..., 0, 0]]]  # [..., B, n, 2]
        valid = (mem >= 0).to(dtype)
        lead = mem.shape[:-3]
        xs = x.expand(*lead, B, R, n)
        pa = torch.stack([torch.gather(xs, -1, mem[..., None, :, k].clamp_min(0).expand(*lead, B, R, n))
                          for k in range(2)], -1)  # [..., B, R, n, 2]: the parents' observed values
        loc = (pa * w * valid[..., None, :, :]).sum(-1)
        base = dist.Normal(loc, v.sqrt().expand_as(loc))
        obs_dist = base if linear else dist.TransformedDistribution(base, [LeakyReLUTransform()])
        keep = mask[..., None] & (do[..., None] != torch.arange(n))
        with pyro.plate("rows", R, dim=-2), variables, pyro.poutine.mask(mask=keep):
            pyro.sample("x", obs_dist, obs=x)
