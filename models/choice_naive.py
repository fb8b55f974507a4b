"""Naive: one object at a time -- prefer single objects not yet tested alone."""

from causalplay.models.choice_base import ChoiceModel, Param


class Naive(ChoiceModel):
    name = "naive"
    description = "prefers single objects not yet tested on their own"
    params = (Param("beta", 1.0, 1.0, "exp", doc="log-preference for an untested single object"),)

    def set_logits(self, feats, th, log_w):
        single_new = ((feats.sizes == 1) & ~feats.tested).to(log_w.dtype)  # [D, S]
        return th["beta"][..., None] * single_new


MODEL = Naive()
