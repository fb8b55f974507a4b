"""What fitted models of people predict a new participant does under a design, and how well a design tells the models
apart (the mutual information of Cavagnaro, Myung & Pitt 2010, "Adaptive design optimization").

Every prediction is the choice models' own likelihood (:meth:`causalplay.models.choice.ChoiceModel.log_probs`) on
:class:`~causalplay.models.choice.Features` of the designs' histories, so the models are not re-implemented here. A
fitted population is represented by ``draws`` **new participants**: for each, a posterior draw of the group-level
parameters and a participant drawn from that population (as :meth:`causalplay.fitting.Fit.score` integrates over
held-out people). The same draws (same seed) serve every design, so designs are compared on common random numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from ..core import checks as V
from ..core.codes import codes_to_vectors, set_to_code
from ..core.design import Design
from ..core.exact import log_likelihood
from ..core.rules import make_rule
from ..core.ties import argmax_tol
from ..models.choice import LearnerConfig, step_features
from ..models.choice.base import told_set_prior

if TYPE_CHECKING:
    from ..fitting import Fit

__all__ = ["predict", "utility", "Utility", "population_draws", "sequence_log_probs", "information",
           "sequence_samples", "sampled_information", "check_designs", "EXACT_ROWS", "sums_exactly"]

_F64 = torch.float64
EXACT_ROWS = 4096  # method="auto" sums over sequences while a design's tree has at most this many rows


def check_designs(designs: Sequence[Design] | Design) -> list[Design]:
    """``designs`` (one Design or a sequence) as a non-empty list of Designs of one object count, else an error
    naming the bad entry."""
    if isinstance(designs, Design):
        designs = [designs]
    designs = list(designs)
    if not designs:
        raise ValueError("designs is empty; expected at least one causalplay.design.Design")
    if bad := [i for i, d in enumerate(designs) if not isinstance(d, Design)]:
        raise TypeError(f"designs[{bad[0]}] is {V.describe(designs[bad[0]])}, expected a causalplay.design.Design")
    if len(ns := sorted({d.n_objects for d in designs})) > 1:
        raise ValueError(f"designs have different n_objects {ns}; the choice space (2**n_objects sets and stop) must "
                         f"be one size: score each object count separately")
    return designs


def population_draws(fit: Fit, draws: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Constrained parameters ``[draws]`` of ``draws`` new participants of the fitted population.

    Each is a posterior draw (with replacement) of the group-level and shared parameters and a participant drawn from
    that population (a flat fit: from the prior), as in :func:`causalplay.fitting.scoring.heldout_score`.
    """
    draws = V.integer(draws, "draws", low=1)
    for attr in ("model", "par", "learner", "flat_raw"):
        if not hasattr(fit, attr):
            raise TypeError(f"expected a causalplay.fitting.Fit (fit = causalplay.fit(...)), got {V.describe(fit)}")
    gen = torch.Generator().manual_seed(V.integer(seed, "seed"))
    flat = fit.flat_raw()
    total = flat[next(iter(flat))].shape[0]
    idx = torch.randint(total, (draws,), generator=gen)
    group = {k: v[idx] for k, v in flat.items() if v.dim() == 1}
    raw = fit.par.new_participants(group, draws, 1, gen)
    return {k: v[:, 0] for k, v in fit.par.theta(raw, 1).items()}


def _lit_tables(designs: list[Design]) -> torch.Tensor:
    """``bool [designs, 2**N]``: whether each design's machine lights for each set (as ``Design.lit_table``, batched:
    blickets on the machine per set and design, then each rule's response)."""
    n = designs[0].n_objects
    sets = codes_to_vectors(torch.arange(2**n), n).to(_F64)  # [S, N]
    member = torch.zeros(len(designs), n, dtype=_F64)
    for i, d in enumerate(designs):
        member[i, list(d.blickets)] = 1.0
    counts = member @ sets.T  # [designs, S]
    out = torch.zeros(counts.shape, dtype=torch.bool)
    rules = [d.rule for d in designs]
    for r in set(rules):
        rows = torch.tensor([i for i, x in enumerate(rules) if x == r])
        out[rows] = make_rule(r).p_lit(counts[rows]) > 0.5
    return out


class _Rows:
    """``R`` partial histories (design index, the design's demonstrations, then own tests), advanced in place."""

    def __init__(self, designs: list[Design], index: torch.Tensor, shared: dict):
        self.designs = designs
        self.n = designs[0].n_objects
        self.S = 2**self.n
        self.design = index  # [R] design of each row
        self.own: list[torch.Tensor] = []  # codes of the own tests so far, one [R] tensor per step
        if "lit" not in shared:  # per design, once per call (chunks of rows share it)
            shared["lit"] = _lit_tables(designs)  # [designs, S]
            shared["budget"] = torch.tensor([d.max_tests if d.max_tests is not None else 2**62 for d in designs])
        self.lit, self.budget = shared["lit"], shared["budget"]
        self.told = [d.n_blickets_told for d in designs]

    def take(self, keep: torch.Tensor) -> _Rows:
        new = object.__new__(_Rows)
        new.__dict__.update(self.__dict__)
        new.design = self.design[keep]
        new.own = [c[keep] for c in self.own]
        return new

    def extend(self, codes: torch.Tensor, rows: torch.Tensor) -> _Rows:
        """Rows ``rows`` (repeated as given) each followed by the own test ``codes``."""
        new = self.take(rows)
        new.own = new.own + [codes]
        return new

    def features(self, learner: LearnerConfig, cache: dict):
        """:class:`Features` of the next decision of every row under ``learner`` (``cache``: per-design pieces)."""
        key = (learner.blicket_prior, learner.noise)
        if key not in cache:  # the demonstrations' log-likelihood, what was tested, the told prior: per design
            space = learner.space(self.n)
            hs = [d.history() for d in self.designs]
            T = max(len(h) for h in hs)
            trials = torch.zeros(len(hs), T, self.n, dtype=_F64)
            lit = torch.zeros(len(hs), T, dtype=_F64)
            mask = torch.zeros(len(hs), T, dtype=torch.bool)
            tested = torch.zeros(len(hs), self.S, dtype=torch.bool)
            for i, h in enumerate(hs):
                trials[i, :len(h)] = torch.as_tensor(h.trials, dtype=_F64)
                lit[i, :len(h)] = torch.as_tensor(h.lit, dtype=_F64)
                mask[i, :len(h)] = True
                for on, _ in self.designs[i].demonstrations:
                    tested[i, set_to_code(on)] = True
            ll = log_likelihood(space, trials, lit, mask) if T else torch.zeros(len(hs), space.n_hypotheses,
                                                                                  dtype=_F64)
            told = told_set_prior(space, dict(enumerate(self.told)), list(range(len(hs))))
            cache[key] = (space, ll, tested, told)
        space, ll0, tested0, told0 = cache[key]
        ll = ll0[self.design]
        tested = tested0[self.design].clone()
        R = len(self.design)
        for c in self.own:
            on = codes_to_vectors(c, self.n).to(_F64)[:, None]
            lt = self.lit[self.design, c].to(_F64)[:, None]
            ll = ll + log_likelihood(space, on, lt)
            tested[torch.arange(R), c] = True
        f = step_features(space, ll, len(self.own), tested, learner.min_tests, list(range(R)),
                          budget=self.budget[self.design])
        if told0 is not None:
            f.set_log_prior = told0[self.design]
        return f

    def step_log_probs(self, fit, theta: dict, cache: dict) -> torch.Tensor:
        """``[draws, R, 2**N + 1]`` log probability of each option at the rows' next decision (stop forced where the
        design's test budget is spent)."""
        feats = self.features(fit.learner, cache)
        R = len(self.design)
        th = {k: v[:, None].expand(v.shape[0], R) for k, v in theta.items()}
        with torch.no_grad():
            return fit.model.log_probs(feats, th)  # the stop forced where the budget is spent (Features.must_stop)


def predict(fit: Fit, designs: Sequence[Design] | Design, draws: int = 200, *, seed: int = 0,
            chunk: int = 4096) -> torch.Tensor:
    """Probability of each possible first choice after each design's demonstrations, per new participant.

    Parameters
    ----------
    fit : causalplay.fitting.Fit
        A fitted choice model (any model of :mod:`causalplay.models.choice`).
    designs : sequence of Design
        All with the same ``n_objects``.
    draws : int
        New participants drawn from the fitted population (:func:`population_draws`).
    seed : int
        Seed of the draws; the same seed gives every design the same participants.
    chunk : int
        Designs per batch (memory: about ``chunk * draws * 2**(N+1)`` floats per temporary).

    Returns
    -------
    Tensor ``[designs, draws, 2**N + 1]``
        Probabilities of the object sets by code ``sum_i 2**i`` (the empty set first), then stop; rows sum to 1.
        Stopping before any own test has probability 0 under ``LearnerConfig(min_tests=1)`` (the default).
    """
    designs = check_designs(designs)
    chunk = V.integer(chunk, "chunk", low=1)
    theta = population_draws(fit, draws, seed)
    rows, cache = _Rows(designs, torch.arange(len(designs)), {}), {}
    out = [rows.take(torch.arange(a, min(a + chunk, len(designs)))).step_log_probs(fit, theta, cache).exp()
           for a in range(0, len(designs), chunk)]
    return torch.cat(out, 1).transpose(0, 1).contiguous()


@dataclass
class Utility:
    """Mutual information (nats) between the model identity and a participant's first ``choices`` choices.

    Attributes
    ----------
    nats : Tensor ``[designs]``
    se : Tensor ``[designs]`` -- Monte Carlo standard error (0 where computed exactly)
    method : {"exact", "mc"}
    choices : int
    models : list of str; prior : Tensor ``[models]``
    """

    nats: torch.Tensor
    se: torch.Tensor
    method: str
    choices: int
    models: list
    prior: torch.Tensor

    @property
    def bits(self) -> torch.Tensor:
        return self.nats / math.log(2.0)

    def to_frame(self, designs: Sequence[Design] | None = None) -> pd.DataFrame:
        """One row per design (``design`` as text when ``designs`` is given), sorted by utility, best first."""
        df = pd.DataFrame({"nats": self.nats.numpy(), "se": self.se.numpy()})
        if designs is not None:
            df.insert(0, "design", [str(d) for d in designs])
        return df.sort_values("nats", ascending=False, kind="stable")

    def best(self) -> int:
        """Index of the design of highest utility (ties within :mod:`causalplay.core.ties`'s tolerance go to the
        lowest index)."""
        return int(argmax_tol(self.nats))


def sums_exactly(n_objects: int, choices: int) -> bool:
    """Whether the sequences of ``choices`` choices on ``n_objects`` objects are few enough (a tree of at most
    :data:`EXACT_ROWS` rows per design) for the utility to sum over them exactly rather than by Monte Carlo."""
    return (2**n_objects) ** (choices - 1) <= EXACT_ROWS


def _mi_terms(log_p: torch.Tensor, log_prior: torch.Tensor) -> torch.Tensor:
    """``sum_m pi_m p_m(y) log(p_m(y) / pbar(y))`` per leaf ``y``: ``log_p [M, ...]`` (log p_m(y)), result ``[...]``."""
    log_pbar = torch.logsumexp(log_prior.view(-1, *[1] * (log_p.dim() - 1)) + log_p, 0)
    w = (log_prior.view(-1, *[1] * (log_p.dim() - 1)) + log_p).exp()
    ratio = torch.where(w > 0, log_p - log_pbar, torch.zeros_like(log_p))
    return (w * ratio).sum(0)


def _log_mean_exp(x: torch.Tensor, dim: int) -> torch.Tensor:
    return torch.logsumexp(x, dim) - math.log(x.shape[dim])


def utility(fits: Mapping[str, Fit | torch.Tensor], designs: Sequence[Design] | Design, choices: int = 1,
            prior: Mapping[str, float] | Sequence[float] | None = None, *, draws: int = 200, method: str = "auto",
            samples: int = 200, seed: int = 0, chunk: int | None = None) -> Utility:
    """Mutual information (nats) between which model generated a participant and that participant's first
    ``choices`` choices, for each design.

    ``I(M; Y) = sum_m pi_m sum_y p_m(y) log(p_m(y) / sum_m' pi_m' p_m'(y))`` with ``p_m(y)`` the probability of the
    choice sequence ``y`` averaged over ``draws`` new participants of model ``m``'s fitted population
    (:func:`population_draws`; the same draws for every design). A sequence ends early at a stop; the machine's answers
    to the participant's tests are the design's.

    Parameters
    ----------
    fits : dict name -> Fit, or name -> Tensor ``[designs, draws, 2**N + 1]``
        The candidate models. A tensor is a precomputed :func:`predict` (first choices only, ``choices=1``).
    designs : sequence of Design
    choices : int
        ``K``, the number of choices the information is about.
    prior : dict name -> weight, or sequence (in ``fits`` order), optional
        Prior probability of each model (normalised); default uniform.
    draws : int
        New participants per model.
    method : {"auto", "exact", "mc"}
        ``"exact"`` sums over every choice sequence (a tree of ``(2**N) ** (K - 1)`` rows per design, each with
        ``2**N + 1`` options); ``"mc"`` is nested Monte Carlo: ``samples`` sequences simulated per model and design,
        each scored by every model's mixture over its ``draws``, with its standard error in ``Utility.se``.
        ``"auto"``: exact for ``K = 1`` and wherever the tree has at most 4,096 rows per design (with 4 objects up to
        ``K = 4``; there the sum is cheaper than sampling), Monte Carlo beyond.
    samples : int
        Monte Carlo sequences per model and design.
    seed : int
        Seeds the population draws (every model with this seed, so two equal fits have equal populations and
        utility 0) and the Monte Carlo sequences.
    chunk : int, optional
        Designs per batch (default: about 2**22 floats per temporary).

    Returns
    -------
    Utility
        ``nats [designs]``, ``se [designs]``.

    Notes
    -----
    The mixture over a model's ``draws`` participants is both what the sequences are simulated from and what scores
    them, so the Monte Carlo estimate is unbiased for the information under that ``draws``-participant population;
    against the continuous fitted population it carries the nested estimator's ``O(1/draws)`` bias.
    """
    if not isinstance(fits, Mapping) or len(fits) < 1:
        raise TypeError(f"fits must be a non-empty dict name -> Fit, got {V.describe(fits)}")
    names = list(fits)
    designs = check_designs(designs)
    K = V.integer(choices, "choices", low=1)
    V.choice(method, "method", ("auto", "exact", "mc"))
    n_choice = 2**designs[0].n_objects + 1
    if method == "auto":  # the sum over sequences where its tree is small (cheaper than sampling, and exact)
        method = "exact" if sums_exactly(designs[0].n_objects, K) else "mc"
    samples = V.integer(samples, "samples", low=1)
    draws = V.integer(draws, "draws", low=1)
    seed = V.integer(seed, "seed")
    log_prior = _log_prior(prior, names)
    tensors = {k: v for k, v in fits.items() if isinstance(v, torch.Tensor)}
    if tensors:
        if K != 1 or len(tensors) != len(fits):
            raise ValueError("precomputed predictions (tensors in fits) answer first choices only: use choices=1 and "
                             "give every model as a tensor, or give Fits")
        for k, v in tensors.items():
            if v.dim() != 3 or v.shape[0] != len(designs) or v.shape[2] != n_choice:
                raise ValueError(f"fits[{k!r}] has shape {tuple(v.shape)}; expected [designs={len(designs)}, draws, "
                                 f"{n_choice}]")
        log_p = torch.stack([_log_mean_exp(v.to(_F64).log(), 1) for v in tensors.values()])  # [M, designs, C]
        nats = _mi_terms(log_p, log_prior).sum(-1)
        return Utility(nats, torch.zeros_like(nats), "exact", 1, names, log_prior.exp())
    thetas = [population_draws(f, draws, seed) for f in fits.values()]  # one seed: the same fit, the same people
    M = len(names)
    per_design = (n_choice ** (K - 1) if method == "exact" else M * samples * K) * M * draws * n_choice * 4
    chunk = max(1, 2**24 // per_design) if chunk is None else V.integer(chunk, "chunk", low=1)
    gen = torch.Generator().manual_seed(seed + 104729)
    nats, se = [], []
    cache = [{} for _ in names]  # per model: the demonstrations' likelihoods under its learner
    shared: dict = {}  # per design: the machine's answers, the budget
    for a in range(0, len(designs), chunk):
        idx = torch.arange(a, min(a + chunk, len(designs)))
        if method == "exact":
            v = _exact(list(fits.values()), thetas, designs, idx, K, log_prior, cache, shared)
            nats.append(v)
            se.append(torch.zeros_like(v))
        else:
            v, s = _monte_carlo(list(fits.values()), thetas, designs, idx, K, log_prior, samples, gen, cache, shared)
            nats.append(v)
            se.append(s)
    return Utility(torch.cat(nats), torch.cat(se), method, K, names, log_prior.exp())


def _sequence_args(fits, designs, choices, draws, seed, caller: str) -> tuple[list, int, int, list]:
    """The checked arguments of :func:`sequence_log_probs` / :func:`sequence_samples`: ``(designs, K, choices per
    decision, each model's population draws)``."""
    if not isinstance(fits, Mapping) or len(fits) < 1:
        raise TypeError(f"fits must be a non-empty dict name -> Fit, got {V.describe(fits)}")
    if bad := [k for k, v in fits.items() if isinstance(v, torch.Tensor)]:
        raise TypeError(f"fits[{bad[0]!r}] is a tensor; {caller} needs Fits")
    designs = check_designs(designs)
    K = V.integer(choices, "choices", low=1)
    draws = V.integer(draws, "draws", low=1)
    seed = V.integer(seed, "seed")
    return designs, K, 2**designs[0].n_objects + 1, [population_draws(f, draws, seed) for f in fits.values()]


def sequence_log_probs(fits: Mapping[str, Fit], designs: Sequence[Design] | Design, choices: int = 1, *,
                       draws: int = 200, seed: int = 0, chunk: int | None = None) -> torch.Tensor:
    """Each model's log probability of every possible sequence of a participant's first ``choices`` choices.

    The leaves of the tree :func:`utility` sums over (``method="exact"``): a stop before choice ``K``, or ``K``
    choices, each model's probability averaged over its ``draws`` new participants (:func:`population_draws`, seeded
    with ``seed`` as in :func:`utility`). They do not depend on the prior over models, so the utility of every design
    under any prior follows from them without refitting or re-predicting (:func:`information`): what sequential
    adaptive design (:mod:`causalplay.design.ado`) computes once and reuses after every participant.

    Returns
    -------
    Tensor ``[models, designs, leaves]``
        Log probabilities (``-inf`` where impossible); over the leaves of a design and model they sum to 1 (in
        probability). ``leaves`` is ``sum_k (2**N)**(k-1) * c_k`` with ``c_k = 2**N + 1`` for ``k = K``, else 1.
    """
    designs, K, n_choice, thetas = _sequence_args(fits, designs, choices, draws, seed, "sequence_log_probs")
    M = len(fits)
    per_design = n_choice ** (K - 1) * M * draws * n_choice * 4
    chunk = max(1, 2**24 // per_design) if chunk is None else V.integer(chunk, "chunk", low=1)
    log_prior = torch.full((M,), -math.log(M), dtype=_F64)
    cache = [{} for _ in fits]
    shared: dict = {}
    out = []
    for a in range(0, len(designs), chunk):
        leaves: list = []
        _exact(list(fits.values()), thetas, designs, torch.arange(a, min(a + chunk, len(designs))), K, log_prior,
               cache, shared, leaves)
        out.append(torch.cat(leaves, -1))
    return torch.cat(out, 1)


def information(log_p: torch.Tensor, prior: torch.Tensor | Sequence[float] | None = None) -> torch.Tensor:
    """Mutual information (nats) between the model and the sequence, per design, from
    :func:`sequence_log_probs`' ``[models, designs, leaves]`` and prior weights over the models (default uniform;
    normalised): ``sum_m pi_m sum_y p_m(y) log(p_m(y) / sum_m' pi_m' p_m'(y))``."""
    if not isinstance(log_p, torch.Tensor) or log_p.dim() != 3:
        raise ValueError(f"log_p must be a [models, designs, leaves] tensor, got {V.describe(log_p)}")
    return _mi_terms(log_p.to(_F64), _log_weights(prior, log_p.shape[0])).sum(-1)


def prior_weights(prior, names: list[str]) -> np.ndarray:
    """Prior weights of the models ``names``, normalised: ``None`` (uniform), a mapping name -> weight, or one weight
    per model in order; ``ValueError`` naming what is wrong (other names, a count, a negative or non-finite weight,
    all 0)."""
    if prior is None:
        w = np.ones(len(names))
    elif isinstance(prior, Mapping):
        if set(prior) != set(names):
            raise ValueError(f"prior names {sorted(prior)} differ from the models {sorted(names)}")
        w = np.array([prior[n] for n in names], dtype=float)
    else:
        w = np.asarray(list(prior), dtype=float)
        if w.shape != (len(names),):
            raise ValueError(f"prior has {w.size} weight(s) for {len(names)} model(s) {names}")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"prior weights must be finite, non-negative and not all 0, got {w.tolist()}")
    return w / w.sum()


def _log_prior(prior, names: list[str]) -> torch.Tensor:
    return torch.log(torch.as_tensor(prior_weights(prior, names), dtype=_F64))


def _exact(fits, thetas, designs, idx, K, log_prior, caches, shared, leaves_out: list | None = None) -> torch.Tensor:
    """Utility of the designs ``idx`` by summing over every choice sequence (a tree of ``(2**N)**(K-1)`` rows).

    ``leaves_out``: a list that receives ``[M, len(idx), leaves]``, each model's log probability of every complete
    sequence (a stop before choice ``K``, or ``K`` choices), per design, in a fixed order."""
    rows = _Rows(designs, idx.clone(), shared)
    local = torch.arange(len(idx))  # row -> position in idx
    S = rows.S
    lp = torch.zeros(len(fits), thetas[0]["lapse"].shape[0], len(idx), dtype=_F64)  # [M, J, R] log P(path)
    total = torch.zeros(len(idx), dtype=_F64)
    for k in range(1, K + 1):
        step = torch.stack([rows.step_log_probs(f, th, c) for f, th, c in zip(fits, thetas, caches, strict=True)])
        joint = lp[..., None] + step  # [M, J, R, C]
        leaves = joint if k == K else joint[..., S:]  # the last choice, or a stop before it
        mix = _log_mean_exp(leaves, 1)  # [M, R, C'] each model's population mixture
        total.index_add_(0, local, _mi_terms(mix, log_prior).sum(-1))
        if leaves_out is not None:  # rows are design-major (a row's children follow it), so a reshape groups them
            leaves_out.append(mix.reshape(mix.shape[0], len(idx), -1))
        if k < K:  # every row continues with every object set
            R = len(local)
            rep = torch.arange(R).repeat_interleave(S)
            codes = torch.arange(S).repeat(R)
            rows = rows.extend(codes, rep)
            local = local[rep]
            lp = joint[..., :S].reshape(joint.shape[0], joint.shape[1], R * S)
    return total


def _monte_carlo(fits, thetas, designs, idx, K, log_prior, samples, gen, caches, shared):
    """Nested Monte Carlo utility of the designs ``idx``: ``samples`` sequences per (model, design)."""
    return _sampled_mi(_sample_scores(fits, thetas, designs, idx, K, samples, gen, caches, shared), log_prior)


def _sample_scores(fits, thetas, designs, idx, K, samples, gen, caches, shared) -> torch.Tensor:
    """``[len(idx), M, samples, M]``: ``samples`` sequences of up to ``K`` choices simulated per (design, generating
    model), each scored by every model's population mixture (log probability)."""
    M, J = len(fits), thetas[0]["lapse"].shape[0]
    n_d = len(idx)
    # rows: design-major, then generating model, then sample
    design = idx.repeat_interleave(M * samples)
    gen_model = torch.arange(M).repeat_interleave(samples).repeat(n_d)
    who = torch.randint(J, (len(design),), generator=gen)  # the generating participant of each sequence
    rows = _Rows(designs, design, shared)
    R = len(design)
    lp = torch.zeros(M, J, R, dtype=_F64)
    alive = torch.ones(R, dtype=torch.bool)
    S = rows.S
    for _ in range(K):
        step = torch.stack([rows.step_log_probs(f, th, c) for f, th, c in zip(fits, thetas, caches, strict=True)])
        own = step[gen_model, who, torch.arange(R)]  # [R, C] the generating participant's probabilities
        choice = torch.multinomial(own.exp(), 1, generator=gen).squeeze(-1)
        got = step.gather(-1, choice.view(1, 1, R, 1).expand(M, J, R, 1)).squeeze(-1)
        lp = lp + torch.where(alive, got, torch.zeros_like(got))
        alive = alive & (choice != S)
        if not bool(alive.any()):  # every sequence has stopped: further steps would add nothing
            break
        # stopped rows carry on with a dummy test (their path log-probability no longer changes)
        rows = rows.extend(torch.where(choice == S, 0, choice), torch.arange(R))
    log_pm = _log_mean_exp(lp, 1)  # [M, R] log p_m(y_r)
    return log_pm.T.reshape(n_d, M, samples, M)


def _sampled_mi(scores: torch.Tensor, log_prior: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Utility and its standard error per design from :func:`_sample_scores`' ``[designs, M, samples, M]``: the
    sequences of each generating model weighted by its prior (they were simulated without it, so any prior can
    reuse them)."""
    samples = scores.shape[2]
    own = scores.diagonal(dim1=1, dim2=3)  # [D, samples, M]: log p_m(y) under its own model m
    log_pbar = torch.logsumexp(log_prior + scores, -1)  # [D, M, samples]
    v = own.transpose(1, 2) - log_pbar  # [D, M, samples]
    mean = v.mean(-1)
    var = v.var(-1) if samples > 1 else torch.zeros_like(mean)
    pi = log_prior.exp()
    keep = pi > 0  # a model of prior 0 contributes nothing (and its sequences may be impossible under the others)
    mean = torch.where(keep, mean, torch.zeros_like(mean))
    var = torch.where(keep, var, torch.zeros_like(var))
    return (pi * mean).sum(-1), ((pi**2) * var / samples).sum(-1).sqrt()


def sequence_samples(fits: Mapping[str, Fit], designs: Sequence[Design] | Design, choices: int, *, draws: int = 200,
                     samples: int = 200, seed: int = 0, chunk: int | None = None) -> torch.Tensor:
    """Simulated choice sequences of every model on every design, scored by every model: the Monte Carlo counterpart
    of :func:`sequence_log_probs` for horizons whose tree of sequences is too large to sum over (a whole session:
    ``choices`` at least the design's budget plus the stop).

    Per design and generating model, ``samples`` participants are drawn from the model's ``draws`` new participants
    (:func:`population_draws`, seeded with ``seed``) and play up to ``choices`` choices (a stop ends a sequence);
    each sequence is scored by every model's mixture over its ``draws`` participants. The sequences do not depend on
    a prior over the models, so :func:`sampled_information` gives the utility under any prior from them:
    :func:`utility` with ``method="mc"`` and the same ``draws``, ``samples`` and ``seed`` is exactly
    ``sampled_information(sequence_samples(...), prior)``.

    Returns
    -------
    Tensor ``[designs, models, samples, models]``
        ``[d, m, s, m']``: the log probability under model ``m'`` of the ``s``-th sequence model ``m`` generated on
        design ``d``.
    """
    designs, K, n_choice, thetas = _sequence_args(fits, designs, choices, draws, seed, "sequence_samples")
    samples = V.integer(samples, "samples", low=1)
    M = len(fits)
    per_design = M * samples * K * M * draws * n_choice * 4
    chunk = max(1, 2**24 // per_design) if chunk is None else V.integer(chunk, "chunk", low=1)
    gen = torch.Generator().manual_seed(seed + 104729)  # the generator utility(method="mc") uses
    cache = [{} for _ in fits]
    shared: dict = {}
    return torch.cat([_sample_scores(list(fits.values()), thetas, designs,
                                     torch.arange(a, min(a + chunk, len(designs))), K, samples, gen, cache, shared)
                      for a in range(0, len(designs), chunk)])


def sampled_information(scores: torch.Tensor, prior: torch.Tensor | Sequence[float] | None = None
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    """Mutual information (nats) between the model and the sequence, per design, and its Monte Carlo standard error,
    from :func:`sequence_samples`' ``[designs, models, samples, models]`` and prior weights over the models (default
    uniform; normalised)."""
    if not isinstance(scores, torch.Tensor) or scores.dim() != 4 or scores.shape[1] != scores.shape[3]:
        raise ValueError(f"scores must be a [designs, models, samples, models] tensor, got {V.describe(scores)}")
    return _sampled_mi(scores.to(_F64), _log_weights(prior, scores.shape[1]))


def _log_weights(prior, M: int) -> torch.Tensor:
    """Normalised log prior weights of ``M`` models (``None``: uniform); ``ValueError`` naming bad weights."""
    w = torch.ones(M, dtype=_F64) if prior is None else torch.as_tensor(prior, dtype=_F64).flatten()
    if w.shape != (M,) or not bool(torch.isfinite(w).all()) or bool((w < 0).any()) or float(w.sum()) <= 0:
        raise ValueError(f"prior must hold {M} finite non-negative weights, not all 0, got {w.tolist()}")
    return torch.log(w / w.sum())
