"""EIG-softmax: choose object sets with probability proportional to ``exp(beta * EIG)``.

EIG is the exact expected information gain (bits, joint target) under the learner's beliefs, whose prior over
rules ``P(conjunctive) = sigmoid(rho)`` is a free parameter (an overhypothesis bias). ``rho`` is shared by all
participants: a per-participant ``rho`` was tried and is barely identified by ~8 choices and one judgement each
(simulated recovery r = 0.31-0.41 over 5 seeds) and its group scale made NUTS mix badly (R-hat 1.08).
"""

from causalplay.models.choice_base import ChoiceModel, Param


class EIGSoftmax(ChoiceModel):
    name = "eig_softmax"
    description = "softmax of exact EIG with a free rule prior, lapse, entropy-based stopping"
    params = (
        Param("beta", 1.0, 1.0, "exp", doc="inverse temperature on EIG (per bit)"),
        Param("rho", 0.0, 1.5, level="shared", doc="logit of the learner's prior P(conjunctive), shared by everybody"),
    )
    uses_rule_prior = True

    def set_logits(self, feats, th, log_w):
        return th["beta"][..., None] * self.eig(feats, log_w)


MODEL = EIGSoftmax()
