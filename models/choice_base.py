"""Shared pieces of the models of people's choices on the Blicket task (one model per ``choice_*.py`` file).

A **decision** is a moment a participant chooses what to do next: after ``t`` tests they either put one of the
``2**N`` object sets on the machine (the empty set included) or stop. With ``N = 4`` that is 17 options, so a
uniform model scores ``log 17 = 2.833`` nats per choice. A participant who ran ``T`` tests made ``T + 1``
decisions (``T`` tests, then stop). After stopping they judge the blickets and the rule.

Every model here shares

* a **learner**: exact Bayesian beliefs over (blicket set, rule) from :mod:`causalplay.exact`, with the rule prior
  ``P(conjunctive) = sigmoid(rho)`` a free parameter (``rho = 0`` for models without it) and a small assumed
  machine noise (so no history is impossible and every gradient is finite);
* a **stopping** component: ``logit P(stop) = stop_a + stop_h * (H_t - 2) + stop_t * (t - 5) / 5`` with ``H_t``
  the learner's posterior entropy in bits and ``t`` the tests so far (no stopping before ``min_tests``); the
  covariates are centred near their typical values so the parameters are nearly uncorrelated a posteriori,
  which NUTS needs for large step sizes;
* a **lapse**: with probability ``lapse`` the object set is chosen uniformly;
* a **judgement** component: the judged (blicket set, rule) pair is drawn from the learner's final posterior, or
  with probability ``judge_lapse`` uniformly among the ``2 * 2**N`` pairs.

A model only says how it scores the object sets (:meth:`ChoiceModel.set_logits`) and which parameters it adds.
Adding a model is one file ``models/choice_<name>.py`` that defines ``MODEL = <ChoiceModel subclass>()``.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from causalplay.eig import eig_bits
from causalplay.exact import log_likelihood
from causalplay.history import codes_to_vectors, set_to_code
from causalplay.spec import HypothesisSpace, WorldSpec

__all__ = ["Param", "ChoiceModel", "Features", "LearnerConfig", "build_features", "step_features",
           "get_model", "available_models", "STOP_PARAMS", "JUDGE_PARAMS"]

_LOG2 = math.log(2.0)


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
        if self.transform == "exp":
            return raw.exp()
        if self.transform == "sigmoid":
            return torch.sigmoid(raw)
        return raw


STOP_PARAMS = (
    Param("stop_a", -2.0, 1.5, doc="baseline logit of stopping"),
    Param("stop_h", 0.0, 1.0, level="shared", doc="change in stop logit per bit of posterior entropy"),
    Param("stop_t", 0.0, 1.0, level="shared", doc="change in stop logit per 5 tests run"),
    Param("lapse", -2.5, 1.5, "sigmoid", "shared", "probability of choosing an object set uniformly"),
)
JUDGE_PARAMS = (
    Param("judge_lapse", -2.5, 1.5, "sigmoid", "shared", "probability of a uniform judgement"),
)


@dataclass(frozen=True)
class LearnerConfig:
    """What the modelled learner assumes (besides the free rule prior)."""

    blicket_prior: float = 0.5
    noise: float = 0.01
    min_tests: int = 1

    def space(self, n_objects: int) -> HypothesisSpace:
        if not 0.0 < self.blicket_prior < 1.0:
            raise ValueError(f"learner blicket_prior must be in (0, 1) so every set is possible, "
                             f"got {self.blicket_prior!r}")
        spec = WorldSpec.from_options(n_objects, ("disjunctive", "conjunctive"), blicket_prior=self.blicket_prior,
                         noise=self.noise)
        return HypothesisSpace.build(spec)


@dataclass
class Features:
    """Everything a choice model needs about ``D`` decisions of ``P`` participants (precomputed once).

    Attributes
    ----------
    ids : list of str
    space : HypothesisSpace of the learner (rules disjunctive, conjunctive; all ``2**N`` sets, by code)
    pid : LongTensor [D] -- participant index of each decision
    t : Tensor [D] -- tests run before the decision
    ll : Tensor [D, H] -- log-likelihood of the history before the decision (no prior)
    choice : LongTensor [D] -- set code ``sum_i x_i 2**i`` (0..2**N-1) or ``2**N`` for stop; -1 when unknown
    can_stop : BoolTensor [D]
    tested : BoolTensor [D, 2**N] -- set already tested before this decision
    candidates : Tensor [2**N, N]; sizes : Tensor [2**N]
    final_ll : Tensor [P, H]; judgement : LongTensor [P] -- ``rule * 2**N + set`` or -1 when not given
    test_index : LongTensor [D] -- 1-based test index of the choice (``T + 1`` for the stop)
    """

    ids: list
    space: HypothesisSpace
    pid: torch.Tensor
    t: torch.Tensor
    ll: torch.Tensor
    choice: torch.Tensor
    can_stop: torch.Tensor
    tested: torch.Tensor
    candidates: torch.Tensor
    sizes: torch.Tensor
    final_ll: torch.Tensor
    judgement: torch.Tensor
    test_index: torch.Tensor
    cache: dict = field(default_factory=dict)

    @property
    def n_participants(self) -> int:
        return len(self.ids)

    @property
    def n_decisions(self) -> int:
        return int(self.pid.shape[0])

    @property
    def n_options(self) -> int:
        return int(self.candidates.shape[0]) + 1


def _codes_to_sets(n_objects: int) -> torch.Tensor:
    return codes_to_vectors(torch.arange(2**n_objects), n_objects).to(torch.float64)


def _code(objs) -> int:
    return set_to_code(objs)


def build_features(data, learner: LearnerConfig = LearnerConfig()) -> Features:
    """Turn :class:`causalplay.data.TrialData` into :class:`Features` (history log-likelihoods computed once)."""
    N = data.n_objects
    space = learner.space(N)
    cands = _codes_to_sets(N)
    n_sets = cands.shape[0]
    hist = data.histories()
    pid, t, choice, test_index, trials, lits, masks, tested = [], [], [], [], [], [], [], []
    T = max((len(h) for h in hist.values()), default=0)
    for p, key in enumerate(data.ids):
        h = hist[key]
        codes = [_code(np.flatnonzero(x)) for x in h.trials]
        seen = np.zeros(n_sets, dtype=bool)
        for j in range(len(h) + 1):
            pid.append(p)
            t.append(j)
            choice.append(codes[j] if j < len(h) else n_sets)
            test_index.append(j + 1)
            tr = np.zeros((max(T, 1), N), dtype=bool)
            lt = np.zeros(max(T, 1), dtype=bool)
            mk = np.zeros(max(T, 1), dtype=bool)
            tr[:j], lt[:j], mk[:j] = h.trials[:j], h.lit[:j], True
            trials.append(tr)
            lits.append(lt)
            masks.append(mk)
            tested.append(seen.copy())
            if j < len(h):
                seen[codes[j]] = True
    trials_t = torch.as_tensor(np.stack(trials)).to(torch.float64)
    ll = log_likelihood(space, trials_t, torch.as_tensor(np.stack(lits)).to(torch.float64),
                        torch.as_tensor(np.stack(masks)))
    pid_t = torch.tensor(pid)
    last = torch.tensor([int(np.flatnonzero(np.asarray(pid) == p).max()) for p in range(len(data.ids))])
    judgement = []
    rule_index = {"disjunctive": 0, "conjunctive": 1}  # the learner space's rule order
    for _, row in data.participants.iterrows():
        jb, rc = row.get("judged_blickets"), row.get("rule_choice")
        if jb is None or not isinstance(rc, str) or rc not in rule_index:
            judgement.append(-1)
        else:
            judgement.append(rule_index[rc] * n_sets + _code(jb))
    t_t = torch.tensor(t, dtype=torch.float64)
    return Features(
        ids=list(data.ids), space=space, pid=pid_t, t=t_t, ll=ll, choice=torch.tensor(choice),
        can_stop=t_t >= learner.min_tests, tested=torch.as_tensor(np.stack(tested)), candidates=cands,
        sizes=cands.sum(-1), final_ll=ll[last], judgement=torch.tensor(judgement),
        test_index=torch.tensor(test_index))


def step_features(space: HypothesisSpace, ll: torch.Tensor, t: int, tested: torch.Tensor, min_tests: int,
                  ids: list) -> Features:
    """Features of one decision for each of ``P`` simulated participants (used by simulation)."""
    P = ll.shape[0]
    N = space.n_objects
    cands = _codes_to_sets(N)
    tt = torch.full((P,), float(t), dtype=torch.float64)
    return Features(ids=ids, space=space, pid=torch.arange(P), t=tt, ll=ll, choice=torch.full((P,), -1),
                    can_stop=tt >= min_tests, tested=tested, candidates=cands, sizes=cands.sum(-1),
                    final_ll=ll, judgement=torch.full((P,), -1), test_index=torch.full((P,), t + 1))


class ChoiceModel:
    """Base class. Subclasses set ``name``, ``description``, ``params`` and implement :meth:`set_logits`."""

    name: str = "base"
    description: str = ""
    params: tuple[Param, ...] = ()
    uses_rule_prior: bool = False  # True when the model has a participant-level ``rho``

    def all_params(self) -> tuple[Param, ...]:
        return tuple(self.params) + STOP_PARAMS + JUDGE_PARAMS

    def set_logits(self, feats: Features, th: dict, log_w: torch.Tensor) -> torch.Tensor:
        """Unnormalised log-preference ``[..., D, 2**N]`` of every object set at every decision.

        ``th`` holds each parameter per decision (``[..., D]``); ``log_w [..., D, H]`` is the learner's
        normalised log posterior before the decision.
        """
        raise NotImplementedError

    # ---- shared machinery -------------------------------------------------------------------------------
    @staticmethod
    def log_rule_prior(rho: torch.Tensor) -> torch.Tensor:
        """``[..., 2]`` log prior of (disjunctive, conjunctive) with ``P(conjunctive) = sigmoid(rho)``."""
        return torch.stack([F.logsigmoid(-rho), F.logsigmoid(rho)], -1)

    def posterior(self, feats: Features, ll: torch.Tensor, rho: torch.Tensor) -> torch.Tensor:
        """Normalised learner log posterior ``[..., D, H]`` (rule-major hypotheses) from ``ll [D, H]``."""
        space = feats.space
        S = space.n_sets
        log_set = space.log_prior[:S] - space.rule_log_prior[0]
        lp = (self.log_rule_prior(rho)[..., :, None] + log_set).flatten(-2)  # [..., D, H]
        lw = ll + lp
        return lw - torch.logsumexp(lw, -1, keepdim=True)

    @staticmethod
    def eig(feats: Features, log_w: torch.Tensor) -> torch.Tensor:
        """Joint EIG (bits) of every object set ``[..., D, 2**N]`` (differentiable in ``log_w``)."""
        shape = log_w.shape[:-1]
        out = eig_bits(feats.space, log_w.reshape(-1, log_w.shape[-1]), feats.candidates, "joint")
        return out.reshape(*shape, out.shape[-1])

    @staticmethod
    def entropy_bits(log_w: torch.Tensor) -> torch.Tensor:
        return -(log_w.exp() * log_w).sum(-1) / _LOG2

    def _per_decision(self, feats: Features, theta: dict) -> dict:
        return {k: v[..., feats.pid] for k, v in theta.items()}

    def log_probs(self, feats: Features, theta: dict) -> torch.Tensor:
        """Log probability ``[..., D, 2**N + 1]`` of every option (sets by code, then stop) at every decision.

        ``theta`` maps each parameter name to its constrained value per participant ``[..., P]``.
        """
        th = self._per_decision(feats, theta)
        rho = th["rho"] if self.uses_rule_prior else torch.zeros_like(th["stop_a"])
        log_w = self.posterior(feats, feats.ll, rho)
        logits = self.set_logits(feats, th, log_w)
        n = logits.shape[-1]
        lapse = th["lapse"][..., None]
        log_sets = torch.logaddexp(torch.log1p(-lapse) + torch.log_softmax(logits, -1),
                                   torch.log(lapse) - math.log(n))
        stop_logit = (th["stop_a"] + th["stop_h"] * (self.entropy_bits(log_w) - 2.0)
                      + th["stop_t"] * (feats.t - 5.0) / 5.0)
        can = feats.can_stop
        log_stop = torch.where(can, F.logsigmoid(stop_logit), torch.tensor(-math.inf, dtype=stop_logit.dtype))
        log_go = torch.where(can, F.logsigmoid(-stop_logit), torch.zeros_like(stop_logit))
        return torch.cat([log_sets + log_go[..., None], log_stop[..., None]], -1)

    def judgement_log_probs(self, feats: Features, theta: dict) -> torch.Tensor:
        """Log probability ``[..., P, H]`` of each judged (rule, blicket set) pair after the last test."""
        rho = theta["rho"] if self.uses_rule_prior else torch.zeros_like(theta["stop_a"])
        log_w = self.posterior(feats, feats.final_ll, rho)
        k = theta["judge_lapse"][..., None]
        return torch.logaddexp(torch.log1p(-k) + log_w, torch.log(k) - math.log(log_w.shape[-1]))


def get_model(name: str | ChoiceModel) -> ChoiceModel:
    """The model in ``models/choice_<name>.py`` (its ``MODEL``), or ``name`` itself if it is a ChoiceModel."""
    if isinstance(name, ChoiceModel):
        return name
    if not isinstance(name, str) or name not in available_models():
        raise ValueError(f"unknown choice model {name!r}; available: {available_models()}")
    return importlib.import_module(f"causalplay.models.choice_{name}").MODEL


def available_models() -> list[str]:
    """Names of the choice models found as ``models/choice_*.py``."""
    import causalplay.models as pkg

    return sorted(m.name[len("choice_"):] for m in pkgutil.iter_modules(pkg.__path__)
                  if m.name.startswith("choice_") and m.name != "choice_base")
