"""Random testing: every object set equally likely (the shared stopping and judgement components still apply)."""

from causalplay.models.choice_base import ChoiceModel


class RandomChoice(ChoiceModel):
    name = "random"
    description = "object sets uniformly at random; stops by the shared stopping rule"
    params = ()

    def set_logits(self, feats, th, log_w):
        return log_w.new_zeros(log_w.shape[:-1] + (feats.candidates.shape[0],))


MODEL = RandomChoice()
