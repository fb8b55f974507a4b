"""Beliefs: log-weights over a HypothesisSpace for one history (or ``[B, H]`` for a batch), with views."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
import torch

from .eig import check_target, eig_bits
from .exact import entropy_bits, observe
from .history import History, all_trials, parse_trial, parse_trials
from .spec import HypothesisSpace

__all__ = ["Beliefs", "BatchBeliefs"]


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

    def __init__(self, space: HypothesisSpace, log_w: torch.Tensor, episodes: Iterable | None = None):
        self.space = space
        self.log_w = log_w
        self.episodes = list(range(log_w.shape[0])) if episodes is None else list(episodes)

    def __len__(self) -> int:
        return self.log_w.shape[0]

    # -- marginals -------------------------------------------------------------------------------------
    def _grid(self) -> torch.Tensor:
        return self.log_w.exp().reshape(-1, self.space.n_rules, self.space.n_sets)

    @property
    def blicket_probs(self) -> np.ndarray:
        """``[B, N]``: P(object i is a blicket) per episode."""
        return _to_numpy(self._grid().sum(1) @ self.space.sets)

    @property
    def rule_probs(self) -> np.ndarray:
        """``[B, R_spec]``: posterior of every rule in ``space.spec.rules`` (zero-prior rules get 0)."""
        kept = _to_numpy(self._grid().sum(-1))
        out = np.zeros((len(self), len(self.space.spec.rules)))
        cols = [self.space.spec.rules.index(r) for r in self.space.rules]
        out[:, cols] = kept
        return out

    @property
    def entropy(self) -> np.ndarray:
        """``[B]`` posterior entropy over hypotheses, bits."""
        return _to_numpy(entropy_bits(self.log_w))

    def map_indices(self) -> torch.Tensor:
        return self.log_w.argmax(-1)

    # -- predictions and EIG ---------------------------------------------------------------------------
    def _candidates(self, trials) -> torch.Tensor:
        n = self.space.n_objects
        arr = all_trials(n) if trials is None else parse_trials(trials, n)
        return torch.as_tensor(arr, device=self.space.device).to(self.space.dtype)

    def predict_all(self, trials) -> np.ndarray:
        """``[B, D]``: P(machine lights | trial) for each candidate trial."""
        P = self.space.lit_prob(self._candidates(trials))
        return _to_numpy(self.log_w.exp() @ P)

    def eig_all(self, trials=None, target: str = "joint") -> np.ndarray:
        """``[B, D]`` EIG in bits of each candidate (all non-empty trials when ``trials`` is None)."""
        check_target(target)
        return _to_numpy(eig_bits(self.space, self.log_w, self._candidates(trials), target))

    def update_all(self, trials, lit) -> BatchBeliefs:
        """One more observation per episode: ``trials`` (one trial each) and ``lit`` (``[B]`` bools)."""
        rows = parse_trials(trials, self.space.n_objects)
        lit = np.asarray(lit)
        if rows.shape[0] != len(self) or lit.shape != (len(self),):
            raise ValueError(f"need one trial and one lit value per episode ({len(self)}), got "
                             f"{rows.shape[0]} trials and lit of shape {lit.shape}")
        if lit.dtype != np.bool_ and not np.isin(lit, (0, 1)).all():
            raise ValueError(f"lit must be booleans or 0/1, got {lit!r}")
        t = torch.as_tensor(rows, device=self.space.device).to(self.space.dtype)
        lt = torch.as_tensor(lit.astype(bool), device=self.space.device).to(self.space.dtype)
        return BatchBeliefs(self.space, observe(self.space, self.log_w, t, lt), self.episodes)

    # -- tidy output -----------------------------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """Tidy table: one row per (episode, quantity, item) with columns ``episode, kind, item, prob``."""
        bp, rp = self.blicket_probs, self.rule_probs
        frames = []
        for i in range(bp.shape[1]):
            frames.append(pd.DataFrame({"episode": self.episodes, "kind": "blicket", "item": str(i), "prob": bp[:, i]}))
        for j, name in enumerate(self.space.spec.rule_names):
            frames.append(pd.DataFrame({"episode": self.episodes, "kind": "rule", "item": name, "prob": rp[:, j]}))
        return pd.concat(frames, ignore_index=True).sort_values(["episode", "kind", "item"], kind="stable",
                                                                ignore_index=True)

    def __getitem__(self, i: int) -> Beliefs:
        return Beliefs(self.space, self.log_w[i], history=None, episode=self.episodes[i])


class Beliefs:
    """An ideal learner's exact beliefs after one history.

    Created by :func:`causalplay.infer`. All probabilities are posterior probabilities under the WorldSpec.
    """

    def __init__(self, space: HypothesisSpace, log_w: torch.Tensor, history: History | None = None,
                 episode=None):
        self.space = space
        self.log_w = log_w.reshape(-1)
        self.history = history
        self.episode = episode
        self._batch = BatchBeliefs(space, self.log_w[None, :], [episode])

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
        """Posterior over hypotheses, most probable first: columns ``blickets, rule, prob``."""
        p = _to_numpy(self.log_w.exp())
        order = np.argsort(-p, kind="stable")
        if top is not None:
            order = order[:top]
        sets = _to_numpy(self.space.sets).astype(bool)
        S = self.space.n_sets
        return pd.DataFrame({
            "blickets": [tuple(np.flatnonzero(sets[h % S]).tolist()) for h in order],
            "rule": [self.space.rule_names[h // S] for h in order],
            "prob": p[order],
        })

    def map(self) -> tuple[tuple[int, ...], str]:
        """Most probable hypothesis as ``(blicket indices, rule name)`` (first in code order on ties)."""
        h = int(self.log_w.argmax())
        S = self.space.n_sets
        members = np.flatnonzero(_to_numpy(self.space.sets[h % S]))
        return tuple(members.tolist()), self.space.rule_names[h // S]

    def predict(self, objects) -> float:
        """P(machine lights | these objects on it)."""
        vec = parse_trial(objects, self.n_objects, where="predict")
        return float(self._batch.predict_all([vec])[0, 0])

    def eig(self, trials=None, target: str = "joint") -> np.ndarray:
        """EIG in bits of each trial about ``target`` in {"joint", "blickets", "rule"}.

        ``trials=None`` scores all ``2**N - 1`` non-empty trials in integer-code order (see
        :func:`causalplay.history.all_trials`).
        """
        return self._batch.eig_all(trials, target)[0]

    def best_trial(self, target: str = "joint", trials=None) -> tuple[int, ...]:
        """The trial (object indices) of maximal EIG; ties go to the fewest objects, then lowest code."""
        n = self.n_objects
        cand = all_trials(n) if trials is None else parse_trials(trials, n)
        e = self._batch.eig_all(cand, target)[0]
        # Rounding: EIGs equal to 1e-12 are ties; prefer smaller trials (cheaper to run, easier to read).
        key = np.lexsort((np.arange(len(e)), cand.sum(1), -np.round(e, 12)))
        return tuple(np.flatnonzero(cand[key[0]]).tolist())

    def update(self, objects, lit) -> Beliefs:
        """Beliefs after one more observation."""
        vec = parse_trial(objects, self.n_objects, where="update")
        new = self._batch.update_all([vec], [lit])
        hist = self.history.append(vec, lit) if self.history is not None else None
        return Beliefs(self.space, new.log_w[0], hist, self.episode)

    def to_frame(self) -> pd.DataFrame:
        """Tidy table with columns ``kind, item, prob`` (blicket marginals then rule posteriors)."""
        return self._batch.to_frame().drop(columns="episode")

    def __repr__(self) -> str:
        bp = np.array2string(self.blicket_prob, precision=3, suppress_small=True)
        rp = ", ".join(f"{k}: {v:.3f}" for k, v in self.rule_prob.items())
        return f"Beliefs(blicket_prob={bp}, rule_prob={{{rp}}})"
