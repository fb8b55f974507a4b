"""`causalplay serve` on a real PostgreSQL server: the system's PostgreSQL started as a non-root user in a temporary
folder (127.0.0.1, a free port). Skipped, with the reason, where no PostgreSQL can start."""

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("psycopg", reason="Postgres URLs need psycopg (in the serve extra)")

from serve_server import free_port  # noqa: E402


def _pg_bin() -> str | None:
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(f"{d}/initdb") and os.path.exists(f"{d}/pg_ctl"):
            return d
    found = shutil.which("initdb")
    return os.path.dirname(found) if found and shutil.which("pg_ctl") else None


@pytest.fixture(scope="module")
def pg_url():
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) found; install Debian's postgresql")
    root = Path(tempfile.mkdtemp(prefix="causalplay-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        # PostgreSQL refuses to run as root: run it as the unprivileged 'nobody' in a folder it owns.
        try:
            pwd.getpwnam("nobody")
        except KeyError:
            pytest.skip("running as root and there is no 'nobody' user to run PostgreSQL as")
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser to drop to an unprivileged user for PostgreSQL")
        prefix = ["runuser", "-u", "nobody", "--"]
        os.chown(root, pwd.getpwnam("nobody").pw_uid, -1)
    data, port = root / "data", free_port()
    init = subprocess.run([*prefix, f"{bindir}/initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E",
                           "UTF8"], capture_output=True, text=True, timeout=120)
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"initdb failed: {init.stderr.strip()[-500:]}")
    start = subprocess.run([*prefix, f"{bindir}/pg_ctl", "-D", str(data), "-l", str(root / "log"), "-w", "-t", "60",
                            "-o", f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start"],
                           capture_output=True, text=True, timeout=120)
    if start.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"PostgreSQL did not start: {start.stderr.strip()[-500:]}")
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*prefix, f"{bindir}/pg_ctl", "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)


def test_postgres_migration_flow_export_and_concurrent_assignment(pg_url, tmp_path):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from fastapi.testclient import TestClient
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from causalplay.data import load_trials
    from causalplay.serve.app import ServeConfig, create_app
    from causalplay.serve.store import Base, Participant, export_trials
    from causalplay.serve.tasks import assign_condition

    app = create_app(ServeConfig(db=pg_url, task="nexiom", seed=9, admin_token="p" * 20))
    engine = app.state.engine
    assert engine.dialect.name == "postgresql"
    with engine.connect() as c:
        assert compare_metadata(MigrationContext.configure(c), Base.metadata) == []

    # 24 participants start at once: every one gets a distinct slot and the conditions stay counterbalanced
    results, errors = {}, []

    def one(k):
        try:
            cl = TestClient(app, base_url="http://127.0.0.1")
            pid = f"PG{k:02d}"
            r = cl.post("/consent", data={"consent": "yes", "pid": pid})
            assert r.url.path == "/check", r.status_code
            assert cl.post("/check", data={"how": "test", "count": "2", "when": "ready"}).url.path == "/task"
            for j, on in enumerate([(k % 4,), ((k + 1) % 4, (k + 2) % 4)], start=1):
                assert cl.post("/test", data={"seq": str(j), "objects": [str(i) for i in on]}).status_code == 200
            r = cl.post("/judge", data={"blickets": ["0", "1"], "rule": "conjunctive"})
            assert r.url.path == "/debrief"
            results[pid] = True
        except Exception as err:  # collected: a failure in a thread must fail the test
            errors.append(f"{k}: {err!r}")

    threads = [threading.Thread(target=one, args=(k,)) for k in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and len(results) == 24
    with Session(engine) as s:
        ps = s.scalars(select(Participant).order_by(Participant.slot)).all()
        assert [p.slot for p in ps] == list(range(24))
        assert [p.condition for p in ps] == [assign_condition(9, k, 12) for k in range(24)]
        assert all(p.stage == "done" and len(p.tests) == 2 for p in ps)
    export_trials(pg_url, tmp_path / "out")
    d = load_trials(tmp_path / "out", n_objects=4, impossible="raise")
    assert sorted(d.ids) == sorted(results) and len(d.tests) == 48
    for pid, g in d.tests.groupby("participant"):
        k = int(pid[2:])
        assert [tuple(o) for o in g["objects_on"]] == [(k % 4,), tuple(sorted(((k + 1) % 4, (k + 2) % 4)))]
