"""Storage of `causalplay serve`: migrations match the models, the export is the load_trials schema and fits."""

import csv
import itertools

import numpy as np
import pytest

pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

from sqlalchemy import select, text  # noqa: E402
from sqlalchemy.orm import Session  # noqa: E402

from causalplay.serve.store import Base, Participant, TrialRow, export_trials, open_db  # noqa: E402


def _lit(rule: str, on, blickets) -> bool:
    # by hand: disjunctive lights with >= 1 blicket on the machine, conjunctive with >= 2
    k = len(set(on) & set(blickets))
    return k >= (1 if rule == "disjunctive" else 2)


def _fill(engine, n: int = 8, seed: int = 0):
    """n finished sessions with random tests (and one unfinished); returns what was written, by code."""
    rng = np.random.default_rng(seed)
    pairs = list(itertools.combinations(range(4), 2))
    want = {}
    with Session(engine) as s, s.begin():
        for k in range(n + 1):
            rule = ("disjunctive", "conjunctive")[k % 2]
            blickets = pairs[k % 6]
            judged = tuple(sorted(rng.choice(4, size=2, replace=False).tolist()))
            choice = ("disjunctive", "conjunctive")[int(rng.integers(2))]
            t0 = 1000.0 + 100 * k
            p = Participant(code=f"P{k:02d}", code_source="prolific", session_token=f"tok{k}",
                            task="causalplay/Nexiom-v0", slot=k, condition=k % 12, design_seed=0, episode_seed=k,
                            n_objects=4, rule=rule, true_blickets=" ".join(map(str, blickets)),
                            stage="done" if k < n else "task", check_attempts=1 + k % 2, n_tests=0,
                            consented_at=t0 - 30, task_started_at=t0)
            s.add(p)
            s.flush()
            tests, t = [], t0
            for j in range(1 + int(rng.integers(6))):
                on = tuple(sorted(np.flatnonzero(rng.random(4) < 0.5).tolist()))
                t += float(rng.integers(1, 20)) + 0.25
                lit = _lit(rule, on, blickets)
                s.add(TrialRow(participant_id=p.id, test=j + 1, objects_on=" ".join(map(str, on)), lit=lit,
                           source="participant", created_at=t))
                tests.append((on, lit, t))
            p.n_tests = len(tests)
            if k < n:
                p.judged_blickets, p.rule_choice, p.finished_at = " ".join(map(str, judged)), choice, t + 7.5
            want[p.code] = dict(rule=rule, blickets=blickets, judged=judged, choice=choice, tests=tests, t0=t0,
                                done=k < n, end=t + 7.5)
    return want


def test_migration_matches_models_and_sqlite_is_durable(tmp_path):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine = open_db(f"sqlite:///{tmp_path / 'a.db'}")
    with engine.connect() as c:
        assert compare_metadata(MigrationContext.configure(c), Base.metadata) == []
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert c.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        assert c.execute(text("select version_num from alembic_version")).scalar() == "0004"
    open_db(f"sqlite:///{tmp_path / 'a.db'}")  # a second start on a migrated database is a no-op


def test_upgrade_from_0001_keeps_sessions(tmp_path):
    from causalplay.serve.store import make_engine, upgrade

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    upgrade(engine, "0001")
    with engine.begin() as c:
        c.execute(text("insert into participants (code, code_source, session_token, task, slot, condition, "
                       "design_seed, episode_seed, n_objects, rule, true_blickets, stage, check_attempts, n_tests, "
                       "consented_at) values ('OLD1', 'prolific', 'tok', 'causalplay/Nexiom-v0', 0, 3, 0, 5, 4, "
                       "'disjunctive', '0 1', 'task', 1, 0, 1234.5)"))
    open_db(url)
    with Session(engine) as s:
        p = s.scalars(select(Participant)).one()
        # older sessions: last active at consent, exported under their code, no resume code
        assert (p.last_active_at, p.export_id, p.resume_code, p.code) == (1234.5, None, None, "OLD1")
    assert export_trials(url, tmp_path / "o", include_incomplete=True) == (1, 0)
    assert (tmp_path / "o" / "participants.csv").read_text().splitlines()[1].startswith("OLD1,")


def test_export_is_the_documented_schema_row_by_row(tmp_path):
    from causalplay.data import PARTICIPANT_COLUMNS, TEST_COLUMNS, load_trials

    url = f"sqlite:///{tmp_path / 'b.db'}"
    want = _fill(open_db(url))
    assert export_trials(url, tmp_path / "out") == (8, sum(len(w["tests"]) for w in want.values() if w["done"]))
    with open(tmp_path / "out" / "participants.csv") as f:
        header = next(csv.reader(f))
    assert set(PARTICIPANT_COLUMNS) <= set(header)
    with open(tmp_path / "out" / "tests.csv") as f:
        assert set(TEST_COLUMNS) <= set(next(csv.reader(f)))
    data = load_trials(tmp_path / "out", n_objects=4, impossible="raise")
    assert data.ids == [f"P{k:02d}" for k in range(8)]  # the unfinished P08 is left out
    for _, r in data.participants.iterrows():
        w = want[r["participant"]]
        assert r["rule"] == w["rule"] and r["true_blickets"] == w["blickets"]
        assert r["judged_blickets"] == w["judged"] and r["rule_choice"] == w["choice"]
        assert r["blickets_correct"] == (w["judged"] == w["blickets"])
        assert r["rule_correct"] == (w["choice"] == w["rule"])
        assert r["n_tests"] == len(w["tests"])
        assert r["round_seconds"] == pytest.approx(w["end"] - w["t0"], abs=1e-3)
    for pid, g in data.tests.groupby("participant"):
        w = want[pid]
        assert list(g["test"]) == list(range(1, len(w["tests"]) + 1))
        assert [tuple(o) for o in g["objects_on"]] == [on for on, _, _ in w["tests"]]
        assert list(g["lit"]) == [lit for _, lit, _ in w["tests"]]
        times = [w["t0"]] + [t for _, _, t in w["tests"]]
        assert np.allclose(g["seconds_since_previous"].astype(float), np.diff(times), atol=1e-3)

    n, _ = export_trials(url, tmp_path / "all", include_incomplete=True)
    full = load_trials(tmp_path / "all", n_objects=4)
    assert n == 9 and full.participants.set_index("participant").loc["P08", "completed"] == "false"


def test_export_fits(tmp_path):
    import causalplay
    from causalplay.data import load_trials
    from causalplay.fitting import SVIOptions

    url = f"sqlite:///{tmp_path / 'c.db'}"
    _fill(open_db(url), n=6, seed=1)
    export_trials(url, tmp_path / "out")
    data = load_trials(tmp_path / "out", n_objects=4)
    f = causalplay.fit(data, "random", method="svi", svi=SVIOptions(steps=30, draws=20), seed=0)
    post = f.idata.posterior
    assert list(post.coords["participant"].values) == data.ids
    ll = f.idata.log_likelihood["choice"]
    # one choice per test plus each participant's stop (docs/human-data.md), all finite
    assert ll.sizes["decision"] == len(data.tests) + len(data)
    assert np.isfinite(ll.values).all()


def test_export_refuses_ambiguous_or_unknown_task(tmp_path):
    url = f"sqlite:///{tmp_path / 'd.db'}"
    engine = open_db(url)
    _fill(engine, n=1)
    with Session(engine) as s, s.begin():
        s.add(Participant(code="X", code_source="generated", session_token="tx", task="causalplay/IVRE-v0", slot=0,
                          condition=0, design_seed=0, episode_seed=0, n_objects=9, rule="disjunctive",
                          true_blickets="1", stage="check", check_attempts=0, n_tests=0, consented_at=0.0))
    with pytest.raises(ValueError, match="several tasks"):
        export_trials(url, tmp_path / "o")
    with pytest.raises(ValueError, match="EST"):
        export_trials(url, tmp_path / "o", task="causalplay/EST-v1")
    assert export_trials(url, tmp_path / "o", task="causalplay/Nexiom-v0")[0] == 1
