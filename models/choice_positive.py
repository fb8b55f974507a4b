"""Positive testing (hypothesis confirmation): test the blicket set currently believed most probable.

Preference ``beta * P(set is the blicket set | history)`` (rule marginalised), so large ``beta`` puts nearly all
mass on the most probable set.
"""

from causalplay.models.choice_base import ChoiceModel, Param


class PositiveTesting(ChoiceModel):
    name = "positive"
    description = "softmax of each set's posterior probability of being the blicket set"
    params = (
        Param("beta", 2.0, 1.0, "exp", doc="inverse temperature on P(set is the blicket set)"),
        Param("rho", 0.0, 1.5, level="shared", doc="logit of the learner's prior P(conjunctive), shared by everybody"),
    )
    uses_rule_prior = True

    def set_logits(self, feats, th, log_w):
        S = feats.space.n_sets
        p_set = log_w.exp().unflatten(-1, (-1, S)).sum(-2)  # marginalise the rule
        return th["beta"][..., None] * p_set


MODEL = PositiveTesting()
