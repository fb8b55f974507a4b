"""The public entry points: :func:`infer` for one history, :func:`infer_batch` for many."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from .beliefs import BatchBeliefs, Beliefs
from .exact import log_posterior
from .history import History, HistoryBatch, parse_trial
from .rules import Rule, _check_probability, make_rules
from .spec import HypothesisSpace, WorldSpec

__all__ = ["infer", "infer_batch", "make_spec", "EXACT_LIMIT"]

#: ``method="auto"`` enumerates when the hypothesis space has at most this many members.
EXACT_LIMIT = 2**22


def make_spec(n_objects: int, rules: str | Rule | Iterable = ("disjunctive", "conjunctive"),
              rule_prior: Mapping[str, float] | Sequence[float] | None = None,
              blicket_prior: float = 1.0 / 3.0, n_blickets=None, noise: float = 0.0) -> WorldSpec:
    """Build a :class:`WorldSpec` from :func:`infer`'s keyword arguments (validated, with clear errors)."""
    _check_probability(noise, "noise")
    rules_t = make_rules(rules, noise)
    if rule_prior is None:
        prior = None
    elif isinstance(rule_prior, Mapping):
        names = [r.name for r in rules_t]
        unknown = [k for k in rule_prior if k not in names]
        if unknown:
            raise ValueError(f"rule_prior names unknown rule {unknown[0]!r}; rules are {names}")
        prior = tuple(float(rule_prior.get(n, 0.0)) for n in names)
    else:
        prior = tuple(rule_prior)
    if n_blickets is not None:
        if isinstance(n_blickets, Mapping):
            return WorldSpec(n_objects, rules_t, prior, blicket_prior, tuple(n_blickets.keys()),
                             tuple(n_blickets.values()))
        counts = (n_blickets,) if isinstance(n_blickets, (int, np.integer)) and not isinstance(n_blickets, bool) \
            else n_blickets
        if isinstance(counts, bool) or not isinstance(counts, Iterable):
            raise TypeError(f"n_blickets must be an int, an iterable of ints or a dict, got {n_blickets!r}")
        return WorldSpec(n_objects, rules_t, prior, blicket_prior, tuple(counts))
    return WorldSpec(n_objects, rules_t, prior, blicket_prior)


def _choose_method(method: str, spec: WorldSpec) -> str:
    if method not in ("auto", "exact", "svi"):
        raise ValueError(f"method must be 'exact', 'svi' or 'auto', got {method!r}")
    if method == "auto":
        return "exact" if spec.n_hypotheses() <= EXACT_LIMIT else "svi"
    return method


def infer(history: Iterable = (), n_objects: int | None = None, *,
          rules: str | Rule | Iterable = ("disjunctive", "conjunctive"),
          rule_prior: Mapping[str, float] | Sequence[float] | None = None,
          blicket_prior: float = 1.0 / 3.0, n_blickets=None, noise: float = 0.0, method: str = "auto",
          device: str | torch.device | None = None, dtype: torch.dtype = torch.float64,
          svi_options: Mapping | None = None):
    """An ideal Bayesian learner's beliefs after some Blicket-machine evidence.

    Parameters
    ----------
    history : iterable of (objects, lit)
        Observations in order. ``objects`` is an index list (``[0, 2]``) or a boolean 0/1 vector; ``lit`` is
        whether the machine lit up.
    n_objects : int, optional
        Number of objects; inferred from the history (max index + 1, or vector length) when omitted.
    rules : rule name, Rule, or iterable of them
        The overhypotheses the learner entertains: ``"disjunctive"``, ``"conjunctive"``, ``"threshold<m>"``, or
        :class:`causalplay.rules.Sigmoid` etc.
    rule_prior : dict rule -> prob, or sequence aligned with ``rules``
        Prior over rules (normalised); uniform when None.
    blicket_prior : float
        Independent prior probability that an object is a blicket.
    n_blickets : int, iterable of int, or dict count -> weight
        Allowed numbers of blickets (uniform over counts, then over sets of that size); overrides
        ``blicket_prior``.
    noise : float
        Probability that the machine's response is flipped (applies to named rules).
    method : {"auto", "exact", "svi"}
        ``"auto"`` enumerates when at most :data:`EXACT_LIMIT` hypotheses, else SVI.
    device, dtype :
        Where and in what precision the exact engine runs (float64 by default: probabilities to the digit).
    svi_options : dict, optional
        Passed to :func:`causalplay.svi.svi_beliefs` (``num_steps``, ``num_particles``, ``lr``, ``seed``).

    Returns
    -------
    Beliefs
        (or :class:`causalplay.svi.SVIBeliefs` when SVI was used).

    Examples
    --------
    >>> b = infer([([0, 1], True), ([0], False)], n_objects=3)
    >>> b.blicket_prob.round(3).tolist()
    [0.333, 1.0, 0.333]
    """
    hist = History.from_pairs(history, n_objects)
    spec = make_spec(hist.n_objects, rules, rule_prior, blicket_prior, n_blickets, noise)
    if _choose_method(method, spec) == "svi":
        from .svi import svi_beliefs

        return svi_beliefs(spec, HistoryBatch.from_histories([hist], dtype=torch.float32),
                           **dict(svi_options or {}))[0]
    space = HypothesisSpace.build(spec, device, dtype)
    batch = HistoryBatch.from_histories([hist], spec.n_objects, dtype=dtype, device=space.device)
    return Beliefs(space, log_posterior(space, batch)[0], history=hist)


def _histories_from_frame(df: pd.DataFrame, n_objects: int | None, episode: str, objects: str, lit: str,
                          order: str | None) -> tuple[list, list[History]]:
    for col in (episode, objects, lit):
        if col not in df.columns:
            raise ValueError(f"DataFrame has no column {col!r}; columns are {list(df.columns)}")
    if order is not None and order in df.columns:
        df = df.sort_values([episode, order], kind="stable")
    parsed = [parse_trial(o, n_objects, where=f"row {i} ({objects!r})") for i, o in zip(df.index, df[objects],
                                                                                        strict=True)]
    n = n_objects or max((len(v) for v in parsed), default=0)
    if n == 0:
        raise ValueError("cannot infer n_objects from the DataFrame; pass n_objects")
    keys, histories = [], []
    ep = df[episode].to_numpy()
    lit_col = df[lit].to_numpy()
    for key in pd.unique(ep):
        rows = np.flatnonzero(ep == key)
        pairs = [(np.pad(parsed[r], (0, n - len(parsed[r]))), lit_col[r]) for r in rows]
        keys.append(key)
        histories.append(History.from_pairs(pairs, n))
    return keys, histories


def infer_batch(histories, n_objects: int | None = None, *, episode: str = "episode", objects: str = "objects",
                lit: str = "lit", order: str | None = "trial", rules=("disjunctive", "conjunctive"),
                rule_prior=None, blicket_prior: float = 1.0 / 3.0, n_blickets=None, noise: float = 0.0,
                device=None, dtype: torch.dtype = torch.float64) -> BatchBeliefs:
    """Exact beliefs for many episodes at once, on ``device``.

    Parameters
    ----------
    histories : DataFrame, list of histories, or HistoryBatch
        A DataFrame has one row per observation with columns ``episode`` (any hashable), ``objects`` (index
        list or boolean vector), ``lit`` and optionally ``trial`` (order within the episode). A list holds one
        history per episode (each a list of ``(objects, lit)`` pairs or a :class:`History`).
    n_objects, rules, rule_prior, blicket_prior, n_blickets, noise, device, dtype :
        As in :func:`infer`.

    Returns
    -------
    BatchBeliefs
        ``.blicket_probs [B, N]``, ``.rule_probs [B, R]``, ``.eig_all(...)``, ``.to_frame()``; episodes in order
        of first appearance.
    """
    if isinstance(histories, pd.DataFrame):
        keys, hs = _histories_from_frame(histories, n_objects, episode, objects, lit, order)
        batch = None
    elif isinstance(histories, HistoryBatch):
        keys, hs, batch = None, None, histories
    else:
        hs = [History.from_pairs(h, n_objects) for h in histories]
        keys, batch = None, None
        if not hs:
            raise ValueError("histories is empty")
    n = batch.n_objects if batch is not None else (n_objects or max(h.n_objects for h in hs))
    spec = make_spec(n, rules, rule_prior, blicket_prior, n_blickets, noise)
    space = HypothesisSpace.build(spec, device, dtype)
    if batch is None:
        batch = HistoryBatch.from_histories(hs, n, dtype=dtype, device=space.device)
    return BatchBeliefs(space, log_posterior(space, batch), keys)
