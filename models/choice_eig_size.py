"""EIG-softmax with a bias on how many objects go on the machine: ``exp(beta * EIG + gamma * |set|)``."""

from causalplay.models.choice_base import ChoiceModel, Param


class EIGSize(ChoiceModel):
    name = "eig_size"
    description = "softmax of exact EIG plus a per-participant set-size bias"
    params = (
        Param("beta", 1.0, 1.0, "exp", doc="inverse temperature on EIG (per bit)"),
        Param("rho", 0.0, 1.5, level="shared", doc="logit of the learner's prior P(conjunctive), shared by everybody"),
        Param("gamma", 0.0, 1.0, doc="log-preference per object on the machine"),
    )
    uses_rule_prior = True

    def set_logits(self, feats, th, log_w):
        return th["beta"][..., None] * self.eig(feats, log_w) + th["gamma"][..., None] * feats.sizes


MODEL = EIGSize()
