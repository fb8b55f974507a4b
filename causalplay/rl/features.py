"""What the learner sees: the task's ``"history"`` observation, optionally with the exact posterior appended.

:class:`FeatureMap` is a pure function of the history observation (no hidden state), so training (through
:class:`causalplay.rl.envs.RLVecEnv`) and evaluation (through :class:`causalplay.agents.rl.RLAgent`) compute
the same features from the same observation.

With ``belief=True`` (``causalplay train --belief-input``) the features end with the exact posterior's blicket
marginals ``P(object i is a blicket | panels shown, announced count, task rules)`` (``N`` values) and, when the
task allows more than one rule, the rule marginals (``R`` values). The posterior is the core engine's
(:func:`causalplay.core.exact.log_likelihood` on the task's :class:`~causalplay.core.spec.HypothesisSpace`), uniform
over blicket sets of the announced size and over the task's rules.

With ``tracker=True`` as well (``causalplay train --belief-tracker``) the posterior also conditions on the one
observation the marginals above leave out: **the env did not end after a guess**, so the blicket set the last
action's beliefs rounded to is not the answer (the episode ends exactly when every belief is on the right side
of 0.5). Those rejected sets are excluded for the rest of the episode -- the exact learner of the EIG agents
does the same (:class:`causalplay.agents.bayesian.BayesianAgent`, ``use_not_ended``) -- and the features end
with the marginals of that posterior, its MAP blicket set (``N`` values in {0, 1}) and the rule marginals.
The history observation holds only the *last* belief, so the rejected sets are the one piece of state a
tracker keeps: :meth:`FeatureMap.reset` / :meth:`FeatureMap.reset_rows` start episodes, and each call of a
tracker (once per env step per row) adds the guess its observation shows.
"""

from __future__ import annotations

import numpy as np
import torch

from causalplay.envs.task import ObsLayout

__all__ = ["FeatureMap"]


class FeatureMap:
    """History observation ``[B, D]`` -> learner features ``[B, D (+ N (+ R))]`` (float32 numpy).

    Parameters
    ----------
    n_objects, horizon : int
        The task's ``N`` and ``T``.
    rules : tuple of Rule
        The task's rules (what its instructions tell every player).
    layout : ObsLayout
        The task's ``"history"`` layout (:func:`causalplay.envs.core.history_layout`).
    belief : bool
        Append the exact posterior marginals.
    tracker : bool
        Condition the posterior on the guesses the env rejected, and append its MAP blicket set (implies
        ``belief``; stateful, see the module docstring).
    """

    def __init__(self, n_objects: int, horizon: int, rules: tuple, layout: ObsLayout, belief: bool = False,
                 tracker: bool = False):
        if "history" not in layout or "count" not in layout:
            raise ValueError("RL features need the task's 'history' observation (obs_mode='history'); got fields "
                             f"{[f.name for f in layout.fields]}")
        self.tracker = bool(tracker)
        belief = bool(belief) or self.tracker
        self.N, self.T, self.layout, self.belief = int(n_objects), int(horizon), layout, bool(belief)
        self.rules = tuple(rules)
        self.obs_size = layout.size
        self._space = None
        if self.belief:
            from causalplay.learners.api import make_spec
            from causalplay.core.spec import HypothesisSpace

            self._space = HypothesisSpace.build(make_spec(self.N, self.rules, blicket_prior=0.5),
                                                dtype=torch.float64)
            self._sizes = self._space.sets.sum(-1).round().long()  # [S]
            self._table = self._trial_table()
            codes = self._space.set_codes  # [S] bit code of every set -> its index, for reading guesses
            self._set_of_code = torch.full((2**self.N,), -1, dtype=torch.long)
            self._set_of_code[codes] = torch.arange(codes.shape[0])
        self.n_rules = len(self.rules)
        self._rejected = None  # tracker state: [B, S] blicket sets the env has rejected this episode
        self._steps = None  # tracker state: [B] calls since the row's episode started

    @classmethod
    def for_task(cls, task, belief: bool = False, tracker: bool = False) -> FeatureMap:
        """From a :class:`causalplay.envs.task.Task` (or :class:`causalplay.agents.TaskInfo`) in history mode."""
        layout = getattr(task, "layout", None)
        if layout is None:
            from causalplay.envs.core import history_layout

            layout = history_layout(task.n_objects, task.horizon)
        return cls(task.n_objects, task.horizon, tuple(task.rules), layout, belief, tracker)

    @property
    def size(self) -> int:
        """Length of one feature vector."""
        extra = (self.N + (self.n_rules if self.n_rules > 1 else 0)) if self.belief else 0
        return self.obs_size + extra + (self.N if self.tracker else 0)

    # ---- tracker state -----------------------------------------------------------------------------------
    def reset(self, batch_size: int) -> None:
        """Start a batch of ``batch_size`` episodes (a tracker forgets every rejected guess)."""
        if self.tracker:
            self._rejected = torch.zeros(batch_size, self._space.n_sets, dtype=torch.bool)
            self._steps = np.zeros(batch_size, dtype=np.int64)

    def reset_rows(self, rows: np.ndarray) -> None:
        """Start new episodes in ``rows`` (a vector env's auto-reset)."""
        if self.tracker:
            self._rejected[torch.as_tensor(rows, dtype=torch.long)] = False
            self._steps[rows] = 0

    def _rejected_sets(self, o: torch.Tensor, rows: np.ndarray | None, commit: bool) -> torch.Tensor:
        """``[b, S]`` rejected blicket sets of ``rows`` after reading the guess in their observations ``o``."""
        if self._rejected is None:
            raise RuntimeError("a belief tracker needs reset(batch_size) before its first call")
        rows = np.arange(self._rejected.shape[0]) if rows is None else np.asarray(rows)
        if len(rows) != o.shape[0]:
            raise ValueError(f"{o.shape[0]} observations for {len(rows)} tracked rows")
        at = torch.as_tensor(rows, dtype=torch.long)
        last = self.layout.get(o, "last_belief")  # the previous action's beliefs
        # a guess exists after the first step, and names a set only if no belief sits exactly on 0.5 (which is
        # on neither side, so nothing could have been accepted); the env going on means it was wrong
        made = torch.from_numpy(self._steps[rows] >= 1) & ((last - 0.5).abs() > 0).all(-1)
        code = ((last > 0.5).long() << torch.arange(self.N)).sum(-1)
        rej = self._rejected[at].clone()
        idx = torch.nonzero(made).squeeze(-1)
        rej[idx, self._set_of_code[code[idx]]] = True
        if commit:
            self._rejected[at] = rej
            self._steps[rows] += 1
        return rej

    def _trial_table(self) -> torch.Tensor:
        """``[2 * 2^N + 1, H]``: the log-likelihood of every (trial, outcome) from the core engine, then a zero
        row for padding (row ``code`` = trial ``code`` stayed dark, ``2^N + code`` = it lit), built once."""
        from causalplay.core.exact import log_likelihood

        sp, N = self._space, self.N
        trials = ((torch.arange(2**N)[:, None] >> torch.arange(N)) & 1).to(sp.dtype)[:, None, :]  # [2^N, 1, N]
        rows = [log_likelihood(sp, trials, torch.full((2**N, 1), float(lit), dtype=sp.dtype)) for lit in (0, 1)]
        return torch.cat([*rows, torch.zeros(1, sp.n_hypotheses, dtype=sp.dtype)])

    def posterior(self, obs: np.ndarray | torch.Tensor, rejected: torch.Tensor | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
        """Exact blicket marginals ``[B, N]`` and rule marginals ``[B, R]`` from history observations (with the
        blicket sets ``rejected [B, S]`` excluded, when given)."""
        return self._posterior(obs, rejected)[:2]

    def _posterior(self, obs, rejected=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        o = torch.as_tensor(np.asarray(obs), dtype=torch.float64)
        B, N, T = o.shape[0], self.N, self.T
        hist = self.layout.get(o, "history").reshape(B, T, N + 1)
        count = self.layout.get(o, "count")[:, 0].round().long()
        shown = self.layout.get(o, "shown")[:, 0].round().long()
        mask = torch.arange(T)[None, :] < shown[:, None]
        sp = self._space
        code = ((hist[..., :N] > 0.5).long() << torch.arange(N)).sum(-1) + (hist[..., N] > 0.5).long() * 2**N
        idx = torch.where(mask, code, 2 * 2**N)  # [B, T]; padding reads the zero row
        lw = sp.log_prior[None] + torch.nn.functional.embedding_bag(idx, self._table, mode="sum")
        bad = self._sizes[None, :] != count[:, None]
        if rejected is not None:
            bad = bad | rejected
        lw = lw.masked_fill(bad.repeat(1, sp.n_rules), -torch.inf)
        z = torch.logsumexp(lw, -1, keepdim=True)
        ok = torch.isfinite(z)  # a padded / impossible row (never in a real episode): uniform
        w = torch.where(ok, (lw - torch.where(ok, z, 0.0)).exp(), 1.0 / lw.shape[-1])
        w = w.reshape(B, sp.n_rules, sp.n_sets)
        blickets = (w.sum(1) @ sp.sets).clamp(0.0, 1.0)
        return blickets, w.sum(-1), w

    def __call__(self, obs: np.ndarray | torch.Tensor, rows: np.ndarray | None = None,
                 commit: bool = True) -> np.ndarray:
        """Features of ``obs`` (a tracker: of ``rows`` of its batch, all by default; ``commit=False`` reads a
        final observation without recording its guess)."""
        o = np.asarray(obs.numpy() if isinstance(obs, torch.Tensor) else obs, dtype=np.float32)
        if o.ndim != 2 or o.shape[1] != self.obs_size:
            raise ValueError(f"expected history observations of shape (B, {self.obs_size}), got {o.shape}")
        if not self.belief:
            return o
        rejected = self._rejected_sets(torch.as_tensor(o, dtype=torch.float64), rows, commit) \
            if self.tracker else None
        blickets, rules, w = self._posterior(o, rejected)
        parts = [o, blickets.numpy().astype(np.float32)]
        if self.tracker:  # the MAP blicket set (rule summed out: only the set is judged) of the tracked posterior
            best = w.sum(1).argmax(-1)
            parts.append(self._space.sets[best].numpy().astype(np.float32))
        if self.n_rules > 1:
            parts.append(rules.numpy().astype(np.float32))
        return np.concatenate(parts, 1)
