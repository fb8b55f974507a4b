"""The public entry points: :func:`infer` for one history, :func:`infer_batch` for many."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import pandas as pd
import torch

from ..core.beliefs import BatchBeliefs, Beliefs, single_thread
from ..core.checks import choice, float_dtype, integer
from ..core.exact import history_log_posterior, log_posterior
from ..core.history import History, HistoryBatch, histories_from_frame
from ..core.resources import max_memory as max_memory_arg
from ..core.rules import Rule
from ..core.spec import HypothesisSpace, WorldSpec

if TYPE_CHECKING:
    from .svi import SVIBeliefs

__all__ = ["infer", "infer_batch", "make_spec", "choose_method", "EXACT_LIMIT"]

#: ``method="auto"`` enumerates when the hypothesis space has at most this many members.
EXACT_LIMIT = 2**22


def make_spec(n_objects: int, rules: str | Rule | Iterable = ("disjunctive", "conjunctive"),
              rule_prior: Mapping[str, float] | Sequence[float] | None = None,
              blicket_prior: float = 1.0 / 3.0, n_blickets=None, noise: float = 0.0) -> WorldSpec:
    """Build a :class:`WorldSpec` from :func:`infer`'s keyword arguments; same as :meth:`WorldSpec.from_options`."""
    return WorldSpec.from_options(n_objects, rules, rule_prior, blicket_prior, n_blickets, noise)


def choose_method(method: str, spec: WorldSpec) -> str:
    """``"exact"`` or ``"svi"`` for ``spec``: ``"auto"`` enumerates when the *allowed* space (sets with non-zero
    prior times rules) has at most :data:`EXACT_LIMIT` hypotheses.

    Raises
    ------
    ValueError
        Unknown method, or no engine can answer (a count prior too large to enumerate; SVI needs an
        independent prior strictly inside (0, 1)).
    """
    choice(method, "method", ("auto", "exact", "svi"))
    H = spec.n_hypotheses()
    svi_ok = spec.n_blickets is None and 0.0 < spec.blicket_prior < 1.0
    if method == "auto":
        if H <= EXACT_LIMIT:
            return "exact"
        if not svi_ok:
            raise ValueError(f"this WorldSpec allows {H:,} hypotheses (more than EXACT_LIMIT = {EXACT_LIMIT:,}) "
                             "and SVI needs an independent blicket prior (blicket_prior=p, no n_blickets); "
                             "use fewer objects or allowed counts")
        return "svi"
    if method == "svi" and not svi_ok:
        why = ("a prior over the number of blickets (n_blickets)" if spec.n_blickets is not None
               else f"blicket_prior={spec.blicket_prior:g}, which fixes the blicket set")
        raise ValueError(f"SVI needs an independent blicket prior strictly between 0 and 1, got {why}; the "
                         f"exact engine answers this ({H:,} hypotheses): use method='exact' or 'auto'")
    return method


def _n_objects_arg(n_objects) -> int | None:
    if n_objects is None:
        return None
    try:
        return integer(n_objects, "n_objects", low=1)
    except TypeError:
        raise ValueError(f"n_objects must be a positive integer, got {n_objects!r}") from None


def infer(history: Iterable = (), n_objects: int | None = None, *,
          rules: str | Rule | Iterable = ("disjunctive", "conjunctive"),
          rule_prior: Mapping[str, float] | Sequence[float] | None = None,
          blicket_prior: float = 1.0 / 3.0, n_blickets=None, noise: float = 0.0, method: str = "auto",
          device: str | torch.device | None = None, dtype: torch.dtype = torch.float64,
          svi_options: Mapping | None = None, max_memory=None, threads: int | None = 1,
          overhypothesis=None) -> Beliefs | SVIBeliefs:
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
        :class:`causalplay.core.rules.Sigmoid` etc.
    rule_prior : dict rule -> prob, or sequence aligned with ``rules``
        Prior over rules (normalised); uniform when None.
    blicket_prior : float
        Independent prior probability that an object is a blicket.
    n_blickets : int, iterable of int, or dict count -> weight
        Allowed numbers of blickets (uniform over counts, then over sets of that size); overrides
        ``blicket_prior``. Only the allowed sets are enumerated (``n_blickets=1`` at N = 25 is 25 sets).
    noise : float
        Probability that the machine's response is flipped (applies to named rules); tiny values are exact
        (the engine works with ``log1p(-noise)``).
    method : {"auto", "exact", "svi"}
        ``"auto"`` enumerates when the allowed space has at most :data:`EXACT_LIMIT` hypotheses, else SVI; the
        result's ``.method`` says which ran.
    device, dtype :
        Where and in what precision the exact engine runs (float64 by default: probabilities to the digit).
    svi_options : dict, optional
        Passed to :func:`causalplay.learners.svi.svi_beliefs` (``steps``, ``particles``, ``lr``, ``seed``,
        ``noise_floor``).
    max_memory : int or str, optional
        Bound on temporary tensors (bytes, or ``"2GiB"``); default a quarter of available RAM, at most 2 GiB.
        EIG and posterior computations are chunked to stay within it.
    threads : int or None
        Torch threads for this history and the returned Beliefs' methods (1: one history is too small to share
        out; the caller's setting is restored after each call). None leaves torch's setting alone.
    overhypothesis : causalplay.core.overhypothesis.OverhypothesisPosterior, optional
        What earlier machines taught (:func:`causalplay.infer_overhypothesis`, one sequence): its
        ``predictive_prior(n_objects=...)`` replaces ``rules``, ``rule_prior``, ``blicket_prior``, ``n_blickets``
        and ``noise``, which must then be left at their defaults.

    Returns
    -------
    Beliefs or causalplay.learners.svi.SVIBeliefs
        Both follow :class:`causalplay.core.beliefs.BeliefsLike`.

    Examples
    --------
    >>> b = infer([([0, 1], True), ([0], False)], n_objects=3)
    >>> b.blicket_prob.round(3).tolist()
    [0.333, 1.0, 0.333]
    """
    budget = max_memory_arg(max_memory)
    if svi_options is not None and not isinstance(svi_options, Mapping):
        raise TypeError(f"svi_options must be a dict of SVIOptions fields, got {svi_options!r}")
    if threads is not None:
        threads = integer(threads, "threads", low=1)
    float_dtype(dtype)
    hist = History.from_pairs(history, _n_objects_arg(n_objects))
    if overhypothesis is not None:
        spec = _transferred_spec(overhypothesis, hist.n_objects, rules=rules, rule_prior=rule_prior,
                                 blicket_prior=blicket_prior, n_blickets=n_blickets, noise=noise)
    else:
        spec = _spec(hist.n_objects, rules, rule_prior, blicket_prior, n_blickets, noise)
    if choose_method(method, spec) == "svi":
        from .svi import svi_beliefs

        return svi_beliefs(spec, HistoryBatch.from_histories([hist], dtype=torch.float32), **(svi_options or {}))[0]
    space = HypothesisSpace.build(spec, device, dtype)
    with single_thread(threads):
        log_w = history_log_posterior(space, hist.trials, hist.lit)
        if log_w is None:
            batch = HistoryBatch.from_histories([hist], spec.n_objects, dtype=dtype, device=space.device)
            log_w = log_posterior(space, batch, max_memory=budget)[0]
    return Beliefs(space, log_w, history=hist, max_memory=budget, threads=threads)


def _spec(*options) -> WorldSpec:
    """``WorldSpec.from_options(*options)``, memoised when the options are hashable (one-history calls in a
    loop pass the same options every time; validating and building rules is a third of such a call)."""
    try:
        hash(options)
    except TypeError:  # lists, dicts: build afresh
        return WorldSpec.from_options(*options)
    return _spec_memo(*options)


@lru_cache(maxsize=32, typed=True)  # typed: noise=True must still be refused, not served as noise=1
def _spec_memo(*options) -> WorldSpec:
    return WorldSpec.from_options(*options)


def _transferred_spec(post, n_objects: int, **given) -> WorldSpec:
    """The WorldSpec for a new machine from an overhypothesis posterior (one sequence); the per-machine options
    it replaces must be at their defaults."""
    from ..core.overhypothesis import OverhypothesisPosterior

    if not isinstance(post, OverhypothesisPosterior):
        raise TypeError(f"overhypothesis must be an OverhypothesisPosterior (causalplay.infer_overhypothesis), got "
                        f"{type(post).__name__}")
    if post.batch_size != 1:
        raise ValueError(f"overhypothesis holds {post.batch_size} sequences; pass one learner's posterior, e.g. "
                         "overhypothesis=post[i]")
    defaults = {"rules": ("disjunctive", "conjunctive"), "rule_prior": None, "blicket_prior": 1.0 / 3.0,
                "n_blickets": None, "noise": 0.0}
    if clash := [k for k, v in given.items() if not (v is defaults[k] or v == defaults[k])]:
        raise ValueError(f"with overhypothesis=..., the new machine's prior comes from the overhypothesis; do not also "
                         f"pass {', '.join(clash)}")
    return post.predictive_prior(0, n_objects=n_objects)


def infer_batch(histories, n_objects: int | None = None, *, episode: str = "episode", objects: str = "objects",
                lit: str = "lit", order: str | None = "trial", rules=("disjunctive", "conjunctive"),
                rule_prior=None, blicket_prior: float = 1.0 / 3.0, n_blickets=None, noise: float = 0.0,
                device=None, dtype: torch.dtype = torch.float64, max_memory=None,
                threads: int | None | str = "auto") -> BatchBeliefs:
    """Exact beliefs for many episodes at once, on ``device``.

    Parameters
    ----------
    histories : DataFrame, list of histories, or HistoryBatch
        A DataFrame has one row per observation with columns ``episode`` (any hashable, no missing values),
        ``objects`` (index list or boolean vector), ``lit`` and optionally ``trial`` (order within the episode).
        A list holds one history per episode (each a list of ``(objects, lit)`` pairs or a :class:`History`).
    n_objects, rules, rule_prior, blicket_prior, n_blickets, noise, device, dtype, max_memory :
        As in :func:`infer`. Episodes are processed in chunks sized by ``max_memory``.
    threads : int, None or "auto"
        Torch threads while computing the posterior (restored afterwards); ``"auto"`` is one thread for large
        worlds (N > 10, many cache-sized chunks) and torch's setting otherwise; None is torch's setting.

    Returns
    -------
    BatchBeliefs
        ``.blicket_probs [B, N]``, ``.rule_probs [B, R]``, ``.eig_all(...)``, ``.to_frame()``; episodes in order
        of first appearance.
    """
    budget = max_memory_arg(max_memory)
    n_objects = _n_objects_arg(n_objects)
    if threads not in (None, "auto"):
        threads = integer(threads, "threads", low=1)
    float_dtype(dtype)
    keys, batch = None, None
    if isinstance(histories, pd.DataFrame):
        keys, batch = histories_from_frame(histories, n_objects, episode, objects, lit, order, dtype, None)
    elif isinstance(histories, HistoryBatch):
        batch = histories
        if n_objects is not None and n_objects != batch.n_objects:
            raise ValueError(f"n_objects={n_objects} but the HistoryBatch has {batch.n_objects} objects")
    else:
        if isinstance(histories, (str, bytes)) or not isinstance(histories, Iterable):
            raise TypeError(f"histories must be a DataFrame, a HistoryBatch or a list of histories, got "
                            f"{type(histories).__name__}")
        histories = list(histories)
        if not histories:
            raise ValueError("histories is empty")
        n = n_objects
        if n is None:  # size first, then parse every history at that size: 0/1 vectors must all match it
            nonempty = [h for h in histories if not (isinstance(h, Sequence) and len(h) == 0)]
            if not nonempty:
                raise ValueError("cannot infer n_objects from histories with no observations; pass n_objects")
            n = max(History.from_pairs(h).n_objects for h in nonempty)
        hs = []
        for e, h in enumerate(histories):
            try:
                hs.append(History.from_pairs(h, n))
            except (TypeError, ValueError) as err:
                raise type(err)(f"histories[{e}]: {err}") from None
        batch = HistoryBatch.from_histories(hs, n, dtype=dtype)
    spec = WorldSpec.from_options(batch.n_objects, rules, rule_prior, blicket_prior, n_blickets, noise)
    choose_method("exact", spec)
    space = HypothesisSpace.build(spec, device, dtype)
    log_w = log_posterior(space, batch, max_memory=budget, threads=threads)
    return BatchBeliefs(space, log_w, keys, max_memory=budget)
