"""Blicket task constants and episode sampling: the blickets, the rule, the context panels, the objects.

Every episode is drawn from **one block of uniforms** per episode (``rng.random(M)``), so ``B`` episodes from
one generator (``rng.random((B, M))``) are the same as ``B`` single envs drawing one episode at a time from
it, and a vector env whose rows own their generators resets a row with one cheap call. The designed ACRE
context (``context="acre"``) draws further from the generator after the block.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import torch

from causalplay.core.exact import log_likelihood
from causalplay.core.rules import Rule, make_rule

from .machine import oracle_space, p_lit
from .task import RewardSpec

__all__ = ["TaskConfig", "Episodes", "sample_episodes", "acre_types", "OBJECT_POOL", "ACRE_TYPES"]

SHAPES = ("cube", "sphere", "cylinder")
MATERIALS = ("metal", "rubber")
COLORS = ("gray", "red", "blue", "green", "brown", "cyan", "purple", "yellow")
#: The CLEVR attribute pool: 3 shapes x 2 materials x 8 colours = 48 distinct objects.
OBJECT_POOL = tuple((s, m, c) for s in SHAPES for m in MATERIALS for c in COLORS)

ACRE_TYPES = ("direct", "indirect", "screening_off", "backward_blocking")


@dataclass(frozen=True)
class TaskConfig:
    """Every constant of a Blicket task.

    Parameters
    ----------
    name : str
    n_objects : int
        Objects on the table (9 in IVRE/EST).
    n_blickets : tuple of int
        Allowed blicket counts; each episode draws one uniformly, then a uniform set of that size.
    n_context : int
        Context panels shown before the agent's trials.
    context_size : (int, int)
        Inclusive range of objects per context panel (size uniform in the range, then a uniform subset).
    context : {"random", "acre"}
        Context sampling regime; ``"acre"`` picks, out of ``acre_candidates`` structured candidates and one
        designed from the truth, the one that shows the most ACRE evidence types (see :func:`acre_types`).
    horizon : int
        ``T``, actions per episode.
    rules : tuple of Rule
        Rules the episode's machine is drawn from (uniformly); one rule in IVRE/EST.
    solve_reward, step_cost, tol : float
        Solving gives ``+solve_reward`` and ends the episode; otherwise the step gives
        ``-step_cost - JSD(oracle, belief)``. Solved means every belief is strictly within ``tol`` of the truth.
    reward_slots : int
        Entries of the vectors the official JSD compares (48, the CLEVR pool; see :mod:`causalplay.envs.reward`).
    """

    name: str = "IVRE"
    n_objects: int = 9
    n_blickets: tuple[int, ...] = (1, 2, 3, 4)
    n_context: int = 4
    context_size: tuple[int, int] = (1, 4)
    context: str = "random"
    horizon: int = 10
    rules: tuple[Rule, ...] = field(default_factory=lambda: (make_rule("disjunctive"),))
    solve_reward: float = 20.0
    step_cost: float = 1.0
    tol: float = 0.5
    acre_candidates: int = 4
    reward_slots: int = 48

    def __post_init__(self) -> None:
        n = self.n_objects
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 16:
            raise ValueError(f"n_objects must be an integer in [1, 16], got {n!r}")
        counts = tuple(int(c) for c in self.n_blickets)
        if not counts or any(not 0 <= c <= n for c in counts):
            raise ValueError(f"n_blickets must be counts in [0, n_objects={n}], got {self.n_blickets!r}")
        object.__setattr__(self, "n_blickets", counts)
        lo, hi = self.context_size
        if not 1 <= lo <= hi <= n:
            raise ValueError(f"context_size must be (lo, hi) with 1 <= lo <= hi <= {n}, got {self.context_size!r}")
        if not 0 <= self.n_context <= self.horizon:
            raise ValueError(f"need 0 <= n_context <= horizon, got n_context={self.n_context}, "
                             f"horizon={self.horizon}")
        if self.context not in ("random", "acre"):
            raise ValueError(f"context must be 'random' or 'acre', got {self.context!r}")
        if not n <= self.reward_slots:
            raise ValueError(f"reward_slots must be >= n_objects={n}, got {self.reward_slots!r}")
        rules = tuple(make_rule(r) for r in self.rules)
        if not rules:
            raise ValueError("rules must hold at least one rule")
        object.__setattr__(self, "rules", rules)

    @property
    def rule_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rules)

    @property
    def template(self) -> str:
        """Episode template = rule family x context regime (used by the benchmark's splits)."""
        return f"{'+'.join(self.rule_names)}|{self.context}"

    @property
    def rewards(self) -> RewardSpec:
        return RewardSpec(self.solve_reward, self.step_cost, self.tol, self.reward_slots)

    @property
    def block_size(self) -> int:
        """Uniforms drawn per episode: rule, count, object order, machine (T), context (C sizes + C x N ranks,
        random context only), objects (48)."""
        N, C = self.n_objects, self.n_context
        return 2 + N + self.horizon + (C + C * N if self.context == "random" else 0) + len(OBJECT_POOL)


@dataclass
class Episodes:
    """``n`` sampled episodes (numpy): ``rule_idx [n]``, ``counts [n]``, ``blickets [n, N]`` bool,
    ``uniforms [n, T]`` (the machine's draw for each panel), ``context [n, C, N]`` bool, ``objects [n, N]``
    (indices into :data:`OBJECT_POOL`)."""

    rule_idx: np.ndarray
    counts: np.ndarray
    blickets: np.ndarray
    uniforms: np.ndarray
    context: np.ndarray
    objects: np.ndarray

    @staticmethod
    def concat(parts: list[Episodes]) -> Episodes:
        return Episodes(*(np.concatenate([getattr(p, f.name) for p in parts])
                          for f in dataclasses.fields(Episodes)))


def _rank(u: np.ndarray) -> np.ndarray:
    """A uniform random rank (0..K-1) per entry of the last axis."""
    return u.argsort(-1).argsort(-1)


def sample_episodes(config: TaskConfig, rng: np.random.Generator, n: int) -> Episodes:
    """Draw ``n`` episodes of ``config`` from ``rng`` (see the module docstring for the draw order)."""
    cfg, N, C, T = config, config.n_objects, config.n_context, config.horizon
    u = rng.random((n, cfg.block_size))
    i = 0

    def take(k: int) -> np.ndarray:
        nonlocal i
        i += k
        return u[:, i - k:i]

    R, K = len(cfg.rules), len(cfg.n_blickets)
    rule_idx = np.minimum((take(1)[:, 0] * R).astype(np.int64), R - 1)
    counts = np.asarray(cfg.n_blickets)[np.minimum((take(1)[:, 0] * K).astype(np.int64), K - 1)]
    blickets = _rank(take(N)) < counts[:, None]
    uniforms = take(T)
    if cfg.context == "random" and C:
        lo, hi = cfg.context_size
        size = lo + np.minimum((take(C) * (hi - lo + 1)).astype(np.int64), hi - lo)
        context = _rank(take(C * N).reshape(n, C, N)) < size[..., None]
    else:
        context = np.zeros((n, C, N), dtype=bool)
    objects = u[:, i:i + len(OBJECT_POOL)].argsort(-1)[:, :N]
    if cfg.context == "acre" and C:
        context = _acre_panels(cfg, rng, blickets, rule_idx)
    return Episodes(rule_idx, counts, blickets, uniforms, context, objects)


def acre_types(panels: np.ndarray, lit: np.ndarray, rule: Rule) -> np.ndarray:
    """Which ACRE evidence types a set of context panels shows, under ``rule`` (noiseless version).

    Parameters
    ----------
    panels : bool ``[B, C, N]``
    lit : bool ``[B, C]``
    rule : Rule

    Returns
    -------
    bool ``[B, 4]`` for :data:`ACRE_TYPES`. With ``m`` the oracle marginals after the panels:

    * direct -- two panels differ by one object ``x`` and their outcomes differ (``x``'s effect is seen);
    * indirect -- an object is a certain blicket (``m = 1``) without such a pair (inferred across panels);
    * screening_off -- a certain non-blicket (``m = 0``) appeared in a lit panel (co-occurrence says blicket);
    * backward_blocking -- an uncertain object (``0 < m < 1``) appeared in a lit panel with a certain blicket.
    """
    B, C, N = panels.shape
    clean = dataclasses.replace(rule, noise=0.0)
    space = oracle_space(clean, N)
    m = np.empty((B, N))
    for start in range(0, B, 4096):  # chunks bound the [b, C, S] temporaries
        sl = slice(start, start + 4096)
        ll = space.log_prior + log_likelihood(space, torch.as_tensor(panels[sl], dtype=space.dtype),
                                              torch.as_tensor(lit[sl], dtype=space.dtype))
        m[sl] = (torch.softmax(ll, -1) @ space.sets).numpy()
    sure_b, sure_n = m > 1 - 1e-6, m < 1e-6
    unsure = ~(sure_b | sure_n)
    out = np.zeros((B, 4), dtype=bool)
    direct_obj = np.zeros((B, N), dtype=bool)
    for i in range(C):
        for j in range(C):
            diff = panels[:, j] & ~panels[:, i]
            one = (diff.sum(-1) == 1) & ~(panels[:, i] & ~panels[:, j]).any(-1) & (lit[:, i] != lit[:, j])
            direct_obj |= diff & one[:, None]
    out[:, 0] = direct_obj.any(-1)
    out[:, 1] = (sure_b & ~direct_obj).any(-1)
    in_lit = (panels & lit[:, :, None]).any(1)  # [B, N]
    out[:, 2] = (sure_n & in_lit).any(-1)
    lit_with_sure = (panels & lit[:, :, None] & (panels & sure_b[:, None, :]).any(-1, keepdims=True)).any(1)
    out[:, 3] = (unsure & lit_with_sure).any(-1)
    return out


def _acre_panels(cfg: TaskConfig, rng: np.random.Generator, blickets: np.ndarray,
                 rule_idx: np.ndarray) -> np.ndarray:
    """ACRE-style context: a designed candidate built from the truth plus random structured candidates;
    the one showing the most ACRE evidence types (under the noiseless rule) is kept, ties to the first."""
    N, C = cfg.n_objects, cfg.n_context
    B, K = blickets.shape[0], cfg.acre_candidates
    lo, hi = cfg.context_size
    cand = np.zeros((B, K + 1, C, N), dtype=bool)
    cand[:, 0] = _designed_panels(cfg, rng, blickets)
    for c in range(0, C, 2):
        # Panel c: random, size lo..hi-1 so that one more object still fits; panel c+1 adds one object.
        size = rng.integers(lo, max(lo, hi - 1) + 1, size=(B, K))
        rank = _rank(rng.random((B, K, N)))
        cand[:, 1:, c] = rank < size[..., None]
        if c + 1 < C:
            cand[:, 1:, c + 1] = rank < np.minimum(size + 1, hi)[..., None]
    K += 1
    flat = torch.as_tensor(cand.reshape(B * K, C, N))
    ridx = torch.as_tensor(np.repeat(rule_idx, K))
    k = (flat & torch.as_tensor(np.repeat(blickets, K, axis=0))[:, None, :]).sum(-1)
    # Candidates are judged on the noiseless machine (what the panels would show without flips).
    clean = tuple(dataclasses.replace(r, noise=0.0) for r in cfg.rules)
    lit = (p_lit(clean, ridx[:, None].expand_as(k), k) > 0.5).numpy()
    score = np.zeros(B * K)
    for r, rule in enumerate(cfg.rules):
        sel = (ridx == r).numpy()
        if sel.any():
            score[sel] = acre_types(cand.reshape(B * K, C, N)[sel], lit[sel], rule).sum(-1)
    score = score.reshape(B, K)
    score[~cand[:, 0].any(-1).all(-1), 0] = -1.0  # the design was infeasible for this episode
    best = score.argmax(-1)  # first best candidate: deterministic
    out = cand[np.arange(B), best]
    # Show the panels in a random order so their position carries no cue.
    order = rng.random((B, C)).argsort(-1)
    return np.take_along_axis(out, order[..., None], axis=1)


def _designed_panels(cfg: TaskConfig, rng: np.random.Generator, blickets: np.ndarray) -> np.ndarray:
    """The ACRE recipe with panels of >= 2 objects (disjunctive logic; empty where infeasible).

    P (non-blickets only, unlit), P + b1 (lit: *direct* for b1, *screening-off* for P), P - p + b2 (lit:
    b2 *indirect*), b1 + fresh objects Y (lit: Y *backward-blocked*). Needs >= 2 blickets, >= 2
    non-blickets; with C != 4 only the first C panels are used.
    """
    N, C = cfg.n_objects, cfg.n_context
    lo, hi = cfg.context_size
    B = blickets.shape[0]
    out = np.zeros((B, C, N), dtype=bool)
    perm = (rng.random((B, N)) + 2.0 * blickets).argsort(-1)  # non-blickets first, each group shuffled
    u = rng.random((B, 3))
    for b in range(B):
        m = N - int(blickets[b].sum())
        s_max = min(hi - 1, m)
        if m < 2 or N - m < 2 or s_max < max(lo, 2) or C < 1:
            continue
        s = max(lo, 2) + int(u[b, 0] * (s_max - max(lo, 2) + 1))
        P, b1, b2 = perm[b, :s], perm[b, m], perm[b, m + 1]
        rest = np.concatenate([perm[b, s:m], perm[b, m + 2:]])
        rest = rest[np.argsort(rng.random(rest.size))]
        y = max(1, min(len(rest), hi - 1, 1 + int(u[b, 1] * (hi - 1))))
        panels = [P, np.append(P, b1), np.append(P[1:], b2), np.append(rest[:y], b1)]
        for c, objs in enumerate(panels[:C]):
            out[b, c, objs] = True
    return out
