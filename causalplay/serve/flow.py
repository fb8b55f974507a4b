"""The participant's pages of ``causalplay serve`` (an :class:`fastapi.APIRouter`).

``GET /`` (consent and instructions; ``?PROLIFIC_PID=&STUDY_ID=&SESSION_ID=`` name the participant) ->
``POST /consent`` (creates the session, assigns the condition, shows the resume code) -> ``/check``
(comprehension check) -> ``/practice`` (a practice machine, if the study has one) -> ``/task`` (context panels,
then tests: ``POST /test``) -> ``/judge`` (which objects are blickets, which rule) -> ``/debrief`` (the truth,
shown only once the judgement is stored). ``/resume`` continues a session on another browser with the
participant id and resume code (the old browser's session ends). Every page works without JavaScript (plain
forms, POST-redirect-GET); htmx swaps the task panel in place after a test, and ``GET /panel`` re-syncs it after
a lost connection.

Every test carries its number (``seq``): a repeated or out-of-date one (a lost answer resent, a double click, a
second tab) stores nothing and answers with the task as stored, the outcome of the test that did arrive included.
"""

from __future__ import annotations

import hmac
import json
import secrets
import time

from fastapi import APIRouter, BackgroundTasks, Form, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy import func, or_, select, text
from sqlalchemy.exc import IntegrityError

from .adaptive import design_of
from .deps import COOKIE, ID_RE, HTTPProblem, Reads, Rt, Runtime, Writes, ids_of, number, objects_of
from .store import Event, Participant, TrialRow, log_event
from .tasks import assign_condition, episode_seed

router = APIRouter()

_SLOT_LOCK = 0x6361_7573_616C  # advisory-lock key for slot assignment on Postgres ("causal")
_CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read aloud or copied by hand
# The practice machine: the same for everyone (so it tells nothing about anyone's world), one blicket of three.
PRACTICE_OBJECTS = (("cube", "rubber", "gray"), ("sphere", "rubber", "gray"), ("cylinder", "rubber", "gray"))
PRACTICE_BLICKET, PRACTICE_TESTS = 1, 3
STAGE_URL = {"check": "/check", "practice": "/practice", "task": "/task", "done": "/debrief"}


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def _fmt_set(idx) -> str:
    return " ".join(str(i) for i in sorted(idx))


def shown(r: Runtime, p: Participant) -> tuple:
    """``(context panels, blicket count told or None, test budget)`` of the participant's task: an adaptive
    design's demonstrations, told count and budget, else the task's context panels, its blicket count (always
    told) and its budget."""
    w = r.task.world(p.condition, p.episode_seed)
    if p.design:
        d = design_of(p.design)
        return d.demonstrations, d.n_blickets_told, budget_of(d, w)
    return w.context, w.n_blickets, budget_of(None, w)


def budget_of(design, w) -> int:
    """The tests a participant may run: an adaptive design's budget where it sets one, else the task's."""
    return design.max_tests if design is not None and design.max_tests else w.max_tests


def task_view(r: Runtime, s, p: Participant) -> dict:
    """What the participant may see before judging: no rule, no blickets (only a count they are told)."""
    if p.stage == "practice":
        ev = s.scalars(select(Event.payload).where(Event.participant_id == p.id, Event.kind == "practice")
                       .order_by(Event.id)).all()
        tests = [(tuple(d["objects_on"]), d["lit"]) for d in map(json.loads, ev)]
        return {"practice": True, "n_objects": len(PRACTICE_OBJECTS), "n_blickets": 1, "objects": PRACTICE_OBJECTS,
                "context": (), "tests": tests, "seq": len(tests) + 1, "max_tests": PRACTICE_TESTS,
                "tests_left": PRACTICE_TESTS - len(tests), "p": p}
    w = r.task.world(p.condition, p.episode_seed)
    context, told, budget = shown(r, p)
    own = [(tuple(int(i) for i in t.objects_on.split()), bool(t.lit)) for t in p.tests if t.source == "participant"]
    return {"practice": False, "n_objects": w.n_objects, "n_blickets": told, "objects": w.objects,
            "context": context, "tests": own, "seq": p.n_tests + 1, "max_tests": budget,
            "tests_left": budget - len(own), "p": p}


@router.get("/")
def consent_page(request: Request, db: Reads, r: Rt, PROLIFIC_PID: str | None = None,
                 STUDY_ID: str | None = None, SESSION_ID: str | None = None):
    ids = ids_of(PROLIFIC_PID=PROLIFIC_PID, STUDY_ID=STUDY_ID, SESSION_ID=SESSION_ID)
    pid = ids.get("PROLIFIC_PID")
    token = request.cookies.get(COOKIE)
    with db.read(who=False) as (s, _):
        mine = s.execute(select(Participant.code, Participant.stage).where(Participant.session_token == token)) \
            .first() if token else None
        started = pid and s.scalars(select(Participant.id).where(Participant.code == pid)).first() is not None
    if mine is not None and pid in (None, mine.code):
        return redirect(STAGE_URL[mine.stage])
    if started:
        return r.page(request, "resume.html", pid=pid, started=True)
    return r.page(request, "consent.html", step="Consent", pid=pid or "", study_id=ids.get("STUDY_ID", ""),
                  session_id=ids.get("SESSION_ID", ""))


@router.post("/consent")
def consent(request: Request, r: Rt, consent: str = Form(""), pid: str = Form(""), study_id: str = Form(""),
            session_id: str = Form("")):
    if consent != "yes":
        raise HTTPProblem(400, "Please tick the consent box to take part.")
    ids_of(participant_ID=pid, STUDY_ID=study_id, SESSION_ID=session_id)
    host = request.client.host if request.client else "?"
    if not r.new_limiter.allow(host):
        raise HTTPProblem(429, "Too many new sessions from this address; please wait.", {"Retry-After": "5"})
    token = secrets.token_urlsafe(32)
    code, source = (pid, "prolific") if pid else ("gen-" + secrets.token_hex(8), "generated")
    task = r.task
    for _attempt in range(20):
        try:
            with r.writing() as s:
                if s.get_bind().dialect.name == "postgresql":
                    # Conditions are counted, so concurrent consents must take turns (across server processes
                    # too): a transaction-scoped advisory lock, released at commit.
                    s.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SLOT_LOCK})
                if s.scalars(select(Participant.id).where(Participant.code == code)).first() is not None:
                    return redirect(f"/resume?pid={code}")
                now = time.time()
                slot = s.scalar(select(func.count()).select_from(Participant).where(Participant.task == task.env_id))
                design, chosen = None, {}
                if r.adaptive is not None:
                    # the design ADO picks under the state as stored now (read in this transaction, so the
                    # latest any server process wrote); its world is the condition
                    design, cond, version, counted = r.adaptive.choose(s)
                    chosen = {"design": design.to_dict(), "ado_version": version, "ado_counted": counted}
                else:
                    # completed sessions and those still active hold their condition; abandoned ones free it
                    held = dict(s.execute(select(Participant.condition, func.count()).where(
                        Participant.task == task.env_id, or_(Participant.stage == "done", Participant.last_active_at
                                                             >= now - 60 * r.study.timeout_minutes))
                        .group_by(Participant.condition)).all())
                    counts = [held.get(c, 0) for c in range(len(task.conditions))]
                    cond = assign_condition(r.cfg.seed, counts)
                    chosen = {"held": counts}
                seed = episode_seed(r.cfg.seed, slot)
                w = task.world(cond, seed)
                # panels shown before the participant's own tests: the design's demonstrations, else the task's
                # context panels
                shown_first = [(on, lit, "demonstration") for on, lit in design.demonstrations] if design else \
                    [(on, lit, "context") for on, lit in w.context]
                p = Participant(code=code, code_source=source, session_token=token, task=task.env_id, slot=slot,
                                condition=cond, design_seed=r.cfg.seed, episode_seed=seed, n_objects=w.n_objects,
                                rule=w.rule, true_blickets=_fmt_set(w.blickets), stage="check", check_attempts=0,
                                n_tests=len(shown_first), consented_at=now, export_id=r.export_id(code),
                                study_id=study_id or None, session_id=session_id or None,
                                resume_code="".join(secrets.choice(_CODE_ALPHABET) for _ in range(8)),
                                design=json.dumps(design.to_dict()) if design else None,
                                max_tests=budget_of(design, w))
                s.add(p)
                s.flush()
                for k, (on, lit, kind) in enumerate(shown_first, start=1):
                    s.add(TrialRow(participant_id=p.id, test=k, objects_on=_fmt_set(on), lit=lit, source=kind,
                                   created_at=now))
                log_event(s, p, "consent", slot=slot, condition=cond, code_source=source, **chosen)
            break
        except IntegrityError:
            # Another session took this slot or this code at the same moment (possible only where the database
            # does not serialise consents): look again.
            continue
    else:
        raise HTTPProblem(503, "The server is busy; please try again.")
    resp = redirect("/check")
    resp.set_cookie(COOKIE, token, httponly=True, samesite="lax", secure=r.cfg.secure_cookie, max_age=7 * 24 * 3600)
    return resp


@router.get("/check")
def check_page(request: Request, db: Reads, r: Rt):
    with db.read() as (s, p):
        if p.stage != "check":
            return redirect(STAGE_URL[p.stage])
        w = r.task.world(p.condition, p.episode_seed)
        _, told, budget = shown(r, p)
        return r.page(request, "check.html", step="Questions", p=p, n_blickets=told, n_objects=w.n_objects,
                      max_tests=budget, wrong=request.query_params.get("wrong"))


@router.post("/check")
def check(db: Writes, r: Rt, how: str = Form(""), count: str = Form(""), when: str = Form("")):
    with db.write() as (s, p):
        if p.stage != "check":
            raise HTTPProblem(409, "The comprehension check was already passed.")
        if how not in ("test", "ask", "guess") or when not in ("ready", "once", "never"):
            raise HTTPProblem(422, "Please answer every question of the comprehension check.")
        told = shown(r, p)[1]
        # a participant not told the count is not asked it
        n = None if told is None else number(count.strip(), "the number of blickets")
        ok = how == "test" and when == "ready" and n == told
        p.check_attempts += 1
        log_event(s, p, "check", how=how, count=n, when=when, passed=ok)
        if ok:
            _advance(p, "practice" if r.study.practice else "task")
        return redirect(STAGE_URL[p.stage] if ok else "/check?wrong=1")


def _advance(p: Participant, stage: str) -> None:
    p.stage = stage
    if stage == "task":
        p.task_started_at = time.time()


@router.get("/practice")
def practice_page(request: Request, db: Reads, r: Rt):
    with db.read() as (s, p):
        if p.stage != "practice":
            return redirect(STAGE_URL[p.stage])
        return r.page(request, "task.html", step="Practice", **task_view(r, s, p))


@router.post("/practice/done")
def practice_done(db: Writes):
    with db.write() as (s, p):
        if p.stage == "practice":
            _advance(p, "task")
            log_event(s, p, "practice_done")
        return redirect(STAGE_URL[p.stage])


@router.get("/task")
def task_page(request: Request, db: Reads, r: Rt):
    with db.read() as (s, p):
        if p.stage != "task":
            return redirect(STAGE_URL[p.stage])
        return r.page(request, "task.html", step="Task", **task_view(r, s, p),
                      need_test=request.query_params.get("need"))


@router.get("/panel")
def panel(request: Request, db: Reads, r: Rt):
    """The task (or practice) panel as stored: what the page's script fetches after a lost connection."""
    with db.read() as (s, p):
        if p.stage not in ("task", "practice"):
            return Response(status_code=204, headers={"HX-Redirect": STAGE_URL[p.stage]})
        return r.page(request, "_panel.html", **task_view(r, s, p), notice="Connected again: your tests as the "
                      "server stored them are shown.")


@router.post("/test")
@router.post("/practice/test")
def run_test(request: Request, db: Writes, r: Rt, seq: str = Form(""), objects: list[str] = Form([])):
    practice, htmx = request.url.path.endswith("/practice/test"), bool(request.headers.get("HX-Request"))
    with db.write() as (s, p):
        if p.stage != ("practice" if practice else "task"):
            raise HTTPProblem(409, "The practice is over." if practice else "Tests can only be run during the task.")
        view = task_view(r, s, p)
        n, trial = number(seq, "seq"), objects_of(objects, view["n_objects"], "objects")
        if n != view["seq"]:
            # A test that already arrived (its answer was lost, or the button was pressed twice) or a stale page:
            # nothing is stored; the answer is the task as stored, so the outcome of the test that did arrive shows.
            if htmx:
                return r.page(request, "_panel.html", **view, notice=f"Test {n} had already reached the server; "
                              "this is where you are.")
            return redirect(STAGE_URL[p.stage])
        if view["tests_left"] <= 0:
            raise HTTPProblem(409, f"All {view['max_tests']} tests are used; please give your answer.")
        if practice:
            log_event(s, p, "practice", test=n, objects_on=list(trial), lit=PRACTICE_BLICKET in trial)
        else:
            lit = r.task.outcome(p.condition, p.episode_seed, [on for on, _ in view["tests"]], trial)
            p.n_tests += 1
            s.add(TrialRow(participant_id=p.id, test=p.n_tests, objects_on=_fmt_set(trial), lit=lit,
                           source="participant", created_at=time.time()))
            log_event(s, p, "test", test=p.n_tests, objects_on=list(trial), lit=lit)
            s.flush()
            s.refresh(p)
        return r.page(request, "_panel.html", **task_view(r, s, p)) if htmx else redirect(STAGE_URL[p.stage])


@router.get("/judge")
def judge_page(request: Request, db: Reads, r: Rt):
    with db.read() as (s, p):
        if p.stage != "task":
            return redirect(STAGE_URL[p.stage])
        view = task_view(r, s, p)
        if not view["tests"]:
            return redirect("/task?need=1")
        return r.page(request, "judge.html", step="Answer", **view)


@router.post("/judge")
def judge(db: Writes, r: Rt, background: BackgroundTasks, blickets: list[str] = Form([]), rule: str = Form("")):
    with db.write() as (s, p):
        if p.stage != "task":
            raise HTTPProblem(409, "The answer was already given." if p.stage == "done" else
                              "The task has not started yet.")
        if not any(t.source == "participant" for t in p.tests):
            raise HTTPProblem(409, "Please run at least one test before answering.")
        judged = objects_of(blickets, p.n_objects, "blickets")
        if rule not in r.task.rule_names:
            raise HTTPProblem(422, f"rule must be one of {list(r.task.rule_names)}, got {rule[:20]!r}")
        p.judged_blickets, p.rule_choice = _fmt_set(judged), rule
        p.stage, p.finished_at = "done", time.time()
        log_event(s, p, "judge", blickets=list(judged), rule=rule)
    if r.adaptive is not None:
        # after the response, in the thread pool: the participant's marginal likelihoods take a moment, and no
        # request waits for them (consents meanwhile get the design of the state as it is)
        background.add_task(r.adaptive.catch_up_soon, r)
    return redirect("/debrief")


@router.get("/debrief")
def debrief(request: Request, db: Reads, r: Rt):
    with db.read() as (s, p):
        if p.stage != "done":
            return redirect(STAGE_URL[p.stage])
        # Only here, once the judgement is stored, is the truth read and shown.
        w = r.task.world(p.condition, p.episode_seed)
        return r.page(request, "debrief.html", truth=[int(i) for i in p.true_blickets.split()], rule=p.rule,
                      judged=[int(i) for i in p.judged_blickets.split()], rule_choice=p.rule_choice,
                      objects=w.objects, p=p)


@router.get("/resume")
def resume_page(request: Request, r: Rt, pid: str = ""):
    return r.page(request, "resume.html", pid=pid if ID_RE.fullmatch(pid) else "")


@router.post("/resume")
def resume(request: Request, r: Rt, pid: str = Form(""), code: str = Form("")):
    """A new session token for the participant ``pid`` whose resume code is ``code`` (the old one stops working)."""
    host = request.client.host if request.client else "?"
    if not r.new_limiter.allow(host):  # also what bounds guessing codes
        raise HTTPProblem(429, "Too many attempts from this address; please wait.", {"Retry-After": "5"})
    code = code.strip().upper().replace("-", "").replace(" ", "")
    token = secrets.token_urlsafe(32)
    with r.writing() as s:
        p = s.scalars(select(Participant).where(Participant.code == pid)).first() if ID_RE.fullmatch(pid) else None
        if p is None or not p.resume_code or not hmac.compare_digest(code.encode(), p.resume_code.encode()):
            return r.page(request, "resume.html", status=403, pid=pid if ID_RE.fullmatch(pid) else "", wrong=True)
        p.session_token = token
        log_event(s, p, "resume")
        stage = p.stage
    resp = redirect(STAGE_URL[stage])
    resp.set_cookie(COOKIE, token, httponly=True, samesite="lax", secure=r.cfg.secure_cookie, max_age=7 * 24 * 3600)
    return resp
