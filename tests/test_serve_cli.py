"""The `serve` / `export` commands and the lazy import of the serve extra."""

import subprocess
import sys

import pytest

pytest.importorskip("fastapi")

from typer.testing import CliRunner  # noqa: E402

from causalplay.cli import app  # noqa: E402

# a wide terminal: rich wraps error boxes to its width, which would split the messages checked below
RUN = CliRunner(env={"COLUMNS": "400"})


def test_import_causalplay_stays_light():
    code = ("import sys, causalplay, causalplay.cli, causalplay.serve; "
            "heavy = [m for m in ('fastapi', 'sqlalchemy', 'alembic', 'uvicorn', 'jinja2', 'starlette') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_export_command(tmp_path):
    from fastapi.testclient import TestClient

    from causalplay.data import load_trials
    from causalplay.serve.app import ServeConfig, create_app
    from causalplay.serve.study import Study

    db = f"sqlite:///{tmp_path / 'c.db'}"
    c = TestClient(create_app(ServeConfig(db=db, admin_token="c" * 20, study=Study(raw_ids=True))),
                   base_url="http://127.0.0.1")
    c.post("/consent", data={"consent": "yes", "pid": "C1"})
    c.post("/check", data={"how": "test", "count": "2", "when": "ready"})
    c.post("/practice/done")
    c.post("/test", data={"seq": "1", "objects": ["2", "3"]})
    c.post("/judge", data={"blickets": ["2", "3"], "rule": "conjunctive"})
    r = RUN.invoke(app, ["export", "--db", db, "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert "wrote 1 participants and 1 test rows" in r.output
    d = load_trials(tmp_path / "out", n_objects=4)
    assert d.ids == ["C1"] and d.tests["objects_on"].tolist() == [(2, 3)]
    r = RUN.invoke(app, ["export", "--db", db, "--out", str(tmp_path / "o2"), "--task", "est"])
    assert r.exit_code != 0 and "causalplay/EST-v1" in r.output
    r = RUN.invoke(app, ["export", "--db", "study.db", "--out", str(tmp_path / "o3")])
    assert r.exit_code != 0 and "SQLAlchemy URL" in r.output


def test_serve_command_rejects_bad_settings(tmp_path):
    r = RUN.invoke(app, ["serve", "--db", f"sqlite:///{tmp_path / 's.db'}", "--task", "chess"])
    assert r.exit_code != 0 and "task must be one of" in r.output
    r = RUN.invoke(app, ["serve", "--db", f"sqlite:///{tmp_path / 's.db'}", "--admin-token", "short"])
    assert r.exit_code != 0 and "at least 16 characters" in r.output
    (tmp_path / "study.toml").write_text('task = "ivre"\n[[conditions]]\nn_blickets = 1\nrule = "conjunctive"\n')
    r = RUN.invoke(app, ["serve", "--db", f"sqlite:///{tmp_path / 's.db'}", "--study", str(tmp_path / "study.toml")])
    assert r.exit_code != 0 and "never lights" in r.output
    r = RUN.invoke(app, ["serve", "--db", f"sqlite:///{tmp_path / 's.db'}", "--study", str(tmp_path / "none.toml")])
    assert r.exit_code != 0 and "none.toml" in r.output
