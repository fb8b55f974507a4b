"""`causalplay serve` on a real PostgreSQL server: the system's PostgreSQL started as a non-root user in a temporary
folder (127.0.0.1, a free port). Skipped, with the reason, where no PostgreSQL can start."""

import threading
import time

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("psycopg", reason="Postgres URLs need psycopg (in the serve extra)")

from serve_server import CRAFTED, CRAFTED_CHECK, postgres  # noqa: E402


@pytest.fixture(scope="module")
def pg_url():
    with postgres() as (url, reason):
        if url is None:
            pytest.skip(reason)
        yield url


def _client(app):
    from fastapi.testclient import TestClient

    return TestClient(app, base_url="http://127.0.0.1")


def test_postgres_migration_flow_export_and_concurrent_assignment(pg_url, tmp_path):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from causalplay.data import load_trials
    from causalplay.serve.app import ServeConfig, create_app
    from causalplay.serve.store import Base, Participant, export_trials
    from causalplay.serve.study import Study

    app = create_app(ServeConfig(db=pg_url, task="nexiom", seed=9, admin_token="p" * 20,
                                 study=Study(practice=False, raw_ids=True)))
    engine = app.state.engine
    assert engine.dialect.name == "postgresql"
    with engine.connect() as c:
        assert compare_metadata(MigrationContext.configure(c), Base.metadata) == []

    # 24 participants start at once: every one gets a distinct slot and the conditions stay counterbalanced
    results, errors = {}, []

    def one(k):
        try:
            cl = _client(app)
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
        # all 24 active or done when each consented: exactly two permuted blocks, in order of consent
        want = [c for b in (0, 1) for c in np.random.default_rng([9, b]).permutation(12).tolist()]
        assert [p.condition for p in ps] == want
        assert all(p.stage == "done" and len(p.tests) == 2 for p in ps)
    export_trials(pg_url, tmp_path / "out")
    d = load_trials(tmp_path / "out", n_objects=4, impossible="raise")
    assert sorted(d.ids) == sorted(results) and len(d.tests) == 48
    for pid, g in d.tests.groupby("participant"):
        k = int(pid[2:])
        assert [tuple(o) for o in g["objects_on"]] == [(k % 4,), tuple(sorted(((k + 1) % 4, (k + 2) % 4)))]


def test_postgres_refuses_crafted_input_resyncs_and_frees_abandoned(pg_url):
    from sqlalchemy import select, update
    from sqlalchemy.orm import Session

    from causalplay.serve.app import ServeConfig, create_app
    from causalplay.serve.store import Event, Participant, TrialRow
    from causalplay.serve.study import Study

    # a fresh schema per test would need a new database; a task of its own keeps this test's rows apart
    app = create_app(ServeConfig(db=pg_url, task="ivre", seed=1, admin_token="p" * 20, rate_per_s=1000.0,
                                 rate_burst=1000, study=Study(practice=False, timeout_minutes=10)))
    engine = app.state.engine

    def snapshot():
        with Session(engine) as s:
            return [{c.name: getattr(r, c.key) for c in cls.__table__.columns}
                    for cls in (Participant, TrialRow, Event) for r in s.scalars(select(cls).order_by(cls.id)).all()]

    c = _client(app)
    c.post("/consent", data={"consent": "yes", "pid": "PGX"})
    before = snapshot()
    for url, data in CRAFTED_CHECK:
        assert c.post(url, data=data).status_code == 422
    assert snapshot() == before
    with Session(engine) as s:
        n = s.scalars(select(Participant).where(Participant.code == "PGX")).one().n_tests
        k = app.state.task.world(*s.execute(select(Participant.condition, Participant.episode_seed)
                                            .where(Participant.code == "PGX")).one()).n_blickets
    assert c.post("/check", data={"how": "test", "count": str(k), "when": "ready"}).url.path == "/task"
    first = c.post("/test", data={"seq": str(n + 1), "objects": ["0"]}, headers={"HX-Request": "true"})
    assert first.status_code == 200
    before = snapshot()
    for url, data in CRAFTED:
        data = {**data, "seq": str(n + 2)} if data.get("seq") == "1" else data
        assert c.post(url, data=data).status_code == 422, (url, str(data)[:40])
    again = c.post("/test", data={"seq": str(n + 1), "objects": ["3"]}, headers={"HX-Request": "true"})
    assert again.status_code == 200 and "had already reached the server" in again.text
    assert snapshot() == before

    # an abandoned session (idle past the timeout) frees its condition on Postgres too
    app2 = create_app(ServeConfig(db=pg_url, task="est", seed=2, admin_token="p" * 20,
                                  study=Study(practice=False, timeout_minutes=10, conditions=tuple(
                                      {"n_blickets": 3 + i, "rule": "disjunctive"} for i in range(3)))))
    got = []
    for pid in ("PGA", "PGB", "PGC", "PGD"):
        _client(app2).post("/consent", data={"consent": "yes", "pid": pid})
        with Session(engine) as s, s.begin():
            got.append(s.scalars(select(Participant.condition).where(Participant.code == pid)).one())
            if pid == "PGC":  # PGB has been idle for 15 minutes
                s.execute(update(Participant).where(Participant.code == "PGB").values(last_active_at=time.time() - 900))
    assert sorted(got[:3]) == [0, 1, 2] and got[3] == got[1]
