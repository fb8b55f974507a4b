"""Beliefs: log-weights over a HypothesisSpace for one history (or ``[B, H]`` for a batch), with views."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property, lru_cache
from typing import Protocol, runtime_checkable

import numpy as np
import pandas as pd
import torch

from .checks import integer
from .codes import codes_to_vectors, popcount
from .eig import check_target, eig_bits, eig_one_joint
from .exact import entropy_bits, observe
from .history import History, parse_trial, parse_trials
from .resources import max_memory as memory_budget
from .resources import single_thread
from .spec import HypothesisSpace
from .ties import argmax_tol, pick_lowest, snap

__all__ = ["Beliefs", "BatchBeliefs", "BeliefsLike", "single_thread"]


@runtime_checkable
class BeliefsLike(Protocol):
    """What :func:`causalplay.infer` returns, exact (:class:`Beliefs`) or variational
    (:class:`causalplay.learners.svi.SVIBeliefs`): the same views and methods, and ``method`` saying which."""

    method: str

    @property
    def n_objects(self) -> int: ...

    @property
    def blicket_prob(self) -> np.ndarray: ...

    @property
    def rule_prob(self) -> dict[str, float]: ...

    @property
    def entropy(self) -> float: ...

    def map(self) -> tuple[tuple[int, ...], str]: ...

    def predict(self, objects) -> float: ...

    def eig(self, trials=None, target: str = "joint") -> np.ndarray: ...

    def best_trial(self, target: str = "joint", trials=None) -> tuple[int, ...]: ...

    def update(self, objects, lit) -> BeliefsLike: ...

    def hypotheses(self, top: int | None = None) -> pd.DataFrame: ...

    def to_frame(self) -> pd.DataFrame: ...


@lru_cache(maxsize=8)
def _trial_sizes(n_objects: int) -> np.ndarray:
    """Number of objects of every non-empty trial, in integer-code order (read-only)."""
    out = popcount(np.arange(1, 2**n_objects, dtype=np.int64))
    out.flags.writeable = False
    return out


def pick_best(eig: np.ndarray, sizes: np.ndarray) -> int:
    """Index of the largest EIG; EIGs within the float64 tolerance of :mod:`causalplay.core.ties` (``1e-9`` bits)
    are ties, broken by fewest objects, then position."""
    return pick_lowest(eig, key=sizes)


def _to_numpy(x: torch.Tensor) -> np.ndarray:
    return x.detach().cpu().numpy()


class BatchBeliefs:
    """Exact beliefs of ``B`` learners over one hypothesis space.

    Attributes
    ----------
    space : HypothesisSpace
    log_w : Tensor ``[B, H]``
        Normalised log posterior, hypotheses rule-major.
    episodes : list
        Episode labels (row order).
    """

    method = "exact"

    def __init__(self, space: HypothesisSpace, log_w: torch.Tensor, episodes: Iterable | None = None, *,
                 max_memory=None):
        self.space = space
        self.log_w = log_w
        self.episodes = list(range(log_w.shape[0])) if episodes is None else list(episodes)
        self.max_memory = max_memory

    def __len__(self) -> int:
        return self.log_w.shape[0]

    # -- the agents' tracker: in-place, masked, unvalidated (hot path) -----------------------------------
    @classmethod
    def prior(cls, space: HypothesisSpace, batch_size: int) -> BatchBeliefs:
        """``batch_size`` learners who have seen nothing yet (``log_w`` is the space's prior, one row each)."""
        return cls(space, space.log_prior.expand(batch_size, -1).clone())

    def observe_(self, on: torch.Tensor, lit: torch.Tensor, active: torch.Tensor | None = None) -> None:
        """One more panel per row, in place: ``on [B, N]`` and ``lit [B]`` (bool or 0/1), only where ``active``
        ``[B]`` is True (rows of ended episodes stay as they were). Rows are renormalised; nothing is checked."""
        dt = self.space.dtype
        if active is None or bool(active.all()):
            self.log_w = observe(self.space, self.log_w, on.to(dt), lit.to(dt), check=False)
            return
        idx = torch.nonzero(active).flatten()
        if len(idx):
            self.log_w[idx] = observe(self.space, self.log_w[idx], on[idx].to(dt), lit[idx].to(dt), check=False)

    def observe_soft_(self, log_lik: torch.Tensor, rows: torch.Tensor | None = None) -> None:
        """Bayes' rule with evidence given as its likelihood, in place: ``log_lik [R, H]`` is the log-probability
        of each updated row's observation under every hypothesis (rule-major, as ``log_w``), added to those rows'
        log weights, which are then renormalised.

        ``rows`` picks the ``R`` rows: a bool mask ``[B]`` or row indices (None: all ``B``). Certain evidence is
        the case ``log_lik = causalplay.core.exact.log_likelihood(space, trial[:, None], lit[:, None])`` (what
        :meth:`observe_` adds); soft evidence, a reading that is only probably right, is the likelihood of the
        reading, ``sum_x P(reading | x) P(x | h)`` over what may have been seen. A row whose hypotheses all have
        likelihood 0 becomes NaN (nothing is checked here; see ``torch.isfinite``).
        """
        sel = slice(None) if rows is None else rows
        old = self.log_w[sel]
        if not isinstance(log_lik, torch.Tensor) or log_lik.shape != old.shape:
            got = tuple(log_lik.shape) if isinstance(log_lik, torch.Tensor) else type(log_lik).__name__
            raise ValueError(f"log_lik must be a tensor [{old.shape[0]}, {old.shape[1]}] (one row per updated "
                             f"row, one column per hypothesis), got {got}")
        new = old + log_lik.to(old.dtype)
        new = new - torch.logsumexp(new, -1, keepdim=True)
        if rows is None:
            self.log_w = new
        else:
            self.log_w[rows] = new

    def reset_(self, rows: torch.Tensor) -> None:
        """Back to the space's prior in ``rows`` (a bool mask ``[B]`` or row indices), in place: those learners
        have seen nothing (condition them again with :meth:`condition_count_`, :meth:`exclude_`, ...)."""
        self.log_w[rows] = self.space.log_prior.to(self.log_w.dtype)

    def condition_count_(self, count: torch.Tensor) -> None:
        """Keep only blicket sets of the announced size ``count [B]``, in place (renormalised by the next
        :meth:`observe_`, or call :meth:`normalise_`)."""
        sizes = self.space.sets.sum(-1).round().long()
        self.log_w = self.log_w.masked_fill((sizes[None, :] != count[:, None]).repeat(1, self.space.n_rules),
                                            -torch.inf)

    def exclude_(self, codes: torch.Tensor, active: torch.Tensor) -> None:
        """Rule out the blicket set of integer code ``codes [B]`` under every rule, in the ``active`` rows (an
        episode that went on after a guess says the guess was wrong). Renormalised by the next :meth:`observe_`.
        Needs a space over all ``2**N`` sets (set index = code)."""
        idx = torch.nonzero(active).flatten()
        S = self.space.n_sets
        for r in range(self.space.n_rules):
            self.log_w[idx, r * S + codes[idx]] = -torch.inf

    def normalise_(self) -> None:
        """Renormalise every row in place (after masking with :meth:`condition_count_` / :meth:`exclude_`)."""
        self.log_w = self.log_w - torch.logsumexp(self.log_w, -1, keepdim=True)

    def set_probs(self) -> torch.Tensor:
        """``[B, S]`` tensor: the posterior of every blicket set, rules summed out."""
        return self.log_w.exp().reshape(-1, self.space.n_rules, self.space.n_sets).sum(1)

    def rule_marginals(self) -> torch.Tensor:
        """``[B, R]`` tensor: the posterior of each rule of the space (``space.rules``; sets summed out)."""
        return self.log_w.exp().reshape(-1, self.space.n_rules, self.space.n_sets).sum(-1)

    def marginals(self) -> torch.Tensor:
        """``[B, N]`` tensor of blicket marginals (the tensor twin of :attr:`blicket_probs`)."""
        return (self.set_probs() @ self.space.sets).clamp(0.0, 1.0)  # rounding can overshoot 1 by an ulp

    def map_code(self) -> torch.Tensor:
        """``[B]`` integer code of each row's most probable blicket set (ties, probabilities equal up to the
        dtype's relative tolerance of :mod:`causalplay.core.ties`: the lowest code)."""
        return argmax_tol(self.set_probs().log(), -1)

    def code_to_set(self, codes: torch.Tensor) -> torch.Tensor:
        """``[B, N]`` bool: the objects of the sets with integer codes ``codes [B]``."""
        return codes_to_vectors(codes, self.space.n_objects)

    # -- marginals -------------------------------------------------------------------------------------
    def _rows(self) -> Iterable[slice]:
        """Row chunks whose ``[b, H]`` probabilities fit in a quarter of ``max_memory``."""
        item = torch.finfo(self.space.dtype).bits // 8
        step = max(1, memory_budget(self.max_memory) // (4 * self.space.n_hypotheses * item))
        return (slice(i, i + step) for i in range(0, len(self), step))

    def _marginal(self, fn) -> torch.Tensor:
        R, S = self.space.n_rules, self.space.n_sets
        return torch.cat([fn(self.log_w[sl].exp().reshape(-1, R, S)) for sl in self._rows()])

    @property
    def blicket_probs(self) -> np.ndarray:
        """``[B, N]``: P(object i is a blicket) per episode."""
        return _to_numpy(self._marginal(lambda g: g.sum(1) @ self.space.sets))

    @property
    def rule_probs(self) -> np.ndarray:
        """``[B, R_spec]``: posterior of every rule in ``space.spec.rules`` (zero-prior rules get 0)."""
        kept = _to_numpy(self._marginal(lambda g: g.sum(-1)))
        out = np.zeros((len(self), len(self.space.spec.rules)))
        cols = [self.space.spec.rules.index(r) for r in self.space.rules]
        out[:, cols] = kept
        return out

    @property
    def entropy(self) -> np.ndarray:
        """``[B]`` posterior entropy over hypotheses, bits."""
        return _to_numpy(entropy_bits(self.log_w))

    # -- predictions and EIG ---------------------------------------------------------------------------
    def _candidates(self, trials) -> torch.Tensor:
        if trials is None:
            return self.space.all_trials()
        arr = parse_trials(trials, self.space.n_objects)
        return torch.as_tensor(arr, device=self.space.device).to(self.space.dtype)

    def predict_all(self, trials) -> np.ndarray:
        """``[B, D]``: P(machine lights | trial) for each candidate trial."""
        cand = self._candidates(trials)
        P = self.space.predictive(cand)
        return _to_numpy((self.log_w.exp() @ P)[:, : cand.shape[0]].clamp(0.0, 1.0))

    def eig_all(self, trials=None, target: str = "joint") -> np.ndarray:
        """``[B, D]`` EIG in bits of each candidate (all ``2**N - 1`` non-empty trials, in integer-code order,
        when ``trials`` is None). Candidates and episodes are chunked to stay within ``max_memory``."""
        check_target(target)
        cand = None if trials is None else self._candidates(trials)
        return _to_numpy(eig_bits(self.space, self.log_w, cand, target, max_memory=self.max_memory))

    def update_all(self, trials, lit) -> BatchBeliefs:
        """One more observation per episode: ``trials`` (one trial each) and ``lit`` (``[B]`` bools)."""
        rows = parse_trials(trials, self.space.n_objects)
        if isinstance(lit, torch.Tensor):
            lit = lit.cpu().numpy()
        lit = np.asarray(lit)
        if rows.shape[0] != len(self) or lit.shape != (len(self),):
            raise ValueError(f"need one trial and one lit value per episode ({len(self)}), got "
                             f"{rows.shape[0]} trials and lit of shape {lit.shape}")
        if lit.dtype != np.bool_ and (lit.dtype.kind not in "iuf" or not np.isin(lit, (0, 1)).all()):
            raise ValueError(f"lit must be booleans or 0/1, got {lit!r}")
        t = torch.as_tensor(rows, device=self.space.device).to(self.space.dtype)
        lt = torch.as_tensor(lit.astype(bool), device=self.space.device).to(self.space.dtype)
        return BatchBeliefs(self.space, observe(self.space, self.log_w, t, lt), self.episodes,
                            max_memory=self.max_memory)

    # -- tidy output -----------------------------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """Tidy table: one row per (episode, quantity, item) with columns ``episode, kind, item, prob``."""
        bp, rp = self.blicket_probs, self.rule_probs
        frames = [pd.DataFrame({"episode": self.episodes, "kind": "blicket", "item": str(i), "prob": bp[:, i]})
                  for i in range(bp.shape[1])]
        frames += [pd.DataFrame({"episode": self.episodes, "kind": "rule", "item": name, "prob": rp[:, j]})
                   for j, name in enumerate(self.space.spec.rule_names)]
        return pd.concat(frames, ignore_index=True).sort_values(["episode", "kind", "item"], kind="stable",
                                                                ignore_index=True)

    def __getitem__(self, i: int) -> Beliefs:
        i = integer(i, "episode row", low=-len(self), high=len(self) - 1)
        return Beliefs(self.space, self.log_w[i], history=None, episode=self.episodes[i], max_memory=self.max_memory)


class Beliefs:
    """An ideal learner's exact beliefs after one history.

    Created by :func:`causalplay.infer`. All probabilities are posterior probabilities under the WorldSpec.
    One-history calls run with ``threads`` torch threads (1 by default; the caller's setting is restored).
    """

    method = "exact"

    def __init__(self, space: HypothesisSpace, log_w: torch.Tensor, history: History | None = None,
                 episode=None, *, max_memory=None, threads: int | None = 1):
        self.space = space
        self.log_w = log_w.reshape(-1)
        self.history = history
        self.episode = episode
        self.threads = threads
        self._max_memory = max_memory

    @cached_property
    def _batch(self) -> BatchBeliefs:
        # built on first use: infer(h).best_trial() never needs it (the one-history EIG path)
        return BatchBeliefs(self.space, self.log_w[None, :], [self.episode], max_memory=self._max_memory)

    @property
    def n_objects(self) -> int:
        return self.space.n_objects

    @property
    def blicket_prob(self) -> np.ndarray:
        """``[N]``: P(object i is a blicket)."""
        return self._batch.blicket_probs[0]

    @property
    def rule_prob(self) -> dict[str, float]:
        """Posterior probability of each rule of the WorldSpec."""
        return dict(zip(self.space.spec.rule_names, self._batch.rule_probs[0].tolist(), strict=True))

    @property
    def entropy(self) -> float:
        """Posterior entropy over (blicket set, rule), bits."""
        return float(self._batch.entropy[0])

    def hypotheses(self, top: int | None = None) -> pd.DataFrame:
        """Posterior over hypotheses, most probable first (ties in code order): columns ``blickets, rule, prob``.

        ``top`` (an integer >= 1) keeps the first ``top`` rows.
        """
        if top is not None:
            top = integer(top, "top", low=1)
        p = _to_numpy(self.log_w.exp())
        # order by log-probability rounded to the tolerance of core.ties: equal posteriors keep code order
        key = -_to_numpy(snap(self.log_w))
        if top is not None and top < len(p):
            part = np.argpartition(key, top - 1)[:top]
            # argpartition does not keep ties in code order: take every hypothesis tied with the cut-off too
            cand = np.flatnonzero(key <= key[part].max())
            order = cand[np.lexsort((cand, key[cand]))][:top]
        else:
            order = np.argsort(key, kind="stable")
        sets = _to_numpy(self.space.sets).astype(bool)
        S = self.space.n_sets
        return pd.DataFrame({
            "blickets": [tuple(np.flatnonzero(sets[h % S]).tolist()) for h in order],
            "rule": [self.space.rule_names[h // S] for h in order],
            "prob": p[order],
        })

    def map(self) -> tuple[tuple[int, ...], str]:
        """Most probable hypothesis as ``(blicket indices, rule name)`` (first in code order on ties)."""
        h = int(argmax_tol(self.log_w))  # log space: the tolerance is relative to the probabilities
        S = self.space.n_sets
        members = np.flatnonzero(_to_numpy(self.space.sets[h % S]))
        return tuple(members.tolist()), self.space.rule_names[h // S]

    def predict(self, objects) -> float:
        """P(machine lights | these objects on it)."""
        vec = parse_trial(objects, self.n_objects, where="predict")
        with single_thread(self.threads):
            return float(self._batch.predict_all([vec])[0, 0])

    def eig(self, trials=None, target: str = "joint") -> np.ndarray:
        """EIG in bits of each trial about ``target`` in {"joint", "blickets", "rule"}.

        ``trials=None`` scores all ``2**N - 1`` non-empty trials in integer-code order (see
        :func:`causalplay.core.history.all_trials`). The predictive table of a candidate set is cached on the space.
        """
        with single_thread(self.threads):
            if trials is None and target == "joint":  # the one-history hot path (infer(h).best_trial())
                fast = eig_one_joint(self.space, self.log_w)
                if fast is not None:
                    return fast
            return self._batch.eig_all(trials, target)[0]

    def best_trial(self, target: str = "joint", trials=None) -> tuple[int, ...]:
        """The trial (object indices) of maximal EIG; ties go to the fewest objects, then lowest code."""
        n = self.n_objects
        if trials is None:
            e = self.eig(None, target)
            best = 1 + pick_best(e, _trial_sizes(n))
            return tuple(i for i in range(n) if best >> i & 1)
        cand = parse_trials(trials, n)
        e = self.eig(cand, target)
        # EIGs equal up to rounding are ties; prefer smaller trials (cheaper to run, easier to read).
        return tuple(np.flatnonzero(cand[pick_best(e, cand.sum(1))]).tolist())

    def update(self, objects, lit) -> Beliefs:
        """Beliefs after one more observation."""
        vec = parse_trial(objects, self.n_objects, where="update")
        if isinstance(lit, torch.Tensor):
            lit = lit.cpu().numpy()
        with single_thread(self.threads):
            new = self._batch.update_all([vec], [lit])  # validates lit (booleans or 0/1)
        hist = self.history.append(vec, bool(np.asarray(lit).item())) if self.history is not None else None
        return Beliefs(self.space, new.log_w[0], hist, self.episode, max_memory=self._max_memory,
                       threads=self.threads)

    def to_frame(self) -> pd.DataFrame:
        """Tidy table with columns ``kind, item, prob`` (blicket marginals then rule posteriors)."""
        return self._batch.to_frame().drop(columns="episode")

    def plot(self, ax=None, *, labels=None, title: str | None = None):
        """Bars of the blicket marginals and the rule posterior; returns the matplotlib Axes (``ax`` if given,
        else that of a new figure; the backend is left alone). See
        :func:`causalplay.core.plots.plot_beliefs`."""
        from .plots import plot_beliefs

        return plot_beliefs(self, ax, labels=labels, title=title)

    def __repr__(self) -> str:
        bp = np.array2string(self.blicket_prob, precision=3, suppress_small=True)
        rp = ", ".join(f"{k}: {v:.3f}" for k, v in self.rule_prob.items())
        return f"Beliefs(blicket_prob={bp}, rule_prob={{{rp}}})"
