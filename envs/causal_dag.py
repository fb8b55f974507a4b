"""Causal DAG worlds (Lampinen et al. 2023, appendix A.1): a batched torch core and a gymnasium env.

:class:`CausalDAGBatch` steps ``B`` episodes in lock-step (a :class:`causalplay.envs.task.Task`);
:class:`CausalDAGEnv` runs one episode on the same code (``B = 1``). See the class docstrings for every choice
the paper's text leaves open, and ``docs/causal-dag.md``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces

from causalplay.core.dag import GOAL_ROLE, ROLE_NAMES, TARGET_ROLE, ancestors, leaky, leaky_inv, simulate, train_keep
from causalplay.core.ties import argmax_tol

from .task import ObsField, ObsLayout, PlayerInfo, positive_int

__all__ = ["DAGConfig", "DAGInfo", "DAGRewards", "CausalDAGBatch", "CausalDAGEnv", "leaky", "leaky_inv", "simulate",
           "structure_key", "ROLE_NAMES", "GOAL_ROLE", "TARGET_ROLE", "make_adaptive",
           "dag_batch", "adaptive_batch"]

def structure_key(parents: np.ndarray) -> str:
    """A stable text key of a 5-role structure (adjacency ``[5, 5]``, ``parents[p, j]`` = edge p -> j),
    e.g. ``"A>C,B>C,C>E"``; used for PHYRE-style stable-hash folds."""
    p = np.asarray(parents, dtype=bool)
    return ",".join(f"{ROLE_NAMES[i]}>{ROLE_NAMES[j]}" for j in range(p.shape[1]) for i in range(p.shape[0])
                    if p[i, j]) or "-"


@dataclass(frozen=True)
class DAGConfig:
    """Every constant of a causal-DAG task (see :class:`CausalDAGEnv` for their meaning)."""

    n_variables: int = 5
    n_explore: int = 5
    split: str = "train"
    linear: bool = False
    adaptive: bool = False
    intervention_value: float = 4.0
    explore_reward: float = 0.0
    noise_mean: float = 0.5
    noise_sd: float = 0.25
    noise_min: float = 0.05
    weight_max: float = 2.0
    n_mc: int = 256
    fold: str | None = None
    train_rule: str = "ancestor"
    legacy_goal_obs: bool = False

    def __post_init__(self) -> None:
        n_roles = len(ROLE_NAMES)
        if self.split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', got {self.split!r}")
        n = self.n_variables
        if isinstance(n, bool) or not isinstance(n, int):
            raise ValueError(f"n_variables must be an int, got {n!r}")
        if not self.adaptive and n != n_roles:
            raise ValueError(f"the DAG task has n_variables={n_roles} (roles A-E); got {n!r} "
                             "(use adaptive=True for more variables, half of them relevant)")
        if self.adaptive and n != 2 * n_roles:
            raise ValueError(f"the adaptive task has n_variables={2 * n_roles} (5 relevant); got {n!r}")
        if isinstance(self.n_explore, bool) or not isinstance(self.n_explore, int) or self.n_explore < 0:
            raise ValueError(f"n_explore must be an int >= 0, got {self.n_explore!r}")
        if not self.n_mc >= 1:
            raise ValueError(f"n_mc must be >= 1, got {self.n_mc!r}")
        if self.train_rule not in ("ancestor", "literal"):
            raise ValueError(f"train_rule must be 'ancestor' or 'literal', got {self.train_rule!r}")
        if self.fold not in (None, "train", "dev", "test"):
            raise ValueError(f"fold must be None, 'train', 'dev' or 'test', got {self.fold!r}")

    @property
    def horizon(self) -> int:
        """Actions per episode: ``n_explore`` exploration interventions + 1 goal-phase intervention."""
        return self.n_explore + 1

    @property
    def obs_layout(self) -> dict[str, slice]:
        """Named slices of the observation vector."""
        n = self.n_variables
        names = ["prev_values", "prev_intervention", "outcome", "next_values", "goal"]
        if self.adaptive:
            names.append("relevant")
        return {k: slice(i * n, (i + 1) * n) for i, k in enumerate(names)}

    @property
    def obs_size(self) -> int:
        return self.n_variables * len(self.obs_layout)


def sample_structures(rng: np.random.Generator, size: int, split: str = "train",
                      train_rule: str = "ancestor") -> np.ndarray:
    """Draw ``size`` 5-role DAGs (adjacency ``[size, 5, 5]`` bool, ``[p, j]`` = edge p -> j) by the paper's
    generator, rejecting until the split's constraint holds.

    Generator: a uniform random order of A-E (``train``) or of A-D followed by E (``test``); the number ``i`` of
    independent variables uniform in ``{1, .., 4}``; the first ``i`` in the order get no parents; every other
    variable gets 1 or 2 parents (uniformly; 1 when only one is earlier) uniformly from those earlier in the
    order. ``train`` keeps a draw iff D is not an ancestor of E (``train_rule="ancestor"``) or iff no parent of E
    is a proper descendant of D (``"literal"``, the appendix's words; :func:`causalplay.core.dag.train_keep`);
    ``test`` iff E has at least one parent and every parent of E is D or a descendant of D.
    """
    n = len(ROLE_NAMES)
    out = np.zeros((size, n, n), dtype=bool)
    todo = np.arange(size)
    while todo.size:
        m = todo.size
        order = np.argsort(rng.random((m, n)), axis=1)
        if split == "test":
            order = np.concatenate([np.argsort(rng.random((m, n - 1)), axis=1), np.full((m, 1), n - 1)], 1)
        n_roots = rng.integers(1, n, size=m)
        two = rng.random((m, n)) < 0.5
        keys = rng.random((m, n, n))
        adj = np.zeros((m, n, n), dtype=bool)
        for k in range(1, n):  # position k in the order (a loop over 4 positions, not over episodes)
            child = order[:, k]
            earlier = np.full((m, n), np.inf)
            rows = np.arange(m)[:, None]
            earlier[rows, order[:, :k]] = keys[:, k, :][rows, order[:, :k]]
            rank = np.argsort(earlier, axis=1)
            n_par = np.where(two[:, k] & (k >= 2), 2, 1) * (k >= n_roots)
            for r in range(2):
                sel = n_par > r
                adj[np.nonzero(sel)[0], rank[sel, r], child[sel]] = True
        anc = ancestors(adj)
        if split == "train":
            ok = train_keep(adj, anc, train_rule, TARGET_ROLE, GOAL_ROLE)
        else:
            par = adj[:, :, GOAL_ROLE]
            down = anc[:, TARGET_ROLE, :].copy()
            down[:, TARGET_ROLE] = True
            ok = par.any(1) & ~(par & ~down).any(1)
        out[todo[ok]] = adj[ok]
        todo = todo[~ok]
    return out


def _sample_weights(rng: np.random.Generator, adj: np.ndarray, split: str, wmax: float) -> np.ndarray:
    """Uniform ``[-wmax, wmax]`` weights on the edges; at test time edges on a D -> E path get magnitude
    ``1 + |w| / 2`` (in [1, 2]) and the other inputs to path nodes ``|w| / 2`` (in [0, 1]), sign kept."""
    W = rng.uniform(-wmax, wmax, size=adj.shape) * adj
    if split == "test":
        anc = ancestors(adj)
        n = adj.shape[-1]
        eye = np.eye(n, dtype=bool)[None]
        from_d = (anc[:, TARGET_ROLE, :] | eye[:, TARGET_ROLE, :])  # D and its descendants
        to_e = (anc[:, :, GOAL_ROLE] | eye[:, :, GOAL_ROLE])  # E and its ancestors
        on = from_d & to_e  # [m, n]: nodes on some D -> E path
        path_edge = adj & on[:, :, None] & on[:, None, :]
        other_in = adj & ~on[:, :, None] & on[:, None, :]
        W = np.where(path_edge, np.sign(W) * (1.0 + (wmax - 1.0) * np.abs(W) / wmax), W)
        W = np.where(other_in, W / wmax, W)
    return W


@dataclass(frozen=True)
class DAGRewards:
    """The DAG task's reward constants: ``explore_reward`` per exploration step; the goal-phase step gives the
    goal variable's value after the intervention."""

    explore_reward: float = 0.0


@dataclass(frozen=True)
class DAGInfo(PlayerInfo):
    """What a causal-DAG world's instructions tell a player: :class:`~causalplay.envs.task.PlayerInfo`
    (``n_objects`` is the number of variables, ``layout`` the observation's blocks, ``rewards`` a
    :class:`DAGRewards`) and the task's constants (exploration steps, linearity, adaptive relevance, the
    intervention value), never an episode's truth.

    Attributes
    ----------
    config : DAGConfig
        The task's constants as the family states them (the settings it draws worlds with).
    """

    config: DAGConfig = field(kw_only=True)


class CausalDAGBatch:
    """``B`` causal-DAG episodes stepped together (torch, float64).

    All randomness of an episode (structure, weights, noise variances, every exogenous noise draw, the
    relevance set and the Monte-Carlo draws of the goal values) is drawn at :meth:`reset` from one
    ``numpy.random.Generator``, so the same generator state gives the same episodes whatever the agent does.

    Attributes (after reset)
    ------------------------
    W : ``[B, N, N]`` true weights (``W[b, p, j]``: edge p -> j). noise_var : ``[B, N]``.
    adj5 : ``[B, 5, 5]`` bool, the structure over the roles A-E. roles : ``[B, 5]`` variable index of each role.
    goal : ``[B]`` index of the goal variable (role E). relevant : ``[B, N]`` bool.
    goal_values : ``[B, 2N]`` expected goal value of each goal-phase action under the true SCM (exact when
    ``linear``, else the mean over ``n_mc`` noise draws). optimal_action : ``[B]`` its argmax.
    actions : ``[B, T]`` long (-1 before taken), returns ``[B]`` goal-phase reward, done ``[B]`` bool.

    A :class:`causalplay.envs.task.Task`: ``layout`` names the observation's blocks, ``rewards`` holds the reward
    constants (:class:`DAGRewards`), :meth:`record` gives the benchmark's per-episode scores. The action is one
    integer per row (``action_size = 1``).
    """

    def __init__(self, config: DAGConfig, batch_size: int, rng: np.random.Generator):
        self.config, self.B, self.rng = config, positive_int(batch_size, "batch_size"), rng
        self.N = self.n_objects = config.n_variables
        self.n_explore, self.horizon, self.n_actions = config.n_explore, config.horizon, 2 * self.N
        self.action_size = 1
        self.rewards = DAGRewards(config.explore_reward)
        self.obs_layout, self.obs_size = config.obs_layout, config.obs_size
        self.layout = ObsLayout(tuple(ObsField(k, sl.start, sl.stop - sl.start) for k, sl in self.obs_layout.items()))
        self.done = torch.ones(batch_size, dtype=torch.bool)  # nothing runs before the first reset()

    # -- episode sampling ----------------------------------------------------------------------------------
    def _draw_adj(self, m: int) -> np.ndarray:
        cfg = self.config
        if cfg.fold is None:
            return sample_structures(self.rng, m, cfg.split, cfg.train_rule)
        from causalplay.core.metrics import assign_split

        out = np.zeros((m, 5, 5), dtype=bool)
        todo = np.arange(m)
        while todo.size:
            adj = sample_structures(self.rng, todo.size, cfg.split, cfg.train_rule)
            ok = np.array([assign_split(structure_key(a)) == cfg.fold for a in adj])
            out[todo[ok]] = adj[ok]
            todo = todo[~ok]
        return out

    def _sample(self, m: int) -> dict[str, torch.Tensor]:
        cfg, rng, N, T = self.config, self.rng, self.N, self.horizon
        adj5 = self._draw_adj(m)
        W5 = _sample_weights(rng, adj5, cfg.split, cfg.weight_max)
        noise_var = np.clip(rng.normal(cfg.noise_mean, cfg.noise_sd, size=(m, N)), cfg.noise_min, None)
        if cfg.adaptive:
            roles = np.sort(np.argsort(rng.random((m, N)), axis=1)[:, :5], axis=1)
            roles = np.take_along_axis(roles, np.argsort(rng.random((m, 5)), axis=1), axis=1)
        else:
            roles = np.tile(np.arange(5), (m, 1))
        W = np.zeros((m, N, N))
        rows = np.arange(m)[:, None, None]
        W[rows, roles[:, :, None], roles[:, None, :]] = W5
        relevant = np.zeros((m, N), dtype=bool)
        relevant[np.arange(m)[:, None], roles] = True
        sd = np.sqrt(noise_var)
        eps_init = rng.normal(size=(m, T, N)) * sd[:, None]
        eps_out = rng.normal(size=(m, T, N)) * sd[:, None]
        eps_mc = rng.normal(size=(m, cfg.n_mc, N)) * sd[:, None]
        d = {k: torch.as_tensor(v) for k, v in dict(adj5=adj5, W=W, noise_var=noise_var, roles=roles,
                                                      relevant=relevant, eps_init=eps_init, eps_out=eps_out).items()}
        d["goal"] = d["roles"][:, GOAL_ROLE]
        d["goal_values"] = self._goal_values(d["W"], d["goal"], torch.as_tensor(eps_mc))
        return d

    def _goal_values(self, W: torch.Tensor, goal: torch.Tensor, eps_mc: torch.Tensor) -> torch.Tensor:
        """Expected goal value of every action ``[m, 2N]`` (an action on the goal itself = no intervention)."""
        if self.config.linear:
            eps_mc = torch.zeros_like(eps_mc[:, :1])
        m = eps_mc.shape[0]
        out = torch.empty(m, 2 * self.N, dtype=torch.float64)
        rows = torch.arange(m)
        for a in range(2 * self.N):  # 2N candidate actions, each for the whole batch
            idx, val = self.decode(torch.full((m,), a))
            idx = torch.where(idx == goal, -1, idx)
            x = simulate(W, eps_mc, idx[:, None], val[:, None], self.config.linear)
            out[:, a] = x[rows, :, goal].mean(-1)
        return out

    def decode(self, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Action ``a`` -> (variable, value): ``a < N`` sets variable ``a`` to ``-v``; ``a >= N`` sets
        variable ``a - N`` to ``+v`` (``v`` = ``intervention_value``, 4)."""
        v = self.config.intervention_value
        a = action.long()
        return a % self.N, torch.where(a < self.N, -v, v).to(torch.float64)

    def reset(self, rows: torch.Tensor | None = None) -> torch.Tensor:
        """Start new episodes in all rows (or only in ``rows``); returns the observation ``[B, obs_size]``."""
        B, T, N = self.B, self.horizon, self.N
        if rows is None:
            for k, v in self._sample(B).items():
                setattr(self, k, v)
            self.t = torch.zeros(B, dtype=torch.long)
            self.actions = torch.full((B, T), -1, dtype=torch.long)
            self.outcomes, self.initial = (torch.zeros(B, T, N, dtype=torch.float64) for _ in range(2))
            self.returns = torch.zeros(B, dtype=torch.float64)
            self.done = torch.zeros(B, dtype=torch.bool)
            self._obs = torch.zeros(B, self.obs_size, dtype=torch.float64)
            rows = torch.arange(B)
        else:
            rows = torch.as_tensor(rows, dtype=torch.long).flatten()
            if rows.numel() == 0:
                return self._obs.clone()
            if (rows < 0).any() or (rows >= B).any():
                raise ValueError(f"rows must be indices in [0, {B}), got {rows.tolist()}")
            for k, v in self._sample(len(rows)).items():
                getattr(self, k)[rows] = v
            for k in ("t", "outcomes", "initial", "returns", "done", "_obs"):
                getattr(self, k)[rows] = 0
            self.actions[rows] = -1
        self.optimal_action = argmax_tol(self.goal_values, 1)  # equal goal values: the lowest action
        init = simulate(self.W[rows], self.eps_init[rows, 0][:, None], linear=self.config.linear)[:, 0]
        self.initial[rows, 0] = init
        L = self.obs_layout
        self._obs[rows, L["next_values"]] = init
        if self.n_explore == 0:
            self._obs[rows, L["goal"]] = torch.nn.functional.one_hot(self.goal[rows], self.N).double()
        if self.config.adaptive:
            self._obs[rows, L["relevant"]] = self.relevant[rows].double()
        return self._obs.clone()

    def step(self, action) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One intervention per row: ``action [B]`` ints in ``[0, 2N)``; rows already done are ignored.

        Returns ``obs [B, obs_size]``, ``reward [B]`` (``explore_reward`` = 0 while exploring, the goal's value
        in the goal phase), ``terminated [B]`` (True after the goal-phase action) and ``truncated [B]``
        (always False).
        """
        a = torch.as_tensor(action)
        if a.shape != (self.B,) or a.dtype.is_floating_point or a.dtype == torch.bool:
            raise ValueError(f"action must be an integer tensor of shape ({self.B},), got dtype {a.dtype} and "
                             f"shape {tuple(a.shape)}")
        live = ~self.done
        a = a.long()
        if ((a[live] < 0) | (a[live] >= self.n_actions)).any():
            raise ValueError(f"actions must be in [0, {self.n_actions}), got {a[live].tolist()}")
        a = torch.where(live, a, 0)
        rows = torch.nonzero(live).flatten()
        t = self.t[rows]
        idx, val = self.decode(a[rows])
        goal_phase = t == self.n_explore
        idx = torch.where(goal_phase & (idx == self.goal[rows]), -1, idx)
        lin = self.config.linear
        out = simulate(self.W[rows], self.eps_out[rows, t][:, None], idx[:, None], val[:, None], lin)[:, 0]
        reward = torch.zeros(self.B, dtype=torch.float64)
        goal_val = out[torch.arange(len(rows)), self.goal[rows]]
        reward[rows] = torch.where(goal_phase, goal_val, torch.full_like(goal_val, self.rewards.explore_reward))
        self.returns[rows] += torch.where(goal_phase, goal_val, 0.0)
        self.actions[rows, t] = a[rows]
        self.outcomes[rows, t] = out
        L, N = self.obs_layout, self.N
        obs = self._obs
        obs[rows, L["prev_values"]] = self.initial[rows, t]
        interv = torch.zeros(len(rows), N, dtype=torch.float64)
        # the block shows the intervention carried out: none when the goal-phase action named the goal itself
        shown = idx >= 0 if not self.config.legacy_goal_obs else torch.ones_like(idx, dtype=torch.bool)
        interv[torch.arange(len(rows)), a[rows] % N] = torch.where(shown, val, 0.0)
        obs[rows, L["prev_intervention"]] = interv
        obs[rows, L["outcome"]] = out
        nxt = (t + 1).clamp_max(self.horizon - 1)
        init = simulate(self.W[rows], self.eps_init[rows, nxt][:, None], linear=lin)[:, 0]
        init = torch.where(goal_phase[:, None], torch.zeros_like(init), init)
        self.initial[rows, nxt] = torch.where(goal_phase[:, None], self.initial[rows, nxt], init)
        obs[rows, L["next_values"]] = init
        show_goal = (t + 1) >= self.n_explore
        obs[rows, L["goal"]] = torch.nn.functional.one_hot(self.goal[rows], N).double() * show_goal[:, None]
        self.t[rows] = t + 1
        term = torch.zeros(self.B, dtype=torch.bool)
        term[rows] = goal_phase
        self.done |= term
        return obs.clone(), reward, term, torch.zeros(self.B, dtype=torch.bool)

    def info(self) -> DAGInfo:
        """What the task's instructions tell every player (:class:`DAGInfo`)."""
        return DAGInfo(self.n_objects, self.horizon, layout=self.layout, rewards=self.rewards, config=self.config)

    def record(self) -> dict[str, np.ndarray]:
        """The benchmark's per-episode record (see :meth:`score`), as numpy arrays."""
        return {k: v.numpy().copy() for k, v in self.score().items()}

    # -- scores ------------------------------------------------------------------------------------------------
    def score(self) -> dict[str, torch.Tensor]:
        """Per-episode goal-phase scores (after the episode ended): ``pct_optimal`` =
        ``(mu[a] - min mu) / (max mu - min mu)`` with ``mu = goal_values`` (1 when all actions tie),
        ``match`` = the action's expected value is within 1e-9 of the best, ``reward`` (realised)."""
        a = self.actions[:, -1].clamp_min(0)
        mu = self.goal_values
        mine = mu.gather(1, a[:, None])[:, 0]
        lo, hi = mu.min(1).values, mu.max(1).values
        rng = hi - lo
        pct = torch.where(rng > 1e-9, (mine - lo) / rng.clamp_min(1e-12), torch.ones_like(mine))
        return {"pct_optimal": pct, "match": mine >= hi - 1e-9, "reward": self.returns.clone(),
                "expected_reward": mine, "optimal_reward": hi}


class CausalDAGEnv(gym.Env):
    """The causal DAG world of Lampinen et al. (2023, appendix A.1), one episode at a time.

    ## Description
    Five variables ``A..E`` (indices 0..4) form a random linear-Gaussian structural causal model passed through
    a leaky ReLU (leak 0.2): ``x_j = leaky(sum_p w_pj x_p + e_j)``, ``e_j ~ Normal(0, s_j)`` with ``s_j`` the
    variable's noise **variance**, drawn ``Normal(0.5, 0.25)`` clipped below at 0.05. The goal variable is
    ``E`` and the test intervention target ``D``. Structure generator (:func:`sample_structures`): a random
    order of the variables (E last at test time); ``i ~ U{1..4}`` independent variables first in the order;
    every other variable gets 1 or 2 parents (each with prob. 1/2) uniformly from the earlier ones; weights
    ``U[-2, 2]``. ``split="train"`` rejects structures in which D is an ancestor of E (so E never has a parent
    that is D or a descendant of D); ``split="test"`` keeps only structures in which E has parents and all of
    them are D or descendants of D, and then sets every weight on a D -> E path to magnitude ``1 + |w|/2``
    and every other input weight of a node on such a path to ``|w|/2`` (signs kept). ``linear=True`` drops
    the leaky ReLU (appendix B.1).

    Every experiment draws fresh noise: the "initial values" of an experiment are an observational sample
    and its outcome an independent sample under the intervention (no shared noise between them).

    ## Action Space
    ``Discrete(2N)``: action ``a < N`` sets variable ``a`` to ``-4``, action ``a >= N`` sets ``a - N`` to
    ``+4``. In the goal phase an intervention on the goal variable itself is not allowed to fix the goal:
    it is carried out as no intervention (the goal takes its observational value).

    ## Observation Space
    ``Box(-inf, inf, (5N,), float32)`` (``6N`` when adaptive), slices in ``DAGConfig.obs_layout``:
    ``[values before the previous intervention (N), the previous intervention (N, e.g. [0, 0, -4, 0, 0]),
    its outcome values (N), the initial values of the next experiment (N), goal one-hot (N)]`` and, when
    ``adaptive``, ``relevant`` (N, several-hot). Before the first action the first three parts are 0. The goal
    one-hot is 0 during exploration and shows the goal in the observation before the goal-phase action.

    ## Rewards
    0 for every exploration action; the goal-phase action gets the goal variable's value in its outcome.

    ## Episode End
    ``n_explore`` exploration actions (default 5 = N, the expert's one cycle through the variables), then one
    goal-phase action, after which ``terminated=True``. ``truncated`` is always False.

    ## Info
    ``reset``: ``step``; every step: ``step`` and ``phase`` ("explore" / "goal"); at the end the ground truth
    ``W`` (N x N), ``noise_var``, ``goal``, ``goal_values`` (expected goal value per action),
    ``optimal_action`` and ``pct_optimal``.

    ## Arguments
    * ``split`` ("train" | "test"), ``linear`` (bool), ``n_explore`` (int, 5), ``adaptive`` (bool; use
      :func:`make_adaptive`), ``fold`` (None | "train" | "dev" | "test": keep only structures whose stable
      hash of :func:`structure_key` falls in that PHYRE-style fold, 80/10/10), ``n_mc`` (draws behind
      ``goal_values`` in the nonlinear case, 256), other constants of :class:`DAGConfig`.

    ## Adaptive variant (``causalplay/CausalDAG-Adaptive-v0``)
    ``N = 10`` variables, 5 of them relevant (a uniform random subset, several-hot in the observation); the
    5-role SCM above lives on the relevant ones (roles assigned in random order), the other 5 are independent
    noise variables. The goal is the variable playing role E.

    ## Version History
    * v1: after a goal-phase action that names the goal variable (carried out as no intervention) the last
      observation's intervention block is 0, not +-4 on the goal; ``train_rule`` offers the appendix's literal
      constraint on E's parents (``"literal"``; default ``"ancestor"``, unchanged).
    * v0: initial release (deprecated: ``legacy_goal_obs=True``; episodes, rewards and scores equal v1's).
    """

    metadata = {"render_modes": []}

    def __init__(self, **kwargs):
        allowed = set(DAGConfig.__dataclass_fields__)
        if set(kwargs) - allowed:
            raise TypeError(f"unknown argument(s) {sorted(set(kwargs) - allowed)}; expected some of {sorted(allowed)}")
        kwargs.setdefault("n_variables", 10 if kwargs.get("adaptive") else 5)
        self.config = DAGConfig(**kwargs)
        if self.config.legacy_goal_obs:
            warnings.warn("causalplay/CausalDAG-v0 and CausalDAG-Adaptive-v0 are deprecated: use the -v1 ids (the "
                          "same episodes; the last observation's intervention block fixed)", DeprecationWarning,
                          stacklevel=2)
        N = self.config.n_variables
        self.observation_space = spaces.Box(-np.inf, np.inf, (self.config.obs_size,), np.float32)
        self.action_space = spaces.Discrete(2 * N)
        self._batch = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._batch = CausalDAGBatch(self.config, 1, self.np_random)
        obs = self._batch.reset()
        return obs[0].numpy().astype(np.float32), {"step": 0}

    def step(self, action):
        if self._batch is None:
            raise RuntimeError("call reset() before step()")
        if bool(self._batch.done[0]):
            raise RuntimeError("the episode has ended; call reset()")
        if isinstance(action, (bool, np.bool_)) or not np.issubdtype(np.asarray(action).dtype, np.integer) \
                or np.asarray(action).shape != ():
            raise ValueError(f"action must be an integer in [0, {2 * self.config.n_variables}), got {action!r}")
        a = int(action)
        if not 0 <= a < 2 * self.config.n_variables:
            raise ValueError(f"action must be in [0, {2 * self.config.n_variables}), got {a}")
        phase = "goal" if int(self._batch.t[0]) == self.config.n_explore else "explore"
        obs, r, term, trunc = self._batch.step(torch.tensor([a]))
        info = {"step": int(self._batch.t[0]), "phase": phase}
        if bool(term[0]):
            b = self._batch
            info.update({"W": b.W[0].numpy().copy(), "noise_var": b.noise_var[0].numpy().copy(),
                         "goal": int(b.goal[0]), "goal_values": b.goal_values[0].numpy().copy(),
                         "optimal_action": int(b.optimal_action[0]),
                         "pct_optimal": float(b.score()["pct_optimal"][0])})
        return obs[0].numpy().astype(np.float32), float(r[0]), bool(term[0]), bool(trunc[0]), info


def make_adaptive(**kwargs) -> CausalDAGEnv:
    """``causalplay/CausalDAG-Adaptive-v1``: 10 variables, 5 relevant (keyword arguments as CausalDAGEnv)."""
    return CausalDAGEnv(adaptive=True, **kwargs)


def dag_batch(batch_size: int, rng, **kwargs) -> CausalDAGBatch:
    """The batch entry point of ``causalplay/CausalDAG-v1`` (keyword arguments as :class:`CausalDAGEnv`, checked and
    warned about as it does)."""
    return CausalDAGBatch(CausalDAGEnv(**kwargs).config, batch_size, rng)


def adaptive_batch(batch_size: int, rng, **kwargs) -> CausalDAGBatch:
    """The batch entry point of ``causalplay/CausalDAG-Adaptive-v1``."""
    return CausalDAGBatch(make_adaptive(**kwargs).config, batch_size, rng)
