"""Features of object sets that the choice models weigh: each ``[..., D, 2**N]`` for ``D`` decisions."""

from __future__ import annotations

import torch

from .base import ChoiceModel, Features

__all__ = ["eig", "size", "sweep", "untested_single", "p_lit", "p_is_blicket_set", "FEATURES"]


def eig(feats: Features, log_w: torch.Tensor) -> torch.Tensor:
    """Exact expected information gain (bits, joint target) of every set under the learner's beliefs."""
    return ChoiceModel.eig(feats, log_w)


def size(feats: Features, log_w: torch.Tensor) -> torch.Tensor:
    """Number of objects on the machine."""
    return feats.sizes.to(log_w.dtype)


def sweep(feats: Features, log_w: torch.Tensor | None = None) -> torch.Tensor:
    """``[D, 2**N]`` 0/1: the set starts at the lowest-numbered object not yet used in any test.

    People go through the objects in their numbered order (a feature chosen **after** looking at the shipped
    Nexiom data: 73 of 78 first tests contain object 0). 0 for every set once all objects have been used.
    """
    if "sweep" not in feats.cache:
        cands = feats.candidates  # [S, N]
        used = (feats.tested.to(cands.dtype) @ cands) > 0  # [D, N] objects already on the machine
        n = cands.shape[1]
        idx = torch.arange(n)
        first_unused = torch.where(~used, idx, n).min(-1).values  # [D]; n when all used
        below = (idx[None, :] < first_unused[:, None]).to(cands.dtype)  # [D, N]
        has_k = cands.T[first_unused.clamp_max(n - 1)]  # [D, S]: does the set contain that object
        ok = (has_k > 0) & ((below @ cands.T) == 0) & (first_unused < n)[:, None]
        feats.cache["sweep"] = ok.to(cands.dtype)
    return feats.cache["sweep"]


def untested_single(feats: Features, log_w: torch.Tensor) -> torch.Tensor:
    """1 for a single object not yet tested on its own."""
    return ((feats.sizes == 1) & ~feats.tested).to(log_w.dtype)


def p_lit(feats: Features, log_w: torch.Tensor) -> torch.Tensor:
    """The learner's predictive probability that the machine lights up for each set."""
    return log_w.exp() @ feats.space.lit_prob(feats.candidates)


def p_is_blicket_set(feats: Features, log_w: torch.Tensor) -> torch.Tensor:
    """The learner's posterior probability that the set is exactly the blicket set (rule marginalised)."""
    return log_w.exp().unflatten(-1, (-1, feats.space.n_sets)).sum(-2)


FEATURES = {"eig": eig, "size": size, "sweep": sweep, "untested_single": untested_single, "p_lit": p_lit,
            "p_is_blicket_set": p_is_blicket_set}
