"""Exact expected information gain (bits) of candidate trials, batched over episodes.

For a binary outcome ``Y`` (lit) of a trial ``d`` and a target ``G`` (a partition of the hypotheses),

    EIG(d) = I(Y; G) = H_b(P(Y=1)) - sum_g P(g) H_b(P(Y=1 | g)),

with ``H_b`` the binary entropy in bits. Targets:

* ``"joint"`` -- ``G`` is the hypothesis (blicket set and rule). Two matrix products ``w @ P`` and
  ``w @ H_b(P)`` for all episodes and trials at once.
* ``"blickets"`` -- ``G`` is the blicket set (the rule is a nuisance).
* ``"rule"`` -- ``G`` is the rule (the blicket set is a nuisance).

:func:`exact_eig` has the call shape of ``pyro.contrib.oed.eig`` estimators (model, design, observation and
target labels) for :class:`causalplay.models.blicket.BlicketWorld` models.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from .spec import HypothesisSpace

__all__ = ["TARGETS", "eig_bits", "exact_eig", "binary_entropy_bits"]

TARGETS = ("joint", "blickets", "rule")
_LOG2 = math.log(2.0)


def binary_entropy_bits(p: torch.Tensor) -> torch.Tensor:
    """``H_b(p)`` in bits, elementwise; 0 at p in {0, 1}; inputs clamped to [0, 1] against rounding."""
    p = p.clamp(0.0, 1.0)
    q = 1.0 - p
    return -(torch.special.xlogy(p, p) + torch.special.xlogy(q, q)) / _LOG2


def _plogp(x: torch.Tensor) -> torch.Tensor:
    return torch.special.xlogy(x, x.clamp_min(0.0))


def check_target(target: str) -> str:
    if target not in TARGETS:
        raise ValueError(f"unknown EIG target {target!r}; expected one of {TARGETS}")
    return target


def eig_bits(space: HypothesisSpace, log_w: torch.Tensor, candidates: torch.Tensor, target: str = "joint",
             *, lit_prob: torch.Tensor | None = None, max_elements: int = 2**25) -> torch.Tensor:
    """EIG in bits of every candidate trial for every episode.

    Parameters
    ----------
    space : HypothesisSpace
    log_w : Tensor ``[B, H]``
        Normalised log posterior (from :func:`causalplay.exact.log_posterior`).
    candidates : Tensor ``[D, N]``
        0/1 candidate trials.
    target : {"joint", "blickets", "rule"}
    lit_prob : Tensor ``[H, D]``, optional
        ``space.lit_prob(candidates)``, when the caller scores the same candidates many times (agents).
    max_elements : int
        Bound on the size of any temporary ``[b, S, D]`` tensor (the ``"blickets"`` target); sets the chunk.

    Returns
    -------
    Tensor ``[B, D]``
    """
    check_target(target)
    P = space.lit_prob(candidates) if lit_prob is None else lit_prob  # [H, D]
    w = log_w.exp().to(P.dtype)
    p_on = w @ P
    h_y = binary_entropy_bits(p_on)
    R, S, D = space.n_rules, space.n_sets, P.shape[1]
    if target == "joint" or (target == "blickets" and R == 1):
        if all(r.deterministic for r in space.rules):
            return h_y
        return (h_y - w @ binary_entropy_bits(P)).clamp_min(0.0)
    if target == "rule":
        if R == 1:
            return torch.zeros_like(p_on)
        wr = w.reshape(-1, R, S)
        q = torch.einsum("brs,rsd->brd", wr, P.reshape(R, S, D))  # P(Y=1, rule r)
        pr = wr.sum(-1, keepdim=True)  # [B, R, 1]
        cond = -(_plogp(q) + _plogp(pr - q) - _plogp(pr)).sum(1) / _LOG2
        return (h_y - cond).clamp_min(0.0)
    # blickets: P(Y=1, set s) = sum_r w[r, s] P[r, s, d] needs a [B, S, D] temporary.
    wr = w.reshape(-1, R, S)
    Pr = P.reshape(R, S, D)
    ps = wr.sum(1)  # [B, S]
    cond = torch.empty_like(p_on)
    step = max(1, max_elements // max(1, S * D))
    for start in range(0, w.shape[0], step):
        sl = slice(start, start + step)
        q = torch.einsum("brs,rsd->bsd", wr[sl], Pr)
        psl = ps[sl, :, None]
        cond[sl] = -(_plogp(q) + _plogp(psl - q) - _plogp(psl)).sum(1) / _LOG2
    return (h_y - cond).clamp_min(0.0)


def labels_to_target(target_labels: str | Sequence[str]) -> str:
    """Map Pyro-style target labels (site names ``"blickets"``, ``"rule"``) to an EIG target."""
    labels = {target_labels} if isinstance(target_labels, str) else set(target_labels)
    if labels == {"blickets", "rule"}:
        return "joint"
    if labels == {"blickets"}:
        return "blickets"
    if labels == {"rule"}:
        return "rule"
    raise ValueError(f"target_labels must be 'blickets', 'rule' or both, got {target_labels!r}")


def exact_eig(model, design: torch.Tensor, observation_labels: str | Sequence[str] = "lit",
              target_labels: str | Sequence[str] = ("blickets", "rule")) -> torch.Tensor:
    """Exact EIG (bits) with the call shape of ``pyro.contrib.oed.eig.nmc_eig``.

    Parameters
    ----------
    model : BlicketWorld
        A world model bound to a WorldSpec and the history seen so far (see :mod:`causalplay.models.blicket`).
    design : Tensor ``[D, N]``
        Candidate trials (0/1).
    observation_labels : "lit"
        The observed site of the next trial.
    target_labels : "blickets", "rule" or both
        What the information is about.

    Returns
    -------
    Tensor ``[D]`` (or ``[B, D]`` when the model holds a batch of histories).

    Notes
    -----
    ``pyro.contrib.oed.eig.nmc_eig`` returns nats; multiply by ``ln 2`` to compare.
    """
    from .models.blicket import BlicketWorld

    if not isinstance(model, BlicketWorld):
        raise TypeError(f"exact_eig needs a causalplay.models.blicket.BlicketWorld, got {type(model).__name__}")
    obs = {observation_labels} if isinstance(observation_labels, str) else set(observation_labels)
    if obs != {"lit"}:
        raise ValueError(f"observation_labels must be 'lit', got {observation_labels!r}")
    target = labels_to_target(target_labels)
    log_w = model.log_posterior()
    out = eig_bits(model.space, log_w, design.to(model.space.dtype), target)
    return out[0] if model.batch is None or model.batch.batch_size == 1 else out
