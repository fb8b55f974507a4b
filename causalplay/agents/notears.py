"""NOTEARS agent: naive single-object trials, belief from DAGMA (NOTEARS-family) structure learning."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import torch

from .base import BlicketInfo, MemoryAgent
from .heuristics import single_object_trials

__all__ = ["NotearsAgent"]


class NotearsAgent(MemoryAgent):
    """Trials as :class:`~causalplay.agents.heuristics.NaiveAgent`; belief from a linear DAG learned by
    ``dagma.linear.DagmaLinear`` (least-squares loss, the maintained successor of NOTEARS) on the panels seen.

    Data: one row per panel, columns = the N objects (0/1) and ``lit``; only edges object -> lit are allowed
    (edges into objects are excluded: objects are placed by the experimenter). Object ``i`` is believed a
    blicket iff the edge ``i -> lit`` survives DAGMA's ``w_threshold`` (0.3). With no lit panel, or a single
    panel, nothing can be learned and the belief is all 0. Knows nothing about the rule or the count.
    One fit per episode per step (``lambda1=0.02, T=2, warm_iter=1000, max_iter=2000, lr=0.01``), so it is the
    slow agent of the benchmark.
    """

    name = "notears-exact"

    def __init__(self, seed: int = 0, lambda1: float = 0.02, w_threshold: float = 0.3, iters: int = 1000,
                 lr: float = 0.01):
        super().__init__(seed)
        self.lambda1, self.w_threshold, self.iters, self.lr = lambda1, w_threshold, iters, lr

    def reset(self, task: BlicketInfo, obs: torch.Tensor) -> None:
        from dagma.linear import DagmaLinear  # optional dependency: `pip install causalplay[notears]`

        super().reset(task, obs)
        self._dagma = DagmaLinear
        N = task.n_objects
        self._exclude = tuple((j, i) for j in range(N + 1) for i in range(N) if i != j)
        self.belief = torch.zeros(self.B, N, dtype=torch.float64)

    def fit_one(self, panels: np.ndarray, lit: np.ndarray) -> np.ndarray:
        """Belief (0/1 per object) from one episode's panels ``[T, N]`` and outcomes ``[T]``."""
        N = panels.shape[1]
        if panels.shape[0] < 2 or not lit.any() or lit.all():
            return np.zeros(N)
        X = np.concatenate([panels, lit[:, None]], 1).astype(np.float64)
        with contextlib.redirect_stderr(io.StringIO()):  # dagma prints tqdm bars
            W = self._dagma("l2").fit(X, lambda1=self.lambda1, w_threshold=self.w_threshold, T=2,
                                      warm_iter=self.iters, max_iter=2 * self.iters, lr=self.lr,
                                      exclude_edges=self._exclude)
        return (W[:N, N] >= self.w_threshold).astype(np.float64)

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        self.remember(obs)
        panels, lits = self.panels.numpy(), self.lits.numpy()
        for b in torch.nonzero(active).flatten().tolist():
            self.belief[b] = torch.as_tensor(self.fit_one(panels[b], lits[b]))
        trial = single_object_trials(~self.panels.any(1), self.gen)
        return torch.cat([trial, self.belief.clone()], 1)
