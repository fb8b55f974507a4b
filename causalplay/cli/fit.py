"""``causalplay check-data``, ``fit``, ``fit-cv``, ``fit-recovery`` and ``fit-ppc``: validate a folder of trial data;
fit choice models to it and compare them; cross-validate them; model recovery; posterior predictive checks of a
saved fit (docs/human-data.md). Bad options end in a usage error (exit 2) that names the option; data that do
not load end with the loader's report (exit 1)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from .config import usage_errors

__all__ = ["check_data_cmd", "fit_cmd", "fit_cv_cmd", "fit_recovery_cmd", "fit_ppc_cmd"]

#: typer options of a folder argument that must exist (``causalplay fit``, ``check-data`` and ``design`` use them)
EXISTING_FOLDER = {"exists": True, "file_okay": False, "dir_okay": True, "resolve_path": True}


def check_data_cmd(
    folder: Annotated[Path, typer.Argument(help="Folder with participants.csv and tests.csv.", **EXISTING_FOLDER)],
    n_objects: Annotated[int | None, typer.Option(min=1, help="Objects per trial, if participants.csv has no "
                                                              "n_objects column.")] = None,
) -> None:
    """Validate a folder of trial data (docs/data-schema.md) and print a summary; exit 1 if it does not load."""
    from causalplay.data import check_data

    summary = check_data(folder, n_objects=n_objects)
    typer.echo(str(summary))
    raise typer.Exit(0 if summary.ok else 1)


def parse_models(value: str) -> list[str]:
    """The choice models of a ``--models`` option (``causalplay fit`` and ``design``): comma-separated; commas
    inside quotes or brackets (``shared=[a,b]``) belong to the spec."""
    from causalplay.core.specs import split_specs
    from causalplay.models.choice import get_model

    with usage_errors():
        names = split_specs(value, "--models")
    if not names:
        raise typer.BadParameter("give at least one choice model, e.g. eig_sweep,random")
    with usage_errors():
        for m in names:
            get_model(m)
    if len(set(names)) < len(names):
        raise typer.BadParameter(f"a model is named twice in {value!r}")
    return names


def fit_cmd(
    data: Annotated[Path, typer.Option(help="Folder with participants.csv and tests.csv.", **EXISTING_FOLDER)],
    models: Annotated[str, typer.Option(help="Comma-separated choice models (causalplay.models.choice; "
                                             "options such as eig_sweep:shared=[gamma,stop_a] too).")
                      ] = "eig_sweep_single,eig_sweep,random",
    method: Annotated[str, typer.Option(help="svi (seconds to minutes: rank models) or nuts (the paper's "
                                             "posterior).")] = "svi",
    out: Annotated[Path, typer.Option(help="Folder for compare.csv, compare.png and fits/.")] = Path("runs/fit"),
    held_out: Annotated[float, typer.Option(min=0.0, max=0.9, help="Share of participants held out (stratified "
                                                                  "by rule) to score the models on; 0: PSIS-LOO "
                                                                  "only.")] = 0.25,
    judgement: Annotated[str | None, typer.Option(help="Judgement model: sample or softmax (default: the "
                                                       "model's own, sample).")] = None,
    steps: Annotated[int | None, typer.Option(min=1, help="SVI steps (default 1500).")] = None,
    chains: Annotated[int | None, typer.Option(min=1, help="NUTS chains (default 4).")] = None,
    draws: Annotated[int | None, typer.Option(min=1, help="NUTS draws per chain (default as NUTSOptions).")] = None,
    n_objects: Annotated[int | None, typer.Option(min=1, help="Objects per trial, if participants.csv has no "
                                                              "n_objects column.")] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the split and of every fit.")] = 0,
) -> None:
    """Fit choice models to a folder of trial data and compare them on held-out participants."""
    if method not in ("svi", "nuts"):
        raise typer.BadParameter(f"must be svi or nuts, got {method!r}", param_hint="--method")
    if judgement not in (None, "sample", "softmax"):
        raise typer.BadParameter(f"must be sample or softmax, got {judgement!r}", param_hint="--judgement")
    names = parse_models(models)
    import matplotlib

    matplotlib.use("Agg")
    from causalplay.data import DataValidationError, load_trials
    from causalplay.fitting import NUTSOptions, SVIOptions, compare, fit

    try:
        d = load_trials(data, n_objects=n_objects)
    except (DataValidationError, ValueError) as err:
        typer.echo(f"{err}\n(causalplay check-data {data} lists every problem)", err=True)
        raise typer.Exit(1) from None
    fit_data, held = d.split(held_out, seed=seed) if held_out > 0 else (d, None)
    if held is not None and (len(held) < 2 or len(fit_data) < 2):
        typer.echo(f"note: holding out {held_out:g} of {len(d)} participants leaves {len(held)} held out; a "
                   "paired SE needs 2 or more: comparing by PSIS-LOO on all of them instead", err=True)
        fit_data, held = d, None
    (out / "fits").mkdir(parents=True, exist_ok=True)
    kw = ({"svi": SVIOptions(steps=steps)} if method == "svi" else
          {"nuts": NUTSOptions(**{k: v for k, v in (("chains", chains), ("draws", draws)) if v is not None})})
    fits = {}
    for m in names:
        f = fits[m] = fit(fit_data, m, method=method, judgement=judgement, seed=seed, **kw)
        safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", m)
        if held is not None:  # the held-out participants' predictions go in the file with the fit
            f.idata.extend(f.predict(held, seed=seed))
        f.idata.to_netcdf(out / "fits" / f"{safe}.nc")
        d_ = f.diagnostics(warn=False)
        typer.echo(f"{m}: {method.upper()} {f.seconds:.0f} s, " + ("diagnostics ok" if d_["ok"] else
                   "; ".join(d_["problems"]) + (". To change: " + "; ".join(d_["advice"]) if d_["advice"] else "")))
    table = compare(fits, held)
    table.to_csv(out / "compare.csv")
    fig = table.plot().figure
    fig.tight_layout()
    fig.savefig(out / "compare.png", dpi=110)
    typer.echo(f"\n{len(fit_data)} participants fitted" + (f", {len(held)} held out ({held.n_choices} choices)"
                                                           if held is not None else "") + f" ({d.source})\n")
    typer.echo(str(table))
    typer.echo(f"\nwrote {out / 'compare.csv'}, {out / 'compare.png'} and {out / 'fits'}/*.nc (Fit.idata; "
               f"causalplay.fitting.load_fit(path, data) rebuilds a fit)")


def _load(data: Path, n_objects: int | None):
    from causalplay.data import DataValidationError, load_trials

    try:
        return load_trials(data, n_objects=n_objects)
    except (DataValidationError, ValueError) as err:
        typer.echo(f"{err}\n(causalplay check-data {data} lists every problem)", err=True)
        raise typer.Exit(1) from None


def _executor(workers: int):
    from causalplay.bench.executors import make_executor

    return make_executor("process" if workers > 1 else "serial", workers if workers > 1 else None)


_MODELS_HELP = "Comma-separated choice models (options such as eig_sweep:shared=[gamma,stop_a] too)."


def fit_cv_cmd(
    data: Annotated[Path, typer.Option(help="Folder with participants.csv and tests.csv.", **EXISTING_FOLDER)],
    models: Annotated[str, typer.Option(help=_MODELS_HELP)] = "eig_sweep_single,eig_sweep,random",
    folds: Annotated[int, typer.Option(min=2, help="Folds: every participant is held out once.")] = 4,
    out: Annotated[Path, typer.Option(help="Folder for crossval.csv and crossval_participants.csv.")
                   ] = Path("runs/crossval"),
    judgement: Annotated[str | None, typer.Option(help="Judgement model: sample or softmax.")] = None,
    steps: Annotated[int | None, typer.Option(min=1, help="SVI steps per fit (default 1500).")] = None,
    workers: Annotated[int, typer.Option(min=1, help="Fits at once (processes).")] = 1,
    n_objects: Annotated[int | None, typer.Option(min=1, help="Objects per trial, if participants.csv has no "
                                                              "n_objects column.")] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the folds and of every fit.")] = 0,
) -> None:
    """Participant-level k-fold cross-validation: every model fitted (hierarchical SVI) once per fold, every
    participant held out once; held-out nats per choice with paired SEs over all participants."""
    if judgement not in (None, "sample", "softmax"):
        raise typer.BadParameter(f"must be sample or softmax, got {judgement!r}", param_hint="--judgement")
    names = parse_models(models)
    from causalplay.fitting import SVIOptions
    from causalplay.fitting.workflows import crossval, participants_problem

    d = _load(data, n_objects)
    if problem := participants_problem(len(d), folds, what=f"{len(d)} participants"):
        raise typer.BadParameter(problem, param_hint="--folds")
    out.mkdir(parents=True, exist_ok=True)
    with _executor(workers) as ex:
        cv = crossval(d, names, folds=folds, split_seed=seed, svi=SVIOptions(steps=steps), judgement=judgement,
                      seed=seed, executor=ex, out=out)
    typer.echo(f"\n{len(d)} participants, {d.n_choices} choices, {folds} folds ({d.source})\n")
    typer.echo(cv.table.to_string(index=False))
    typer.echo(f"\nwrote {out / 'crossval.csv'} and {out / 'crossval_participants.csv'}")


def fit_recovery_cmd(
    data: Annotated[Path, typer.Option(help="Folder with participants.csv and tests.csv (the people whose "
                                            "fitted populations and worlds the simulations use).", **EXISTING_FOLDER)],
    models: Annotated[str, typer.Option(help=_MODELS_HELP + " Simplest first: the one-SE rule breaks ties in this "
                                             "order.")] = "random,eig_sweep,eig_sweep_single",
    datasets: Annotated[int, typer.Option(min=1, help="Simulated data sets per generating model.")] = 2,
    folds: Annotated[int, typer.Option(min=1, help="1: score each data set on one held-out quarter; K > 1: K-fold "
                                                   "cross-validation.")] = 1,
    participants: Annotated[int | None, typer.Option(min=2, help="Simulated participants per data set (default: "
                                                                 "as many as the data have).")] = None,
    out: Annotated[Path, typer.Option(help="Folder for model_recovery.csv, confusion*.csv, inversion*.csv.")
                   ] = Path("runs/model_recovery"),
    judgement: Annotated[str | None, typer.Option(help="Judgement model: sample or softmax.")] = None,
    steps: Annotated[int | None, typer.Option(min=1, help="SVI steps per fit (default 1500).")] = None,
    workers: Annotated[int, typer.Option(min=1, help="Fits at once (processes).")] = 1,
    n_objects: Annotated[int | None, typer.Option(min=1, help="Objects per trial, if participants.csv has no "
                                                              "n_objects column.")] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the simulations and of every fit.")] = 0,
) -> None:
    """Model recovery: can the design tell these models apart? Each model, fitted to the data, generates data sets;
    every model is fitted to each; the confusion tables count which model each data set picked."""
    if judgement not in (None, "sample", "softmax"):
        raise typer.BadParameter(f"must be sample or softmax, got {judgement!r}", param_hint="--judgement")
    names = parse_models(models)
    from causalplay.fitting import SVIOptions
    from causalplay.fitting.workflows import model_recovery, participants_problem

    d = _load(data, n_objects)
    n = len(d) if participants is None else participants
    if problem := participants_problem(n, folds, what=f"data sets of {n} participants"):
        raise typer.BadParameter(problem, param_hint="--participants")
    out.mkdir(parents=True, exist_ok=True)
    with _executor(workers) as ex:
        mr = model_recovery(d, names, datasets=datasets, folds=folds, participants=participants,
                            svi=SVIOptions(steps=steps), judgement=judgement, seed=seed, executor=ex, out=out)
    for pick, name in (("picked", "confusion.csv"), ("picked_1se", "confusion_1se.csv")):
        mr.confusion(pick).to_csv(out / name)
        mr.inversion(pick).to_csv(out / name.replace("confusion", "inversion"))
    typer.echo(f"\ngenerating model (rows) x picked model (columns), one-SE rule, {datasets} data set(s) each:\n")
    typer.echo(mr.confusion("picked_1se").to_string())
    typer.echo("\nrecovered: " + ", ".join(f"{m} {v:.2f}" for m, v in mr.recovered("picked_1se").items()))
    typer.echo(f"\nwrote {out}/model_recovery.csv, confusion.csv, confusion_1se.csv, inversion.csv, "
               "inversion_1se.csv")


def fit_ppc_cmd(
    fit: Annotated[Path, typer.Option("--fit", help="A saved fit: fits/<model>.nc of causalplay fit, or "
                                                    "Fit.idata.to_netcdf(path).", exists=True, dir_okay=False)],
    data: Annotated[Path, typer.Option(help="The folder the fit was fitted to.", **EXISTING_FOLDER)],
    replicas: Annotated[int, typer.Option(min=1, help="Simulated replicas of every participant.")] = 40,
    out: Annotated[Path | None, typer.Option(help="CSV file for the table (default: print only).")] = None,
    held_out: Annotated[float, typer.Option(min=0.0, max=0.9, help="The --held-out share the fit was made with "
                                                                  "(causalplay fit holds 0.25 out by default): "
                                                                  "the same split is rebuilt.")] = 0.0,
    n_objects: Annotated[int | None, typer.Option(min=1, help="Objects per trial, if participants.csv has no "
                                                              "n_objects column.")] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the split (as the fit's) and of the replicas.")] = 0,
) -> None:
    """Posterior predictive check of a saved fit: people's statistics (first tests, objects per test, tests per
    person, top-EIG share, judgement accuracy) beside the replicas' mean and central 90%."""
    from causalplay.fitting import load_fit
    from causalplay.fitting.ppc import posterior_predictive

    d = _load(data, n_objects)
    if held_out > 0:
        d = d.split(held_out, seed=seed)[0]
    with usage_errors():
        f = load_fit(fit, d)
    table = posterior_predictive(f, replicas, seed=seed)
    typer.echo(f"{f.model.name}: {len(d)} participants, {replicas} replicas each (model: mean and 5%-95% over "
               "replicas)\n")
    typer.echo(table.round(3).to_string())
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(out)
        typer.echo(f"\nwrote {out}")
