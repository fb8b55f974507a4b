"""The parts every choice and judgement model is built from: a :class:`Param` (a prior on an unconstrained value
and its transform) and the :class:`JudgementModel` interface. Both live here, below :mod:`.base` (the choice
models) and :mod:`.judgement` (the judgement models), so neither of those imports the other's users."""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["Param", "JudgementModel"]


@dataclass(frozen=True)
class Param:
    """A model parameter: prior ``Normal(loc, scale)`` on the unconstrained value, then ``transform``.

    ``level="participant"``: one value per participant (hierarchical fits draw them from a group-level
    ``Normal(mu, sigma)``); ``level="shared"``: one value for everybody.
    """

    name: str
    loc: float
    scale: float
    transform: str = "identity"  # "identity" | "exp" | "sigmoid"
    level: str = "participant"
    doc: str = ""

    def constrain(self, raw: torch.Tensor) -> torch.Tensor:
        """The constrained value of the unconstrained ``raw``."""
        if self.transform == "exp":
            return raw.exp()
        if self.transform == "sigmoid":
            return torch.sigmoid(raw)
        return raw


class JudgementModel:
    """How the final (rule, blicket set) judgement follows from the learner's final posterior.

    Subclasses set ``name``, ``description``, ``params`` (all ``level="shared"``) and implement :meth:`log_probs`.
    """

    name: str = "base"
    description: str = ""
    params: tuple[Param, ...] = ()

    def log_probs(self, log_w: torch.Tensor, th: dict) -> torch.Tensor:
        """Log probability ``[..., P, H]`` of every judged (rule, set) pair; ``log_w [..., P, H]`` normalised,
        ``th`` the parameters per participant ``[..., P]``."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<judgement model {self.name!r}>"
