"""Agents for the causal-DAG task (batched: ``B`` episodes in lock-step; actions ``[B]`` long in ``[0, 2n)``).

Ordinary agents (:class:`causalplay.agents.base.Agent`), played by :func:`causalplay.bench.play.play`; they read the
observation through the task's layout (``DAGInfo.obs_layout``) and the task's constants from ``DAGInfo.config``
(a :class:`causalplay.envs.causal_dag.DAGConfig`; :class:`~causalplay.envs.causal_dag.DAGInfo` is what
``task.info()`` tells every player). Only ``expert`` sets ``uses_oracle`` and is handed the task.
Build them with ``make_agent(spec, family="dag")``. The name ``bayes`` (this family's ``eig`` before 0.3)
still works, with a ``DeprecationWarning``.

=================  ===============================================================================  =======
name               exploration / goal phase                                                         knows
=================  ===============================================================================  =======
``expert``         cyclic over the (relevant) variables from a random start, random signs /           truth
                   the optimal action under the true SCM
``random``         uniform over the 2n actions / uniform over actions on non-goal relevant variables  --
``value``          as expert / repeat the exploration intervention whose outcome had the highest goal  --
``change``         as expert / repeat the intervention with the largest |goal change| (outcome - its  --
                   initial value), sign flipped if the change was negative
``total-corr``     as expert / n-1 univariate regressions of the goal; largest |slope|, its sign      --
``partial-corr``   as expert / one multivariate regression of the goal; largest |coef|, its sign      --
``eig``            max EIG about the structure (``target="action"``: about the best goal action) /    prior
                   max posterior expected goal (exact conjugate structure posterior)
``notears``        as expert / DAGMA (linear) on the exploration data, argmax of its do-prediction    --
``bc``             a GRU trained offline by behaviour cloning on expert trajectories (checkpoint)     --
=================  ===============================================================================  =======

"knows": ``truth`` = the true SCM, ``prior`` = the task's generative family (noise/weight scales, <= 2
parents, goal = role E); ``--`` = nothing beyond the observation. Every agent except ``expert`` and ``bc``
only reads the observation (including the relevance vector in the adaptive task). Regressions exclude rows
in which the goal was intervened on (those carry no information about what drives it).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import torch
from torch import nn

from causalplay.core.dag import GOAL_ROLE
from causalplay.core.ties import argmax_tol
from causalplay.envs.causal_dag import DAGInfo

from .base import Agent

__all__ = ["DAGAgent", "DAG_AGENTS", "GRUPolicy", "load_policy"]


class DAGAgent(Agent):
    """Base class: keeps the samples seen (``x [B, R, n]``, ``do [B, R]``, ``val [B, R]``) from observations.
    Actions are ``[B]`` long in ``[0, 2n)``."""

    name = "dag-agent"

    def reset(self, task: DAGInfo, obs: torch.Tensor) -> None:
        super().reset(task, obs)
        c = task.config
        self.n, self.n_explore, self.linear, self.adaptive = task.n_objects, c.n_explore, c.linear, c.adaptive
        self.value = c.intervention_value
        B, n = self.B, self.n
        self.x = torch.zeros(B, 0, n, dtype=torch.float64)
        self.do = torch.zeros(B, 0, dtype=torch.long)
        self.val = torch.zeros(B, 0, dtype=torch.float64)
        self.is_outcome = torch.zeros(B, 0, dtype=torch.bool)
        self.prev = torch.zeros(B, 0, n, dtype=torch.float64)  # initial values behind each outcome row
        lay = task.obs_layout
        self.relevant = lay.get(obs, "relevant") > 0.5 if self.adaptive else torch.ones(B, n, dtype=torch.bool)
        self._cycle_start = torch.randint(0, n, (B,), generator=self.gen)
        self._observe(obs, first=True)

    def _observe(self, obs: torch.Tensor, first: bool = False) -> None:
        lay = self.task.obs_layout
        sl = lambda name: lay.get(obs, name).to(torch.float64)  # noqa: E731
        if not first:
            interv = sl("prev_intervention")
            var = interv.abs().argmax(1)
            self._append(sl("outcome"), var, interv.gather(1, var[:, None])[:, 0], True, sl("prev_values"))
        # the initial values of the next experiment: an observational sample
        self._append(sl("next_values"), torch.full((self.B,), -1), torch.zeros(self.B, dtype=torch.float64), False,
                     torch.zeros(self.B, self.n, dtype=torch.float64))
        self.goal = sl("goal").argmax(1)

    def _append(self, x, do, val, is_outcome: bool, prev) -> None:
        """One more sample row per episode: ``x, prev [B, n]``, ``do, val [B]``."""
        self.x, self.do, self.val, self.prev = (torch.cat([kept, new[:, None]], 1) for kept, new in
                                                ((self.x, x), (self.do, do), (self.val, val), (self.prev, prev)))
        self.is_outcome = torch.cat([self.is_outcome, torch.full((self.B, 1), is_outcome)], 1)

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        if self.t > 0:
            self._observe(obs)
        a = self.explore() if self.t < self.n_explore else self.exploit()
        self.t += 1
        return a.long()

    # -- policies --------------------------------------------------------------------------------------------
    def explore(self) -> torch.Tensor:
        """The expert's exploration: the ``t``-th relevant variable in cyclic order from a random start, with a
        random sign."""
        n, rel = self.n, self.relevant
        order = torch.argsort((~rel).long() * n + (torch.arange(n) - self._cycle_start[:, None]) % n, 1)
        var = order.gather(1, (self.t % rel.sum(1))[:, None])[:, 0]
        return self._intervention(var, torch.rand(self.B, generator=self.gen) < 0.5)

    def exploit(self) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def _candidates(self) -> torch.Tensor:
        """``[B, n]`` bool: relevant variables other than the goal."""
        return self.relevant & (torch.arange(self.n) != self.goal[:, None])

    def _intervention(self, var: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
        return var + self.n * positive.long()

    def _goal_of(self, x: torch.Tensor) -> torch.Tensor:
        """``[B, R]``: the goal variable's value in every sample row of ``x [B, R, n]``."""
        return x.gather(2, self.goal[:, None, None].expand(-1, x.shape[1], 1))[..., 0]


class ExpertAgent(DAGAgent):
    """Explores cyclically; exploits with the true SCM (the environment's ``optimal_action``). Needs ``oracle``."""

    name = "expert"
    uses_oracle = True

    def reset(self, task: DAGInfo, obs: torch.Tensor) -> None:
        if not hasattr(getattr(self, "oracle", None), "optimal_action"):
            raise ValueError("the expert needs the environment (agent.oracle = the CausalDAGBatch, which "
                             "causalplay.bench.play.play sets) to know the true SCM")
        super().reset(task, obs)

    def exploit(self) -> torch.Tensor:
        return self.oracle.optimal_action.clone()


class RandomDAGAgent(DAGAgent):
    """Uniform over all ``2n`` actions while exploring; in the goal phase uniform over interventions on the
    relevant non-goal variables."""

    name = "random"

    def explore(self) -> torch.Tensor:
        return torch.randint(0, 2 * self.n, (self.B,), generator=self.gen)

    def exploit(self) -> torch.Tensor:
        w = self._candidates().double().repeat(1, 2)
        return torch.multinomial(w, 1, generator=self.gen)[:, 0]


class _OutcomeHeuristic(DAGAgent):
    def _rows(self):
        """Outcome rows of exploration interventions on non-goal variables: mask ``[B, R]``."""
        return self.is_outcome & (self.do != self.goal[:, None])

    def _repeat_best(self, score: torch.Tensor, flip: torch.Tensor | None = None) -> torch.Tensor:
        ok = self._rows()
        # nothing explored on a non-goal variable: fall back to random
        fallback = RandomDAGAgent.exploit(self) if not ok.any(1).all() else torch.zeros(self.B, dtype=torch.long)
        best = argmax_tol(torch.where(ok, score, -torch.inf), 1)
        var = self.do.gather(1, best[:, None])[:, 0]
        positive = self.val.gather(1, best[:, None])[:, 0] > 0
        if flip is not None:
            positive = positive ^ flip.gather(1, best[:, None])[:, 0]
        return torch.where(ok.any(1), self._intervention(var, positive), fallback)


class ValueAgent(_OutcomeHeuristic):
    """Goal phase: repeat the exploration intervention whose outcome had the highest goal value."""

    name = "value"

    def exploit(self) -> torch.Tensor:
        return self._repeat_best(self._goal_of(self.x))


class ChangeAgent(_OutcomeHeuristic):
    """Goal phase: the intervention with the largest |change| of the goal (outcome minus the experiment's
    initial value), sign flipped if the change was negative."""

    name = "change"

    def exploit(self) -> torch.Tensor:
        change = self._goal_of(self.x) - self._goal_of(self.prev)
        return self._repeat_best(change.abs(), flip=change < 0)


class _RegressionAgent(DAGAgent):
    def _data(self):
        rows = self.do != self.goal[:, None]  # [B, R]
        return rows.double(), self.x, self._goal_of(self.x)

    def _choose(self, slope: torch.Tensor) -> torch.Tensor:
        s = torch.where(self._candidates(), slope.abs(), -torch.inf)
        var = argmax_tol(s, 1)
        return self._intervention(var, slope.gather(1, var[:, None])[:, 0] > 0)


class TotalCorrAgent(_RegressionAgent):
    """Goal phase: ``n - 1`` univariate least-squares regressions of the goal on each other variable (with
    intercept); intervene on the largest |slope| with its sign."""

    name = "total-corr"

    def exploit(self) -> torch.Tensor:
        w, X, y = self._data()
        cnt = w.sum(1, keepdim=True).clamp_min(1)
        mx = (w[..., None] * X).sum(1) / cnt
        my = (w * y).sum(1, keepdim=True) / cnt
        dx = X - mx[:, None]
        cov = (w[..., None] * dx * (y - my)[..., None]).sum(1)
        var = (w[..., None] * dx * dx).sum(1)
        return self._choose(cov / var.clamp_min(1e-12))


class PartialCorrAgent(_RegressionAgent):
    """Goal phase: one multivariate least-squares regression of the goal on all other (relevant) variables
    (with intercept, ridge 1e-6); intervene on the largest |coefficient| with its sign."""

    name = "partial-corr"

    def exploit(self) -> torch.Tensor:
        w, X, y = self._data()
        keep = self._candidates().double()  # regressors
        Xd = torch.cat([X * keep[:, None], torch.ones_like(X[..., :1])], -1) * w[..., None].sqrt()
        yd = y * w.sqrt()
        A = Xd.transpose(1, 2) @ Xd + 1e-6 * torch.eye(Xd.shape[-1], dtype=torch.float64)
        coef = torch.linalg.solve(A, (Xd.transpose(1, 2) @ yd[..., None]))[..., 0]
        return self._choose(coef[:, :-1])


class EIGDAGAgent(DAGAgent):
    """The ideal Bayesian experimenter: exact structure posterior by conjugacy over all 13,956 DAGs with <= 2
    parents per variable (:mod:`causalplay.core.dag_posterior`), exploration by maximal EIG about the structure
    (``target="structure"``) or about the best goal-phase action (``target="action"``), exploitation by the
    maximal posterior expected goal value. In the adaptive task the model covers the relevant variables and
    the goal is taken to be role E for ``target="action"`` while exploring (the base task's goal is always
    E); once revealed the goal comes from the observation.

    Options: ``target``, ``n_outer`` (16, EIG outer draws), ``top_k`` (256, structures in the EIG sums),
    ``n_samples`` (512, posterior draws for the expected goal), ``chunk`` (episodes per EIG batch).
    """

    name = "eig"

    def __init__(self, seed: int = 0, target: str = "structure", n_outer: int = 16, top_k: int = 256,
                 n_samples: int = 512, chunk: int = 64):
        super().__init__(seed)
        if target not in ("structure", "action"):
            raise ValueError(f"target must be 'structure' or 'action', got {target!r}")
        self.target, self.n_outer, self.top_k, self.n_samples, self.chunk = target, n_outer, top_k, n_samples, chunk

    def reset(self, task: DAGInfo, obs: torch.Tensor) -> None:
        from causalplay.core.dag import enumerate_structures
        from causalplay.core.dag_posterior import NIGPrior

        super().reset(task, obs)
        self.space = enumerate_structures(5)
        self.prior = NIGPrior()
        # the model's 5 variables: the relevant ones, in index order
        self.vars = torch.argsort((~self.relevant).long() * self.n + torch.arange(self.n), 1)[:, :5]

    def _local_data(self):
        from causalplay.core.dag_posterior import Data

        x = self.x.gather(2, self.vars[:, None, :].expand(-1, self.x.shape[1], -1))
        pos = (self.vars[:, None, :] == self.do[..., None])  # [B, R, 5]
        do = torch.where(pos.any(-1), pos.long().argmax(-1), -1)
        keep = pos.any(-1) | (self.do < 0)
        return Data(x, do, keep)

    def _to_env(self, a5: torch.Tensor) -> torch.Tensor:
        var = self.vars.gather(1, (a5 % 5)[:, None])[:, 0]
        return self._intervention(var, a5 >= 5)

    def _goal5(self) -> torch.Tensor:
        if self.t >= self.n_explore:
            return (self.vars == self.goal[:, None]).long().argmax(1)
        return torch.full((self.B,), GOAL_ROLE, dtype=torch.long)

    def _per_chunk(self, score) -> torch.Tensor:
        """``[B, 10]``: ``score(data, goal)`` of every local action, ``chunk`` episodes at a time."""
        from causalplay.core.dag_posterior import Data

        data, goal = self._local_data(), self._goal5()
        out = torch.empty(self.B, 10, dtype=torch.float64)
        for s in range(0, self.B, self.chunk):
            sl = slice(s, s + self.chunk)
            out[sl] = score(Data(data.x[sl], data.do[sl], data.mask[sl]), goal[sl])
        return out

    def explore(self) -> torch.Tensor:
        from causalplay.core.dag_posterior import eig

        out = self._per_chunk(lambda d, goal: eig(d, self.space, self.prior, self.linear, self.target, goal,
                                                  self.n_outer, self.top_k, self.gen, self.value))
        key = torch.rand(out.shape, generator=self.gen, dtype=torch.float64)  # random tie-break among the tied
        return self._to_env(argmax_tol(out, 1, key=key))

    def exploit(self) -> torch.Tensor:
        from causalplay.core.dag_posterior import expected_goal

        out = self._per_chunk(lambda d, goal: expected_goal(d, self.space, goal, self.value, self.prior, self.linear,
                                                            self.n_samples, self.gen))
        return self._to_env(argmax_tol(out, 1))


class NotearsDAGAgent(DAGAgent):
    """Explores as the expert; then fits ``dagma.linear.DagmaLinear`` (l2 loss) on all exploration samples of
    the relevant variables and picks the action maximising the goal under the fitted linear SEM (zero noise).
    One fit per episode (``lambda1=0.02, w_threshold=0.1, T=2, warm_iter=800, max_iter=1600, lr=0.02``)."""

    name = "notears"

    def __init__(self, seed: int = 0, lambda1: float = 0.02, w_threshold: float = 0.1, iters: int = 800,
                 lr: float = 0.02):
        super().__init__(seed)
        self.lambda1, self.w_threshold, self.iters, self.lr = lambda1, w_threshold, iters, lr

    def exploit(self) -> torch.Tensor:
        from dagma.linear import DagmaLinear  # optional dependency: `pip install causalplay[notears]`

        from causalplay.core.dag import simulate

        n, v = self.n, self.value
        out = torch.empty(self.B, dtype=torch.long)
        for b in range(self.B):  # one DAGMA fit per episode (not batched: DAGMA fits one data set)
            rel = torch.nonzero(self.relevant[b]).flatten()
            X = self.x[b][:, rel].numpy()
            X = X - X.mean(0)
            with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
                W = DagmaLinear("l2").fit(X, lambda1=self.lambda1, w_threshold=self.w_threshold, T=2,
                                          warm_iter=self.iters, max_iter=2 * self.iters, lr=self.lr)
            W = torch.as_tensor(np.asarray(W), dtype=torch.float64)
            k = len(rel)
            g = int((rel == self.goal[b]).nonzero()[0, 0])
            acts = torch.arange(2 * k)
            var = acts % k
            idx = torch.where(var == g, -1, var)
            val = torch.where(acts < k, -v, v).to(torch.float64)
            x = simulate(W, torch.zeros(2 * k, 1, k, dtype=torch.float64), idx[:, None], val[:, None], linear=True)
            best = int(argmax_tol(x[:, 0, g]))
            out[b] = int(rel[best % k]) + n * int(best >= k)
        return out


class GRUPolicy(nn.Module):
    """``obs [B, T, d] -> logits [B, T, 2n]`` (a one-layer GRU with a linear read-in and read-out)."""

    def __init__(self, obs_size: int, n_actions: int, hidden: int = 128):
        super().__init__()
        self.obs_size, self.n_actions, self.hidden = obs_size, n_actions, hidden
        self.inp = nn.Sequential(nn.Linear(obs_size, hidden), nn.ReLU())
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_actions)

    def forward(self, obs: torch.Tensor, h: torch.Tensor | None = None):
        y, h = self.gru(self.inp(obs), h)
        return self.out(y), h


def load_policy(path: str | Path) -> GRUPolicy:
    """Load a policy written by :func:`train_bc`."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no behaviour-cloning checkpoint at {str(p)!r}; train one with "
                                "causalplay.rl.bc.train_bc (or analyses/causal_dag_table.py)")
    ck = torch.load(p, map_location="cpu", weights_only=True)
    pol = GRUPolicy(ck["obs_size"], ck["n_actions"], ck["hidden"])
    pol.load_state_dict(ck["state_dict"])
    pol.eval()
    return pol


class BCAgent(DAGAgent):
    """The passive learner: a GRU policy trained offline by behaviour cloning on ``expert`` trajectories
    (:mod:`causalplay.rl.bc` trains it), loaded from ``path`` (a checkpoint written by ``train_bc``). Greedy."""

    name = "bc"

    def __init__(self, seed: int = 0, path: str = "runs/dag_bc/policy.pt"):
        super().__init__(seed)
        self.policy = load_policy(path)

    def reset(self, task: DAGInfo, obs: torch.Tensor) -> None:
        super().reset(task, obs)
        self.h = None

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            logits, self.h = self.policy(obs.float()[:, None], self.h)
        self.t += 1
        return logits[:, 0].argmax(-1)


DAG_AGENTS: dict[str, type[DAGAgent]] = {c.name: c for c in (ExpertAgent, RandomDAGAgent, ValueAgent, ChangeAgent,
                                                             TotalCorrAgent, PartialCorrAgent, EIGDAGAgent,
                                                             NotearsDAGAgent, BCAgent)}
