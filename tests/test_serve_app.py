"""`causalplay serve` in process (Starlette's TestClient): tasks, flow, hidden truth, faults, experimenter side."""

import re
from collections import Counter

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")

from fastapi.testclient import TestClient  # noqa: E402
from sqlalchemy import select  # noqa: E402
from sqlalchemy.orm import Session  # noqa: E402

from causalplay.serve.app import ServeConfig, create_app  # noqa: E402
from causalplay.serve.store import Event, Participant, TrialRow  # noqa: E402
from causalplay.serve.tasks import ServedTask, assign_condition, episode_seed  # noqa: E402

TOKEN = "t" * 24


def _lit(rule, on, blickets):
    return len(set(on) & set(blickets)) >= (1 if rule == "disjunctive" else 2)


def make(tmp_path, task="nexiom", **kw):
    app = create_app(ServeConfig(db=f"sqlite:///{tmp_path / 'serve.db'}", task=task, seed=3, admin_token=TOKEN,
                                 **kw))
    return app, TestClient(app, base_url="http://127.0.0.1")


def snapshot(app):
    """Every row of every table (to show a refused request changed nothing)."""
    with Session(app.state.engine) as s:
        out = []
        for cls in (Participant, TrialRow, Event):
            for r in s.scalars(select(cls)).all():
                out.append({c.name: getattr(r, c.key) for c in cls.__table__.columns})
        return out


def start(c, pid, n_blickets=2):
    assert c.get(f"/?PROLIFIC_PID={pid}").status_code == 200
    r = c.post("/consent", data={"consent": "yes", "pid": pid})
    assert r.status_code == 200 and r.url.path == "/check"
    r = c.post("/check", data={"how": "test", "count": str(n_blickets), "when": "ready"})
    assert r.url.path == "/task", r.text
    return r


# -- the tasks ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["nexiom", "ivre", "est"])
def test_served_task_is_the_package_task(name):
    t = ServedTask(name)
    rng = np.random.default_rng(0)
    for cond in range(len(t.conditions)):
        w = t.world(cond, 11 + cond)
        past = []
        for _ in range(t.max_tests):
            on = tuple(np.flatnonzero(rng.random(t.n_objects) < 0.4).tolist())
            assert t.outcome(cond, 11 + cond, past, on) == _lit(w.rule, on, w.blickets)
            past.append(on)
        with pytest.raises(ValueError, match="tests"):
            t.outcome(cond, 11 + cond, past, ())
        for on, lit in w.context:
            assert lit == _lit(w.rule, on, w.blickets)
    if name == "nexiom":
        worlds = {(t.world(c, 0).rule, t.world(c, 0).blickets) for c in range(12)}
        assert len(worlds) == 12  # 2 rules x 6 pairs, each once
    else:
        from causalplay.envs import make_batch

        k = t.conditions[1]["n_blickets"]
        ref = make_batch(t.env_id, 1, seed=5, n_blickets=(k,))
        ref.reset()
        w = t.world(1, 5)
        assert w.blickets == tuple(np.flatnonzero(ref.blickets[0].numpy()).tolist()) and len(w.blickets) == k
        assert [on for on, _ in w.context] == [tuple(np.flatnonzero(p).tolist()) for p in ref.panels[0, :4].numpy()]


def test_counterbalancing_is_balanced_and_seeded():
    for n_cond in (4, 6, 12):
        conds = [assign_condition(7, s, n_cond) for s in range(5 * n_cond + 3)]
        for b in range(5):
            assert sorted(conds[b * n_cond:(b + 1) * n_cond]) == list(range(n_cond))
        counts = Counter(conds)
        assert max(counts.values()) - min(counts.get(c, 0) for c in range(n_cond)) <= 1
    assert [assign_condition(7, s, 12) for s in range(12)] != [assign_condition(8, s, 12) for s in range(12)]
    assert len({episode_seed(0, s) for s in range(1000)}) == 1000


# -- the participant flow -----------------------------------------------------------------------------------
def test_full_session_nexiom_and_no_truth_before_judgement(tmp_path):
    app, c = make(tmp_path)
    task = app.state.task
    # Both sessions run the same two tests, whose outcomes are the same in every Nexiom world (all four objects
    # light any machine with 2 blickets; nothing lights none). So if no page before the judgement carries
    # information about the world, the two sessions' responses are identical byte for byte.
    bodies = []
    for pid in ("A1", "B2"):
        c.cookies.clear()
        seen = [c.get(f"/?PROLIFIC_PID={pid}")]
        seen.append(c.post("/consent", data={"consent": "yes", "pid": pid}))
        seen.append(c.post("/check", data={"how": "test", "count": "2", "when": "ready"}))
        seen.append(c.post("/test", data={"seq": "1", "objects": ["0", "1", "2", "3"]}))
        seen.append(c.post("/test", data={"seq": "2", "objects": []}, headers={"HX-Request": "true"}))
        seen.append(c.get("/task"))
        seen.append(c.get("/judge"))
        seen.append(c.get("/static/htmx.min.js"))
        assert all(r.status_code == 200 for r in seen), [r.status_code for r in seen]
        # the participant's own id is echoed in the consent form; it is not the world
        bodies.append([r.content.replace(pid.encode(), b"PID") for r in seen])
        # one participant: the judgement, then the truth is shown
        r = c.post("/judge", data={"blickets": ["0", "2"], "rule": "conjunctive"})
        assert r.url.path == "/debrief"
    with Session(app.state.engine) as s:
        ps = s.scalars(select(Participant).order_by(Participant.slot)).all()
        assert [p.code for p in ps] == ["A1", "B2"]
        assert (ps[0].rule, ps[0].true_blickets) != (ps[1].rule, ps[1].true_blickets)
        for p in ps:
            w = task.world(p.condition, p.episode_seed)
            assert p.condition == assign_condition(3, p.slot, 12)
            assert (p.rule, p.true_blickets) == (w.rule, " ".join(map(str, w.blickets)))
            assert [(t.objects_on, t.lit) for t in p.tests] == [("0 1 2 3", True), ("", False)]
    assert bodies[0] == bodies[1]
    # and the debrief does show the truth of the last session
    p = ps[1]
    objs = ", ".join(f"Object {int(i) + 1}" for i in p.true_blickets.split())
    assert f"The blickets were: {objs}." in c.get("/debrief").text


@pytest.mark.parametrize("name", ["ivre", "est"])
def test_context_panels_shown_first_and_exported(tmp_path, name):
    from causalplay.data import load_trials
    from causalplay.serve.store import export_trials

    app, c = make(tmp_path, task=name)
    task = app.state.task
    c.get("/?PROLIFIC_PID=ctx1")
    c.post("/consent", data={"consent": "yes", "pid": "ctx1"})
    with Session(app.state.engine) as s:
        p = s.scalars(select(Participant)).one()
        w = task.world(p.condition, p.episode_seed)
    r = c.post("/check", data={"how": "test", "count": str(w.n_blickets), "when": "ready"})
    assert r.url.path == "/task"
    labels = re.findall(r'aria-label="(Example \d+: [^"]*)"', r.text)
    assert len(labels) == 4
    for lab, (on, lit) in zip(labels, w.context, strict=True):
        assert lab.endswith("it lit up" if lit else "it did not light up")
        assert lab.count("Object ") == max(len(on), 0)
    trials = [(0, 1, 2), (3,), (4, 5, 6, 7, 8), (), (1,), (2, 8)]
    for k, on in enumerate(trials):
        r = c.post("/test", data={"seq": str(5 + k), "objects": [str(i) for i in on]})
        assert r.status_code == 200
    assert "You have used all 6 tests" in r.text
    assert c.post("/test", data={"seq": "11", "objects": ["0"]}).status_code == 409
    c.post("/judge", data={"blickets": [str(i) for i in w.blickets], "rule": "disjunctive"})
    export_trials(app.state.engine, tmp_path / "out")
    d = load_trials(tmp_path / "out", n_objects=9, impossible="raise")
    t = d.tests
    assert list(t["source"]) == ["context"] * 4 + ["participant"] * 6
    assert [tuple(o) for o in t["objects_on"]] == [on for on, _ in w.context] + trials
    assert list(t["lit"]) == [lit for _, lit in w.context] + [_lit(w.rule, on, w.blickets) for on in trials]
    assert bool(d.participants["blickets_correct"][0]) and bool(d.participants["rule_correct"][0])


def test_refused_requests_change_nothing(tmp_path):
    app, c = make(tmp_path, rate_per_s=1000.0, rate_burst=1000)  # the rate limit has its own test
    start(c, "P1")
    assert c.post("/test", data={"seq": "1", "objects": ["1"]}).status_code == 200
    before = snapshot(app)
    bad = [
        ("/test", {"seq": "1", "objects": ["2"]}, 409),            # replay of test 1
        ("/test", {"seq": "3", "objects": ["2"]}, 409),            # skips a test
        ("/test", {"seq": "2", "objects": ["4"]}, 422),            # no object 4
        ("/test", {"seq": "2", "objects": ["x"]}, 422),
        ("/test", {"seq": "2", "objects": ["1", "1"]}, 422),       # the same object twice
        ("/test", {"seq": "two", "objects": ["1"]}, 422),
        ("/judge", {"blickets": ["0"], "rule": "sometimes"}, 422),
        ("/judge", {"blickets": ["7"], "rule": "disjunctive"}, 422),
        ("/check", {"how": "test", "count": "2", "when": "ready"}, 409),  # already passed
        ("/consent", {"consent": "yes", "pid": "P1"}, 409),        # second session for the same id
        ("/consent", {"consent": "yes", "pid": "bad id!"}, 400),
        ("/consent", {"consent": "no", "pid": "P2"}, 400),
    ]
    for url, data, status in bad:
        r = c.post(url, data=data)
        assert r.status_code == status, (url, data, r.status_code, r.text[-300:])
    c2 = TestClient(app, base_url="http://127.0.0.1")
    assert c2.post("/test", data={"seq": "2", "objects": ["1"]}).status_code == 401  # no session
    c2.cookies.set("cp_session", "forged")
    assert c2.post("/test", data={"seq": "2", "objects": ["1"]}).status_code == 401
    assert c2.get("/?PROLIFIC_PID=P1").status_code == 409  # the same id from another browser is refused
    assert snapshot(app) == before
    # the judgement once, then never again
    assert c.post("/judge", data={"blickets": ["0", "1"], "rule": "disjunctive"}).status_code == 200
    after = snapshot(app)
    assert c.post("/judge", data={"blickets": ["2", "3"], "rule": "conjunctive"}).status_code == 409
    assert c.post("/test", data={"seq": "2", "objects": ["1"]}).status_code == 409
    assert snapshot(app) == after
    assert c.get("/?PROLIFIC_PID=P1").url.path == "/debrief"  # the same browser sees its debrief again


def test_comprehension_check_repeats_until_right(tmp_path):
    app, c = make(tmp_path)
    c.get("/")
    c.post("/consent", data={"consent": "yes"})
    r = c.post("/check", data={"how": "guess", "count": "2", "when": "ready"})
    assert r.url.path == "/check" and "Not quite" in r.text
    assert c.get("/task").url.path == "/check"  # the task is not reachable before passing
    assert c.post("/test", data={"seq": "1", "objects": ["0"]}).status_code == 409
    assert c.post("/check", data={"how": "test", "count": "2", "when": "ready"}).url.path == "/task"
    with Session(app.state.engine) as s:
        p = s.scalars(select(Participant)).one()
        assert p.check_attempts == 2 and p.code.startswith("gen-") and p.code_source == "generated"


def test_admin_needs_token_and_exports(tmp_path):
    import io
    import zipfile

    app, c = make(tmp_path)
    start(c, "Z9")
    c.post("/test", data={"seq": "1", "objects": ["0"]})
    c.post("/judge", data={"blickets": ["0", "1"], "rule": "disjunctive"})
    for url in ("/admin", "/admin/export.zip", f"/admin?token={'t' * 23}", "/admin?token="):
        assert c.get(url).status_code == 401
    r = c.get("/admin", headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200 and "<td>Z9</td>" in r.text and "1 sessions, 1 completed" in r.text
    z = zipfile.ZipFile(io.BytesIO(c.get(f"/admin/export.zip?token={TOKEN}").content))
    rows = z.read("participants.csv").decode().splitlines()
    assert len(rows) == 2 and rows[1].startswith("Z9,")
    assert z.read("tests.csv").decode().splitlines()[1].startswith("Z9,1,0,")


def test_rate_limit(tmp_path):
    app, c = make(tmp_path, rate_per_s=0.01, rate_burst=3)
    start(c, "R1")  # the check is 1 of the 3
    codes = [c.post("/test", data={"seq": str(k), "objects": ["0"]}).status_code for k in (1, 2, 3)]
    assert codes == [200, 200, 429]
    with Session(app.state.engine) as s:
        assert s.scalars(select(Participant)).one().n_tests == 2
