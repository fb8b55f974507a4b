"""Simulated participants of a choice model on the Nexiom batch task (``causalplay.envs.nexiom_core.NexiomBatch``).

The task is the one Nexiom loop (machine, test budget, scoring of the answer); this module only chooses the
actions from the model's probabilities and writes the episodes out as :class:`causalplay.data.TrialData`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from ..models.choice import ChoiceModel, LearnerConfig, get_model, step_features
from ..models.choice.base import rule_prior_table, told_set_prior

if TYPE_CHECKING:
    from ..data import TrialData
    from .inference import Fit

__all__ = ["simulate", "simulate_fit"]


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


def simulate(model: str | ChoiceModel, theta: dict, worlds, n_objects: int, *, learner: LearnerConfig | None = None,
             seed: int = 0, max_tests: int = 30, prefix: str = "S", rule_prior=None, n_blickets=None,
             designs=None):
    """Simulate participants of a choice model with known parameters on deterministic Blicket machines.

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
        multi-round data; used in full, or mixed by the ``transfer`` weight of a ``+transfer`` model), or None
        for the fitted ``sigmoid(rho)``.
    n_blickets : sequence of int or None, optional
        One per participant: the number of blickets that participant is told (the learner's set prior is that
        count, as for told counts in fitted data), or None; written to the data's ``n_blickets`` column.
    designs : sequence of causalplay.design.Design, optional
        One per participant, instead of ``worlds`` and ``n_blickets``: the world, the demonstrations the participant
        watches first (learned from, marked tested, written as ``source=demonstration`` rows before the
        participant's own tests, so :func:`causalplay.fit` reads them as history), the told count and the budget.

    Returns
    -------
    causalplay.data.TrialData
    """
    from ..core.exact import log_likelihood
    from ..core.history import code_to_set, codes_to_vectors
    from ..data import TrialData
    from ..envs.nexiom_core import NexiomBatch

    cm = get_model(model)
    learner = learner or LearnerConfig()
    demos: list = []
    budget = None
    if designs is not None:
        from ..core.design import Design

        if worlds is not None or n_blickets is not None:
            raise ValueError("give worlds or designs, not both (a design holds the world and the told count)")
        designs = list(designs)
        if bad := [d for d in designs if not isinstance(d, Design) or d.n_objects != n_objects]:
            raise ValueError(f"designs must be causalplay.design.Design with n_objects={n_objects}, got {bad[0]!r}")
        worlds = [d.world for d in designs]
        if any(d.n_blickets_told is not None for d in designs):
            n_blickets = [d.n_blickets_told for d in designs]
        demos = [d.demonstrations for d in designs]
        budget = torch.tensor([min(d.max_tests, max_tests) if d.max_tests is not None else max_tests
                               for d in designs])
    if worlds is None:
        raise ValueError("simulate needs worlds or designs")
    P = len(worlds)
    if budget is None:
        budget = torch.full((P,), int(max_tests))
    names = {p.name for p in cm.all_params()}
    if missing := names - set(theta):
        raise ValueError(f"theta lacks parameter(s) {sorted(missing)} of model {cm.name!r}")
    for arg, values in (("rule_prior", rule_prior), ("n_blickets", n_blickets)):
        if values is not None and len(values) != P:
            raise ValueError(f"{arg} needs one entry per participant ({P}), got {len(values)}")
    th = {k: torch.as_tensor(np.broadcast_to(np.asarray(theta[k], dtype=np.float64), (P,)).copy()) for k in names}
    gen = torch.Generator().manual_seed(seed)
    space = learner.space(n_objects)
    ids = [f"{prefix}{i + 1:03d}" for i in range(P)]
    rp_table = rp_mask = told = None
    if rule_prior is not None:
        rp_table, rp_mask = rule_prior_table(ids, {k: v for k, v in zip(ids, rule_prior, strict=True) if v is not None})
    elif cm.transfer:
        raise ValueError(f"model {cm.name!r} needs rule_prior (the transferred P(conjunctive) per participant)")
    if n_blickets is not None:
        told = told_set_prior(space, dict(enumerate(n_blickets)), list(range(P)))
    S = 2**n_objects
    # The one Nexiom task loop: the machine, the test budget and the answer's scoring are the task's.
    task = NexiomBatch(P, np.random.default_rng(seed), n_objects=n_objects, budget=max_tests)
    rule_names = [r.name for r in task.rules]
    if any(r not in rule_names for r, _ in worlds):
        bad = next(r for r, _ in worlds if r not in rule_names)
        raise ValueError(f"world rule {bad!r} is not one of the Nexiom task's rules {rule_names}")
    true = torch.zeros(P, n_objects, dtype=torch.bool)
    for i, (_, b) in enumerate(worlds):
        true[i, list(b)] = True
    task.reset(rule_idx=[rule_names.index(r) for r, _ in worlds], blickets=true)
    ll = torch.zeros(P, space.n_hypotheses, dtype=torch.float64)
    tested = torch.zeros(P, S, dtype=torch.bool)
    for i, shown in enumerate(demos):  # what a design shows first: learned from and already tested
        for on, lit_ in shown:
            trial = torch.zeros(1, 1, n_objects, dtype=torch.float64)
            trial[0, 0, list(on)] = 1.0
            ll[i] += log_likelihood(space, trial, torch.tensor([[float(lit_)]], dtype=torch.float64))[0]
            tested[i, sum(1 << j for j in on)] = True
    judged = torch.zeros(P, dtype=torch.long)
    log_rows: list[tuple[torch.Tensor, ...]] = []
    t = 0
    while not bool(task.done.all()):
        active = ~task.done
        feats = step_features(space, ll, t, tested, learner.min_tests, ids)
        feats.rule_prior, feats.transferred, feats.set_log_prior = rp_table, rp_mask, told
        with torch.no_grad():
            lp = cm.log_probs(feats, th)
        spent = budget <= t  # their budget is spent: they stop (no draw once everybody's is: same random stream)
        choice = torch.full((P,), S) if bool(spent.all()) else torch.where(
            spent, S, torch.multinomial(lp.exp(), 1, generator=gen).squeeze(-1))
        stop = active & (choice == S)
        if bool(stop.any()):  # the judgement of those who stop now, from what they know now (feats.final_ll)
            with torch.no_grad():
                jl = cm.judgement_log_probs(feats, th)
            judged = torch.where(stop, torch.multinomial(jl.exp(), 1, generator=gen).squeeze(-1), judged)
        r, code = judged // S, judged % S
        trial = codes_to_vectors(choice, n_objects).to(torch.float64)
        belief = codes_to_vectors(code, n_objects).to(torch.float64)
        action = torch.cat([trial, belief, stop.double()[:, None], r.double()[:, None]], 1)
        obs, _, _, _ = task.step(action)
        go = active & ~stop
        lit = task.layout.get(obs, "lit")[:, 0]
        log_rows.append((torch.nonzero(go).flatten(), task.tests[go].clone(), choice[go], lit[go] > 0.5))
        upd = log_likelihood(space, trial[:, None], lit[:, None].double())
        ll = torch.where(go[:, None], ll + upd, ll)
        tested[go, choice[go]] = True
        t += 1
    rec = task.record()
    who, num, codes, lits = (torch.cat(x).numpy() for x in zip(*log_rows, strict=True))
    order = np.lexsort((num, who))
    tests = pd.DataFrame({
        "participant": np.asarray(ids)[who[order]], "test": num[order],
        "objects_on": [code_to_set(int(c)) for c in codes[order]],
        "lit": lits[order].astype(bool), "seconds_since_previous": None, "possible": True},
        columns=["participant", "test", "objects_on", "lit", "seconds_since_previous", "possible"])
    n_shown = [len(d) for d in demos] or [0] * P
    if designs is not None:  # the demonstrations first, as the loader reads them: source=demonstration rows
        tests["source"] = "choice"
        tests["test"] += np.asarray(n_shown)[who[order]]
        shown = pd.DataFrame([{"participant": ids[i], "test": k + 1, "objects_on": on, "lit": bool(lit_),
                               "seconds_since_previous": None, "possible": True, "source": "demonstration"}
                              for i, d in enumerate(demos) for k, (on, lit_) in enumerate(d)], columns=tests.columns)
        rank = {pid: i for i, pid in enumerate(ids)}
        tests = pd.concat([shown, tests], ignore_index=True).sort_values(
            ["participant", "test"], key=lambda c: c.map(rank) if c.name == "participant" else c,
            kind="stable").reset_index(drop=True)
    parts = [{"participant": ids[i], "rule": rec["rule"][i], "true_blickets": tuple(sorted(int(b) for b in w[1])),
              "judged_blickets": code_to_set(int(code[i])), "blickets_correct": bool(rec["blickets_correct"][i]),
              "rule_choice": rule_names[int(r[i])], "rule_correct": bool(rec["rule_correct"][i]),
              "n_tests": int(rec["n_tests"][i]) + n_shown[i],
              **({} if n_blickets is None else {"n_blickets": n_blickets[i]})}
             for i, w in enumerate(worlds)]
    return TrialData(pd.DataFrame(parts), tests, n_objects, [], f"simulate({cm.name})")
