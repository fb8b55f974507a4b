"""Choice models whose set preference is a weighted sum of set features (softmax over the ``2**N`` sets).

``LinearChoice(name, terms)`` scores each set by ``sum_k weight_k * feature_k(set)``; each term names a feature from
:mod:`.features` and the :class:`~.base.Param` of its weight. Every model in the registry except ``random`` is one of
these, so the ablation family (EIG only, sweep only, size only, and their sums) is just the list of term combinations.
"""

from __future__ import annotations

import torch

from .base import ChoiceModel, Features, Param
from .features import FEATURES

__all__ = ["LinearChoice", "BETA_EIG", "GAMMA_SIZE", "DELTA_SWEEP", "KAPPA_SINGLE"]

BETA_EIG = Param("beta", 1.0, 1.0, "exp", doc="inverse temperature on EIG (per bit)")
GAMMA_SIZE = Param("gamma", 0.0, 1.0, doc="log-preference per object on the machine")
DELTA_SWEEP = Param("delta", 0.0, 2.0, doc="log-preference for the next set in the left-to-right sweep")
KAPPA_SINGLE = Param("kappa", 0.0, 1.0, doc="log-preference for a single object not yet tested on its own")


class LinearChoice(ChoiceModel):
    """``softmax_s(sum_k th[param_k] * feature_k(s))``.

    Parameters
    ----------
    name : str
    terms : sequence of (feature name, Param)
    description : str
    """

    def __init__(self, name: str, terms, description: str = ""):
        if unknown := [f for f, _ in terms if f not in FEATURES]:
            raise ValueError(f"unknown set feature(s) {unknown}; available: {sorted(FEATURES)}")
        self.name = name
        self.terms = tuple((f, p) for f, p in terms)
        self.params = tuple(p for _, p in self.terms)
        self.description = description or " + ".join(f"{p.name}*{f}" for f, p in self.terms) or "uniform"
        self.judgement = None

    def set_logits(self, feats: Features, th: dict, log_w: torch.Tensor) -> torch.Tensor:
        out = log_w.new_zeros(log_w.shape[:-1] + (feats.candidates.shape[0],))
        for f, p in self.terms:
            out = out + th[p.name][..., None] * FEATURES[f](feats, log_w)
        return out

    def __reduce__(self):  # picklable (worker processes) without the judgement's class identity issues
        return (_rebuild, (self.name, self.terms, self.description, self.judgement, self.transfer, self.shared))


def _rebuild(name, terms, description, judgement, transfer=False, shared=frozenset()):
    m = LinearChoice(name, terms, description)
    m.judgement = judgement
    m.transfer = transfer
    m.shared = frozenset(shared)
    return m
