"""The Blicket world in per-object form, for worlds too large to enumerate (SVI), with optional noise prior.

Same generative story as :mod:`causalplay.models.blicket`, but the blicket set is an ``N``-vector drawn from
the independent prior, so nothing is exponential in ``N``. Optionally the machine's flip probability is itself
uncertain (``noise_prior=(a, b)``: ``noise ~ Beta(a, b)`` per episode).

Sample sites
------------
============  ==============================================  ==================  ===============
site          distribution                                    support             shape
============  ==============================================  ==================  ===============
``rule``      ``Categorical(spec.rule_prior)``                ``{0, ..., R-1}``   ``[B, 1]``
``noise``     ``Beta(a, b)`` (only with ``noise_prior``)      ``(0, 1)``          ``[B, 1]``
``blickets``  ``BlicketSetPrior(N, p=spec.blicket_prior)``    ``{0, 1}^N``        ``[B, 1, N]``
``lit``       ``Bernoulli(P(lit | rule, k_t, noise))``, obs.  ``{0, 1}``          ``[B, T]``
============  ==============================================  ==================  ===============

Plates: ``episodes`` (dim -2), ``trials`` (dim -1). With ``noise_prior`` the rules' own noise is replaced by the
sampled ``noise`` (:func:`causalplay.core.rules.apply_noise` on the noiseless response ``rule.base(k)``).
"""

from __future__ import annotations

import pyro
import pyro.distributions as dist
import torch
from causalplay.models.blicket import lit_site

from causalplay.core.rules import apply_noise
from causalplay.core.spec import WorldSpec

__all__ = ["blicket_objects_model"]


def blicket_objects_model(trials: torch.Tensor, lit: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                          *, spec: WorldSpec, noise_prior: tuple[float, float] | None = None) -> torch.Tensor:
    """Generate (or condition on) responses to ``trials [B, T, N]``; see the module docstring for sites.

    Parameters
    ----------
    trials : Tensor ``[B, T, N]``
    lit : Tensor ``[B, T]``, optional
    mask : Tensor ``[B, T]`` bool, optional
    spec : WorldSpec
        Must use an independent blicket prior.
    noise_prior : (a, b), optional
        Beta prior on the per-episode flip probability; ``None`` keeps each rule's fixed noise.
    """
    if spec.n_blickets is not None:
        raise ValueError(
            "the per-object model needs an independent blicket prior (blicket_prior=p); a prior over the number "
            f"of blickets (n_blickets={spec.n_blickets}) couples all objects -- use the exact engine instead"
        )
    B, T, N = trials.shape
    dtype = trials.dtype
    ks = torch.arange(N + 1, dtype=dtype, device=trials.device)
    base = torch.stack([r.base(ks) for r in spec.rules])  # [R, N+1] noiseless
    table = spec.lit_table(dtype=dtype, device=trials.device)
    with pyro.plate("episodes", B, dim=-2):
        rule = pyro.sample("rule", dist.Categorical(spec.rule_probs(dtype, trials.device)),
                           infer={"enumerate": "parallel"})
        noise = None
        if noise_prior is not None:
            a, b = (torch.tensor(float(v), dtype=dtype, device=trials.device) for v in noise_prior)
            noise = pyro.sample("noise", dist.Beta(a, b))
        blickets = pyro.sample("blickets", spec.set_prior())
        k = (trials * blickets.to(dtype)).sum(-1).round().long()
        p = table[rule, k] if noise is None else apply_noise(base[rule, k], noise)
        return lit_site(p, T, lit, mask)
