"""Ideal-learner agents on the core engine: greedy EIG and a one-step expected-reward planner."""

from __future__ import annotations

import torch

from causalplay.eig import eig_bits
from causalplay.history import all_trials

from .base import MemoryAgent, TaskInfo, map_side_belief
from .posterior import Posterior

__all__ = ["EIGAgent", "PlannerAgent"]


class EIGAgent(MemoryAgent):
    """Exact Bayesian learner: posterior by the core engine, trial of maximal exact EIG, MAP guess.

    Knows the task's rule family (``task.rules``, uniform prior over them) and the announced blicket count
    (the prior is uniform over sets of that size). With ``use_not_ended=True`` (default) it also conditions on
    the episode not having ended: after action ``t`` the guessed set (its beliefs rounded at 0.5) is not the
    truth, so that set is removed from the posterior -- an exact Bayesian update on the env's solve signal.

    Beliefs are the posterior marginals moved just across 0.5 to agree with the MAP set
    (:func:`~causalplay.agents.base.map_side_belief`), so the solve check tests the MAP set. The trial
    maximises EIG about the blicket set (``target="blickets"``) over all ``2^N - 1`` non-empty trials, ties to
    the lowest integer code; it is only chosen when the env runs it.
    """

    name = "eig"

    def __init__(self, seed: int = 0, use_not_ended: bool = True, target: str = "blickets"):
        super().__init__(seed)
        self.use_not_ended, self.target = use_not_ended, target

    def reset(self, task: TaskInfo, obs: torch.Tensor) -> None:
        super().reset(task, obs)
        self.post = Posterior(task, self.B)
        self.cand = torch.as_tensor(all_trials(task.n_objects)).to(self.post.space.dtype)
        self.last_code = None

    def _belief_step(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        on, lit, count = self.remember(obs)
        if self.t == 1:
            self.post.condition_count(count)
        if self.use_not_ended and self.last_code is not None:
            self.post.exclude(self.last_code, active)
        self.post.update(on, lit, active)
        code = self.post.map_code()
        self.last_code = code
        return code

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        code = self._belief_step(obs, active)
        guess = self.post.code_to_set(code)
        belief = map_side_belief(self.belief_target(obs, active), guess)
        trial = torch.zeros(self.B, self.task.n_objects, dtype=torch.float64)
        if self.trial_runs() and bool(active.any()):
            trial[active] = self.choose(active, code).to(trial.dtype)
        return torch.cat([trial, belief], 1)

    def belief_target(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        """The marginals the beliefs stay close to (this agent's own posterior marginals)."""
        return self.post.marginals()

    def choose(self, active: torch.Tensor, code: torch.Tensor) -> torch.Tensor:
        eig = eig_bits(self.post.space, self.post.log_w[active], self.cand, self.target)
        return self.cand[eig.argmax(-1)]


class PlannerAgent(EIGAgent):
    """Looks one step ahead on expected reward: picks the trial that maximises the probability of solving at
    the next step.

    Same knowledge and posterior as :class:`EIGAgent`. The next step's reward is ``+20`` if the next guess is
    right and ``-1 - JSD`` otherwise, so (taking the JSD term, at most ``sqrt(ln 2)``, as unaffected by the
    trial) its expectation increases with ``P(solve next) = sum_y max_s P(s, y | trial, guess now wrong)``:
    the current MAP guess is removed (if it is right the episode ends whatever the trial), the outcome ``y``
    is predicted, and the next guess will be that outcome's MAP set. Exact over the ``top_k`` most probable
    sets (126 at most have weight once the count is known when N = 9, so ``top_k=128`` is exact there); ties
    broken by EIG. ``depth=1``: deeper look-ahead grows as ``(2 D)^depth`` and is not implemented.

    The ``-JSD(oracle, belief)`` part of the reward is also optimised: the oracle is computable from the panels
    and the rule (uniform prior over all sets, no count, no "did not end" updates), so the beliefs are the
    oracle's marginals moved just across 0.5 to agree with the MAP guess -- the guess (and so the chance of
    solving) is the same as the EIG agent's; only the penalty of a wrong guess is smaller
    (``oracle_beliefs=False`` turns this off, to measure the trial choice alone).
    """

    name = "planner"

    def __init__(self, seed: int = 0, use_not_ended: bool = True, top_k: int = 128, chunk: int = 256,
                 oracle_beliefs: bool = True):
        super().__init__(seed, use_not_ended)
        self.top_k, self.chunk, self.oracle_beliefs = top_k, chunk, oracle_beliefs

    def reset(self, task: TaskInfo, obs: torch.Tensor) -> None:
        super().reset(task, obs)
        self.oracle = Posterior(task, self.B, dtype=torch.float64)

    def belief_target(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        if not self.oracle_beliefs:  # ablation: the EIG agent's beliefs, only the trial choice differs
            return self.post.marginals()
        on, lit, _ = self.parse(obs)
        self.oracle.update(on, lit, active)
        return self.oracle.marginals()

    def solve_next_prob(self, log_w: torch.Tensor, code: torch.Tensor) -> torch.Tensor:
        """``[b, D]``: P(the next guess is right | the guess ``code`` now is wrong, trial d) for every candidate.

        ``log_w [b, H]`` is the posterior now; ``P = sum_y max_s sum_r w'(r, s) P(y | r, s, d)``.
        """
        space, R, S = self.post.space, self.post.R, self.post.S
        w = log_w.exp().reshape(-1, R, S).clone()
        w[torch.arange(w.shape[0]), :, code] = 0.0  # condition on "the current guess is wrong"
        w = w / w.sum((1, 2), keepdim=True).clamp_min(1e-30)
        P = space.lit_prob(self.cand).reshape(R, S, -1).float()  # [R, S, D]
        out = torch.empty(w.shape[0], self.cand.shape[0])
        for start in range(0, w.shape[0], self.chunk):
            sl = slice(start, start + self.chunk)
            ws = w[sl].float()
            # Only sets with weight matter: K = the most any episode of the chunk still has (<= top_k).
            K = max(1, min(self.top_k, int((ws.sum(1) > 0).sum(-1).max())))
            ps, idx = ws.sum(1).topk(K, dim=-1)  # [b, K]
            wk = torch.gather(ws, 2, idx[:, None, :].expand(-1, R, -1))  # [b, R, K]
            q = torch.einsum("brk,rbkd->bkd", wk, P[:, idx])  # P(y = lit, s)
            out[sl] = q.max(1).values + (ps[:, :, None] - q).max(1).values
        return out

    def choose(self, active: torch.Tensor, code: torch.Tensor) -> torch.Tensor:
        log_w = self.post.log_w[active]
        value = self.solve_next_prob(log_w, code[active])
        eig = eig_bits(self.post.space, log_w, self.cand, self.target).float()
        # Maximise P(solve next); among (near-)ties prefer the more informative trial.
        return self.cand[(value + 1e-4 * eig / max(1.0, float(eig.max()))).argmax(-1)]
