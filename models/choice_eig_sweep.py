"""EIG + set size + a left-to-right sweep: the model the Nexiom data suggest.

Looking at the humans (before fitting anything): 62 of 78 first tests contain object 0 ((0,) 36 times, (0, 1) 26
times), and the second test most often moves on to the next fresh object(s) ((1,) after (0,), (2, 3) after
(0, 1)). So people sweep through the objects in their numbered order. The ``sweep`` feature is 1 for a set whose
lowest object is the lowest-numbered object never yet put on the machine (and 0 once all have been used).

Preference: ``beta * EIG + gamma * |set| + delta * sweep``.
"""

import torch
from causalplay.models.choice_base import ChoiceModel, Param


def sweep_feature(feats) -> torch.Tensor:
    """``[D, 2**N]`` 0/1: the set starts at the lowest-numbered object not yet used in any test."""
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


class EIGSweep(ChoiceModel):
    name = "eig_sweep"
    description = "softmax of EIG + set-size bias + preference for sweeping through the objects in order"
    params = (
        Param("beta", 1.0, 1.0, "exp", doc="inverse temperature on EIG (per bit)"),
        Param("rho", 0.0, 1.5, level="shared", doc="logit of the learner's prior P(conjunctive), shared"),
        Param("gamma", 0.0, 1.0, doc="log-preference per object on the machine"),
        Param("delta", 0.0, 2.0, doc="log-preference for the next set in the sweep"),
    )
    uses_rule_prior = True

    def set_logits(self, feats, th, log_w):
        return (th["beta"][..., None] * self.eig(feats, log_w) + th["gamma"][..., None] * feats.sizes
                + th["delta"][..., None] * sweep_feature(feats))


MODEL = EIGSweep()
