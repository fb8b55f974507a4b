"""Any play of the Blicket task scored against the ideal learner: how informative each chosen test was.

The ideal learner is exact Bayesian inference (:mod:`causalplay.core.exact`) over (blicket set, rule) with the rules
disjunctive and conjunctive, each object a blicket with probability 1/2 (or, where the player was told the count, the
sets of that size equally likely) and a noise-free machine (``noise``). For each test the player chose, given
everything seen before it (demonstrations included):

* ``eig_bits`` -- the expected information gain (joint target, bits; :func:`causalplay.core.eig.eig_bits`) of the
  chosen test;
* ``best_eig_bits`` -- the largest EIG of any object set then (every set, the empty one included);
* ``regret_bits`` -- the difference (0 for a test tied with the best within :mod:`causalplay.core.ties`'s tolerance);
* ``best`` -- whether the chosen test was one of the best.

Per player (:func:`summarise`): the means of those, and ``tests_to_identify`` -- the number of own tests after which
the ideal learner, seeing what the player saw, puts at least ``identified`` (default 0.99) on one hypothesis (0: the
demonstrations sufficed; NaN: never within the player's tests).

Inputs: people (:class:`causalplay.data.TrialData`: :func:`score_people`), any list of histories with the positions
the player chose (:func:`score_histories`, e.g. transcripts), and agents played on designs through the benchmark's one
play loop (:func:`record_nexiom`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from ..core import checks as V
from ..core.design import Design
from ..core.eig import eig_bits
from ..core.exact import log_likelihood
from ..core.history import History, HistoryBatch, set_to_code
from ..core.spec import HypothesisSpace, WorldSpec
from ..core.ties import tied_max

if TYPE_CHECKING:
    from ..data import TrialData

__all__ = ["score_histories", "score_people", "record_nexiom", "EpisodeRecorder", "summarise", "ideal_space"]

_F64 = torch.float64


def ideal_space(n_objects: int, noise: float = 0.0) -> HypothesisSpace:
    """The ideal learner's hypotheses: every blicket set x (disjunctive, conjunctive), blicket prior 1/2."""
    return HypothesisSpace.build(WorldSpec.from_options(n_objects, ("disjunctive", "conjunctive"), blicket_prior=0.5,
                                                        noise=noise))


def score_histories(histories: Sequence[History], n_objects: int, *, chosen: Sequence | None = None,
                    told: Sequence[int | None] | None = None, ids: Sequence | None = None, noise: float = 0.0,
                    identified: float = 0.99) -> pd.DataFrame:
    """One row per chosen test of each history, scored against the ideal learner (module docstring).

    Parameters
    ----------
    histories : sequence of History
        Everything each player saw, in order.
    n_objects : int
    chosen : sequence of int arrays, optional
        Per history, the positions the player chose (the others are demonstrations); default all.
    told : sequence of int or None, optional
        Per history, the blicket count the player was told.
    ids : sequence, optional
        Labels of the histories (default ``0 .. B-1``).
    noise : float
        Machine noise the ideal learner assumes (0: the deterministic machine). A history impossible under it
        raises.
    identified : float
        Posterior mass on one hypothesis that counts as identified.

    Returns
    -------
    DataFrame
        ``id, choice`` (1-based own test), ``position`` (0-based in the history), ``objects_on``, ``lit``,
        ``eig_bits``, ``best_eig_bits``, ``regret_bits``, ``best``, ``entropy_bits`` (the ideal learner's before the
        test), ``max_posterior_after``.
    """
    n = V.integer(n_objects, "n_objects", low=1, high=12)
    hs = list(histories)
    B = len(hs)
    ids = list(range(B)) if ids is None else list(ids)
    chosen = [np.arange(len(h)) for h in hs] if chosen is None else [np.asarray(c, dtype=np.int64) for c in chosen]
    told = [None] * B if told is None else list(told)
    if not len(ids) == len(chosen) == len(told) == B:
        raise ValueError(f"ids, chosen and told need one entry per history ({B}), got {len(ids)}, {len(chosen)}, "
                         f"{len(told)}")
    identified = V.real(identified, "identified", low=0, high=1, low_open=True)
    space = ideal_space(n, noise)
    # every prefix before a chosen test, and each full history (for the posterior after the last test)
    rows, prefixes = [], []
    for b, h in enumerate(hs):
        if len(h) and h.n_objects != n:
            raise ValueError(f"history {ids[b]!r} has {h.n_objects} objects, expected n_objects={n}")
        for k, j in enumerate(chosen[b]):
            if not 0 <= j < len(h):
                raise ValueError(f"history {ids[b]!r}: chosen position {int(j)} is outside its {len(h)} tests")
            rows.append((b, k + 1, int(j)))
            prefixes.append(History(h.trials[:j + 1], h.lit[:j + 1]))  # the test included: sliced below
    if not rows:
        return pd.DataFrame(columns=["id", "choice", "position", "objects_on", "lit", "eig_bits", "best_eig_bits",
                                     "regret_bits", "best", "entropy_bits", "max_posterior_after"])
    batch = HistoryBatch.from_histories(prefixes, n)
    last = batch.mask.sum(-1) - 1  # [R] the chosen test's position in its prefix
    before = batch.mask.clone()
    before[torch.arange(len(rows)), last] = False
    log_prior = _told_prior(space, [told[b] for b, _, _ in rows])
    lw_before = _normalise(log_prior + log_likelihood(space, batch.trials, batch.lit, before), ids, rows)
    lw_after = _normalise(log_prior + log_likelihood(space, batch.trials, batch.lit, batch.mask), ids, rows)
    eig = eig_bits(space, lw_before, space.sets, "joint").clamp_min(0.0)  # [R, 2**N] by set code; no -0.0
    codes = torch.tensor([set_to_code(np.flatnonzero(hs[b].trials[j])) for b, _, j in rows])
    mine = eig.gather(1, codes[:, None]).squeeze(1)
    best = eig.max(1).values
    is_best = tied_max(eig, 1).gather(1, codes[:, None]).squeeze(1)
    ent = -(lw_before.exp() * lw_before.clamp_min(-1e300)).nan_to_num().sum(-1) / math.log(2)
    return pd.DataFrame({
        "id": [ids[b] for b, _, _ in rows], "choice": [k for _, k, _ in rows], "position": [j for _, _, j in rows],
        "objects_on": [tuple(np.flatnonzero(hs[b].trials[j]).tolist()) for b, _, j in rows],
        "lit": [bool(hs[b].lit[j]) for b, _, j in rows], "eig_bits": mine.numpy(), "best_eig_bits": best.numpy(),
        "regret_bits": torch.where(is_best, 0.0, best - mine).numpy(), "best": is_best.numpy(),
        "entropy_bits": ent.numpy(), "max_posterior_after": lw_after.exp().max(-1).values.numpy()})


def _told_prior(space: HypothesisSpace, counts: list) -> torch.Tensor:
    """``[R, H]`` log prior: the space's, restricted to sets of the told size where a count was told."""
    lp = space.log_prior.expand(len(counts), -1).clone()
    sizes = space.sets.sum(-1).round().long().repeat(space.n_rules)  # [H] rule-major
    for i, k in enumerate(counts):
        if k is not None:
            lp[i] = lp[i].masked_fill(sizes != int(k), -math.inf)
    return lp


def _normalise(lw: torch.Tensor, ids, rows) -> torch.Tensor:
    z = torch.logsumexp(lw, -1, keepdim=True)
    if bad := torch.nonzero(~torch.isfinite(z.squeeze(-1))).flatten().tolist():
        b, k, _ = rows[bad[0]]
        raise ValueError(f"history {ids[b]!r} is impossible for the ideal learner by its test {k} (a noise-free "
                         f"machine cannot give those outcomes; {len(bad)} such test(s)); score it with noise > 0")
    return lw - z


def summarise(scores: pd.DataFrame, identified: float = 0.99, by: pd.Series | None = None) -> pd.DataFrame:
    """Per player: ``n_tests``, means of ``eig_bits``/``best_eig_bits``/``regret_bits``, ``frac_best``,
    ``total_regret_bits`` and ``tests_to_identify`` (first own test after which the ideal learner's largest posterior
    probability reaches ``identified``; NaN if never). ``by``: a label per player (e.g. the rule) added as a column."""
    g = scores.groupby("id", sort=False)
    out = pd.DataFrame({"n_tests": g.size(), "eig_bits": g["eig_bits"].mean(),
                        "best_eig_bits": g["best_eig_bits"].mean(), "regret_bits": g["regret_bits"].mean(),
                        "total_regret_bits": g["regret_bits"].sum(), "frac_best": g["best"].mean()})
    hit = scores[scores["max_posterior_after"] >= identified].groupby("id", sort=False)["choice"].min()
    out["tests_to_identify"] = hit.reindex(out.index).astype(float)
    if by is not None:
        out[by.name or "group"] = by.reindex(out.index).to_numpy()
    return out


def score_people(data: TrialData, *, noise: float = 0.0, identified: float = 0.99) -> pd.DataFrame:
    """:func:`score_histories` of trial data: each participant's own tests (demonstrations seen, not scored), the told
    counts of ``n_blickets``; ``id`` is the participant code."""
    from ..data import TrialData

    if not isinstance(data, TrialData):
        raise TypeError(f"data must be causalplay.data.TrialData, got {type(data).__name__}")
    hist, chosen, told = data.histories(), data.choice_indices(), data.known_counts()
    return score_histories([hist[k] for k in data.ids], data.n_objects, chosen=[chosen[k] for k in data.ids],
                           told=[told[k] for k in data.ids], ids=data.ids, noise=noise, identified=identified)


def record_nexiom(designs: Sequence[Design], *, seed: int = 0, max_tests: int = 30) -> EpisodeRecorder:
    """A Nexiom batch task with one episode per design that writes down every test, for the benchmark's one play loop:

    ::

        from causalplay.agents import make_agent
        from causalplay.bench.play import play
        rec = record_nexiom(nexiom_designs())
        play(rec, make_agent("eig", family="nexiom"))
        summarise(rec.score())

    The Nexiom task shows no demonstrations (designs with some are refused) and tells the blicket count (it is in the
    observation), so the ideal learner is told it too.
    """
    from ..envs.nexiom_core import NexiomBatch

    designs = list(designs)
    if not designs or any(not isinstance(d, Design) for d in designs):
        raise TypeError("designs must be a non-empty sequence of causalplay.design.Design")
    if bad := [d for d in designs if d.demonstrations]:
        raise ValueError(f"the Nexiom task shows no demonstrations; got {bad[0]}")
    n = designs[0].n_objects
    if any(d.n_objects != n for d in designs):
        raise ValueError(f"designs must share n_objects, got {sorted({d.n_objects for d in designs})}")
    task = NexiomBatch(len(designs), np.random.default_rng(seed), n_objects=n, budget=max_tests)
    names = [r.name for r in task.rules]
    if bad := sorted({d.rule for d in designs} - set(names)):
        raise ValueError(f"design rule(s) {bad} are not the Nexiom task's rules {names}")
    true = torch.zeros(len(designs), n, dtype=torch.bool)
    for i, d in enumerate(designs):
        true[i, list(d.blickets)] = True
    rec = EpisodeRecorder(task, n, rule_idx=[names.index(d.rule) for d in designs], blickets=true)
    rec.told = [len(d.blickets) for d in designs]
    return rec


class EpisodeRecorder:
    """A Nexiom batch task as the play loop sees it, reset to fixed worlds, writing down each row's tests
    (:func:`record_nexiom`); :meth:`histories` and :meth:`score` read them after play."""

    def __init__(self, task, n: int, **reset_kw):
        self._task, self._n, self._kw = task, n, reset_kw
        self.pairs: list[list] = [[] for _ in range(task.B)]
        self.told: list[int | None] = [None] * task.B

    def __getattr__(self, name):
        return getattr(self._task, name)

    def reset(self, *a, **kw):
        self.pairs = [[] for _ in range(self._task.B)]
        return self._task.reset(**self._kw)

    def step(self, action):
        active = ~self._task.done
        out = self._task.step(action)
        n = self._n
        trial, stop = action[:, :n] > 0.5, action[:, 2 * n] > 0.5
        lit = self._task.layout.get(out[0], "lit")[:, 0] > 0.5
        for i in torch.nonzero(active & ~stop).flatten().tolist():
            self.pairs[i].append((tuple(torch.nonzero(trial[i]).flatten().tolist()), bool(lit[i])))
        return out

    def histories(self) -> list[History]:
        """Each episode's tests so far."""
        return [History.from_pairs(p, self._n) for p in self.pairs]

    def score(self, *, noise: float = 0.0, identified: float = 0.99) -> pd.DataFrame:
        """:func:`score_histories` of the episodes (``id``: the episode's index)."""
        return score_histories(self.histories(), self._n, told=self.told, noise=noise, identified=identified)
