"""Exact structure posteriors for the causal-DAG task by conjugacy, and EIG-chosen interventions.

Model (the spec is :mod:`causalplay.models.causal_dag`): for a structure ``G`` and every variable ``j`` with
parents ``pa_j``, ``z_j = f^{-1}(x_j) = w_j . x_{pa_j} + e_j`` with ``e_j ~ Normal(0, s_j)``,
``s_j ~ InverseGamma(a0, b0)`` and ``w_j | s_j ~ Normal(0, s_j g I)``; ``f`` is the leaky ReLU (or the
identity when linear). Because every variable is observed and ``f`` is a bijection, the pre-activation ``z_j``
is known, so per structure the weights and noise of each variable have a Normal-Inverse-Gamma posterior
and the marginal likelihood factorises over variables; rows in which ``j`` was intervened on are left out of
``j``'s factor (the do-operator). A factor only depends on ``j``'s parent set, so the ``n x P`` local scores
are computed once and every structure's log-likelihood is a sum of ``n`` of them (:func:`structure_loglik`).

Defaults match the environment's generator in mean and spread: ``s ~ InvGamma(6, 2.5)`` has mean 0.5 and
sd 0.25 (the env: Normal(0.5, 0.25) clipped), and ``g = 8/3`` gives ``Var(w) = E[s] g = 4/3`` (the env:
Uniform(-2, 2)). The prior over structures is uniform over the given :class:`StructureSpace`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .dag import StructureSpace, leaky_inv, simulate
from .ties import argmax_tol, stable_topk

__all__ = ["NIGPrior", "Data", "suff_stats", "local_scores", "local_posteriors", "structure_loglik",
           "log_posterior", "sample_scm", "expected_goal", "eig"]

LOG_LEAK = math.log(0.2)


@dataclass(frozen=True)
class NIGPrior:
    """``s ~ InverseGamma(a0, b0)``, ``w | s ~ Normal(0, s g I)``."""

    a0: float = 6.0
    b0: float = 2.5
    g: float = 8.0 / 3.0

    def __post_init__(self) -> None:
        for k in ("a0", "b0", "g"):
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)):
                raise ValueError(f"{k} must be a finite number > 0, got {v!r}")


@dataclass
class Data:
    """A batch of causal-DAG data: ``x [B, R, n]`` values, ``do [B, R]`` intervened variable (-1: none),
    ``mask [B, R]`` bool (False rows are padding)."""

    x: torch.Tensor
    do: torch.Tensor
    mask: torch.Tensor

    def __post_init__(self) -> None:
        if self.x.dim() != 3:
            raise ValueError(f"x must have shape [B, R, n], got {tuple(self.x.shape)}")
        if self.do.shape != self.x.shape[:2] or self.mask.shape != self.x.shape[:2]:
            raise ValueError(f"do and mask must have shape {tuple(self.x.shape[:2])}, got {tuple(self.do.shape)} "
                             f"and {tuple(self.mask.shape)}")
        n = self.x.shape[-1]
        if ((self.do < -1) | (self.do >= n)).any():
            raise ValueError(f"do must hold -1 or variable indices in [0, {n}), got {self.do.unique().tolist()}")


def suff_stats(data: Data, linear: bool = False) -> tuple[torch.Tensor, ...]:
    """Per-variable sufficient statistics over the rows that count for it: ``G [B, n, n, n]`` (Gram of the
    values), ``c [B, n, n]`` (values x pre-activation), ``yy [B, n]``, ``cnt [B, n]``, ``jac [B, n]`` (log
    Jacobian of ``f^{-1}``)."""
    x = data.x.to(torch.float64)
    n = x.shape[-1]
    z = x if linear else leaky_inv(x)
    w = (data.mask[..., None] & (data.do[..., None] != torch.arange(n))).to(torch.float64)  # [B, R, n]
    G = torch.einsum("brj,brp,brq->bjpq", w, x, x)
    c = torch.einsum("brj,brp,brj->bjp", w, x, z)
    yy = (w * z * z).sum(1)
    cnt = w.sum(1)
    jac = torch.zeros_like(cnt) if linear else -(w * (x < 0)).sum(1) * LOG_LEAK
    return G, c, yy, cnt, jac


def _gather_sets(G: torch.Tensor, c: torch.Tensor, members: torch.Tensor):
    """Statistics restricted to each parent set: ``Gs [..., n, P, 2, 2]``, ``cs [..., n, P, 2]`` (padding 0)."""
    n, P, _ = members.shape
    valid = (members >= 0).to(G.dtype)  # [n, P, 2]
    m = members.clamp_min(0)
    j = torch.arange(n)[:, None, None]
    Gs = G[..., j[..., None], m[..., :, None], m[..., None, :]]  # [..., n, P, 2, 2]
    Gs = Gs * valid[..., :, None] * valid[..., None, :]
    cs = c[..., j, m] * valid
    return Gs, cs, valid


def local_posteriors(stats, members: torch.Tensor, prior: NIGPrior = NIGPrior()):
    """NIG posterior of every variable under every parent set: ``mean [..., n, P, 2]``, ``prec [..., n, P, 2, 2]``
    (``Lambda_n = X'X + I / g``), ``a [..., n, P]``, ``b [..., n, P]``, and the log marginal likelihood
    ``logml [..., n, P]`` (including the Jacobian of ``f^{-1}``)."""
    G, c, yy, cnt, jac = stats
    Gs, cs, _ = _gather_sets(G, c, members)
    eye = torch.eye(2, dtype=G.dtype)
    prec = Gs + eye / prior.g
    L = torch.linalg.cholesky(prec)
    mean = torch.cholesky_solve(cs[..., None], L)[..., 0]
    logdet = 2 * torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1)
    a = prior.a0 + cnt[..., None] / 2
    b = prior.b0 + 0.5 * (yy[..., None] - (cs * mean).sum(-1))
    a = a.expand_as(b)
    logml = (-cnt[..., None] / 2 * math.log(2 * math.pi) + 0.5 * (-2 * math.log(prior.g) - logdet)
             + prior.a0 * math.log(prior.b0) - a * torch.log(b) + torch.lgamma(a) - math.lgamma(prior.a0)
             + jac[..., None])
    return mean, prec, a, b, logml


def local_scores(data: Data, members: torch.Tensor, prior: NIGPrior = NIGPrior(), linear: bool = False):
    """Log marginal likelihood of each variable's column under each of its parent sets, ``[B, n, P]``."""
    return local_posteriors(suff_stats(data, linear), members, prior)[-1]


def structure_loglik(local: torch.Tensor, space: StructureSpace) -> torch.Tensor:
    """``log p(data | G)`` for every structure: ``local [..., n, P]`` -> ``[..., S]``."""
    n = space.n
    return local[..., torch.arange(n), space.pidx].sum(-1)


def log_posterior(data: Data, space: StructureSpace, prior: NIGPrior = NIGPrior(), linear: bool = False,
                  log_prior: torch.Tensor | None = None) -> torch.Tensor:
    """Normalised log posterior over the structures of ``space``, ``[B, S]`` (uniform prior by default)."""
    ll = structure_loglik(local_scores(data, space.members, prior, linear), space)
    if log_prior is not None:
        ll = ll + log_prior
    return ll - torch.logsumexp(ll, -1, keepdim=True)


def _pick(t: torch.Tensor, pidx: torch.Tensor, n_rest: int) -> torch.Tensor:
    """``t [..., n, P, *rest]`` (``n_rest`` trailing dims) at parent-set indices ``pidx [..., n]`` ->
    ``[..., n, *rest]``; ``t``'s leading dims broadcast against ``pidx``'s."""
    lead = torch.broadcast_shapes(t.shape[:t.dim() - 2 - n_rest], pidx.shape[:-1])
    t = t.expand(*lead, *t.shape[t.dim() - 2 - n_rest:])
    rest = t.shape[len(lead) + 2:]
    idx = pidx.expand(*lead, pidx.shape[-1]).reshape(*lead, pidx.shape[-1], 1, *([1] * n_rest))
    idx = idx.expand(*lead, pidx.shape[-1], 1, *rest)
    return t.gather(len(lead) + 1, idx).squeeze(len(lead) + 1)


def sample_scm(post: tuple, pidx: torch.Tensor, members: torch.Tensor, gen: torch.Generator) -> tuple:
    """Draw weights and noise variances from the NIG posteriors of the structures ``pidx [..., n]`` (one
    structure per leading index; ``post`` = :func:`local_posteriors` output with leading dims broadcastable
    to ``pidx``'s). Returns ``W [..., n, n]`` and ``s [..., n]``."""
    mean, prec, a, b, _ = post
    mean, prec, a, b = _pick(mean, pidx, 1), _pick(prec, pidx, 2), _pick(a, pidx, 0), _pick(b, pidx, 0)
    gam = torch._standard_gamma(a.contiguous()) if gen is None else _gamma(a, gen)
    s = b / gam
    L = torch.linalg.cholesky(prec)  # prec = L L^T; w = mean + sqrt(s) L^-T u
    u = torch.randn(*mean.shape, generator=gen, dtype=mean.dtype)
    w = mean + s[..., None].sqrt() * torch.linalg.solve_triangular(L.transpose(-1, -2), u[..., None],
                                                                   upper=True)[..., 0]
    return _weight_matrix(w, pidx, members), s


def _weight_matrix(w: torch.Tensor, pidx: torch.Tensor, members: torch.Tensor) -> torch.Tensor:
    """``W [..., n, n]`` (``W[..., p, j]``: the weight of ``p -> j``) from the weights ``w [..., n, 2]`` of each
    variable's parents in the structures ``pidx [..., n]`` (padding slots of a parent set are dropped)."""
    n = pidx.shape[-1]
    mem = members[torch.arange(n), pidx].expand(*w.shape[:-2], n, 2)  # [..., n, 2]
    valid = mem >= 0
    W = torch.zeros(*w.shape[:-2], n + 1, n, dtype=w.dtype)
    W.scatter_add_(-2, torch.where(valid, mem, n).transpose(-1, -2), (w * valid).transpose(-1, -2))
    return W[..., :n, :]


def _gamma(a: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Gamma(a, 1) draws with a torch Generator (Marsaglia-Tsang, a >= 1; every a here is >= a0 = 6)."""
    d = a - 1.0 / 3.0
    c = 1.0 / torch.sqrt(9.0 * d)
    out = torch.full_like(a, float("nan"))
    todo = torch.ones_like(a, dtype=torch.bool)
    while todo.any():
        x = torch.randn(a.shape, generator=gen, dtype=a.dtype)
        u = torch.rand(a.shape, generator=gen, dtype=a.dtype)
        v = (1 + c * x) ** 3
        ok = (v > 0) & (torch.log(u.clamp_min(1e-300)) < 0.5 * x * x + d - d * v + d * torch.log(v.clamp_min(1e-300)))
        take = todo & ok
        out = torch.where(take, d * v, out)
        todo = todo & ~ok
    return out


def _top(logpost: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    k = min(k, logpost.shape[-1])
    lp, idx = stable_topk(logpost, k)  # equal scores (e.g. Markov-equivalent structures): the lower index
    return lp - torch.logsumexp(lp, -1, keepdim=True), idx


def expected_goal(data: Data, space: StructureSpace, goal: torch.Tensor, n_actions_values: float = 4.0,
                  prior: NIGPrior = NIGPrior(), linear: bool = False, n_samples: int = 256,
                  gen: torch.Generator | None = None, logpost: torch.Tensor | None = None) -> torch.Tensor:
    """Posterior expected value of the goal under each action ``[B, 2n]`` (actions as the environment:
    ``a < n`` sets ``a`` to ``-v``, else ``a - n`` to ``+v``; an action on the goal = no intervention).

    Monte Carlo over ``n_samples`` joint draws of (structure, weights, noise variances, noise) from the exact
    posterior (structures drawn from the full posterior over ``space``); common draws for all actions.
    """
    n = space.n
    B = data.x.shape[0]
    post = local_posteriors(suff_stats(data, linear), space.members, prior)
    if logpost is None:
        logpost = structure_loglik(post[-1], space)
        logpost = logpost - torch.logsumexp(logpost, -1, keepdim=True)
    s_idx = torch.multinomial(logpost.exp(), n_samples, replacement=True, generator=gen)  # [B, K]
    pidx = space.pidx[s_idx]  # [B, K, n]
    W, s = sample_scm(tuple(p[:, None] for p in post), pidx, space.members, gen)  # [B, K, n, n]
    eps = torch.randn(B, n_samples, 1, n, generator=gen, dtype=torch.float64) * s[..., None, :].sqrt()
    out = torch.empty(B, 2 * n, dtype=torch.float64)
    rows = torch.arange(B)
    for a in range(2 * n):
        var = a % n
        idx = torch.where(goal == var, -1, var)[:, None, None].expand(B, n_samples, 1)
        val = torch.full((B, n_samples, 1), -n_actions_values if a < n else n_actions_values, dtype=torch.float64)
        x = simulate(W, eps, idx, val, linear)  # [B, K, 1, n]
        out[:, a] = x[rows, :, 0, goal].mean(-1)
    return out


def eig(data: Data, space: StructureSpace, prior: NIGPrior = NIGPrior(), linear: bool = False,
        target: str = "structure", goal: torch.Tensor | None = None, n_outer: int = 16, top_k: int = 512,
        gen: torch.Generator | None = None, value: float = 4.0) -> torch.Tensor:
    """Expected information gain of each of the ``2n`` interventions, ``[B, 2n]`` (nats).

    ``target="structure"``: about the structure ``G``; ``target="action"``: about the best goal-phase action
    ``a*(G)`` (the argmax of the goal under ``G`` with its posterior-mean weights and zero noise; ``goal``
    required). Nested Monte Carlo: ``n_outer`` outcomes per intervention are drawn from the posterior
    predictive (structure, weights, noise variances, noise); every outcome is scored under all structures with
    the NIG posterior predictive (the exact Student-t, via updated sufficient statistics). Both sums run over
    the ``top_k`` most probable structures, renormalised (exact when ``top_k >= S``).
    """
    if target not in ("structure", "action"):
        raise ValueError(f"target must be 'structure' or 'action', got {target!r}")
    if target == "action" and goal is None:
        raise ValueError("target='action' needs the goal variable (goal [B])")
    n, B = space.n, data.x.shape[0]
    stats = suff_stats(data, linear)
    post = local_posteriors(stats, space.members, prior)
    lp_all = structure_loglik(post[-1], space)
    lp, top = _top(lp_all - torch.logsumexp(lp_all, -1, keepdim=True), top_k)  # [B, K]
    A, M = 2 * n, n_outer
    pick = torch.multinomial(lp.exp(), A * M, replacement=True, generator=gen).view(B, A, M)  # index into top
    pidx_true = space.pidx[top.gather(1, pick.view(B, -1)).view(B, A, M)]  # [B, A, M, n]
    W, s = sample_scm(tuple(p[:, None, None] for p in post), pidx_true, space.members, gen)
    eps = torch.randn(B, A, M, 1, n, generator=gen, dtype=torch.float64) * s[..., None, :].sqrt()
    act = torch.arange(A)
    idx = (act % n)[None, :, None, None].expand(B, A, M, 1)
    val = torch.where(act < n, -value, value).to(torch.float64)[None, :, None, None].expand(B, A, M, 1)
    x = simulate(W, eps, idx, val, linear)[..., 0, :]  # [B, A, M, n]
    # score each outcome under every parent set: logml(data + row) - logml(data); statistics add up over rows
    row = suff_stats(Data(x.reshape(-1, 1, n), idx.reshape(-1, 1), torch.ones(B * A * M, 1, dtype=torch.bool)), linear)
    stats2 = [t[:, None, None] + r.view(B, A, M, *r.shape[1:]) for t, r in zip(stats, row, strict=True)]
    post2 = local_posteriors(stats2, space.members, prior)
    pred = post2[-1] - post[-1][:, None, None]  # [B, A, M, n, P]
    ll = _pick(pred[:, :, :, None], space.pidx[top][:, None, None], 0).sum(-1)  # [B, A, M, K]
    joint = lp[:, None, None] + ll
    log_marg = torch.logsumexp(joint, -1)  # [B, A, M]
    if target == "structure":
        ll_true = ll.gather(-1, pick[..., None])[..., 0]
        return (ll_true - log_marg).mean(-1)
    # about a*(G): entropy of the prior over a* minus expected entropy after the outcome
    best = _best_actions(post, space.pidx[top], space.members, goal, linear, value)  # [B, K]
    oh = torch.nn.functional.one_hot(best, A).to(torch.float64)  # [B, K, A]
    p0 = torch.einsum("bk,bka->ba", lp.exp(), oh)
    h0 = -(torch.special.xlogy(p0, p0)).sum(-1)
    w1 = torch.softmax(joint, -1)
    p1 = torch.einsum("bamk,bkc->bamc", w1, oh)
    h1 = -(torch.special.xlogy(p1, p1)).sum(-1)
    return h0[:, None] - h1.mean(-1)


def _best_actions(post, pidx: torch.Tensor, members: torch.Tensor, goal: torch.Tensor, linear: bool,
                  value: float) -> torch.Tensor:
    """argmax over actions of the goal under each structure ``pidx [B, K, n]`` with posterior-mean weights and
    zero noise."""
    mean = post[0]
    B, K, n = pidx.shape
    W = _weight_matrix(_pick(mean[:, None], pidx, 1), pidx, members)  # [B, K, n, n]
    A = 2 * n
    act = torch.arange(A)
    eps = torch.zeros(B, K, A, n, dtype=mean.dtype)
    var = (act % n)[None, None].expand(B, K, A)
    idx = torch.where(var == goal[:, None, None], -1, var)
    val = torch.where(act < n, -value, value).to(mean.dtype)[None, None].expand(B, K, A)
    x = simulate(W, eps, idx, val, linear)  # [B, K, A, n]
    g = x.gather(-1, goal[:, None, None, None].expand(B, K, A, 1))[..., 0]
    return argmax_tol(g, -1)
