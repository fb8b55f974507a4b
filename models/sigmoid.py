"""Lucas & Griffiths (2010): the sigmoid family of overhypotheses with uncertain gain and bias.

``P(lit | k) = sigmoid(gain * (k - bias))`` contains disjunctive (``bias ~ 0.5``, large gain) and conjunctive
(``bias ~ 1.5``) machines as limits; here gain and bias are per-episode latent variables with priors, so the
learner infers *how* the machine combines causes together with *which* objects are causes.

Sample sites
------------
============  ==============================================  ==================  ===============
site          distribution                                    support             shape
============  ==============================================  ==================  ===============
``bias``      ``Normal(bias_loc, bias_scale)``                real                ``[B, 1]``
``gain``      ``LogNormal(gain_loc, gain_scale)``             ``(0, inf)``        ``[B, 1]``
``blickets``  ``BlicketSetPrior(N, p=blicket_prior)``         ``{0, 1}^N``        ``[B, 1, N]``
``lit``       ``Bernoulli(sigmoid(gain (k_t - bias)))``, obs  ``{0, 1}``          ``[B, T]``
============  ==============================================  ==================  ===============

Plates: ``episodes`` (dim -2), ``trials`` (dim -1). The response is :func:`causalplay.core.rules.sigmoid_response`, the
same function the fixed-parameter :class:`causalplay.core.rules.Sigmoid` rule uses.
"""

from __future__ import annotations

import pyro
import pyro.distributions as dist
import torch
from causalplay.models.blicket import lit_site

from causalplay.core.priors import BlicketSetPrior, SigmoidPrior
from causalplay.core.rules import sigmoid_response

__all__ = ["SigmoidPrior", "sigmoid_model"]


def sigmoid_model(trials: torch.Tensor, lit: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                  *, prior: SigmoidPrior = SigmoidPrior()) -> torch.Tensor:
    """Generate (or condition on) responses to ``trials [B, T, N]``; see the module docstring for sites."""
    B, T, N = trials.shape
    dtype = trials.dtype

    def t(v: float) -> torch.Tensor:
        return torch.tensor(v, dtype=dtype, device=trials.device)

    with pyro.plate("episodes", B, dim=-2):
        bias = pyro.sample("bias", dist.Normal(t(prior.bias_loc), t(prior.bias_scale)))
        gain = pyro.sample("gain", dist.LogNormal(t(prior.gain_loc), t(prior.gain_scale)))
        blickets = pyro.sample("blickets", BlicketSetPrior(N, p=prior.blicket_prior))
        k = (trials * blickets.to(dtype)).sum(-1)
        p = sigmoid_response(k, gain, bias)
        return lit_site(p, T, lit, mask)
