"""Overhypotheses learned across episodes: :func:`infer_overhypothesis` and its posterior.

The model is :mod:`causalplay.models.overhypothesis` (the spec): a sequence of ``K`` episodes (machines), each
with its own objects and blicket set, sharing an overhypothesis -- rule weights ``theta ~ Dirichlet(alpha)``
(``form="rules"``) or a Lucas & Griffiths sigmoid ``(bias, gain)`` (``form="sigmoid"``).

Exact inference
---------------
Every episode is marginalised exactly: with ``L[e, c] = sum_s P(s) prod_t P(lit_t | c, k_ts)`` the evidence
of episode ``e`` under component ``c`` (a rule, or one sigmoid of a grid) -- one count matrix and one
histogram product per chunk of episodes, batched over all episodes of all sequences (:func:`episode_evidence`)

* ``form="rules"``: ``p(theta | D) ∝ Dir(theta; alpha) prod_e sum_r theta_r L[e, r]``. Expanding the product
  gives a **finite mixture of Dirichlets** ``sum_n w_n Dir(alpha + n)`` over the count vectors ``n`` (how many
  episodes each rule explains), with ``w_n ∝ c_n B(alpha + n) / B(alpha)`` and ``c_n`` the sum over rule
  assignments with counts ``n`` of ``prod_e L[e, r_e]`` -- computed by dynamic programming over episodes in
  ``O(K (K + 1)^R)``. Closed form, no grid: posterior moments, the predictive rule prior
  ``E[theta | D]``, the marginal likelihood and exact samples follow.
* ``form="sigmoid"``: a grid over ``(bias, log gain)`` (midpoint rule on the prior's density, +-``width`` prior
  standard deviations); the posterior is ``prior_g prod_e L[e, g]`` normalised over the grid.

Approximate inference (the cross-checks)
----------------------------------------
* ``method="nuts"``: NUTS on the collapsed log density (episodes marginalised exactly as above, on the
  unconstrained scale: stick-breaking for ``theta``, ``log gain``); tests check it equals the Pyro model's
  enumerated density.
* ``method="svi"``: SVI on the same collapsed density, a full-covariance Gaussian guide on the unconstrained
  scale (reparameterised gradients of the ELBO).

Both run per call with a seed; the caller's RNG streams and Pyro param store are left as they were.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from .checks import choice, float_dtype, integer, real
from .history import BatchShape, History, check_frame, histories_from_frame
from .priors import SigmoidPrior
from .resources import single_thread
from .rules import Rule, Sigmoid, apply_log_noise, make_rules
from .spec import HypothesisSpace, WorldSpec

__all__ = ["infer_overhypothesis", "OverhypothesisPosterior", "SequenceBatch", "episode_evidence",
           "rule_mixture", "sigmoid_grid", "FORMS", "METHODS"]

FORMS = ("rules", "sigmoid")
METHODS = ("auto", "exact", "nuts", "svi")


# -- data ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SequenceBatch(BatchShape):
    """``B`` learners' sequences of ``K`` episodes, padded: ``trials [B, K, T, N]`` (0/1 float), ``lit [B, K, T]``,
    ``mask [B, K, T]`` bool (False on padding; an all-False episode is absent and contributes nothing).

    ``keys`` labels the sequences (DataFrame input) and ``episode_keys`` the episodes of each, in order.
    """

    trials: torch.Tensor
    lit: torch.Tensor
    mask: torch.Tensor
    keys: tuple | None = None
    episode_keys: tuple | None = None

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return tuple(self.trials.shape)

    @classmethod
    def from_sequences(cls, sequences: Sequence, n_objects: int | None = None, *,
                       dtype: torch.dtype = torch.float64, device=None) -> SequenceBatch:
        """From a list of sequences, each a list of episodes, each a history (``[(objects, lit), ...]`` or a
        :class:`~causalplay.core.history.History`). Episodes may have different lengths and sequences different
        numbers of episodes (padding). All episodes share ``n_objects`` (inferred when omitted)."""
        if isinstance(sequences, (str, bytes)) or not isinstance(sequences, Iterable):
            raise TypeError(f"sequences must be a list of lists of histories, got {type(sequences).__name__}")
        seqs = [list(s) if not isinstance(s, (str, bytes)) and isinstance(s, Iterable) else s for s in sequences]
        if not seqs:
            raise ValueError("no sequences given")
        parsed: list[list[History]] = []
        for b, s in enumerate(seqs):
            if not isinstance(s, list):
                raise TypeError(f"sequence {b} must be a list of episodes (histories), got {s!r}")
            if not s:
                raise ValueError(f"sequence {b} has no episodes")
            eps = []
            for e, h in enumerate(s):
                try:
                    eps.append(History.from_pairs(h) if n_objects is None or isinstance(h, History)
                               else History.from_pairs(h, n_objects))
                except (TypeError, ValueError) as err:
                    raise type(err)(f"sequence {b}, episode {e}: {err}") from None
            parsed.append(eps)
        n = n_objects or max(h.n_objects for s in parsed for h in s)
        B, K = len(parsed), max(len(s) for s in parsed)
        T = max(1, max(len(h) for s in parsed for h in s))
        tr = np.zeros((B, K, T, n), dtype=bool)
        lt = np.zeros((B, K, T), dtype=bool)
        mk = np.zeros((B, K, T), dtype=bool)
        for b, s in enumerate(parsed):
            for e, h in enumerate(s):
                if h.n_objects != n:
                    try:
                        h = h.with_n_objects(n)
                    except ValueError as err:
                        raise ValueError(f"sequence {b}, episode {e}: {err}") from None
                tr[b, e, : len(h)], lt[b, e, : len(h)], mk[b, e, : len(h)] = h.trials, h.lit, True
        return cls(torch.as_tensor(tr, device=device).to(dtype), torch.as_tensor(lt, device=device).to(dtype),
                   torch.as_tensor(mk, device=device))

    @classmethod
    def from_frame(cls, df: pd.DataFrame, n_objects: int | None = None, *, sequence: str | None = "sequence",
                   episode: str = "episode", objects: str = "objects", lit: str = "lit", order: str | None = "trial",
                   dtype: torch.dtype = torch.float64, device=None) -> SequenceBatch:
        """One row per observation: ``episode`` labels the machine, ``sequence`` (optional column) the learner;
        without it the whole frame is one learner. Episodes keep their order of first appearance."""
        check_frame(df, (episode, objects, lit))
        if sequence is not None and sequence in df.columns:
            if df[sequence].isna().any():
                row = df.index[df[sequence].isna().to_numpy()][0]
                raise ValueError(f"column {sequence!r} has a missing label (NaN/None) in row {row!r}")
            seq_codes, seq_keys = pd.factorize(df[sequence], sort=False)
        else:
            seq_codes, seq_keys = np.zeros(len(df), dtype=np.int64), np.array([0])
        # one key per (sequence, episode) pair; the single-episode frame reader does the parsing and padding
        pair = pd.Series(list(zip(seq_codes, df[episode], strict=True)), index=df.index)
        frame = df.assign(_pair=pair)
        keys, hb = histories_from_frame(frame, n_objects, "_pair", objects, lit, order, dtype, device)
        rows = [[i for i, k in enumerate(keys) if k[0] == b] for b in range(len(seq_keys))]  # hb rows of each
        K = max(len(r) for r in rows)
        # sequences with fewer episodes are padded with an all-False episode appended to hb's rows
        idx = torch.tensor([r + [len(keys)] * (K - len(r)) for r in rows], device=hb.trials.device)
        tr, lt, mk = (torch.cat([t, t.new_zeros(1, *t.shape[1:])])[idx] for t in (hb.trials, hb.lit, hb.mask))
        ep_keys = tuple(tuple(_py(keys[i][1]) for i in r) for r in rows)
        return cls(tr, lt, mk, tuple(_py(k) for k in seq_keys), ep_keys)


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


# -- the exact per-episode marginal ---------------------------------------------------------------------------
def episode_evidence(space: HypothesisSpace, rules: Sequence[Rule] | torch.Tensor, trials: torch.Tensor,
                     lit: torch.Tensor, mask: torch.Tensor | None = None, *, chunk: int = 4096) -> torch.Tensor:
    """``log L[e, c] = log sum_s P(s) prod_t P(lit_t | rules[c], k_ts)`` for episodes ``trials [E, T, N]``.

    Parameters
    ----------
    space : HypothesisSpace
        Supplies the allowed blicket sets and their prior (``space.sets``, ``space.set_log_prior``); its device
        and dtype are used.
    rules : sequence of Rule, or Tensor ``[C, 2, N + 1]``
        The components (rules, or the sigmoids of a grid), or their ``log_table`` s stacked.
    trials, lit, mask :
        ``[E, T, N]``, ``[E, T]``, ``[E, T]`` (mask False on padding).
    chunk : int
        Episodes per chunk (bounds the ``[chunk, T, S]`` count tensor).

    Returns
    -------
    Tensor ``[E, C]``; ``-inf`` where no allowed set explains the episode under that component.

    Notes
    -----
    Every likelihood depends on a trial only through ``(lit, k)``, so each episode is summarised by the
    histogram ``h[e, s, lit, k]`` of its trials and ``log L = logsumexp_s(log P(s) + h . log_table)``. A
    deterministic component that gives probability 0 to an observed ``(lit, k)`` is handled without
    ``0 * -inf``: such sets are excluded, not multiplied.
    """
    dtype, dev = space.dtype, space.device
    N = space.n_objects
    sets, set_lp = space.sets, space.set_log_prior
    S = sets.shape[0]
    E, T = trials.shape[0], trials.shape[1]
    if isinstance(rules, torch.Tensor):
        tables = rules.to(dev, dtype)
    else:
        tables = torch.stack([r.log_table(N, dtype=dtype, device=dev) for r in rules])  # [C, 2, N + 1]
    C = tables.shape[0]
    flat = tables.reshape(C, -1)  # [C, 2 (N + 1)]
    impossible = torch.isneginf(flat)
    finite = torch.where(impossible, torch.zeros_like(flat), flat)
    out = torch.empty(E, C, dtype=dtype, device=dev)
    width = 2 * (N + 1)
    if mask is None:
        mask = torch.ones(E, T, dtype=torch.bool, device=dev)
    for a in range(0, E, chunk):
        sl = slice(a, a + chunk)
        x = trials[sl].to(dev, dtype)
        e = x.shape[0]
        k = (x @ sets.T).round().long()  # [e, T, S]
        idx = k + lit[sl].to(dev).round().long()[..., None] * (N + 1)
        idx = torch.where(mask[sl].to(dev)[..., None], idx, width)  # padding -> an extra bin, dropped
        hist = torch.zeros(e, S, width + 1, dtype=dtype, device=dev)
        hist.scatter_add_(2, idx.transpose(1, 2), torch.ones(e, S, T, dtype=dtype, device=dev))
        hist = hist[..., :width]
        ll = hist @ finite.T  # [e, S, C]
        bad = (hist @ impossible.to(dtype).T) > 0
        ll = ll.masked_fill(bad, -math.inf)
        out[sl] = torch.logsumexp(ll + set_lp[None, :, None], dim=1)
    return out


def _sequence_evidence(space: HypothesisSpace, components, seqs: SequenceBatch, chunk: int = 4096) -> torch.Tensor:
    """:func:`episode_evidence` of every episode of ``seqs`` as ``[B, K, C]``, 0 for absent (padding) episodes."""
    B, K, T, N = seqs.shape
    log_L = episode_evidence(space, components, seqs.trials.reshape(B * K, T, N), seqs.lit.reshape(B * K, T),
                             seqs.mask.reshape(B * K, T), chunk=chunk).reshape(B, K, -1)
    return torch.where(seqs.mask.any(-1)[..., None], log_L, torch.zeros_like(log_L))


# -- the rules form: a mixture of Dirichlets ---------------------------------------------------------------
#: Largest number of count vectors ``(K + 1)^R`` the dynamic programme holds per sequence.
MAX_COUNT_STATES = 2**20


def rule_mixture(log_L: torch.Tensor, alpha: torch.Tensor, present: torch.Tensor | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Exact posterior of shared rule weights as a mixture of Dirichlets.

    Parameters
    ----------
    log_L : Tensor ``[B, K, R]``
        Per-episode log evidence under each rule (:func:`episode_evidence`).
    alpha : Tensor ``[R]``
        Dirichlet concentration.
    present : Tensor ``[B, K]`` bool, optional
        False for absent (padding) episodes, which are skipped.

    Returns
    -------
    counts : long ``[M, R]``
        Every count vector the mixture can use (rows summing to at most ``K``).
    log_w : Tensor ``[B, M]``
        Normalised log mixture weights (``-inf`` for count vectors a sequence cannot have).
    log_evidence : Tensor ``[B]``
        ``log p(D)`` of each sequence (the marginal likelihood, blicket sets and rules summed out).
    """
    B, K, R = log_L.shape
    if (K + 1) ** R > MAX_COUNT_STATES:
        raise ValueError(f"the rules form with R={R} rules and K={K} episodes needs (K + 1)^R = {(K + 1) ** R:,} "
                         f"count states (more than {MAX_COUNT_STATES:,}); use fewer rules or episodes, or "
                         "method='nuts'/'svi'")
    dtype, dev = log_L.dtype, log_L.device
    if present is None:
        present = torch.ones(B, K, dtype=torch.bool, device=dev)
    shape = (B,) + (K + 1,) * R
    c = torch.full(shape, -math.inf, dtype=dtype, device=dev)
    c[(slice(None),) + (0,) * R] = 0.0
    for e in range(K):
        terms = []
        for r in range(R):
            shifted = c.roll(1, r + 1)  # count of rule r one higher; nothing below a count of 0:
            shifted.select(r + 1, 0).fill_(-math.inf)
            terms.append(shifted + log_L[:, e, r].reshape((B,) + (1,) * R))
        new = torch.logsumexp(torch.stack(terms), 0)
        keep = present[:, e].reshape((B,) + (1,) * R)
        c = torch.where(keep, new, c)
    grids = torch.meshgrid(*[torch.arange(K + 1, device=dev)] * R, indexing="ij")
    counts = torch.stack([g.reshape(-1) for g in grids], -1)  # [M, R]
    ok = counts.sum(-1) <= K
    counts = counts[ok]
    log_c = c.reshape(B, -1)[:, ok]
    a = alpha.to(dtype)[None, :] + counts.to(dtype)  # [M, R]
    log_beta = torch.lgamma(a).sum(-1) - torch.lgamma(a.sum(-1))
    log_beta0 = torch.lgamma(alpha.to(dtype)).sum() - torch.lgamma(alpha.to(dtype).sum())
    lw = log_c + (log_beta - log_beta0)[None, :]
    z = torch.logsumexp(lw, -1)
    return counts, lw - z[:, None], z


# -- the sigmoid form: a grid -------------------------------------------------------------------------------
def sigmoid_grid(prior=None, size: int | tuple[int, int] = 41, width: float = 4.0,
                 dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(bias [G], gain [G], log_prior [G])``: a midpoint grid over ``bias`` and ``log gain``, ``+-width`` prior
    standard deviations around the prior means, with the normalised prior mass of each cell."""
    prior = prior or SigmoidPrior()
    nb, ng = (size, size) if isinstance(size, int) else size
    nb, ng = integer(nb, "grid size (bias)", low=2), integer(ng, "grid size (gain)", low=2)
    width = real(width, "grid width", low=0.0, low_open=True)

    def axis(loc: float, scale: float, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        edges = torch.linspace(loc - width * scale, loc + width * scale, n + 1, dtype=dtype)
        mid = (edges[1:] + edges[:-1]) / 2
        lp = torch.distributions.Normal(torch.tensor(loc, dtype=dtype), torch.tensor(scale, dtype=dtype)).log_prob(mid)
        return mid, lp

    b, lpb = axis(prior.bias_loc, prior.bias_scale, nb)
    lg, lpg = axis(prior.gain_loc, prior.gain_scale, ng)
    B_, G_ = torch.meshgrid(b, lg, indexing="ij")
    lp = (lpb[:, None] + lpg[None, :]).reshape(-1)
    return B_.reshape(-1), G_.reshape(-1).exp(), lp - torch.logsumexp(lp, 0)


def sigmoid_log_tables(bias: torch.Tensor, gain: torch.Tensor, n_objects: int, noise: float = 0.0) -> torch.Tensor:
    """``[G, 2, N + 1]``: :meth:`causalplay.core.rules.Sigmoid.log_table` of every ``(bias, gain)`` at once (the same
    formula: ``logsigmoid`` for the noiseless response, then :func:`~causalplay.core.rules.apply_log_noise`)."""
    k = torch.arange(n_objects + 1, dtype=bias.dtype, device=bias.device)
    x = gain[:, None] * (k[None, :] - bias[:, None])
    return torch.stack(apply_log_noise(torch.nn.functional.logsigmoid(x), torch.nn.functional.logsigmoid(-x), noise), 1)


# -- the posterior ------------------------------------------------------------------------------------------
class OverhypothesisPosterior:
    """Posterior over the shared overhypothesis of ``B`` sequences (one learner each).

    Attributes
    ----------
    form : {"rules", "sigmoid"}
    method : {"exact", "nuts", "svi"}
    spec : WorldSpec
        The per-episode assumptions the posterior was computed under (set prior; rules and noise).
    batch_size : int
    keys : tuple or None
        Sequence labels (DataFrame input).
    log_evidence : ndarray ``[B]`` or None
        ``log p(D)`` of each sequence (exact only).

    Exact ``rules`` posteriors hold ``counts [M, R]``, ``log_w [B, M]``, ``alpha [R]`` (a Dirichlet mixture);
    exact ``sigmoid`` posteriors hold ``grid_bias``, ``grid_gain`` ``[G]`` and ``log_w [B, G]``; NUTS/SVI
    posteriors hold ``samples``: ``{"rule_weights": [B, n, R]}`` or ``{"bias": [B, n], "gain": [B, n]}``.
    """

    def __init__(self, form: str, method: str, spec: WorldSpec, *, noise: float = 0.0, alpha=None, counts=None,
                 log_w=None, grid_bias=None, grid_gain=None, samples: Mapping | None = None, log_evidence=None,
                 keys=None, info: Mapping | None = None):
        self.form, self.method, self.spec, self.noise = form, method, spec, float(noise)
        self.alpha, self.counts, self.log_w = alpha, counts, log_w
        self.grid_bias, self.grid_gain = grid_bias, grid_gain
        self.samples = dict(samples) if samples is not None else None
        self.log_evidence = None if log_evidence is None else np.asarray(log_evidence, dtype=float)
        self.keys = keys
        self.info = dict(info or {})
        self.batch_size = int((log_w if log_w is not None else next(iter(self.samples.values()))).shape[0])

    # -- summaries ------------------------------------------------------------------------------------------
    @property
    def rule_names(self) -> tuple[str, ...]:
        return self.spec.rule_names if self.form == "rules" else ()

    @property
    def parameters(self) -> tuple[str, ...]:
        """Names of the scalar parameters :meth:`mean` and :meth:`sd` report."""
        if self.form == "rules":
            return tuple(f"theta[{n}]" for n in self.rule_names)
        return ("bias", "log_gain")

    def _moments(self) -> tuple[np.ndarray, np.ndarray]:
        if self.method != "exact":
            x = self._sample_matrix()  # [B, n, P]
            return x.mean(1), x.std(1)
        w = self.log_w.exp()
        if self.form == "rules":
            a = self.alpha[None, :] + self.counts.to(self.alpha.dtype)  # [M, R]
            A = a.sum(-1, keepdim=True)
            m2 = a * (a + 1) / (A * (A + 1))
            mean = w @ (a / A)
            var = (w @ m2) - mean**2
        else:
            x = torch.stack([self.grid_bias, self.grid_gain.log()], -1)  # [G, 2]
            mean = w @ x
            var = w @ x**2 - mean**2
        return mean.cpu().numpy(), var.clamp_min(0).sqrt().cpu().numpy()

    def mean(self) -> pd.DataFrame:
        """Posterior means of :attr:`parameters`, one row per sequence."""
        return pd.DataFrame(self._moments()[0], columns=list(self.parameters), index=self._index())

    def sd(self) -> pd.DataFrame:
        """Posterior standard deviations of :attr:`parameters`, one row per sequence."""
        return pd.DataFrame(self._moments()[1], columns=list(self.parameters), index=self._index())

    def _index(self):
        return pd.Index(list(self.keys) if self.keys is not None else range(self.batch_size), name="sequence")

    def _sample_matrix(self) -> np.ndarray:
        s = self.samples
        if self.form == "rules":
            return np.asarray(s["rule_weights"])
        return np.stack([np.asarray(s["bias"]), np.log(np.asarray(s["gain"]))], -1)

    def sample(self, n: int, seed: int = 0) -> dict[str, np.ndarray]:
        """``n`` posterior draws per sequence: ``{"rule_weights": [B, n, R]}`` or ``{"bias", "gain": [B, n]}``
        (exact: independent draws from the mixture / grid cells; NUTS/SVI: the stored draws, resampled)."""
        n = integer(n, "n", low=1)
        rng = np.random.default_rng(seed)
        if self.method != "exact":
            idx = rng.integers(0, next(iter(self.samples.values())).shape[1], size=n)
            return {k: np.asarray(v)[:, idx] for k, v in self.samples.items()}
        w = self.log_w.exp().cpu().numpy()
        w = w / w.sum(-1, keepdims=True)
        pick = np.stack([rng.choice(w.shape[1], size=n, p=row) for row in w])  # [B, n]
        if self.form == "rules":
            a = (self.alpha[None, :] + self.counts.to(self.alpha.dtype)).cpu().numpy()[pick]  # [B, n, R]
            g = rng.standard_gamma(a)
            return {"rule_weights": g / g.sum(-1, keepdims=True)}
        return {"bias": self.grid_bias.cpu().numpy()[pick], "gain": self.grid_gain.cpu().numpy()[pick]}

    def theta_density(self, x, rule: int | str = -1) -> np.ndarray:
        """``[B, len(x)]`` posterior density of ``theta[rule]`` at ``x`` (exact rules form: a Beta mixture)."""
        if self.form != "rules" or self.method != "exact":
            raise ValueError("theta_density needs an exact posterior of the rules form")
        r = self.rule_names.index(rule) if isinstance(rule, str) else int(rule) % len(self.rule_names)
        x = torch.as_tensor(np.asarray(x, dtype=float), dtype=self.alpha.dtype)
        a = self.alpha[None, :] + self.counts.to(self.alpha.dtype)
        ar, br = a[:, r], a.sum(-1) - a[:, r]
        lp = torch.distributions.Beta(ar[:, None], br[:, None]).log_prob(x.clamp(1e-12, 1 - 1e-12)[None, :])
        return torch.logsumexp(self.log_w[:, :, None] + lp[None], 1).exp().cpu().numpy()

    # -- what it buys on the next machine --------------------------------------------------------------------
    def predictive_rule_probs(self) -> np.ndarray:
        """``[B, C]``: the probability of each component for a **new** machine (rules form: ``E[theta | D]``,
        ``C = R``; sigmoid: the posterior weight of each grid cell, or of each draw for NUTS/SVI)."""
        if self.form == "rules":
            return self._moments()[0]
        if self.method == "exact":
            return self.log_w.exp().cpu().numpy()
        n = self.samples["bias"].shape[1]
        return np.full((self.batch_size, n), 1.0 / n)

    def components(self, index: int = 0) -> tuple[tuple[Rule, ...], np.ndarray]:
        """The component rules of sequence ``index`` and their predictive weights (sigmoid: cells or draws with
        weight below ``1e-12`` of the total are dropped, and equal draws merged)."""
        index = integer(index, "index", low=0, high=self.batch_size - 1)
        p = self.predictive_rule_probs()[index]
        if self.form == "rules":
            return self.spec.rules, p
        if self.method == "exact":
            bias, gain = self.grid_bias.cpu().numpy(), self.grid_gain.cpu().numpy()
        else:
            bias, gain = np.asarray(self.samples["bias"][index]), np.asarray(self.samples["gain"][index])
        keep = p > 1e-12 * p.sum()
        merged: dict[str, tuple[float, float, float]] = {}
        for b, g, w in zip(bias[keep], gain[keep], p[keep], strict=True):
            key = f"{g:.6g}|{b:.6g}"
            pb, pg, pw = merged.get(key, (float(b), float(g), 0.0))
            merged[key] = (pb, pg, pw + float(w))
        rules = tuple(Sigmoid(noise=self.noise, gain=g, bias=b) for b, g, _ in merged.values())
        w = np.array([w for *_, w in merged.values()])
        return rules, w / w.sum()

    def predictive_prior(self, index: int = 0, n_objects: int | None = None) -> WorldSpec:
        """The prior for a **new** machine with fresh objects, as a :class:`~causalplay.WorldSpec`: the rules (or
        sigmoid components) weighted by their posterior predictive probability, the same set prior.

        ``causalplay.infer(history, overhypothesis=post)`` uses it; ``n_objects`` defaults to the training
        machines' (the set prior must allow it: counts above ``n_objects`` are dropped).
        """
        rules, w = self.components(index)
        spec = self.spec
        n = spec.n_objects if n_objects is None else integer(n_objects, "n_objects", low=1)
        if spec.n_blickets is not None:
            counts = {c: p for c, p in zip(spec.n_blickets, spec.count_prior, strict=True) if c <= n}
            if not counts or sum(counts.values()) <= 0:
                raise ValueError(f"the overhypothesis was learned with n_blickets={spec.n_blickets}, none of which "
                                 f"fits a machine with n_objects={n}")
            return WorldSpec(n, rules, tuple(float(x) for x in w), n_blickets=tuple(counts),
                             count_prior=tuple(counts.values()))
        return WorldSpec(n, rules, tuple(float(x) for x in w), blicket_prior=spec.blicket_prior)

    def plot(self, ax=None, *, sequences=None, title: str | None = None, n_draws: int = 2000, seed: int = 0):
        """The posterior over the shared overhypothesis, one curve per sequence (rules form: the density of each
        rule's weight on a new machine; sigmoid: draws of bias and log gain); returns the matplotlib Axes (``ax``
        if given, else that of a new figure; the backend is left alone). See
        :func:`causalplay.core.plots.plot_overhypothesis`."""
        from .plots import plot_overhypothesis

        return plot_overhypothesis(self, ax, sequences=sequences, title=title, n_draws=n_draws, seed=seed)

    def __getitem__(self, index: int) -> OverhypothesisPosterior:
        """The posterior of one sequence (``B = 1``)."""
        i = integer(index, "index", low=-self.batch_size, high=self.batch_size - 1) % self.batch_size
        sl = slice(i, i + 1)
        return OverhypothesisPosterior(
            self.form, self.method, self.spec, noise=self.noise, alpha=self.alpha, counts=self.counts,
            log_w=None if self.log_w is None else self.log_w[sl], grid_bias=self.grid_bias, grid_gain=self.grid_gain,
            samples=None if self.samples is None else {k: np.asarray(v)[sl] for k, v in self.samples.items()},
            log_evidence=None if self.log_evidence is None else self.log_evidence[sl],
            keys=None if self.keys is None else (self.keys[i],), info=self.info)

    def __len__(self) -> int:
        return self.batch_size

    def __repr__(self) -> str:
        m = self.mean()
        head = ", ".join(f"{c}={m.iloc[0][c]:.3f}" for c in m.columns)
        more = f" (+{self.batch_size - 1} more sequences)" if self.batch_size > 1 else ""
        return f"OverhypothesisPosterior(form={self.form!r}, method={self.method!r}, {head}{more})"


# -- the entry point ------------------------------------------------------------------------------------------
def _as_batch(episodes, n_objects, dtype, device, frame_kw) -> SequenceBatch:
    if isinstance(episodes, SequenceBatch):
        return episodes.to(device, dtype)
    if isinstance(episodes, pd.DataFrame):
        return SequenceBatch.from_frame(episodes, n_objects, dtype=dtype, device=device, **frame_kw)
    if isinstance(episodes, (str, bytes)) or not isinstance(episodes, Iterable):
        raise TypeError("episodes must be a list of histories (one learner), a DataFrame with an 'episode' column, "
                        f"or a SequenceBatch (many learners), got {type(episodes).__name__}")
    episodes = list(episodes)
    if not episodes:
        raise ValueError("episodes is empty: give at least one history")
    return SequenceBatch.from_sequences([episodes], n_objects, dtype=dtype, device=device)


def _concentration(concentration, R: int, names) -> torch.Tensor:
    if isinstance(concentration, Mapping):
        unknown = [k for k in concentration if k not in names]
        if unknown:
            raise ValueError(f"concentration names unknown rule {unknown[0]!r}; rules are {list(names)}")
        vals = [concentration.get(n, 1.0) for n in names]
    elif isinstance(concentration, (int, float, np.number)) and not isinstance(concentration, bool):
        vals = [concentration] * R
    else:
        vals = list(concentration)
        if len(vals) != R:
            raise ValueError(f"concentration has {len(vals)} entries for {R} rules {list(names)}")
    out = []
    for n, v in zip(names, vals, strict=True):
        try:
            out.append(real(v, f"concentration[{n!r}]", low=0.0, low_open=True))
        except TypeError:
            raise ValueError(f"concentration[{n!r}] must be a number > 0, got {v!r}") from None
    return torch.tensor(out, dtype=torch.float64)


def infer_overhypothesis(episodes, n_objects: int | None = None, *, form: str = "rules",
                         rules: str | Rule | Iterable = ("disjunctive", "conjunctive"), concentration=1.0,
                         sigmoid_prior=None, grid: int | tuple[int, int] = 41, grid_width: float = 4.0,
                         blicket_prior: float = 1.0 / 3.0, n_blickets=None, noise: float = 0.0,
                         method: str = "auto", num_samples: int = 1000, warmup_steps: int = 500,
                         svi_steps: int = 1000, lr: float = 0.05, seed: int = 0, device=None,
                         dtype: torch.dtype = torch.float64, chunk: int = 4096, sequence: str | None = "sequence",
                         episode: str = "episode", objects: str = "objects", lit: str = "lit",
                         order: str | None = "trial") -> OverhypothesisPosterior:
    """Posterior over an overhypothesis shared by several Blicket machines (episodes).

    Parameters
    ----------
    episodes : list of histories, DataFrame, or SequenceBatch
        One learner's machines in order (each a list of ``(objects, lit)`` pairs or a :class:`History`); or a
        DataFrame with one row per observation and columns ``episode``, ``objects``, ``lit`` (optionally
        ``trial`` for the order within an episode and ``sequence`` for many learners); or a
        :class:`SequenceBatch` ``[B, K, T, N]`` for many learners at once (batched on ``device``).
    n_objects : int, optional
        Objects per machine (inferred when omitted; every machine has this many fresh objects).
    form : {"rules", "sigmoid"}
        ``"rules"``: shared rule weights ``theta ~ Dirichlet(concentration)`` over ``rules``; ``"sigmoid"``: a
        shared Lucas & Griffiths sigmoid with priors ``sigmoid_prior``
        (:class:`causalplay.core.priors.SigmoidPrior`; default bias ``N(1, 0.5)``, gain ``LogNormal(1.8, 0.6)``).
    rules : rule names or Rules
        The rules of the ``"rules"`` form.
    concentration : float, sequence or dict rule -> float
        Dirichlet concentration ``alpha`` (> 0); 1 is uniform over rule weights, small values say "machines of
        one kind share one rule".
    grid, grid_width :
        The sigmoid form's exact grid: cells per axis (``bias``, ``log gain``) and its half-width in prior sds.
    blicket_prior, n_blickets, noise :
        Every machine's blicket-set prior (as in :func:`causalplay.infer`) and the machine's flip probability.
    method : {"auto", "exact", "nuts", "svi"}
        ``"auto"`` is ``"exact"``. NUTS and SVI are the cross-checks (one chain; ``num_samples`` draws after
        ``warmup_steps``; SVI ``svi_steps`` Adam steps at ``lr``, then ``num_samples`` guide draws).
    seed : int
        Seeds NUTS/SVI and nothing else (the caller's RNG state is restored).
    device, dtype, chunk :
        Where the exact computation runs; episodes per chunk.
    sequence, episode, objects, lit, order : str
        DataFrame column names.

    Returns
    -------
    OverhypothesisPosterior
        ``.mean()``, ``.sd()``, ``.predictive_prior()``, ``.sample(n)``, ``post[i]`` for one sequence.

    Examples
    --------
    >>> conj = [[([0], False), ([1], False), ([0, 1], True)]] * 3   # three machines that needed two blickets
    >>> post = infer_overhypothesis(conj, n_objects=3, noise=0.05)
    >>> round(float(post.predictive_rule_probs()[0, 1]), 3)  # P(next machine is conjunctive)
    0.721
    """
    form = choice(form, "form", FORMS)
    method = choice(method, "method", METHODS)
    method = "exact" if method == "auto" else method
    float_dtype(dtype)
    chunk = integer(chunk, "chunk", low=1)
    seqs = _as_batch(episodes, n_objects, dtype, device, dict(sequence=sequence, episode=episode, objects=objects,
                                                               lit=lit, order=order))
    if n_objects is not None and integer(n_objects, "n_objects", low=1) != seqs.n_objects:
        raise ValueError(f"n_objects={n_objects} but the episodes have {seqs.n_objects} objects")
    rules_t = make_rules(rules, noise) if form == "rules" else make_rules("disjunctive", noise)
    spec = WorldSpec.from_options(seqs.n_objects, rules_t, None, blicket_prior, n_blickets, noise)
    space = HypothesisSpace.build(spec, seqs.trials.device, dtype)
    sp = sigmoid_prior or SigmoidPrior()
    if form == "sigmoid" and not isinstance(sp, SigmoidPrior):
        raise TypeError(f"sigmoid_prior must be a causalplay.core.priors.SigmoidPrior, got {sp!r}")
    if form == "rules":
        alpha = _concentration(concentration, len(spec.rules), spec.rule_names).to(dtype)
        components, gb, gg, glp = spec.rules, None, None, None
    else:
        alpha = None
        gb, gg, glp = sigmoid_grid(sp, grid, grid_width, dtype)
        components = sigmoid_log_tables(gb, gg, seqs.n_objects, noise)
    if method == "exact":
        return _exact_posterior(seqs, space, spec, form, components, alpha, noise, chunk,
                                None if form == "rules" else (gb, gg, glp), grid, grid_width)
    return _sampled_posterior(seqs, space, spec, form, alpha, sp, noise, method, integer(num_samples, "num_samples",
                              low=1), integer(warmup_steps, "warmup_steps", low=0), integer(svi_steps, "svi_steps",
                              low=1), real(lr, "lr", low=0.0, low_open=True), integer(seed, "seed"))


def _exact_posterior(seqs, space, spec, form, components, alpha, noise, chunk, grid_axes, grid, grid_width
                     ) -> OverhypothesisPosterior:
    """The exact posterior: the rules form's Dirichlet-multinomial mixture, or the sigmoid form's grid."""
    log_L = _sequence_evidence(space, components, seqs, chunk)
    if form == "rules":
        counts, log_w, z = rule_mixture(log_L, alpha.to(log_L.device), seqs.mask.any(-1))
        _check_evidence(z, seqs)
        return OverhypothesisPosterior(form, "exact", spec, noise=noise, alpha=alpha.to(log_L.device),
                                       counts=counts, log_w=log_w, log_evidence=z.cpu().numpy(), keys=seqs.keys)
    gb, gg, glp = grid_axes
    lw = glp.to(log_L.device)[None, :] + log_L.sum(1)
    z = torch.logsumexp(lw, -1)
    _check_evidence(z, seqs)
    return OverhypothesisPosterior(form, "exact", spec, noise=noise, grid_bias=gb.to(log_L.device),
                                   grid_gain=gg.to(log_L.device), log_w=lw - z[:, None],
                                   log_evidence=z.cpu().numpy(), keys=seqs.keys,
                                   info={"grid": grid, "grid_width": grid_width})


def _sampled_posterior(seqs, space, spec, form, alpha, sp, noise, method, num_samples, warmup_steps, svi_steps, lr,
                       seed) -> OverhypothesisPosterior:
    """The NUTS or SVI cross-check, seeded with ``seed``; the caller's RNG streams and param store are restored."""
    from .pyro import pyro_sandbox

    # One torch thread (restored afterwards): thousands of tiny steps, which extra OpenMP threads only slow down
    # (measured 20x slower with 2 threads on a loaded 2-core machine).
    with pyro_sandbox(seed), single_thread(1):
        if method == "nuts":
            samples, info = _nuts(seqs, space, form, alpha, sp, noise, num_samples, warmup_steps)
        else:
            samples, info = _svi(seqs, space, form, alpha, sp, noise, num_samples, svi_steps, lr)
    return OverhypothesisPosterior(form, method, spec, noise=noise, alpha=alpha, samples=samples, keys=seqs.keys,
                                   info=info)


def _check_evidence(z: torch.Tensor, seqs: SequenceBatch) -> None:
    from .exact import InconsistentEvidenceError

    bad = ~torch.isfinite(z)
    if bool(bad.any()):
        b = int(torch.nonzero(bad)[0])
        raise InconsistentEvidenceError(
            f"no overhypothesis explains sequence {b if seqs.keys is None else seqs.keys[b]!r}: some episode is "
            "impossible under every rule (the same trial lit and unlit with noise=0?); pass noise > 0")


# -- the collapsed log density (NUTS, SVI) --------------------------------------------------------------------
def collapsed_log_density(seqs: SequenceBatch, space: HypothesisSpace, form: str, alpha, sigmoid_prior,
                          noise: float):
    """``f(params) -> [..., B]``: ``log p(params, D)`` of every sequence with every episode marginalised exactly,
    on the constrained scale. ``params`` is ``{"rule_weights": [..., B, R]}`` or ``{"bias": [..., B], "gain":
    [..., B]}`` (leading dims broadcast: particles). The Pyro model's enumerated log density equals it (tests)."""
    import torch.distributions as td

    dtype = space.dtype
    sets, set_lp = space.sets, space.set_log_prior
    present = seqs.mask.any(-1)
    if form == "rules":
        log_L = _sequence_evidence(space, space.spec.rules, seqs)
        a = alpha.to(dtype)

        def f(params):
            th = params["rule_weights"]
            lp = td.Dirichlet(a).log_prob(th)
            return lp + torch.logsumexp(th.log()[..., None, :] + log_L, -1).sum(-1)

        return f
    k = torch.einsum("bktn,sn->bkts", seqs.trials.to(dtype), sets)  # [B, K, T, S]
    y = seqs.lit.to(dtype)[..., None] > 0.5
    m = seqs.mask[..., None]
    sp = sigmoid_prior
    prior_b = td.Normal(torch.tensor(sp.bias_loc, dtype=dtype), sp.bias_scale)
    prior_g = td.LogNormal(torch.tensor(sp.gain_loc, dtype=dtype), sp.gain_scale)

    def f(params):
        bias, gain = params["bias"], params["gain"]
        x = gain[..., None, None, None] * (k - bias[..., None, None, None])
        log_g, log_f = apply_log_noise(torch.nn.functional.logsigmoid(x), torch.nn.functional.logsigmoid(-x), noise)
        ll = torch.where(m, torch.where(y, log_f, log_g), torch.zeros_like(log_f)).sum(-2)  # [..., B, K, S]
        ev = torch.logsumexp(ll + set_lp, -1)  # [..., B, K]
        ev = torch.where(present, ev, torch.zeros_like(ev)).sum(-1)
        return prior_b.log_prob(bias) + prior_g.log_prob(gain) + ev

    return f


def _unconstrain(form: str):
    """``(to_params(z), log|J|(z))`` from the unconstrained ``z [..., B, d]`` (stick-breaking; bias, log gain)."""
    import torch.distributions as td

    if form == "rules":
        tr = td.biject_to(td.constraints.simplex)
        return (lambda z: {"rule_weights": tr(z)}), (lambda z: tr.log_abs_det_jacobian(z, tr(z)))
    return (lambda z: {"bias": z[..., 0], "gain": z[..., 1].exp()}), (lambda z: z[..., 1])


def _as_samples(form: str, z: torch.Tensor) -> dict[str, np.ndarray]:
    """``z [n, B, d]`` -> the posterior's sample dict ``[B, n, ...]``."""
    to_params, _ = _unconstrain(form)
    p = to_params(z.detach())
    if form == "rules":
        return {"rule_weights": p["rule_weights"].transpose(0, 1).cpu().numpy()}
    return {k: v.T.cpu().numpy() for k, v in p.items()}


def _init_z(form: str, B: int, R: int, sp, dtype) -> torch.Tensor:
    if form == "rules":
        return torch.zeros(B, R - 1, dtype=dtype)  # the simplex centre
    return torch.tensor([[sp.bias_loc, sp.gain_loc]], dtype=dtype).repeat(B, 1)  # the prior's centre


def _nuts(seqs, space, form, alpha, sp, noise, num_samples, warmup_steps):
    from pyro.infer.mcmc.util import diagnostics

    from .pyro import NUTSOptions, run_nuts

    f = collapsed_log_density(seqs, space, form, alpha, sp, noise)
    to_params, log_j = _unconstrain(form)
    R = 0 if alpha is None else alpha.shape[0]

    def setup(chain):
        def potential(q):
            z = q["z"]
            return -(f(to_params(z)) + log_j(z)).sum()

        return potential, {"z": _init_z(form, seqs.batch_size, R, sp, space.dtype)}

    # one chain in this process, Pyro's default tree depth, seeded by the caller
    opts = NUTSOptions(chains=1, warmup=warmup_steps, draws=num_samples, target_accept=0.8, max_tree_depth=10,
                       workers=1, threads=None, progress=False)
    z = run_nuts(setup, opts, seed=None).samples["z"]  # [1, n, B, d]
    info = {"warmup_steps": warmup_steps, "num_samples": num_samples,
            "n_eff": diagnostics({"z": z})["z"]["n_eff"].cpu().numpy().tolist()}
    return _as_samples(form, z[0]), info


def _svi(seqs, space, form, alpha, sp, noise, num_samples, steps, lr, particles: int = 16):
    """SVI with a full-covariance Gaussian guide on the unconstrained scale, reparameterised gradients of the ELBO
    of the collapsed density (the same target as NUTS); ``particles`` draws per step."""
    from .pyro import SVIOptions, adam_step, run_svi

    f = collapsed_log_density(seqs, space, form, alpha, sp, noise)
    to_params, log_j = _unconstrain(form)
    R = 0 if alpha is None else alpha.shape[0]
    z0 = _init_z(form, seqs.batch_size, R, sp, space.dtype)
    B, d = z0.shape
    loc = z0.clone().requires_grad_(True)
    raw_scale = torch.full((B, d), -1.0, dtype=space.dtype, requires_grad=True)  # log of the diagonal
    off = torch.zeros(B, d, d, dtype=space.dtype, requires_grad=True)
    tril = torch.tril(torch.ones(d, d, dtype=torch.bool), -1)
    gen = torch.Generator().manual_seed(int(torch.randint(0, 2**31 - 1, ()).item()))

    def scale_tril():
        return torch.diag_embed(raw_scale.exp()) + off * tril

    def loss_fn():
        eps = torch.randn(particles, B, d, dtype=space.dtype, generator=gen)
        z = loc + torch.einsum("bij,pbj->pbi", scale_tril(), eps)
        entropy = raw_scale.sum(-1)  # log |det L| per sequence (constants dropped)
        return -((f(to_params(z)) + log_j(z)).mean(0) + entropy).sum()

    opts = SVIOptions(steps=steps, lr=lr, particles=particles, draws=num_samples, progress=False)
    losses = run_svi(adam_step([loc, raw_scale, off], loss_fn, opts), opts, desc="SVI (overhypothesis)")
    with torch.no_grad():
        eps = torch.randn(num_samples, B, d, dtype=space.dtype, generator=gen)
        z = loc + torch.einsum("bij,pbj->pbi", scale_tril(), eps)
    return _as_samples(form, z), {"svi_steps": steps, "particles": particles, "final_loss": losses[-1],
                                  "losses": losses}


def predictive_rule_probs(log_L: torch.Tensor, alpha, present: torch.Tensor | None = None) -> torch.Tensor:
    """``[B, R]`` ``E[theta | D]``: the rule prior for the next machine given per-episode log evidence
    ``log_L [B, K, R]`` (rules form, exact; ``present [B, K]`` False skips an episode). Uniform-prior rule
    posteriors of each episode are valid ``log_L`` (they differ from the evidence by a per-episode constant)."""
    alpha = torch.as_tensor(alpha, dtype=log_L.dtype, device=log_L.device)
    counts, log_w, _ = rule_mixture(log_L, alpha, present)
    a = alpha[None, :] + counts.to(log_L.dtype)
    return log_w.exp() @ (a / a.sum(-1, keepdim=True))
