"""What the routers of ``causalplay serve`` share: the settings (:class:`ServeConfig`), the per-app
:class:`Runtime`, the request dependencies (:data:`Rt`, :data:`Reads`, :data:`Writes`, :func:`require_admin`), the
checks of request values (:func:`number`, :func:`objects_of`, :func:`ids_of`) and :class:`HTTPProblem`.

A module of its own so that :mod:`~causalplay.serve.flow` and :mod:`~causalplay.serve.admin` depend on it, not on
the application that includes them (:mod:`~causalplay.serve.app`).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import re
import secrets
import threading
import time
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from sqlalchemy import select
from sqlalchemy.orm import Session

from . import render
from .adaptive import Adaptive
from .store import DEFAULT_DB, Participant, make_engine, open_db
from .study import Study, load_study, markdown
from .tasks import ServedTask

__all__ = ["ServeConfig", "Runtime", "HTTPProblem", "Db", "Rt", "Reads", "Writes", "require_admin", "throttle",
           "runtime", "participant", "number", "objects_of", "ids_of", "COOKIE", "ADMIN_COOKIE", "ID_RE"]

COOKIE, ADMIN_COOKIE = "cp_session", "cp_admin"
ID_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")  # Prolific ids and generated codes; always fullmatch (no "\n")
NUMBER_RE = re.compile(r"[0-9]{1,4}")
ROOT_PATH_RE = re.compile(r"(/[A-Za-z0-9._~-]+)+")  # "/blicket", "/lab/blicket"; no "//", no trailing "/"


@dataclass
class ServeConfig:
    """Settings of one server.

    Parameters
    ----------
    db : str
        SQLAlchemy URL (default: SQLite file ``causalplay-serve.db`` in the working folder).
    task : str
        ``nexiom``, ``ivre`` or ``est``; overrides the study's (default: the study's, else ``nexiom``).
    seed : int
        Design seed: the counterbalanced condition order and every participant's episode seed derive from it.
    admin_token : str
        Token for the admin pages; a random one is made (and printed by the CLI) when empty.
    rate_per_s, rate_burst : float, int
        Per-session token bucket for requests that change state (tests, answers).
    new_sessions_per_s, new_sessions_burst : float, int
        Per-client-address token bucket for starting (or resuming) sessions.
    completion_url : str
        Overrides the study's completion link shown on the debrief page.
    secure_cookie : bool
        Mark the cookies Secure (set it when served over HTTPS).
    root_path : str
        The path prefix the server is reached at behind a reverse proxy (``/blicket`` for
        ``https://host/blicket/``; empty: the root). Pages, redirects and cookies use it; routes match with or without
        the prefix, so the proxy may strip it or pass it on.
    study : Study, path or None
        The study (:class:`causalplay.serve.study.Study`) or its TOML file; ``None``: the defaults.
    """

    db: str = DEFAULT_DB
    task: str = ""
    seed: int = 0
    admin_token: str = ""
    rate_per_s: float = 5.0
    rate_burst: int = 10
    new_sessions_per_s: float = 2.0
    new_sessions_burst: int = 60
    completion_url: str = ""
    secure_cookie: bool = False
    root_path: str = ""
    study: Study | str | Path | None = None

    def __post_init__(self):
        if not self.admin_token:
            self.admin_token = secrets.token_urlsafe(24)
        elif len(self.admin_token) < 16:
            raise ValueError(f"admin_token must have at least 16 characters, got {len(self.admin_token)}")
        for name in ("rate_per_s", "new_sessions_per_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if self.root_path and not ROOT_PATH_RE.fullmatch(self.root_path):
            raise ValueError(f"root_path must be empty or start with '/' and not end with one, in letters, digits and "
                             f"'-._~/' (e.g. '/blicket'), got {self.root_path!r}")
        for name in ("rate_burst", "new_sessions_burst"):
            if not (isinstance(getattr(self, name), int) and getattr(self, name) >= 1):
                raise ValueError(f"{name} must be an integer >= 1, got {getattr(self, name)!r}")
        st = self.study if isinstance(self.study, Study) else load_study(self.study) if self.study else Study()
        self.study = replace(st, **{k: v for k, v in (("task", self.task), ("completion_url", self.completion_url))
                                    if v})


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


def number(v, what: str, below: int = 10_000) -> int:
    """``v`` as an int in ``0..below-1`` written with 1-4 ASCII digits, else 422."""
    if not (isinstance(v, str) and NUMBER_RE.fullmatch(v) and int(v) < below):
        raise HTTPProblem(422, f"{what}: {str(v)[:12]!r} is not a number 0..{below - 1}")
    return int(v)


def objects_of(values: list[str], n: int, what: str) -> tuple[int, ...]:
    """Distinct object numbers ``0..n-1``, sorted, else 422."""
    out = [number(v, what, n) for v in values]
    if len(set(out)) != len(out):
        raise HTTPProblem(422, f"{what}: an object is listed twice ({out})")
    return tuple(sorted(out))


def ids_of(**given: str | None) -> dict[str, str]:
    """The given (non-empty) participant/study/session ids, each checked against :data:`ID_RE` (else 400)."""
    for name, v in given.items():
        if v and not ID_RE.fullmatch(v):
            raise HTTPProblem(400, f"{name} must be 1-64 letters, digits, '-' or '_'.")
    return {k: v for k, v in given.items() if v}


class Runtime:
    """What every request needs, built once per app: settings, the task, database engines, templates, limits."""

    def __init__(self, cfg: ServeConfig):
        import torch

        # The Task steps one row at a time: tensors of a few numbers, where extra intra-op threads only contend.
        torch.set_num_threads(1)
        self.cfg, self.study = cfg, cfg.study
        st = cfg.study
        self.task = ServedTask(st.task, st.conditions, st.max_tests, st.randomise_rule)
        #: the adaptive study's server side (None: conditions counterbalanced); its worlds are the conditions
        self.adaptive: Adaptive | None = None
        if st.adaptive is not None:
            self.adaptive = Adaptive(st.adaptive, self.task)
            self.task = ServedTask(st.task, self.adaptive.conditions(), st.max_tests, st.randomise_rule)
        self.engine = open_db(cfg.db)
        sqlite = self.engine.dialect.name == "sqlite"
        self.reader = make_engine(cfg.db, write=False) if sqlite else self.engine
        # SQLite has one writer at a time; queueing writers on a lock in this process wakes the next one at once,
        # where SQLite's own busy handler polls with sleeps of up to 100 ms (long tails under load).
        self.write_lock = threading.Lock() if sqlite else contextlib.nullcontext()
        self.salt = st.id_salt or secrets.token_hex(16)
        self.limiter = RateLimiter(cfg.rate_per_s, cfg.rate_burst)
        self.new_limiter = RateLimiter(cfg.new_sessions_per_s, cfg.new_sessions_burst)
        # the admin cookie proves the token was given once, without holding the token itself
        self.admin_cookie = hmac.new(cfg.admin_token.encode(), b"causalplay-admin", "sha256").hexdigest()
        self.steps = ("Consent", "Questions", *(("Practice",) if st.practice else ()), "Task", "Answer")
        self.templates = Jinja2Templates(directory=str(resources.files(__package__) / "templates"))
        self.templates.env.globals.update(render=render, task=self.task, study=st, md=markdown, steps=self.steps,
                                          root=cfg.root_path)
        if self.adaptive is not None:
            with self.writing() as s:
                self.adaptive.ensure_state(s)
            self.adaptive.catch_up(self)  # participants who finished while no server counted them

    @contextlib.contextmanager
    def writing(self):
        with self.write_lock, Session(self.engine) as s, s.begin():
            yield s

    def page(self, request: Request, name: str, status: int = 200, **ctx) -> HTMLResponse:
        resp = self.templates.TemplateResponse(request, name, ctx, status_code=status)
        resp.headers["Cache-Control"] = "no-store"
        return resp

    def export_id(self, code: str) -> str:
        """The id the export carries: ``code`` itself with ``raw_ids``, else a salted hash of it."""
        return code if self.study.raw_ids else "p" + hashlib.sha256(f"{self.salt}:{code}".encode()).hexdigest()[:16]


def runtime(request: Request) -> Runtime:
    return request.app.state.rt


Rt = Annotated[Runtime, Depends(runtime)]


def participant(s: Session, request: Request, *, lock: bool = False) -> Participant:
    """The participant whose session token the request's cookie holds, else 401."""
    token = request.cookies.get(COOKIE)
    gone = "open the study link again, or continue with your participant ID and resume code at /resume."
    if not token:
        raise HTTPProblem(401, f"This browser has no session of the study: {gone}")
    q = select(Participant).where(Participant.session_token == token)
    if lock and s.get_bind().dialect.name != "sqlite":
        q = q.with_for_update()  # SQLite's BEGIN IMMEDIATE already serialises writers
    p = s.scalars(q).first()
    if p is None:
        raise HTTPProblem(401, f"This session is not open here (it may have continued on another device): {gone}")
    return p


class Db:
    """One request's database access, opened inside the route function (``with db.read() as (s, p):``).

    Not a ``yield`` dependency on purpose: FastAPI may run a dependency and the route in different threads of its
    pool, and neither SQLite's write lock nor a pooled connection may be held across that hop -- with a hundred
    concurrent writers the pool fills with threads waiting for the lock while its holder waits for a thread.
    """

    def __init__(self, request: Request, r: Runtime):
        self.request, self.r = request, r

    @contextlib.contextmanager
    def read(self, who: bool = True):
        """A read-only session and (``who``) the request's participant, else ``None``."""
        with Session(self.r.reader) as s, s.begin():
            yield s, participant(s, self.request) if who else None

    @contextlib.contextmanager
    def write(self):
        """A write transaction and the request's participant, locked; an exception in the block rolls it back."""
        with self.r.writing() as s:
            yield s, participant(s, self.request, lock=True)


def throttle(request: Request, r: Rt) -> Db:
    """The request's :class:`Db` once the per-session rate limit lets the request through, else 429."""
    key = request.cookies.get(COOKIE) or (request.client.host if request.client else "?")
    if not r.limiter.allow(key):
        raise HTTPProblem(429, "Too many requests; please wait a moment.", {"Retry-After": "1"})
    return Db(request, r)


def _reads(request: Request, r: Rt) -> Db:
    return Db(request, r)


Reads = Annotated[Db, Depends(_reads)]
Writes = Annotated[Db, Depends(throttle)]  # after the per-session rate limit


def require_admin(request: Request, r: Rt) -> None:
    """The admin token as ``Authorization: Bearer``, ``?token=`` or the cookie the dashboard sets, else 401."""
    auth = request.headers.get("Authorization", "")
    given = auth[7:] if auth.startswith("Bearer ") else request.query_params.get("token", "")
    ok = bool(given) and hmac.compare_digest(given.encode(), r.cfg.admin_token.encode())
    if not (ok or hmac.compare_digest(request.cookies.get(ADMIN_COOKIE, "").encode(), r.admin_cookie.encode())):
        raise HTTPProblem(401, "The admin pages need the admin token.", {"WWW-Authenticate": "Bearer"})
