"""``causalplay check-data`` and ``causalplay fit``: validate a folder of trial data; fit choice models to it and
compare them (docs/human-data.md). Bad options end in a usage error (exit 2) that names the option; data that do
not load end with the loader's report (exit 1)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from .config import usage_errors

__all__ = ["check_data_cmd", "fit_cmd"]

_FOLDER = {"exists": True, "file_okay": False, "dir_okay": True, "resolve_path": True}


def check_data_cmd(
    folder: Annotated[Path, typer.Argument(help="Folder with participants.csv and tests.csv.", **_FOLDER)],
    n_objects: Annotated[int | None, typer.Option(min=1, help="Objects per trial, if participants.csv has no "
                                                              "n_objects column.")] = None,
) -> None:
    """Validate a folder of trial data (docs/data-schema.md) and print a summary; exit 1 if it does not load."""
    from causalplay.data import check_data

    summary = check_data(folder, n_objects=n_objects)
    typer.echo(str(summary))
    raise typer.Exit(0 if summary.ok else 1)


def _models(value: str) -> list[str]:
    """Comma-separated choice models; commas inside quotes or brackets (``shared=['a','b']``, ``+shared(a,b)``)
    belong to the spec."""
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
    data: Annotated[Path, typer.Option(help="Folder with participants.csv and tests.csv.", **_FOLDER)],
    models: Annotated[str, typer.Option(help="Comma-separated choice models (causalplay.models.choice; "
                                             "modifiers such as eig_sweep+shared(gamma,stop_a) too).")
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
    names = _models(models)
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
