"""The FastAPI application of ``causalplay serve`` (server-rendered Jinja pages, htmx for the test loop).

Three routers: :mod:`~causalplay.serve.flow` (the participant: consent, comprehension check, practice, task,
answer, debrief, resume on another device), :mod:`~causalplay.serve.admin` (the experimenter's dashboard and
export) and the health check and favicon here (the static files are mounted at ``/static``). They share the
FastAPI dependencies of :mod:`~causalplay.serve.deps`: ``runtime`` (this app's settings, task, database and
templates), ``Reads`` and ``Writes`` (the request's ``Db``: a read-only session, or a write transaction committed
before the response is sent, each with the participant of the session cookie; ``Writes`` after the per-session rate
limit) and ``require_admin``.

Security: the session cookie is a random token (HttpOnly, SameSite=Lax, so another site cannot submit forms in
the participant's name); pages before the judgement are rendered from public data only (the objects, the
context panels, the tests so far) -- the hidden rule and blickets are read only by the debrief; every number
in a request must be 1-4 ASCII digits (``str.isdigit`` would pass '²' or '١', and ``int`` of 5,000 digits
raises); a refused request is answered 4xx in a transaction that is rolled back; each session may submit at
most ``rate_burst`` requests at once and ``rate_per_s`` per second after that (429); every response carries a
Content-Security-Policy (scripts, styles and images from this server only, no framing) and
``X-Content-Type-Options``, ``X-Frame-Options`` and ``Referrer-Policy`` headers.
"""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from . import admin, flow
from .deps import HTTPProblem, Rt, Runtime, ServeConfig

__all__ = ["ServeConfig", "create_app"]

_HEADERS = [(b"content-security-policy", b"default-src 'none'; script-src 'self'; style-src 'self'; "
             b"img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
            (b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
            (b"referrer-policy", b"no-referrer")]


class SecurityHeaders:
    """ASGI middleware adding :data:`_HEADERS` to every HTTP response (pages, redirects, static files, errors).

    With a ``root_path`` it also sets the ASGI ``root_path`` of every request (so routes match with or without the
    prefix and ``request.base_url`` includes it, whatever server runs the app) and puts the prefix in front of the
    server-relative targets of redirects (``Location``, htmx's ``HX-Redirect``): the routes name their own paths and
    a server behind a proxy at ``/prefix`` still sends the browser to ``/prefix/...``."""

    def __init__(self, app, root_path: str = ""):
        self.app, self.root = app, root_path.encode()

    def _prefixed(self, headers):
        for k, v in headers:
            if self.root and k.lower() in (b"location", b"hx-redirect") and v.startswith(b"/") \
                    and not v.startswith(b"//") and not (v + b"/").startswith(self.root + b"/"):
                v = self.root + v
            yield k, v

    async def __call__(self, scope, receive, send):
        if self.root and scope["type"] in ("http", "websocket"):
            scope = {**scope, "root_path": self.root.decode()}

        async def send_with_headers(msg):
            if msg["type"] == "http.response.start":
                msg["headers"] = [*self._prefixed(msg.get("headers", [])), *_HEADERS]
            await send(msg)

        await self.app(scope, receive, send_with_headers if scope["type"] == "http" else send)


base = APIRouter()


@base.get("/healthz")
def healthz(r: Rt):
    return {"ok": True, "task": r.task.env_id}


@base.get("/favicon.ico")
def favicon():
    return RedirectResponse("/static/favicon.svg", status_code=301)


def create_app(config: ServeConfig | None = None) -> FastAPI:
    """The application for ``config`` (the database is migrated to the newest schema first)."""
    rt = Runtime(config or ServeConfig())
    app = FastAPI(title="causalplay serve", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.rt = rt
    app.state.config, app.state.engine, app.state.task = rt.cfg, rt.engine, rt.task
    app.mount("/static", StaticFiles(directory=str(resources.files(__package__) / "static")), name="static")
    for router in (flow.router, admin.router, base):
        app.include_router(router)
    app.add_middleware(SecurityHeaders, root_path=rt.cfg.root_path)

    @app.exception_handler(HTTPProblem)
    def _problem(request: Request, exc: HTTPProblem):
        resp = rt.page(request, "error.html", status=exc.status, message=exc.message)
        resp.headers.update(exc.headers)
        return resp

    return app
