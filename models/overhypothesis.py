"""Overhypotheses learned across episodes: the hierarchical Blicket world as a Pyro model (the spec).

A learner meets ``K`` machines (episodes) in a row, each with its own objects and its own blicket set, but
the machines share an **overhypothesis** -- how machines of this kind combine their causes. Two forms:

* ``form="rules"`` (Kemp, Perfors & Tenenbaum 2007): shared rule weights ``theta ~ Dirichlet(alpha)`` over
  the spec's rules (e.g. disjunctive, conjunctive); each episode draws its rule from ``theta``.
* ``form="sigmoid"`` (Lucas & Griffiths 2010): a shared sigmoid ``P(lit | k) = sigmoid(gain (k - bias))`` with priors on
  ``bias`` and ``gain`` (:class:`causalplay.models.sigmoid.SigmoidPrior`), used by every episode of the sequence.

Sample sites
------------
================  ===============================================  ====================  ================
site              distribution                                     support               shape
================  ===============================================  ====================  ================
``rule_weights``  ``Dirichlet(alpha)`` (form "rules")              simplex of ``R``      ``[B, 1, 1, R]``
``rule``          ``Categorical(rule_weights)`` (form "rules")     ``{0, ..., R-1}``     ``[B, K, 1]``
``bias``          ``Normal(bias_loc, bias_scale)`` (form sigmoid)  real                  ``[B, 1, 1]``
``gain``          ``LogNormal(gain_loc, gain_scale)`` (sigmoid)    ``(0, inf)``          ``[B, 1, 1]``
``blicket_set``   ``Categorical(exp(prior.log_prob(sets)))``       ``{0, ..., S-1}``     ``[B, K, 1]``
``lit``           ``Bernoulli(P(lit | rule or sigmoid, k_t))``,    ``{0, 1}``            ``[B, K, T]``
                  observed
================  ===============================================  ====================  ================

Plates: ``sequences`` (size ``B``, one learner each, dim -3), ``episodes`` (size ``K``, dim -2), ``trials`` (size ``T``,
dim -1). ``prior`` is ``spec.set_prior()``: every episode draws a fresh blicket set from it, in the integer-code order
of :class:`causalplay.core.spec.HypothesisSpace`. ``k_t`` is the number of blickets among the objects of trial ``t``.
The rule table comes from :mod:`causalplay.core.rules` (``spec.lit_table``, noise included); the sigmoid form uses
:func:`causalplay.core.rules.sigmoid_response` and then ``spec``'s noise (:func:`causalplay.core.rules.apply_noise`;
``noise`` is a fixed argument, not a latent). ``rule`` and ``blicket_set`` are marked for parallel enumeration, so
``TraceEnum_ELBO`` marginalises each episode exactly; :mod:`causalplay.core.overhypothesis` computes the same
per-episode marginals with the exact engine (the tests check the two log densities agree). Padding (``mask=False``)
contributes nothing; an episode that is all padding contributes nothing either.
"""

from __future__ import annotations

import pyro
import pyro.distributions as dist
import torch
from causalplay.models.blicket import lit_site
from causalplay.models.sigmoid import SigmoidPrior

from causalplay.core.rules import apply_noise, sigmoid_response
from causalplay.core.spec import WorldSpec

__all__ = ["overhypothesis_model", "FORMS"]

#: The two forms of the shared overhypothesis.
FORMS = ("rules", "sigmoid")


def overhypothesis_model(trials: torch.Tensor, lit: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                         *, spec: WorldSpec, form: str = "rules", concentration: torch.Tensor | None = None,
                         sigmoid_prior: SigmoidPrior | None = None, noise: float = 0.0) -> torch.Tensor:
    """Generate (or condition on) ``B`` sequences of ``K`` episodes: ``trials [B, K, T, N]``.

    Parameters
    ----------
    trials : Tensor ``[B, K, T, N]``
        0/1 objects on the machine in each trial of each episode of each sequence.
    lit : Tensor ``[B, K, T]``, optional
        Observed responses; sampled when omitted.
    mask : Tensor ``[B, K, T]`` bool, optional
        False marks padding.
    spec : WorldSpec
        The blicket-set prior of every episode (``spec.set_prior()``); for ``form="rules"`` also the rules.
    form : {"rules", "sigmoid"}
    concentration : Tensor ``[R]``, optional
        Dirichlet concentration ``alpha`` of the rule weights (form "rules"; all ones when omitted).
    sigmoid_prior : SigmoidPrior, optional
        Priors of ``bias`` and ``gain`` (form "sigmoid"; the defaults when omitted). Its ``blicket_prior`` is not
        used: the set prior is ``spec``'s.
    noise : float
        Flip probability applied to the sigmoid form's response (form "rules": the rules carry their own).

    Returns
    -------
    Tensor ``[B, K, T]``: the responses (observed or sampled).
    """
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    if trials.dim() != 4:
        raise ValueError(f"trials must have shape [B, K, T, N], got {tuple(trials.shape)}")
    B, K, T, N = trials.shape
    if N != spec.n_objects:
        raise ValueError(f"trials have {N} objects, spec has n_objects={spec.n_objects}")
    dtype = trials.dtype if torch.is_floating_point(trials) else torch.get_default_dtype()
    dev = trials.device
    prior = spec.set_prior()
    sets = prior.enumerate_support(expand=False).to(dtype=dtype, device=dev)  # [S, N]
    set_logits = prior.log_prob(sets)
    x = trials.to(dtype)

    def c(v: float) -> torch.Tensor:
        return torch.tensor(v, dtype=dtype, device=dev)

    with pyro.plate("sequences", B, dim=-3):
        if form == "rules":
            R = len(spec.rules)
            alpha = torch.ones(R, dtype=dtype, device=dev) if concentration is None else \
                torch.as_tensor(concentration, dtype=dtype, device=dev)
            theta = pyro.sample("rule_weights", dist.Dirichlet(alpha))
            table = spec.lit_table(dtype=dtype, device=dev)  # [R, N + 1]
        else:
            sp = sigmoid_prior or SigmoidPrior()
            bias = pyro.sample("bias", dist.Normal(c(sp.bias_loc), c(sp.bias_scale)))
            gain = pyro.sample("gain", dist.LogNormal(c(sp.gain_loc), c(sp.gain_scale)))
        with pyro.plate("episodes", K, dim=-2):
            if form == "rules":
                rule = pyro.sample("rule", dist.Categorical(theta), infer={"enumerate": "parallel"})
            idx = pyro.sample("blicket_set", dist.Categorical(logits=set_logits), infer={"enumerate": "parallel"})
            k = (x * sets[idx]).sum(-1)  # [..., B, K, T]
            if form == "rules":
                p = table[rule, k.round().long()]
            else:
                p = sigmoid_response(k, gain, bias)
                if noise:
                    p = apply_noise(p, noise)
            return lit_site(p.clamp(0.0, 1.0), T, lit, mask)
