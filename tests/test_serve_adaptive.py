"""Adaptive studies in ``causalplay serve`` (``[adaptive]`` in the study file): 20 simulated participants over real
HTTP on loopback, each given the design sequential ADO chooses at consent; the export read back by
``load_trials`` and fitted, no row lost; the server's ADO state checked against ``ado.update`` on the exported data
and every participant's design against ``ado.next_design`` under the state their consent read."""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("fastapi")

import httpx  # noqa: E402
from serve_server import TOKEN, Server  # noqa: E402
from sqlalchemy import create_engine, select  # noqa: E402
from sqlalchemy.orm import Session  # noqa: E402

import causalplay  # noqa: E402
from causalplay.data import load_nexiom, load_trials  # noqa: E402
from causalplay.design import Design, ado, designs_of  # noqa: E402
from causalplay.fitting import SVIOptions, load_fit  # noqa: E402
from causalplay.serve.adaptive import AdaptiveSpec  # noqa: E402
from causalplay.serve.store import AdoState, Event, Participant, export_trials  # noqa: E402
from causalplay.serve.study import Study  # noqa: E402

MODELS = ("positive", "random", "eig_sweep_single")
ADAPTIVE = """
[adaptive]
models = ["positive", "random", "eig_sweep_single"]
data = "nexiom"
prior = {positive = 0.4, random = 0.4, eig_sweep_single = 0.2}
draws = 30
seed = 0
choices = 2
sample = 24

[adaptive.fits]
positive = "fits/positive.nc"
random = "fits/random.nc"
eig_sweep_single = "fits/eig_sweep_single.nc"

[adaptive.space]
demonstrations = 1
told = [false, true]
"""
PRIOR = {"positive": 0.4, "random": 0.4, "eig_sweep_single": 0.2}
SEQ = re.compile(r'name="seq" value="(\d+)"')
RESULT = re.compile(r'<p class="result (lit|off)">Test (\d+):')


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory):
    """A study folder: two models fitted (tiny SVI) to the shipped Nexiom people, their netcdf files, study.toml."""
    root = tmp_path_factory.mktemp("adaptive")
    (root / "fits").mkdir()
    people = load_nexiom()
    for m in MODELS:
        fit = causalplay.fit(people, m, method="svi", svi=SVIOptions(steps=60, draws=40, progress=False), seed=0)
        fit.idata.to_netcdf(root / "fits" / f"{m}.nc")
    (root / "study.toml").write_text('title = "Adaptive"\ncontact = "lab@example.org"\ntask = "nexiom"\n'
                                     'practice = false\nraw_ids = true\n' + ADAPTIVE)
    return root


def play(url: str, k: int) -> dict:
    """One simulated participant: consent, check, 1-5 tests of a seeded random policy, an answer."""
    rng = np.random.default_rng([11, k])
    pid = f"ADA{k:02d}"
    with httpx.Client(base_url=url, follow_redirects=True, timeout=60.0) as c:
        assert c.get(f"/?PROLIFIC_PID={pid}").status_code == 200
        r = c.post("/consent", data={"consent": "yes", "pid": pid})
        assert r.status_code == 200 and r.url.path == "/check", r.text[-500:]
        told = re.search(r'id="n-blickets">(\d+)<', r.text)
        r = c.post("/check", data={"how": "test", "count": told.group(1) if told else "", "when": "ready"})
        assert r.url.path == "/task", r.text[-500:]
        n_demos = r.text.count("<figcaption>Example ")
        tests = []
        for _ in range(int(rng.integers(1, 6))):
            seq = SEQ.search(r.text).group(1)
            on = [str(i) for i in np.flatnonzero(rng.random(4) < 0.5)] or ["0"]
            r = c.post("/test", data={"seq": seq, "objects": on})
            assert r.status_code == 200 and r.url.path == "/task"
            lit, n = RESULT.search(r.text).groups()
            tests.append((tuple(int(i) for i in on), lit == "lit"))
            assert int(n) == len(tests)
        judged = [str(i) for i in np.flatnonzero(rng.random(4) < 0.5)]
        r = c.post("/judge", data={"blickets": judged, "rule": ["disjunctive", "conjunctive"][int(rng.integers(2))]})
        assert r.url.path == "/debrief"
    return {"pid": pid, "told": None if told is None else int(told.group(1)), "n_demos": n_demos, "tests": tests}


def counted(engine) -> int:
    with Session(engine) as s:
        row = s.get(AdoState, "causalplay/Nexiom-v0")
        return 0 if row is None else row.n_participants


def wait_counted(engine, n: int, timeout: float = 30.0) -> None:
    t0 = time.monotonic()
    while counted(engine) < n:
        assert time.monotonic() - t0 < timeout, f"the ADO state counts {counted(engine)} of {n} after {timeout} s"
        time.sleep(0.05)


def test_twenty_participants_over_http(study_dir, tmp_path):
    db = tmp_path / "adaptive.db"
    engine = create_engine(f"sqlite:///{db}")
    played = []
    with Server(f"sqlite:///{db}", "nexiom", 0, None, "--study", str(study_dir / "study.toml")).start(120) as srv:
        # 4 waves of 5 concurrent participants; between waves the finished ones are counted (after the response)
        with ThreadPoolExecutor(5) as pool:
            for wave in range(4):
                played += pool.map(lambda k: play(srv.url, k), range(5 * wave, 5 * wave + 5))
                wait_counted(engine, 5 * wave + 5)
        table = httpx.get(srv.url + "/admin/table", headers={"Authorization": f"Bearer {TOKEN}"}).text
    assert len(played) == 20

    with Session(engine) as s:
        ps = {p.code: p for p in s.scalars(select(Participant)).all()}
        designs = {c: Design.from_dict(json.loads(p.design)) for c, p in ps.items()}
        seen = {c: json.loads(e.payload) for c, e in ((p.code, s.scalars(select(Event).where(
            Event.participant_id == p.id, Event.kind == "consent")).one()) for p in ps.values())}
        state = json.loads(s.get(AdoState, "causalplay/Nexiom-v0").state)
        rows = {c: [(t.source, t.objects_on, t.lit) for t in p.tests] for c, p in ps.items()}
    # every participant got a design, was shown its demonstrations and told its count, played in its world
    for g in played:
        d = designs[g["pid"]]
        assert g["n_demos"] == len(d.demonstrations) and g["told"] == d.n_blickets_told
        assert (ps[g["pid"]].rule, ps[g["pid"]].true_blickets) == (d.rule, " ".join(map(str, d.blickets)))
        assert rows[g["pid"]] == [("demonstration", " ".join(map(str, on)), lit) for on, lit in d.demonstrations] \
            + [("participant", " ".join(map(str, on)), lit) for on, lit in g["tests"]]
        # the deterministic machine of the design answered every test
        assert all(lit == d.lights(on) for on, lit in g["tests"])
    # a consent reads the state as stored: every earlier wave counted (between waves), at most the 4 others of its
    # own wave besides
    for k in range(20):
        assert 5 * (k // 5) <= seen[f"ADA{k:02d}"]["ado_counted"] <= 5 * (k // 5) + 4

    # the export: every row, read back by load_trials; each participant's design is their history prefix
    out = tmp_path / "export"
    n_rows = sum(g["n_demos"] + len(g["tests"]) for g in played)
    assert export_trials(f"sqlite:///{db}", out) == (20, n_rows)
    data = load_trials(out, impossible="raise")
    assert len(data) == 20 and len(data.tests) == n_rows
    assert int(data.is_choice.sum()) == sum(len(g["tests"]) for g in played)
    assert data.n_choices == sum(len(g["tests"]) + 1 for g in played)  # every test and each stop
    # the export records each one's budget: the design's, or the task's where the design leaves it to the task
    assert designs_of(data) == {c: replace(d, max_tests=d.max_tests or ps[c].max_tests) for c, d in designs.items()}
    assert all(p.max_tests == 16 for p in ps.values())  # Nexiom's own budget; the space sets none
    fit = causalplay.fit(data, "positive", method="svi", svi=SVIOptions(steps=10, draws=5, progress=False), seed=0)
    assert list(fit.idata.posterior["participant"].values) == data.ids

    # the server's state: all 20, the posterior that ado.update gives on the exported data
    fits = {m: load_fit(study_dir / "fits" / f"{m}.nc", load_nexiom(), model=m) for m in MODELS}
    start = ado.start(list(MODELS), PRIOR, draws=30, seed=0, choices=2)
    mine = ado.update(start, data, fits)
    assert sorted(p["id"] for p in state["participants"]) == sorted(data.ids)
    assert ado.posterior(state) == pytest.approx(ado.posterior(mine), abs=1e-12)
    by_id = {p["id"]: p["log_evidence"] for p in mine["participants"]}
    for p in state["participants"]:
        assert p["log_evidence"] == pytest.approx(by_id[p["id"]], abs=1e-12)
    # every design is next_design under the state its consent read (the first n counted participants)
    spec = AdaptiveSpec.from_table(_table())
    cands = ado.prepare(fits, spec.candidate_designs(4), start)
    for code, e in seen.items():
        assert designs[code] == ado.next_design({**state, "participants": state["participants"][:e["ado_counted"]]},
                                                cands)
    # the dashboard shows the posterior of the 20
    post = ado.posterior(state)
    assert "after 20 counted participants" in table
    for m in MODELS:
        assert f"<td>{m}</td><td>{PRIOR[m]:.3f}</td><td>{post[m]:.3f}</td>" in table


def _table() -> dict:
    import tomllib

    return tomllib.loads(ADAPTIVE)["adaptive"]


@pytest.mark.parametrize("change, message", [
    ({"draws": 0}, "adaptive.draws must be an integer >= 1, got 0"),
    ({"choices": "2"}, "adaptive.choices must be an integer >= 1"),
    ({"seed": -1}, "adaptive.seed must be an integer >= 0"),
    ({"models": "positive"}, "adaptive.models must be a non-empty list of model names"),
    ({"models": ["positive", "positive"]}, "names a model twice"),
    ({"fits": {"positive": "a.nc"}}, "adaptive.fits must be a table model"),
    ({"data": 3}, "adaptive.data must be the folder"),
    ({"prior": {"positive": 1}}, "adaptive.prior must give a weight to exactly the models"),
    ({"prior": [1, -1, 1]}, "adaptive.prior must be 3 weights >= 0"),
    ({"prior": [0, 0, 0]}, "adaptive.prior must be 3 weights >= 0"),
    ({"prior": [1, 1]}, "adaptive.prior must be 3 weights >= 0"),
    ({"designs": [{"rule": "conjunctive", "blickets": [0, 1]}]}, "exactly one of adaptive.space"),
    ({"space": {"demonstration": 1}}, "unknown key 'demonstration' in adaptive.space"),
    ({"space": {"told": [1]}}, "adaptive.space.told must be a non-empty list of bools"),
    ({"space": {"demonstrations": "1"}}, "adaptive.space.demonstrations must be a int"),
    ({"sample": 1.5}, "adaptive.sample must be an integer >= 0"),
    ({"samples": 0}, "adaptive.samples must be an integer >= 1"),
    ({"budget": 3}, "unknown key(s) ['budget'] in [adaptive]"),
])
def test_adaptive_table_is_checked(change, message):
    t = _table() | change
    with pytest.raises(ValueError) as err:
        Study(adaptive=t)
    assert message in str(err.value)


def test_adaptive_designs_list_and_refusals(study_dir, tmp_path):
    from causalplay.serve.app import ServeConfig, create_app

    t = {k: v for k, v in _table().items() if k != "space"}
    bad = t | {"designs": [{"rule": "conjunctive", "blickets": [0, 1], "demonstrations": [[0, 4]]}]}
    with pytest.raises(ValueError, match=r"adaptive.designs\[0\]: demonstration 0: object index 4"):
        AdaptiveSpec.from_table(bad).candidate_designs(4)
    with pytest.raises(ValueError, match=r"adaptive.designs\[0\] needs \['blickets'\]"):
        Study(adaptive=t | {"designs": [{"rule": "conjunctive"}]})
    good = AdaptiveSpec.from_table(t | {"designs": [{"rule": "conjunctive", "blickets": [0, 1],
                                                     "demonstrations": [[0, 1], [2]], "n_blickets_told": 2}]})
    assert good.candidate_designs(4) == [Design(4, (0, 1), "conjunctive", [(0, 1), (2,)], 2)]
    # conditions and an adaptive table exclude each other; only a task of (rule, blickets) worlds can be adaptive
    with pytest.raises(ValueError, match="remove its"):
        Study(adaptive=_table(), conditions=({"rule": "conjunctive", "blickets": [0, 1]},))
    spec = AdaptiveSpec.from_table(_table()).relative_to(study_dir)
    with pytest.raises(ValueError, match=r"needs a task whose conditions are a world \(rule, blickets\).*'ivre'"):
        create_app(ServeConfig(db=f"sqlite:///{tmp_path / 'i.db'}", study=Study(task="ivre", adaptive=spec)))
    with pytest.raises(ValueError, match="adaptive.fits.positive: no file"):
        create_app(ServeConfig(db=f"sqlite:///{tmp_path / 'n.db'}",
                               study=Study(adaptive=AdaptiveSpec.from_table(_table()).relative_to(tmp_path))))
    # a database holding another study's state is refused
    url = f"sqlite:///{tmp_path / 's.db'}"
    create_app(ServeConfig(db=url, study=Study(adaptive=spec)))
    other = AdaptiveSpec.from_table(_table() | {"prior": [0.5, 0.25, 0.25]}).relative_to(study_dir)
    with pytest.raises(ValueError, match="use a new database"):
        create_app(ServeConfig(db=url, study=Study(adaptive=other)))


def test_documented_adaptive_study_file_parses(tmp_path):
    """docs/serve.md's adaptive example (its second TOML block) is a valid study file with a 384-design space."""
    from pathlib import Path

    from causalplay.serve.study import load_study

    text = (Path(__file__).resolve().parents[1] / "docs" / "serve.md").read_text()
    example = re.findall(r"```toml\n(.*?)```", text, re.S)[1]
    (tmp_path / "study.toml").write_text(example)
    spec = load_study(tmp_path / "study.toml").adaptive
    assert spec.models == ("positive", "random", "eig_sweep_single") and spec.prior == (0.4, 0.4, 0.2)
    assert spec.fits[0] == str(tmp_path / "runs/pilot/fits/positive.nc") and spec.data == str(tmp_path / "pilot")
    # 2 rules x 6 blicket pairs x (1 + 15 one-set histories) x told or not
    assert len(spec.candidate_designs(4)) == 2 * 6 * 16 * 2 == 384


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"
        return
    from serve_server import postgres

    with postgres() as (url, reason):
        if url is None:
            pytest.skip(reason)
        yield url


def test_two_servers_share_the_state(study_dir, db_url, monkeypatch):
    """Two apps on one database (as two server processes): a consent on either reads the state the other wrote;
    both counting the same finished participant at once records them once."""
    from fastapi.testclient import TestClient

    from causalplay.serve.app import ServeConfig, create_app

    spec = AdaptiveSpec.from_table(_table()).relative_to(study_dir)
    apps = [create_app(ServeConfig(db=db_url, admin_token=TOKEN, study=Study(practice=False, raw_ids=True,
                                                                             adaptive=spec))) for _ in range(2)]
    rts = [a.state.rt for a in apps]

    def take_part(app, pid):
        c = TestClient(app, base_url="http://127.0.0.1")
        r = c.post("/consent", data={"consent": "yes", "pid": pid})
        told = re.search(r'id="n-blickets">(\d+)<', r.text)
        r = c.post("/check", data={"how": "test", "count": told.group(1) if told else "", "when": "ready"})
        r = c.post("/test", data={"seq": SEQ.search(r.text).group(1), "objects": ["0", "1"]})
        assert c.post("/judge", data={"blickets": ["0"], "rule": "conjunctive"}).url.path == "/debrief"

    def consent_counted(pid):
        with Session(apps[0].state.engine) as s:
            p = s.scalars(select(Participant).where(Participant.code == pid)).one()
            return json.loads(s.scalars(select(Event.payload).where(Event.participant_id == p.id,
                                                                    Event.kind == "consent")).one())["ado_counted"]

    take_part(apps[0], "X")  # counted by app 0 after its answer (TestClient runs the background task)
    assert rts[1].adaptive.catch_up(rts[1]) == 0  # app 1 finds X counted
    take_part(apps[1], "Y")  # app 1's consent read the state app 0 wrote
    assert consent_counted("Y") == 1
    # Z finishes with its counting lost (say, the process died after answering); both apps then count at once
    monkeypatch.setattr(rts[0].adaptive, "catch_up_soon", lambda r: None)
    take_part(apps[0], "Z")
    with ThreadPoolExecutor(2) as pool:
        added = list(pool.map(lambda rt: rt.adaptive.catch_up(rt), rts))
    assert sorted(added) == [0, 1]
    with Session(apps[0].state.engine) as s:
        row = s.get(AdoState, "causalplay/Nexiom-v0")
        state, version = json.loads(row.state), row.version
    assert sorted(p["id"] for p in state["participants"]) == ["X", "Y", "Z"] and row.n_participants == 3
    assert version == 3  # one write per participant counted, none for the count that found nothing new
    take_part(apps[1], "W")
    assert consent_counted("W") == 3
