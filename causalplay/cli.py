"""The ``causalplay`` command line. Sub-commands live beside the code they drive and register here."""

from __future__ import annotations

import importlib.util

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Causal learning on the Blicket detector.")


@app.callback()
def main() -> None:
    """causalplay: exact learners, environments and benchmarks for the Blicket detector."""


@app.command()
def demo(out: str = typer.Option("runs/demo", help="Folder for the demo's results."),
         bench_episodes: int = typer.Option(2000, help="Episodes per env, agent and seed of the benchmark part "
                                                       "(0 skips it).")) -> None:
    """Run the main job on built-in defaults: classic phenomena through the exact learner, then a small benchmark."""
    from .demo import run_demo

    run_demo(out, bench_episodes)


# Each capability registers its own sub-command (bench, render, ...) when its module is present.
for _module in ("causalplay.bench.cli", "causalplay.render.cli", "causalplay.rl.cli", "causalplay.serve.cli"):
    if importlib.util.find_spec(_module.rsplit(".", 1)[0]) and importlib.util.find_spec(_module):
        importlib.import_module(_module).register(app)
