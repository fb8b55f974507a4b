"""Agents of the example plug-in: ``my-agent`` plays causalplay's Blicket tasks; ``halving`` and ``random`` play this
plug-in's own ``oneblicket`` family."""

from __future__ import annotations

import torch

from causalplay.agents import Agent, MemoryAgent, PlayerInfo


class MyAgent(MemoryAgent):
    """Tests one object alone per step, lowest untested index first; believes an object is a blicket once it lit
    the machine alone, is not one once it stayed dark alone, and ``count / N`` for the rest. Knows the announced
    count; assumes a disjunctive machine."""

    name = "my-agent"
    #: the task families this agent plays (causalplay refuses it for others)
    families = ("blicket",)

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        on, lit, count = self.remember(obs)  # every panel so far: self.panels [B, t, N], self.lits [B, t]
        N = self.task.n_objects
        single = self.panels & (self.panels.sum(-1) == 1)[..., None]  # panels with one object on
        lit_alone = (single & self.lits[..., None]).any(1)
        dark_alone = (single & ~self.lits[..., None]).any(1)
        belief = (count.double() / N)[:, None].expand(-1, N).clone()
        belief[dark_alone], belief[lit_alone] = 0.0, 1.0
        untested = ~(single.any(1))
        k = torch.argmax(untested.int(), 1)  # the lowest untested index (argmax returns the first maximum)
        trial = torch.nn.functional.one_hot(k, N).double()
        return torch.cat([trial, belief], 1)


class HalvingAgent(Agent):
    """Puts the lower half of the remaining candidates on the machine; guesses once one candidate is left. Solves
    every ``oneblicket`` episode in ``ceil(log2 N)`` tests."""

    name = "halving"

    def reset(self, task: PlayerInfo, obs: torch.Tensor) -> None:
        super().reset(task, obs)
        self.candidates = torch.ones(self.B, task.n_objects, dtype=torch.bool)
        self.last = torch.zeros(self.B, task.n_objects, dtype=torch.bool)

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        lay = self.task.obs_layout
        if self.t > 0:  # what the last test showed
            lit = lay.get(obs, "lit")[:, 0] > 0.5
            self.candidates &= torch.where(lit[:, None], self.last, ~self.last)
        self.t += 1
        left = self.candidates.sum(1, keepdim=True)
        rank = self.candidates.long().cumsum(1)  # 1-based rank of each candidate, in index order
        self.last = self.candidates & (rank <= left // 2)
        belief = torch.where(left == 1, self.candidates.double(), torch.full_like(self.candidates, 0.4,
                                                                                  dtype=torch.float64))
        return torch.cat([self.last.double(), belief], 1)


class RandomAgent(Agent):
    """Uniformly random trial and belief values in [0, 1]: the uniform baseline. Knows nothing."""

    name = "random"

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        return torch.rand(self.B, 2 * self.task.n_objects, generator=self.gen, dtype=torch.float64)


#: The ``oneblicket`` family's agents
AGENTS = {c.name: c for c in (HalvingAgent, RandomAgent)}
