"""``causalplay serve`` and ``causalplay export`` (need the ``serve`` extra; see ``docs/serve.md``)."""

from __future__ import annotations

import importlib.util

import typer

from .config import usage_errors

__all__ = ["serve_cmd", "export_cmd"]

_DEFAULT_DB = "sqlite:///causalplay-serve.db"


def _need_extra() -> None:
    missing = [m for m in ("fastapi", "uvicorn", "jinja2", "sqlalchemy", "alembic") if importlib.util.find_spec(m)
               is None]
    if missing:
        raise typer.BadParameter(f"this command needs the serve extra (missing {missing}): "
                                 "pip install 'causalplay[serve]'")


def serve_cmd(
    db: str = typer.Option(_DEFAULT_DB, help="SQLAlchemy URL: sqlite:///file.db (default, in the working folder) "
                                             "or postgresql+psycopg://user:password@host/dbname."),
    host: str = typer.Option("127.0.0.1", help="Address to bind (127.0.0.1: this machine only)."),
    port: int = typer.Option(8000, help="Port."),
    study: str = typer.Option("", help="Study file (TOML, docs/serve.md): texts, conditions, tests, practice, ids."),
    task: str = typer.Option("", help="nexiom, ivre or est (overrides the study file's; default nexiom)."),
    seed: int = typer.Option(0, help="Design seed: counterbalanced condition order and every episode."),
    admin_token: str = typer.Option("", envvar="CAUSALPLAY_ADMIN_TOKEN",
                                    help="Token for /admin (>= 16 characters; random and printed when empty)."),
    completion_url: str = typer.Option("", help="Link shown on the debrief page (overrides the study file's)."),
    rate: float = typer.Option(5.0, help="Requests per second a session may submit after its burst."),
    burst: int = typer.Option(10, help="Requests a session may submit at once."),
    secure_cookie: bool = typer.Option(False, "--secure-cookie", help="Mark the cookies Secure: browsers send "
                                                                      "them over HTTPS only (behind an HTTPS proxy)."),
    root_path: str = typer.Option("", help="Path prefix the server is reached at behind a reverse proxy, e.g. "
                                           "/blicket for https://host/blicket/ (empty: the root)."),
) -> None:
    """Serve a Blicket task to people in a browser; every event is stored before the page answers."""
    _need_extra()
    import uvicorn

    from causalplay.serve.app import ServeConfig, create_app

    with usage_errors():
        cfg = ServeConfig(db=db, task=task, seed=seed, admin_token=admin_token, completion_url=completion_url,
                          rate_per_s=rate, rate_burst=burst, secure_cookie=secure_cookie, root_path=root_path,
                          study=study or None)
        app = create_app(cfg)
    typer.echo(f"causalplay serve: task {app.state.task.env_id}, {len(app.state.task.conditions)} conditions, "
               f"database {db}")
    if not cfg.study.contact:
        typer.echo("warning: the study names no contact (set contact in a --study file for a real study)", err=True)
    if not secure_cookie and host not in ("127.0.0.1", "localhost", "::1"):
        typer.echo("warning: cookies are not marked Secure; serve a real study over HTTPS with --secure-cookie "
                   "(docs/study.md)", err=True)
    base = f"http://{host}:{port}{root_path}"
    typer.echo(f"participants: {base}/?PROLIFIC_PID=<id>   admin: {base}/admin?token={cfg.admin_token}", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=5)


def export_cmd(
    db: str = typer.Option(_DEFAULT_DB, help="SQLAlchemy URL of the serve database."),
    out: str = typer.Option(..., help="Folder for participants.csv and tests.csv."),
    task: str = typer.Option("", help="Task to export (nexiom, ivre, est or an env id) when the database holds "
                                      "several."),
    include_incomplete: bool = typer.Option(False, "--include-incomplete",
                                            help="Also write sessions without a final judgement."),
) -> None:
    """Write a serve database as participants.csv / tests.csv (the schema causalplay.data.load_trials reads)."""
    _need_extra()
    from causalplay.serve.store import export_trials
    from causalplay.serve.tasks import TASKS

    with usage_errors():
        n_p, n_t = export_trials(db, out, task=TASKS.get(task, task) or None, include_incomplete=include_incomplete)
    typer.echo(f"wrote {n_p} participants and {n_t} test rows to {out}")
