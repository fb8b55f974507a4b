"""The ``causalplay`` command line: the top layer. One module per sub-command; each imports what it drives
inside the command, so ``causalplay --help`` stays quick and an extra that is not installed fails only its own
command, with the install line."""

from __future__ import annotations

import typer

from causalplay.core._version import __version__

from . import bench, design, fit, render, serve, train

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Causal learning on the Blicket detector.")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"causalplay {__version__}")
        raise typer.Exit()


@app.callback()
def main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="Print the version and exit.")) -> None:
    """causalplay: exact learners, environments and benchmarks for the Blicket detector."""


@app.command()
def demo(out: str = typer.Option("runs/demo", help="Folder for the demo's results."),
         bench_episodes: int = typer.Option(2000, help="Episodes per env, agent and seed of the benchmark part "
                                                       "(0 skips it).")) -> None:
    """Run the main job on built-in defaults: classic phenomena through the exact learner, then a small benchmark."""
    from .demo import run_demo

    run_demo(out, bench_episodes)


app.command("bench")(bench.bench)
app.command("render")(render.render)
app.command("train")(train.train_cmd)
app.command("serve")(serve.serve_cmd)
app.command("export")(serve.export_cmd)
app.command("fit")(fit.fit_cmd)
app.command("check-data")(fit.check_data_cmd)
app.command("fit-cv")(fit.fit_cv_cmd)
app.command("fit-recovery")(fit.fit_recovery_cmd)
app.command("fit-ppc")(fit.fit_ppc_cmd)
app.command("design")(design.design_cmd)
