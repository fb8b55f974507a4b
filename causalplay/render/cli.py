"""``causalplay render``: a contact sheet of one pixel episode."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``render`` command to the ``causalplay`` CLI."""

    @app.command()
    def render(
        env: str = typer.Option("causalplay/IVRE-Pixels-v0", help="Pixel env id."),
        seed: int = typer.Option(0, help="Episode seed (the same seed gives the same symbolic episode)."),
        out: str = typer.Option("sheet.png", help="Output PNG."),
        engine: str = typer.Option("workbench", help="workbench (fast) or cycles (path traced, slow)."),
        scale: int = typer.Option(2, help="Upscaling of each 160x120 frame."),
        cols: int = typer.Option(5, help="Frames per row."),
    ) -> None:
        """Write a contact sheet of one episode: every panel, labelled with its phase and whether it lit."""
        from .sheet import contact_sheet, episode_frames

        try:
            frames, panels, objects = episode_frames(env, seed=seed, engine=engine)
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None
        sheet = contact_sheet(frames, panels, objects, title=f"{env}  seed={seed}  engine={engine}",
                              scale=scale, cols=cols)
        sheet.save(out)
        typer.echo(f"wrote {out} ({len(frames)} panels)")
