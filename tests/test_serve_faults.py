"""A `causalplay serve` process killed with SIGKILL mid-session loses nothing it acknowledged (SQLite)."""

import re
import sqlite3
import threading
import time

import pytest

pytest.importorskip("fastapi")

import httpx  # noqa: E402
from serve_server import Server  # noqa: E402

TRIALS = [(0,), (1,), (2,), (3,), (0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (0, 1, 2), (1, 2, 3), (0, 1, 2, 3),
          (), (0, 3), (1, 2)]


def _last_result(html: str) -> tuple[int, bool]:
    m = re.search(r"Test (\d+):.*?the machine <strong>(lit up|did not light up)</strong>", html, re.S)
    assert m, html[-2000:]
    return int(m.group(1)), m.group(2) == "lit up"


def test_sigkill_mid_session_loses_nothing_acknowledged(tmp_path):
    from causalplay.data import load_trials
    from causalplay.serve.store import export_trials

    path = tmp_path / "k.db"
    db = f"sqlite:///{path}"
    srv = Server(db, "nexiom", 2, None, "--rate", "1000", "--burst", "1000").start()
    c = httpx.Client(base_url=srv.url, follow_redirects=True, timeout=10)
    try:
        c.get("/?PROLIFIC_PID=K1")
        c.post("/consent", data={"consent": "yes", "pid": "K1"})
        assert c.post("/check", data={"how": "test", "count": "2", "when": "ready"}).url.path == "/practice"
        assert c.post("/practice/done").url.path == "/task"
        acked: list[tuple[int, tuple, bool]] = []
        failures: list[str] = []

        def fire():
            # tests back to back until the server dies under us; an answered test is an acknowledged one
            for k, on in enumerate(TRIALS, start=1):
                try:
                    r = c.post("/test", data={"seq": str(k), "objects": [str(i) for i in on]})
                except httpx.HTTPError as err:
                    failures.append(type(err).__name__)
                    return
                if r.status_code != 200:
                    failures.append(str(r.status_code))
                    return
                n, lit = _last_result(r.text)
                if n != k:
                    failures.append(f"test {k} answered as test {n}")
                    return
                acked.append((k, on, lit))

        th = threading.Thread(target=fire)
        th.start()
        t0 = time.monotonic()
        while len(acked) < 3 and time.monotonic() - t0 < 60:
            time.sleep(0.005)
        srv.kill()  # SIGKILL, most likely with a test in flight
        th.join(20)
        assert 3 <= len(acked) < len(TRIALS), (acked, failures)  # the kill did land mid-session
        transport = ("RemoteProtocolError", "ConnectError", "ReadError", "WriteError")  # the server went away
        assert not failures or failures[0] in transport, failures

        # the file is consistent and holds every acknowledged test (an unanswered one may or may not be there)
        con = sqlite3.connect(path)
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = con.execute("select t.test, t.objects_on, t.lit from tests t join participants p "
                           "on p.id = t.participant_id where p.code = 'K1' order by t.test").fetchall()
        con.close()
        assert len(rows) in (len(acked), len(acked) + 1)
        for (k, on, lit), (tk, to, tl) in zip(acked, rows, strict=False):
            assert (tk, to, bool(tl)) == (k, " ".join(map(str, on)), lit)

        # restart on the same database: the participant resumes where the database says they are
        srv = Server(db, "nexiom", 2, None, "--rate", "1000", "--burst", "1000").start()
        c.base_url = srv.url
        page = c.get("/?PROLIFIC_PID=K1")
        assert page.url.path == "/task"
        seq = int(re.search(r'name="seq" value="(\d+)"', page.text).group(1))
        assert seq == len(rows) + 1
        # the test in flight at the kill, resent: nothing is added, the stored state is shown
        again = c.post("/test", data={"seq": str(seq - 1), "objects": ["0"]}, headers={"HX-Request": "true"})
        assert again.status_code == 200 and _last_result(again.text)[0] == seq - 1
        r = c.post("/test", data={"seq": str(seq), "objects": ["0", "1"]})
        assert r.status_code == 200 and _last_result(r.text)[0] == seq
        assert c.post("/judge", data={"blickets": ["0", "1"], "rule": "disjunctive"}).url.path == "/debrief"
    finally:
        c.close()
        srv.stop()
    export_trials(db, tmp_path / "out")
    d = load_trials(tmp_path / "out", n_objects=4, impossible="raise")
    assert d.participants["n_tests"].tolist() == [seq]  # the resent test added nothing
    assert [tuple(o) for o in d.tests["objects_on"]][:len(acked)] == [on for _, on, _ in acked]
    assert d.tests["lit"].tolist()[:len(acked)] == [lit for _, _, lit in acked]
