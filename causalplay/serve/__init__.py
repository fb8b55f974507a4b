"""``causalplay serve``: run the package's Blicket tasks with people in a browser (see ``docs/serve.md``).

Needs the ``serve`` extra (FastAPI, uvicorn, Jinja2, SQLAlchemy 2, Alembic, markdown-it-py). Nothing here is
imported by ``import causalplay``; the CLI imports it when ``serve`` or ``export`` runs.

* :mod:`~causalplay.serve.tasks` -- the served tasks (the package's own Tasks), conditions, counterbalancing;
* :mod:`~causalplay.serve.study` -- the study file (texts, conditions, practice, ids);
* :mod:`~causalplay.serve.store` -- the database tables, migrations, durable writes and the CSV export;
* :mod:`~causalplay.serve.app` -- the application: settings, shared dependencies, health check;
* :mod:`~causalplay.serve.flow` / :mod:`~causalplay.serve.admin` -- the participant's and experimenter's routers;
* :mod:`~causalplay.serve.render` -- the SVG pictures of objects and the machine.
"""

from __future__ import annotations

import importlib

__all__ = ["create_app", "ServeConfig", "export_trials", "open_db", "TASKS"]
# Lazy: importing causalplay.serve (e.g. for TASKS) must not pull in FastAPI.
_MODULE = {"create_app": "app", "ServeConfig": "deps", "export_trials": "store", "open_db": "store", "TASKS": "tasks"}


def __getattr__(name):
    if name in _MODULE:
        return getattr(importlib.import_module(f".{_MODULE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
