"""Shared pieces of the models of people's choices on the Blicket task.

A **decision** is a moment a participant chooses what to do next: after ``t`` tests they either put one of the
``2**N`` object sets on the machine (the empty set included) or stop. With ``N = 4`` that is 17 options, so a
uniform model scores ``log 17 = 2.833`` nats per choice. A participant who ran ``T`` tests made ``T + 1``
decisions (``T`` tests, then stop). After stopping they judge the blickets and the rule.

Every choice model shares, so that models differ **only in how they score the object sets**:

* a **learner**: exact Bayesian beliefs over (blicket set, rule) from :mod:`causalplay.core.exact`, with the rule prior
  ``P(conjunctive) = sigmoid(rho)`` a free parameter shared by everybody (fitted in every model) and a small
  assumed machine noise (so no history is impossible and every gradient is finite);
* a **stopping** component: ``logit P(stop) = stop_a + stop_h * (H_t - 2) + stop_t * (t - 5) / 5`` with ``H_t``
  the learner's posterior entropy in bits and ``t`` the tests so far (no stopping before ``min_tests``); the
  covariates are centred near their typical values so the parameters are nearly uncorrelated a posteriori;
* a **lapse**: with probability ``lapse`` the object set is chosen uniformly;
* a **judgement** model (:class:`JudgementModel`): how the final (blicket set, rule) pair is chosen from the
  learner's final posterior -- posterior sampling or a tempered softmax (see :mod:`.judgement`).

**Several rounds per person** (issue 15; ``learner`` and ``round`` columns): with ``LearnerConfig(transfer=True)``
(or an explicit ``rule_prior`` to :func:`build_features`) the learner enters round ``r > 1`` with the rule prior
*transferred* from the person's rounds ``1 .. r - 1`` -- the exact predictive rule probabilities of
:func:`causalplay.infer_overhypothesis` (rule weights ``~ Dirichlet(transfer_concentration)``) under the
learner's own assumptions (blicket prior, noise). A model used as is (``get_model("eig_sweep")``) then takes the
transferred prior in full on those rounds; ``get_model("eig_sweep:transfer=True")`` adds the participant-level
weight ``transfer`` in (0, 1) and uses ``P(conj) = transfer * q + (1 - transfer) * sigmoid(rho)`` (``q`` the
transferred value), so ``transfer = 0`` is "learns nothing across rounds" and ``1`` is the ideal learner.

A model says how it scores the object sets (:meth:`ChoiceModel.set_logits`) and which parameters it adds; the
registry in :mod:`causalplay.models.choice` lists every model by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import torch
import torch.nn.functional as F

from causalplay.core.eig import eig_bits
from causalplay.core.exact import entropy_bits, log_likelihood
from causalplay.core.history import History, HistoryBatch, set_to_code
from causalplay.core.spec import HypothesisSpace, WorldSpec
from causalplay.core.specs import format_spec, parse_spec

from .judgement import PosteriorSampling, get_judgement
from .params import JudgementModel, Param

__all__ = ["Param", "ChoiceModel", "JudgementModel", "Features", "LearnerConfig", "build_features",
           "step_features", "STOP_PARAMS", "RULE_PARAMS", "TRANSFER_PARAMS", "LEARNER_RULES",
           "transferred_rule_priors", "participant_rule_prior", "rule_prior_table", "told_set_prior", "RULED_OUT"]

#: Log prior of a blicket set ruled out by a told count: its posterior weight underflows to exactly 0 in float64, where
#: -inf would make the gradient of the entropy's 0 * log 0 NaN.
RULED_OUT = -1e4
LEARNER_RULES = ("disjunctive", "conjunctive")  # the learner's rule order (hypotheses are rule-major)


TRANSFER_PARAMS = (
    Param("transfer", 0.0, 1.5, "sigmoid", doc="weight of the rule prior transferred from earlier rounds against "
          "sigmoid(rho); rounds > 1 only (a ``transfer=True`` model)"),
)
RULE_PARAMS = (
    Param("rho", 0.0, 1.5, level="shared", doc="logit of the learner's prior P(conjunctive), shared by everybody"),
)
STOP_PARAMS = (
    Param("stop_a", -2.0, 1.5, doc="baseline logit of stopping"),
    Param("stop_h", 0.0, 1.0, level="shared", doc="change in stop logit per bit of posterior entropy"),
    Param("stop_t", 0.0, 1.0, level="shared", doc="change in stop logit per 5 tests run"),
    Param("lapse", -2.5, 1.5, "sigmoid", "shared", "probability of choosing an object set uniformly"),
)


@dataclass(frozen=True)
class LearnerConfig:
    """What the modelled learner assumes (besides the free rule prior).

    Attributes
    ----------
    blicket_prior : float
        Prior probability that each object is a blicket (all sets possible).
    noise : float
        Machine noise the learner assumes.
    min_tests : int
        Tests before stopping is allowed. A participant with fewer tests is an error at :func:`build_features`.
    transfer : bool
        Rounds ``r > 1`` of multi-round data start from the rule prior transferred from the person's earlier
        rounds (:func:`transferred_rule_priors`); needs the ``learner`` and ``round`` columns.
    transfer_concentration : float
        Dirichlet concentration of the rule weights behind the transferred prior (1: uniform).
    """

    blicket_prior: float = 0.5
    noise: float = 0.01
    min_tests: int = 1
    transfer: bool = False
    transfer_concentration: float = 1.0

    def space(self, n_objects: int) -> HypothesisSpace:
        """The learner's hypothesis space over ``n_objects`` objects (rules disjunctive, conjunctive)."""
        if not 0.0 < self.blicket_prior < 1.0:
            raise ValueError(f"learner blicket_prior must be in (0, 1) so every set is possible, "
                             f"got {self.blicket_prior!r}")
        spec = WorldSpec.from_options(n_objects, LEARNER_RULES, blicket_prior=self.blicket_prior, noise=self.noise)
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
    rule_prior : Tensor [P, 2] or None -- transferred (P(disjunctive), P(conjunctive)) per participant, used where
        ``transferred``; None: every participant has the fitted prior ``sigmoid(rho)``
    transferred : BoolTensor [P] or None -- the participant has a transferred rule prior (round > 1)
    set_log_prior : Tensor [P, 2**N] or None -- log prior of each blicket set per participant, where some were told
        how many blickets there are (sets of another size get :data:`RULED_OUT`); None: the learner's own prior
    must_stop : BoolTensor [D] or None -- the participant's test budget is spent at this decision, so stopping is
        the only option (probability 1: a stop forced by the budget is not a choice); None: no budget binds
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
    rule_prior: torch.Tensor | None = None
    transferred: torch.Tensor | None = None
    set_log_prior: torch.Tensor | None = None
    must_stop: torch.Tensor | None = None
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

    def __getstate__(self) -> dict:  # the cache may hold traced functions; it is cheap to rebuild
        state = dict(self.__dict__)
        state["cache"] = {}
        return state


def transferred_rule_priors(data, learner: LearnerConfig = LearnerConfig()) -> dict[str, np.ndarray]:
    """The rule prior each participant row of round ``r > 1`` brings from the person's rounds ``1 .. r - 1``.

    Exact: :func:`causalplay.infer_overhypothesis` over the earlier rounds (rules disjunctive, conjunctive,
    rule weights ``~ Dirichlet(learner.transfer_concentration)``, the learner's blicket prior and noise),
    ``post[i].predictive_rule_probs()``; all learners and rounds in one batch.

    Returns
    -------
    dict
        participant id -> ``[P(disjunctive), P(conjunctive)]`` for every row with ``round > 1``.
    """
    from causalplay.core.overhypothesis import SequenceBatch, infer_overhypothesis

    if "round" not in data.participants.columns:
        raise ValueError("a transferred rule prior needs multi-round data (participants.csv columns learner and "
                         "round); this data has one round per participant")
    seqs = data.sequences()
    rows = data.participants.sort_values(["learner", "round"], kind="stable")
    ids, prefixes = [], []
    for _, r in rows.iterrows():
        k = int(r["round"])
        if k > 1:
            ids.append(r["participant"])
            prefixes.append(seqs[r["learner"]][: k - 1])
    if not ids:
        return {}
    batch = SequenceBatch.from_sequences(prefixes, data.n_objects)
    post = infer_overhypothesis(batch, rules=LEARNER_RULES, concentration=learner.transfer_concentration,
                                blicket_prior=learner.blicket_prior, noise=learner.noise)
    probs = np.asarray(post.predictive_rule_probs(), dtype=np.float64).reshape(len(ids), len(LEARNER_RULES))
    return dict(zip(ids, probs, strict=True))


def rule_prior_table(ids, rule_prior: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """``rule_prior`` (participant -> P(conj) or [P(disj), P(conj)]) -> ``[P, 2]`` probabilities over the
    participants ``ids`` and the mask of those named (the others get 0.5, unused)."""
    ids = list(ids)
    if unknown := [k for k in rule_prior if k not in set(ids)]:
        raise ValueError(f"rule_prior names participant(s) {unknown[:5]} that are not in the data")
    table = torch.full((len(ids), 2), 0.5, dtype=torch.float64)
    mask = torch.zeros(len(ids), dtype=torch.bool)
    for i, k in enumerate(ids):
        if k not in rule_prior:
            continue
        v = np.atleast_1d(np.asarray(rule_prior[k], dtype=np.float64))
        if v.shape == (1,):
            v = np.array([1.0 - v[0], v[0]])
        if v.shape != (2,) or not np.all((v > 0) & (v < 1)) or abs(v.sum() - 1.0) > 1e-9:
            raise ValueError(f"rule_prior of participant {k!r} must be P(conjunctive) in (0, 1) or "
                             f"[P(disjunctive), P(conjunctive)] summing to 1, got {rule_prior[k]!r}")
        table[i] = torch.as_tensor(v)
        mask[i] = True
    return table, mask


def build_features(data, learner: LearnerConfig = LearnerConfig(), rule_prior: dict | None = None) -> Features:
    """Turn :class:`causalplay.data.TrialData` into :class:`Features` (history log-likelihoods computed once).

    Parameters
    ----------
    data : causalplay.data.TrialData
    learner : LearnerConfig
        With ``transfer=True`` the rule prior of every row with ``round > 1`` is
        :func:`transferred_rule_priors` (unless ``rule_prior`` is given).
    rule_prior : dict, optional
        participant id -> the rule prior that participant starts from, ``P(conjunctive)`` or
        ``[P(disjunctive), P(conjunctive)]``; participants not named keep the fitted ``sigmoid(rho)``.

    Raises
    ------
    ValueError
        A participant ran fewer than ``learner.min_tests`` tests (their stop would have probability 0) or more than
        their budget (``max_tests`` column, :meth:`~causalplay.data.TrialData.budgets`), or
        chose a rule the learner does not consider (e.g. ``threshold3``; an empty ``rule_choice`` is a missing
        judgement and is allowed); a ``rule_prior`` naming unknown participants or holding no probability.
    """
    N = data.n_objects
    if rule_prior is None and learner.transfer:
        rule_prior = transferred_rule_priors(data, learner)
    rp_table, rp_mask = rule_prior_table(data.ids, rule_prior) if rule_prior is not None else (None, None)
    space = learner.space(N)
    cands = space.sets  # every set, by code: the learner's prior allows them all
    n_sets = cands.shape[0]
    hist = data.histories()
    chosen = data.choice_indices()  # demonstrations are in the history but are not the participant's choices
    if few := [(k, len(chosen[k])) for k in data.ids if len(chosen[k]) < learner.min_tests]:
        raise ValueError(
            f"participant {few[0][0]!r} ran {few[0][1]} test(s) but the modelled learner cannot stop before "
            f"min_tests={learner.min_tests} ({len(few)} such participant(s): {[k for k, _ in few[:5]]}); drop them "
            f"with data.subset(...) or fit with learner=LearnerConfig(min_tests=0)")
    budgets = data.budgets()
    if over := [(k, len(chosen[k]), budgets[k]) for k in data.ids
                if budgets[k] is not None and len(chosen[k]) > budgets[k]]:
        raise ValueError(f"participant {over[0][0]!r} ran {over[0][1]} test(s) of their own but max_tests is "
                         f"{over[0][2]} ({len(over)} such participant(s)); the budget counts the participant's own "
                         f"tests, demonstrations not included")
    rule_index = {r: i for i, r in enumerate(LEARNER_RULES)}
    judgement = []  # rule * 2**N + set code, -1 when not given
    for _, row in data.participants.iterrows():
        jb, rc = row.get("judged_blickets"), row.get("rule_choice")
        if isinstance(rc, str) and rc not in rule_index:
            raise ValueError(
                f"participant {row['participant']!r} chose rule {rc!r}, which the modelled learner does not consider "
                f"(it knows {list(LEARNER_RULES)}); set rule_choice empty to treat the judgement as missing, or "
                f"drop the participant")
        judgement.append(-1 if jb is None or not isinstance(rc, str) else rule_index[rc] * n_sets + set_to_code(jb))
    pid, t, choice, test_index, prefixes, tested, must = [], [], [], [], [], [], []
    for p, key in enumerate(data.ids):
        h = hist[key]
        codes = [set_to_code(np.flatnonzero(x)) for x in h.trials]
        own = set(chosen[key].tolist())
        seen = np.zeros(n_sets, dtype=bool)
        n_own = 0
        for j in range(len(h) + 1):
            if j < len(h) and j not in own:  # a demonstration: seen (and learned from), not chosen
                seen[codes[j]] = True
                continue
            pid.append(p)
            t.append(n_own)  # the participant's own tests so far
            choice.append(codes[j] if j < len(h) else n_sets)
            test_index.append(j + 1)
            prefixes.append(History(h.trials[:j], h.lit[:j]))  # what was seen before the decision
            tested.append(seen.copy())
            must.append(budgets[key] is not None and n_own >= budgets[key])
            if j < len(h):
                seen[codes[j]] = True
                n_own += 1
    batch = HistoryBatch.from_histories(prefixes, N)
    ll = log_likelihood(space, batch.trials, batch.lit, batch.mask)
    last = torch.tensor([int(np.flatnonzero(np.asarray(pid) == p).max()) for p in range(len(data.ids))])
    t_t = torch.tensor(t, dtype=torch.float64)
    return Features(
        ids=list(data.ids), space=space, pid=torch.tensor(pid), t=t_t, ll=ll, choice=torch.tensor(choice),
        can_stop=t_t >= learner.min_tests, tested=torch.as_tensor(np.stack(tested)), candidates=cands,
        sizes=cands.sum(-1), final_ll=ll[last], judgement=torch.tensor(judgement),
        test_index=torch.tensor(test_index), rule_prior=rp_table, transferred=rp_mask,
        set_log_prior=told_set_prior(space, data.known_counts(), data.ids),
        must_stop=torch.tensor(must) if any(must) else None)


def told_set_prior(space: HypothesisSpace, counts: dict, ids: list) -> torch.Tensor | None:
    """``[P, 2**N]`` log prior of each blicket set for participants told the number of blickets (uniform over the sets
    of that size, :data:`RULED_OUT` elsewhere) and the learner's own prior for the others; None if nobody was told."""
    if all(counts[k] is None for k in ids):
        return None
    S = space.n_sets
    own = space.log_prior[:S] - space.rule_log_prior[0]
    size = space.sets.sum(-1)
    out = own.expand(len(ids), S).clone()
    for i, k in enumerate(ids):
        if counts[k] is not None:
            fit = size == counts[k]
            out[i] = torch.where(fit, -math.log(int(fit.sum())), torch.full_like(own, RULED_OUT))
    return out


def step_features(space: HypothesisSpace, ll: torch.Tensor, t: int, tested: torch.Tensor, min_tests: int,
                  ids: list, budget: torch.Tensor | None = None) -> Features:
    """Features of one decision for each of ``P`` simulated participants (used by simulation); ``budget [P]``:
    each one's test budget (stopping is forced once ``t`` reaches it), None for none."""
    P = ll.shape[0]
    cands = space.sets
    tt = torch.full((P,), float(t), dtype=torch.float64)
    return Features(ids=ids, space=space, pid=torch.arange(P), t=tt, ll=ll, choice=torch.full((P,), -1),
                    can_stop=tt >= min_tests, tested=tested, candidates=cands, sizes=cands.sum(-1),
                    final_ll=ll, judgement=torch.full((P,), -1), test_index=torch.full((P,), t + 1),
                    must_stop=None if budget is None else tt >= budget)


def participant_rule_prior(feats: Features, rho: torch.Tensor, pid: torch.Tensor | None = None,
                           transfer: torch.Tensor | None = None) -> torch.Tensor:
    """``[..., X, 2]`` log rule prior of the rows ``pid [X]`` (participant index of each row of ``rho``).

    ``sigmoid(rho)`` unless the features carry a transferred prior ``q`` for that participant; then ``q``
    (``transfer`` None) or the mixture ``transfer * q + (1 - transfer) * sigmoid(rho)``.
    """
    base = torch.stack([F.logsigmoid(-rho), F.logsigmoid(rho)], -1)  # log (P(disjunctive), P(conjunctive))
    if feats.rule_prior is None:
        if transfer is not None:
            raise ValueError("a transfer=True model needs features with a transferred rule prior: build them with "
                             "LearnerConfig(transfer=True) on multi-round data (learner and round columns)")
        return base
    if pid is None:
        pid = torch.arange(feats.n_participants)
    q = feats.rule_prior[pid].log()  # [X, 2]
    if transfer is None:
        mixed = q.expand_as(base)
    else:
        w = transfer[..., None]
        mixed = torch.logaddexp(torch.log(w) + q, torch.log1p(-w) + base)
    return torch.where(feats.transferred[pid][:, None], mixed, base)


def learner_posterior(feats: Features, ll: torch.Tensor, rho: torch.Tensor, pid: torch.Tensor | None = None,
                      transfer: torch.Tensor | None = None) -> torch.Tensor:
    """Normalised learner log posterior ``[..., D, H]`` (rule-major hypotheses) from ``ll [D, H]``.

    ``pid`` (the participant of each row; None: the rows are the participants) and ``transfer`` matter only when
    ``feats`` carries transferred rule priors (:func:`participant_rule_prior`) or told blicket counts.
    """
    space = feats.space
    S = space.n_sets
    log_set = space.log_prior[:S] - space.rule_log_prior[0]
    if feats.set_log_prior is not None:  # told blicket counts: each row's own set prior
        log_set = feats.set_log_prior[torch.arange(feats.n_participants) if pid is None else pid][:, None, :]
    lp = (participant_rule_prior(feats, rho, pid, transfer)[..., :, None] + log_set).flatten(-2)  # [..., D, H]
    lw = ll + lp
    return lw - torch.logsumexp(lw, -1, keepdim=True)


class ChoiceModel:
    """Base class. Subclasses set ``name``, ``description``, ``params`` and implement :meth:`set_logits`.

    ``judgement`` is the :class:`JudgementModel` (posterior sampling unless :meth:`with_judgement` says otherwise).
    """

    name: str = "base"
    description: str = ""
    params: tuple[Param, ...] = ()
    judgement: JudgementModel | None = None

    #: True for a ``transfer=True`` model (:meth:`with_transfer`)
    transfer: bool = False
    #: participant-level parameters made one value for everybody (:meth:`with_shared`)
    shared: frozenset = frozenset()

    def all_params(self) -> tuple[Param, ...]:
        """Set-choice parameters, then the shared rule prior (and the transfer weight of a ``transfer=True`` model),
        stopping, lapse and judgement parameters (those named in :attr:`shared` at ``level="shared"``)."""
        ps = (tuple(self.params) + RULE_PARAMS + (TRANSFER_PARAMS if self.transfer else ()) + STOP_PARAMS
              + tuple(self.judge.params))
        return tuple(replace(p, level="shared") if p.name in self.shared else p for p in ps)

    def _copy(self) -> ChoiceModel:
        """A shallow copy for the ``with_*`` variants (no ``__init__``: subclasses take other arguments)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def with_shared(self, names) -> ChoiceModel:
        """A copy named ``<name>:shared=['a','b']`` in which the participant-level parameters ``names`` take one value
        for everybody.

        For parameters the design cannot recover per participant (their fitted population spread is near 0, so a
        hierarchical fit puts a funnel at ``sigma -> 0`` that NUTS mixes poorly in): sharing them removes the
        funnel and answers the only question the data can -- the population's value.
        """
        names = frozenset([names] if isinstance(names, str) else names)
        level = {p.name: p.level for p in self.all_params()}
        bad = sorted(n for n in names if level.get(n) != "participant")  # already shared ones included
        if bad or not names:
            choices = sorted(n for n, lv in level.items() if lv == "participant")
            raise ValueError(f"with_shared: {bad or sorted(names)} of model {self.name!r} cannot be made shared; "
                             f"expected a non-empty subset of its participant-level parameters {choices}")
        new = self._copy()
        new.shared = self.shared | names
        new.name = self._spec_name(shared=sorted(new.shared))
        return new

    def with_transfer(self) -> ChoiceModel:
        """A copy named ``<name>:transfer=True`` with the participant-level weight ``transfer`` of the rule prior
        transferred from earlier rounds (see the module docstring); fit it on features built with
        ``LearnerConfig(transfer=True)``."""
        if self.transfer:
            return self
        new = self._copy()
        new.transfer = True
        new.name = self._spec_name(transfer=True)
        return new

    def _spec_name(self, **options) -> str:
        """This model's name as a spec with ``options`` set (the one grammar,
        :func:`causalplay.core.specs.format_spec`), so a modified model's name is the spec that builds it again."""
        spec = parse_spec(self.name, what="choice model")
        return format_spec(spec.name, **{**spec.kwargs, **options})

    @property
    def judge(self) -> JudgementModel:
        if self.judgement is None:
            return PosteriorSampling()
        return self.judgement

    def with_judgement(self, judgement: str | JudgementModel) -> ChoiceModel:
        """A copy of this model with another judgement model (a name from ``JUDGEMENT_MODELS`` or an instance)."""
        new = self._copy()
        new.judgement = get_judgement(judgement)
        return new

    def set_logits(self, feats: Features, th: dict, log_w: torch.Tensor) -> torch.Tensor:
        """Unnormalised log-preference ``[..., D, 2**N]`` of every object set at every decision.

        ``th`` holds each parameter per decision (``[..., D]``); ``log_w [..., D, H]`` is the learner's
        normalised log posterior before the decision.
        """
        raise NotImplementedError

    # ---- shared machinery -------------------------------------------------------------------------------
    posterior = staticmethod(learner_posterior)
    entropy_bits = staticmethod(entropy_bits)

    @staticmethod
    def eig(feats: Features, log_w: torch.Tensor) -> torch.Tensor:
        """Joint EIG (bits) of every object set ``[..., D, 2**N]`` (differentiable in ``log_w``)."""
        shape = log_w.shape[:-1]
        out = eig_bits(feats.space, log_w.reshape(-1, log_w.shape[-1]), feats.candidates, "joint")
        return out.reshape(*shape, out.shape[-1])

    def log_probs(self, feats: Features, theta: dict) -> torch.Tensor:
        """Log probability ``[..., D, 2**N + 1]`` of every option (sets by code, then stop) at every decision.

        ``theta`` maps each parameter name to its constrained value per participant ``[..., P]``.
        """
        th = {k: v[..., feats.pid] for k, v in theta.items()}
        log_w = learner_posterior(feats, feats.ll, th["rho"], feats.pid, th.get("transfer"))
        logits = self.set_logits(feats, th, log_w)
        n = logits.shape[-1]
        lapse = th["lapse"][..., None]
        log_sets = torch.logaddexp(torch.log1p(-lapse) + torch.log_softmax(logits, -1), torch.log(lapse) - math.log(n))
        stop_logit = (th["stop_a"] + th["stop_h"] * (self.entropy_bits(log_w) - 2.0)
                      + th["stop_t"] * (feats.t - 5.0) / 5.0)
        can = feats.can_stop
        log_stop = torch.where(can, F.logsigmoid(stop_logit), torch.tensor(-math.inf, dtype=stop_logit.dtype))
        log_go = torch.where(can, F.logsigmoid(-stop_logit), torch.zeros_like(stop_logit))
        out = torch.cat([log_sets + log_go[..., None], log_stop[..., None]], -1)
        if feats.must_stop is not None:  # (not a data branch: a fit's features hold it only where some stop is forced)
            # the budget is spent: the stop is forced (log 1), not chosen, so it says nothing about stopping
            forced = torch.full_like(out[..., :1, :], -math.inf)
            forced[..., -1] = 0.0
            out = torch.where(feats.must_stop[:, None], forced, out)
        return out

    def judgement_log_probs(self, feats: Features, theta: dict) -> torch.Tensor:
        """Log probability ``[..., P, H]`` of each judged (rule, blicket set) pair after the last test."""
        log_w = learner_posterior(feats, feats.final_ll, theta["rho"], None, theta.get("transfer"))
        return self.judge.log_probs(log_w, theta)

    def __repr__(self) -> str:
        return f"<choice model {self.name!r}, judgement {self.judge.name!r}>"
