"""Judgement models: how the final (rule, blicket set) answer follows from the learner's final posterior.

* ``sample`` -- **posterior sampling** (probability matching): the judged pair is drawn from the posterior, or
  with probability ``judge_lapse`` uniformly among the ``2 * 2**N`` pairs.
* ``softmax`` -- a **tempered posterior** (softmax over hypotheses of ``judge_beta * log posterior``):
  ``judge_beta = 1`` is posterior sampling, ``judge_beta -> inf`` is the MAP answer; same lapse.

Both have only shared parameters: each participant gives one judgement.
"""

from __future__ import annotations

import math

import torch

from .params import JudgementModel, Param

__all__ = ["PosteriorSampling", "TemperedPosterior", "JUDGEMENT_MODELS", "get_judgement"]

_LAPSE = Param("judge_lapse", -2.5, 1.5, "sigmoid", "shared", "probability of a uniform judgement")


def _with_lapse(log_p: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return torch.logaddexp(torch.log1p(-k) + log_p, torch.log(k) - math.log(log_p.shape[-1]))


class PosteriorSampling(JudgementModel):
    name = "sample"
    description = "judged (rule, set) drawn from the learner's final posterior, with a uniform lapse"
    params = (_LAPSE,)

    def log_probs(self, log_w, th):
        return _with_lapse(log_w, th["judge_lapse"][..., None])


class TemperedPosterior(JudgementModel):
    name = "softmax"
    description = "softmax over hypotheses of judge_beta * log posterior (1 = sampling, large = MAP), with a lapse"
    params = (Param("judge_beta", 0.0, 1.5, "exp", "shared", "inverse temperature on the log posterior"), _LAPSE)

    def log_probs(self, log_w, th):
        return _with_lapse(torch.log_softmax(th["judge_beta"][..., None] * log_w, -1), th["judge_lapse"][..., None])


JUDGEMENT_MODELS: dict[str, type[JudgementModel]] = {"sample": PosteriorSampling, "softmax": TemperedPosterior}


def get_judgement(judgement: str | JudgementModel) -> JudgementModel:
    """A judgement model by name (``"sample"``, ``"softmax"``) or the instance itself."""
    if isinstance(judgement, JudgementModel):
        return judgement
    if not isinstance(judgement, str) or judgement not in JUDGEMENT_MODELS:
        raise ValueError(f"unknown judgement model {judgement!r}; available: {sorted(JUDGEMENT_MODELS)}")
    return JUDGEMENT_MODELS[judgement]()
