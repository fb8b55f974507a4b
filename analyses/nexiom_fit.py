"""Which model of people's experiments explains Blicket data best? The whole workflow, in stages.

Runs from a clone of the repository (``analyses/`` is not installed with the package). The installed commands
``causalplay fit``, ``fit-cv``, ``fit-recovery`` and ``fit-ppc`` cover the comparison, cross-validation, model
recovery and posterior predictive check; this script adds the prior predictive check, parameter recovery, NUTS of
every model and the figures of docs/human-data.md.

Stages (``--stages``, default all, in this order; each writes its files under ``OUT/NAME`` as soon as they exist;
a stage that needs more participants than the data has says so and is skipped):

``prior``     prior predictive check of the main model: ``prior_predictive.png``, ``prior_predictive.csv``
``compare``   hold out a stratified quarter of the participants; fit every model (hierarchical SVI) to the rest;
              ``compare()``: held-out nats per choice with paired SEs, PSIS-LOO (Pareto-k counts), WAIC, held-out
              judgement log-likelihoods: ``compare.csv``, ``heldout.png``; both judgement models of the main
              model: ``judgements.csv``
``crossval``  participant-level k-fold cross-validation (``--folds``): ``crossval.csv``,
              ``crossval_participants.csv`` (written fit by fit)
``nuts``      the main model on all participants by NUTS: ``nuts_diagnostics.json``, ``nuts_summary.csv``,
              ``participants.csv`` (90% intervals), ``idata.nc``, ``rank.png``, ``forest.png`` (population-level
              parameters), ``ppc.png`` (``az.plot_ppc`` of the choices), ``pareto_k.png``
``nuts_all``  every model of ``--models`` by NUTS, the parameters of ``--nuts-shared`` shared where a model has
              them; a fit that does not converge is refitted at each ``--nuts-retry-target-accept`` (inside
              ``fit``): one row per attempt in ``nuts_all.csv`` (a rerun skips the models already there)
``ppc``       posterior predictive checks of the NUTS fit: ``ppc.json``, ``ppc_*.png``
``recovery``  parameter recovery at the NUTS-fitted population values: ``recovery_*.csv``
``models``    model recovery (``causalplay.fitting.workflows.model_recovery``): ``model_recovery.csv``,
              ``confusion.csv``, ``confusion_1se.csv``, ``inversion.csv``, ``inversion_1se.csv`` (a rerun adds
              only missing data sets)

``--executor`` (serial, process, ray, dask) with ``--workers`` / ``--address HOST:PORT`` runs the fits of
``crossval`` and ``models`` (``--workers N`` alone: a process pool). ``python analyses/nexiom_fit.py --help`` lists
every option (generated from :class:`Config`); ``--smoke`` starts from tiny settings that run in seconds.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from causalplay.models.choice import MAIN_MODELS, build_features, get_model  # noqa: E402

from causalplay.bench.executors import make_executor  # noqa: E402
from causalplay.cli.config import parse_config  # noqa: E402
from causalplay.data import TrialData, load_nexiom, load_trials  # noqa: E402
from causalplay.fitting import NUTSOptions, Parameterisation, SVIOptions, compare, fit, load_fit, simulate  # noqa: E402
from causalplay.fitting import workflows as W  # noqa: E402
from causalplay.fitting.ppc import eig_top_share, summary_statistics  # noqa: E402

# every registered choice model, simplest first (the one-SE rule of model recovery breaks ties in this order)
ALL_MODELS = MAIN_MODELS + ("size", "sweep", "size_sweep", "eig_plus_sweep", "eig_sweep_single")
Stage = Literal["prior", "compare", "crossval", "nuts", "nuts_all", "ppc", "recovery", "models"]
STAGES: tuple[Stage, ...] = ("prior", "compare", "crossval", "nuts", "nuts_all", "ppc", "recovery", "models")


@dataclass(frozen=True)
class Config:
    """Which model of people's experiments explains Blicket data best? See docs/human-data.md."""

    data: str | None = None
    """Folder with participants.csv and tests.csv (docs/data-schema.md); default: the shipped Nexiom data."""
    n_objects: int | None = None
    """Number of objects, if participants.csv has no n_objects column."""
    out: str = "runs"
    """Results go to OUT/NAME."""
    name: str = "nexiom_fit"
    smoke: bool = False
    """Start from tiny settings that run in seconds (checks the pipeline; name 'smoke')."""
    stages: tuple[Stage, ...] = STAGES
    models: tuple[str, ...] = ALL_MODELS
    """Choice models to compare (options such as 'eig_sweep:shared=[gamma,stop_a]' too)."""
    main_model: str = "eig_sweep_single:shared=[gamma,stop_a]"
    """Model of nuts, ppc and recovery: the cross-validated best, the two parameters the design cannot recover
    per participant shared."""
    judgement: Literal["sample", "softmax"] = "softmax"
    max_participants: int | None = None
    test_fraction: float = 0.25
    split_seed: int = 0
    folds: int = 4
    svi_steps: int = 1500
    svi_draws: int = 400
    score_draws: int = 400
    nuts_chains: int = 4
    nuts_warmup: int = 500
    nuts_draws: int = 1000
    nuts_target_accept: float = 0.9
    nuts_dense_mass: bool = False
    nuts_shared: tuple[str, ...] = ("gamma", "stop_a")
    """Parameters shared by everybody in nuts_all where a model has them."""
    nuts_retry_target_accept: tuple[float, ...] = (0.95, 0.99)
    """A NUTS fit that does not converge is refitted at each of these target acceptances in turn."""
    ppc_replicas: int = 40
    recovery_datasets: int = 3
    recovery_method: Literal["svi", "nuts"] = "svi"
    model_recovery_models: tuple[str, ...] = ALL_MODELS
    model_recovery_datasets: int = 2
    model_recovery_folds: int = 1
    """1: score each simulated data set on one held-out quarter; K > 1: K-fold CV."""
    model_recovery_true: tuple[str, ...] | None = None
    """Models that generate data sets (default: all of model_recovery_models)."""
    model_recovery_population: tuple[str, ...] = ()
    """MODEL:SITE=VALUE items replacing a generating model's fitted group-level values (e.g. positive:beta_mu=0)."""
    model_recovery_participants: int | None = None
    """Simulated participants per data set (default: as many as the people)."""
    executor: Literal["serial", "process", "ray", "dask"] | None = None
    """Where crossval's and models' fits run (default: process with --workers > 1, else serial)."""
    workers: int = 1
    address: str | None = None
    """Ray/Dask cluster to connect to (HOST:PORT)."""
    seed: int = 0
    fit: str | None = None
    """Saved NUTS fit (idata.nc of the nuts stage) for ppc and recovery."""


SMOKE = Config(name="smoke", smoke=True, models=("random", "eig_sweep"), max_participants=12, svi_steps=30,
               svi_draws=30, score_draws=30, nuts_chains=2, nuts_warmup=10, nuts_draws=10, ppc_replicas=2,
               recovery_datasets=1, model_recovery_models=("random", "eig_sweep"), model_recovery_datasets=1, folds=2,
               nuts_retry_target_accept=(0.95,))


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=2, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))


def _svi(cfg: Config) -> SVIOptions:
    return SVIOptions(steps=cfg.svi_steps, draws=cfg.svi_draws)


def _nuts(cfg: Config) -> NUTSOptions:
    return NUTSOptions(chains=cfg.nuts_chains, warmup=cfg.nuts_warmup, draws=cfg.nuts_draws,
                       target_accept=cfg.nuts_target_accept, dense_mass=cfg.nuts_dense_mass)


# ---- statistics of a data set (people or simulated) ---------------------------------------------------------
def stats(data: TrialData, rho: float, max_test: int = 10) -> dict:
    """The PPC statistics of one data set, its first test being test 1 (a demonstration included) and its test
    counts the participants table's ``n_tests``; :func:`causalplay.fitting.ppc.statistics` counts each person's
    own tests instead. The rest is :func:`causalplay.fitting.ppc.summary_statistics`."""
    t = data.tests
    first = t[t["test"] == 1]
    size = t.assign(size=t["objects_on"].map(len)).groupby("test")["size"].mean()
    p = data.participants
    return summary_statistics(first["objects_on"], size, p["n_tests"].to_numpy(), p, eig_top_share(data, rho),
                              max_test=max_test)


def _interval(sims: pd.DataFrame, col: str) -> tuple[float, float, float]:
    v = sims[col].dropna().to_numpy()
    return (float(np.mean(v)), float(np.quantile(v, 0.05)), float(np.quantile(v, 0.95))) if len(v) else (np.nan,) * 3


# ---- stages ---------------------------------------------------------------------------------------------------
def stage_prior(cfg: Config, data: TrialData, out: Path, res: dict) -> None:
    """Prior predictive: group parameters and participants from the priors, simulated on the people's worlds."""
    cm = get_model(cfg.main_model, cfg.judgement)
    par = Parameterisation(cm, True, len(data))
    worlds = list(zip(data.participants["rule"], data.participants["true_blickets"], strict=True))
    n_sets = 5 if len(data) > 20 else 1
    theta = par.theta(par.prior_draws(n_sets, torch.Generator().manual_seed(cfg.seed)))
    sims = pd.DataFrame([stats(simulate(cm, {k: v[i] for k, v in theta.items()}, worlds, data.n_objects,
                                        seed=cfg.seed + i), float(theta["rho"][i, 0])) for i in range(n_sets)])
    sims.to_csv(out / "prior_predictive.csv", index=False)
    human = stats(data, 0.0)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for ax, (key, n, xlabel, ylabel) in zip(axes, (("tests_eq_{}", 15, "number of tests", "share of participants"),
                                                    ("size_t{}", 10, "test index", "mean objects on the machine")),
                                            strict=True):
        k = np.arange(1, n + 1)
        ax.plot(k, [human[key.format(i)] for i in k], "o-", label="people")
        for j, (_, r) in enumerate(sims.iterrows()):
            ax.plot(k, [r[key.format(i)] for i in k], color="grey", alpha=0.5,
                    label="prior predictive draws" if j == 0 else None)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
    axes[0].legend()
    _save(fig, out / "prior_predictive.png")
    res["prior_predictive"] = {"datasets": n_sets, "mean_tests": sims["mean_tests"].tolist(),
                               "human_mean_tests": human["mean_tests"]}


def stage_compare(cfg: Config, data: TrialData, out: Path, res: dict) -> str | None:
    fit_data, held = data.split(cfg.test_fraction, seed=cfg.split_seed)
    if len(held) < 2 or len(fit_data) < 2:
        return (f"a {cfg.test_fraction:g} split of {len(data)} participants holds out {len(held)}; a paired SE needs "
                f"at least 2 held out and 2 fitted (use crossval, or more participants)")
    res.update({"n_fit": len(fit_data), "n_heldout": len(held), "heldout_choices": held.n_choices})
    fits = {m: fit(fit_data, m, method="svi", svi=_svi(cfg), judgement=cfg.judgement, seed=cfg.seed)
            for m in cfg.models}
    table = compare(fits, held, n_draws=cfg.score_draws, seed=cfg.seed)
    table.to_csv(out / "compare.csv")
    print(table, flush=True)
    res["compare"] = table.drop(columns=["method"]).reset_index().to_dict("records")
    res["best_model"], res["verdict"] = table.index[0], table.verdict
    _save(table.plot().figure, out / "heldout.png")
    # judgement models, with the main choice model: held-out judgement log-likelihood, blickets and rule apart
    rows, joint = [], {}
    for jm in ("sample", "softmax"):
        f = fits[cfg.main_model] if jm == cfg.judgement and cfg.main_model in fits else fit(
            fit_data, cfg.main_model, method="svi", svi=_svi(cfg), judgement=jm, seed=cfg.seed)
        j = f.score(held, n_draws=cfg.score_draws, seed=cfg.seed).judgements.dropna()
        rows.append({"judgement": jm, "n": len(j), **{c: j[c].sum() for c in ("joint", "blickets", "rule")}})
        joint[jm] = j["joint"]
    d = (joint["softmax"] - joint["sample"]).to_numpy()
    pd.DataFrame(rows).to_csv(out / "judgements.csv", index=False)
    res["judgements"] = rows
    res["judgements_softmax_minus_sample"] = {"nats": float(d.sum()),
                                             "se": float(math.sqrt(len(d)) * d.std(ddof=1)) if len(d) > 1 else None}
    return None


def _executor(cfg: Config):
    """``--executor`` (default: a process pool with ``--workers`` > 1, else serial); a local Ray/Dask cluster gets
    ``--workers`` CPUs (all with the default 1), a cluster at ``--address`` its own."""
    kind = cfg.executor or ("process" if cfg.workers > 1 else "serial")
    local = kind != "serial" and not cfg.address and (kind == "process" or cfg.workers > 1)
    return make_executor(kind, cfg.workers if local else None, cfg.address)


def stage_crossval(cfg: Config, data: TrialData, out: Path, res: dict) -> str | None:
    problem = W.participants_problem(len(data), cfg.folds, what=f"{len(data)} participants")
    if problem:
        return problem
    with _executor(cfg) as ex:
        cv = W.crossval(data, cfg.models, folds=cfg.folds, split_seed=cfg.split_seed, svi=_svi(cfg),
                        judgement=cfg.judgement, seed=cfg.seed, n_draws=cfg.score_draws, executor=ex, out=out)
    res["crossval"] = {"folds": cfg.folds, "best": cv.best, "table": cv.table.to_dict("records")}
    print(cv.table.to_string(index=False), flush=True)
    return None


def stage_nuts(cfg: Config, data: TrialData, out: Path, res: dict):
    import arviz as az

    t0 = time.perf_counter()
    f = fit(data, cfg.main_model, judgement=cfg.judgement, nuts=_nuts(cfg), seed=cfg.seed,
            retry_target_accept=cfg.nuts_retry_target_accept)
    diag = f.diagnostics(warn=False)
    diag.update({"wall_seconds_total": round(time.perf_counter() - t0, 1), "load_average_after": os.getloadavg(),
                 "cpu_count": os.cpu_count(), "step_size": f.extra.get("step_size"),
                 "attempts": len(f.extra.get("attempts", [])) + 1})
    _write_json(out / "nuts_diagnostics.json", diag)
    f.summary().to_csv(out / "nuts_summary.csv")
    f.participant_table(0.9).to_csv(out / "participants.csv", index=False)
    f.idata.to_netcdf(out / "idata.nc")
    res["nuts"] = diag
    nuts_figures(f.idata, out)
    loo = az.loo(f.idata, var_name="choice", pointwise=True)
    az.plot_khat(loo)
    _save(plt.gcf(), out / "pareto_k.png")
    res["nuts_loo"] = {"elpd_loo": float(loo.elpd_loo), "se": float(loo.se),
                       "pareto_k_gt_0.7": int((np.asarray(loo.pareto_k) > 0.7).sum())}
    return f


def population_sites(idata) -> list[str]:
    """The population-level parameters of a fit, in the posterior's order: the participant-level parameters'
    ``<name>_mu`` and the shared parameters (not the ``<name>_sigma`` spreads, nor the ``_raw`` unconstrained
    copies)."""
    post = idata.posterior
    return [v for v in post.data_vars if "participant" not in post[v].dims and not v.endswith(("_raw", "_sigma"))]


def nuts_figures(idata, out: Path) -> None:
    """The ArviZ figures of a NUTS fit: ``rank.png`` (rank plots of every group-level parameter: near-uniform
    ranks in each chain mean the chains mix), ``forest.png`` (the population-level parameters, 90% HDIs, chains
    combined) and ``ppc.png`` (``az.plot_ppc`` of the choices: the cumulative distribution of the object-set codes
    people chose beside those drawn at the same decisions under 100 posterior draws (all, if fewer); cumulative,
    because ArviZ's default for integer data bins the draws' mean differently from the draws)."""
    import arviz as az

    post = idata.posterior
    group = [v for v in post.data_vars if "participant" not in post[v].dims and not v.endswith("_raw")]
    az.plot_rank(idata, var_names=group)
    _save(plt.gcf(), out / "rank.png")
    pop = population_sites(idata)
    az.plot_forest(idata, var_names=pop, combined=True, hdi_prob=0.9, figsize=(6, 0.45 * len(pop) + 1))
    _save(plt.gcf(), out / "forest.png")
    if "posterior_predictive" in idata.groups():
        pp = idata.posterior_predictive
        az.plot_ppc(idata, var_names=["choice"], kind="cumulative", random_seed=0, figsize=(7, 3.5),
                    num_pp_samples=min(100, pp.sizes["chain"] * pp.sizes["draw"]))
        _save(plt.gcf(), out / "ppc.png")


def with_shared(name: str, shared: tuple[str, ...]) -> str:
    """``name`` with those of ``shared`` that are participant-level parameters of it made shared."""
    cm = get_model(name)
    have = [p for p in shared if p in {q.name for q in cm.all_params() if q.level == "participant"}]
    return cm.with_shared(have).name if have else cm.name


def stage_nuts_all(cfg: Config, data: TrialData, out: Path, res: dict) -> None:
    """NUTS of every model on all participants: does each one converge (after fit's retries), at what cost?"""
    import arviz as az

    path = out / "nuts_all.csv"
    rows = pd.read_csv(path).to_dict("records") if path.exists() else []
    for m in cfg.models:
        name = with_shared(m, cfg.nuts_shared)
        if any(r["model"] == name for r in rows):
            print(f"[nuts_all] {name}: already in {path}, skipped", flush=True)
            continue
        f = fit(data, name, judgement=cfg.judgement, nuts=_nuts(cfg), seed=cfg.seed,  # warns if not ok
                retry_target_accept=cfg.nuts_retry_target_accept)
        for a in f.extra.get("attempts", []) + [f]:
            d = a.diagnostics(warn=False)
            loo = az.loo(a.idata, var_name="choice", pointwise=True)
            rows.append({"model": name, **{k: d[k] for k in ("ok", "rhat_max", "rhat_worst_site", "ess_bulk_min",
                                                              "ess_bulk_worst_site", "ess_tail_min", "divergences",
                                                              "chains", "draws", "cpu_seconds")},
                         "elpd_loo": float(loo.elpd_loo), "se_loo": float(loo.se),
                         "pareto_k_gt_0.7": int((np.asarray(loo.pareto_k) > 0.7).sum()),
                         "unidentified": ",".join(d.get("unidentified", {})),  # these end fit's retries
                         "target_accept": a.options.target_accept, "dense_mass": cfg.nuts_dense_mass,
                         "wall_seconds": round(a.seconds, 1), "load_average_after": round(os.getloadavg()[0], 2)})
            print(f"[nuts_all] {name} at target acceptance {a.options.target_accept}: R-hat {d['rhat_max']:.4f} "
                  f"({d['rhat_worst_site']}), bulk ESS {d['ess_bulk_min']:.0f}, {d['divergences']} divergences, "
                  f"{d['cpu_seconds']:.0f} s CPU", flush=True)
        pd.DataFrame(rows).to_csv(path, index=False)
    final = pd.DataFrame(rows).groupby("model", sort=False)["ok"].any() if rows else pd.Series(dtype=bool)
    res["nuts_all"] = {"all_ok": bool(final.all()) if rows else None, "converged": final.to_dict(), "table": rows}


def stage_ppc(cfg: Config, data: TrialData, out: Path, res: dict, f) -> None:
    rho = float(f.idata.posterior["rho"].mean())
    human = stats(data, rho)
    sims = pd.DataFrame([stats(f.simulate(seed=cfg.seed + 100 + r), rho) for r in range(cfg.ppc_replicas)])
    sims.to_csv(out / "ppc_replicas.csv", index=False)
    ppc = {k: {"human": human[k], "model": _interval(sims, k)} for k in human}
    _write_json(out / "ppc.json", {"fitted_rho": rho, "replicas": cfg.ppc_replicas, "stats": ppc})
    res["ppc"] = {k: ppc[k] for k in ("first_has_0", "first_single", "first_pair", "mean_tests", "top_eig_share",
                                      "blickets_correct_disjunctive", "blickets_correct_conjunctive",
                                      "rule_correct_disjunctive", "rule_correct_conjunctive")}
    panels = [(["first_has_0", "first_single", "first_pair"], ["contains object 0", "one object", "two objects"],
               "first test", "ppc_first_test.png", "share of participants"),
              ([f"size_t{k}" for k in range(1, 11)], [str(k) for k in range(1, 11)], "test index",
               "ppc_set_size.png", "mean objects on the machine"),
              ([f"tests_eq_{n}" for n in range(1, 16)], [str(n) for n in range(1, 16)], "number of tests",
               "ppc_n_tests.png", "share of participants"),
              (["blickets_correct_disjunctive", "blickets_correct_conjunctive", "rule_correct_disjunctive",
                "rule_correct_conjunctive"], ["blickets, disj.", "blickets, conj.", "rule, disj.", "rule, conj."],
               "judgement accuracy by true rule", "ppc_accuracy.png", "proportion correct"),
              (["top_eig_share"], [f"top-EIG set (rho = {rho:.2f})"], "", "ppc_top_eig.png", "share of tests")]
    for keys, labels, xlabel, fname, ylabel in panels:
        fig, ax = plt.subplots(figsize=(6, 3.4))
        x = np.arange(len(keys))
        ax.plot(x, [human[k] for k in keys], "o", color="#c44e52", label="people", zorder=3)
        m = np.array([_interval(sims, k) for k in keys])
        ax.errorbar(x + 0.1, m[:, 0], yerr=[m[:, 0] - m[:, 1], m[:, 2] - m[:, 0]], fmt="s", color="#4c72b0",
                    capsize=3, label=f"{cfg.main_model} (PPC, 90% over replicas)")
        ax.set_xticks(x, labels, rotation=30 if len(keys) > 6 else 0, fontsize=8)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=8)
        _save(fig, out / fname)


def _resumable_recovery(out: Path, method: str, datasets: int) -> tuple[list[dict], list[dict]]:
    """Per-participant and group rows of an earlier (interrupted) recovery run in ``out`` to keep (data sets
    below ``datasets``); an error if they were fitted by another ``--recovery-method``."""
    paths = out / "recovery_participant.csv", out / "recovery_group.csv"
    if not all(p.exists() for p in paths):
        return [], []
    tabs = [pd.read_csv(p) for p in paths]
    for p, t in zip(paths, tabs, strict=True):
        methods = sorted(set(t["method"])) if "method" in t else ["unknown"]
        if methods != [method]:
            raise ValueError(f"{p} holds fits by {methods}, not --recovery-method {method}; use another --name")
    done = set(tabs[0]["dataset"]) & set(tabs[1]["dataset"])  # both are written together, after a data set's fit
    return tuple([r for r in t.to_dict("records") if r["dataset"] in done and r["dataset"] < datasets]
                 for t in tabs)


def stage_recovery(cfg: Config, data: TrialData, out: Path, res: dict, f) -> None:
    """Simulate data sets of the size of the people's from the fitted population; refit; compare."""
    cm = f.model
    pop = {k: float(v.mean()) for k, v in f.flat_raw().items() if v.dim() == 1}
    rng = np.random.default_rng(cfg.seed)
    per_rows, group_rows = _resumable_recovery(out, cfg.recovery_method, cfg.recovery_datasets)
    done = {int(r["dataset"]) for r in group_rows}
    for k in range(cfg.recovery_datasets):
        worlds = W.resample_worlds(data, len(data), rng)  # drawn even when skipped: a resumed run simulates the same
        if k in done:
            print(f"[recovery] data set {k + 1}/{cfg.recovery_datasets}: already in {out}, skipped", flush=True)
            continue
        sim, truth = W.simulate_population(cm, pop, worlds, data.n_objects, cfg.seed + 10 * k)
        g = (fit(sim, cm, method="svi", svi=_svi(cfg), seed=cfg.seed + k) if cfg.recovery_method == "svi"
             else fit(sim, cm, nuts=_nuts(cfg), seed=cfg.seed + k, warn=False, retry_target_accept=()))
        th = g.theta()
        for p in cm.all_params():
            v, tr = th[p.name].numpy(), truth[p.name].numpy()
            lo, hi = np.quantile(v, [0.05, 0.95], axis=0)
            if p.level == "participant":
                per_rows.append({"dataset": k, "method": cfg.recovery_method, "parameter": p.name,
                                 "r": float(np.corrcoef(tr, v.mean(0))[0, 1]),
                                 "coverage90": float(((tr >= lo) & (tr <= hi)).mean()),
                                 "true_sd": float(tr.std()), "est_sd_of_means": float(v.mean(0).std())})
            else:
                group_rows.append({"dataset": k, "method": cfg.recovery_method, "parameter": p.name,
                                   "truth": float(tr[0]), "mean": float(v[:, 0].mean()), "q5": float(lo[0]),
                                   "q95": float(hi[0]), "covered": bool(lo[0] <= tr[0] <= hi[0])})
        for site in [s for s in pop if s.endswith("_mu") or s.endswith("_sigma")]:
            v = g.flat_raw()[site].numpy()
            lo, hi = np.quantile(v, [0.05, 0.95])
            group_rows.append({"dataset": k, "method": cfg.recovery_method, "parameter": site, "truth": pop[site],
                               "mean": float(v.mean()), "q5": float(lo), "q95": float(hi),
                               "covered": bool(lo <= pop[site] <= hi)})
        pd.DataFrame(per_rows).to_csv(out / "recovery_participant.csv", index=False)
        pd.DataFrame(group_rows).to_csv(out / "recovery_group.csv", index=False)
        print(f"[recovery] data set {k + 1}/{cfg.recovery_datasets} done", flush=True)
    pr = pd.DataFrame(per_rows).groupby("parameter").agg(r_mean=("r", "mean"), r_min=("r", "min"), r_max=("r", "max"),
                                                          coverage90_mean=("coverage90", "mean"))
    res["recovery"] = {"method": cfg.recovery_method, "datasets": cfg.recovery_datasets, "population": pop,
                       "participant": {p: {k: float(v) for k, v in r.items()} for p, r in pr.iterrows()},
                       "group_coverage90": pd.DataFrame(group_rows).groupby("parameter")["covered"].mean().to_dict()}


def population(items: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """``("positive:beta_mu=0", ...)`` -> ``{"positive": {"beta_mu": 0.0}}``; a ValueError naming a bad item."""
    pop: dict[str, dict[str, float]] = {}
    for item in items:
        m = re.fullmatch(r"\s*([^:=\s]+):(\w+)=([^=]+?)\s*", item)
        try:
            value = float(m.group(3)) if m else math.nan
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise ValueError(f"--model-recovery-population item {item!r} is not MODEL:SITE=VALUE with a finite number "
                             f"VALUE (e.g. positive:beta_mu=0)")
        pop.setdefault(m.group(1), {})[m.group(2)] = value
    return pop


def stage_models(cfg: Config, data: TrialData, out: Path, res: dict) -> str | None:
    n = len(data) if cfg.model_recovery_participants is None else cfg.model_recovery_participants
    need = W.min_participants(cfg.model_recovery_folds, cfg.test_fraction)
    if n < need:
        return (f"data sets of {n} simulated participants (as many as the data has) cannot hold out 2 in every "
                f"part with --model-recovery-folds {cfg.model_recovery_folds}: it needs {need}; simulate more with "
                f"--model-recovery-participants N")
    with _executor(cfg) as ex:
        mr = W.model_recovery(data, cfg.model_recovery_models, generating=cfg.model_recovery_true,
                              datasets=cfg.model_recovery_datasets, folds=cfg.model_recovery_folds,
                              participants=cfg.model_recovery_participants,
                              population=population(cfg.model_recovery_population), test_fraction=cfg.test_fraction,
                              svi=_svi(cfg), judgement=cfg.judgement, seed=cfg.seed, n_draws=cfg.score_draws,
                              executor=ex, out=out)
    res["model_recovery_populations"] = mr.populations
    res["model_recovery"] = {"datasets_per_model": cfg.model_recovery_datasets, "folds": cfg.model_recovery_folds,
                             "participants": n}
    for pick, name in (("picked", "confusion.csv"), ("picked_1se", "confusion_1se.csv")):
        conf, inv = mr.confusion(pick), mr.inversion(pick)
        conf.to_csv(out / name)
        inv.to_csv(out / name.replace("confusion", "inversion"))
        res["model_recovery"][pick] = {"confusion": conf.to_dict("index"), "recovered_share": mr.recovered(pick),
                                       "inversion": inv.to_dict("index")}
    return None


def load_data(cfg: Config) -> TrialData:
    data = load_nexiom() if cfg.data is None else load_trials(cfg.data, n_objects=cfg.n_objects)
    if cfg.max_participants is not None:
        data = data.subset(data.ids[: cfg.max_participants])
    build_features(data)  # fails early, naming the participant, for data the models cannot take
    return data


def run(cfg: Config) -> dict:
    out = Path(cfg.out) / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(asdict(cfg), indent=2))
    data = load_data(cfg)
    res: dict = {"data": cfg.data or "shipped Nexiom", "n_participants": len(data), "n_choices": data.n_choices,
                 "uniform_nats_per_choice": math.log(2**data.n_objects + 1), "cpu_count": os.cpu_count(),
                 "torch": torch.__version__, "skipped": {}}
    for m in cfg.models + (cfg.main_model,) + cfg.model_recovery_models:
        get_model(m)  # fails early, naming the model and what is available (options such as :shared=[...] too)
    f = None
    for stage in (s for s in STAGES if s in cfg.stages):
        t0 = time.perf_counter()
        if stage in ("ppc", "recovery") and f is None:
            f = load_fit(cfg.fit, data, model=cfg.main_model, judgement=cfg.judgement) if cfg.fit else \
                stage_nuts(cfg, data, out, res)
        if stage == "nuts":
            f, why = stage_nuts(cfg, data, out, res), None
        elif stage in ("ppc", "recovery"):
            why = (stage_ppc if stage == "ppc" else stage_recovery)(cfg, data, out, res, f)
        else:
            why = {"prior": stage_prior, "compare": stage_compare, "crossval": stage_crossval,
                   "nuts_all": stage_nuts_all, "models": stage_models}[stage](cfg, data, out, res)
        if why:
            print(f"[{stage}] skipped: {why}", flush=True)
            res["skipped"][stage] = why
        res.setdefault("stage_seconds", {})[stage] = round(time.perf_counter() - t0, 1)
        _write_json(out / "results.json", res)
    return res


def parse_args(argv: list[str]) -> Config:
    """The command line, generated from :class:`Config` (``--smoke`` makes :data:`SMOKE` the defaults); a usage
    error (exit 2) names the option."""
    cfg = parse_config(Config, argv, smoke=SMOKE, description=__doc__)
    problems = [f"--data {cfg.data!r} is not a folder" if cfg.data is not None and not Path(cfg.data).is_dir() else "",
                f"--workers must be 1 or more, got {cfg.workers}" if cfg.workers < 1 else "",
                f"--model-recovery-folds must be 1 (one held-out split) or more (K-fold CV), got "
                f"{cfg.model_recovery_folds}" if cfg.model_recovery_folds < 1 else ""]
    if cfg.model_recovery_participants is not None and cfg.model_recovery_folds >= 1:
        problems.append(W.participants_problem(cfg.model_recovery_participants, cfg.model_recovery_folds,
                                               cfg.test_fraction, what="--model-recovery-participants") or "")
    try:
        population(cfg.model_recovery_population)
    except ValueError as e:
        problems.append(str(e))
    if any(problems):
        print("nexiom_fit.py: error: " + "; ".join(p for p in problems if p), file=sys.stderr)
        raise SystemExit(2)
    return cfg


def main(argv: list[str] | None = None) -> None:
    print(json.dumps(run(parse_args(sys.argv[1:] if argv is None else argv)), indent=2, default=str))


if __name__ == "__main__":
    main()
