"""The causal-DAG world's structures and its structural equations (Lampinen et al. 2023, appendix A.1).

The SCM: ``x_j = f(sum_p W[p, j] x_p + eps_j)`` with ``f`` the leaky ReLU (slope 0.2), or the identity in linear
worlds (:func:`simulate`) -- the one place the world's likelihood lives, shared by the environment
(:mod:`causalplay.envs.causal_dag`), the Pyro model (:mod:`causalplay.models.causal_dag`) and the conjugate
posterior (:mod:`causalplay.core.dag_posterior`).

Enumerating the structures: every DAG on ``n`` labelled variables with at most 2 parents
per variable, as parent-set indices (the layout the conjugate posterior scores node by node).

A structure is a tuple of parent sets, one per variable; variable ``j``'s parent set is one of the
``P = 1 + (n-1) + C(n-1, 2)`` subsets of the other variables with at most two members (11 for ``n = 5``), listed
in :attr:`StructureSpace.members` ``[n, P, 2]`` (padded with -1). ``StructureSpace.pidx [S, n]`` gives each
structure's parent-set index per variable, ``adj [S, n, n]`` its adjacency (``adj[s, p, j]``: edge p -> j).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

__all__ = ["ROLE_NAMES", "GOAL_ROLE", "TARGET_ROLE", "leaky", "leaky_inv", "simulate", "StructureSpace",
           "parent_sets", "enumerate_structures", "ancestors", "count_structures", "train_keep",
           "count_up_to_relabelling"]


#: The paper's variable names; roles ``A..E`` of the 5-variable SCM.
ROLE_NAMES = ("A", "B", "C", "D", "E")
#: Role index of the goal variable ``E`` and of the test intervention target ``D``.
GOAL_ROLE, TARGET_ROLE = 4, 3
LEAK = 0.2


def leaky(z: torch.Tensor) -> torch.Tensor:
    """Leaky ReLU with slope 0.2 below zero."""
    return torch.nn.functional.leaky_relu(z, LEAK)


def leaky_inv(x: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`leaky` (a bijection of the reals)."""
    return torch.where(x >= 0, x, x / LEAK)


def simulate(W: torch.Tensor, eps: torch.Tensor, do_idx: torch.Tensor | None = None,
             do_val: torch.Tensor | None = None, linear: bool = False) -> torch.Tensor:
    """Values of an SCM ``x_j = f(sum_p W[p, j] x_p + eps_j)`` under ``do(x_{do_idx} = do_val)``.

    Parameters
    ----------
    W : Tensor ``[..., N, N]``
        ``W[..., p, j]`` is the weight of the edge ``p -> j`` (0 where there is no edge); must be acyclic.
    eps : Tensor ``[..., S, N]``
        ``S`` draws of the exogenous noise per batch element.
    do_idx, do_val : Tensor ``[..., S]`` (or ``[..., 1]``, shared by the draws), optional
        Index of the intervened variable (``-1``: none) and its value.
    linear : bool
        ``f`` = identity if True, else leaky ReLU (0.2).

    Returns
    -------
    Tensor ``[..., S, N]``
    """
    N = W.shape[-1]
    f = (lambda z: z) if linear else leaky
    x = torch.zeros_like(eps, dtype=W.dtype)
    clamp = None
    if do_idx is not None:
        onehot = (torch.nn.functional.one_hot(do_idx.clamp_min(0), N) * (do_idx >= 0)[..., None]).to(W.dtype)
        clamp = (1.0 - onehot, onehot * do_val[..., None].to(W.dtype))
    lead = torch.broadcast_shapes(W.shape[:-2], eps.shape[:-2])
    S = eps.shape[-2]
    Wb = W.expand(*lead, N, N).reshape(-1, N, N)  # bmm: far cheaper than broadcasting matmul on small matrices
    x = x.expand(*lead, S, N)
    eps = eps.expand(*lead, S, N)
    for _ in range(N):  # N sweeps reach the fixed point of any DAG on N nodes
        x = f(torch.bmm(x.reshape(-1, S, N), Wb).view(*lead, S, N) + eps)
        if clamp is not None:
            x = x * clamp[0] + clamp[1]
    return x


def parent_sets(n: int, j: int, max_parents: int = 2) -> list[tuple[int, ...]]:
    """The candidate parent sets of variable ``j``: all subsets of the other ``n - 1`` variables with at most
    ``max_parents`` members, by size then lexicographically (the empty set first)."""
    others = [i for i in range(n) if i != j]
    return [c for k in range(max_parents + 1) for c in itertools.combinations(others, k)]


def ancestors(adj: np.ndarray) -> np.ndarray:
    """``anc[..., p, j]`` = p is a proper ancestor of j, for boolean adjacency ``[..., n, n]``."""
    reach = np.asarray(adj, dtype=bool).copy()
    a = reach.astype(np.int64)
    for _ in range(reach.shape[-1]):
        reach = reach | ((reach.astype(np.int64) @ a) > 0)
    return reach


@dataclass(frozen=True)
class StructureSpace:
    """All admissible structures: ``pidx [S, n]`` long, ``adj [S, n, n]`` bool, ``members [n, P, 2]`` long."""

    n: int
    pidx: torch.Tensor
    adj: torch.Tensor
    members: torch.Tensor

    @property
    def size(self) -> int:
        return int(self.pidx.shape[0])

    def subset(self, keep: torch.Tensor) -> StructureSpace:
        """The structures where ``keep [S]`` is True."""
        return StructureSpace(self.n, self.pidx[keep], self.adj[keep], self.members)


@lru_cache(maxsize=8)
def enumerate_structures(n: int = 5, max_parents: int = 2) -> StructureSpace:
    """Every DAG on ``n`` labelled variables whose variables have at most ``max_parents`` parents.

    Builds all ``P**n`` combinations of parent sets and keeps the acyclic ones (vectorised; 161,051
    combinations and 13,956 DAGs for ``n = 5``). Cached.
    """
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 6:
        raise ValueError(f"n must be an int in [1, 6] (the enumeration is P**n combinations), got {n!r}")
    if isinstance(max_parents, bool) or not isinstance(max_parents, int) or not 0 <= max_parents <= 2:
        raise ValueError(f"max_parents must be 0, 1 or 2, got {max_parents!r}")
    sets = [parent_sets(n, j, max_parents) for j in range(n)]
    P = len(sets[0])
    members = np.full((n, P, 2), -1, dtype=np.int64)
    onehot = np.zeros((n, P, n), dtype=bool)  # onehot[j, p, i]: i is in parent set p of j
    for j in range(n):
        for p, s in enumerate(sets[j]):
            members[j, p, :len(s)] = s
            onehot[j, p, list(s)] = True
    combos = np.stack(np.meshgrid(*[np.arange(P)] * n, indexing="ij"), -1).reshape(-1, n)
    adj = onehot[np.arange(n)[None, :], combos].transpose(0, 2, 1)  # [C, i, j]: i -> j
    anc = ancestors(adj)
    ok = ~anc[:, np.arange(n), np.arange(n)].any(1)
    return StructureSpace(n, torch.as_tensor(combos[ok]), torch.as_tensor(adj[ok]), torch.as_tensor(members))


def count_structures(split: str | None = None, n: int = 5, target: int = 3, goal: int = 4,
                     at_least_one_edge: bool = True, train_rule: str = "ancestor") -> int:
    """How many structures the environment's generator can produce.

    ``split=None``: every DAG with at most 2 parents per variable (at least one edge if ``at_least_one_edge``;
    the generator always has 1-4 independent variables, so at least one edge). ``"train"``: those
    :func:`train_keep` keeps under ``train_rule``. ``"test"``: those in which E has a parent, every parent of E is
    D or a descendant of D, and E has no children (the test generator puts E last).
    """
    space = enumerate_structures(n)
    adj = space.adj.numpy()
    keep = adj.any((1, 2)) if at_least_one_edge else np.ones(len(adj), dtype=bool)
    if split is None:
        return int(keep.sum())
    anc = ancestors(adj)
    par = adj[:, :, goal]
    if split == "train":
        keep &= train_keep(adj, anc, train_rule, target, goal)
    elif split == "test":
        down = anc[:, target, :].copy()
        down[:, target] = True
        keep &= par.any(1) & ~(par & ~down).any(1) & ~adj[:, goal, :].any(1)
    else:
        raise ValueError(f"split must be None, 'train' or 'test', got {split!r}")
    return int(keep.sum())


def train_keep(adj: np.ndarray, anc: np.ndarray, rule: str = "ancestor", target: int = 3, goal: int = 4) -> np.ndarray:
    """Which structures ``adj [m, n, n]`` (ancestors ``anc``) are training structures: ``"ancestor"`` -- D is not an
    ancestor of E (no causal path D -> E at all); ``"literal"`` -- no parent of E is a proper descendant of D, as
    the appendix words it ("the test goal variable is constrained to not have parents that are descendants of the
    test intervention target"), which still allows the edge D -> E."""
    if rule == "ancestor":
        return ~anc[:, target, goal]
    if rule == "literal":
        return ~(adj[:, :, goal] & anc[:, target, :]).any(1)
    raise ValueError(f"train_rule must be 'ancestor' or 'literal', got {rule!r}")


def count_up_to_relabelling(adj: np.ndarray, fixed: tuple[int, ...] = (3, 4), connected: bool = False) -> int:
    """Number of distinct structures among ``adj [S, n, n]`` when the variables not in ``fixed`` are
    interchangeable (graphs equal up to relabelling them count once); ``connected=True`` keeps only weakly
    connected graphs. Used to compare our labelled count with the paper's 1,277 (see docs/causal-dag.md)."""
    adj = np.asarray(adj, dtype=bool)
    n = adj.shape[-1]
    if connected:
        und = adj | adj.transpose(0, 2, 1) | np.eye(n, dtype=bool)[None]
        adj = adj[ancestors(und)[:, 0].all(1)]
    free = [i for i in range(n) if i not in fixed]
    bits = 1 << np.arange(n * n, dtype=np.int64)
    codes = []
    for perm in itertools.permutations(free):
        p = np.arange(n)
        p[free] = perm
        q = adj[:, p][:, :, p]  # relabel: new variable k is old variable p[k]
        codes.append((q.reshape(len(q), -1) * bits).sum(1))
    return int(len(np.unique(np.min(np.stack(codes), 0))))
