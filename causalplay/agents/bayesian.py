"""Ideal-learner agents on the core engine: greedy EIG and a k-step expected-reward planner."""

from __future__ import annotations

import torch

from causalplay.core.eig import eig_bits
from causalplay.core.history import all_trials
from causalplay.core.ties import argmax_lex, argmax_tol, stable_topk

from .base import Agent, BlicketInfo, MemoryAgent, map_side_belief, task_beliefs

__all__ = ["EIGAgent", "PlannerAgent", "NexiomEIGAgent"]


class EIGAgent(MemoryAgent):
    """Exact Bayesian learner: posterior by the core engine, trial of maximal exact EIG, MAP guess.

    Knows the task's rule family (``task.rules``, uniform prior over them) and the announced blicket count
    (the prior is uniform over sets of that size). With ``use_not_ended=True`` (default) it also conditions on
    the episode not having ended: after action ``t`` the guessed set (its beliefs rounded at 0.5) is not the
    truth, so that set is removed from the posterior -- an exact Bayesian update on the env's solve signal.

    Beliefs are the posterior marginals moved just across 0.5 to agree with the MAP set
    (:func:`~causalplay.agents.base.map_side_belief`), so the solve check tests the MAP set. The trial
    maximises EIG about the blicket set (``target="blickets"``) over all ``2^N - 1`` non-empty trials; ties
    (within :attr:`TIE_BITS`) go to the trial with the most objects, then to the lowest integer code, so the
    choice is the same whatever batch the episode is played in. (Before, float32 rounding broke ties; on 2 x 2000
    episodes each of IVRE, EST and IVRE-Conjunctive that accident measured the same episode R as "most objects"
    (within 0.02), while "lowest code" or random tie-breaks lost 0.05-0.08 R and ~1 point of AUCCESS on IVRE.)
    It is only chosen when the env runs it.
    """

    name = "eig"

    def __init__(self, seed: int = 0, use_not_ended: bool = True, target: str = "blickets"):
        super().__init__(seed)
        self.use_not_ended, self.target = use_not_ended, target

    def reset(self, task: BlicketInfo, obs: torch.Tensor) -> None:
        super().reset(task, obs)
        self.post = task_beliefs(task, self.B)
        self.cand = torch.as_tensor(all_trials(task.n_objects)).to(self.post.space.dtype)
        D = self.cand.shape[0]  # EIG ties: more objects first, then the lower code
        self._tie_key = self.cand.sum(-1).long() * D + (D - 1 - torch.arange(D))
        self.last_code = None

    def _belief_step(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        on, lit, count = self.remember(obs)
        if self.t == 1:
            self.post.condition_count_(count)
        if self.use_not_ended and self.last_code is not None:
            self.post.exclude_(self.last_code, active)
        self.post.observe_(on, lit, active)
        code = self.post.map_code()
        self.last_code = code
        return code

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        code = self._belief_step(obs, active)
        return self._action(code, self.belief_target(obs, active), active & self.trial_runs())

    def _action(self, code: torch.Tensor, marginals: torch.Tensor, runs: torch.Tensor) -> torch.Tensor:
        """``[trial, belief]``: beliefs close to ``marginals`` on the side of the guessed set ``code``, and the
        chosen trial in the rows where it ``runs`` (empty elsewhere)."""
        belief = map_side_belief(marginals, self.post.code_to_set(code))
        trial = torch.zeros(self.B, self.task.n_objects, dtype=torch.float64)
        if bool(runs.any()):
            trial[runs] = self.choose(runs, code).to(trial.dtype)
        return torch.cat([trial, belief], 1)

    def belief_target(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        """The marginals the beliefs stay close to (this agent's own posterior marginals)."""
        return self.post.marginals()

    #: EIGs within this many bits of the best count as tied. Exact ties are common (symmetric trials), and
    #: float32 rounds the same value differently by an ulp with the batch's size and make-up, so without a
    #: tolerance the tie went to whichever trial rounded highest -- a choice that changed with the batch.
    TIE_BITS = 1e-5

    def choose(self, active: torch.Tensor, code: torch.Tensor) -> torch.Tensor:
        eig = eig_bits(self.post.space, self.post.log_w[active], self.cand, self.target)
        return self.cand[argmax_tol(eig, tol=self.TIE_BITS, key=self._tie_key)]


class PlannerAgent(EIGAgent):
    """Looks ``depth`` steps ahead on expected reward (expectimax over the machine's outcomes, best trial at
    every deeper node, pruned to a beam).

    Same knowledge and posterior as :class:`EIGAgent` (rule family, announced count, "did not end" update).

    **What is computed.** When the trial of action ``t`` runs, its outcome is panel ``t + 1`` and it can only
    change the rewards of actions ``t + 1, ..., T``. If the guess of action ``t`` is right the episode ends
    whatever the trial, so every value is computed under the posterior conditioned on "the guess now is wrong"
    (the current MAP set removed). The look-ahead is ``k = min(depth, T - t)`` steps (never past the
    horizon). With ``w`` the unnormalised posterior over (rule, set) at a node, a candidate trial ``d``, its
    outcome ``y`` (lit / dark), ``q_y(r, s) = w(r, s) P(y | r, s, d)`` and ``m_y = max_s sum_r q_y(r, s)`` (the
    probability that the next guess -- the MAP set after ``y`` -- is right)::

        V_1(w, d) = sum_y [ 20 m_y - c (sum q_y - m_y) ]
        V_j(w, d) = V_1(w, d) + sum_y max_{d'} V_{j-1}(q_y with its MAP set removed, d')

    i.e. ``+20`` for solving at the next step (the episode ends there), ``-c`` for a wrong next guess, after
    which the agent conditions on that guess being wrong and picks the best next trial. The trial of
    action ``t`` maximises ``V_k`` (ties to the higher ``P(solve next)``, then the higher EIG). At every node
    that looks deeper (``j >= 2``, the root included) only the ``beam`` candidates best by ``V_1`` (ties to
    the higher outcome entropy; at the root ties to EIG as at ``depth=1``) are expanded; the others are
    not chosen (value ``-inf`` in :meth:`plan_values`). The innermost ``max_{d'} V_1`` is over all
    ``2^N - 1`` trials, so ``depth=2`` is exact up to the root beam and the step-cost approximation below.

    **What is approximated.** The env's cost of a wrong guess is ``1 + JSD(oracle, belief)``; the JSD
    depends on the future oracle and beliefs, and is replaced by the constant ``jsd_cost`` (so
    ``c = 1 + jsd_cost``). ``depth=1`` then ranks trials by ``P(solve next)`` exactly as before (the
    constant does not change that ranking) and uses the same code path, so it reproduces the previous
    one-step planner's choices; for ``depth >= 2`` the constant sets the price of solving a step later.
    Sums over sets run over the ``top_k`` most probable sets of each node (126 at most have weight once the
    count is known when N = 9, so ``top_k=128`` is exact there). float32 throughout.

    **Cost** per episode per step, in units of one ``V_1`` evaluation of a node (``O(R K D)``: ``R`` rules,
    ``K <= top_k`` sets with weight, ``D = 2^N - 1`` trials): ``1 + 2 b + (2 b)^2 + ... + (2 b)^(k-1)`` with
    ``b = min(beam, D)``, i.e. ``1 + 2 beam`` at ``depth=2`` (17 with ``beam=8``) plus one EIG evaluation
    at the root; children have fewer sets with weight (``K`` is recomputed per block of nodes), so the
    measured slowdown is smaller: depth 2 took 5.4x the depth-1 time on IVRE and 2.3x on EST (10^4
    episodes, docs/benchmark.md), where it did not raise R. Memory is bounded by ``max_elems`` floats per block.

    The ``-JSD(oracle, belief)`` part of the reward is also optimised through the beliefs: the oracle is
    computable from the panels and the rule (uniform prior over all sets, no count, no "did not end"
    updates), so the beliefs are the oracle's marginals moved just across 0.5 to agree with the MAP guess --
    the guess (and so the chance of solving, given the trials) is the same as the EIG agent's; only the
    penalty of a wrong guess is smaller (``oracle_beliefs=False`` turns this off, to measure the trial
    choice alone).

    Parameters
    ----------
    depth : int
        Steps of look-ahead ``k >= 1`` (``1``, the default: maximise ``P(solve next)``). Depth 2 measured the
        same R at 5x the cost on IVRE (docs/benchmark.md), hence the default; ``"planner:depth=2"`` in
        ``causalplay bench`` runs it.
    beam : int
        Candidates expanded at each node that looks deeper (``>= 1``).
    jsd_cost : float
        Constant stand-in for the JSD part of the cost of a wrong guess (``>= 0``; the JSD distance is in
        ``[0, sqrt(ln 2)]``).
    top_k, chunk, max_elems : int
        Sets kept per node; episodes per root block; floats per node block of the look-ahead.
    """

    name = "planner"
    def __init__(self, seed: int = 0, use_not_ended: bool = True, top_k: int = 128, chunk: int = 256,
                 oracle_beliefs: bool = True, depth: int = 1, beam: int = 8, jsd_cost: float = 0.25,
                 max_elems: int = 2**24):
        super().__init__(seed, use_not_ended)
        for name, v in (("depth", depth), ("beam", beam), ("top_k", top_k), ("chunk", chunk),
                        ("max_elems", max_elems)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{name} must be an int, got {v!r} ({type(v).__name__})")
            if v < 1:
                raise ValueError(f"{name} must be >= 1, got {v}")
        if isinstance(jsd_cost, bool) or not isinstance(jsd_cost, (int, float)) or not 0.0 <= jsd_cost < float("inf"):
            raise ValueError(f"jsd_cost must be a finite number >= 0, got {jsd_cost!r}")
        self.top_k, self.chunk, self.oracle_beliefs = top_k, chunk, oracle_beliefs
        self.depth, self.beam, self.jsd_cost, self.max_elems = depth, beam, float(jsd_cost), max_elems

    def reset(self, task: BlicketInfo, obs: torch.Tensor) -> None:
        super().reset(task, obs)
        self.oracle = task_beliefs(task, self.B, dtype=torch.float64)
        sp = self.post.space
        self.P = sp.lit_prob(self.cand).reshape(sp.n_rules, sp.n_sets, -1).float()  # [R, S, D]

    def belief_target(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        if not self.oracle_beliefs:  # ablation: the EIG agent's beliefs, only the trial choice differs
            return self.post.marginals()
        on, lit, _ = self.parse(obs)
        self.oracle.observe_(on, lit, active)
        return self.oracle.marginals()

    def solve_next_prob(self, log_w: torch.Tensor, code: torch.Tensor) -> torch.Tensor:
        """``[b, D]``: P(the next guess is right | the guess ``code`` now is wrong, trial d) for every candidate.

        ``log_w [b, H]`` is the posterior now; ``P = sum_y max_s sum_r w'(r, s) P(y | r, s, d)``.
        """
        R = self.post.space.n_rules
        w = self._guess_wrong(log_w, code)
        P = self.P
        out = torch.empty(w.shape[0], self.cand.shape[0])
        for start in range(0, w.shape[0], self.chunk):
            sl = slice(start, start + self.chunk)
            ws = w[sl].float()
            # Only sets with weight matter: K = the most any episode of the chunk still has (<= top_k).
            K = max(1, min(self.top_k, int((ws.sum(1) > 0).sum(-1).max())))
            ps, idx = stable_topk(ws.sum(1), K)  # [b, K]; a tie at the cut-off keeps the lower codes
            wk = torch.gather(ws, 2, idx[:, None, :].expand(-1, R, -1))  # [b, R, K]
            q = torch.einsum("brk,rbkd->bkd", wk, P[:, idx])  # P(y = lit, s)
            out[sl] = q.max(1).values + (ps[:, :, None] - q).max(1).values
        return out

    def _guess_wrong(self, log_w: torch.Tensor, code: torch.Tensor) -> torch.Tensor:
        """``[b, R, S]`` posterior weights with the set ``code`` removed, renormalised."""
        w = log_w.exp().reshape(-1, self.post.space.n_rules, self.post.space.n_sets).clone()
        w[torch.arange(w.shape[0]), :, code] = 0.0  # condition on "the current guess is wrong"
        return w / w.sum((1, 2), keepdim=True).clamp_min(1e-30)

    def plan_values(self, log_w: torch.Tensor, code: torch.Tensor, steps: int,
                    rank: torch.Tensor | None = None) -> torch.Tensor:
        """``[b, D]``: ``V_steps`` (expected reward of the next ``steps`` actions, see the class docstring) of every
        candidate trial, given the posterior ``log_w [b, H]`` and that the guess ``code [b]`` now is wrong.

        Candidates outside the beam get ``-inf`` when ``steps >= 2``. ``rank [b, D]`` (optional) replaces
        ``V_1`` as the score that picks the root's beam.
        """
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be an int >= 1, got {steps!r}")
        return self._values(self._guess_wrong(log_w, code).float(), steps, rank)

    def _values(self, w: torch.Tensor, k: int, rank: torch.Tensor | None = None) -> torch.Tensor:
        """``V_k`` of every candidate for each node's unnormalised weights ``w [n, R, S]``."""
        R, S, D = self.post.space.n_rules, self.post.space.n_sets, self.cand.shape[0]
        rw = self.task.reward_spec  # the task's constants, not hard-coded
        c, win = rw.step_cost + self.jsd_cost, rw.solve_reward
        ps_all = w.sum(1)
        kmax = max(1, min(self.top_k, int((ps_all > 0).sum(-1).max()))) if w.shape[0] else 1
        block = max(1, self.max_elems // (R * kmax * D))
        out = torch.empty(w.shape[0], D)
        for start in range(0, w.shape[0], block):
            sl = slice(start, start + block)
            ws, ps = w[sl], ps_all[sl]
            K = max(1, min(self.top_k, int((ps > 0).sum(-1).max())))
            # sets in code order within the kept K, so argmax ties go to the lowest code as in BatchBeliefs.map_code
            idx = stable_topk(ps, K)[1].sort(-1).values  # [n, K]
            pk = torch.gather(ps, 1, idx)
            wk = torch.gather(ws, 2, idx[:, None, :].expand(-1, R, -1))  # [n, R, K]
            Pk = self.P[:, idx]  # [R, n, K, D]
            q = torch.einsum("brk,rbkd->bkd", wk, Pk)  # mass of (lit, set)
            m = q.max(1).values + (pk[:, :, None] - q).max(1).values  # P(solve next), unnormalised
            v1 = (win + c) * m - c * pk.sum(-1, keepdim=True)
            if k == 1:
                out[sl] = v1
                continue
            if rank is not None:
                score = rank[sl]
            else:  # ties to the more informative trial (outcome entropy, relative to the node's mass)
                tot = pk.sum(-1, keepdim=True).clamp_min(1e-30)
                p = (q.sum(1) / tot).clamp(1e-7, 1 - 1e-7)
                score = v1 / tot + 1e-4 * -(p * p.log2() + (1 - p) * (1 - p).log2())
            J = min(self.beam, D)
            sel = stable_topk(score, J)[1]  # [n, J]
            n = sel.shape[0]
            p_lit = torch.gather(Pk, 3, sel[None, :, None, :].expand(R, -1, K, -1))  # [R, n, K, J]
            lit = wk.permute(1, 0, 2)[..., None] * p_lit  # [R, n, K, J]
            child = torch.stack([lit, wk.permute(1, 0, 2)[..., None] - lit], -1)  # [R, n, K, J, 2]
            child = child.permute(1, 3, 4, 0, 2).contiguous()  # [n, J, 2, R, K]
            # the next guess (MAP set) of each child: it is wrong there (log: ties relative to the node's mass)
            amap = argmax_tol(child.sum(3).log(), -1)
            child.scatter_(-1, amap[..., None, None].expand(-1, -1, -1, R, 1), 0.0)
            full = torch.zeros(n, J, 2, R, S)
            full.scatter_(-1, idx[:, None, None, None, :].expand(-1, J, 2, R, -1), child)
            fut = self._values(full.reshape(-1, R, S), k - 1).max(-1).values.reshape(n, J, 2).sum(-1)
            res = torch.full_like(v1, -torch.inf)
            res.scatter_(1, sel, v1.gather(1, sel) + fut)
            out[sl] = res
        return out

    def choose(self, active: torch.Tensor, code: torch.Tensor) -> torch.Tensor:
        log_w = self.post.log_w[active]
        value = self.solve_next_prob(log_w, code[active])
        eig = eig_bits(self.post.space, log_w, self.cand, self.target).float()
        # Maximise P(solve next); among (near-)ties prefer the more informative trial.
        score = value + 1e-4 * eig / max(1.0, float(eig.max()))
        k = min(self.depth, self.task.horizon - self.t)  # rewards after action T do not exist
        if k >= 2:
            v = self.plan_values(log_w, code[active], k, rank=score)
            return self.cand[argmax_lex(v, value, eig)]  # ties in V_k: the depth-1 order
        return self.cand[argmax_lex(value, eig)]


class NexiomEIGAgent(Agent):
    """The exact EIG learner on the Nexiom task (family ``"nexiom"``): tests the trial of maximal EIG about
    (blicket set, rule) -- the people judged both -- and answers with the MAP set and the rule's posterior once no
    trial carries more than ``min_eig`` bits (nothing left to learn) or the budget is used up.

    Knows the announced count (the observation's ``count``) and both candidate rules (uniform prior).
    """

    name = "eig"

    def __init__(self, seed: int = 0, min_eig: float = 1e-9):
        super().__init__(seed)
        self.min_eig = float(min_eig)

    def reset(self, task: BlicketInfo, obs: torch.Tensor) -> None:
        super().reset(task, obs)
        self.post = task_beliefs(task, self.B, dtype=torch.float64)
        self.post.condition_count_(self.parse(obs)[2])
        self.post.normalise_()  # the count mask only masks
        self.cand = torch.as_tensor(all_trials(task.n_objects)).double()
        self.ran = torch.zeros(self.B, dtype=torch.bool)

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        on, lit, _ = self.parse(obs)
        self.post.observe_(on, lit, self.ran)
        eig = eig_bits(self.post.space, self.post.log_w, self.cand, "joint")
        best = eig.max(-1)
        pick = argmax_tol(eig)  # exact ties (symmetric trials): the lowest code
        tests = self.task.obs_layout.get(obs, "tests")[:, 0].round().long()
        stop = (best.values <= self.min_eig) | (tests >= self.task.horizon - 1)
        guess = self.post.code_to_set(self.post.map_code()).double()
        p_conj = self.post.rule_marginals()[:, 1]  # the task's rules are (disjunctive, conjunctive)
        self.ran = active & ~stop
        return torch.cat([self.cand[pick], 0.25 + 0.5 * guess, stop.double()[:, None],
                          p_conj.clamp(0, 1)[:, None]], 1)
