"""Workflows of many fits: participant-level k-fold cross-validation and model recovery, on any executor.

Every fit is :func:`fit_and_score` (a module-level function returning a small
:class:`~causalplay.fitting.scoring.Score`), so both hand their fits to an executor of :mod:`causalplay.bench.executors`
-- ``serial``, ``process``, ``ray`` or ``dask`` (a cluster at ``address``) -- and collect them in order. Every fit is
seeded, so the tables do not depend on where the fits ran (beyond floating-point summation order).

::

    from causalplay.bench.executors import make_executor
    from causalplay.fitting.workflows import crossval, model_recovery
    cv = crossval(data, ["random", "eig_sweep"], folds=4)                  # cv.table, cv.participants, cv.scores
    with make_executor("ray", address="head:6379") as ex:
        mr = model_recovery(data, ["random", "eig_sweep"], datasets=5, executor=ex)   # mr.confusion("picked_1se")
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from ..core._futures import wait_result
from ..core.checks import integer
from ..core.pyro import NUTSOptions, SVIOptions
from ..models.choice import get_model
from .parameterisation import Parameterisation
from .scoring import Score, heldout_score, paired_difference
from .simulation import simulate

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from ..data import TrialData

__all__ = ["fit_and_score", "crossval", "CrossValidation", "model_recovery", "ModelRecovery", "heldout_job",
           "one_se_pick", "inversion", "population_label", "participants_problem", "min_participants"]


def fit_and_score(fit_data: TrialData, held: TrialData, model: str, *, method: str = "svi",
                  nuts: NUTSOptions | None = None, svi: SVIOptions | None = None, judgement: str | None = None,
                  seed: int = 0, n_draws: int = 400, score_seed: int = 0) -> Score:
    """Fit ``model`` to ``fit_data`` and return its held-out :class:`Score` on ``held``.

    ``causalplay.fit(fit_data, model, ...).score(held, n_draws=n_draws, seed=score_seed)`` as one module-level
    function, so that an executor (:func:`causalplay.bench.make_executor`) can run the fits of a
    cross-validation or a model-recovery sweep in worker processes and send back only the small ``Score``.
    """
    from .inference import fit

    f = fit(fit_data, model, method=method, nuts=nuts, svi=svi, judgement=judgement, seed=seed)
    return heldout_score(f, held, n_draws=n_draws, seed=score_seed)


log = logging.getLogger(__name__)  # one line per finished fit or data set


def _log(msg: str, verbose: bool) -> None:
    """Progress goes to this module's logger: at INFO with ``verbose`` (shown on stderr when the application has
    not configured logging), at DEBUG without."""
    if not verbose:
        log.debug(msg)
    elif log.hasHandlers():
        log.info(msg)
    else:  # nobody configured logging (INFO is then off): a verbose run still shows its progress, on stderr
        logging.StreamHandler().handle(log.makeRecord(log.name, logging.INFO, __file__, 0, msg, None, None))


# ---- held-out scores of several models on one data set ---------------------------------------------------------
def heldout_job(data: TrialData, models: Sequence[str], *, folds: int = 1, split_seed: int = 0,
                test_fraction: float = 0.25, executor: Executor | None = None,
                **fit_kw) -> Callable[[], dict[str, Score]]:
    """Every model's held-out :class:`Score` on ``data``, as a function to call later: one stratified
    ``test_fraction`` split when ``folds`` is 1, else participant-level ``folds``-fold cross-validation (every
    participant scored once, held out). With an ``executor`` the fits are submitted now and the call waits for
    them; without one, the call fits them here. ``fit_kw`` go to :func:`fit_and_score`."""
    pairs = [data.split(test_fraction, seed=split_seed)] if folds == 1 else data.folds(folds, seed=split_seed)

    def combine(parts: dict[str, list[Score]]) -> dict[str, Score]:
        return {m: v[0] if len(v) == 1 else Score.concat(v) for m, v in parts.items()}

    if executor is None:
        return lambda: combine({m: [fit_and_score(f, h, m, **fit_kw) for f, h in pairs] for m in models})
    futures = {m: [executor.submit(fit_and_score, f, h, m, **fit_kw) for f, h in pairs] for m in models}
    return lambda: combine({m: [wait_result(f) for f in fs] for m, fs in futures.items()})


def min_participants(folds: int, test_fraction: float = 0.25) -> int:
    """Participants needed to hold out two in every part (of ``folds``-fold CV, or of one ``test_fraction`` split
    when ``folds`` is 1): paired SEs need two."""
    return 2 * folds if folds > 1 else math.ceil(2 / test_fraction)


def participants_problem(n, folds: int, test_fraction: float = 0.25, what: str = "participants") -> str | None:
    """Why ``n`` participants cannot be scored with ``folds`` (None if they can)."""
    need = min_participants(folds, test_fraction)
    if isinstance(n, bool) or not isinstance(n, int) or n < need:
        return f"{what} must be an integer >= {need} with folds={folds} (two participants in every held-out part), " \
               f"got {n!r}"
    return None


# ---- cross-validation ------------------------------------------------------------------------------------------
@dataclass
class CrossValidation:
    """What :func:`crossval` returns.

    Attributes
    ----------
    table : DataFrame -- one row per model, best first: held-out ``nats_per_choice`` over all participants, the
        difference to the best with its paired SE, judgement log-likelihoods
    participants : DataFrame -- one row per (fold, model, participant): held-out log P(choices), judgements
    scores : dict model -> Score (all folds joined)
    """

    table: pd.DataFrame
    participants: pd.DataFrame
    scores: dict[str, Score]

    @property
    def best(self) -> str:
        return self.table["model"].iloc[0]


def crossval(data: TrialData, models: Sequence[str], *, folds: int = 4, split_seed: int = 0,
             svi: SVIOptions | None = None, judgement: str | None = None, seed: int = 0, n_draws: int = 400,
             executor: Executor | None = None, out: str | Path | None = None,
             verbose: bool = True) -> CrossValidation:
    """Participant-level k-fold cross-validation: each model fitted (hierarchical SVI) ``folds`` times, every
    participant held out exactly once, so paired SEs are over all participants (one held-out quarter leaves too
    few to separate close models).

    Parameters
    ----------
    data : TrialData
    models : model names
    folds, split_seed : int
        ``data.folds(folds, seed=split_seed)`` (stratified by rule).
    svi, judgement, seed, n_draws :
        Each fit is ``fit_and_score(fit_data, held, model, method="svi", svi=svi, judgement=judgement,
        seed=seed, n_draws=n_draws, score_seed=seed)``.
    executor : concurrent.futures.Executor, optional
        Runs the fits (:func:`causalplay.bench.executors.make_executor`); None: here, one after the other.
    out : folder, optional
        ``crossval_participants.csv`` is written there as the fits finish, ``crossval.csv`` at the end.
    """
    folds = integer(folds, "folds", low=2)
    if problem := participants_problem(len(data), folds, what="participants"):
        raise ValueError(f"cross-validation: {problem}")
    out = None if out is None else Path(out)
    pairs = data.folds(folds, seed=split_seed)
    kw = {"method": "svi", "svi": svi, "judgement": judgement, "seed": seed, "n_draws": n_draws, "score_seed": seed}
    jobs = [(f, m, held, executor.submit(fit_and_score, fit_d, held, m, **kw) if executor else None)
            for f, (fit_d, held) in enumerate(pairs) for m in models]
    parts: dict[str, list[Score]] = {m: [] for m in models}
    rows, t0 = [], time.perf_counter()
    for f, m, held, fut in jobs:
        sc = wait_result(fut) if fut is not None else fit_and_score(pairs[f][0], held, m, **kw)
        parts[m].append(sc)
        j = sc.judgements if sc.judgements is not None else pd.DataFrame(index=sc.per_participant.index)
        rows += [{"fold": f, "model": m, "participant": pid, "log_p": lp, "n_choices": held.subset([pid]).n_choices,
                  **{f"judgement_{c}": j.loc[pid, c] for c in j.columns}} for pid, lp in sc.per_participant.items()]
        if out is not None:
            pd.DataFrame(rows).to_csv(out / "crossval_participants.csv", index=False)
        _log(f"[crossval] fold {f + 1}/{folds} {m}: {sc.nats_per_choice:.4f} nats/choice held out ({len(held)} "
             f"participants; {time.perf_counter() - t0:.0f} s)", verbose)
    scores = {m: Score.concat(v) for m, v in parts.items()}
    best = min(scores, key=lambda m: scores[m].nats_per_choice)
    table = []
    for m, sc in sorted(scores.items(), key=lambda kv: kv[1].nats_per_choice):
        d, se = paired_difference(sc, scores[best]) if m != best else (0.0, 0.0)
        table.append({"model": m, "nats_per_choice": sc.nats_per_choice, "diff_vs_best": d, "diff_se": se,
                      "n_participants": len(sc.per_participant), "n_choices": sc.n_choices,
                      **{f"judgement_{k}": v for k, v in sc.judgement_nats().items()}})
    res = CrossValidation(pd.DataFrame(table), pd.DataFrame(rows), scores)
    if out is not None:
        res.table.to_csv(out / "crossval.csv", index=False)
    return res


# ---- model recovery --------------------------------------------------------------------------------------------
def one_se_pick(nats: dict[str, float], se_vs_best: dict[str, float], order: Sequence[str]) -> str:
    """The simplest model (fewest set-choice parameters) whose held-out score is within one paired SE of the best
    one's (Breiman's one-standard-error rule): nested models tie on data from the simpler one, and the argmin
    alone then picks the larger one about half the time. Among equally simple models the better held-out score
    wins (then ``order``). ``nats``: held-out nats per choice; ``se_vs_best``: each model's paired SE against the
    best (the best's own is not read)."""
    best = min(nats, key=nats.get)
    close = [m for m in nats if m == best or nats[m] - nats[best] <= se_vs_best[m]]
    return min(close, key=lambda m: (len(get_model(m).params), nats[m], list(order).index(m)))


def pick_one_se(scores: dict[str, Score], order: Sequence[str]) -> str:
    """:func:`one_se_pick` from held-out :class:`Score` objects."""
    best = min(scores, key=lambda m: scores[m].nats_per_choice)
    se = {m: paired_difference(s, scores[best])[1] for m, s in scores.items() if m != best}
    return one_se_pick({m: s.nats_per_choice for m, s in scores.items()}, se, order)


def row_picks(row: dict, models: Sequence[str]) -> dict[str, str]:
    """The argmin and one-SE picks of a model-recovery row from its ``nats_<model>`` and ``se_vs_best_<model>``
    columns (the best model has no SE column, or NaN in a table)."""
    nats = {m: row[f"nats_{m}"] for m in models}
    se = {m: row.get(f"se_vs_best_{m}", np.nan) for m in models}
    return {"picked": min(models, key=nats.get), "picked_1se": one_se_pick(nats, se, models)}


def inversion(conf: pd.DataFrame) -> pd.DataFrame:
    """P(generating model | picked model) from a confusion table of counts (rows: generating model, columns:
    picked), each generating model equally likely a priori (the inversion matrix of Wilson & Collins, 2019): what
    a pick on real data says about its generator. Rows are normalised first, so a model simulated more often does
    not weigh more; rows of the result are the models picked at least once, columns the generating models."""
    picked_given_true = conf.div(conf.sum(axis=1), axis=0)
    picked_given_true = picked_given_true.loc[:, picked_given_true.sum(axis=0) > 0]
    return (picked_given_true / picked_given_true.sum(axis=0)).T


def population_label(values: dict[str, float] | None) -> str:
    """How a generating population was set, as written in the recovery table: ``"fitted"`` (to the people) or the
    replaced group-level values, e.g. ``"beta_mu=0"`` (never rounded: two values that differ in any digit get
    different labels, so a resumed run cannot mistake one population for another)."""
    def exact(v: float) -> str:
        short = f"{v:g}"
        return short if float(short) == v else repr(v)

    return ";".join(f"{k}={exact(v)}" for k, v in sorted(values.items())) if values else "fitted"


def _fitted_population(data: TrialData, model: str, svi: SVIOptions | None, judgement: str | None,
                       seed: int) -> dict[str, float]:
    """Posterior-mean group-level values (raw sites) of ``model`` fitted to ``data`` by SVI (runs on a worker)."""
    from .inference import fit

    f = fit(data, model, method="svi", svi=svi, judgement=judgement, seed=seed)
    return {k: float(v.mean()) for k, v in f.flat_raw().items() if v.dim() == 1}


def simulate_population(model, pop: dict[str, float], worlds, n_objects: int, seed: int):
    """Participants drawn from the population ``pop`` (raw group-level values) of ``model`` on ``worlds``;
    returns (data, true theta)."""
    cm = get_model(model)
    par = Parameterisation(cm, True, len(worlds))
    gen = torch.Generator().manual_seed(seed)
    group = {k: torch.tensor([v], dtype=torch.float64) for k, v in pop.items()}
    raw = par.new_participants(group, 1, len(worlds), gen)
    theta = {k: v[0] for k, v in par.theta(raw).items()}
    return simulate(cm, theta, worlds, n_objects, seed=seed + 1), theta


def resample_worlds(data: TrialData, n: int, rng: np.random.Generator) -> list:
    """``n`` (rule, blickets) worlds drawn with replacement from ``data``'s participants."""
    idx = rng.integers(len(data), size=n)
    p = data.participants
    return [(p["rule"].iloc[i], p["true_blickets"].iloc[i]) for i in idx]


def _override(pops: dict[str, dict], over: dict[str, dict]) -> dict[str, dict]:
    out = {m: dict(p) for m, p in pops.items()}
    for m, values in over.items():
        if m not in out:
            raise ValueError(f"population sets {m!r}, which generates no data set here (generating models: "
                             f"{sorted(out)})")
        if unknown := sorted(set(values) - set(out[m])):
            raise ValueError(f"population: {m} has no group-level site(s) {unknown}; its sites are {sorted(out[m])}")
        out[m].update({k: float(v) for k, v in values.items()})
    return out


def _resumable_rows(path: Path, models, folds: int, datasets: int, labels: dict[str, str], participants: int,
                    n_people: int) -> list[dict]:
    """Rows of an earlier (interrupted) run in ``path`` to keep; an error if they were scored differently (other
    models or folds) or simulated from another population or number of participants, which would mix two
    experiments. Tables from before ``participants`` was a column simulated as many as the people (``n_people``)."""
    if not path.exists():
        return []
    old = pd.read_csv(path, float_precision="round_trip")  # rewritten later: keep every digit
    old["population"] = old["population"].fillna("fitted") if "population" in old else "fitted"
    old["participants"] = old["participants"].fillna(n_people).astype(int) if "participants" in old else n_people
    if was := sorted(set(old["participants"]) - {participants}):
        raise ValueError(f"{path} has data sets of {[int(n) for n in was]} simulated participants, not "
                         f"{participants}; use another output folder")
    for m, label in labels.items():
        if was := sorted(set(old.loc[old["true"] == m, "population"]) - {label}):
            raise ValueError(f"{path} has {m} data sets simulated from population {was}, not {label!r}; use another "
                             f"output folder")
    scored = sorted(c[len("nats_"):] for c in old.columns if c.startswith("nats_"))
    if scored != sorted(models):
        raise ValueError(f"{path} scores the models {scored}, not {sorted(models)}; use another output folder")
    old_folds = sorted(set(old["folds"])) if "folds" in old else [1]
    if old_folds != [folds]:
        raise ValueError(f"{path} was scored with folds {old_folds}, not {folds}; use another output folder")
    return old[old["dataset"] < datasets].to_dict("records")


@dataclass
class ModelRecovery:
    """What :func:`model_recovery` returns.

    Attributes
    ----------
    rows : DataFrame -- one row per simulated data set: generating model (``true``), ``dataset``, held-out
        ``nats_<model>`` of every fitted model, ``se_vs_best_<model>``, the picks ``picked`` (argmin) and
        ``picked_1se`` (one-SE rule)
    models : the fitted models, simplest first
    populations : dict -- ``fitted`` (to the data) and ``simulated`` group-level values of each generating model
    """

    rows: pd.DataFrame
    models: tuple[str, ...]
    populations: dict = field(default_factory=dict)

    def confusion(self, pick: str = "picked_1se") -> pd.DataFrame:
        """Counts: generating model (rows) x picked model (columns), by ``pick`` (``picked`` or ``picked_1se``)."""
        generating = [m for m in self.models if m in set(self.rows["true"])]
        return pd.crosstab(self.rows["true"], self.rows[pick]).reindex(index=generating, columns=list(self.models),
                                                                        fill_value=0)

    def inversion(self, pick: str = "picked_1se") -> pd.DataFrame:
        """P(generating model | picked model) (:func:`inversion`)."""
        return inversion(self.confusion(pick))

    def recovered(self, pick: str = "picked_1se") -> dict[str, float]:
        """Share of each generating model's data sets that picked it."""
        conf = self.confusion(pick)
        return {m: float(conf.loc[m, m] / conf.loc[m].sum()) for m in conf.index}


def model_recovery(data: TrialData, models: Sequence[str], *, generating: Sequence[str] | None = None,
                   datasets: int = 2, folds: int = 1, participants: int | None = None,
                   population: dict[str, dict[str, float]] | None = None, test_fraction: float = 0.25,
                   svi: SVIOptions | None = None, judgement: str | None = None, seed: int = 0, n_draws: int = 400,
                   executor: Executor | None = None, out: str | Path | None = None,
                   verbose: bool = True) -> ModelRecovery:
    """Model recovery: fit each generating model to ``data`` (SVI) for a population, simulate ``datasets`` data
    sets of ``participants`` from it (worlds resampled from ``data``'s), fit every model of ``models`` to each and
    pick by held-out score (argmin, and the one-SE rule :func:`one_se_pick`).

    Parameters
    ----------
    data : TrialData
        The people whose fitted populations and worlds the simulations use.
    models : model names, simplest first (the one-SE rule breaks ties in this order)
    generating : model names, optional
        The models that generate data sets (default: all of ``models``). Data set ``k`` of a model gets the same
        worlds and seed whichever models generate in a run with the same ``datasets``.
    datasets : int
        Data sets per generating model.
    folds : int
        1: score on one held-out ``test_fraction`` of each data set; K > 1: K-fold CV, every simulated participant
        held out once.
    participants : int, optional
        Simulated participants per data set (default: as many as ``data``).
    population : dict model -> {raw group-level site: value}, optional
        Values replacing the fitted ones of a generating model (how strong must a strategy be to be recovered?).
    svi, judgement, seed, n_draws :
        Fit settings (every fit seeded with ``seed``; data set ``k`` split with seed ``k``).
    executor : concurrent.futures.Executor, optional
        Runs the populations' and data sets' fits (every data set's fits are queued at once, so all workers stay
        busy); None: here.
    out : folder, optional
        ``model_recovery.csv`` is written there after every data set; a rerun into the same folder skips the data
        sets already there (and refuses a table made another way).
    """
    models = tuple(models)
    folds, datasets = integer(folds, "folds", low=1), integer(datasets, "datasets", low=1)
    true_models = tuple(generating or models)
    if not set(true_models) <= set(models):
        raise ValueError(f"generating models {sorted(set(true_models) - set(models))} are not among the fitted "
                         f"models {list(models)}")
    n_sim = len(data) if participants is None else participants
    if problem := participants_problem(n_sim, folds, test_fraction, what="simulated participants"):
        raise ValueError(f"model recovery: {problem}")
    population = population or {}
    rng = np.random.default_rng(seed + 1)
    path = None if out is None else Path(out) / "model_recovery.csv"
    labels = {m: population_label(population.get(m)) for m in true_models}
    rows = [] if path is None else _resumable_rows(path, models, folds, datasets, labels, n_sim, len(data))
    done = {(r["true"], int(r["dataset"])) for r in rows}
    pops = {m: wait_result(executor.submit(_fitted_population, data, m, svi, judgement, seed)) if executor
            else _fitted_population(data, m, svi, judgement, seed) for m in true_models}
    fitted, pops = pops, _override(pops, population)
    fit_kw = {"method": "svi", "svi": svi, "judgement": judgement, "seed": seed, "n_draws": n_draws}
    jobs = []
    for true in models:
        for k in range(datasets):
            # drawn even when skipped (resumed, or not generating now), so every data set has the worlds and seed
            # it has in a whole run with the same ``datasets`` (one sequence over models and data sets)
            worlds = resample_worlds(data, n_sim, rng)
            if true not in pops:
                continue
            if (true, k) in done:
                _log(f"[models] {true} #{k}: already in {path}, skipped", verbose)
                continue
            sim, _ = simulate_population(get_model(true, judgement), pops[true], worlds, data.n_objects,
                                         seed + 100 * k + 7)
            jobs.append((true, k, heldout_job(sim, models, folds=folds, split_seed=k, test_fraction=test_fraction,
                                              executor=executor, score_seed=k, **fit_kw)))
    t0 = time.perf_counter()
    for i, (true, k, job) in enumerate(jobs):
        scores = job()
        best = min(scores, key=lambda m: scores[m].nats_per_choice)
        row = {"true": true, "dataset": k, "folds": folds, "population": labels[true], "participants": n_sim,
               **{f"nats_{m}": s.nats_per_choice for m, s in scores.items()},
               **{f"se_vs_best_{m}": paired_difference(s, scores[best])[1] for m, s in scores.items() if m != best}}
        rows.append({**row, **row_picks(row, models)})
        if path is not None:
            pd.DataFrame(rows).to_csv(path, index=False)
        _log(f"[models] {true} ({labels[true]}) #{k}: picked {rows[-1]['picked']} (one-SE rule: "
             f"{rows[-1]['picked_1se']}); {i + 1}/{len(jobs)} data sets, {time.perf_counter() - t0:.0f} s", verbose)
    # picks follow from the stored scores, so a resumed table is tabulated by the current rule
    df = pd.DataFrame([{**r, **row_picks(r, models)} for r in rows])
    if path is not None:
        df.to_csv(path, index=False)
    return ModelRecovery(df, models, {"fitted": fitted, "simulated": pops})
