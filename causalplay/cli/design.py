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
    simulate: Annotated[bool, typer.Option("--simulate", help="Also simulate whole studies of each model under "
                                                             "the data's own designs and under sequential ADO among "
                                                             "the candidates, and report model recovery against "
                                                             "participants (recovery.csv, recovery.png).")] = False,
    studies: Annotated[int, typer.Option(min=1, help="--simulate: studies per generating model and arm.")] = 20,
    participants: Annotated[int, typer.Option(min=1, help="--simulate: participants per fixed-design study.")] = 120,
    ado_participants: Annotated[int, typer.Option(min=1, help="--simulate: participants per ADO study.")] = 40,
    executor: Annotated[str, typer.Option(help="--simulate: where the studies run: serial, process, ray or dask.")
                        ] = "serial",
    workers: Annotated[int | None, typer.Option(min=1, help="--simulate: worker processes.")] = None,
    address: Annotated[str | None, typer.Option(help="--simulate: Ray or Dask cluster address.")] = None,
) -> None:
    """Rank candidate designs by utility: the mutual information (nats) between which fitted model generated a
    participant and that participant's first K choices. With --simulate, also simulate studies under the fixed design
    and under sequential adaptive design, and report how often each recovers its generating model."""
    names = parse_models(models)
    if simulate:
        from causalplay.bench.executors import check_executor

        with usage_errors("--executor/--workers/--address"):
            check_executor(executor, workers, address)
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
    if simulate:
        _simulate(fits, people, space, out, studies, participants, ado_participants, draws, choices, seed, executor,
                  workers, address)


def _simulate(fits, people, space, out: Path, studies: int, participants: int, ado_participants: int, draws: int,
              choices: int, seed: int, executor: str, workers: int | None, address: str | None) -> None:
    """``--simulate``: :func:`causalplay.design.studies.simulate_studies` with the data's designs as the fixed one."""
    import logging

    from causalplay.bench.executors import make_executor
    from causalplay.design import designs_of
    from causalplay.design.studies import simulate_studies

    if space[0].n_objects != people.n_objects:
        raise typer.BadParameter(f"--simulate draws participants from models fitted to {people.n_objects}-object "
                                 f"data; the candidates have {space[0].n_objects}", param_hint="--objects")
    fixed = list(designs_of(people).values())
    logging.getLogger("causalplay.design.studies").setLevel(logging.INFO)
    with make_executor(executor, workers, address) as ex:
        sim = simulate_studies(fits, fixed, space, participants_fixed=participants, participants_ado=ado_participants,
                               studies=studies, draws=draws, choices=choices, seed=seed, out=out,
                               executor=None if executor == "serial" else ex)
    c = sim.curve[sim.curve["true"] == "all"]
    c = c.assign(rate=[f"{r:.2f} [{lo:.2f}, {hi:.2f}]" for r, lo, hi in zip(c["rate"], c["lo"], c["hi"], strict=True)])
    typer.echo(f"model recovery ({studies} studies per generating model and arm; Wilson 95% intervals):")
    typer.echo(c.pivot_table(index=["rule", "n"], columns="arm", values="rate", aggfunc="first").to_string())
    for rule, need in (("one_se", sim.needed(0.8, "one_se")), ("map", sim.needed(0.8, "map"))):
        typer.echo(f"participants for recovery >= 0.8 ({rule}): " + ", ".join(f"{a} {n:g}" for a, n in need.items()))
    typer.echo(f"wrote {out / 'rows.csv'}, {out / 'recovery.csv'} and {out / 'recovery.png'}")
