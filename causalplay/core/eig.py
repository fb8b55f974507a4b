"""Exact expected information gain (bits) of candidate trials, batched over episodes.

For a binary outcome ``Y`` (lit) of a trial ``d`` and a target ``G`` (a partition of the hypotheses),

    EIG(d) = I(Y; G) = H_b(P(Y=1)) - sum_g P(g) H_b(P(Y=1 | g)),

with ``H_b`` the binary entropy in bits. Targets:

* ``"joint"`` -- ``G`` is the hypothesis (blicket set and rule). Two matrix products ``w @ P`` and
  ``w @ H_b(P)`` for all episodes and trials at once.
* ``"blickets"`` -- ``G`` is the blicket set (the rule is a nuisance).
* ``"rule"`` -- ``G`` is the rule (the blicket set is a nuisance).

:func:`exact_eig` has the call shape of ``pyro.contrib.oed.eig`` estimators (model, design, observation and
target labels) for :class:`causalplay.models.blicket.BlicketWorld` models.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .codes import vectors_to_codes
from .resources import max_memory as memory_budget
from .rules import Threshold
from .spec import HypothesisSpace

__all__ = ["TARGETS", "eig_bits", "binary_entropy_bits", "count_distribution"]

TARGETS = ("joint", "blickets", "rule")
_LOG2 = math.log(2.0)


def _plogp(x: torch.Tensor) -> torch.Tensor:
    """``x log x`` with ``0 log 0 = 0``: one multiply and one log (half the cost of ``xlogy``)."""
    return x * torch.log(x.clamp_min(torch.finfo(x.dtype).tiny))


def _cond_entropy_bits(q: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """``sum_g P(g) H_b(P(Y=1 | g))`` in bits from ``q = P(Y=1, g)`` and ``p = P(g)``, with ``g`` on axis 1."""
    return -(_plogp(q) + _plogp((p - q).clamp_min(0.0)) - _plogp(p)).sum(1) / _LOG2


def binary_entropy_bits(p: torch.Tensor) -> torch.Tensor:
    """``H_b(p)`` in bits, elementwise; 0 at p in {0, 1}; inputs clamped to [0, 1] against rounding.

    ``p log p`` as multiply-by-log on fresh temporaries, in place (``xlogy`` and ``entr`` cost about 3x).
    """
    tiny = torch.finfo(p.dtype).tiny
    p = p.clamp(0.0, 1.0)
    q = 1.0 - p
    a = p.clamp_min(tiny).log_().mul_(p)
    b = q.clamp_min(tiny).log_().mul_(q)
    return a.add_(b).mul_(-1.0 / _LOG2)


def check_target(target: str) -> str:
    if not isinstance(target, str) or target not in TARGETS:
        raise ValueError(f"unknown EIG target {target!r}; expected one of {TARGETS}")
    return target


def _const_entropy(space: HypothesisSpace) -> torch.Tensor | None:
    """``[R]`` ``H_b(P(lit | r, k))`` when it does not depend on ``k`` for every rule (hard thresholds, with or
    without noise), else None. Then ``w @ H_b(P) = (rule mass) @ this`` -- no matmul needed."""
    def build():
        if not all(isinstance(r, Threshold) for r in space.rules):
            return None
        noise = torch.tensor([r.noise for r in space.rules], dtype=torch.float64)
        return binary_entropy_bits(noise).to(space.dtype).to(space.device)

    return space.cached("const_entropy", build)


def _candidate_chunk(space: HypothesisSpace, n_episodes: int, budget: int) -> int:
    item = torch.finfo(space.dtype).bits // 8
    per_candidate = (2 * space.n_hypotheses + 4 * n_episodes) * item + 8 * space.n_sets
    return max(1, budget // per_candidate)


def eig_bits(space: HypothesisSpace, log_w: torch.Tensor, candidates: torch.Tensor | None, target: str = "joint",
             *, lit_prob: torch.Tensor | None = None, max_elements: int = 2**25, max_memory=None,
             method: str = "auto") -> torch.Tensor:
    """EIG in bits of every candidate trial for every episode.

    Parameters
    ----------
    space : HypothesisSpace
    log_w : Tensor ``[B, H]``
        Normalised log posterior (from :func:`causalplay.core.exact.log_posterior`).
    candidates : Tensor ``[D, N]`` or None
        0/1 candidate trials; None means all ``2**N - 1`` non-empty trials in integer-code order.
    target : {"joint", "blickets", "rule"}
    lit_prob : Tensor ``[H, D]`` or ``[H, D']`` with ``D' >= D``, optional
        ``space.predictive(candidates)`` (or ``space.lit_prob(candidates)``), when the caller scores the same
        candidates many times (agents). Columns beyond ``D`` are padding and are dropped from the result.
    max_elements : int
        Bound on the size of any temporary ``[b, S, D]`` tensor (the ``"blickets"`` target); sets the chunk.
    max_memory : int or str, optional
        Bound on temporaries in bytes (default: a quarter of available RAM, at most 2 GiB); candidates and
        episodes are chunked to stay within it. The ``[B, D]`` result is not counted.
    method : {"auto", "matmul", "transform"}
        ``"transform"`` computes the distribution of ``k`` for every trial by a ranked subset-sum transform
        (``R N (C + 1) 2**N`` per episode instead of ``H 2**N``; joint and rule targets); ``"auto"`` uses it
        for ``N >= 11`` when it needs fewer operations.

    Returns
    -------
    Tensor ``[B, D]``
    """
    check_target(target)
    if method not in ("auto", "matmul", "transform"):
        raise ValueError(f"method must be 'auto', 'matmul' or 'transform', got {method!r}")
    budget = memory_budget(max_memory)
    n, S, R = space.n_objects, space.n_sets, space.n_rules
    D = 2**n - 1 if candidates is None else candidates.shape[0]
    C = space.max_count
    can_transform = target in ("joint", "rule") or (target == "blickets" and R == 1)
    ms = _threshold_layers(space) if n <= 40 else None
    transform_ops = n * (max(ms) if ms is not None else C + 1) * 2**n
    if method == "transform" and not can_transform:
        raise ValueError(f"method='transform' covers the joint and rule targets (and blickets with one rule), "
                         f"not target={target!r} with {R} rules; use method='matmul'")
    if lit_prob is None and can_transform and n <= 40 and (
            method == "transform" or (method == "auto" and n >= 11 and 4 * transform_ops < S * D)):
        out = _eig_transform(space, log_w, target, budget)
        if candidates is None:
            return out
        return out[:, vectors_to_codes(candidates) - 1]
    if candidates is None:
        if D * (n + 8) > budget:
            raise MemoryError(f"all 2**{n} - 1 = {D:,} trials do not fit in max_memory={budget:,} bytes; pass "
                              "candidate trials or a larger max_memory")
        candidates = space.all_trials()
    if lit_prob is not None:
        return _eig_matmul(space, log_w.exp().to(lit_prob.dtype), lit_prob, target, max_elements)[:, :D]
    step = _candidate_chunk(space, log_w.shape[0], budget)
    if step >= D:
        return _eig_matmul(space, log_w.exp(), space.predictive(candidates), target, max_elements)[:, :D]
    w = log_w.exp()
    out = torch.empty(log_w.shape[0], D, dtype=space.dtype, device=space.device)
    for start in range(0, D, step):
        sl = slice(start, start + step)
        out[:, sl] = _eig_matmul(space, w, space.lit_prob(candidates[sl]), target, max_elements)
    return out


#: entries of the all-trials predictive table the one-history fast path keeps (HypothesisSpace.predictive's default)
_JOINT_MAX_ENTRIES = 2**24


def _joint_table(space: HypothesisSpace, const: torch.Tensor) -> tuple[torch.Tensor, np.ndarray] | None:
    """The transposed predictive table of every trial and the rules' constant entropies, or None when the table
    is over :data:`_JOINT_MAX_ENTRIES` (kept on the space by :func:`eig_one_joint`, so built once)."""
    P = space.predictive(space.all_trials(), max_entries=_JOINT_MAX_ENTRIES)
    if P.numel() > _JOINT_MAX_ENTRIES:
        return None
    return P.T.contiguous(), const.cpu().numpy()


def eig_one_joint(space: HypothesisSpace, log_w: torch.Tensor) -> np.ndarray | None:
    """Joint EIG in bits of all ``2**N - 1`` trials for ONE history (``log_w [H]``), or None when this fast
    path does not apply (a rule that is not a threshold, or N > 10).

    The same numbers as ``eig_bits(space, log_w[None], None)[0]`` (to rounding), for the one-history hot path
    (``infer(h).best_trial()``): one matrix-vector product with the cached predictive table, transposed so
    the product streams it row by row, then the entropy on numpy (a dozen torch dispatches on a 511-vector
    cost more than their arithmetic).
    """
    const = _const_entropy(space)
    if const is None or space.n_objects > 10:  # from N = 11 the general path's subset-sum transform is cheaper
        return None
    cached = space.cached("eig_one_joint", lambda: _joint_table(space, const))
    if cached is None:  # too large to keep: the general path chunks
        return None
    Pt, const_np = cached
    if Pt.device.type == "cpu":  # numpy: a small array operation costs a fraction of a torch dispatch
        w = np.exp(log_w.detach().numpy())
        p = Pt.numpy() @ w
    else:
        w_t = log_w.detach().exp()
        p, w = torch.mv(Pt, w_t).cpu().numpy(), w_t.cpu().numpy()
    p = p[: 2**space.n_objects - 1]
    np.clip(p, 0.0, 1.0, out=p)
    q = 1.0 - p
    tiny = _TINY64 if p.dtype == np.float64 else _TINY32
    h = np.log(np.maximum(p, tiny)) * p
    h += np.log(np.maximum(q, tiny)) * q
    h *= -1.0 / _LOG2
    # H(Y | hypothesis) = sum_r P(r) H_b(noise_r) for threshold rules (0 without noise)
    h -= float(w.reshape(space.n_rules, -1).sum(-1) @ const_np)
    return np.maximum(h, 0.0, out=h)


_TINY64 = float(np.finfo(np.float64).tiny)
_TINY32 = float(np.finfo(np.float32).tiny)


def _eig_matmul(space: HypothesisSpace, w: torch.Tensor, P: torch.Tensor, target: str,
                max_elements: int) -> torch.Tensor:
    """EIG from the predictive table ``P [H, D]`` and probabilities ``w [B, H]``."""
    p_on = w @ P
    h_y = binary_entropy_bits(p_on)
    R, S, D = space.n_rules, space.n_sets, P.shape[1]
    if target == "joint" or (target == "blickets" and R == 1):
        if space.cached("all_deterministic", lambda: all(r.deterministic for r in space.rules)):
            return h_y
        const = _const_entropy(space)
        if const is not None:  # noisy thresholds: H_b(P) is H_b(noise_r) everywhere
            cond = w.reshape(-1, R, S).sum(-1) @ const.to(w.dtype)
            return h_y.sub_(cond[:, None]).clamp_min_(0.0)
        return h_y.sub_(w @ binary_entropy_bits(P)).clamp_min_(0.0)
    if target == "rule":
        if R == 1:
            return torch.zeros_like(p_on)
        wr = w.reshape(-1, R, S)
        q = torch.einsum("brs,rsd->brd", wr, P.reshape(R, S, D))  # P(Y=1, rule r)
        pr = wr.sum(-1, keepdim=True)  # [B, R, 1]
        return (h_y - _cond_entropy_bits(q, pr)).clamp_min(0.0)
    # blickets: P(Y=1, set s) = sum_r w[r, s] P[r, s, d] needs a [B, S, D] temporary.
    wr = w.reshape(-1, R, S)
    Pr = P.reshape(R, S, D)
    ps = wr.sum(1)  # [B, S]
    cond = torch.empty_like(p_on)
    step = max(1, max_elements // max(1, S * D))
    for start in range(0, w.shape[0], step):
        sl = slice(start, start + step)
        q = torch.einsum("brs,rsd->bsd", wr[sl], Pr)
        cond[sl] = _cond_entropy_bits(q, ps[sl, :, None])
    return (h_y - cond).clamp_min(0.0)


def count_distribution(space: HypothesisSpace, w: torch.Tensor, layers: int | None = None) -> torch.Tensor:
    """``F [B, R, 2**N, L]``: ``F[b, r, d, j] = sum of w[b, (r, s)] over sets s with |s & d| = j`` for
    ``j < L`` (``L = layers``, default ``C + 1`` with ``C`` the largest allowed set size, i.e. every count).

    A ranked subset-sum (zeta) transform over the ``N`` bits: ``N L 2**N`` additions per (episode, rule)
    instead of ``S 2**N`` for a ``[H, 2**N]`` predictive table. Threshold rules only need ``L = m``.
    """
    n, R, S = space.n_objects, space.n_rules, space.n_sets
    L = space.max_count + 1 if layers is None else layers
    B = w.shape[0]
    G = torch.zeros(B * R, 2**n, L, dtype=w.dtype, device=w.device)
    G[:, space.set_codes, 0] = w.reshape(B * R, S)
    for i in range(n):
        v = G.view(B * R, 2 ** (n - 1 - i), 2, 2**i, L)
        a, c = v[:, :, 0], v[:, :, 1]
        new1 = a.clone()
        if L > 1:
            new1[..., 1:] += c[..., :-1]  # bit i of d is on: an S containing i counts one more
        a += c  # bit i of d is off: S with or without i count the same
        c.copy_(new1)
    return G.view(B, R, 2**n, L)


def _threshold_layers(space: HypothesisSpace) -> list[int] | None:
    """``m`` of every rule (capped at ``C + 1``) when all rules are thresholds, else None."""
    return space.cached("threshold_layers", lambda: None if not all(isinstance(r, Threshold) for r in space.rules)
                        else [min(r.m, space.max_count + 1) for r in space.rules])


def _eig_transform(space: HypothesisSpace, log_w: torch.Tensor, target: str, budget: int) -> torch.Tensor:
    """EIG of all ``2**N - 1`` non-empty trials via :func:`count_distribution`, chunked over episodes."""
    n, R, S = space.n_objects, space.n_rules, space.n_sets
    C = space.max_count
    ms = _threshold_layers(space)
    L = max(ms) if ms is not None else C + 1
    item = torch.finfo(space.dtype).bits // 8
    per_episode = 3 * R * 2**n * L * item
    step = budget // per_episode
    if step < 1:
        raise MemoryError(f"the EIG transform needs {per_episode:,} bytes per episode at N = {n}, more than "
                          f"max_memory={budget:,}; pass candidate trials or a larger max_memory")
    B = log_w.shape[0]
    out = torch.empty(B, 2**n - 1, dtype=space.dtype, device=space.device)
    for start in range(0, B, step):
        w = log_w[start: start + step].exp()
        W = w.reshape(-1, R, S).sum(-1)  # [b, R] rule mass
        F = count_distribution(space, w, L)[:, :, 1:]  # [b, R, D, L], the empty trial dropped
        if ms is not None:  # P(lit, r | d) = off_r * P(k < m_r) + on_r * P(k >= m_r)
            off = space.lit_table[:, 0]
            on = space.lit_table[torch.arange(R), [min(m, n) for m in ms]]
            below = torch.stack([F[:, r, :, : ms[r]].sum(-1) for r in range(R)], 1)  # [b, R, D]
            q = off[:, None] * below + on[:, None] * (W[:, :, None] - below)
            cond_joint = (W @ _const_entropy(space))[:, None]
        else:
            table = space.lit_table[:, :L]  # [R, C + 1]
            q = torch.einsum("brdj,rj->brd", F, table)
            cond_joint = torch.einsum("brdj,rj->bd", F, binary_entropy_bits(table))
        h_y = binary_entropy_bits(q.sum(1))
        if target == "rule":
            if R == 1:
                out[start: start + step] = 0.0
                continue
            cond = _cond_entropy_bits(q, W[:, :, None])
        else:
            cond = cond_joint
        out[start: start + step] = (h_y - cond).clamp_min(0.0)
    return out
