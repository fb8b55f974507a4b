"""Exact Bayesian inference over an enumerated :class:`~causalplay.core.spec.HypothesisSpace`, batched over episodes.

Every rule's likelihood depends on a trial only through ``k`` = the number of blickets on the machine, so one
matrix product ``trials @ sets.T`` gives ``k`` for every (episode, trial, set) and the log-likelihood is a
table lookup per rule. Everything stays in log space; episodes are processed in chunks so memory is bounded
by ``chunk_size * T * S``.

This engine answers to the Pyro world model in :mod:`causalplay.models.blicket`; the tests check both give
the same posterior marginals to 1e-6.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from .history import HistoryBatch
from .priors import all_subsets
from .resources import max_memory as memory_budget
from .resources import single_thread
from .rules import Threshold
from .spec import HypothesisSpace

__all__ = ["InconsistentEvidenceError", "log_likelihood", "log_posterior", "history_log_posterior", "observe",
           "DEFAULT_CHUNK"]

#: Former fixed episode chunk; chunks are now sized by a memory budget (:func:`chunk_for`). Kept for callers.
DEFAULT_CHUNK = 2048


class InconsistentEvidenceError(ValueError):
    """No hypothesis with non-zero prior explains the observations (e.g. the same trial lit and unlit with
    ``noise=0``)."""


#: Largest ``2**N * H`` for which the per-trial table of :func:`_trial_rows` is built (N = 9: 2**19; N = 10: 2**21).
TRIAL_TABLE_LIMIT = 2**21


@lru_cache(maxsize=16)
def _trial_rows(space: HypothesisSpace) -> torch.Tensor | None:
    """``[2 * 2**N + 1, H]``: the log-likelihood row of every (trial, outcome), then a zero row for padding.

    Row ``d`` is "trial with integer code d stayed dark", row ``2**N + d`` "it lit". Summing a history's rows is
    its log-likelihood, which ``embedding_bag`` does in one vectorised pass. ``None`` when too large.
    """
    n = space.n_objects
    if 2**n * space.n_hypotheses > TRIAL_TABLE_LIMIT:
        return None
    k = (all_subsets(n, space.dtype, space.device) @ space.sets.T).round().long()  # [2^N, S]
    # log_lit_table [R, 2, N + 1] is exact for tiny noise; [R, 2, 2^N, S] -> [2 * 2^N, H], rule-major columns
    rows = space.log_lit_table[:, :, k].permute(1, 2, 0, 3).reshape(2 * 2**n, space.n_hypotheses)
    return torch.cat([rows, rows.new_zeros(1, space.n_hypotheses)])


def log_likelihood(space: HypothesisSpace, trials: torch.Tensor, lit: torch.Tensor,
                   mask: torch.Tensor | None = None) -> torch.Tensor:
    """``sum_t log P(lit_t | trial_t, h)`` for ``trials [B, T, N]``, ``lit [B, T]``; returns ``[B, H]``."""
    if trials.shape[-2] == 0:
        return torch.zeros(*trials.shape[:-2], space.n_hypotheses, dtype=space.dtype, device=space.device)
    rows = _trial_rows(space)
    if rows is not None:
        n = space.n_objects
        code = torch.matmul(trials.to(space.dtype), 2.0 ** torch.arange(n, dtype=space.dtype, device=space.device))
        idx = code.round().long() + lit.round().long() * 2**n
        if mask is not None:
            idx = torch.where(mask.bool(), idx, 2 * 2**n)
        return F.embedding_bag(idx.reshape(-1, idx.shape[-1]), rows, mode="sum").reshape(*idx.shape[:-1], rows.shape[1])
    return _log_likelihood_by_step(space, trials, lit, mask)


def _log_likelihood_by_step(space: HypothesisSpace, trials: torch.Tensor, lit: torch.Tensor,
                            mask: torch.Tensor | None) -> torch.Tensor:
    """Large worlds: one ``[B, S]`` count matrix per time step (float32 matmul, exact for counts < 2**24).
    A threshold rule needs only a comparison and a select (every ``k >= m`` has the same likelihood); other
    rules gather from their ``[B, N + 1]`` row. Padding adds 0."""
    lead, (T, N) = trials.shape[:-2], trials.shape[-2:]
    trials = trials.reshape(-1, T, N)
    lit = lit.reshape(-1, T).round().long()
    B = trials.shape[0]
    mask = torch.ones(B, T, dtype=torch.bool, device=trials.device) if mask is None else mask.reshape(-1, T).bool()
    S, R = space.n_sets, space.n_rules
    sets_t = space.sets.T.to(torch.float32)
    out = torch.zeros(B, R, S, dtype=space.dtype, device=space.device)
    zero = torch.zeros((), dtype=space.dtype, device=space.device)
    for t in range(T):
        k = trials[:, t].to(torch.float32) @ sets_t  # [B, S]
        on = mask[:, t, None]
        for r, rule in enumerate(space.rules):
            row = torch.where(on, space.log_lit_table[r][lit[:, t]], zero)  # [B, N + 1]
            if isinstance(rule, Threshold):
                out[:, r] += torch.where(k >= rule.m, row[:, min(rule.m, N), None], row[:, :1])
            else:
                out[:, r] += torch.gather(row, 1, k.long())
    return out.reshape(*lead, R * S)


#: Working set per chunk of the large-world likelihood: small enough to stay in cache (measured: 4-16 episodes
#: of N = 16 run ~2.5x faster per episode than 256).
CACHE_BYTES = 16 << 20


def episode_bytes(space: HypothesisSpace, n_trials: int) -> int:
    """Bytes of temporaries :func:`log_likelihood` needs per episode (used to size chunks)."""
    item = torch.finfo(space.dtype).bits // 8
    per = 3 * space.n_hypotheses * item
    if _trial_rows(space) is None:  # per step: counts [S] (float32), a select and the running sum
        per += space.n_sets * (4 + 2 * item + 8)
    return per + n_trials * 64


def chunk_for(space: HypothesisSpace, n_trials: int, max_memory=None) -> int:
    """Episodes per chunk so that one chunk's temporaries stay within ``max_memory`` bytes."""
    per = episode_bytes(space, n_trials)
    chunk = max(1, memory_budget(max_memory) // per)
    if _trial_rows(space) is None:
        chunk = min(chunk, max(1, CACHE_BYTES // per))
    return chunk


def log_posterior(space: HypothesisSpace, batch: HistoryBatch, *, chunk_size: int | None = None,
                  check: bool = True, max_memory=None, threads: int | None | str = "auto") -> torch.Tensor:
    """Normalised log posterior ``[B, H]`` of every hypothesis for every history in ``batch``.

    Parameters
    ----------
    space : HypothesisSpace
        Its device and dtype decide where and how the computation runs.
    batch : HistoryBatch
        Moved to ``space``'s device/dtype if needed.
    chunk_size : int, optional
        Episodes per chunk; by default as many as fit in ``max_memory``.
    check : bool
        Raise :class:`InconsistentEvidenceError` for an episode no hypothesis explains; with ``False`` such an
        episode's row is NaN (for hot loops that handle it themselves).
    max_memory : int or str, optional
        Bound on temporaries in bytes (or ``"2GiB"``); default a quarter of available RAM, at most 2 GiB. The
        ``[B, H]`` result itself is not counted.
    threads : int, None or "auto"
        Torch threads for the chunk loop (restored afterwards). ``"auto"``: 1 for large worlds (N > 10), whose
        cache-sized chunks are many small operations that extra OpenMP threads only slow down (measured 30x
        slower with 2 threads on a loaded 2-core machine); torch's setting otherwise. None: torch's setting.
    """
    batch = batch.to(space.device, space.dtype)
    if threads == "auto":
        threads = 1 if _trial_rows(space) is None and space.device.type == "cpu" else None
    if chunk_size is None:
        chunk_size = chunk_for(space, batch.trials.shape[1], max_memory)
    prior = space.log_prior
    out = torch.empty(batch.batch_size, space.n_hypotheses, dtype=space.dtype, device=space.device)
    with single_thread(threads):
        for start in range(0, batch.batch_size, chunk_size):
            sl = slice(start, start + chunk_size)
            out[sl] = prior + log_likelihood(space, batch.trials[sl], batch.lit[sl], batch.mask[sl])
    return _normalise(out, batch, check=check)


def history_log_posterior(space: HypothesisSpace, trials, lit) -> torch.Tensor | None:
    """Normalised ``[H]`` log posterior of one history given as numpy ``trials bool [T, N]``, ``lit bool [T]``,
    by summing rows of the per-trial table (a handful of tensor operations; the one-history hot path).
    None when the space has no per-trial table (N > 10); raises :class:`InconsistentEvidenceError` like
    :func:`log_posterior`."""
    rows = _trial_rows(space)
    if rows is None:
        return None
    n = space.n_objects
    idx = np.asarray(trials, dtype=np.int64) @ (1 << np.arange(n)) + np.asarray(lit, dtype=np.int64) * 2**n
    if space.device.type == "cpu":  # on numpy: a small array operation costs a fraction of a torch dispatch
        tables = space.cached("trial_rows_np", lambda: (rows.numpy(), space.log_prior.numpy()))
        lw_np = tables[0][idx].sum(0)
        lw_np += tables[1]
        m = lw_np.max()
        if np.isfinite(m):
            lw_np -= m + np.log(np.exp(lw_np - m).sum())
            return torch.from_numpy(lw_np)
        z = -math.inf
    else:
        lw = space.log_prior + rows[torch.from_numpy(idx).to(space.device)].sum(0)
        z = torch.logsumexp(lw, 0)
    if not bool(math.isfinite(z)):
        batch = HistoryBatch(torch.as_tensor(np.asarray(trials))[None].to(space.dtype),
                             torch.as_tensor(np.asarray(lit))[None].to(space.dtype),
                             torch.ones(1, len(idx), dtype=torch.bool))
        raise InconsistentEvidenceError(_explain(torch.tensor([True]), batch))
    return lw.sub_(z)


def observe(space: HypothesisSpace, log_w: torch.Tensor, trial: torch.Tensor, lit: torch.Tensor,
            *, check: bool = True) -> torch.Tensor:
    """One Bayesian update for a batch: ``log_w [B, H]``, ``trial [B, N]``, ``lit [B]`` -> new ``[B, H]``.

    The hot path of agents: one ``[B, N] x [N, S]`` product and two gathers.
    """
    ll = log_likelihood(space, trial[:, None, :], lit[:, None])
    return _normalise(log_w + ll, None, check=check)


def _normalise(log_w: torch.Tensor, batch: HistoryBatch | None, check: bool = True) -> torch.Tensor:
    # logsumexp allocates a temporary as large as its input: row chunks of about CACHE_BYTES keep it small
    step = max(1, CACHE_BYTES // max(1, log_w.shape[-1] * log_w.element_size()))
    z = torch.cat([torch.logsumexp(log_w[i: i + step], dim=-1, keepdim=True)
                   for i in range(0, max(1, log_w.shape[0]), step)])
    z = z.reshape(*log_w.shape[:-1], 1)
    if check:
        bad = ~torch.isfinite(z.squeeze(-1))
        if bool(bad.any()):
            raise InconsistentEvidenceError(_explain(bad, batch))
    return log_w.sub_(z)  # callers pass a fresh tensor: normalise in place (a [B, H] copy less at N = 16)


def _explain(bad: torch.Tensor, batch: HistoryBatch | None) -> str:
    episodes = torch.nonzero(bad).flatten().tolist()
    msg = f"no hypothesis explains the evidence of episode(s) {episodes[:10]}"
    if batch is not None:
        b = episodes[0]
        n = int(batch.mask[b].sum())
        trials = batch.trials[b, :n].bool().cpu()
        lit = batch.lit[b, :n].bool().cpu()
        pairs = [(tuple(torch.nonzero(t).flatten().tolist()), bool(lt)) for t, lt in zip(trials, lit, strict=True)]
        conflicts = [(i, j) for i in range(n) for j in range(i + 1, n)
                     if pairs[i][0] == pairs[j][0] and pairs[i][1] != pairs[j][1]]
        if conflicts:
            i, j = conflicts[0]
            msg += (f": observation {i} {pairs[i][0]} -> lit={pairs[i][1]} conflicts with observation {j} "
                    f"{pairs[j][0]} -> lit={pairs[j][1]}")
        else:
            msg += f"; observations: {pairs}"
    return msg + ". With a deterministic machine this is impossible; pass noise > 0 (e.g. noise=0.05)."


def entropy_bits(log_w: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Shannon entropy in bits of normalised log-weights."""
    p = log_w.exp()
    return -(torch.where(p > 0, p * log_w, 0.0)).sum(dim) / math.log(2.0)
