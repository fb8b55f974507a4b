"""Which model of people's experiments explains Blicket data best? The whole workflow, in stages.

Stages (``--stages``, default all, in this order; each writes its files under ``OUT`` as soon as they exist):

``prior``     prior predictive check of the main model (priors as in ``docs/human-data.md``): ``prior_predictive.png``
``compare``   hold out a stratified quarter of the participants; fit every model (hierarchical SVI) to the rest;
              PSIS-LOO (Pareto-k counts), WAIC, held-out nats per choice with paired per-participant SEs, held-out
              judgement log-likelihoods (blickets, rule): ``compare.csv``, ``heldout.png``; both judgement models
              of the main model: ``judgements.csv``
``crossval``  participant-level k-fold cross-validation (``--folds``, default 4): every participant held out once;
              held-out nats per choice of every model with paired SEs over **all** participants, judgement
              log-likelihoods: ``crossval.csv``, ``crossval_participants.csv`` (written fold by fold)
``nuts``      the main model on **all** participants by NUTS: ``nuts_diagnostics.json``, ``nuts_summary.csv``,
              ``participants.csv`` (90% intervals), ``idata.nc``, ``rank.png``, ``forest.png``, ``pareto_k.png``
``nuts_all``  every model of ``--models`` on **all** participants by NUTS, the parameters of ``--nuts-shared`` that a
              model has shared by everybody: convergence (R-hat, bulk/tail ESS, divergences), PSIS-LOO and CPU time
              per model in ``nuts_all.csv`` (written model by model; a rerun skips the models already there); a
              model that does not converge is refit at each ``--nuts-retry-target-accept`` in turn
``ppc``       posterior predictive checks of the NUTS fit against the people (90% intervals over replicas):
              ``ppc.json``, ``ppc_first_test.png``, ``ppc_set_size.png``, ``ppc_n_tests.png``, ``ppc_accuracy.png``,
              ``ppc_top_eig.png``
``recovery``  parameter recovery at the NUTS-fitted population values: ``recovery_*.csv``, ``recovery.json``
``models``    model recovery (simulate from each model, fit all, pick by held-out score): ``model_recovery.csv``,
              ``confusion.csv``, ``confusion_1se.csv``, and their inversions P(generator | pick)
              ``inversion.csv``, ``inversion_1se.csv`` (a rerun adds only missing data sets);
              ``--model-recovery-true`` / ``--model-recovery-population`` simulate chosen models at stated
              group-level values, on the worlds and seeds of a whole run with the same
              ``--model-recovery-datasets`` (how strong must a strategy be to be recovered?);
              ``--model-recovery-participants N`` simulates data sets of N participants (how many would it take?)

Run ``python analyses/nexiom_fit.py --help``. ``--data FOLDER`` fits any folder in the documented schema
(``participants.csv`` + ``tests.csv``); the shipped Nexiom data by default. ``--smoke`` runs in seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from causalplay.models.choice import MAIN_MODELS, build_features, get_model  # noqa: E402

import causalplay  # noqa: E402
from causalplay.bench.executors import make_executor, wait_result  # noqa: E402
from causalplay.data import TrialData, load_nexiom, load_trials  # noqa: E402
from causalplay.fitting import (  # noqa: E402
    NUTSOptions,
    Score,
    SVIOptions,
    compare,
    fit_and_score,
    load_fit,
    paired_difference,
    simulate,
)

# every registered choice model, simplest first (the one-SE rule of model recovery breaks ties in this order)
ALL_MODELS = MAIN_MODELS + ("size", "sweep", "size_sweep", "eig_plus_sweep", "eig_sweep_single")
STAGES = ("prior", "compare", "crossval", "nuts", "nuts_all", "ppc", "recovery", "models")


@dataclass
class Config:
    name: str = "nexiom_fit"
    data: str | None = None  # folder in the schema; None: the shipped Nexiom data
    n_objects: int | None = None
    models: tuple[str, ...] = ALL_MODELS
    # the best model of the cross-validated comparison (docs/human-data.md), with the two parameters the design
    # cannot recover per participant shared; it needs 1000 draws per chain for R-hat <= 1.01
    main_model: str = "eig_sweep_single+shared(gamma,stop_a)"
    judgement: str = "softmax"
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
    nuts_dense_mass: bool = False  # adapt a dense mass matrix (correlated posteriors; costs more per step)
    # shared by everybody in the nuts_all stage where a model has them: the design cannot recover them per
    # participant (docs/human-data.md), and their hierarchical funnels are what NUTS mixes poorly in
    nuts_shared: tuple[str, ...] = ("gamma", "stop_a")
    # nuts_all refits a model that did not converge at each of these target acceptances in turn (smaller steps
    # remove the last divergences; a fresh run also settles a borderline R-hat): docs/human-data.md measured
    # 7 of 11 models converging at 0.9, 2 more at 0.95, the last 2 at 0.99
    nuts_retry_target_accept: tuple[float, ...] = (0.95, 0.99)
    ppc_replicas: int = 40
    recovery_datasets: int = 3
    recovery_method: str = "svi"
    # every choice model, so the confusion matrix covers all of them (docs/human-data.md "Model recovery")
    model_recovery_models: tuple[str, ...] = ALL_MODELS
    model_recovery_datasets: int = 2
    # 1: score on one held-out quarter of each simulated data set (~20 participants); K > 1: K-fold CV, every
    # simulated participant held out once (K times the fits, paired SEs about half as wide)
    model_recovery_folds: int = 1
    # the models that generate data sets (None: all of model_recovery_models); each data set is fitted by all
    model_recovery_true: tuple[str, ...] | None = None
    # group-level values replacing the people-fitted ones of a generating model, as raw sites of its fit (e.g.
    # {"positive": {"beta_mu": 0.0}}: median beta exp(0) = 1): how strong must a strategy be for this design to
    # recover it? (docs/human-data.md "Model recovery")
    model_recovery_population: dict = field(default_factory=dict)
    # simulated participants per model-recovery data set (None: as many as the people), their worlds resampled
    # from the people's: how many participants would this design need to tell two models apart?
    model_recovery_participants: int | None = None
    # processes fitting the model-recovery stage's models at once (1: in this process); each fit is seeded, so
    # the table does not depend on it beyond floating-point summation order
    workers: int = 1
    seed: int = 0
    out_root: str = "runs"
    stages: tuple[str, ...] = STAGES
    fit: str | None = None  # saved NUTS InferenceData (idata.nc) to use instead of the nuts stage
    extra: dict = field(default_factory=dict)


SMOKE = Config(name="smoke", models=("random", "eig_sweep"), max_participants=12, svi_steps=30, svi_draws=30,
               score_draws=30, nuts_chains=2, nuts_warmup=10, nuts_draws=10, ppc_replicas=2, recovery_datasets=1,
               model_recovery_models=("random", "eig_sweep"), model_recovery_datasets=1, folds=2,
               nuts_retry_target_accept=(0.95,))


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=2, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))


def load_data(cfg: Config) -> TrialData:
    data = load_nexiom() if cfg.data is None else load_trials(cfg.data, n_objects=cfg.n_objects)
    if cfg.max_participants is not None:
        data = data.subset(data.ids[: cfg.max_participants])
    build_features(data)  # fails early, naming the participant, for data the models cannot take
    return data


def _svi(cfg: Config) -> SVIOptions:
    return SVIOptions(steps=cfg.svi_steps, draws=cfg.svi_draws)


def _nuts(cfg: Config) -> NUTSOptions:
    return NUTSOptions(chains=cfg.nuts_chains, warmup=cfg.nuts_warmup, draws=cfg.nuts_draws,
                       target_accept=cfg.nuts_target_accept, dense_mass=cfg.nuts_dense_mass)


# ---- statistics of a data set (humans or simulated) ---------------------------------------------------------
def eig_top_share(data: TrialData, rho: float) -> float:
    """Share of tests whose set has the highest EIG (ties count) under the learner with rule prior logit ``rho``."""
    feats = build_features(data)
    cm = get_model("eig_softmax")
    with torch.no_grad():
        log_w = cm.posterior(feats, feats.ll, torch.full((feats.n_decisions,), rho, dtype=torch.float64))
        eig = cm.eig(feats, log_w)
    tests = feats.choice < feats.space.n_sets
    chosen = eig[tests].gather(-1, feats.choice[tests][:, None])
    return float(((eig[tests] > chosen + 1e-9).sum(-1) == 0).double().mean())


def stats(data: TrialData, rho: float, max_test: int = 10) -> dict:
    """The PPC statistics of one data set."""
    t = data.tests
    first = t[t["test"] == 1]
    size = t.assign(size=t["objects_on"].map(len)).groupby("test")["size"].mean()
    p = data.participants.copy()
    # from the required columns (blickets_correct/rule_correct are optional in the schema)
    p["blickets_correct"] = [tuple(a) == tuple(b) for a, b in zip(p["judged_blickets"], p["true_blickets"],
                                                                   strict=True)]
    p["rule_correct"] = p["rule_choice"] == p["rule"]
    out = {"first_has_0": float(first["objects_on"].map(lambda s: 0 in s).mean()),
           "first_single": float(first["objects_on"].map(len).eq(1).mean()),
           "first_pair": float(first["objects_on"].map(len).eq(2).mean()),
           "mean_tests": float(p["n_tests"].mean()), "median_tests": float(p["n_tests"].median()),
           "top_eig_share": eig_top_share(data, rho)}
    for k in range(1, max_test + 1):
        out[f"size_t{k}"] = float(size.get(k, np.nan))
    for n in range(1, 16):
        out[f"tests_eq_{n}"] = float((p["n_tests"] == n).mean())
    for rule in ("disjunctive", "conjunctive"):
        g = p[p["rule"] == rule]
        out[f"blickets_correct_{rule}"] = float(g["blickets_correct"].mean()) if len(g) else np.nan
        out[f"rule_correct_{rule}"] = float(g["rule_correct"].mean()) if len(g) else np.nan
    return out


def _interval(sims: pd.DataFrame, col: str) -> tuple[float, float, float]:
    v = sims[col].dropna().to_numpy()
    return (float(np.mean(v)), float(np.quantile(v, 0.05)), float(np.quantile(v, 0.95))) if len(v) else (np.nan,) * 3


# ---- stages ---------------------------------------------------------------------------------------------------
def stage_prior(cfg: Config, data: TrialData, out: Path, res: dict) -> None:
    """Prior predictive: group parameters and participants from the priors, simulated on the people's worlds."""
    cm = get_model(cfg.main_model, cfg.judgement)
    from causalplay.fitting import Parameterisation

    par = Parameterisation(cm, True, len(data))
    gen = torch.Generator().manual_seed(cfg.seed)
    worlds = list(zip(data.participants["rule"], data.participants["true_blickets"], strict=True))
    rows = []
    n_sets = 5 if len(data) > 20 else 1
    raw = par.prior_draws(n_sets, gen)
    theta = par.theta(raw)
    for i in range(n_sets):
        sim = simulate(cm, {k: v[i] for k, v in theta.items()}, worlds, data.n_objects, seed=cfg.seed + i)
        rows.append(stats(sim, float(theta["rho"][i, 0])))
    sims = pd.DataFrame(rows)
    sims.to_csv(out / "prior_predictive.csv", index=False)
    human = stats(data, 0.0)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    k = np.arange(1, 16)
    axes[0].plot(k, [human[f"tests_eq_{n}"] for n in k], "o-", label="people")
    for _, r in sims.iterrows():
        axes[0].plot(k, [r[f"tests_eq_{n}"] for n in k], color="grey", alpha=0.5)
    axes[0].set_xlabel("number of tests")
    axes[0].set_ylabel("share of participants")
    axes[0].legend(["people", "prior predictive draws"])
    kk = np.arange(1, 11)
    axes[1].plot(kk, [human[f"size_t{n}"] for n in kk], "o-")
    for _, r in sims.iterrows():
        axes[1].plot(kk, [r[f"size_t{n}"] for n in kk], color="grey", alpha=0.5)
    axes[1].set_xlabel("test index")
    axes[1].set_ylabel("mean objects on the machine")
    _save(fig, out / "prior_predictive.png")
    res["prior_predictive"] = {"datasets": n_sets, "mean_tests": sims["mean_tests"].tolist(),
                               "human_mean_tests": human["mean_tests"]}


def stage_compare(cfg: Config, data: TrialData, out: Path, res: dict) -> None:
    fit_data, held = data.split(cfg.test_fraction, seed=cfg.split_seed)
    res.update({"n_fit": len(fit_data), "n_heldout": len(held), "heldout_choices": held.n_choices})
    fits = {}
    for m in cfg.models:
        t0 = time.perf_counter()
        fits[m] = causalplay.fit(fit_data, m, method="svi", svi=_svi(cfg), judgement=cfg.judgement, seed=cfg.seed)
        print(f"[compare] {m}: SVI {time.perf_counter() - t0:.0f} s wall, {fits[m].cpu_seconds:.0f} s CPU",
              flush=True)
    table = compare(fits, held, n_draws=cfg.score_draws, seed=cfg.seed)
    table.to_csv(out / "compare.csv")
    scores = table.attrs["scores"]
    res["compare"] = table.drop(columns=["method"]).reset_index().to_dict("records")
    # the best choice model vs the previous best (eig_sweep) and the runner-up, paired
    best = table.index[0]
    res["best_model"] = best
    res["paired"] = {f"{a} - {b}": dict(zip(("nats_per_choice", "se"), paired_difference(scores[a], scores[b]),
                                            strict=True))
                     for a in table.index for b in table.index if a != b and (a == best or b == best)}
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    ax.errorbar(table["heldout_nats_per_choice"], np.arange(len(table)), xerr=table["heldout_diff_se"], fmt="o",
                capsize=3)
    ax.set_yticks(np.arange(len(table)), table.index)
    ax.axvline(math.log(17), color="k", ls="--", lw=1, label="uniform (log 17)")
    ax.set_xlabel("held-out nats per choice (error bar: paired SE of the difference to the best)")
    ax.invert_yaxis()
    ax.legend(fontsize=8)
    _save(fig, out / "heldout.png")
    # judgement models, with the main choice model: held-out judgement log-likelihood, blickets and rule apart
    rows = []
    for jm in ("sample", "softmax"):
        f = fits[cfg.main_model] if jm == cfg.judgement and cfg.main_model in fits else causalplay.fit(
            fit_data, cfg.main_model, method="svi", svi=_svi(cfg), judgement=jm, seed=cfg.seed)
        s = f.score(held, n_draws=cfg.score_draws, seed=cfg.seed)
        j = s.judgements.dropna()
        rows.append({"judgement": jm, "n": len(j), "joint": j["joint"].sum(), "blickets": j["blickets"].sum(),
                     "rule": j["rule"].sum(), "choice_nats_per_choice": s.nats_per_choice,
                     "_per": j})
    jt = pd.DataFrame(rows)
    a, b = jt["_per"][0], jt["_per"][1]
    d = (b["joint"] - a["joint"]).to_numpy()
    jt.drop(columns=["_per"]).to_csv(out / "judgements.csv", index=False)
    res["judgements"] = jt.drop(columns=["_per"]).to_dict("records")
    res["judgements_softmax_minus_sample"] = {"nats": float(d.sum()),
                                             "se": float(math.sqrt(len(d)) * d.std(ddof=1)) if len(d) > 1 else None}


def stage_crossval(cfg: Config, data: TrialData, out: Path, res: dict) -> None:
    """Participant-level k-fold CV: each model fitted (SVI) k times, each participant scored once, held out.

    One held-out quarter leaves ~20 participants and paired SEs too wide to separate close models; here every
    participant is a held-out unit, so the paired SE is over all of them.
    """
    folds = data.folds(cfg.folds, seed=cfg.split_seed)
    parts: dict[str, list[Score]] = {m: [] for m in cfg.models}
    rows = []
    for f, (fit_data, held) in enumerate(folds):
        for m in cfg.models:
            t0 = time.perf_counter()
            sc = fit_and_score(fit_data, held, m, method="svi", svi=_svi(cfg), judgement=cfg.judgement, seed=cfg.seed,
                               n_draws=cfg.score_draws, score_seed=cfg.seed)
            parts[m].append(sc)
            j = sc.judgements if sc.judgements is not None else pd.DataFrame(index=sc.per_participant.index)
            rows += [{"fold": f, "model": m, "participant": pid, "log_p": lp,
                      "n_choices": held.subset([pid]).n_choices,
                      **{f"judgement_{c}": j.loc[pid, c] for c in j.columns}}
                     for pid, lp in sc.per_participant.items()]
            pd.DataFrame(rows).to_csv(out / "crossval_participants.csv", index=False)
            print(f"[crossval] fold {f + 1}/{len(folds)} {m}: {sc.nats_per_choice:.4f} nats/choice held out "
                  f"({len(held)} participants, {time.perf_counter() - t0:.0f} s)", flush=True)
    scores = {m: Score.concat(v) for m, v in parts.items()}
    best = min(scores, key=lambda m: scores[m].nats_per_choice)
    table = []
    for m, sc in sorted(scores.items(), key=lambda kv: kv[1].nats_per_choice):
        d, se = paired_difference(sc, scores[best]) if m != best else (0.0, 0.0)
        jn = sc.judgement_nats()
        table.append({"model": m, "nats_per_choice": sc.nats_per_choice, "diff_vs_best": d, "diff_se": se,
                      "n_participants": len(sc.per_participant), "n_choices": sc.n_choices,
                      **{f"judgement_{k}": v for k, v in jn.items()}})
    t = pd.DataFrame(table)
    t.to_csv(out / "crossval.csv", index=False)
    res["crossval"] = {"folds": cfg.folds, "best": best, "table": t.to_dict("records"),
                       "paired": {f"{a} - {b}": dict(zip(("nats_per_choice", "se"),
                                                         paired_difference(scores[a], scores[b]), strict=True))
                                  for a in scores for b in scores if a != b and a == best}}
    print(t.to_string(index=False), flush=True)


def stage_nuts(cfg: Config, data: TrialData, out: Path, res: dict):
    import arviz as az

    t0 = time.perf_counter()
    f = causalplay.fit(data, cfg.main_model, judgement=cfg.judgement, nuts=_nuts(cfg), seed=cfg.seed)
    diag = f.diagnostics(warn=False)
    diag.update({"wall_seconds_total": round(time.perf_counter() - t0, 1), "load_average_after": os.getloadavg(),
                 "cpu_count": os.cpu_count(), "step_size": f.extra.get("step_size")})
    _write_json(out / "nuts_diagnostics.json", diag)
    f.summary().to_csv(out / "nuts_summary.csv")
    f.participant_table(0.9).to_csv(out / "participants.csv", index=False)
    f.idata.to_netcdf(out / "idata.nc")
    res["nuts"] = diag
    group = [v for v in f.idata.posterior.data_vars if "participant" not in f.idata.posterior[v].dims
             and not v.endswith("_raw")]
    az.plot_rank(f.idata, var_names=group[:12])
    _save(plt.gcf(), out / "rank.png")
    az.plot_forest(f.idata, var_names=[p.name for p in f.model.all_params() if p.level == "participant"][:2],
                   combined=True, hdi_prob=0.9, figsize=(7, 12))
    _save(plt.gcf(), out / "forest.png")
    loo = az.loo(f.idata, var_name="choice", pointwise=True)
    az.plot_khat(loo)
    _save(plt.gcf(), out / "pareto_k.png")
    res["nuts_loo"] = {"elpd_loo": float(loo.elpd_loo), "se": float(loo.se),
                       "pareto_k_gt_0.7": int((np.asarray(loo.pareto_k) > 0.7).sum())}
    return f


def _with_shared(name: str, shared: tuple[str, ...]) -> str:
    """``name`` with those of ``shared`` that are participant-level parameters of it made shared."""
    cm = get_model(name)
    have = [p for p in shared if p in {q.name for q in cm.all_params() if q.level == "participant"}]
    return cm.with_shared(have).name if have else cm.name


def stage_nuts_all(cfg: Config, data: TrialData, out: Path, res: dict) -> None:
    """NUTS of every model on all participants: does each one converge, and what does it cost?"""
    import arviz as az

    path = out / "nuts_all.csv"
    rows = pd.read_csv(path).to_dict("records") if path.exists() else []
    ladder = (cfg.nuts_target_accept,) + tuple(a for a in cfg.nuts_retry_target_accept if a > cfg.nuts_target_accept)
    for m in cfg.models:
        name = _with_shared(m, cfg.nuts_shared)
        for accept in ladder:
            tried = [r for r in rows if r["model"] == name and r.get("target_accept", cfg.nuts_target_accept) == accept]
            if any(r["ok"] for r in rows if r["model"] == name):
                break  # converged (now or in an earlier, resumed run): no more attempts
            if tried:
                print(f"[nuts_all] {name} at target acceptance {accept}: already in {path}, skipped", flush=True)
                continue
            t0 = time.perf_counter()
            f = causalplay.fit(data, name, judgement=cfg.judgement, nuts=replace(_nuts(cfg), target_accept=accept),
                               seed=cfg.seed)  # warns if not ok
            d = f.diagnostics(warn=False)
            loo = az.loo(f.idata, var_name="choice", pointwise=True)
            rows.append({"model": name, "ok": d["ok"], "rhat_max": d["rhat_max"],
                         "rhat_worst_site": d["rhat_worst_site"], "ess_bulk_min": d["ess_bulk_min"],
                         "ess_bulk_worst_site": d["ess_bulk_worst_site"], "ess_tail_min": d["ess_tail_min"],
                         "divergences": d["divergences"], "elpd_loo": float(loo.elpd_loo), "se_loo": float(loo.se),
                         "pareto_k_gt_0.7": int((np.asarray(loo.pareto_k) > 0.7).sum()),
                         "chains": d["chains"], "draws": d["draws"], "target_accept": accept,
                         "dense_mass": cfg.nuts_dense_mass, "wall_seconds": round(time.perf_counter() - t0, 1),
                         "cpu_seconds": d["cpu_seconds"], "load_average_after": round(os.getloadavg()[0], 2)})
            pd.DataFrame(rows).to_csv(path, index=False)
            print(f"[nuts_all] {name} at target acceptance {accept}: R-hat {d['rhat_max']:.4f} "
                  f"({d['rhat_worst_site']}), bulk ESS {d['ess_bulk_min']:.0f}, {d['divergences']} divergences, "
                  f"{d['cpu_seconds']:.0f} s CPU", flush=True)
    t = pd.DataFrame(rows)
    final = t.groupby("model", sort=False)["ok"].any() if len(t) else pd.Series(dtype=bool)
    res["nuts_all"] = {"all_ok": bool(final.all()) if len(t) else None, "converged": final.to_dict(),
                       "table": t.to_dict("records")}


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

    def panel(keys, labels, xlabel, fname, ylabel):
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

    panel(["first_has_0", "first_single", "first_pair"], ["contains object 0", "one object", "two objects"],
          "first test", "ppc_first_test.png", "share of participants")
    panel([f"size_t{k}" for k in range(1, 11)], [str(k) for k in range(1, 11)], "test index", "ppc_set_size.png",
          "mean objects on the machine")
    panel([f"tests_eq_{n}" for n in range(1, 16)], [str(n) for n in range(1, 16)], "number of tests",
          "ppc_n_tests.png", "share of participants")
    panel(["blickets_correct_disjunctive", "blickets_correct_conjunctive", "rule_correct_disjunctive",
           "rule_correct_conjunctive"], ["blickets, disj.", "blickets, conj.", "rule, disj.", "rule, conj."],
          "judgement accuracy by true rule", "ppc_accuracy.png", "proportion correct")
    panel(["top_eig_share"], [f"top-EIG set (rho = {rho:.2f})"], "", "ppc_top_eig.png", "share of tests")


def _population(f) -> dict:
    """Posterior-mean group-level values of a fit: site -> float."""
    return {k: float(v.mean()) for k, v in f.flat_raw().items() if v.dim() == 1}


def _simulate_population(cm, pop: dict, worlds, n_objects: int, seed: int):
    """Participants drawn from the population ``pop`` (raw group-level values); returns (data, true theta)."""
    from causalplay.fitting import Parameterisation

    par = Parameterisation(cm, True, len(worlds))
    gen = torch.Generator().manual_seed(seed)
    group = {k: torch.tensor([v], dtype=torch.float64) for k, v in pop.items()}
    raw = par.new_participants(group, 1, len(worlds), gen)
    theta = {k: v[0] for k, v in par.theta(raw).items()}
    return simulate(cm, theta, worlds, n_objects, seed=seed + 1), theta


def _worlds(data: TrialData, n: int, rng) -> list:
    idx = rng.integers(len(data), size=n)
    p = data.participants
    return [(p["rule"].iloc[i], p["true_blickets"].iloc[i]) for i in idx]


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
    # a data set counts as done only when both tables have it (they are written together, after its fit)
    done = set(tabs[0]["dataset"]) & set(tabs[1]["dataset"])
    return tuple([r for r in t.to_dict("records") if r["dataset"] in done and r["dataset"] < datasets]
                 for t in tabs)


def stage_recovery(cfg: Config, data: TrialData, out: Path, res: dict, f) -> None:
    """Simulate data sets of the size of the people's from the fitted population; refit; compare."""
    cm = f.model
    pop = _population(f)
    rng = np.random.default_rng(cfg.seed)
    per_rows, group_rows = _resumable_recovery(out, cfg.recovery_method, cfg.recovery_datasets)
    done = {int(r["dataset"]) for r in group_rows}
    for k in range(cfg.recovery_datasets):
        worlds = _worlds(data, len(data), rng)  # drawn even when skipped: a resumed run simulates the same data
        if k in done:
            print(f"[recovery] data set {k + 1}/{cfg.recovery_datasets}: already in {out}, skipped", flush=True)
            continue
        sim, truth = _simulate_population(cm, pop, worlds, data.n_objects, cfg.seed + 10 * k)
        g = (causalplay.fit(sim, cm, method="svi", svi=_svi(cfg), seed=cfg.seed + k) if cfg.recovery_method == "svi"
             else causalplay.fit(sim, cm, nuts=_nuts(cfg), seed=cfg.seed + k, warn=False))
        th = g.theta()
        for p in cm.all_params():
            v = th[p.name].numpy()
            lo, hi = np.quantile(v, [0.05, 0.95], axis=0)
            tr = truth[p.name].numpy()
            if p.level == "participant":
                r = float(np.corrcoef(tr, v.mean(0))[0, 1])
                per_rows.append({"dataset": k, "method": cfg.recovery_method, "parameter": p.name, "r": r,
                                 "coverage90": float(((tr >= lo) & (tr <= hi)).mean()),
                                 "true_sd": float(tr.std()), "est_sd_of_means": float(v.mean(0).std())})
            else:
                group_rows.append({"dataset": k, "method": cfg.recovery_method, "parameter": p.name,
                                   "truth": float(tr[0]),
                                   "mean": float(v[:, 0].mean()), "q5": float(lo[0]), "q95": float(hi[0]),
                                   "covered": bool(lo[0] <= tr[0] <= hi[0])})
        for site in [s for s in pop if s.endswith("_mu") or s.endswith("_sigma")]:
            v = g.flat_raw()[site].numpy()
            lo, hi = np.quantile(v, [0.05, 0.95])
            group_rows.append({"dataset": k, "method": cfg.recovery_method, "parameter": site,
                               "truth": pop[site], "mean": float(v.mean()),
                               "q5": float(lo), "q95": float(hi), "covered": bool(lo <= pop[site] <= hi)})
        pd.DataFrame(per_rows).to_csv(out / "recovery_participant.csv", index=False)
        pd.DataFrame(group_rows).to_csv(out / "recovery_group.csv", index=False)
        print(f"[recovery] data set {k + 1}/{cfg.recovery_datasets} done", flush=True)
    pr = pd.DataFrame(per_rows).groupby("parameter")[["r", "coverage90"]].agg(["mean", "min", "max"])
    gr = pd.DataFrame(group_rows).groupby("parameter")["covered"].mean()
    res["recovery"] = {"method": cfg.recovery_method, "datasets": cfg.recovery_datasets,
                       "participant": {p: {"r_mean": float(pr.loc[p, ("r", "mean")]),
                                           "r_min": float(pr.loc[p, ("r", "min")]),
                                           "r_max": float(pr.loc[p, ("r", "max")]),
                                           "coverage90_mean": float(pr.loc[p, ("coverage90", "mean")])}
                                       for p in pr.index},
                       "group_coverage90": gr.to_dict(), "population": pop}


def _pick_one_se(scores: dict, order: tuple[str, ...]) -> str:
    """The simplest model (fewest set-choice parameters) whose held-out score is within one paired SE of the best
    one's (Breiman's one-standard-error rule): nested models tie on data from the simpler one, and the argmin alone
    then picks the larger one about half the time. Among equally simple models the better held-out score wins
    (then ``order``)."""
    best = min(scores, key=lambda m: scores[m].nats_per_choice)
    se = {m: paired_difference(s, scores[best])[1] for m, s in scores.items() if m != best}
    return _one_se_pick({m: s.nats_per_choice for m, s in scores.items()}, se, order)


def _one_se_pick(nats: dict[str, float], se_vs_best: dict[str, float], order: tuple[str, ...]) -> str:
    """:func:`_pick_one_se` from held-out nats per choice and each model's paired SE against the best (the columns
    of ``model_recovery.csv``), so that the picks of a saved table can be re-derived."""
    best = min(nats, key=nats.get)
    close = [m for m in nats if m == best or nats[m] - nats[best] <= se_vs_best[m]]
    return min(close, key=lambda m: (len(get_model(m).params), nats[m], order.index(m)))


def _row_picks(row: dict, models) -> dict[str, str]:
    """The argmin and one-SE picks of a ``model_recovery.csv`` row from its ``nats_<model>`` and
    ``se_vs_best_<model>`` columns (the best model has no SE column, or NaN in a table)."""
    nats = {m: row[f"nats_{m}"] for m in models}
    se = {m: row.get(f"se_vs_best_{m}", np.nan) for m in models}
    return {"picked": min(models, key=nats.get), "picked_1se": _one_se_pick(nats, se, models)}


def _heldout_scores(cfg: Config, data: TrialData, models, folds: int, split_seed: int) -> dict[str, Score]:
    """Every model's held-out score on ``data``: one stratified ``test_fraction`` split when ``folds`` is 1, else
    participant-level ``folds``-fold cross-validation (every participant scored once, held out)."""
    return _heldout_job(cfg, data, models, folds, split_seed)()


def _heldout_job(cfg: Config, data: TrialData, models, folds: int, split_seed: int, executor=None):
    """:func:`_heldout_scores` as a function to call later: with an ``executor`` (``causalplay.bench``) its fits
    are submitted now and the call waits for them; without one, the call fits them here."""
    pairs = [data.split(cfg.test_fraction, seed=split_seed)] if folds == 1 else data.folds(folds, seed=split_seed)
    kw = {"method": "svi", "svi": _svi(cfg), "judgement": cfg.judgement, "seed": cfg.seed,
          "n_draws": cfg.score_draws, "score_seed": split_seed}

    def combine(parts: dict[str, list[Score]]) -> dict[str, Score]:
        return {m: v[0] if len(v) == 1 else Score.concat(v) for m, v in parts.items()}

    if executor is None:
        return lambda: combine({m: [fit_and_score(fit_d, held, m, **kw) for fit_d, held in pairs] for m in models})
    futures = {m: [executor.submit(fit_and_score, fit_d, held, m, **kw) for fit_d, held in pairs] for m in models}
    return lambda: combine({m: [wait_result(f) for f in fs] for m, fs in futures.items()})


def _population_label(values: dict[str, float] | None) -> str:
    """How a generating population was set, as written in ``model_recovery.csv``: ``"fitted"`` (to the people)
    or the replaced group-level values, e.g. ``"beta_mu=0"``."""
    return ";".join(f"{k}={_exact(v)}" for k, v in sorted(values.items())) if values else "fitted"


def _exact(v: float) -> str:
    """``v`` as short as it reads (``0``, ``-0.693147``) but never rounded: two values that differ in any digit
    get different labels, so a resumed run cannot mistake one population for another."""
    short = f"{v:g}"
    return short if float(short) == v else repr(v)


def _override_populations(pops: dict[str, dict], over: dict[str, dict]) -> dict[str, dict]:
    """``pops`` (model -> group-level site -> value) with the values of ``over`` in place of the fitted ones; an
    error naming a model that generates no data set, or a site the model's fit does not have."""
    out = {m: dict(p) for m, p in pops.items()}
    for m, values in over.items():
        if m not in out:
            raise ValueError(f"--model-recovery-population sets {m!r}, which generates no data set here "
                             f"(generating models: {sorted(out)})")
        unknown = sorted(set(values) - set(out[m]))
        if unknown:
            raise ValueError(f"--model-recovery-population: {m} has no group-level site(s) {unknown}; "
                             f"its sites are {sorted(out[m])}")
        out[m].update({k: float(v) for k, v in values.items()})
    return out


def _participants_problem(n, folds: int, test_fraction: float) -> str | None:
    """Why ``n`` simulated participants cannot be scored with ``folds`` (None if they can): every held-out part
    (the ``test_fraction`` split when ``folds`` is 1) needs at least two participants."""
    need = 2 * folds if folds > 1 else math.ceil(2 / test_fraction)
    if isinstance(n, bool) or not isinstance(n, int) or n < need:
        return (f"--model-recovery-participants must be an integer >= {need} with --model-recovery-folds {folds} "
                f"(two participants in every held-out part), got {n!r}")
    return None


def _resumable_rows(path: Path, models, folds: int, datasets: int, labels: dict[str, str], participants: int,
                    n_people: int) -> list[dict]:
    """Rows of an earlier (interrupted) model-recovery run in ``path`` to keep; an error if they were scored
    differently (other models or another ``--model-recovery-folds``) or simulated from another population of a
    model generating data now (``labels``: model -> :func:`_population_label`) or with another number of
    participants, which would mix two experiments. Tables from before ``participants`` was a column simulated
    as many participants as the people (``n_people``)."""
    if not path.exists():
        return []
    old = pd.read_csv(path, float_precision="round_trip")  # rewritten later: keep every digit
    old["population"] = old["population"].fillna("fitted") if "population" in old else "fitted"
    old["participants"] = old["participants"].fillna(n_people).astype(int) if "participants" in old else n_people
    was = sorted(set(old["participants"]) - {participants})
    if was:
        raise ValueError(f"{path} has data sets of {[int(n) for n in was]} simulated participants, not "
                         f"--model-recovery-participants {participants}; use another --name")
    for m, label in labels.items():
        was = sorted(set(old.loc[old["true"] == m, "population"]) - {label})
        if was:
            raise ValueError(f"{path} has {m} data sets simulated from population {was}, not {label!r}; "
                             f"use another --name")
    scored = sorted(c[len("nats_"):] for c in old.columns if c.startswith("nats_"))
    if scored != sorted(models):
        raise ValueError(f"{path} scores the models {scored}, not {sorted(models)}; use another --name")
    old_folds = sorted(set(old["folds"])) if "folds" in old else [1]
    if old_folds != [folds]:
        raise ValueError(f"{path} was scored with --model-recovery-folds {old_folds}, not {folds}; "
                         f"use another --name")
    return old[old["dataset"] < datasets].to_dict("records")


def stage_models(cfg: Config, data: TrialData, out: Path, res: dict) -> None:
    """Model recovery: fit each model to the people (SVI) for a population, simulate data sets from it, fit every
    model to a fitting split of each, pick the best by held-out score (argmin, and by the one-SE rule)."""
    models = cfg.model_recovery_models
    true_models = cfg.model_recovery_true or models
    if not set(true_models) <= set(models):
        raise ValueError(f"--model-recovery-true {sorted(set(true_models) - set(models))} are not among the "
                         f"fitted --model-recovery-models {list(models)}")
    n_sim = len(data) if cfg.model_recovery_participants is None else cfg.model_recovery_participants
    problem = _participants_problem(n_sim, cfg.model_recovery_folds, cfg.test_fraction)
    if problem:
        raise ValueError(problem)
    rng = np.random.default_rng(cfg.seed + 1)
    path = out / "model_recovery.csv"
    labels = {m: _population_label(cfg.model_recovery_population.get(m)) for m in true_models}
    rows = _resumable_rows(path, models, cfg.model_recovery_folds, cfg.model_recovery_datasets, labels, n_sim,
                           len(data))
    done = {(r["true"], int(r["dataset"])) for r in rows}
    pops = {m: _population(causalplay.fit(data, m, method="svi", svi=_svi(cfg), judgement=cfg.judgement,
                                          seed=cfg.seed)) for m in true_models}
    res["model_recovery_populations"] = {"fitted": pops}
    pops = _override_populations(pops, cfg.model_recovery_population)
    res["model_recovery_populations"]["simulated"] = pops
    executor = make_executor("process", cfg.workers) if cfg.workers > 1 else None
    try:
        _recover_models(cfg, data, models, pops, labels, n_sim, rng, rows, done, path, executor)
    except BaseException:
        if executor is not None:
            executor.abort()  # Ctrl-C or a failed fit: stop the running fits now; the rows written are kept
        raise
    finally:
        if executor is not None:
            executor.shutdown(wait=True)
    # picks follow from the stored scores, so a resumed table is tabulated by the current rule
    df = pd.DataFrame([{**r, **_row_picks(r, models)} for r in rows])
    df.to_csv(path, index=False)
    res["model_recovery"] = {"datasets_per_model": cfg.model_recovery_datasets, "folds": cfg.model_recovery_folds,
                             "participants": n_sim}
    for col, name in (("picked", "confusion.csv"), ("picked_1se", "confusion_1se.csv")):
        generating = [m for m in models if m in set(df["true"])]
        conf = pd.crosstab(df["true"], df[col]).reindex(index=generating, columns=list(models), fill_value=0)
        conf.to_csv(out / name)
        inv = _inversion(conf)
        inv.to_csv(out / name.replace("confusion", "inversion"))
        res["model_recovery"][col] = {"confusion": conf.to_dict("index"),
                                      "recovered_share": {m: float(conf.loc[m, m] / conf.loc[m].sum())
                                                          for m in generating},
                                      "inversion": inv.to_dict("index")}


def _inversion(conf: pd.DataFrame) -> pd.DataFrame:
    """P(generating model | picked model) from a confusion table of counts (rows: generating model, columns:
    picked), each generating model equally likely a priori (the inversion matrix of Wilson & Collins, 2019): what a
    pick on real data says about its generator. Rows are normalised first, so a model simulated more often does
    not weigh more; rows of the result are the models picked at least once, columns the generating models."""
    picked_given_true = conf.div(conf.sum(axis=1), axis=0)
    picked_given_true = picked_given_true.loc[:, picked_given_true.sum(axis=0) > 0]
    return (picked_given_true / picked_given_true.sum(axis=0)).T


def _recover_models(cfg: Config, data: TrialData, models, pops: dict, labels: dict, n_sim: int, rng, rows: list,
                    done: set, path: Path, executor) -> None:
    """The model-recovery data sets of the generating models (the keys of ``pops``), ``n_sim`` participants each,
    each row appended to ``rows`` and written to ``path`` once scored. With an executor every data set's fits are
    submitted first (so all workers stay busy), then collected in order."""
    jobs = []
    for true in models:
        cm = get_model(true, cfg.judgement)
        for k in range(cfg.model_recovery_datasets):
            # drawn even when skipped (resumed, or not a generating model now), so every data set has the worlds
            # and seed it has in a whole run with the same --model-recovery-datasets (one sequence over models and
            # data sets: another count draws other worlds): runs with other population values are paired
            worlds = _worlds(data, n_sim, rng)
            if true not in pops:
                continue
            if (true, k) in done:
                print(f"[models] {true} #{k}: already in {path}, skipped", flush=True)
                continue
            sim, _ = _simulate_population(cm, pops[true], worlds, data.n_objects, cfg.seed + 100 * k + 7)
            jobs.append((true, k, _heldout_job(cfg, sim, models, cfg.model_recovery_folds, k, executor)))
    t0 = time.perf_counter()
    for i, (true, k, job) in enumerate(jobs):
        scores = job()
        best = min(scores, key=lambda m: scores[m].nats_per_choice)
        row = {"true": true, "dataset": k, "folds": cfg.model_recovery_folds, "population": labels[true],
               "participants": n_sim,
               **{f"nats_{m}": s.nats_per_choice for m, s in scores.items()},
               **{f"se_vs_best_{m}": paired_difference(s, scores[best])[1] for m, s in scores.items() if m != best}}
        rows.append({**row, **_row_picks(row, models)})
        pd.DataFrame(rows).to_csv(path, index=False)
        print(f"[models] {true} ({labels[true]}) #{k}: picked {rows[-1]['picked']} (one-SE rule: "
              f"{rows[-1]['picked_1se']}); {i + 1}/{len(jobs)} data sets, {time.perf_counter() - t0:.0f} s", flush=True)


def run(cfg: Config) -> dict:
    out = Path(cfg.out_root) / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(asdict(cfg), indent=2))
    data = load_data(cfg)
    res: dict = {"data": cfg.data or "shipped Nexiom", "n_participants": len(data), "n_choices": data.n_choices,
                 "uniform_nats_per_choice": math.log(data.n_objects and 2**data.n_objects + 1),
                 "cpu_count": os.cpu_count(), "torch": torch.__version__}
    unknown = [s for s in cfg.stages if s not in STAGES]
    if unknown:
        raise ValueError(f"unknown stage(s) {unknown}; stages are {list(STAGES)}")
    for m in cfg.models + (cfg.main_model,) + cfg.model_recovery_models:
        get_model(m)  # fails early, naming the model and what is available (modifiers such as +shared(...) too)

    def save():
        _write_json(out / "results.json", res)

    f = None
    for stage in STAGES:
        if stage not in cfg.stages:
            continue
        t0 = time.perf_counter()
        if stage == "prior":
            stage_prior(cfg, data, out, res)
        elif stage == "compare":
            stage_compare(cfg, data, out, res)
        elif stage == "crossval":
            stage_crossval(cfg, data, out, res)
        elif stage == "nuts_all":
            stage_nuts_all(cfg, data, out, res)
        elif stage in ("ppc", "recovery") and f is None and cfg.fit is not None:
            f = load_fit(cfg.fit, data, model=cfg.main_model, judgement=cfg.judgement)
        elif stage == "nuts" or (stage in ("ppc", "recovery") and f is None):
            f = stage_nuts(cfg, data, out, res)
        if stage == "ppc":
            stage_ppc(cfg, data, out, res, f)
        elif stage == "recovery":
            stage_recovery(cfg, data, out, res, f)
        elif stage == "models":
            stage_models(cfg, data, out, res)
        res.setdefault("stage_seconds", {})[stage] = round(time.perf_counter() - t0, 1)
        save()
    return res


def _model_names(text: str) -> tuple[str, ...]:
    """A comma-separated list of choice models; commas inside ``+shared(a,b)`` belong to the model name."""
    return tuple(m.strip() for m in re.split(r",(?![^()]*\))", text))


def parse_args(argv: list[str]) -> Config:
    ap = argparse.ArgumentParser(prog="nexiom_fit.py", description=__doc__.split("\n\n")[0],
                                 epilog="Stages: " + ", ".join(STAGES) + ". See docs/human-data.md.")
    ap.add_argument("--data", metavar="FOLDER", help="folder with participants.csv and tests.csv (default: the "
                    "shipped Nexiom data)")
    ap.add_argument("--n-objects", type=int, help="number of objects (default: largest index + 1)")
    ap.add_argument("--out", metavar="DIR", default="runs", help="results go to DIR/NAME (default: runs)")
    ap.add_argument("--name", help="run name (default: nexiom_fit, or smoke)")
    ap.add_argument("--smoke", action="store_true", help="tiny settings that run in seconds (checks the pipeline)")
    ap.add_argument("--stages", help="comma-separated subset of: " + ",".join(STAGES))
    ap.add_argument("--models", help="comma-separated choice models to compare (default: all registered)")
    ap.add_argument("--model-recovery-models", help="comma-separated models of the model-recovery stage (default: "
                    + ",".join(Config.model_recovery_models) + ")")
    ap.add_argument("--model-recovery-true", metavar="MODELS", help="comma-separated models that generate the "
                    "model-recovery data sets (default: all of --model-recovery-models, each of which is fitted)")
    ap.add_argument("--model-recovery-population", metavar="MODEL:SITE=VALUE,...", help="simulate MODEL with the "
                    "group-level SITE (a raw site of its fit, e.g. positive:beta_mu=0 for median beta 1) set to "
                    "VALUE instead of the value fitted to the people")
    ap.add_argument("--model-recovery-participants", type=int, metavar="N", help="simulated participants per "
                    "model-recovery data set, their worlds resampled from the people's (default: as many as the "
                    "people)")
    ap.add_argument("--main-model", help="model for NUTS, PPC and recovery (default: "
                    "eig_sweep_single+shared(gamma,stop_a)); modifiers as in get_model")
    ap.add_argument("--judgement", choices=("sample", "softmax"), help="judgement model (default: softmax)")
    ap.add_argument("--max-participants", type=int)
    for k in ("svi_steps", "nuts_chains", "nuts_warmup", "nuts_draws", "ppc_replicas", "recovery_datasets",
              "model_recovery_datasets", "model_recovery_folds", "workers", "seed", "split_seed", "folds"):
        ap.add_argument("--" + k.replace("_", "-"), type=int)
    ap.add_argument("--nuts-target-accept", type=float, metavar="P", help="NUTS target acceptance probability "
                    "(default 0.9; raise it, e.g. to 0.95, against divergences)")
    ap.add_argument("--nuts-dense-mass", action="store_true", default=None, help="NUTS adapts a dense mass "
                    "matrix (all posterior correlations) instead of a diagonal one")
    ap.add_argument("--nuts-retry-target-accept", metavar="P1,P2", help="nuts_all refits a model that did not "
                    "converge at each of these target acceptances in turn (default: 0.95,0.99; '' for none)")
    ap.add_argument("--nuts-shared", metavar="PARAMS", help="comma-separated parameters shared by everybody in the "
                    "nuts_all stage where a model has them (default: gamma,stop_a; '' for none)")
    ap.add_argument("--recovery-method", choices=("svi", "nuts"))
    ap.add_argument("--fit", metavar="IDATA", help="saved NUTS fit (idata.nc of the nuts stage) for ppc/recovery")
    a = ap.parse_args(argv)
    cfg = SMOKE if a.smoke else Config()
    over = {"data": a.data, "n_objects": a.n_objects, "out_root": a.out, "name": a.name,
            "main_model": a.main_model, "judgement": a.judgement, "max_participants": a.max_participants,
            "recovery_method": a.recovery_method, "fit": a.fit, "nuts_target_accept": a.nuts_target_accept,
            "nuts_dense_mass": a.nuts_dense_mass, "model_recovery_participants": a.model_recovery_participants}
    for k in ("svi_steps", "nuts_chains", "nuts_warmup", "nuts_draws", "ppc_replicas", "recovery_datasets",
              "model_recovery_datasets", "model_recovery_folds", "workers", "seed", "split_seed", "folds"):
        over[k] = getattr(a, k)
    if a.nuts_retry_target_accept is not None:
        over["nuts_retry_target_accept"] = tuple(float(p) for p in a.nuts_retry_target_accept.split(",") if p.strip())
    if a.nuts_shared is not None:
        over["nuts_shared"] = tuple(p.strip() for p in a.nuts_shared.split(",") if p.strip())
    if a.stages:
        over["stages"] = tuple(a.stages.split(","))
    for k in ("models", "model_recovery_models", "model_recovery_true"):
        if getattr(a, k):
            over[k] = _model_names(getattr(a, k))
    if a.model_recovery_population:
        pop: dict[str, dict[str, float]] = {}
        for item in a.model_recovery_population.split(","):
            m = re.fullmatch(r"\s*([^:=\s]+):(\w+)=([^=]+?)\s*", item)
            try:
                value = float(m.group(3)) if m else math.nan
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                ap.error(f"--model-recovery-population item {item!r} is not MODEL:SITE=VALUE with a finite number "
                         f"VALUE (e.g. positive:beta_mu=0)")
            pop.setdefault(m.group(1), {})[m.group(2)] = value
        over["model_recovery_population"] = pop
    cfg = replace(cfg, **{k: v for k, v in over.items() if v is not None})
    if cfg.workers < 1:
        ap.error(f"--workers must be 1 (fits in this process) or more (a process pool), got {cfg.workers}")
    if cfg.model_recovery_folds < 1:
        ap.error(f"--model-recovery-folds must be 1 (one held-out split) or more (K-fold CV), got "
                 f"{cfg.model_recovery_folds}")
    if cfg.model_recovery_participants is not None:
        problem = _participants_problem(cfg.model_recovery_participants, cfg.model_recovery_folds,
                                        cfg.test_fraction)
        if problem:
            ap.error(problem)
    if a.data is not None and not Path(a.data).is_dir():
        ap.error(f"--data {a.data!r} is not a folder")
    return cfg


def main(argv: list[str] | None = None) -> None:
    cfg = parse_args(sys.argv[1:] if argv is None else argv)
    print(json.dumps(run(cfg), indent=2, default=str))


if __name__ == "__main__":
    main()
