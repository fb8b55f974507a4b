"""Sequential adaptive design optimisation (ADO) across the participants of a study.

After each finished participant the posterior over the candidate models is updated with that participant's marginal
likelihood under each model, and the next participant gets the candidate design of highest utility under the
current posterior weights (Cavagnaro, Myung & Pitt 2010)::

    from causalplay.design import ado
    state = ado.start(list(fits), draws=200, seed=0, choices=2)          # a JSON-ready dict
    cands = ado.prepare(fits, design_space(4, demonstrations=1), state)  # every model's predictions, once
    d = ado.next_design(state, cands)                                     # the first participant's design
    ...                                                                   # they take part: data = TrialData
    state = ado.update(state, data, fits)                                 # posterior over models
    d = ado.next_design(state, cands)                                     # the next participant's design

**The model.** Each candidate model is its fitted population represented by ``draws`` new participants
(:func:`causalplay.design.population_draws`, seeded with the state's ``seed``: the same draws that
:func:`causalplay.design.utility` scores designs with). A finished participant's marginal likelihood under model
``m`` is ``p_m(y) = (1/J) sum_j p(y | theta_mj)``: the probability of all their choices (every test and the stop,
given what they saw before each: demonstrations, the machine's answers) averaged over the ``J`` draws, computed in
log space (log-mean-exp) and batched in torch over draws and participants. Participants are independent given the
model, so ``P(m | data) ∝ pi_m prod_i p_m(y_i)``. Judgements are not scored: the utility is about choices.

**The state** is a plain dict of lists, numbers and strings (``json.dumps`` writes it; an impossible participant
under a model is stored as ``None`` for ``-inf``): the models, the prior, the seed and draw count, the number of
choices ``K`` the utility is about, and per finished participant their id, design and log marginal likelihood under
each model (the sufficient statistics of the posterior) with their number of choices. Every function returns a new
state and leaves its argument unchanged; the same state, fits and candidates always give the same design (ties by
:mod:`causalplay.core.ties`: the lowest candidate index).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..core import checks as V
from ..core.design import Design, designs_of
from ..core.ties import argmax_tol
from .predict import (
    check_designs,
    information,
    population_draws,
    prior_weights,
    sampled_information,
    sequence_log_probs,
    sequence_samples,
    sums_exactly,
)

if TYPE_CHECKING:
    from ..data import TrialData
    from ..fitting import Fit

__all__ = ["start", "update", "record", "prepare", "next_design", "utilities", "posterior", "log_marginal",
           "marginal_from_draws", "evidence", "select", "pick", "Candidates",
           "fits_in_order"]

_F64 = torch.float64
_VERSION = 1


# ---- the state ----------------------------------------------------------------------------------------------------
def start(models: Sequence[str], prior: Mapping[str, float] | Sequence[float] | None = None, *, draws: int = 200,
          seed: int = 0, choices: int = 2, samples: int = 200) -> dict:
    """A new study's state: no participant yet, the posterior is the prior.

    Parameters
    ----------
    models : sequence of str
        The candidate models' names (the keys of the ``fits`` dict given to :func:`update` and :func:`prepare`).
    prior : dict name -> weight, or sequence in ``models`` order, optional
        Prior probability of each model (normalised); default uniform.
    draws : int
        New participants per fitted population (the finite mixture each model stands for).
    seed : int
        Seed of those draws.
    choices : int
        ``K``: the first choices of a participant whose information about the model the design maximises (a whole
        session: at least the budget plus the stop, e.g. 31 for 30 tests).
    samples : int
        Where the sequences of ``K`` choices are too many to sum over (more than 4,096 per design: ``K >= 5`` with 4
        objects), the utility is a Monte Carlo estimate from this many simulated participants per model and design
        (:func:`causalplay.design.sequence_samples`).

    Returns
    -------
    dict
        JSON-ready.
    """
    if isinstance(models, str) or not isinstance(models, Sequence) or not models:
        raise TypeError(f"models must be a non-empty sequence of model names, got {V.describe(models)}")
    names = [str(m) for m in models]
    if len(set(names)) != len(names):
        raise ValueError(f"models has a repeated name: {names}")
    w = prior_weights(prior, names)
    return {"version": _VERSION, "models": names, "prior": w.tolist(),
            "draws": V.integer(draws, "draws", low=1), "seed": V.integer(seed, "seed", low=0),
            "choices": V.integer(choices, "choices", low=1), "samples": V.integer(samples, "samples", low=1),
            "participants": []}


def _check_state(state) -> None:
    if not isinstance(state, Mapping):
        raise TypeError(f"state must be the dict ado.start() returns, got {V.describe(state)}")
    if missing := sorted({"version", "models", "prior", "draws", "seed", "choices", "participants"} - set(state)):
        raise ValueError(f"state lacks {missing}; make it with causalplay.design.ado.start()")
    if state["version"] != _VERSION:
        raise ValueError(f"state version {state['version']!r} is not {_VERSION}, the version this code reads")


def _floats(values) -> list:
    """JSON-ready: ``-inf`` as None (JSON has no infinity)."""
    return [None if v == -math.inf else float(v) for v in values]


def _unfloats(values) -> list[float]:
    return [-math.inf if v is None else float(v) for v in values]


def evidence(state: Mapping) -> np.ndarray:
    """``[participants, models]``: each finished participant's log marginal likelihood under each model (nats)."""
    _check_state(state)
    rows = [_unfloats(p["log_evidence"]) for p in state["participants"]]
    return np.array(rows, dtype=float).reshape(len(rows), len(state["models"]))


def posterior(state: Mapping) -> dict[str, float]:
    """The posterior probability of each model given the finished participants (the prior before any)."""
    ev = torch.as_tensor(evidence(state), dtype=_F64).sum(0)
    log_post = torch.log(torch.as_tensor(state["prior"], dtype=_F64)) + ev
    if not bool(torch.isfinite(log_post).any()):
        raise ValueError("every model gives the finished participants probability 0 (or has prior 0): the posterior "
                         "is undefined")
    return dict(zip(state["models"], torch.softmax(log_post, 0).tolist(), strict=True))


def record(state: Mapping, ids: Sequence[str], log_evidence, designs: Sequence[Design | None] | None = None,
           n_choices: Sequence[int] | None = None) -> dict:
    """The state after participants ``ids`` finished with log marginal likelihoods ``log_evidence``
    ``[participants, models]`` (in the state's model order): Bayes' rule, as a new state.

    :func:`update` computes the marginal likelihoods from data and calls this; call it directly with marginal
    likelihoods from elsewhere (:func:`marginal_from_draws`).
    """
    _check_state(state)
    ids = [str(i) for i in ids]
    ev = torch.as_tensor(np.asarray(log_evidence, dtype=float), dtype=_F64)
    if ev.shape != (len(ids), len(state["models"])):
        raise ValueError(f"log_evidence has shape {tuple(ev.shape)}; expected [participants={len(ids)}, "
                         f"models={len(state['models'])}]")
    if bool(torch.isnan(ev).any()) or bool((ev == math.inf).any()):
        raise ValueError("log_evidence holds NaN or +inf; log marginal likelihoods are at most 0 for choice data")
    seen = {p["id"] for p in state["participants"]}
    if dup := sorted(set(ids) & seen) or sorted({i for i in ids if ids.count(i) > 1}):
        raise ValueError(f"participant(s) {dup[:5]} already counted in this state; each finished participant is "
                         f"added once")
    designs = [None] * len(ids) if designs is None else list(designs)
    n_choices = [None] * len(ids) if n_choices is None else [int(n) for n in n_choices]
    if len(designs) != len(ids) or len(n_choices) != len(ids):
        raise ValueError(f"designs and n_choices need one entry per participant ({len(ids)})")
    new = copy.deepcopy(dict(state))
    for i, pid in enumerate(ids):
        d = designs[i]
        if d is not None and not isinstance(d, Design):
            raise TypeError(f"designs[{i}] is {V.describe(d)}, expected a causalplay.design.Design or None")
        new["participants"].append({"id": pid, "design": None if d is None else d.to_dict(),
                                    "log_evidence": _floats(ev[i].tolist()), "n_choices": n_choices[i]})
    posterior(new)  # fails if every model is impossible
    return new


# ---- marginal likelihoods -----------------------------------------------------------------------------------------
def marginal_from_draws(log_lik: torch.Tensor) -> torch.Tensor:
    """``log (1/J) sum_j exp(log_lik[j, ...])``: a marginal likelihood from per-draw log-likelihoods ``[J, ...]``."""
    if not isinstance(log_lik, torch.Tensor) or log_lik.dim() < 1 or log_lik.shape[0] < 1:
        raise ValueError(f"log_lik must be a tensor [draws, ...] with at least one draw, got {V.describe(log_lik)}")
    return torch.logsumexp(log_lik.to(_F64), 0) - math.log(log_lik.shape[0])


def log_marginal(fit: Fit, data: TrialData, *, draws: int = 200, seed: int = 0,
                 chunk: int = 64) -> tuple[torch.Tensor, list[str], torch.Tensor]:
    """Each participant's log marginal likelihood of their choices under a fitted population.

    Parameters
    ----------
    fit : causalplay.fitting.Fit
    data : causalplay.data.TrialData
        Finished participants (new to the fit or not: the fit is read as a population, never refitted).
    draws, seed : int
        The population's new participants (:func:`causalplay.design.population_draws`).
    chunk : int
        Participants per batch.

    Returns
    -------
    log_p : Tensor ``[participants]`` -- ``log (1/J) sum_j p(choices | theta_j)``
    ids : list of str -- the participants, in ``data``'s order
    n_choices : LongTensor ``[participants]`` -- the decisions scored (tests and the stop)
    """
    from ..models.choice import build_features

    for attr in ("model", "learner"):
        if not hasattr(fit, attr):
            raise TypeError(f"expected a causalplay.fitting.Fit, got {V.describe(fit)}")
    if not hasattr(data, "ids") or not hasattr(data, "subset"):
        raise TypeError(f"data must be causalplay.data.TrialData, got {V.describe(data)}")
    chunk = V.integer(chunk, "chunk", low=1)
    theta = population_draws(fit, draws, seed)
    J = next(iter(theta.values())).shape[0]
    ids = list(data.ids)
    out, counts = [], []
    for a in range(0, len(ids), chunk):
        feats = build_features(data.subset(ids[a:a + chunk]), fit.learner)
        P = feats.n_participants
        th = {k: v[:, None].expand(J, P) for k, v in theta.items()}
        with torch.no_grad():
            lp = fit.model.log_probs(feats, th)  # [J, D, options]
        known = feats.choice >= 0
        ll = lp.gather(-1, feats.choice.clamp_min(0).expand(J, -1)[..., None]).squeeze(-1)
        ll = torch.where(known, ll, torch.zeros_like(ll))
        per = torch.zeros(J, P, dtype=_F64).index_add_(1, feats.pid, ll.to(_F64))
        out.append(marginal_from_draws(per))
        counts.append(torch.zeros(P, dtype=torch.long).index_add_(0, feats.pid, known.long()))
    return torch.cat(out), ids, torch.cat(counts)


def fits_in_order(state: Mapping, fits: Mapping) -> list:
    """The fits of the state's models, in the state's order; an error unless ``fits`` has exactly those models."""
    if not isinstance(fits, Mapping):
        raise TypeError(f"fits must be a dict name -> Fit, got {V.describe(fits)}")
    if set(fits) != set(state["models"]):
        raise ValueError(f"fits are for models {sorted(fits)}, the state's are {sorted(state['models'])}")
    return [fits[m] for m in state["models"]]


def update(state: Mapping, participant_data: TrialData, fits: Mapping[str, Fit]) -> dict:
    """The state after the participants of ``participant_data`` finished (one or several): each one's log marginal
    likelihood under each model (:func:`log_marginal`, with the state's ``draws`` and ``seed``) added by Bayes'
    rule, their designs (:func:`causalplay.design.designs_of`) recorded. Returns a new state.

    Raises
    ------
    ValueError
        ``fits`` for other models than the state's, a participant already counted, data every model finds
        impossible.
    """
    _check_state(state)
    ordered = fits_in_order(state, fits)
    cols, ids, n = [], None, None
    for f in ordered:
        lp, ids, n = log_marginal(f, participant_data, draws=state["draws"], seed=state["seed"])
        cols.append(lp)
    designs = designs_of(participant_data)
    return record(state, ids, torch.stack(cols, 1), [designs[i] for i in ids], n.tolist())


# ---- the next design ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Candidates:
    """Candidate designs with every model's probability of every sequence of a participant's first ``choices``
    choices (:func:`causalplay.design.sequence_log_probs`): enough to score every candidate under any posterior.

    Attributes
    ----------
    designs : tuple of Design
    models : tuple of str
    log_p : Tensor
        ``method="exact"``: ``[models, designs, leaves]`` (:func:`causalplay.design.sequence_log_probs`);
        ``"mc"``: ``[designs, models, samples, models]`` (:func:`causalplay.design.sequence_samples`).
    choices, draws, seed : int -- what the predictions were computed with
    method : {"exact", "mc"}
    samples : int or None -- Monte Carlo sequences per model and design (``"mc"``)
    """

    designs: tuple
    models: tuple
    log_p: torch.Tensor
    choices: int
    draws: int
    seed: int
    method: str = "exact"
    samples: int | None = None


def prepare(fits: Mapping[str, Fit], designs: Sequence[Design], state: Mapping) -> Candidates:
    """Every model's predictions for the candidate ``designs`` (the state's ``choices``, ``draws`` and ``seed``),
    computed once: :func:`next_design` then scores them under each new posterior in microseconds. Exact sums over
    the sequences of ``choices`` choices where a design has at most 4,096 of them, else the state's ``samples``
    simulated sequences per model and design (:func:`causalplay.design.sequence_samples`)."""
    _check_state(state)
    ordered = fits_in_order(state, fits)
    designs = check_designs(designs)
    named = dict(zip(state["models"], ordered, strict=True))
    K = state["choices"]
    common = (tuple(designs), tuple(state["models"]))
    if sums_exactly(designs[0].n_objects, K):
        log_p = sequence_log_probs(named, designs, K, draws=state["draws"], seed=state["seed"])
        return Candidates(*common, log_p, K, state["draws"], state["seed"])
    samples = _samples(state)
    scores = sequence_samples(named, designs, K, draws=state["draws"], samples=samples, seed=state["seed"])
    return Candidates(*common, scores, K, state["draws"], state["seed"], "mc", samples)


def _samples(state: Mapping) -> int:
    return state.get("samples", 200)  # states written before samples was a setting used 200


def utilities(state: Mapping, candidates: Candidates) -> torch.Tensor:
    """Utility (nats) of every candidate under the state's posterior over the models."""
    _check_state(state)
    if not isinstance(candidates, Candidates):
        raise TypeError(f"candidates must be ado.prepare(fits, designs, state), got {V.describe(candidates)}")
    want = (tuple(state["models"]), state["choices"], state["draws"], state["seed"])
    got = (candidates.models, candidates.choices, candidates.draws, candidates.seed)
    if candidates.method == "mc":
        want, got = want + (_samples(state),), got + (candidates.samples,)
    if want != got:
        raise ValueError(f"candidates were prepared for (models, choices, draws, seed{', samples' * (len(got) > 4)}) "
                         f"= {got}, the state has {want}; prepare them with this state")
    post = posterior(state)
    post = [post[m] for m in state["models"]]
    if candidates.method == "mc":
        return sampled_information(candidates.log_p, post)[0]
    return information(candidates.log_p, post)


def next_design(state: Mapping, candidates: Candidates) -> Design:
    """The candidate design of highest utility under the state's posterior (ties within
    :mod:`causalplay.core.ties`'s tolerance go to the lowest candidate index)."""
    best = int(argmax_tol(utilities(state, candidates)))  # checks the candidates first
    return candidates.designs[best]


# ---- model selection ----------------------------------------------------------------------------------------------
def select(state: Mapping, rule: str = "one_se") -> str:
    """The model the state's finished participants select (:func:`pick` on the state's marginal likelihoods, with
    its prior for ``rule="map"``)."""
    _check_state(state)
    n = [p["n_choices"] for p in state["participants"]]
    return pick(evidence(state), None if None in n else n, state["models"], rule, prior=state["prior"])


def pick(log_evidence, n_choices: Sequence[int] | None, models: Sequence[str], rule: str = "one_se", *,
         prior: Sequence[float] | None = None) -> str:
    """The model that participants with log marginal likelihoods ``log_evidence [participants, models]`` select.

    ``rule="map"``: the highest posterior probability (``prior``: default uniform, then it is the Bayes factor's
    pick); ties to the first model. ``rule="one_se"``: the simplest model (fewest set-choice parameters) whose summed
    log marginal likelihood, per choice, is within one paired standard error (over participants) of the best one's --
    :func:`causalplay.fitting.workflows.one_se_pick` applied to marginal likelihoods (the rule the package's model
    recovery applies to held-out scores); ``n_choices`` (per participant) scales both sides alike, so it changes
    no pick and may be None.
    """
    V.choice(rule, "rule", ("one_se", "map"))
    models = list(models)
    ev = np.asarray(log_evidence, dtype=float)
    if ev.ndim != 2 or ev.shape[1] != len(models):
        raise ValueError(f"log_evidence has shape {ev.shape}; expected [participants, models={len(models)}]")
    if not len(ev):
        raise ValueError("no finished participant: nothing to select a model by")
    if rule == "map":
        lp = np.log(np.full(len(models), 1.0 / len(models)) if prior is None else np.asarray(prior, dtype=float))
        with np.errstate(invalid="ignore"):
            total = torch.as_tensor(lp + ev.sum(0), dtype=_F64)
        return models[int(argmax_tol(torch.nan_to_num(total, nan=-math.inf)))]
    from ..fitting.scoring import paired_se
    from ..fitting.workflows import one_se_pick

    n = float(np.sum(n_choices)) if n_choices is not None else float(len(ev))
    nats = {m: -float(ev[:, j].sum()) / n for j, m in enumerate(models)}
    b = models.index(min(models, key=nats.get))
    se = {}
    for j, m in enumerate(models):
        d = ev[:, j] - ev[:, b]
        se[m] = paired_se(d) / n if np.all(np.isfinite(d)) else math.nan
    return one_se_pick(nats, se, models)
