"""The Blicket task, batched in torch: episode sampling, the machine, the oracle and the reward.

One :class:`BlicketBatch` steps ``B`` episodes in lock-step; the gymnasium class
:class:`causalplay.envs.blicket.BlicketEnv` runs one episode on top of the same code (``B = 1``). Everything
random is drawn at :meth:`BlicketBatch.reset` from one ``numpy.random.Generator`` (episode, context panels and
one uniform per step for the machine), so the same seed gives the same episode whatever the agent does, and
two agents run on the same seed face the same machines (common random numbers, good for paired tests).

Timing (all tasks with context panels, ``T = horizon`` steps, ``C = n_context``)
--------------------------------------------------------------------------------
* The observation before action ``t`` (``t = 1..T``) shows **panel t**: panels ``1..C`` are the context
  panels, panel ``t > C`` is the outcome of the trial the agent proposed in action ``t - 1``.
* Action ``t`` holds a trial and a belief. The belief is scored against the oracle computed from panels
  ``1..t`` (exactly what the agent has seen). The trial is run only in actions ``C..T-1`` (it becomes
  panel ``t + 1``); in actions ``1..C-1`` and ``T`` it is ignored. IVRE: 4 context panels, 6 trials.
* Context Acc / R count actions ``1..C``; episode Acc / R all ``T`` actions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import torch

from causalplay.exact import log_likelihood, observe
from causalplay.rules import Rule, make_rule
from causalplay.spec import HypothesisSpace, WorldSpec

__all__ = ["TaskConfig", "BlicketBatch", "jsd", "oracle_space", "acre_types", "validate_action", "OBJECT_POOL"]

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
    n_objects : int
        Objects on the table (9 in IVRE/EST).
    n_blickets : tuple of int
        Allowed blicket counts; each episode draws one uniformly, then a uniform set of that size.
    n_context : int
        Context panels shown before the agent's trials.
    context_size : (int, int)
        Inclusive range of objects per context panel (size uniform in the range, then a uniform subset).
    context : {"random", "acre"}
        Context sampling regime; ``"acre"`` picks, out of ``acre_candidates`` structured candidates, the one
        that shows the most ACRE evidence types (see :func:`acre_types`).
    horizon : int
        ``T``, actions per episode.
    rules : tuple of Rule
        Rules the episode's machine is drawn from (uniformly); one rule in IVRE/EST.
    solve_reward, step_cost, tol : float
        Solving gives ``+solve_reward`` and ends the episode; otherwise the step gives
        ``-step_cost - JSD(oracle, belief)``. Solved means every belief is strictly within ``tol`` of the truth.
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


#: The oracle runs in float32: its values are fractions k / 2^N (exact in float32 for N <= 16 up to rounding
#: of the final division) and half the memory traffic of float64 on the env's hot path.
ORACLE_DTYPE = torch.float32


def oracle_space(rule: Rule, n_objects: int, dtype: torch.dtype = ORACLE_DTYPE) -> HypothesisSpace:
    """The oracle's space: all ``2**N`` blicket sets, uniform prior, one (the true) rule."""
    return HypothesisSpace.build(WorldSpec(n_objects, (rule,), blicket_prior=0.5), dtype=dtype)


def jsd(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon **distance** (sqrt of the divergence, natural log) between rows of ``p`` and ``q``.

    Rows are normalised to sum 1 first; an all-zero row counts as uniform (the only normalisation that
    keeps the distance defined). Matches ``scipy.spatial.distance.jensenshannon``.
    """
    def norm(x: torch.Tensor) -> torch.Tensor:
        x = x.to(torch.float64)
        s = x.sum(-1, keepdim=True)
        return torch.where(s > 0, x / s.clamp_min(1e-300), torch.full_like(x, 1.0 / x.shape[-1]))

    p, q = norm(p), norm(q)
    m = 0.5 * (p + q)
    kl = lambda a: (torch.special.xlogy(a, a) - torch.special.xlogy(a, m)).sum(-1)  # noqa: E731
    return torch.sqrt((0.5 * kl(p) + 0.5 * kl(q)).clamp_min(0.0))


def validate_action(action, n_values: int) -> torch.Tensor:
    """Check an action batch ``[B, n_values]`` (or ``[n_values]``): finite, in [0, 1]; returns float64 tensor."""
    if isinstance(action, torch.Tensor):
        a = action.detach().to(torch.float64).cpu()
    else:
        try:
            a = torch.as_tensor(np.asarray(action, dtype=np.float64))
        except (TypeError, ValueError):
            raise TypeError(f"action must be an array of numbers in [0, 1], got {action!r}") from None
    if a.shape[-1:] != (n_values,) or a.ndim > 2:
        raise ValueError(f"action must have shape ({n_values},) (trial probabilities then belief probabilities)"
                         f" or (B, {n_values}), got shape {tuple(a.shape)}")
    if bool(torch.isnan(a).any()):
        raise ValueError(f"action contains NaN: {a.tolist()}")
    if bool(((a < 0) | (a > 1)).any()):
        bad = a[(a < 0) | (a > 1)].flatten()[0].item()
        raise ValueError(f"action values must lie in [0, 1], got {bad!r}")
    return a


def _p_lit(rules: tuple[Rule, ...], rule_idx: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    # The machine's response comes from rule.p_lit, the one place the likelihood lives.
    p = torch.zeros_like(k, dtype=torch.float64)
    for r, rule in enumerate(rules):
        sel = rule_idx == r
        if bool(sel.any()):
            p[sel] = rule.p_lit(k[sel].to(torch.float64))
    return p


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


class BlicketBatch:
    """``B`` episodes of a Blicket task stepped together (torch, CPU by default).

    Parameters
    ----------
    config : TaskConfig
    batch_size : int
    rng : numpy.random.Generator
        Every random draw of the episodes comes from it (at :meth:`reset`).

    Attributes after :meth:`reset`
    ------------------------------
    blickets : bool Tensor ``[B, N]`` (ground truth; never in the observation)
    rule_idx : long Tensor ``[B]``
    n_blickets : long Tensor ``[B]`` (announced in the observation)
    panels : bool Tensor ``[B, T, N]``, lit : bool Tensor ``[B, T]`` -- panel ``k`` at index ``k - 1``
    t : int -- actions taken so far; done : bool Tensor ``[B]``; solved_at : long Tensor ``[B]`` (0 = not yet)
    """

    def __init__(self, config: TaskConfig, batch_size: int, rng: np.random.Generator):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.config = config
        self.B = batch_size
        self.rng = rng
        self._spaces = [oracle_space(r, config.n_objects) for r in config.rules]

    @property
    def rules(self) -> tuple[Rule, ...]:
        return self.config.rules

    @property
    def n_context(self) -> int:
        return self.config.n_context

    @property
    def horizon(self) -> int:
        return self.config.horizon

    # -- layout ------------------------------------------------------------------------------------------
    @property
    def obs_size(self) -> int:
        return self.config.n_objects + 4

    @property
    def action_size(self) -> int:
        return 2 * self.config.n_objects

    # -- sampling ----------------------------------------------------------------------------------------
    def reset(self) -> torch.Tensor:
        cfg, B, N, rng = self.config, self.B, self.config.n_objects, self.rng
        T = cfg.horizon
        rule_idx = rng.integers(0, len(cfg.rules), size=B)
        counts = np.asarray(cfg.n_blickets)[rng.integers(0, len(cfg.n_blickets), size=B)]
        order = rng.random((B, N)).argsort(-1).argsort(-1)  # a uniform random rank per object
        blickets = order < counts[:, None]
        uniforms = rng.random((B, T))
        panels = np.zeros((B, T, N), dtype=bool)
        lit = np.zeros((B, T), dtype=bool)
        C = cfg.n_context
        if C:
            if cfg.context == "random":
                ctx = self._random_panels(B, C)
            else:
                ctx = self._acre_panels(blickets, rule_idx)
            panels[:, :C] = ctx
        self.blickets = torch.as_tensor(blickets)
        self.rule_idx = torch.as_tensor(rule_idx)
        self.n_blickets = torch.as_tensor(counts)
        self.uniforms = torch.as_tensor(uniforms)
        self.panels = torch.as_tensor(panels)
        self.lit = torch.as_tensor(lit)
        for k in range(C):
            self.lit[:, k] = self._machine(self.panels[:, k], k)
        self.t = 0
        self.done = torch.zeros(B, dtype=torch.bool)
        self.solved_at = torch.zeros(B, dtype=torch.long)
        self.log_w = torch.stack([s.log_prior for s in self._spaces])[self.rule_idx].clone()
        if C:
            self._oracle_update(0)
        return self.observation()

    def _random_panels(self, B: int, C: int) -> np.ndarray:
        lo, hi = self.config.context_size
        N = self.config.n_objects
        size = self.rng.integers(lo, hi + 1, size=(B, C))
        rank = self.rng.random((B, C, N)).argsort(-1).argsort(-1)
        return rank < size[..., None]

    def _acre_panels(self, blickets: np.ndarray, rule_idx: np.ndarray) -> np.ndarray:
        """ACRE-style context: a designed candidate built from the truth plus random structured candidates;
        the one showing the most ACRE evidence types (under the noiseless rule) is kept, ties to the first."""
        cfg, rng, N, C = self.config, self.rng, self.config.n_objects, self.config.n_context
        B, K = blickets.shape[0], cfg.acre_candidates
        lo, hi = cfg.context_size
        cand = np.zeros((B, K + 1, C, N), dtype=bool)
        cand[:, 0] = self._designed_panels(blickets)
        for c in range(0, C, 2):
            # Panel c: random, size lo..hi-1 so that one more object still fits; panel c+1 adds one object.
            size = rng.integers(lo, max(lo, hi - 1) + 1, size=(B, K))
            rank = rng.random((B, K, N)).argsort(-1).argsort(-1)
            cand[:, 1:, c] = rank < size[..., None]
            if c + 1 < C:
                cand[:, 1:, c + 1] = rank < np.minimum(size + 1, hi)[..., None]
        K += 1
        flat = torch.as_tensor(cand.reshape(B * K, C, N))
        ridx = torch.as_tensor(np.repeat(rule_idx, K))
        k = (flat & torch.as_tensor(np.repeat(blickets, K, axis=0))[:, None, :]).sum(-1)
        # Candidates are judged on the noiseless machine (what the panels would show without flips).
        clean = tuple(dataclasses.replace(r, noise=0.0) for r in cfg.rules)
        lit = (_p_lit(clean, ridx[:, None].expand_as(k), k) > 0.5).numpy()
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

    def _designed_panels(self, blickets: np.ndarray) -> np.ndarray:
        """The ACRE recipe with panels of >= 2 objects (disjunctive logic; empty where infeasible).

        P (non-blickets only, unlit), P + b1 (lit: *direct* for b1, *screening-off* for P), P - p + b2 (lit:
        b2 *indirect*), b1 + fresh objects Y (lit: Y *backward-blocked*). Needs >= 2 blickets, >= 2
        non-blickets; with C != 4 only the first C panels are used.
        """
        cfg, rng, N, C = self.config, self.rng, self.config.n_objects, self.config.n_context
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

    # -- the machine and the oracle ------------------------------------------------------------------------
    def _machine(self, trial: torch.Tensor, k_index: int) -> torch.Tensor:
        k = (trial & self.blickets).sum(-1)
        return self.uniforms[:, k_index] < _p_lit(self.config.rules, self.rule_idx, k)

    def _oracle_update(self, k_index: int, rows: torch.Tensor | None = None) -> None:
        """Add panel ``k_index`` to the oracle of ``rows`` (bool ``[B]``; all when None). Ended episodes are
        skipped: their oracle is never read again."""
        trial = self.panels[:, k_index].to(ORACLE_DTYPE)
        lit = self.lit[:, k_index].to(ORACLE_DTYPE)
        if len(self._spaces) == 1 and (rows is None or bool(rows.all())):
            self.log_w = observe(self._spaces[0], self.log_w, trial, lit, check=False)
            return
        for r, space in enumerate(self._spaces):
            sel = self.rule_idx == r if rows is None else (self.rule_idx == r) & rows
            idx = torch.nonzero(sel).flatten()
            if len(idx):
                self.log_w[idx] = observe(space, self.log_w[idx], trial[idx], lit[idx], check=False)

    def oracle(self) -> torch.Tensor:
        """``[B, N]`` oracle marginals from the panels shown so far (uniform prior over all 2^N sets)."""
        sets = self._spaces[0].sets
        return (self.log_w.exp() @ sets).to(torch.float64)

    # -- the loop ------------------------------------------------------------------------------------------
    def current_panel(self) -> int:
        """Index (0-based) of the panel in the current observation."""
        return min(self.t, self.config.horizon - 1)

    def observation(self) -> torch.Tensor:
        """``[B, N + 4]`` float32: on (N), lit, announced count / N, panel number / T, trial phase (0/1)."""
        cfg = self.config
        k = self.current_panel()
        obs = torch.empty(self.B, self.obs_size, dtype=torch.float32)
        obs[:, : cfg.n_objects] = self.panels[:, k].float()
        obs[:, cfg.n_objects] = self.lit[:, k].float()
        obs[:, cfg.n_objects + 1] = self.n_blickets.float() / cfg.n_objects
        obs[:, cfg.n_objects + 2] = (k + 1) / cfg.horizon
        obs[:, cfg.n_objects + 3] = float(k >= cfg.n_context)
        return obs

    def step(self, action) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Apply ``action [B, 2N]``; returns ``obs, reward, terminated (solved), truncated (reached T)``.

        Episodes already done get reward 0 and stay done; their trial is not run.
        """
        cfg, N = self.config, self.config.n_objects
        if self.t >= cfg.horizon:
            raise RuntimeError(f"all episodes ended at step T={cfg.horizon}; call reset()")
        a = validate_action(action, 2 * N)
        if a.ndim == 1:
            a = a[None]
        if a.shape[0] != self.B:
            raise ValueError(f"action batch has {a.shape[0]} rows, expected batch_size={self.B}")
        trial, belief = a[:, :N] > 0.5, a[:, N:]
        active = ~self.done
        self.t += 1
        solved = active & ((belief - self.blickets.double()).abs() < cfg.tol).all(-1)
        penalty = torch.full((self.B,), -cfg.step_cost, dtype=torch.float64)
        live = torch.nonzero(active & ~solved).flatten()
        if len(live):
            penalty[live] -= jsd((self.log_w[live].exp() @ self._spaces[0].sets).double(), belief[live])
        reward = torch.where(solved, torch.full_like(penalty, cfg.solve_reward), penalty)
        reward = torch.where(active, reward, torch.zeros_like(reward))
        self.solved_at[solved] = self.t
        if self.t < cfg.horizon:
            if self.t >= cfg.n_context:
                # Panel t+1 is the outcome of this action's trial.
                self.panels[:, self.t] = trial & (active & ~solved)[:, None]
                self.lit[:, self.t] = self._machine(self.panels[:, self.t], self.t)
            self._oracle_update(self.t, active & ~solved)
        truncated = active & ~solved & (self.t >= cfg.horizon)
        self.done = self.done | solved | truncated
        return self.observation(), reward, solved, truncated
