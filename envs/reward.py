"""The Blicket tasks' reward: the official IVRE Jensen-Shannon distance, and the plain one.

The public IVRE environment scores a wrong belief by ``-1 - JSD(oracle, belief)`` where both vectors have
one slot per object of the CLEVR pool (48), zeros for the objects not in the episode, and ``EPS = 1e-7``
added to *every* slot before normalising; the divergence (natural log) is clipped to ``[0, 1]`` before the
square root. :func:`ivre_jsd` computes exactly that from our ``N``-entry vectors: the ``slots - N`` empty
slots all hold ``eps``, so their part of each KL term is one closed-form scalar. An all-zero belief is thus
``eps`` everywhere -- uniform over the 48 slots, far from the oracle -- not "uniform over the N objects".

The public code runs in float32 (numpy arrays of float32 plus a Python float); we compute in float64, so
values agree with a float64 evaluation of the official formula to ~1e-12 and with the float32 original to
its rounding (~1e-7 relative).
"""

from __future__ import annotations

import torch

__all__ = ["ivre_jsd", "jsd"]


def ivre_jsd(p: torch.Tensor, q: torch.Tensor, slots: int = 48, eps: float = 1e-7) -> torch.Tensor:
    """The official IVRE Jensen-Shannon distance between rows of ``p`` and ``q`` (``[..., N]``, ``N <= slots``).

    ``p`` and ``q`` are padded to ``slots`` entries with zeros, ``eps`` is added to every entry, each is
    normalised to sum 1, and ``sqrt(clip(0.5 KL(p||m) + 0.5 KL(q||m), 0, 1))`` with ``m = (p + q) / 2``.
    """
    N = p.shape[-1]
    if q.shape[-1] != N or slots < N:
        raise ValueError(f"need p, q with the same last size N <= slots, got {p.shape[-1]}, {q.shape[-1]} and "
                         f"slots={slots}")
    # p and q stacked on a leading axis: one op for both (the single env's step pays per op, not per value)
    x = torch.stack(torch.broadcast_tensors(p.to(torch.float64), q.to(torch.float64))) + eps
    total = x.sum(-1, keepdim=True) + (slots - N) * eps
    x = x / total
    e = eps / total  # [2, ..., 1]: the value of each empty slot
    x = torch.cat([x, e], -1)
    m = x.mean(0)
    w = torch.ones(N + 1, dtype=torch.float64)
    w[N] = slots - N  # the empty slots' term counts once per slot
    kl = ((torch.special.xlogy(x, x) - torch.special.xlogy(x, m)) * w).sum(-1)  # [2, ...]
    return torch.sqrt(kl.mean(0).clamp(0.0, 1.0))


def jsd(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Plain Jensen-Shannon **distance** (natural log) between rows normalised to sum 1; an all-zero row counts
    as uniform. Matches ``scipy.spatial.distance.jensenshannon``. Not the env's reward (see :func:`ivre_jsd`)."""
    def norm(x: torch.Tensor) -> torch.Tensor:
        x = x.to(torch.float64)
        s = x.sum(-1, keepdim=True)
        return torch.where(s > 0, x / s.clamp_min(1e-300), torch.full_like(x, 1.0 / x.shape[-1]))

    p, q = norm(p), norm(q)
    m = 0.5 * (p + q)
    kl = lambda a: (torch.special.xlogy(a, a) - torch.special.xlogy(a, m)).sum(-1)  # noqa: E731
    return torch.sqrt((0.5 * kl(p) + 0.5 * kl(q)).clamp_min(0.0))
