"""Simulated participants of a choice model on the Nexiom batch task (``causalplay.envs.nexiom_core.NexiomBatch``).

The participants are an agent (:class:`ChoiceModelAgent`: the model's choice probabilities, sampled) played by the
one play loop (:func:`causalplay.bench.play.play`); the task runs the machine, the test budget and the scoring of
the answer. This module draws the participants and writes the episodes out as :class:`causalplay.data.TrialData`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from ..agents.base import Agent
from ..core.beliefs import BatchBeliefs
from ..core.codes import code_to_set, codes_to_vectors, set_to_code
from ..core.spec import HypothesisSpace
from ..envs.nexiom_core import NexiomBatch
from ..envs.task import PlayerInfo, as_rows
from ..models.choice import ChoiceModel, LearnerConfig, get_model, step_features
from ..models.choice.base import rule_prior_table, told_set_prior

if TYPE_CHECKING:
    from ..data import TrialData
    from .inference import Fit

__all__ = ["simulate", "simulate_fit", "ChoiceModelAgent"]


def simulate_fit(fit: Fit, n_participants: int | None = None, *, worlds=None, seed: int = 0,
                 max_tests: int = 30, designs=None) -> TrialData:
    """Synthetic participants from a fit, as :class:`causalplay.data.TrialData`.

    ``n_participants=None``: one replica of every fitted participant (their own posterior draw, their own
    true rule and blickets) -- the posterior predictive check. Otherwise new participants drawn from the
    fitted population, with worlds ``[(rule, blickets), ...]`` (default: drawn from the fitted data's) or
    ``designs`` (:class:`causalplay.design.Design`, one per new participant: world, demonstrations, told count,
    budget).
    """
    if designs is not None:
        if n_participants is None or worlds is not None:
            raise ValueError("designs are for new participants: give n_participants and no worlds")
        if len(designs) != int(n_participants):
            raise ValueError(f"designs needs one Design per participant ({n_participants}), got {len(designs)}")
    gen = torch.Generator().manual_seed(seed)
    th = fit.theta()
    draws = th["lapse"].shape[0]
    P = fit.feats.n_participants
    parts = fit.data.participants
    told = list(fit.data.known_counts().values())  # a replica is told what its participant was told
    if n_participants is None:
        d = torch.randint(draws, (P,), generator=gen)
        theta = {k: v[d, torch.arange(P)] for k, v in th.items()}
        worlds = list(zip(parts["rule"], parts["true_blickets"], strict=True))
    else:
        n_participants = int(n_participants)
        flat = fit.flat_raw()
        d = torch.randint(draws, (n_participants,), generator=gen)
        group = {k: v[d] for k, v in flat.items() if v.dim() == 1}
        raw = fit.par.new_participants(group, n_participants, 1, gen)
        theta = {k: v[:, 0] for k, v in fit.par.theta(raw, 1).items()}
        if designs is not None:  # each participant's design says what they are told
            return simulate(fit.model, theta, None, fit.data.n_objects, learner=fit.learner, seed=seed + 1,
                            max_tests=max_tests, designs=designs)
        if worlds is None:  # a fitted participant's world, and the count that participant was told
            w = torch.randint(P, (n_participants,), generator=gen).tolist()
            worlds = [(parts["rule"].iloc[i], parts["true_blickets"].iloc[i]) for i in w]
            told = [told[i] for i in w]
        else:  # worlds the caller chose: nobody is told a count
            told = [None] * n_participants
    return simulate(fit.model, theta, worlds, fit.data.n_objects, learner=fit.learner, seed=seed + 1,
                    max_tests=max_tests, n_blickets=told if any(k is not None for k in told) else None)


class ChoiceModelAgent(Agent):
    """Simulated participants of a choice model: an agent of the Nexiom batch task, one participant per row.

    Each step, the model's probabilities of every test and of stopping, given what the participant has seen
    (:func:`~causalplay.models.choice.step_features`), and one draw from them; who stops answers with a draw from
    the model's judgement. The evidence is a :class:`~causalplay.core.beliefs.BatchBeliefs` that starts flat (the
    log-likelihood up to a constant per row): the model adds each participant's own prior.

    Parameters
    ----------
    model : ChoiceModel
    theta : dict name -> Tensor ``[P]``
        Constrained values of every parameter of the model, one per participant.
    space : HypothesisSpace
        The learner's (``LearnerConfig.space``).
    ids : list of str
        Participant ids, one per row.
    budget : LongTensor ``[P]``
        Tests each participant may run before stopping.
    min_tests : int
        Tests before stopping is allowed.
    demonstrations : list of list of (objects, lit)
        Per participant, panels watched before the first choice: learned from and counted as tested.
    features : dict
        What the model's features carry besides the evidence: ``rule_prior`` and ``transferred``
        (:func:`~causalplay.models.choice.base.rule_prior_table`), ``set_log_prior`` (told counts).
    seed : int
        Seeds the generator of every draw.

    Notes
    -----
    After play, :attr:`tests` holds the tests run (rows, test numbers, trial codes, lit; one tuple per step) and
    :attr:`judged` the answers (``rule * 2**N + set code``).
    """

    name = "choice-model"

    def __init__(self, model: ChoiceModel, theta: dict, space: HypothesisSpace, ids: list, budget: torch.Tensor,
                 min_tests: int, demonstrations=(), features: dict | None = None, *, seed: int = 0):
        super().__init__(seed)
        self.model, self.theta, self.space, self.ids = model, theta, space, ids
        self.budget, self.min_tests, self.demonstrations = budget, min_tests, list(demonstrations)
        self.features = features or {}

    def reset(self, task: PlayerInfo, obs: torch.Tensor) -> None:
        super().reset(task, obs)
        B, N, H = self.B, task.n_objects, self.space.n_hypotheses
        self.evidence = BatchBeliefs(self.space, torch.full((B, H), -math.log(H), dtype=self.space.dtype))
        self.tested = torch.zeros(B, 2**N, dtype=torch.bool)
        for k in range(max(map(len, self.demonstrations), default=0)):  # the k-th demonstration of every row
            on, lit = torch.zeros(B, N, dtype=torch.bool), torch.zeros(B, dtype=torch.bool)
            shown = torch.tensor([len(d) > k for d in self.demonstrations])
            for i in torch.nonzero(shown).flatten().tolist():
                objects, lit[i] = self.demonstrations[i][k]
                on[i, list(objects)] = True
                self.tested[i, set_to_code(objects)] = True
            self.evidence.observe_(on, lit, shown)
        self.judged = torch.zeros(B, dtype=torch.long)
        self.choice: torch.Tensor | None = None
        self.tests: list[tuple[torch.Tensor, ...]] = []

    def _learn(self, obs: torch.Tensor, active: torch.Tensor) -> None:
        """The rows still playing ran the test they chose last step: its outcome is in ``obs``."""
        lit = self.task.obs_layout.get(obs, "lit")[:, 0] > 0.5
        self.evidence.observe_(codes_to_vectors(self.choice, self.task.n_objects), lit, active)
        rows = torch.nonzero(active).flatten()
        self.tested[rows, self.choice[rows]] = True
        self.tests.append((rows, torch.full_like(rows, self.t), self.choice[rows], lit[rows]))

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        if self.choice is not None:
            self._learn(obs, active)
        N = self.task.n_objects
        S = 2**N
        feats = step_features(self.space, self.evidence.log_w, self.t, self.tested, self.min_tests, self.ids)
        for k, v in self.features.items():
            setattr(feats, k, v)
        with torch.no_grad():
            lp = self.model.log_probs(feats, self.theta)
        spent = self.budget <= self.t  # their budget is spent: they stop (no draw once everybody's is)
        choice = torch.full((self.B,), S) if bool(spent.all()) else torch.where(
            spent, S, torch.multinomial(lp.exp(), 1, generator=self.gen).squeeze(-1))
        stop = active & (choice == S)
        if bool(stop.any()):  # the judgement of those who stop now, from what they know now (feats.final_ll)
            with torch.no_grad():
                jl = self.model.judgement_log_probs(feats, self.theta)
            self.judged = torch.where(stop, torch.multinomial(jl.exp(), 1, generator=self.gen).squeeze(-1),
                                      self.judged)
        rule, code = self.judged // S, self.judged % S
        self.choice = choice
        self.t += 1
        return torch.cat([codes_to_vectors(choice, N).double(), codes_to_vectors(code, N).double(),
                          stop.double()[:, None], rule.double()[:, None]], 1)


class _WorldsTask(NexiomBatch):
    """The Nexiom task on given worlds ``[(rule name, blicket indices), ...]``, one per row: every reset plays them
    (the machine's uniforms are still drawn)."""

    def __init__(self, worlds, rng, n_objects: int, budget: int):
        super().__init__(len(worlds), rng, n_objects=n_objects, budget=budget)
        names = [r.name for r in self.rules]
        if bad := [r for r, _ in worlds if r not in names]:
            raise ValueError(f"world rule {bad[0]!r} is not one of the Nexiom task's rules {names}")
        self.world_rule = torch.tensor([names.index(r) for r, _ in worlds])
        self.world_blickets = torch.zeros(len(worlds), n_objects, dtype=torch.bool)
        for i, (_, b) in enumerate(worlds):
            self.world_blickets[i, list(b)] = True

    def reset(self, rows=None) -> torch.Tensor:
        sel = slice(None) if rows is None else as_rows(rows, self.B)
        return super().reset(rows, rule_idx=self.world_rule[sel], blickets=self.world_blickets[sel])


def _read_designs(designs, n_objects: int, max_tests: int) -> tuple[list, list | None, list, torch.Tensor]:
    """Worlds, told counts (None: nobody is told), demonstrations and budgets of ``designs``."""
    from ..core.design import Design

    designs = list(designs)
    if bad := [d for d in designs if not isinstance(d, Design) or d.n_objects != n_objects]:
        raise ValueError(f"designs must be causalplay.design.Design with n_objects={n_objects}, got {bad[0]!r}")
    told = [d.n_blickets_told for d in designs] if any(d.n_blickets_told is not None for d in designs) else None
    budget = torch.tensor([min(d.max_tests, max_tests) if d.max_tests is not None else max_tests for d in designs])
    return [d.world for d in designs], told, [d.demonstrations for d in designs], budget


def simulate(model: str | ChoiceModel, theta: dict, worlds, n_objects: int, *, learner: LearnerConfig | None = None,
             seed: int = 0, max_tests: int = 30, prefix: str = "S", rule_prior=None, n_blickets=None,
             designs=None) -> TrialData:
    """Simulate participants of a choice model with known parameters on deterministic Blicket machines.

    The participants are a :class:`ChoiceModelAgent` played through the one play loop
    (:func:`causalplay.bench.play.play`) on the Nexiom batch task (:class:`causalplay.envs.nexiom_core.NexiomBatch`),
    which runs the machine, the test budget and the scoring of the answer.

    Parameters
    ----------
    model : model name or ChoiceModel
    theta : dict name -> float or array ``[P]``
        Constrained parameter values (every parameter of the model, see ``model.all_params()``).
    worlds : list of (rule name, blicket indices), or None with ``designs``
        One per participant; the machine follows :mod:`causalplay.core.rules`.
    max_tests : int
        Participants who have not stopped by then stop (a design's own ``max_tests`` wins where it sets one).
    rule_prior : sequence of float or None, optional
        One per participant: the transferred ``P(conjunctive)`` that participant starts from (a later round of
        multi-round data; used in full, or mixed by the ``transfer`` weight of a ``transfer=True`` model), or None
        for the fitted ``sigmoid(rho)``.
    n_blickets : sequence of int or None, optional
        One per participant: the number of blickets that participant is told (the learner's set prior is that
        count, as for told counts in fitted data), or None; written to the data's ``n_blickets`` column.
    designs : sequence of causalplay.design.Design, optional
        One per participant, instead of ``worlds`` and ``n_blickets``: the world, the demonstrations the participant
        watches first (learned from, marked tested, written as ``source=demonstration`` rows before the
        participant's own tests, so :func:`causalplay.fit` reads them as history), the told count and the budget.
    seed : int
        Seeds the choices and judgements (and the task's generator).

    Returns
    -------
    causalplay.data.TrialData
        With each participant's budget in the ``max_tests`` column, so that :func:`causalplay.fit` scores the stop
        of one who used every test as forced, not chosen.
    """
    from ..bench.play import play

    cm = get_model(model)
    learner = learner or LearnerConfig()
    demos, budget = [], None
    if designs is not None:
        if worlds is not None or n_blickets is not None:
            raise ValueError("give worlds or designs, not both (a design holds the world and the told count)")
        worlds, n_blickets, demos, budget = _read_designs(designs, n_objects, max_tests)
    if worlds is None:
        raise ValueError("simulate needs worlds or designs")
    P = len(worlds)
    names = {p.name for p in cm.all_params()}
    if missing := names - set(theta):
        raise ValueError(f"theta lacks parameter(s) {sorted(missing)} of model {cm.name!r}")
    for arg, values in (("rule_prior", rule_prior), ("n_blickets", n_blickets)):
        if values is not None and len(values) != P:
            raise ValueError(f"{arg} needs one entry per participant ({P}), got {len(values)}")
    th = {k: torch.as_tensor(np.broadcast_to(np.asarray(theta[k], dtype=np.float64), (P,)).copy()) for k in names}
    space = learner.space(n_objects)
    ids = [f"{prefix}{i + 1:03d}" for i in range(P)]
    rp_table = rp_mask = told = None
    if rule_prior is not None:
        rp_table, rp_mask = rule_prior_table(ids, {k: v for k, v in zip(ids, rule_prior, strict=True) if v is not None})
    elif cm.transfer:
        raise ValueError(f"model {cm.name!r} needs rule_prior (the transferred P(conjunctive) per participant)")
    if n_blickets is not None:
        told = told_set_prior(space, dict(enumerate(n_blickets)), list(range(P)))
    task = _WorldsTask(worlds, np.random.default_rng(seed), n_objects, max_tests)
    agent = ChoiceModelAgent(cm, th, space, ids, torch.full((P,), int(max_tests)) if budget is None else budget,
                             learner.min_tests, demos, {"rule_prior": rp_table, "transferred": rp_mask,
                                                        "set_log_prior": told}, seed=seed)
    record = play(task, agent)
    return _trial_data(agent, record, worlds, demos, n_blickets, designs is not None, task, cm.name)


def _trial_data(agent: ChoiceModelAgent, record: dict, worlds, demos: list, n_blickets, designed: bool,
                task: NexiomBatch, model_name: str) -> TrialData:
    """The played episodes as TrialData: one participants row per world, the tests (after the demonstrations, as
    ``source=demonstration`` rows, when ``designed``)."""
    from ..data import TrialData

    ids, N = agent.ids, task.n_objects
    S = 2**N
    who, num, codes, lits = (torch.cat(x).numpy() for x in zip(*agent.tests, strict=True))
    order = np.lexsort((num, who))
    tests = pd.DataFrame({
        "participant": np.asarray(ids)[who[order]], "test": num[order],
        "objects_on": [code_to_set(int(c)) for c in codes[order]],
        "lit": lits[order].astype(bool), "seconds_since_previous": None, "possible": True},
        columns=["participant", "test", "objects_on", "lit", "seconds_since_previous", "possible"])
    n_shown = [len(d) for d in demos] or [0] * len(ids)
    if designed:  # the demonstrations first, as the loader reads them: source=demonstration rows
        tests["source"] = "choice"
        tests["test"] += np.asarray(n_shown)[who[order]]
        shown = pd.DataFrame([{"participant": ids[i], "test": k + 1, "objects_on": on, "lit": bool(lit_),
                               "seconds_since_previous": None, "possible": True, "source": "demonstration"}
                              for i, d in enumerate(demos) for k, (on, lit_) in enumerate(d)], columns=tests.columns)
        rank = {pid: i for i, pid in enumerate(ids)}
        tests = pd.concat([shown, tests], ignore_index=True).sort_values(
            ["participant", "test"], key=lambda c: c.map(rank) if c.name == "participant" else c,
            kind="stable").reset_index(drop=True)
    rule, code = agent.judged // S, agent.judged % S
    parts = [{"participant": ids[i], "rule": record["rule"][i], "true_blickets": tuple(sorted(int(b) for b in w[1])),
              "judged_blickets": code_to_set(int(code[i])), "blickets_correct": bool(record["blickets_correct"][i]),
              "rule_choice": task.rules[int(rule[i])].name, "rule_correct": bool(record["rule_correct"][i]),
              "n_tests": int(record["n_tests"][i]) + n_shown[i], "max_tests": int(agent.budget[i]),
              **({} if n_blickets is None else {"n_blickets": n_blickets[i]})}
             for i, w in enumerate(worlds)]
    return TrialData(pd.DataFrame(parts), tests, N, [], f"simulate({model_name})")
