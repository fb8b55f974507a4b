"""The FastAPI application of ``causalplay serve`` (server-rendered Jinja pages, htmx for the test loop).

Participant flow: ``GET /`` (consent and instructions; ``?PROLIFIC_PID=`` names the participant) ->
``POST /consent`` (creates the session, assigns the condition) -> ``/check`` (comprehension check) -> ``/task``
(context panels, then tests: ``POST /test``) -> ``/judge`` (which objects are blickets, which rule) ->
``/debrief`` (the truth, shown only once the judgement is stored). Every page works without JavaScript
(plain forms, POST-redirect-GET); htmx only swaps the task panel in place after a test.

Experimenter: ``/admin`` (participants, completion) and ``/admin/export.zip`` (the CSV export), both needing
the admin token (``Authorization: Bearer TOKEN`` or ``?token=TOKEN``).

Security: the session cookie is a random token (HttpOnly, SameSite=Lax, so another site cannot submit forms in
the participant's name); pages before the judgement are rendered from public data only (the objects, the
context panels, the tests so far) -- the hidden rule and blickets are read only by the debrief; every state
change checks the stage and the expected test number (``seq``) so a replayed or out-of-order request is
answered 409 and changes nothing; malformed input is answered 400/422 and changes nothing; each session may
submit at most ``rate_burst`` requests at once and ``rate_per_s`` per second after that (429).
"""

from __future__ import annotations

import contextlib
import re
import secrets
import threading
import time
from dataclasses import dataclass
from importlib import resources

from fastapi import FastAPI, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from . import render
from .store import DEFAULT_DB, Participant, TrialRow, log_event, make_engine, open_db
from .tasks import ServedTask, assign_condition, episode_seed, get_task

__all__ = ["ServeConfig", "create_app"]

COOKIE = "cp_session"
_SLOT_LOCK = 0x6361_7573_616C  # advisory-lock key for slot assignment on Postgres ("causal")
PID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass
class ServeConfig:
    """Settings of one server.

    Parameters
    ----------
    db : str
        SQLAlchemy URL (default: SQLite file ``causalplay-serve.db`` in the working folder).
    task : str
        ``nexiom``, ``ivre`` or ``est``.
    seed : int
        Design seed: the counterbalanced condition order and every participant's episode seed derive from it.
    admin_token : str
        Token for the admin pages; a random one is made (and printed by the CLI) when empty.
    rate_per_s, rate_burst : float, int
        Per-session token bucket for requests that change state (tests, answers).
    new_sessions_per_s, new_sessions_burst : float, int
        Per-client-address token bucket for starting sessions.
    completion_url : str
        Shown on the debrief page (e.g. Prolific's completion link); empty for none.
    secure_cookie : bool
        Mark the session cookie Secure (set it when served over HTTPS).
    """

    db: str = DEFAULT_DB
    task: str = "nexiom"
    seed: int = 0
    admin_token: str = ""
    rate_per_s: float = 5.0
    rate_burst: int = 10
    new_sessions_per_s: float = 2.0
    new_sessions_burst: int = 60
    completion_url: str = ""
    secure_cookie: bool = False

    def __post_init__(self):
        if not self.admin_token:
            self.admin_token = secrets.token_urlsafe(24)
        elif len(self.admin_token) < 16:
            raise ValueError(f"admin_token must have at least 16 characters, got {len(self.admin_token)}")
        for name in ("rate_per_s", "new_sessions_per_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("rate_burst", "new_sessions_burst"):
            if not (isinstance(getattr(self, name), int) and getattr(self, name) >= 1):
                raise ValueError(f"{name} must be an integer >= 1, got {getattr(self, name)!r}")


class RateLimiter:
    """Token buckets by key (in memory: a restart refills them, which only ever lets more through)."""

    def __init__(self, rate: float, burst: int):
        self.rate, self.burst = rate, burst
        self._b: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def allow(self, key: str) -> bool:
        now = time.monotonic()
        with self._lock:
            tokens, last = self._b.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate)
            ok = tokens >= 1.0
            self._b[key] = (tokens - 1.0 if ok else tokens, now)
            return ok


class HTTPProblem(Exception):
    def __init__(self, status: int, message: str, headers: dict | None = None):
        self.status, self.message, self.headers = status, message, headers or {}


def _fmt_set(idx) -> str:
    return " ".join(str(i) for i in sorted(idx))


def _parse_objects(values: list[str], n: int, what: str) -> tuple[int, ...]:
    out = []
    for v in values:
        if not (isinstance(v, str) and v.isdigit() and int(v) < n):
            raise HTTPProblem(422, f"{what}: {v!r} is not an object number 0..{n - 1}")
        out.append(int(v))
    if len(set(out)) != len(out):
        raise HTTPProblem(422, f"{what}: an object is listed twice ({out})")
    return tuple(sorted(out))


def create_app(config: ServeConfig | None = None) -> FastAPI:
    """The application for ``config`` (the database is migrated to the newest schema first)."""
    cfg = config or ServeConfig()
    import torch

    # The Task steps one row at a time: tensors of a few numbers, where extra intra-op threads only contend.
    torch.set_num_threads(1)
    task: ServedTask = get_task(cfg.task)
    engine = open_db(cfg.db)
    sqlite = engine.dialect.name == "sqlite"
    reader = make_engine(cfg.db, write=False) if sqlite else engine
    # SQLite has one writer at a time; queueing writers on a lock in this process wakes the next one at once,
    # where SQLite's own busy handler polls with sleeps of up to 100 ms (long tails under load).
    write_lock = threading.Lock() if sqlite else contextlib.nullcontext()

    @contextlib.contextmanager
    def writing():
        with write_lock, Session(engine) as s, s.begin():
            yield s
    templates = Jinja2Templates(directory=str(resources.files(__package__) / "templates"))
    templates.env.globals.update(render=render, task_name=task.name)
    app = FastAPI(title="causalplay serve", docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(directory=str(resources.files(__package__) / "static")), name="static")
    app.state.config, app.state.engine, app.state.task = cfg, engine, task
    limiter = RateLimiter(cfg.rate_per_s, cfg.rate_burst)
    new_limiter = RateLimiter(cfg.new_sessions_per_s, cfg.new_sessions_burst)

    def page(request: Request, name: str, status: int = 200, **ctx) -> HTMLResponse:
        resp = templates.TemplateResponse(request, name, {"task": task, **ctx}, status_code=status)
        resp.headers["Cache-Control"] = "no-store"
        return resp

    @app.exception_handler(HTTPProblem)
    def _problem(request: Request, exc: HTTPProblem):
        resp = page(request, "error.html", status=exc.status, message=exc.message)
        for k, v in exc.headers.items():
            resp.headers[k] = v
        return resp

    def redirect(url: str) -> RedirectResponse:
        return RedirectResponse(url, status_code=303)

    def participant(s: Session, request: Request, *, lock: bool = False) -> Participant:
        token = request.cookies.get(COOKIE)
        if not token:
            raise HTTPProblem(401, "No session: open the study link again to start.")
        q = select(Participant).where(Participant.session_token == token)
        if lock and engine.dialect.name != "sqlite":
            q = q.with_for_update()  # SQLite's BEGIN IMMEDIATE already serialises writers
        p = s.scalars(q).first()
        if p is None:
            raise HTTPProblem(401, "Unknown session: open the study link again to start.")
        return p

    def throttle(request: Request) -> None:
        key = request.cookies.get(COOKIE) or (request.client.host if request.client else "?")
        if not limiter.allow(key):
            raise HTTPProblem(429, "Too many requests; please wait a moment.", {"Retry-After": "1"})

    def stage_url(p: Participant) -> str:
        return {"check": "/check", "task": "/task", "done": "/debrief"}[p.stage]

    def public_view(p: Participant) -> dict:
        """What the participant may see before judging: no rule, no blickets."""
        w = task.world(p.condition, p.episode_seed)
        rows = [(tuple(int(i) for i in t.objects_on.split()), bool(t.lit), t.source) for t in p.tests]
        own = [(on, lit) for on, lit, src in rows if src == "participant"]
        return {"n_objects": w.n_objects, "n_blickets": w.n_blickets, "objects": w.objects,
                "context": w.context, "tests": own, "seq": p.n_tests + 1, "max_tests": w.max_tests,
                "tests_left": w.max_tests - len(own)}

    # -- participant --------------------------------------------------------------------------------------
    @app.get("/", response_class=HTMLResponse)
    def consent_page(request: Request, PROLIFIC_PID: str | None = None):
        if PROLIFIC_PID is not None and not PID_RE.match(PROLIFIC_PID):
            raise HTTPProblem(400, "PROLIFIC_PID must be 1-64 letters, digits, '-' or '_'.")
        with Session(reader) as s, s.begin():
            token = request.cookies.get(COOKIE)
            mine = s.scalars(select(Participant).where(Participant.session_token == token)).first() if token \
                else None
            if mine is not None and (PROLIFIC_PID is None or mine.code == PROLIFIC_PID):
                return redirect(stage_url(mine))
            if PROLIFIC_PID is not None and s.scalars(
                    select(Participant.id).where(Participant.code == PROLIFIC_PID)).first() is not None:
                raise HTTPProblem(409, "This participant ID has already started the study; it can be taken "
                                       "only once.")
        w = task.world(0, 0)
        return page(request, "consent.html", pid=PROLIFIC_PID or "", n_objects=w.n_objects,
                    max_tests=task.max_tests)

    @app.post("/consent")
    def consent(request: Request, consent: str = Form(""), pid: str = Form("")):
        if consent != "yes":
            raise HTTPProblem(400, "Please tick the consent box to take part.")
        if pid and not PID_RE.match(pid):
            raise HTTPProblem(400, "The participant ID must be 1-64 letters, digits, '-' or '_'.")
        host = request.client.host if request.client else "?"
        if not new_limiter.allow(host):
            raise HTTPProblem(429, "Too many new sessions from this address; please wait.", {"Retry-After": "5"})
        token = secrets.token_urlsafe(32)
        code, source = (pid, "prolific") if pid else ("gen-" + secrets.token_hex(8), "generated")
        for _attempt in range(20):
            try:
                with writing() as s:
                    if engine.dialect.name == "postgresql":
                        # Slots are counted, so concurrent consents must take turns (across server processes
                        # too): a transaction-scoped advisory lock, released at commit.
                        s.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SLOT_LOCK})
                    if s.scalars(select(Participant.id).where(Participant.code == code)).first() is not None:
                        raise HTTPProblem(409, "This participant ID has already started the study; it can be "
                                               "taken only once.")
                    slot = s.scalar(select(func.count()).select_from(Participant)
                                    .where(Participant.task == task.env_id))
                    cond = assign_condition(cfg.seed, slot, len(task.conditions))
                    seed = episode_seed(cfg.seed, slot)
                    w = task.world(cond, seed)
                    p = Participant(code=code, code_source=source, session_token=token, task=task.env_id,
                                    slot=slot, condition=cond, design_seed=cfg.seed, episode_seed=seed,
                                    n_objects=w.n_objects, rule=w.rule, true_blickets=_fmt_set(w.blickets),
                                    stage="check", check_attempts=0, n_tests=0, consented_at=time.time())
                    s.add(p)
                    s.flush()
                    for k, (on, lit) in enumerate(w.context, start=1):
                        s.add(TrialRow(participant_id=p.id, test=k, objects_on=_fmt_set(on), lit=lit,
                                   source="context", created_at=p.consented_at))
                    p.n_tests = len(w.context)
                    log_event(s, p, "consent", slot=slot, condition=cond, code_source=source)
                break
            except IntegrityError:
                # Another session took this slot or this code at the same moment (possible only where the
                # database does not serialise consents): look again.
                continue
        else:
            raise HTTPProblem(503, "The server is busy; please try again.")
        resp = redirect("/check")
        resp.set_cookie(COOKIE, token, httponly=True, samesite="lax", secure=cfg.secure_cookie,
                        max_age=7 * 24 * 3600)
        return resp

    @app.get("/check", response_class=HTMLResponse)
    def check_page(request: Request):
        with Session(reader) as s, s.begin():
            p = participant(s, request)
            if p.stage != "check":
                return redirect(stage_url(p))
            w = task.world(p.condition, p.episode_seed)
            return page(request, "check.html", attempts=p.check_attempts, n_blickets=w.n_blickets,
                        n_objects=w.n_objects, max_tests=w.max_tests, wrong=request.query_params.get("wrong"))

    @app.post("/check")
    def check(request: Request, how: str = Form(""), count: str = Form(""), when: str = Form("")):
        throttle(request)
        with writing() as s:
            p = participant(s, request, lock=True)
            if p.stage != "check":
                raise HTTPProblem(409, "The comprehension check was already passed.")
            if how not in ("test", "ask", "guess") or when not in ("ready", "once", "never") \
                    or not count.strip().isdigit():
                raise HTTPProblem(422, "Please answer every question of the comprehension check.")
            w = task.world(p.condition, p.episode_seed)
            ok = how == "test" and when == "ready" and int(count) == w.n_blickets
            p.check_attempts += 1
            log_event(s, p, "check", how=how, count=count, when=when, passed=ok)
            if ok:
                p.stage = "task"
                p.task_started_at = time.time()
        return redirect("/task" if ok else "/check?wrong=1")

    @app.get("/task", response_class=HTMLResponse)
    def task_page(request: Request):
        with Session(reader) as s, s.begin():
            p = participant(s, request)
            if p.stage != "task":
                return redirect(stage_url(p))
            return page(request, "task.html", **public_view(p))

    @app.post("/test")
    def run_test(request: Request, seq: str = Form(""), objects: list[str] = Form([])):
        throttle(request)
        with writing() as s:
            p = participant(s, request, lock=True)
            if p.stage != "task":
                raise HTTPProblem(409, "Tests can only be run during the task.")
            if not seq.isdigit():
                raise HTTPProblem(422, f"seq must be the test number, got {seq!r}")
            if int(seq) != p.n_tests + 1:
                raise HTTPProblem(409, f"This test was already submitted (expected test {p.n_tests + 1}, "
                                       f"got {seq}).")
            trial = _parse_objects(objects, p.n_objects, "objects")
            past = [tuple(int(i) for i in t.objects_on.split()) for t in p.tests if t.source == "participant"]
            if len(past) >= task.max_tests:
                raise HTTPProblem(409, f"All {task.max_tests} tests are used; please give your answer.")
            lit = task.outcome(p.condition, p.episode_seed, past, trial)
            p.n_tests += 1
            s.add(TrialRow(participant_id=p.id, test=p.n_tests, objects_on=_fmt_set(trial), lit=lit,
                       source="participant", created_at=time.time()))
            log_event(s, p, "test", test=p.n_tests, objects_on=list(trial), lit=lit)
            s.flush()
            s.refresh(p)
            view = public_view(p)
        if request.headers.get("HX-Request"):
            return page(request, "_panel.html", **view)
        return redirect("/task")

    @app.get("/judge", response_class=HTMLResponse)
    def judge_page(request: Request):
        with Session(reader) as s, s.begin():
            p = participant(s, request)
            if p.stage != "task":
                return redirect(stage_url(p))
            view = public_view(p)
            if not view["tests"]:
                return redirect("/task?need_test=1")
            return page(request, "judge.html", **view)

    @app.post("/judge")
    def judge(request: Request, blickets: list[str] = Form([]), rule: str = Form("")):
        throttle(request)
        with writing() as s:
            p = participant(s, request, lock=True)
            if p.stage != "task":
                raise HTTPProblem(409, "The answer was already given." if p.stage == "done"
                                  else "The task has not started yet.")
            if not any(t.source == "participant" for t in p.tests):
                raise HTTPProblem(409, "Please run at least one test before answering.")
            judged = _parse_objects(blickets, p.n_objects, "blickets")
            if rule not in task.rule_names:
                raise HTTPProblem(422, f"rule must be one of {list(task.rule_names)}, got {rule!r}")
            p.judged_blickets, p.rule_choice = _fmt_set(judged), rule
            p.stage, p.finished_at = "done", time.time()
            log_event(s, p, "judge", blickets=list(judged), rule=rule)
        return redirect("/debrief")

    @app.get("/debrief", response_class=HTMLResponse)
    def debrief(request: Request):
        with Session(reader) as s, s.begin():
            p = participant(s, request)
            if p.stage != "done":
                return redirect(stage_url(p))
            # Only here, once the judgement is stored, is the truth read and shown.
            truth = [int(i) for i in p.true_blickets.split()]
            judged = [int(i) for i in p.judged_blickets.split()]
            w = task.world(p.condition, p.episode_seed)
            return page(request, "debrief.html", truth=truth, judged=judged, rule=p.rule, rule_choice=p.rule_choice,
                        objects=w.objects, n_objects=w.n_objects, code=p.code, completion_url=cfg.completion_url)

    # -- experimenter -------------------------------------------------------------------------------------
    def require_admin(request: Request) -> None:
        auth = request.headers.get("Authorization", "")
        given = auth[7:] if auth.startswith("Bearer ") else request.query_params.get("token", "")
        if not given or not secrets.compare_digest(given.encode(), cfg.admin_token.encode()):
            raise HTTPProblem(401, "The admin pages need the admin token.", {"WWW-Authenticate": "Bearer"})

    @app.get("/admin", response_class=HTMLResponse)
    def admin(request: Request):
        require_admin(request)
        with Session(reader) as s, s.begin():
            ps = s.scalars(select(Participant).order_by(Participant.task, Participant.slot)).all()
            rows = [{"code": p.code, "task": p.task, "slot": p.slot, "condition": p.condition, "stage": p.stage,
                     "n_tests": sum(t.source == "participant" for t in p.tests),
                     "started": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(p.consented_at)),
                     "minutes": "" if p.finished_at is None else f"{(p.finished_at - p.consented_at) / 60:.1f}"}
                    for p in ps]
        done = sum(r["stage"] == "done" for r in rows)
        counts = {}
        for r in rows:
            counts[r["condition"]] = counts.get(r["condition"], 0) + 1
        return page(request, "admin.html", rows=rows, done=done, counts=sorted(counts.items()),
                    token=request.query_params.get("token", ""), conditions=task.conditions)

    @app.get("/admin/export.zip")
    def admin_export(request: Request, include_incomplete: bool = False):
        require_admin(request)
        import io
        import tempfile
        import zipfile
        from pathlib import Path

        from .store import export_trials

        with tempfile.TemporaryDirectory() as tmp:
            export_trials(engine, tmp, task=task.env_id if _has_task(engine, task.env_id) else None,
                          include_incomplete=include_incomplete)
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
                for name in ("participants.csv", "tests.csv"):
                    z.write(Path(tmp) / name, name)
        return Response(buf.getvalue(), media_type="application/zip",
                        headers={"Content-Disposition": 'attachment; filename="causalplay-export.zip"',
                                 "Cache-Control": "no-store"})

    @app.get("/healthz")
    def healthz():
        return {"ok": True, "task": task.env_id}

    return app


def _has_task(engine, env_id: str) -> bool:
    with Session(engine) as s, s.begin():
        return s.scalars(select(Participant.id).where(Participant.task == env_id)).first() is not None
