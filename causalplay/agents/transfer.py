"""An exact Bayesian learner that carries an overhypothesis from machine to machine (issue 15).

:class:`TransferEIGAgent` plays a sequence task such as ``causalplay/Overhypothesis-v0`` row by row: each row
may be on a different machine (machines end when solved), so the agent keeps a per-row step count and detects a
new machine from the observation (panel 1 shown) and a new sequence from its ``episode`` field.
"""

from __future__ import annotations

import math

import torch

from .base import BlicketInfo
from .bayesian import EIGAgent

__all__ = ["TransferEIGAgent"]


class TransferEIGAgent(EIGAgent):
    """The :class:`~causalplay.agents.bayesian.EIGAgent` on every machine, with the rule prior of each new machine
    learned from the earlier machines of the sequence (``transfer=True``) or uniform (``transfer=False``).

    Knows the task's rule family (``task.rules``), the announced blicket count, that a step which did not end
    the machine means its guess was wrong, and -- with ``transfer=True`` -- that machines of a sequence share an
    overhypothesis: rule weights ``theta ~ Dirichlet(concentration)`` (:mod:`causalplay.core.overhypothesis`, form
    ``"rules"``). When a machine ends, its evidence for each rule is read off the agent's posterior (divided by
    the rule prior it used): a machine that ended before its last action was solved by the last guess, so the
    evidence is the posterior weight of that set under each rule; a machine that used all ``T`` actions gives
    its rule posterior without the last solve signal (which the agent cannot see). The next machine's rule prior
    is ``E[theta | machines so far]``, exactly (the Dirichlet-mixture posterior of
    :func:`causalplay.core.overhypothesis.rule_mixture`).

    With ``transfer=False`` every machine starts from the uniform rule prior, and the agent makes the same
    choices as ``eig`` on single-machine tasks (tested) -- the non-transferring baseline.

    Parameters
    ----------
    transfer : bool
    concentration : float
        Dirichlet concentration ``alpha`` (> 0) of the shared rule weights (1: uniform over weights).
    use_not_ended, target :
        As :class:`~causalplay.agents.bayesian.EIGAgent`.
    """

    name = "eig-transfer"

    def __init__(self, seed: int = 0, transfer: bool = True, concentration: float = 1.0, use_not_ended: bool = True,
                 target: str = "blickets"):
        super().__init__(seed, use_not_ended, target)
        if not isinstance(transfer, bool):
            raise TypeError(f"transfer must be True or False, got {transfer!r}")
        if isinstance(concentration, bool) or not isinstance(concentration, (int, float)) or not (
                0 < concentration < math.inf):
            raise ValueError(f"concentration must be a finite number > 0, got {concentration!r}")
        self.transfer, self.concentration = transfer, float(concentration)

    def reset(self, task: BlicketInfo, obs: torch.Tensor) -> None:
        super().reset(task, obs)
        B, R = self.B, self.post.space.n_rules
        self.tt = torch.zeros(B, dtype=torch.long)  # actions taken on each row's current machine
        self.code = torch.zeros(B, dtype=torch.long)
        self.evidence = torch.zeros(B, 0, R, dtype=torch.float64)  # [B, machines ended, R]
        self.n_seen = torch.zeros(B, dtype=torch.long)
        self.rule_log_prior = torch.full((B, R), -math.log(R), dtype=torch.float64)
        self.has_episode = "episode" in task.obs_layout

    # -- per-row bookkeeping ---------------------------------------------------------------------------------
    def _end_machine(self, rows: torch.Tensor) -> None:
        """Store the ended machine's rule evidence of ``rows`` (they had taken ``tt`` actions on it)."""
        p = self.post
        w = p.log_w[rows].double().reshape(-1, p.space.n_rules, p.space.n_sets)
        solved = self.tt[rows] < self.task.horizon
        at_guess = w[torch.arange(len(rows)), :, self.code[rows]]  # [n, R]
        ev = torch.where(solved[:, None], at_guess, torch.logsumexp(w, -1)) - self.rule_log_prior[rows]
        ev = torch.nan_to_num(ev - ev.max(-1, keepdim=True).values, nan=0.0, neginf=-1e30)
        k = self.n_seen[rows]
        K = int(k.max()) + 1
        if self.evidence.shape[1] < K:
            self.evidence = torch.cat([self.evidence, self.evidence.new_zeros(self.B, K - self.evidence.shape[1],
                                                                              p.space.n_rules)], 1)
        self.evidence[rows, k] = ev
        self.n_seen[rows] += 1

    def _start_machine(self, rows: torch.Tensor, count: torch.Tensor) -> None:
        p = self.post
        if self.transfer and bool((self.n_seen[rows] > 0).any()):
            from causalplay.core.overhypothesis import predictive_rule_probs

            K = int(self.n_seen[rows].max())
            present = torch.arange(K)[None, :] < self.n_seen[rows][:, None]
            alpha = torch.full((p.space.n_rules,), self.concentration, dtype=torch.float64)
            rho = predictive_rule_probs(self.evidence[rows, :K], alpha, present)
            self.rule_log_prior[rows] = rho.clamp_min(1e-300).log()
        else:
            self.rule_log_prior[rows] = -math.log(p.space.n_rules)
        base = p.space.set_log_prior[None, :].double()  # [1, S]
        lw = (self.rule_log_prior[rows][:, :, None] + base[:, None, :]).reshape(len(rows), -1)
        bad = (p.space.sets.sum(-1).round().long()[None, :] != count[rows][:, None]).repeat(1, p.space.n_rules)
        p.log_w[rows] = lw.masked_fill(bad, -math.inf).to(p.log_w.dtype)
        self.tt[rows] = 0

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        on, lit, count = self.parse(obs)
        lay, T = self.task.obs_layout, self.task.horizon
        self.t += 1
        new_machine = active & ((lay.get(obs, "step")[:, 0].round().long() == 1) | (self.tt == 0))
        new_sequence = (new_machine & (lay.get(obs, "episode")[:, 0].round().long() == 1) if self.has_episode
                        else new_machine)
        ended = torch.nonzero(new_machine & ~new_sequence & (self.tt > 0)).flatten()
        if len(ended):
            self._end_machine(ended)
        self.n_seen[new_sequence] = 0
        starting = torch.nonzero(new_machine).flatten()
        if len(starting):
            self._start_machine(starting, count)
        if self.use_not_ended:
            self.post.exclude_(self.code, active & ~new_machine)
        self.post.observe_(on, lit, active)
        code = self.post.map_code()
        self.code = torch.where(active, code, self.code)
        self.tt = self.tt + active.long()
        return self._action(code, self.post.marginals(), active & (self.tt >= self.task.n_context) & (self.tt < T))
