"""Our cleaner variants of the IVRE paper's heuristic agents, batched, re-implemented from their one-line
descriptions (no quirks of the public code): ``random-uniform``, ``bayes-exact``, ``naive-exact``,
``search-random-exact``, ``search-naive-exact``. The paper-faithful agents under the paper's names are in
:mod:`causalplay.agents.paper`."""

from __future__ import annotations

import torch

from causalplay.core.ties import tied_max

from .base import BlicketInfo, MemoryAgent, task_beliefs

__all__ = ["RandomAgent", "BayesAgent", "NaiveAgent", "SearchRandomAgent", "SearchNaiveAgent"]


class RandomAgent(MemoryAgent):
    """Uniformly random trial and belief values in [0, 1]. Knows nothing."""

    name = "random-uniform"

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        self.remember(obs)
        return torch.rand(self.B, 2 * self.task.n_objects, generator=self.gen, dtype=torch.float64)


class BayesAgent(MemoryAgent):
    """Bernoulli naive Bayes belief with random trials (each object in the trial with probability 1/2).

    Each object is treated independently: prior ``P(blicket) = count / N`` (knows the announced count), and
    every panel with the object on is a Bernoulli observation with ``P(lit | on, blicket) = p_hit`` and
    ``P(lit | on, not blicket) = p_false``. It does not know the rule.
    """

    name = "bayes-exact"

    def __init__(self, seed: int = 0, p_hit: float = 0.95, p_false: float = 0.5):
        super().__init__(seed)
        self.p_hit, self.p_false = p_hit, p_false

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        on, lit, count = self.remember(obs)
        N = self.task.n_objects
        onf = self.panels.double()
        lits = self.lits.double()[..., None]
        n_lit = (onf * lits).sum(1)
        n_off = (onf * (1 - lits)).sum(1)
        prior = (count.double() / N).clamp(1e-3, 1 - 1e-3)[:, None]
        log_b = prior.log() + n_lit * torch.log(torch.tensor(self.p_hit)) + n_off * torch.log1p(
            torch.tensor(-self.p_hit))
        log_n = (1 - prior).log() + n_lit * torch.log(torch.tensor(self.p_false)) + n_off * torch.log1p(
            torch.tensor(-self.p_false))
        belief = torch.sigmoid(log_b - log_n)
        trial = (torch.rand(self.B, N, generator=self.gen) < 0.5).double()
        return torch.cat([trial, belief], 1)


class NaiveAgent(MemoryAgent):
    """One untested object per trial (random among those never on the machine; any object once all were).

    Belief by co-occurrence: an object is a blicket if it was on in a lit panel and never in an unlit one;
    an object never tested is a blicket iff the announced count is more than half the objects. Knows the
    count, not the rule.
    """

    name = "naive-exact"

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        on, lit, count = self.remember(obs)
        N = self.task.n_objects
        in_lit = (self.panels & self.lits[..., None]).any(1)
        in_off = (self.panels & ~self.lits[..., None]).any(1)
        tested = self.panels.any(1)
        belief = torch.where(tested, in_lit & ~in_off, (count > N / 2)[:, None].expand(-1, N)).double()
        return torch.cat([single_object_trials(~tested, self.gen), belief], 1)


def single_object_trials(preferred: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """One object per row, random among ``preferred`` (among all when a row has none). ``[B, N]`` float64."""
    B, N = preferred.shape
    score = torch.rand(B, N, generator=gen, dtype=torch.float64) + preferred.double()
    pick = score.argmax(-1)
    return torch.nn.functional.one_hot(pick, N).double()


class SearchAgent(MemoryAgent):
    """Belief = the fraction of all blicket assignments consistent with the panels (knows the task's rules,
    ignores the count): the posterior marginal under a uniform prior over all ``2^N`` sets (core engine)."""

    def reset(self, task: BlicketInfo, obs: torch.Tensor) -> None:
        super().reset(task, obs)
        self.post = task_beliefs(task, self.B, dtype=torch.float64)  # its marginals are the belief: exact 0.5s matter

    def observe(self, obs: torch.Tensor, active: torch.Tensor) -> None:
        """Remember the panel just shown and update the posterior with it."""
        on, lit, _ = self.remember(obs)
        self.post.observe_(on, lit, active)

    def belief(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        self.observe(obs, active)
        # Fractions of consistent sets; rounding to 1e-9 keeps an exact 1/2 at 1/2 (not solved either way).
        return torch.round(self.post.marginals() * 1e9) / 1e9


class SearchRandomAgent(SearchAgent):
    """Search belief (see :class:`SearchAgent`) with random trials (each object with probability 1/2)."""

    name = "search-random-exact"

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        m = self.belief(obs, active)
        trial = (torch.rand(self.B, self.task.n_objects, generator=self.gen) < 0.5).double()
        return torch.cat([trial, m], 1)


class SearchNaiveAgent(SearchAgent):
    """Search belief with single-object trials on the most uncertain object (marginal closest to 1/2; ties
    broken at random)."""

    name = "search-naive-exact"

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        m = self.belief(obs, active)
        unc = -(m - 0.5).abs()
        best = tied_max(unc, tol=1e-6)  # the marginals are rounded to 1e-9: ties up to rounding, broken at random
        return torch.cat([single_object_trials(best, self.gen), m], 1)
