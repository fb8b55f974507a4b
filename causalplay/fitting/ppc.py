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

__all__ = ["statistics", "summary_statistics", "eig_top_share", "posterior_predictive", "MAIN_STATISTICS"]

#: the columns of the participants table that :func:`summary_statistics` reads
_JUDGEMENT_COLUMNS = ("rule", "rule_choice", "judged_blickets", "true_blickets")

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
    p = data.participants
    n_tests = own.groupby("participant").size().reindex(p["participant"], fill_value=0).to_numpy()
    return summary_statistics(first["objects_on"], size, n_tests, p, eig_top_share(data, rho), max_test=max_test)


def summary_statistics(first_tests: pd.Series, mean_size: pd.Series, n_tests: np.ndarray | pd.Series,
                       participants: pd.DataFrame, top_eig_share: float, *, max_test: int = 10) -> dict[str, float]:
    """The statistics of one data set from its parts: what :func:`statistics` returns, for any choice of which
    test is a participant's first and which tests count.

    Parameters
    ----------
    first_tests
        The object set (a tuple of object indices) of each participant's first test, one entry per participant
        who made one.
    mean_size
        Mean number of objects on the machine at each test number, indexed by the test number (1, 2, ...); a
        number with no entry gives NaN.
    n_tests
        Tests per participant, in the row order of ``participants``.
    participants
        The participants table of :class:`~causalplay.data.TrialData`: its columns ``rule``, ``rule_choice``,
        ``judged_blickets`` and ``true_blickets`` are read.
    top_eig_share
        Passed through as ``top_eig_share`` (:func:`eig_top_share`).
    max_test
        Last test number of the ``size_t<k>`` statistics.

    Returns
    -------
    dict
        ``first_has_0``, ``first_single``, ``first_pair`` (shares of ``first_tests``), ``mean_tests``,
        ``median_tests``, ``top_eig_share``, ``size_t1`` ... ``size_t<max_test>``, ``tests_eq_1`` ...
        ``tests_eq_15`` (share of participants with that many tests), and ``blickets_correct_<rule>``,
        ``rule_correct_<rule>`` for the disjunctive and conjunctive participants (NaN without any).

    Raises
    ------
    ValueError
        If ``participants`` lacks a column read, or ``n_tests`` has not one entry per participant.
    """
    max_test = integer(max_test, "max_test", low=1)
    missing = [c for c in _JUDGEMENT_COLUMNS if c not in participants.columns]
    if missing:
        raise ValueError(f"participants has no column(s) {missing}; expected the participants table of TrialData "
                         f"with columns {list(_JUDGEMENT_COLUMNS)}")
    n_tests = np.asarray(n_tests)
    if n_tests.shape != (len(participants),):
        raise ValueError(f"n_tests has shape {n_tests.shape}; expected one count per participant, "
                         f"({len(participants)},)")
    blickets_correct = np.array([tuple(a) == tuple(b) for a, b in zip(participants["judged_blickets"],
                                                                      participants["true_blickets"], strict=True)],
                                dtype=bool)
    rule_correct = (participants["rule_choice"] == participants["rule"]).to_numpy()
    counts = pd.Series(n_tests)
    out = {"first_has_0": float(first_tests.map(lambda s: 0 in s).mean()),
           "first_single": float(first_tests.map(len).eq(1).mean()),
           "first_pair": float(first_tests.map(len).eq(2).mean()),
           "mean_tests": float(counts.mean()), "median_tests": float(counts.median()),
           "top_eig_share": float(top_eig_share)}
    out.update({f"size_t{k}": float(mean_size.get(k, np.nan)) for k in range(1, max_test + 1)})
    out.update({f"tests_eq_{n}": float((counts == n).mean()) for n in range(1, 16)})
    rules = participants["rule"].to_numpy()
    for rule in ("disjunctive", "conjunctive"):
        g = rules == rule
        out[f"blickets_correct_{rule}"] = float(blickets_correct[g].mean()) if g.any() else np.nan
        out[f"rule_correct_{rule}"] = float(rule_correct[g].mean()) if g.any() else np.nan
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
