"""``causalplay design``: rank candidate study designs by how much a participant's first choices tell the fitted models
of people apart (docs/design.md). Bad options end in a usage error (exit 2) that names the option; data that do not
load end with the loader's report (exit 1)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .config import usage_errors
from .fit import EXISTING_FOLDER, parse_models

__all__ = ["design_cmd"]


def _ints(value: str, option: str) -> list[int]:
    try:
        out = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated integers, got {value!r}", param_hint=option) from None
    if not out:
        raise typer.BadParameter("give at least one value", param_hint=option)
    return out


def design_cmd(
    data: Annotated[Path | None, typer.Option(help="Folder with participants.csv and tests.csv to fit the models "
                                                   "to (default: the shipped Nexiom people).",
                                              **EXISTING_FOLDER)] = None,
    models: Annotated[str, typer.Option(help="Comma-separated choice models to tell apart.")
                      ] = "positive,random,eig_sweep,eig_sweep_single",
    objects: Annotated[int, typer.Option(min=1, max=8, help="Objects in every candidate design.")] = 4,
    rules: Annotated[str, typer.Option(help="Comma-separated machine rules.")] = "conjunctive,disjunctive",
    blickets: Annotated[str, typer.Option(help="Comma-separated blicket counts.")] = "2",
    demonstrations: Annotated[int, typer.Option(min=0, max=3, help="Longest demonstration history (each a distinct "
                                                                   "non-empty object set).")] = 1,
    told: Annotated[str, typer.Option(help="Tell participants the blicket count: no, yes or both.")] = "both",
    choices: Annotated[int, typer.Option(min=1, help="First choices the information is about (K).")] = 1,
    draws: Annotated[int, typer.Option(min=1, help="New participants per model.")] = 200,
    steps: Annotated[int | None, typer.Option(min=1, help="SVI steps of each fit (default 1500).")] = None,
    top: Annotated[int, typer.Option(min=1, help="Designs shown and plotted.")] = 10,
    out: Annotated[Path, typer.Option(help="Folder for designs.csv and designs.png.")] = Path("runs/design"),
    n_objects: Annotated[int | None, typer.Option(min=1, help="Objects per trial of --data, if participants.csv "
                                                              "has no n_objects column.")] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the fits and of the population draws.")] = 0,
) -> None:
    """Rank candidate designs by utility: the mutual information (nats) between which fitted model generated a
    participant and that participant's first K choices."""
    names = parse_models(models)
    if told not in ("no", "yes", "both"):
        raise typer.BadParameter(f"must be no, yes or both, got {told!r}", param_hint="--told")
    counts = _ints(blickets, "--blickets")
    rule_names = [r.strip() for r in rules.split(",") if r.strip()]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from causalplay.data import DataValidationError, load_nexiom, load_trials
    from causalplay.design import design_space, utility
    from causalplay.fitting import SVIOptions, fit

    with usage_errors("--rules/--blickets/--objects"):
        space = design_space(objects, rule_names, counts, demonstrations,
                             told={"no": (False,), "yes": (True,), "both": (False, True)}[told])
    try:
        people = load_nexiom() if data is None else load_trials(data, n_objects=n_objects)
    except (DataValidationError, ValueError) as err:
        typer.echo(f"{err}\n(causalplay check-data {data} lists every problem)", err=True)
        raise typer.Exit(1) from None
    svi = SVIOptions(steps=steps, progress=False)
    fits = {}
    for m in names:
        fits[m] = fit(people, m, method="svi", svi=svi, seed=seed)
        typer.echo(f"{m}: SVI {fits[m].seconds:.0f} s", err=True)
    u = utility(fits, space, choices=choices, draws=draws, seed=seed)
    table = u.to_frame(space)
    table.insert(1, "bits", table["nats"] / 0.6931471805599453)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "designs.csv", index_label="index")
    head = table.head(top)
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(head) + 1))
    ax.barh(range(len(head))[::-1], head["nats"], xerr=head["se"] if u.method == "mc" else None, color="C0")
    ax.set_yticks(range(len(head))[::-1], head["design"], fontsize=7)
    ax.set_xlabel(f"utility (nats): I(model; first {choices} choice{'s' if choices > 1 else ''})")
    fig.tight_layout()
    fig.savefig(out / "designs.png", dpi=110)
    typer.echo(f"{len(space)} candidate designs, models {names}, K={choices}, {draws} new participants per model "
               f"({u.method}{', with its standard error' if u.method == 'mc' else ''})")
    typer.echo(head.to_string(float_format=lambda x: f"{x:.4f}"))
    typer.echo(f"wrote {out / 'designs.csv'} and {out / 'designs.png'}")
