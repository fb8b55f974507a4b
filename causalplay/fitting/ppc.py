"""Posterior predictive checks of a fitted choice model: the statistics people's data show, and the same statistics
of replicas simulated from the fit (each participant with a posterior draw of their own parameters, in their world).

::

    from causalplay.fitting.ppc import posterior_predictive
    table = posterior_predictive(f, replicas=40)   # statistic, people, model mean, 5% and 95% over replicas

``causalplay fit-ppc`` runs it from the command line on a saved fit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from ..core.checks import integer
from ..models.choice import build_features, get_model

if TYPE_CHECKING:
    from ..data import TrialData
    from .inference import Fit

__all__ = ["statistics", "eig_top_share", "posterior_predictive", "MAIN_STATISTICS"]

#: the statistics the fitting guide's table shows, in its order
MAIN_STATISTICS = ("first_has_0", "first_single", "first_pair", "size_t1", "size_t4", "size_t9", "mean_tests",
                   "top_eig_share", "blickets_correct_disjunctive", "blickets_correct_conjunctive",
                   "rule_correct_disjunctive", "rule_correct_conjunctive")


def eig_top_share(data: TrialData, rho: float) -> float:
    """Share of tests whose set has the highest EIG (ties count) under the learner with rule prior logit ``rho``."""
    feats = build_features(data)
    cm = get_model("eig_softmax")
    with torch.no_grad():
        # per decision, with its participant (a participant told the blicket count has their own set prior)
        log_w = cm.posterior(feats, feats.ll, torch.full((feats.n_decisions,), rho, dtype=torch.float64), feats.pid)
        eig = cm.eig(feats, log_w)
    tests = feats.choice < feats.space.n_sets
    chosen = eig[tests].gather(-1, feats.choice[tests][:, None])
    return float(((eig[tests] > chosen + 1e-9).sum(-1) == 0).double().mean())


def statistics(data: TrialData, rho: float, max_test: int = 10) -> dict[str, float]:
    """The statistics of one data set (people's or simulated).

    ``first_has_0``, ``first_single``, ``first_pair``: share of participants whose first own test contains object 0 /
    is one object / is two objects; ``size_t<k>``: mean objects on the machine at their own test ``k``;
    ``mean_tests``, ``median_tests``, ``tests_eq_<n>``: own tests per participant; ``top_eig_share``:
    :func:`eig_top_share` at ``rho``;
    ``blickets_correct_<rule>``, ``rule_correct_<rule>``: judgement accuracy by true rule (NaN without such
    participants).
    """
    t = data.tests
    # the participants' own tests, numbered 1, 2, ... (demonstrations they watched are not theirs: simulated
    # replicas watch none)
    own = t[np.asarray(data.is_choice)].sort_values(["participant", "test"], kind="stable")
    own = own.assign(k=own.groupby("participant").cumcount() + 1, size=own["objects_on"].map(len))
    first = own[own["k"] == 1]
    size = own.groupby("k")["size"].mean()
    p = data.participants.copy()
    p["n_tests"] = own.groupby("participant").size().reindex(p["participant"], fill_value=0).to_numpy()
    p["blickets_correct"] = [tuple(a) == tuple(b) for a, b in zip(p["judged_blickets"], p["true_blickets"],
                                                                   strict=True)]
    p["rule_correct"] = p["rule_choice"] == p["rule"]
    out = {"first_has_0": float(first["objects_on"].map(lambda s: 0 in s).mean()),
           "first_single": float(first["objects_on"].map(len).eq(1).mean()),
           "first_pair": float(first["objects_on"].map(len).eq(2).mean()),
           "mean_tests": float(p["n_tests"].mean()), "median_tests": float(p["n_tests"].median()),
           "top_eig_share": eig_top_share(data, rho)}
    out.update({f"size_t{k}": float(size.get(k, np.nan)) for k in range(1, max_test + 1)})
    out.update({f"tests_eq_{n}": float((p["n_tests"] == n).mean()) for n in range(1, 16)})
    for rule in ("disjunctive", "conjunctive"):
        g = p[p["rule"] == rule]
        out[f"blickets_correct_{rule}"] = float(g["blickets_correct"].mean()) if len(g) else np.nan
        out[f"rule_correct_{rule}"] = float(g["rule_correct"].mean()) if len(g) else np.nan
    return out


def posterior_predictive(fit: Fit, replicas: int = 40, *, seed: int = 0,
                         statistics_: tuple[str, ...] | None = MAIN_STATISTICS) -> pd.DataFrame:
    """People's statistics beside those of ``replicas`` data sets simulated from ``fit`` (:meth:`Fit.simulate`:
    every participant again, with a posterior draw of their parameters, in their own world).

    Returns a DataFrame indexed by statistic with columns ``people``, ``model`` (mean over replicas), ``q5`` and
    ``q95`` (the central 90% of the replicas); ``statistics_=None`` keeps every statistic of :func:`statistics`.
    EIG-based statistics use the fit's posterior mean of ``rho``.
    """
    replicas = integer(replicas, "replicas", low=1)
    rho = float(fit.idata.posterior["rho"].mean())
    people = statistics(fit.data, rho)
    sims = pd.DataFrame([statistics(fit.simulate(seed=seed + 100 + r), rho) for r in range(replicas)])
    rows = {}
    for k in (people if statistics_ is None else statistics_):
        v = sims[k].dropna().to_numpy()
        rows[k] = {"people": people[k], "model": float(v.mean()) if len(v) else np.nan,
                   "q5": float(np.quantile(v, 0.05)) if len(v) else np.nan,
                   "q95": float(np.quantile(v, 0.95)) if len(v) else np.nan}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("statistic")
