"""`causalplay serve` for a real study: Secure cookies, a path prefix behind a reverse proxy (docs/study.md), and the
export's `source` values against the schema the loader documents (docs/data-schema.md)."""

import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402
from sqlalchemy import select  # noqa: E402
from sqlalchemy.orm import Session  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from causalplay.serve.app import ServeConfig, create_app  # noqa: E402
from causalplay.serve.store import Participant, export_trials  # noqa: E402
from causalplay.serve.study import Study  # noqa: E402

TOKEN = "d" * 24
DOCS = Path(__file__).resolve().parents[1] / "docs"
# every server-relative URL a page may hold: links, forms, scripts, htmx calls
URL_ATTR = re.compile(r'(?:href|src|action|hx-get|hx-post)="(/[^"]*)"')


def _app(tmp_path, **kw):
    return create_app(ServeConfig(db=f"sqlite:///{tmp_path / 's.db'}", admin_token=TOKEN,
                                  study=Study(practice=False, raw_ids=True), **kw))


def _session(c, prefix, pid):
    """One participant through consent, check, two tests and the judgement; every page's URLs are returned."""
    urls = []
    pages = [c.get(f"{prefix}/?PROLIFIC_PID={pid}"),
             c.post(f"{prefix}/consent", data={"consent": "yes", "pid": pid}),
             c.post(f"{prefix}/check", data={"how": "test", "count": "2", "when": "ready"}),
             c.post(f"{prefix}/test", data={"seq": "1", "objects": ["0"]}),
             c.post(f"{prefix}/test", data={"seq": "2", "objects": ["1", "2"]}),
             c.get(f"{prefix}/judge"),
             c.post(f"{prefix}/judge", data={"blickets": ["0", "1"], "rule": "disjunctive"})]
    for r in pages:
        assert r.status_code == 200, (r.url, r.text[:300])
        urls += URL_ATTR.findall(r.text)
    return pages, urls


@pytest.mark.parametrize("strip", [False, True], ids=["proxy-passes-prefix", "proxy-strips-prefix"])
def test_root_path_prefixes_pages_redirects_and_cookies(tmp_path, strip):
    app = _app(tmp_path, root_path="/lab/blicket")
    c = TestClient(app, base_url="http://127.0.0.1")
    pages, urls = _session(c, "" if strip else "/lab/blicket", "P1")
    # the redirects after consent and check went to the prefixed pages
    assert [h.headers["location"] for h in pages[1].history] == ["/lab/blicket/check"]
    assert pages[1].url.path == "/lab/blicket/check" and pages[-1].url.path == "/lab/blicket/debrief"
    assert urls and all(u.startswith("/lab/blicket/") for u in urls), sorted(set(urls))
    assert "/lab/blicket/static/style.css" in urls and "/lab/blicket/test" in urls
    assert 'data-root="/lab/blicket"' in pages[3].text  # the page script re-syncs at <root>/panel
    r = c.get("/favicon.ico", follow_redirects=False)
    assert r.status_code == 301 and r.headers["location"] == "/lab/blicket/static/favicon.svg"
    assert c.get("/lab/blicket/static/favicon.svg").status_code == 200
    r = c.get(f"/lab/blicket/admin?token={TOKEN}")
    assert r.status_code == 200 and "Path=/lab/blicket/admin" in r.headers["set-cookie"]
    assert all(u.startswith("/lab/blicket/") for u in URL_ATTR.findall(r.text))
    assert export_trials(app.state.engine, tmp_path / "out") == (1, 2)


def test_without_root_path_urls_are_unchanged(tmp_path):
    c = TestClient(_app(tmp_path), base_url="http://127.0.0.1")
    pages, urls = _session(c, "", "P2")
    assert pages[1].history[0].headers["location"] == "/check"
    assert "/static/style.css" in urls and "/test" in urls and not any(u.startswith("//") for u in urls)


@pytest.mark.parametrize("secure", [False, True])
def test_secure_cookie_marks_both_cookies(tmp_path, secure):
    c = TestClient(_app(tmp_path, secure_cookie=secure), base_url="https://127.0.0.1")
    r = c.post("/consent", data={"consent": "yes", "pid": "P3"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["set-cookie"].startswith("cp_session=")
    assert ("; secure" in r.headers["set-cookie"].lower()) is secure
    r = c.get(f"/admin?token={TOKEN}")
    assert r.headers["set-cookie"].startswith("cp_admin=")
    assert ("; secure" in r.headers["set-cookie"].lower()) is secure


@pytest.mark.parametrize("bad", ["blicket", "/blicket/", "/a//b", "/a b", "/a?b=1", "//evil.example"])
def test_bad_root_path_is_refused_by_name(tmp_path, bad):
    with pytest.raises(ValueError, match=re.escape("root_path must be empty or start with '/'")) as e:
        ServeConfig(db=f"sqlite:///{tmp_path / 's.db'}", admin_token=TOKEN, root_path=bad)
    assert repr(bad) in str(e.value)


def test_serve_command_passes_secure_cookie_and_root_path(tmp_path, monkeypatch):
    import uvicorn

    from causalplay.cli import app

    ran = {}
    monkeypatch.setattr(uvicorn, "run", lambda a, **kw: ran.update(app=a, **kw))
    run = CliRunner(env={"COLUMNS": "400"})
    db = f"sqlite:///{tmp_path / 's.db'}"
    r = run.invoke(app, ["serve", "--db", db, "--admin-token", TOKEN, "--secure-cookie", "--root-path", "/blicket",
                         "--port", "8123"])
    assert r.exit_code == 0, r.output
    cfg = ran["app"].state.config
    assert cfg.secure_cookie is True and cfg.root_path == "/blicket" and ran["port"] == 8123
    assert "http://127.0.0.1:8123/blicket/?PROLIFIC_PID=<id>" in r.output
    r = run.invoke(app, ["serve", "--db", db, "--admin-token", TOKEN])
    assert r.exit_code == 0 and ran["app"].state.config.secure_cookie is False
    assert ran["app"].state.config.root_path == ""
    r = run.invoke(app, ["serve", "--db", db, "--admin-token", TOKEN, "--host", "0.0.0.0"])
    assert r.exit_code == 0 and "not marked Secure" in r.output
    r = run.invoke(app, ["serve", "--db", db, "--admin-token", TOKEN, "--root-path", "blicket/"])
    assert r.exit_code != 0 and "root_path must be empty or start with '/'" in r.output


def test_export_sources_are_the_schema_sources(tmp_path):
    """The schema's table lists every `source` value the loader accepts, the export's included."""
    from causalplay.data import load_trials
    from causalplay.data.trials import SOURCES

    row = next(ln for ln in (DOCS / "data-schema.md").read_text().splitlines() if ln.startswith("| source |"))
    documented = set(re.findall(r"`([a-z]+)`", row))
    assert documented == {k for k in SOURCES if k}, row
    assert documented >= {"choice", "demonstration", "participant", "context"}
    app = create_app(ServeConfig(db=f"sqlite:///{tmp_path / 's.db'}", admin_token=TOKEN, task="ivre",
                                 study=Study(practice=False, raw_ids=True)))
    c = TestClient(app, base_url="http://127.0.0.1")
    c.post("/consent", data={"consent": "yes", "pid": "P4"})
    with Session(app.state.engine) as s:
        p = s.scalars(select(Participant)).one()
        w = app.state.task.world(p.condition, p.episode_seed)
    assert c.post("/check", data={"how": "test", "count": str(w.n_blickets), "when": "ready"}).url.path == "/task"
    assert c.post("/test", data={"seq": "5", "objects": ["0"]}).status_code == 200
    c.post("/judge", data={"blickets": [str(i) for i in w.blickets], "rule": w.rule})
    export_trials(app.state.engine, tmp_path / "out")
    tests = (tmp_path / "out" / "tests.csv").read_text().splitlines()
    sources = [ln.rsplit(",", 1)[1] for ln in tests[1:]]
    assert sources == ["context"] * 4 + ["participant"], tests  # IVRE: 4 context panels, then the one test
    d = load_trials(tmp_path / "out")
    assert d.is_choice.tolist() == [False] * 4 + [True] and d.n_objects == w.n_objects
