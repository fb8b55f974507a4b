"""`causalplay serve` in process (Starlette's TestClient): tasks, flow, hidden truth, faults, experimenter side."""

import re
import time

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")

from fastapi.testclient import TestClient  # noqa: E402
from serve_server import CRAFTED, CRAFTED_CHECK, write_study  # noqa: E402
from sqlalchemy import select, update  # noqa: E402
from sqlalchemy.orm import Session, selectinload  # noqa: E402

from causalplay.serve.app import ServeConfig, create_app  # noqa: E402
from causalplay.serve.store import Event, Participant, TrialRow  # noqa: E402
from causalplay.serve.study import Study, load_study  # noqa: E402
from causalplay.serve.tasks import ServedTask, assign_condition, episode_seed  # noqa: E402

TOKEN = "t" * 24
NO_PRACTICE = Study(practice=False, raw_ids=True)


def _lit(rule, on, blickets):
    return len(set(on) & set(blickets)) >= (1 if rule == "disjunctive" else 2)


def make(tmp_path, task="nexiom", study=NO_PRACTICE, **kw):
    app = create_app(ServeConfig(db=f"sqlite:///{tmp_path / 'serve.db'}", task=task, seed=3, admin_token=TOKEN,
                                 study=study, **kw))
    return app, TestClient(app, base_url="http://127.0.0.1")


def snapshot(app):
    """Every row of every table (to show a refused request changed nothing)."""
    with Session(app.state.engine) as s:
        return [{c.name: getattr(r, c.key) for c in cls.__table__.columns}
                for cls in (Participant, TrialRow, Event) for r in s.scalars(select(cls)).all()]


def start(c, pid, n_blickets=2):
    assert c.get(f"/?PROLIFIC_PID={pid}").status_code == 200
    r = c.post("/consent", data={"consent": "yes", "pid": pid})
    assert r.status_code == 200 and r.url.path == "/check"
    r = c.post("/check", data={"how": "test", "count": str(n_blickets), "when": "ready"})
    assert r.url.path in ("/task", "/practice"), r.text
    return r


def participants(app):
    with Session(app.state.engine) as s:
        return s.scalars(select(Participant).options(selectinload(Participant.tests)).order_by(Participant.slot)).all()


# -- the tasks ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["nexiom", "ivre", "est"])
def test_served_task_is_the_package_task(name):
    from causalplay.envs import make_batch

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
        assert len({(t.world(c, 0).rule, t.world(c, 0).blickets) for c in range(12)}) == 12  # 2 rules x 6 pairs
        return
    # the rule is a condition (crossed with the number of blickets), drawn by the env's own rule= machinery
    ks = {"ivre": [2, 3, 4], "est": [3, 4, 5, 6, 7, 8]}[name]
    assert [(c["n_blickets"], c["rule"]) for c in t.conditions] == [(k, r) for r in ("disjunctive", "conjunctive")
                                                                     for k in ks]
    for cond, c in enumerate(t.conditions):
        ref = make_batch(t.env_id, 1, seed=5, n_blickets=(c["n_blickets"],), rule=c["rule"])
        ref.reset()
        w = t.world(cond, 5)
        assert w.rule == c["rule"] and len(w.blickets) == c["n_blickets"]
        assert w.blickets == tuple(np.flatnonzero(ref.blickets[0].numpy()).tolist())
        assert [on for on, _ in w.context] == [tuple(np.flatnonzero(p).tolist()) for p in ref.panels[0, :4].numpy()]
    assert {t.world(c, s).rule for c in range(len(t.conditions)) for s in range(3)} == {"disjunctive", "conjunctive"}
    assert {w.rule for w in (ServedTask(name, randomise_rule=False).world(0, s) for s in range(5))} == {"disjunctive"}


def test_study_conditions_and_validation(tmp_path):
    t = ServedTask("nexiom", [{"rule": "conjunctive", "blickets": [0, 3], "label": "C03"},
                              {"rule": "disjunctive", "blickets": [1]}], max_tests=5)
    assert t.labels == ["C03", "disjunctive, blickets 1"] and t.max_tests == 5
    assert (t.world(0, 9).rule, t.world(0, 9).blickets, t.world(1, 9).blickets) == ("conjunctive", (0, 3), (1,))
    bad = [("nexiom", [{"rule": "sometimes", "blickets": [0]}], 0, "rule must be one of"),
           ("nexiom", [{"rule": "disjunctive", "blickets": [0, 4]}], 0, "object indices 0..3"),
           ("nexiom", [{"rule": "disjunctive"}], 0, "needs"),
           ("ivre", [{"n_blickets": 1, "rule": "conjunctive"}], 0, "never lights"),
           ("ivre", [{"n_blickets": 9}], 0, "one of"), ("ivre", [], 7, "max_tests must be an integer 1..6")]
    for name, conds, max_tests, msg in bad:
        with pytest.raises(ValueError, match=msg):
            ServedTask(name, conds, max_tests)
    for fields, msg in [({"titel": "x"}, "unknown keys"), ({"max_tests": "3"}, "max_tests must be a int"),
                        ({"completion_url": "javascript:alert(1)"}, "https://"), ({"timeout_minutes": 0}, "> 0")]:
        with pytest.raises(ValueError, match=msg):
            load_study(write_study(tmp_path / "s.toml", **fields))
    with pytest.raises(ValueError, match="s.toml"):
        (tmp_path / "s.toml").write_text("title = \n")
        load_study(tmp_path / "s.toml")


def test_documented_study_file_loads(tmp_path):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "serve.md").read_text()
    example = re.search(r"```toml\n(.*?)```", text, re.S).group(1)
    (tmp_path / "study.toml").write_text(example)
    st = load_study(tmp_path / "study.toml")
    t = ServedTask(st.task, st.conditions, st.max_tests, st.randomise_rule)
    assert st.contact and st.ethics and st.completion_code and len(t.conditions) == 4 and st.practice


def test_counterbalancing_by_held_conditions():
    # No abandoned session: exactly permuted blocks (block b is default_rng([seed, b]).permutation(C)).
    for n_cond in (4, 6, 12):
        counts, got = [0] * n_cond, []
        for _ in range(5 * n_cond + 3):
            c = assign_condition(7, counts)
            counts[c] += 1
            got.append(c)
        want = [c for b in range(6) for c in np.random.default_rng([7, b]).permutation(n_cond).tolist()]
        assert got == want[:len(got)]
    # Participants come one at a time and either complete or abandon (1 in 3): an abandoned session frees its
    # condition, so the completed counts never differ by more than one.
    rng = np.random.default_rng(0)
    for n_cond in (3, 4, 12):
        done = [0] * n_cond
        for _ in range(200):
            c = assign_condition(1, done)
            if rng.random() > 1 / 3:
                done[c] += 1
            assert max(done) - min(done) <= 1
    with pytest.raises(ValueError, match="counts"):
        assign_condition(0, [])
    assert len({episode_seed(0, s) for s in range(1000)}) == 1000


# -- the participant flow -----------------------------------------------------------------------------------
def test_full_session_nexiom_and_no_truth_before_judgement(tmp_path):
    app, c = make(tmp_path, study=Study())  # the defaults: practice on, hashed ids
    task = app.state.task
    # Both sessions run the same two tests, whose outcomes are the same in every Nexiom world (all four objects
    # light any machine with 2 blickets; nothing lights none). So if no page before the judgement carries
    # information about the world, the two sessions' responses are identical byte for byte once the
    # participant's own id and resume code are masked.
    bodies = []
    for pid in ("A1", "B2"):
        c.cookies.clear()
        seen = [c.get(f"/?PROLIFIC_PID={pid}")]
        seen.append(c.post("/consent", data={"consent": "yes", "pid": pid}))
        seen.append(c.post("/check", data={"how": "test", "count": "2", "when": "ready"}))
        seen.append(c.post("/practice/test", data={"seq": "1", "objects": ["1", "2"]}, headers={"HX-Request": "1"}))
        seen.append(c.post("/practice/done"))
        seen.append(c.post("/test", data={"seq": "1", "objects": ["0", "1", "2", "3"]}))
        seen.append(c.post("/test", data={"seq": "2", "objects": []}, headers={"HX-Request": "true"}))
        seen.append(c.get("/task"))
        seen.append(c.get("/judge"))
        seen.append(c.get("/static/htmx.min.js"))
        assert all(r.status_code == 200 for r in seen), [r.status_code for r in seen]
        assert "lit up" in seen[3].text and seen[4].url.path == "/task"
        code = participants(app)[-1].resume_code
        # the random code first: it can end in the id's letters (XDZV-UCB2 for B2), which masking the id first splits
        bodies.append([r.content.replace(f"{code[:4]}-{code[4:]}".encode(), b"CODE").replace(pid.encode(), b"PID")
                       for r in seen])
        r = c.post("/judge", data={"blickets": ["0", "2"], "rule": "conjunctive"})
        assert r.url.path == "/debrief"
    ps = participants(app)
    assert [p.code for p in ps] == ["A1", "B2"]
    assert (ps[0].rule, ps[0].true_blickets) != (ps[1].rule, ps[1].true_blickets)
    for p in ps:
        w = task.world(p.condition, p.episode_seed)
        assert (p.rule, p.true_blickets) == (w.rule, " ".join(map(str, w.blickets)))
        assert [(t.objects_on, t.lit, t.source) for t in p.tests] == [("0 1 2 3", True, "participant"),
                                                                      ("", False, "participant")]  # no practice
    assert [p.condition for p in ps] == np.random.default_rng([3, 0]).permutation(12).tolist()[:2]
    assert bodies[0] == bodies[1]
    objs = ", ".join(f"Object {int(i) + 1}" for i in ps[1].true_blickets.split())
    assert f"The blickets were: {objs}." in c.get("/debrief").text


@pytest.mark.parametrize("name", ["ivre", "est"])
def test_context_panels_shown_first_and_exported(tmp_path, name):
    from causalplay.data import load_trials
    from causalplay.serve.store import export_trials

    app, c = make(tmp_path, task=name)
    task = app.state.task
    c.get("/?PROLIFIC_PID=ctx1")
    c.post("/consent", data={"consent": "yes", "pid": "ctx1"})
    p = participants(app)[0]
    w = task.world(p.condition, p.episode_seed)
    r = c.post("/check", data={"how": "test", "count": str(w.n_blickets), "when": "ready"})
    assert r.url.path == "/task"
    labels = re.findall(r'aria-label="(Example \d+: [^"]*)"', r.text)
    assert len(labels) == 4
    for lab, (on, lit) in zip(labels, w.context, strict=True):
        assert lab.endswith("it lit up" if lit else "it did not light up") and lab.count("Object ") == len(on)
    trials = [(0, 1, 2), (3,), (4, 5, 6, 7, 8), (), (1,), (2, 8)]
    for k, on in enumerate(trials):
        assert c.post("/test", data={"seq": str(5 + k), "objects": [str(i) for i in on]}).status_code == 200
    assert "You have used all 6 tests" in c.get("/task").text
    assert c.post("/test", data={"seq": "11", "objects": ["0"]}).status_code == 409
    c.post("/judge", data={"blickets": [str(i) for i in w.blickets], "rule": w.rule})
    export_trials(app.state.engine, tmp_path / "out")
    d = load_trials(tmp_path / "out", n_objects=9, impossible="raise")
    t = d.tests
    assert list(t["source"]) == ["context"] * 4 + ["participant"] * 6
    assert [tuple(o) for o in t["objects_on"]] == [on for on, _ in w.context] + trials
    assert list(t["lit"]) == [lit for _, lit in w.context] + [_lit(w.rule, on, w.blickets) for on in trials]
    assert bool(d.participants["blickets_correct"][0]) and bool(d.participants["rule_correct"][0])
    # the participant was told the count (the check page asked for it), so a fit's learner knows it too
    assert d.known_counts() == {d.ids[0]: w.n_blickets}


def test_repeated_or_stale_tests_show_the_stored_state(tmp_path):
    app, c = make(tmp_path, rate_per_s=1000.0, rate_burst=1000)
    start(c, "S1")
    first = c.post("/test", data={"seq": "1", "objects": ["0", "1", "2", "3"]}, headers={"HX-Request": "true"})
    before = snapshot(app)
    # the answer to test 1 was lost; the page resends test 1 (or a double click sends it twice), maybe with
    # another choice: nothing is stored, and the panel shows test 1 as stored (lit: all four objects on)
    for seq, objects in (("1", ["0", "1", "2", "3"]), ("1", ["2"]), ("7", ["2"])):
        r = c.post("/test", data={"seq": seq, "objects": objects}, headers={"HX-Request": "true"})
        assert r.status_code == 200 and "had already reached the server" in r.text
        assert re.search(r"Test 1: Object 1, Object 2, Object 3, Object 4 &rarr; the machine <strong>lit up", r.text)
        assert 'name="seq" value="2"' in r.text
        assert snapshot(app) == before
    # without JavaScript the same request is answered with the task page
    r = c.post("/test", data={"seq": "1", "objects": ["2"]})
    assert r.url.path == "/task" and snapshot(app) == before
    # what the page's script fetches after a lost connection: the same stored state
    r = c.get("/panel")
    assert re.search(r"Test 1: [^&]* &rarr; the machine <strong>lit up", r.text) and 'name="seq" value="2"' in r.text
    assert r.text.count('id="panel"') == 1 and "<html" not in r.text and first.text.count('id="panel"') == 1


def test_refused_requests_change_nothing(tmp_path):
    app, c = make(tmp_path, rate_per_s=1000.0, rate_burst=1000)  # the rate limit has its own test
    c.get("/")
    c.post("/consent", data={"consent": "yes", "pid": "P1"})
    chk = snapshot(app)
    for url, data in CRAFTED_CHECK:
        assert c.post(url, data=data).status_code == 422, data["count"][:8]
    assert snapshot(app) == chk
    c.post("/check", data={"how": "test", "count": "2", "when": "ready"})
    assert c.post("/test", data={"seq": "1", "objects": ["1"]}).status_code == 200
    before = snapshot(app)
    bad = [(url, data, 422) for url, data in CRAFTED] + [
        ("/test", {"seq": "2", "objects": ["4"]}, 422),            # no object 4
        ("/test", {"seq": "2", "objects": ["x"]}, 422),
        ("/test", {"seq": "2", "objects": ["1", "1"]}, 422),       # the same object twice
        ("/test", {"seq": "two", "objects": ["1"]}, 422),
        ("/practice/test", {"seq": "1", "objects": ["1"]}, 409),   # practice is over
        ("/judge", {"blickets": ["0"], "rule": "sometimes"}, 422),
        ("/judge", {"blickets": ["7"], "rule": "disjunctive"}, 422),
        ("/check", {"how": "test", "count": "2", "when": "ready"}, 409),  # already passed
        ("/consent", {"consent": "yes", "pid": "bad id!"}, 400),
        ("/consent", {"consent": "yes", "pid": "P2\n"}, 400),
        ("/consent", {"consent": "no", "pid": "P2"}, 400),
    ]
    for url, data, status in bad:
        r = c.post(url, data=data)
        assert r.status_code == status, (url, str(data)[:60], r.status_code, r.text[-300:])
    assert c.get("/?PROLIFIC_PID=P1%0A").status_code == 400
    assert c.post("/consent", data={"consent": "yes", "pid": "P1"}).url.path == "/resume"  # not a second session
    c2 = TestClient(app, base_url="http://127.0.0.1")
    assert c2.post("/test", data={"seq": "2", "objects": ["1"]}).status_code == 401  # no session
    c2.cookies.set("cp_session", "forged")
    assert c2.post("/test", data={"seq": "2", "objects": ["1"]}).status_code == 401
    assert snapshot(app) == before
    # the judgement once, then never again
    assert c.post("/judge", data={"blickets": ["0", "1"], "rule": "disjunctive"}).status_code == 200
    after = snapshot(app)
    assert c.post("/judge", data={"blickets": ["2", "3"], "rule": "conjunctive"}).status_code == 409
    assert c.post("/test", data={"seq": "2", "objects": ["1"]}).status_code == 409
    assert snapshot(app) == after
    assert c.get("/?PROLIFIC_PID=P1").url.path == "/debrief"  # the same browser sees its debrief again


def test_resume_on_another_browser(tmp_path):
    app, a = make(tmp_path, rate_per_s=1000.0, rate_burst=1000)
    r = start(a, "R1")
    a.post("/test", data={"seq": "1", "objects": ["0"]})
    code = participants(app)[0].resume_code
    assert len(code) == 8 and f"{code[:4]}-{code[4:]}" in a.get("/task").text
    b = TestClient(app, base_url="http://127.0.0.1")
    r = b.get("/?PROLIFIC_PID=R1")  # another device: the resume form, not a dead end
    assert r.status_code == 200 and "already started" in r.text and 'value="R1"' in r.text
    before = snapshot(app)
    for pid, wrong in (("R1", "AAAAAAAA"), ("R1", ""), ("R2", code), ("R1\n", code)):
        assert b.post("/resume", data={"pid": pid, "code": wrong}).status_code == 403
    assert snapshot(app) == before
    r = b.post("/resume", data={"pid": "R1", "code": f" {code[:4].lower()}-{code[4:]} "})
    assert r.url.path == "/task" and re.search(r"Test 1: Object 1 &rarr;", r.text)
    assert b.post("/test", data={"seq": "2", "objects": ["1"]}).status_code == 200
    assert a.post("/test", data={"seq": "3", "objects": ["2"]}).status_code == 401  # the old browser's session ended
    p = participants(app)[0]
    assert [t.objects_on for t in p.tests] == ["0", "1"] and p.session_token == b.cookies.get("cp_session")


def test_abandoned_sessions_free_their_condition(tmp_path):
    app, _ = make(tmp_path, study=Study(practice=False, timeout_minutes=30,
                                        conditions=tuple({"rule": "disjunctive", "blickets": [i]} for i in range(4))))
    clients = {}

    def consent(pid):
        clients[pid] = c = TestClient(app, base_url="http://127.0.0.1")
        c.post("/consent", data={"consent": "yes", "pid": pid})
        return participants(app)[-1].condition

    first = [consent(f"U{k}") for k in range(4)]
    assert sorted(first) == [0, 1, 2, 3]
    for pid in ("U0", "U1"):  # these two finish
        clients[pid].post("/check", data={"how": "test", "count": "1", "when": "ready"})
        clients[pid].post("/test", data={"seq": "1", "objects": ["0"]})
        clients[pid].post("/judge", data={"blickets": ["0"], "rule": "disjunctive"})
    with Session(app.state.engine) as s, s.begin():  # U2 is idle for 31 minutes, U3 for 29
        for pid, minutes in (("U2", 31), ("U3", 29)):
            s.execute(update(Participant).where(Participant.code == pid)
                      .values(last_active_at=time.time() - 60 * minutes))
    # the next participant gets U2's condition (U3's is still held), then a new block starts
    assert consent("U4") == first[2]
    assert sorted([consent(f"U{k}") for k in range(5, 9)]) == [0, 1, 2, 3]
    admin = clients["U0"].get("/admin/table", headers={"Authorization": f"Bearer {TOKEN}"}).text
    per = re.findall(r"<tr><td>(\d)</td><td>disjunctive, blickets \d</td><td>(\d)</td><td>(\d)</td><td>(\d)</td>"
                     r"<td>(\d)</td>", admin)
    assert sum(int(x[3]) for x in per) == 6 and sum(int(x[4]) for x in per) == 1  # active, abandoned
    assert [int(x[1]) for x in per][first[2]] == 3  # U2, U4 and one of the new block


def test_comprehension_check_repeats_until_right(tmp_path):
    app, c = make(tmp_path)
    c.get("/")
    c.post("/consent", data={"consent": "yes"})
    r = c.post("/check", data={"how": "guess", "count": "2", "when": "ready"})
    assert r.url.path == "/check" and "Not quite" in r.text
    assert c.get("/task").url.path == "/check"  # the task is not reachable before passing
    assert c.post("/test", data={"seq": "1", "objects": ["0"]}).status_code == 409
    assert c.post("/check", data={"how": "test", "count": "02", "when": "ready"}).url.path == "/task"
    p = participants(app)[0]
    assert p.check_attempts == 2 and p.code.startswith("gen-") and p.code_source == "generated"


def test_study_texts_ids_and_hashed_export(tmp_path):
    import hashlib

    from causalplay.data import load_trials
    from causalplay.serve.store import export_trials

    study = Study(title="Machines", researcher="Dr R", contact="r@example.org", ethics="Board 42",
                  consent="We **test** <script>alert(1)</script>", debrief="See [our site](https://example.org).",
                  completion_code="CODE77", completion_url="https://example.org/done", id_salt="s4lt",
                  conditions=({"rule": "conjunctive", "blickets": [2, 3], "label": "conj23"},))
    app, c = make(tmp_path, study=study)
    page = c.get("/?PROLIFIC_PID=H1&STUDY_ID=ST9&SESSION_ID=SE9").text
    for text in ("<h1>Machines</h1>", "Dr R", "r@example.org", "Board 42", "<strong>test</strong>",
                 "&lt;script&gt;", "a coded ID instead"):
        assert text in page, text
    assert "<script>alert" not in page
    c.post("/consent", data={"consent": "yes", "pid": "H1", "study_id": "ST9", "session_id": "SE9"})
    c.post("/check", data={"how": "test", "count": "2", "when": "ready"})
    c.post("/practice/done")
    c.post("/test", data={"seq": "1", "objects": ["2", "3"]})
    r = c.post("/judge", data={"blickets": ["2", "3"], "rule": "conjunctive"})
    assert '<a href="https://example.org">our site</a>' in r.text and "CODE77" in r.text
    assert 'href="https://example.org/done"' in r.text
    p = participants(app)[0]
    assert (p.study_id, p.session_id, p.code, p.condition) == ("ST9", "SE9", "H1", 0)
    export_trials(app.state.engine, tmp_path / "out")
    d = load_trials(tmp_path / "out", n_objects=4)
    assert d.ids == ["p" + hashlib.sha256(b"s4lt:H1").hexdigest()[:16]]
    assert d.known_counts() == {d.ids[0]: 2}  # told on the check page: "2 of them are blickets"
    assert all("H1" not in (tmp_path / "out" / f).read_text() for f in ("participants.csv", "tests.csv"))


def test_admin_dashboard_token_forms_and_export(tmp_path):
    import io
    import zipfile

    app, c = make(tmp_path)
    start(c, "Z9")
    c.post("/test", data={"seq": "1", "objects": ["0"]})
    c.post("/judge", data={"blickets": ["0", "1"], "rule": "disjunctive"})
    c.cookies.clear()
    for url in ("/admin", "/admin/export.zip", "/admin/table", f"/admin?token={'t' * 23}", "/admin?token="):
        assert c.get(url).status_code == 401
    r = c.get("/admin", headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200 and "<td>Z9</td>" in r.text and "1 sessions, 1 completed" in r.text
    cond = participants(app)[0].condition
    assert f"<td>{cond}: {app.state.task.labels[cond]}</td><td>completed</td>" in r.text
    assert 'hx-trigger="every 5s"' in r.text and 'href="/admin/export.zip"' in r.text
    # after a Bearer login the page's links and polling work through the cookie it set
    z = zipfile.ZipFile(io.BytesIO(c.get("/admin/export.zip").content))
    rows = z.read("participants.csv").decode().splitlines()
    assert len(rows) == 2 and rows[1].startswith("Z9,")
    assert z.read("tests.csv").decode().splitlines()[1].startswith("Z9,1,0,")
    assert c.get("/admin/table").status_code == 200
    c.cookies.clear()
    r = c.get(f"/admin?token={TOKEN}")
    assert f'href="/admin/export.zip?token={TOKEN}"' in r.text
    assert c.get(f"/admin/export.zip?include_incomplete=true&token={TOKEN}").status_code == 200


def test_security_headers_and_favicon(tmp_path):
    app, c = make(tmp_path)
    for r in (c.get("/"), c.get("/static/style.css"), c.get("/nothing"), c.post("/test"),
              c.get("/favicon.ico", follow_redirects=False)):
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
        assert "script-src 'self';" in r.headers["content-security-policy"]
        assert r.headers["x-content-type-options"] == "nosniff" and r.headers["referrer-policy"] == "no-referrer"
    assert c.get("/favicon.ico").headers["content-type"].startswith("image/svg+xml")


def test_rate_limit(tmp_path):
    app, c = make(tmp_path, rate_per_s=0.01, rate_burst=3)
    start(c, "R1")  # the check is 1 of the 3
    codes = [c.post("/test", data={"seq": str(k), "objects": ["0"]}).status_code for k in (1, 2, 3)]
    assert codes == [200, 200, 429]
    assert participants(app)[0].n_tests == 2


def test_a_participant_who_uses_every_test_is_exported_with_the_budget(tmp_path):
    """A Nexiom session capped at 2 tests runs both: the export's max_tests is 2, and the fit of the exported data
    scores that participant's stop as forced (Features.must_stop), while one who stopped after 1 test chose to."""
    import torch
    from causalplay.models.choice import build_features

    from causalplay.data import load_trials
    from causalplay.serve.store import export_trials

    app, c = make(tmp_path, study=Study(practice=False, raw_ids=True, max_tests=2))
    for pid, n in (("U1", 2), ("U2", 1)):
        c.cookies.clear()
        start(c, pid)
        for k in range(n):
            assert c.post("/test", data={"seq": str(k + 1), "objects": [str(k)]}).status_code == 200
        if n == 2:  # the budget is spent: a third test is refused
            assert c.post("/test", data={"seq": "3", "objects": ["3"]}).status_code == 409
        c.post("/judge", data={"blickets": ["0"], "rule": "disjunctive"})
    assert [p.max_tests for p in participants(app)] == [2, 2]
    export_trials(f"sqlite:///{tmp_path / 'serve.db'}", tmp_path / "out")
    data = load_trials(tmp_path / "out")
    assert data.budgets() == {"U1": 2, "U2": 2}
    feats = build_features(data)
    stops = torch.nonzero(feats.choice == feats.n_options - 1).flatten()
    assert feats.must_stop[stops].tolist() == [True, False]
