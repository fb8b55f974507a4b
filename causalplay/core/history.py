"""Trials and Histories: what a learner has seen, validated once at the public edge.

A **trial** is the set of objects put on the machine. At the API it may be given as

* an index list (any iterable of ``int``: ``[0, 2]``, ``(1,)``, ``{3}``, ``[]``), or
* a 0/1 vector of **booleans** (a list of ``bool`` or a ``bool`` numpy/torch array) of length ``N``.

Integer sequences are always index lists, so ``[0, 1]`` means objects 0 and 1, never "object 1 only"; this
removes the ambiguity between the two forms. A **History** is the ordered ``(trial, lit)`` pairs one learner
has seen; a batch of histories is ``trials [B, T, N]``, ``lit [B, T]`` and ``mask [B, T]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Self

import numpy as np
import pandas as pd
import torch

from .codes import code_to_set, codes_to_vectors, set_to_code, vectors_to_codes

__all__ = ["History", "HistoryBatch", "parse_trial", "parse_trials", "all_trials", "is_bool_vector",
           "set_to_code", "code_to_set", "vectors_to_codes", "codes_to_vectors"]


def is_bool_vector(objects) -> bool:
    """True when ``objects`` is a boolean 0/1 vector (not an index list)."""
    if isinstance(objects, np.ndarray):
        return objects.dtype == np.bool_
    if isinstance(objects, torch.Tensor):
        return objects.dtype == torch.bool
    if isinstance(objects, (list, tuple)) and objects:
        return all(isinstance(x, (bool, np.bool_)) for x in objects)
    return False


def parse_trial(objects, n_objects: int | None = None, *, where: str = "trial") -> np.ndarray:
    """Validate one trial and return it as a ``bool`` vector of length ``n_objects``.

    ``n_objects=None`` sizes the vector from the trial itself (vector length, or max index + 1).
    """
    if n_objects is not None and type(objects) in (list, tuple):  # the common case, without ABC checks
        if all(type(i) is int and 0 <= i < n_objects for i in objects) and len(set(objects)) == len(objects):
            vec = np.zeros(n_objects, dtype=bool)
            vec[list(objects)] = True
            return vec
    if is_bool_vector(objects):
        vec = np.asarray(objects.cpu() if isinstance(objects, torch.Tensor) else objects, dtype=bool)
        if vec.ndim != 1:
            raise ValueError(f"{where}: a 0/1 vector must be one-dimensional, got shape {vec.shape}")
        if n_objects is not None and vec.shape[0] != n_objects:
            raise ValueError(f"{where}: 0/1 vector {vec.astype(int).tolist()} has length {vec.shape[0]}, "
                             f"expected n_objects={n_objects}")
        return vec
    if isinstance(objects, (np.ndarray, torch.Tensor)) and objects.ndim != 1:  # else list() fails cryptically
        one = f"; a single object is a one-element list: [{objects.item()!r}]" if objects.ndim == 0 else ""
        raise ValueError(f"{where}: objects must be a one-dimensional index list such as [0, 2], got a "
                         f"{objects.ndim}-d {type(objects).__name__} {objects!r}{one}")
    if isinstance(objects, (str, bytes)) or not isinstance(objects, Iterable):
        raise TypeError(f"{where}: objects must be an index list such as [0, 2] or a boolean 0/1 vector, "
                        f"got {objects!r}")
    if isinstance(objects, torch.Tensor):
        objects = objects.tolist()
    idx = list(objects)
    for i in idx:
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"{where}: object index {i!r} in {objects!r} is not an integer")
    if n_objects is not None:
        bad = [int(i) for i in idx if not 0 <= i < n_objects]
        if bad:
            raise ValueError(f"{where}: object index {bad[0]} is outside range(n_objects={n_objects})")
    elif any(i < 0 for i in idx):
        raise ValueError(f"{where}: object index {min(idx)} is negative")
    if len(set(int(i) for i in idx)) != len(idx):
        raise ValueError(f"{where}: object indices {list(map(int, idx))} repeat an object; to pass a 0/1 vector use "
                         "booleans, e.g. np.array([1, 0, 1], dtype=bool)")
    n = n_objects if n_objects is not None else (max(idx) + 1 if idx else 0)
    vec = np.zeros(n, dtype=bool)
    vec[np.asarray(idx, dtype=np.int64)] = True
    return vec


def _parse_lit(lit, where: str) -> bool:
    if type(lit) is bool:
        return lit
    if isinstance(lit, (bool, np.bool_)):
        return bool(lit)
    if isinstance(lit, (int, np.integer)) and lit in (0, 1):
        return bool(lit)
    raise TypeError(f"{where}: lit must be True/False (or 1/0), got {lit!r}")


def parse_trials(trials, n_objects: int) -> np.ndarray:
    """Validate candidate trials (an iterable of trials, or a ``[D, N]`` bool array) -> ``bool [D, N]``."""
    if isinstance(trials, (np.ndarray, torch.Tensor)) and trials.ndim == 2 and trials.dtype in (np.bool_, torch.bool):
        arr = np.asarray(trials.cpu() if isinstance(trials, torch.Tensor) else trials, dtype=bool)
        if arr.shape[1] != n_objects:
            raise ValueError(f"trials have {arr.shape[1]} columns, expected n_objects={n_objects}")
        return arr
    if isinstance(trials, (str, bytes)) or not isinstance(trials, Iterable):
        raise TypeError(f"trials must be a list of trials (index lists or boolean vectors), got {trials!r}")
    rows = [parse_trial(t, n_objects, where=f"trial {i}") for i, t in enumerate(trials)]
    if not rows:
        raise ValueError("trials must contain at least one trial")
    return np.stack(rows)


def all_trials(n_objects: int, include_empty: bool = False) -> np.ndarray:
    """All ``2**N - 1`` non-empty trials (or ``2**N`` with the empty one) as ``bool [D, N]``, by integer code."""
    codes = np.arange(0 if include_empty else 1, 2**n_objects, dtype=np.int64)
    return codes_to_vectors(codes, n_objects)


@dataclass(frozen=True)
class History:
    """The ordered ``(trial, lit)`` observations of one learner.

    Attributes
    ----------
    trials : ndarray, bool ``[T, N]``
    lit : ndarray, bool ``[T]``
    """

    trials: np.ndarray
    lit: np.ndarray

    @classmethod
    def from_pairs(cls, items: Iterable, n_objects: int | None = None) -> History:
        """Build from ``[(objects, lit), ...]``; ``n_objects`` is inferred from the items when omitted."""
        if isinstance(items, History):
            return items if n_objects is None else items.with_n_objects(n_objects)
        if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
            raise TypeError(f"history must be a list of (objects, lit) pairs, got {items!r}")
        items = list(items)
        for t, item in enumerate(items):
            if type(item) in (tuple, list) and len(item) == 2:  # the common case, without an ABC check
                continue
            if not isinstance(item, Sequence) or isinstance(item, (str, bytes)) or len(item) != 2:
                raise TypeError(f"history item {t} must be an (objects, lit) pair, got {item!r}")
        if n_objects is None:
            sizes = [len(parse_trial(obj, None, where=f"history item {t}")) for t, (obj, _) in enumerate(items)]
            n_objects = max(sizes, default=0)
            if n_objects == 0:
                raise ValueError("cannot infer n_objects from a history with no objects; pass n_objects")
        if isinstance(n_objects, bool) or not isinstance(n_objects, (int, np.integer)) or n_objects < 1:
            raise ValueError(f"n_objects must be a positive integer, got {n_objects!r}")
        trials = np.zeros((len(items), n_objects), dtype=bool)
        lit = np.zeros(len(items), dtype=bool)
        for t, (obj, lt) in enumerate(items):
            if (type(obj) in (list, tuple) and type(lt) is bool and len(set(obj)) == len(obj)
                    and all(type(i) is int and 0 <= i < n_objects for i in obj)):  # the common case, directly
                trials[t, list(obj)] = True
                lit[t] = lt
                continue
            trials[t] = parse_trial(obj, n_objects, where=f"history item {t}")
            lit[t] = _parse_lit(lt, f"history item {t}")
        return cls(trials, lit)

    @property
    def n_objects(self) -> int:
        return self.trials.shape[1]

    def __len__(self) -> int:
        return self.trials.shape[0]

    def with_n_objects(self, n_objects: int) -> History:
        n = self.n_objects
        if n_objects < n and self.trials[:, n_objects:].any():
            raise ValueError(f"history uses object indices >= n_objects={n_objects}")
        trials = np.zeros((len(self), n_objects), dtype=bool)
        m = min(n, n_objects)
        trials[:, :m] = self.trials[:, :m]
        return History(trials, self.lit.copy())

    def append(self, objects, lit) -> History:
        vec = parse_trial(objects, self.n_objects, where="new observation")
        return History(np.vstack([self.trials, vec[None]]), np.append(self.lit, _parse_lit(lit, "new observation")))

    def pairs(self) -> list[tuple[tuple[int, ...], bool]]:
        return [(tuple(np.flatnonzero(t).tolist()), bool(lt)) for t, lt in zip(self.trials, self.lit, strict=True)]


class BatchShape:
    """``batch_size`` (first axis), ``n_objects`` (last axis) and :meth:`to`, shared by the padded batches
    :class:`HistoryBatch` ``[B, T, N]`` and :class:`causalplay.core.overhypothesis.SequenceBatch` ``[B, K, T, N]``
    (frozen dataclasses with ``trials``, ``lit`` and ``mask``)."""

    trials: torch.Tensor
    lit: torch.Tensor
    mask: torch.Tensor

    def to(self, device=None, dtype: torch.dtype | None = None) -> Self:
        """A copy on ``device`` with ``trials`` and ``lit`` in ``dtype`` (default: as they are)."""
        dt = dtype or self.trials.dtype
        return replace(self, trials=self.trials.to(device, dt), lit=self.lit.to(device, dt), mask=self.mask.to(device))

    @property
    def batch_size(self) -> int:
        return self.trials.shape[0]

    @property
    def n_objects(self) -> int:
        return self.trials.shape[-1]


@dataclass(frozen=True)
class HistoryBatch(BatchShape):
    """``B`` histories padded to a common length ``T``.

    Attributes
    ----------
    trials : Tensor ``[B, T, N]`` (0/1, floating)
    lit : Tensor ``[B, T]`` (0/1, floating)
    mask : Tensor ``[B, T]`` bool -- False on padding.
    """

    trials: torch.Tensor
    lit: torch.Tensor
    mask: torch.Tensor

    @classmethod
    def from_histories(cls, histories: Sequence[History], n_objects: int | None = None, *,
                       dtype: torch.dtype = torch.float64, device=None) -> HistoryBatch:
        if not histories:
            raise ValueError("need at least one history")
        n = n_objects or max(h.n_objects for h in histories)
        histories = [h if h.n_objects == n else h.with_n_objects(n) for h in histories]
        T = max(len(h) for h in histories)
        B = len(histories)
        trials = np.zeros((B, T, n), dtype=bool)
        lit = np.zeros((B, T), dtype=bool)
        mask = np.zeros((B, T), dtype=bool)
        for b, h in enumerate(histories):
            trials[b, : len(h)], lit[b, : len(h)], mask[b, : len(h)] = h.trials, h.lit, True
        return cls(torch.as_tensor(trials, device=device).to(dtype), torch.as_tensor(lit, device=device).to(dtype),
                   torch.as_tensor(mask, device=device))


def _lit_column(values: np.ndarray, rows, column: str) -> np.ndarray:
    if values.dtype == np.bool_:
        return values
    out = np.zeros(len(values), dtype=bool)
    for j, v in enumerate(values):
        v = v.item() if isinstance(v, np.generic) else v
        if isinstance(v, bool) or (isinstance(v, int) and v in (0, 1)):
            out[j] = bool(v)
        elif isinstance(v, float) and v in (0.0, 1.0):
            out[j] = bool(v)
        else:
            raise ValueError(f"row {rows[j]!r}: {column!r} must be True/False (or 1/0), got {v!r}")
    return out


def check_frame(df: pd.DataFrame, columns) -> None:
    """A ``ValueError`` unless ``df`` has rows and every one of ``columns``."""
    for col in columns:
        if col not in df.columns:
            raise ValueError(f"DataFrame has no column {col!r}; columns are {list(df.columns)}")
    if len(df) == 0:
        raise ValueError("the DataFrame has no rows")


def histories_from_frame(df: pd.DataFrame, n_objects: int | None, episode: str, objects: str, lit: str,
                         order: str | None, dtype: torch.dtype, device) -> tuple[list, HistoryBatch]:
    """Episodes of a long-format DataFrame (one row per observation) as ``(episode keys, HistoryBatch)``;
    rows are ordered by ``order`` within each episode, episodes by first appearance."""
    check_frame(df, (episode, objects, lit))
    ep = df[episode]
    missing = ep.isna().to_numpy()
    if missing.any():
        raise ValueError(f"column {episode!r} has a missing label (NaN/None) in row {df.index[missing][0]!r}; "
                         "every observation needs an episode")
    codes, keys = pd.factorize(ep, sort=False)  # episodes in order of first appearance
    if order is not None and order in df.columns:
        o = df[order]
        if o.isna().any():
            raise ValueError(f"column {order!r} has a missing value in row {df.index[o.isna().to_numpy()][0]!r}")
        rank = pd.factorize(o, sort=True)[0] if not pd.api.types.is_numeric_dtype(o) else o.to_numpy()
        perm = np.lexsort((np.arange(len(df)), rank, codes))
    else:
        perm = np.argsort(codes, kind="stable")
    parsed = [parse_trial(o, n_objects, where=f"row {i!r} ({objects!r})") for i, o in zip(df.index, df[objects],
                                                                                          strict=True)]
    n = n_objects or max(len(v) for v in parsed)
    if n == 0:
        raise ValueError("cannot infer n_objects from the DataFrame (no objects in any row); pass n_objects")
    trials = np.zeros((len(df), n), dtype=bool)
    for j, (i, raw, v) in enumerate(zip(df.index, df[objects], parsed, strict=True)):
        if len(v) != n and is_bool_vector(raw):
            raise ValueError(f"row {i!r} ({objects!r}): 0/1 vector has length {len(v)} but other rows have "
                             f"{n} objects; vectors must all have length n_objects (pass n_objects={n} to check)")
        trials[j, : len(v)] = v
    lit_v = _lit_column(df[lit].to_numpy(), df.index, lit)
    codes, trials, lit_v = codes[perm], trials[perm], lit_v[perm]
    B = len(keys)
    counts = np.bincount(codes, minlength=B)
    pos = np.arange(len(codes)) - np.repeat(np.cumsum(counts) - counts, counts)
    T = int(counts.max())
    tr = np.zeros((B, T, n), dtype=bool)
    lt = np.zeros((B, T), dtype=bool)
    mk = np.zeros((B, T), dtype=bool)
    tr[codes, pos], lt[codes, pos], mk[codes, pos] = trials, lit_v, True
    batch = HistoryBatch(torch.as_tensor(tr, device=device).to(dtype), torch.as_tensor(lt, device=device).to(dtype),
                         torch.as_tensor(mk, device=device))
    return [k.item() if isinstance(k, np.generic) else k for k in keys], batch
