"""Stochastic variational inference on the per-object Pyro world models, for worlds too large to enumerate
(N = 20...100 objects) and for continuous parameters (noise, sigmoid gain/bias with priors).

Guide (per episode): ``q(rule) * prod_i q(blicket_i | rule)`` -- a categorical over rules, enumerated exactly
inside the ELBO, and a Bernoulli per object *for each rule*, so the guide can say "under the conjunctive rule A
and B are both blickets, under the disjunctive rule only B". Continuous sites get a Normal on their
unconstrained scale (logit-normal noise, log-normal gain, normal bias). The blicket vector is discrete and
sampled, so gradients are score-function (Dice) estimates over ``particles`` vectorised particles.

A deterministic machine gives log-likelihood ``-inf`` to any sampled set that contradicts the evidence, which no
gradient estimator survives; SVI therefore treats noiseless rules as having ``noise_floor`` (default 1e-3).
How far SVI marginals are from exact ones is measured in ``docs/inference.md`` (``analyses/svi_vs_exact.py``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd
import pyro
import pyro.distributions as dist
import torch
from pyro.infer import Trace_ELBO, TraceEnum_ELBO

from ..core.beliefs import pick_best
from ..core.checks import integer
from ..core.eig import binary_entropy_bits, check_target
from ..core.history import History, HistoryBatch, all_trials, parse_trial, parse_trials
from ..core.pyro import SVIOptions, check_noise_floor, elbo_step, pyro_sandbox, run_svi
from ..core.spec import WorldSpec
from ..core.ties import pick_lowest

__all__ = ["SVIOptions", "SVIResult", "SVIBeliefs", "svi_fit", "svi_beliefs", "NOISE_FLOOR"]


@dataclass
class SVIResult:
    """Fitted guide parameters for ``B`` episodes.

    Attributes
    ----------
    rule_probs : ndarray ``[B, R]`` (``R = 0`` for the sigmoid model)
    blicket_logits : ndarray ``[B, R or 1, N]``: guide logits of each object per rule
    continuous : dict name -> (loc ``[B]``, scale ``[B]``) on the unconstrained scale
    loss : list of float, the ELBO loss per step (nats, summed over episodes)
    seconds : float
    """

    rule_names: tuple[str, ...]
    rule_probs: np.ndarray
    blicket_logits: np.ndarray
    continuous: dict[str, tuple[np.ndarray, np.ndarray]]
    loss: list[float] = field(repr=False)
    seconds: float = 0.0

    @property
    def blicket_probs(self) -> np.ndarray:
        """``[B, N]``: q(object i is a blicket), the rule mixed out."""
        p = 1.0 / (1.0 + np.exp(-self.blicket_logits))
        if self.rule_probs.shape[1] == 0:
            return p[:, 0]
        return np.einsum("br,brn->bn", self.rule_probs, p)

    def continuous_mean(self, name: str) -> np.ndarray:
        """Posterior mean of a continuous site on its natural scale (``[B]``)."""
        loc, scale = self.continuous[name]
        kind = _CONTINUOUS[name]
        if kind == "logit":  # E[sigmoid(Normal)] has no closed form; Gauss-Hermite quadrature
            x, w = np.polynomial.hermite_e.hermegauss(32)
            vals = 1.0 / (1.0 + np.exp(-(loc[:, None] + scale[:, None] * x)))
            return (vals * w).sum(1) / w.sum()
        if kind == "log":
            return np.exp(loc + scale**2 / 2)
        return loc


_CONTINUOUS = {"noise": "logit", "gain": "log", "bias": "real"}
_TO_NATURAL = {"logit": dist.transforms.SigmoidTransform(), "log": dist.transforms.ExpTransform()}


def _with_noise_floor(spec: WorldSpec, floor: float) -> WorldSpec:
    rules = tuple(dataclasses.replace(r, noise=max(r.noise, floor)) if r.deterministic or r.noise < floor else r
                  for r in spec.rules)
    return dataclasses.replace(spec, rules=rules)


def _make_guide(B: int, R: int, N: int, init_logit: float, continuous: tuple[str, ...], dtype, device):
    def guide(trials, lit=None, mask=None, **_):
        bl = pyro.param("blicket_logits", torch.full((B, 1, max(R, 1), N), init_logit, dtype=dtype, device=device))
        with pyro.plate("episodes", B, dim=-2):
            if R > 0:
                rl = pyro.param("rule_logits", torch.zeros(B, 1, R, dtype=dtype, device=device))
                rule = pyro.sample("rule", dist.Categorical(logits=rl), infer={"enumerate": "parallel"})
                sel = (rule[..., None] == torch.arange(R, device=device)).to(dtype)  # [..., B, 1, R]
                logits = (sel[..., None] * bl).sum(-2)
            else:
                logits = bl[..., 0, :]
            for name in continuous:
                loc = pyro.param(f"{name}_loc", torch.full((B, 1), _INIT_LOC[name], dtype=dtype, device=device))
                scale = pyro.param(f"{name}_scale", torch.full((B, 1), 0.3, dtype=dtype, device=device),
                                   constraint=dist.constraints.positive)
                base = dist.Normal(loc, scale)
                to_natural = _TO_NATURAL.get(_CONTINUOUS[name])
                pyro.sample(name, base if to_natural is None else dist.TransformedDistribution(base, to_natural))
            pyro.sample("blickets", dist.Bernoulli(logits=logits).to_event(1))

    return guide


_INIT_LOC = {"noise": -3.0, "gain": 1.8, "bias": 1.0}
#: :class:`SVIOptions` defaults of the learners' SVI (chosen on the N = 12-16 comparison in docs/inference.md)
LEARNER_DEFAULTS = {"steps": 800, "particles": 64, "seed": 0}
NOISE_FLOOR = 1e-3


def resolve_noise_floor(noise_floor: float | None, options: SVIOptions) -> float:
    """The noise floor to use: ``noise_floor``, else the deprecated ``options.noise_floor``, else
    :data:`NOISE_FLOOR`; refuses both at once."""
    if noise_floor is not None and options.noise_floor is not None:
        raise TypeError(f"noise_floor={noise_floor!r} and SVIOptions.noise_floor={options.noise_floor!r} both "
                        "given; pass noise_floor alone (the option is deprecated)")
    if noise_floor is None:
        return NOISE_FLOOR if options.noise_floor is None else options.noise_floor
    return check_noise_floor(noise_floor)


def svi_fit(batch: HistoryBatch, *, spec: WorldSpec | None = None, noise_prior: tuple[float, float] | None = None,
            sigmoid_prior=None, options: SVIOptions | None = None, noise_floor: float | None = None) -> SVIResult:
    """Fit the guide to ``batch`` under one of the per-object world models.

    Parameters
    ----------
    batch : HistoryBatch
        ``B`` histories (float32 is plenty for SVI).
    spec : WorldSpec, optional
        For :func:`causalplay.models.blicket_objects.blicket_objects_model` (independent blicket prior).
    noise_prior : (a, b), optional
        Beta prior on the flip probability (with ``spec``).
    sigmoid_prior : SigmoidPrior, optional
        Use :func:`causalplay.models.sigmoid.sigmoid_model` instead (no ``spec``).
    options : SVIOptions
        ``steps`` (default 800), ``particles`` (64), ``lr``, ``seed`` (0), ``progress``.
    noise_floor : float, optional
        The flip probability noiseless rules are given (in (0, 0.5]; default :data:`NOISE_FLOOR`, 1e-3): a
        deterministic machine gives a contradicting sampled set log-likelihood -inf, which no gradient estimator
        survives.
    """
    if (spec is None) == (sigmoid_prior is None):
        raise ValueError("give exactly one of spec (rule models) and sigmoid_prior (sigmoid model)")
    options = SVIOptions() if options is None else options
    if not isinstance(options, SVIOptions):
        raise TypeError(f"options must be an SVIOptions, got {type(options).__name__}")
    noise_floor = resolve_noise_floor(noise_floor, options)
    options = options.resolve(**LEARNER_DEFAULTS)
    if spec is not None and spec.n_blickets is None and spec.blicket_prior in (0.0, 1.0):
        raise ValueError(f"blicket_prior={spec.blicket_prior:g} fixes the blicket set, which leaves SVI nothing to "
                         "fit (and its score-function gradients undefined); the exact engine answers this in one "
                         "pass: causalplay.infer(..., method='exact')")
    if batch.batch_size == 0:
        raise ValueError("the HistoryBatch has no episodes")
    with pyro_sandbox(options.seed):  # seeded; the caller's random streams and param store are left as they were
        return _svi_fit(batch, spec, noise_prior, sigmoid_prior, options, noise_floor)


def _svi_fit(batch, spec, noise_prior, sigmoid_prior, options, noise_floor: float) -> SVIResult:
    from causalplay.models.blicket_objects import blicket_objects_model
    from causalplay.models.sigmoid import sigmoid_model

    trials, lit, mask = batch.trials, batch.lit, batch.mask
    B, _, N = trials.shape
    dtype, device = trials.dtype, trials.device
    if spec is not None:
        if spec.n_objects != N:
            raise ValueError(f"spec has n_objects={spec.n_objects} but the histories have {N} objects")
        fit_spec = spec if noise_prior is not None else _with_noise_floor(spec, noise_floor)
        model = partial(blicket_objects_model, spec=fit_spec, noise_prior=noise_prior)
        R, rule_names, p0 = len(spec.rules), spec.rule_names, spec.blicket_prior
        continuous = ("noise",) if noise_prior is not None else ()
    else:
        model = partial(sigmoid_model, prior=sigmoid_prior)
        R, rule_names, p0, continuous = 0, (), sigmoid_prior.blicket_prior, ("bias", "gain")
    p0 = min(max(p0, 1e-3), 1 - 1e-3)
    guide = _make_guide(B, R, N, math.log(p0 / (1 - p0)), continuous, dtype, device)
    # Rules are enumerated exactly (TraceEnum); the sigmoid model has nothing to enumerate.
    elbo = (TraceEnum_ELBO if R > 0 else Trace_ELBO)(max_plate_nesting=2, num_particles=options.particles,
                                                      vectorize_particles=True)
    t0 = time.perf_counter()
    # Each element's gradient clipped: the episodes are independent posteriors summed into one loss.
    losses = run_svi(elbo_step(model, guide, elbo, options, trials, lit, mask, clip_value=10.0), options)
    store = pyro.get_param_store()
    rule_probs = torch.softmax(store["rule_logits"], -1)[:, 0].detach().cpu().numpy() if R > 0 else np.zeros((B, 0))
    cont = {n: (store[f"{n}_loc"][:, 0].detach().cpu().numpy(), store[f"{n}_scale"][:, 0].detach().cpu().numpy())
            for n in continuous}
    return SVIResult(rule_names, rule_probs, store["blicket_logits"][:, 0].detach().cpu().numpy(), cont, losses,
                     time.perf_counter() - t0)


class SVIBeliefs:
    """Approximate beliefs from SVI, with the :class:`causalplay.Beliefs` views that make sense for them
    (both follow :class:`causalplay.core.beliefs.BeliefsLike`; ``method`` is ``"svi"``).

    ``predict`` and ``eig`` are Monte Carlo estimates from ``n_samples`` draws of the guide (plug-in EIG of the
    joint hypothesis), so they carry sampling error of order ``1/sqrt(n_samples)``. ``entropy`` is the guide's
    entropy in closed form; ``update`` refits SVI on the longer history with the same options.
    """

    method = "svi"

    def __init__(self, spec: WorldSpec, result: SVIResult, index: int = 0, n_samples: int = 4096, seed: int = 0,
                 history: History | None = None, options: SVIOptions | None = None, noise_floor: float | None = None):
        self.spec, self.result, self.index = spec, result, index
        self.n_samples, self.seed = integer(n_samples, "n_samples", low=1), seed
        self.history, self.options, self.noise_floor = history, options, noise_floor

    @property
    def n_objects(self) -> int:
        return self.spec.n_objects

    @property
    def blicket_prob(self) -> np.ndarray:
        return self.result.blicket_probs[self.index]

    @property
    def rule_prob(self) -> dict[str, float]:
        return dict(zip(self.result.rule_names, self.result.rule_probs[self.index].tolist(), strict=True))

    @property
    def entropy(self) -> float:
        """Entropy of the guide over (blicket set, rule), bits: ``H(q(rule)) + sum_r q(r) sum_i H_b(q_ri)``."""
        rp = torch.as_tensor(self.result.rule_probs[self.index], dtype=torch.float64)
        q = torch.sigmoid(torch.as_tensor(self.result.blicket_logits[self.index], dtype=torch.float64))  # [R, N]
        per_rule = binary_entropy_bits(q).sum(-1)
        if rp.numel() == 0:
            return float(per_rule[0])
        h_rule = -(rp * torch.log2(rp.clamp_min(1e-300))).sum()
        return float(h_rule + (rp * per_rule).sum())

    def map(self) -> tuple[tuple[int, ...], str]:
        """Most probable rule under q, and the objects with q(blicket | that rule) > 0.5."""
        r = pick_lowest(np.asarray(self.result.rule_probs[self.index], dtype=np.float64))
        members = np.flatnonzero(self.result.blicket_logits[self.index, r] > 0)
        return tuple(members.tolist()), self.result.rule_names[r]

    def hypotheses(self, top: int | None = None) -> pd.DataFrame:
        """Not available: SVI does not enumerate hypotheses (use :meth:`map`, ``blicket_prob``, ``rule_prob``)."""
        raise NotImplementedError("SVI beliefs do not enumerate hypotheses; use .map(), .blicket_prob and "
                                  ".rule_prob, or method='exact' when the space is small enough")

    def update(self, objects, lit) -> SVIBeliefs:
        """Beliefs after one more observation: SVI refitted on the longer history with the same options."""
        if self.history is None:
            raise ValueError("these SVIBeliefs do not know their history (built by svi_fit directly); use "
                             "causalplay.infer(..., method='svi') to get updatable beliefs")
        hist = self.history.append(objects, lit)
        opts = {k: v for k, v in dataclasses.asdict(self.options or SVIOptions()).items() if v is not None}
        if self.noise_floor is not None:
            opts["noise_floor"] = self.noise_floor
        return svi_beliefs(self.spec, HistoryBatch.from_histories([hist], dtype=torch.float32), **opts)[0]

    def _samples(self) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(self.seed)
        rp = torch.as_tensor(self.result.rule_probs[self.index])
        rule = torch.multinomial(rp, self.n_samples, replacement=True, generator=g)
        probs = torch.sigmoid(torch.as_tensor(self.result.blicket_logits[self.index]))[rule]
        return rule, torch.bernoulli(probs, generator=g)

    def _lit_probs(self, trials: np.ndarray) -> torch.Tensor:
        rule, sets = self._samples()
        k = (sets.to(torch.float64) @ torch.as_tensor(trials, dtype=torch.float64).T).long()  # [M, D]
        table = self.spec.lit_table(torch.float64)
        return table[rule[:, None], k]

    def predict(self, objects) -> float:
        vec = parse_trial(objects, self.n_objects, where="predict")
        return float(self._lit_probs(vec[None]).mean())

    def _candidates(self, trials) -> np.ndarray:
        if trials is None and self.n_objects > 16:
            raise ValueError(f"scoring all 2**{self.n_objects} - 1 trials is too many for Monte Carlo EIG; pass "
                             "candidate trials")
        return all_trials(self.n_objects) if trials is None else parse_trials(trials, self.n_objects)

    def eig(self, trials=None, target: str = "joint") -> np.ndarray:
        if check_target(target) != "joint":
            raise ValueError("SVI beliefs estimate only target='joint' EIG; use the exact engine for others")
        P = self._lit_probs(self._candidates(trials))
        return (binary_entropy_bits(P.mean(0)) - binary_entropy_bits(P).mean(0)).clamp_min(0).numpy()

    def best_trial(self, target: str = "joint", trials=None) -> tuple[int, ...]:
        cand = self._candidates(trials)
        # as the exact Beliefs.best_trial: EIGs equal up to rounding are ties, to the fewest objects, then first
        return tuple(np.flatnonzero(cand[pick_best(self.eig(cand, target), cand.sum(1))]).tolist())

    def to_frame(self) -> pd.DataFrame:
        rows = [("blicket", str(i), float(p)) for i, p in enumerate(self.blicket_prob)]
        rows += [("rule", k, v) for k, v in self.rule_prob.items()]
        return pd.DataFrame(rows, columns=["kind", "item", "prob"])

    def __repr__(self) -> str:
        bp = np.array2string(self.blicket_prob, precision=3, suppress_small=True)
        return f"SVIBeliefs(blicket_prob={bp}, rule_prob={self.rule_prob}, method='svi')"


def svi_beliefs(spec: WorldSpec, batch: HistoryBatch, *, noise_floor: float | None = None,
                **options) -> list[SVIBeliefs]:
    """SVI beliefs for every history in ``batch`` (keyword arguments are :func:`svi_fit`'s ``noise_floor`` and
    :class:`SVIOptions` fields)."""
    opts = SVIOptions.from_dict(options)
    noise_floor = resolve_noise_floor(noise_floor, opts)
    opts = opts.resolve(**LEARNER_DEFAULTS)
    result = svi_fit(batch, spec=spec, options=opts, noise_floor=noise_floor)
    out = []
    for i in range(batch.batch_size):
        n = int(batch.mask[i].sum())
        hist = History(batch.trials[i, :n].bool().cpu().numpy(), batch.lit[i, :n].bool().cpu().numpy())
        out.append(SVIBeliefs(spec, result, i, history=hist, options=opts, noise_floor=noise_floor))
    return out
