"""Storage of served sessions: SQLAlchemy 2 tables, Alembic migrations, durable writes and the CSV export.

Four tables (``causalplay/serve/migrations`` creates them; :func:`open_db` upgrades a database to the newest
revision on start):

* ``participants`` -- one row per session: the participant code (``PROLIFIC_PID`` or generated), Prolific's
  ``STUDY_ID`` and ``SESSION_ID``, the id the export carries (a salted hash of the code unless the study asks
  for raw ids), the secret session token held in the browser's cookie and the resume code, the task, the
  consent-order slot and condition, the episode seed, the true world (server side only), the stage reached,
  timestamps (consent, task start, last state change, end), the final judgements and, in an adaptive study, the
  design chosen for the participant (JSON of :meth:`causalplay.design.Design.to_dict`).
* ``tests`` -- one row per panel the participant saw, in order: the task's context panels
  (``source="context"``) or an adaptive design's demonstrations (``source="demonstration"``), both written when
  the session starts, and the participant's own tests (``source="participant"``).
* ``events`` -- an append-only log of every state change (consent, comprehension answers, practice tests,
  tests, resumes, judgement).
* ``ado_states`` -- one row per task of an adaptive study: the JSON state of :mod:`causalplay.design.ado`
  (models, prior, every counted participant's log marginal likelihoods) and a version number bumped by every
  write (:mod:`causalplay.serve.adaptive`).

Durability: every request that changes state runs in one transaction that is committed before the response is
sent. SQLite is opened in WAL mode with ``synchronous=FULL`` and every transaction starts with
``BEGIN IMMEDIATE`` (so concurrent writers wait for the lock instead of failing on an upgrade from a read
lock); a server killed with SIGKILL therefore loses nothing it acknowledged.

:func:`export_trials` writes ``participants.csv`` / ``tests.csv`` in the schema of
:func:`causalplay.data.load_trials` (``docs/human-data.md``); :func:`trial_data` reads sessions through the same
rows into a :class:`causalplay.data.TrialData`.
"""

from __future__ import annotations

import csv
import json
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Boolean, Float, ForeignKey, Integer, String, Text, UniqueConstraint, create_engine, event, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

__all__ = ["Base", "Participant", "TrialRow", "Event", "AdoState", "open_db", "make_engine", "upgrade",
           "export_trials", "export_rows", "trial_data", "DEFAULT_DB", "PARTICIPANT_EXPORT_COLUMNS",
           "TEST_EXPORT_COLUMNS"]

#: The default database: a SQLite file in the working folder.
DEFAULT_DB = "sqlite:///causalplay-serve.db"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"

PARTICIPANT_EXPORT_COLUMNS = ("participant", "rule", "true_blickets", "judged_blickets", "blickets_correct",
                              "rule_choice", "rule_correct", "n_tests", "n_objects", "round_seconds", "completed",
                              "task", "condition", "episode_seed", "comprehension_attempts", "started_at",
                              "finished_at", "n_blickets", "max_tests")
TEST_EXPORT_COLUMNS = ("participant", "test", "objects_on", "lit", "seconds_since_previous", "source")


class Base(DeclarativeBase):
    pass


class Participant(Base):
    __tablename__ = "participants"
    __table_args__ = (UniqueConstraint("task", "slot", name="uq_participants_task_slot"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    code: Mapped[str] = mapped_column(String(128), unique=True, nullable=False)
    code_source: Mapped[str] = mapped_column(String(16), nullable=False)  # "prolific" or "generated"
    session_token: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    task: Mapped[str] = mapped_column(String(64), nullable=False)  # environment id, e.g. causalplay/Nexiom-v0
    slot: Mapped[int] = mapped_column(Integer, nullable=False)  # 0, 1, ... order of assignment within the task
    condition: Mapped[int] = mapped_column(Integer, nullable=False)  # index into the task's condition list
    design_seed: Mapped[int] = mapped_column(Integer, nullable=False)
    episode_seed: Mapped[int] = mapped_column(Integer, nullable=False)
    n_objects: Mapped[int] = mapped_column(Integer, nullable=False)
    rule: Mapped[str] = mapped_column(String(32), nullable=False)  # hidden until the judgement is stored
    true_blickets: Mapped[str] = mapped_column(String(64), nullable=False)  # hidden likewise
    stage: Mapped[str] = mapped_column(String(16), nullable=False)  # check, task, done
    check_attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    n_tests: Mapped[int] = mapped_column(Integer, nullable=False, default=0)  # rows in tests (context included)
    consented_at: Mapped[float] = mapped_column(Float, nullable=False)  # unix seconds
    task_started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    finished_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    judged_blickets: Mapped[str | None] = mapped_column(String(64), nullable=True)
    rule_choice: Mapped[str | None] = mapped_column(String(32), nullable=True)
    # revision 0002: recoverable sessions, Prolific ids, pseudonymous export, abandonment by idle time
    resume_code: Mapped[str | None] = mapped_column(String(16), nullable=True)
    export_id: Mapped[str | None] = mapped_column(String(128), nullable=True)  # None (older rows): the code
    study_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    session_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    last_active_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    # revision 0003: the design an adaptive study chose at consent (JSON of Design.to_dict); None otherwise
    design: Mapped[str | None] = mapped_column(Text, nullable=True)
    # revision 0004: the participant's test budget (own tests allowed), so that a fit reads a stop at the budget as
    # forced; None on older rows
    max_tests: Mapped[int | None] = mapped_column(Integer, nullable=True)

    tests: Mapped[list[TrialRow]] = relationship(back_populates="participant", order_by="TrialRow.test")


class TrialRow(Base):
    __tablename__ = "tests"
    __table_args__ = (UniqueConstraint("participant_id", "test", name="uq_tests_participant_test"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    participant_id: Mapped[int] = mapped_column(ForeignKey("participants.id"), nullable=False, index=True)
    test: Mapped[int] = mapped_column(Integer, nullable=False)  # 1-based, context panels first
    objects_on: Mapped[str] = mapped_column(String(64), nullable=False)  # space-separated indices
    lit: Mapped[bool] = mapped_column(Boolean, nullable=False)
    source: Mapped[str] = mapped_column(String(16), nullable=False)  # "context", "demonstration" or "participant"
    created_at: Mapped[float] = mapped_column(Float, nullable=False)

    participant: Mapped[Participant] = relationship(back_populates="tests")


class Event(Base):
    __tablename__ = "events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    participant_id: Mapped[int | None] = mapped_column(ForeignKey("participants.id"), nullable=True, index=True)
    kind: Mapped[str] = mapped_column(String(32), nullable=False)
    payload: Mapped[str] = mapped_column(Text, nullable=False, default="{}")  # JSON
    created_at: Mapped[float] = mapped_column(Float, nullable=False)


class AdoState(Base):
    """The sequential-ADO state of an adaptive study's task (revision 0003): the single source of truth that every
    server process reads at consent and updates, version-checked, when participants finish."""

    __tablename__ = "ado_states"

    task: Mapped[str] = mapped_column(String(64), primary_key=True)  # environment id
    state: Mapped[str] = mapped_column(Text, nullable=False)  # JSON of causalplay.design.ado's state
    n_participants: Mapped[int] = mapped_column(Integer, nullable=False)  # participants the state counts
    version: Mapped[int] = mapped_column(Integer, nullable=False)  # +1 per write
    updated_at: Mapped[float] = mapped_column(Float, nullable=False)


def log_event(session: Session, participant: Participant, kind: str, **payload) -> None:
    """Append one event (inside the caller's transaction); it is the participant's latest activity."""
    participant.last_active_at = now = time.time()
    session.add(Event(participant_id=participant.id, kind=kind, payload=json.dumps(payload, sort_keys=True),
                      created_at=now))


def make_engine(url: str, *, write: bool = True) -> Engine:
    """An engine for ``url`` with durable, concurrency-safe settings for SQLite (see the module docstring).

    ``write=False`` gives an engine for read-only requests: on SQLite its transactions start with a plain
    (deferred) ``BEGIN``, so pages are read from a WAL snapshot without waiting for the write lock.
    """
    if not isinstance(url, str) or "://" not in url:
        raise ValueError(f"db must be an SQLAlchemy URL such as 'sqlite:///study.db' or "
                         f"'postgresql+psycopg://user@host/db', got {url!r}")
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 60})

        @event.listens_for(engine, "connect")
        def _sqlite_connect(dbapi_conn, _record):
            # Let SQLAlchemy's "begin" hook below emit BEGIN itself (pysqlite would defer it).
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON", "busy_timeout=60000"):
                cur.execute(f"PRAGMA {pragma}")
            cur.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn):
            # IMMEDIATE takes the write lock at the start, so two writers queue on busy_timeout instead of one
            # failing with "database is locked" when it upgrades a read transaction.
            conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply the Alembic migrations in ``causalplay/serve/migrations`` up to ``revision``."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def open_db(url: str = DEFAULT_DB) -> Engine:
    """An engine on ``url`` with the schema migrated to the newest revision."""
    engine = make_engine(url)
    upgrade(engine)
    return engine


def _iso(t: float | None) -> str:
    return "" if t is None else datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")


def _fmt(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def export_trials(db: str | Engine, out: str | Path, *, task: str | None = None,
                  include_incomplete: bool = False) -> tuple[int, int]:
    """Write ``participants.csv`` and ``tests.csv`` (the :func:`causalplay.data.load_trials` schema) to ``out``.

    Parameters
    ----------
    db : str or Engine
        SQLAlchemy URL of a ``causalplay serve`` database (or an engine on one).
    out : path
        Folder to write; created if missing.
    task : str, optional
        Environment id to export (e.g. ``causalplay/Nexiom-v0``); required when the database holds several.
    include_incomplete : bool
        Also write sessions without a final judgement (``completed`` false, judgement columns empty: an empty
        ``rule_choice`` is a missing judgement, but an empty ``judged_blickets`` reads as "none", so analyses
        must filter on ``completed``).

    Returns
    -------
    (participants written, test rows written)
    """
    engine = db if isinstance(db, Engine) else make_engine(db)
    with Session(engine) as s, s.begin():
        tasks = sorted(set(s.scalars(select(Participant.task)).all()))
        if task is None and len(tasks) > 1:
            raise ValueError(f"the database holds several tasks {tasks}; pass task= (--task) to pick one")
        if task is not None and task not in tasks:
            raise ValueError(f"task {task!r} has no sessions in this database; it holds {tasks}")
        q = select(Participant).order_by(Participant.slot)
        if task is not None:
            q = q.where(Participant.task == task)
        rows = [p for p in s.scalars(q).all() if include_incomplete or p.stage == "done"]
        prow, trow = export_rows(rows)
    return _write_export(Path(out), prow, trow)


def export_rows(participants) -> tuple[list[dict], list[dict]]:
    """The export's rows of ``participants`` (:class:`Participant` objects of an open session, their tests
    loaded on access): ``(participants.csv rows, tests.csv rows)`` as dicts keyed by the export columns.

    An adaptive participant's demonstrations are ``source=demonstration`` rows before their own tests.
    ``n_blickets`` is the blicket count the participant was told: the task's (every served task tells it), or an
    adaptive design's (empty where the design does not tell it).
    """
    prow, trow = [], []
    for p in participants:
        done, pid = p.stage == "done", p.export_id or p.code
        judged = p.judged_blickets if done else ""
        choice = (p.rule_choice or "") if done else ""
        # every served task tells its blicket count (the check page asks for it) unless an adaptive design does not
        told = json.loads(p.design).get("n_blickets_told") if p.design else len(p.true_blickets.split())
        prow.append({
            "participant": pid, "rule": p.rule, "true_blickets": p.true_blickets, "judged_blickets": judged,
            "blickets_correct": str(set(judged.split()) == set(p.true_blickets.split())).lower(),
            "rule_choice": choice, "rule_correct": str(choice == p.rule).lower(),
            "n_tests": len(p.tests), "n_objects": p.n_objects,
            "round_seconds": _fmt(p.finished_at - p.task_started_at) if done and p.task_started_at else "",
            "completed": str(done).lower(), "task": p.task, "condition": p.condition,
            "episode_seed": p.episode_seed, "comprehension_attempts": p.check_attempts,
            "started_at": _iso(p.consented_at), "finished_at": _iso(p.finished_at),
            "n_blickets": "" if told is None else told, "max_tests": "" if p.max_tests is None else p.max_tests})
        prev = p.task_started_at
        for t in p.tests:
            since = None
            if t.source == "participant":
                since = None if prev is None else max(t.created_at - prev, 0.0)
                prev = t.created_at
            trow.append({"participant": pid, "test": t.test, "objects_on": t.objects_on,
                         "lit": str(bool(t.lit)).lower(), "seconds_since_previous": _fmt(since),
                         "source": t.source})
    return prow, trow


def _write_export(out: Path, prow: list[dict], trow: list[dict]) -> tuple[int, int]:
    out.mkdir(parents=True, exist_ok=True)
    # Incomplete rows (include_incomplete) have empty judgements, so their correctness columns read false;
    # load_trials accepts them, and the completed column tells them apart.
    for name, cols, data in (("participants.csv", PARTICIPANT_EXPORT_COLUMNS, prow),
                             ("tests.csv", TEST_EXPORT_COLUMNS, trow)):
        with open(out / name, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
            w.writeheader()
            w.writerows(data)
    return len(prow), len(trow)


def trial_data(participants):
    """The :class:`causalplay.data.TrialData` of ``participants`` (finished :class:`Participant` objects of an open
    session) exactly as :func:`export_trials` writes them and :func:`causalplay.data.load_trials` reads them back
    (through a temporary folder, so the server and an analysis of the export see the same data)."""
    from causalplay.data import load_trials

    prow, trow = export_rows(participants)
    with tempfile.TemporaryDirectory() as tmp:
        _write_export(Path(tmp), prow, trow)
        return load_trials(tmp)
