"""The experimenter's pages of ``causalplay serve`` (an :class:`fastapi.APIRouter`, every route behind
:func:`~causalplay.serve.deps.require_admin`).

``/admin`` is the dashboard: per condition (by label) the sessions started, completed, active and abandoned
(idle longer than the study's ``timeout_minutes`` without finishing) and the median minutes to complete; per
session the participant code, condition, stage, tests, comprehension attempts, start and last activity. Its
table re-loads itself every 5 s (htmx polling ``/admin/table``). The token may come as ``Authorization: Bearer``
or ``?token=``; the dashboard then sets an HttpOnly cookie (a keyed hash of the token, not the token) so its
links and polling work either way. An adaptive study's dashboard also shows the posterior over its models, the
participants it counts (and those finished but not yet counted) and the design the next participant gets.
``/admin/export.zip`` is the CSV export (``causalplay export``'s schema).
"""

from __future__ import annotations

import io
import statistics
import tempfile
import time
import zipfile
from pathlib import Path

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from sqlalchemy import func, select

from .deps import ADMIN_COOKIE, HTTPProblem, Reads, Rt, require_admin
from .store import Participant, TrialRow, export_trials

router = APIRouter(prefix="/admin", dependencies=[Depends(require_admin)])


def _utc(t: float | None) -> str:
    return "" if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))


def dashboard(r, s) -> dict:
    """The dashboard's numbers, from the database as it is now."""
    now, task = time.time(), r.task
    ps = s.scalars(select(Participant).where(Participant.task == task.env_id).order_by(Participant.slot)).all()
    n_tests = dict(s.execute(select(TrialRow.participant_id, func.count()).where(TrialRow.source == "participant")
                             .group_by(TrialRow.participant_id)).all())
    per = [{"label": lab, "started": 0, "completed": 0, "active": 0, "abandoned": 0, "minutes": []}
           for lab in task.labels]
    rows = []
    for p in ps:
        last = p.last_active_at or p.consented_at
        status = ("completed" if p.stage == "done" else
                  "abandoned" if now - last > 60 * r.study.timeout_minutes else "active")
        minutes = None if p.finished_at is None else (p.finished_at - p.consented_at) / 60
        if 0 <= p.condition < len(per):
            c = per[p.condition]
            c["started"] += 1
            c[status] += 1
            if minutes is not None:
                c["minutes"].append(minutes)
        rows.append({"code": p.code, "study_id": p.study_id or "", "condition": p.condition,
                     "label": task.labels[p.condition] if 0 <= p.condition < len(per) else "?", "stage": p.stage,
                     "status": status, "n_tests": n_tests.get(p.id, 0), "attempts": p.check_attempts,
                     "started": _utc(p.consented_at), "last": _utc(last),
                     "idle": "" if p.stage == "done" else f"{(now - last) / 60:.0f}",
                     "minutes": "" if minutes is None else f"{minutes:.1f}"})
    for c in per:
        c["median"] = f"{statistics.median(c['minutes']):.1f}" if c["minutes"] else ""
    done = [m for c in per for m in c["minutes"]]
    return {"rows": rows, "per": per, "updated": _utc(now), "n": len(rows),
            "adaptive": None if r.adaptive is None else r.adaptive.summary(s),
            "done": sum(c["completed"] for c in per), "median": f"{statistics.median(done):.1f}" if done else ""}


@router.get("")
def admin(request: Request, db: Reads, r: Rt):
    with db.read(who=False) as (s, _):
        resp = r.page(request, "admin.html", **dashboard(r, s), token=request.query_params.get("token", ""))
    resp.set_cookie(ADMIN_COOKIE, r.admin_cookie, httponly=True, samesite="strict", secure=r.cfg.secure_cookie,
                    path=f"{r.cfg.root_path}/admin")
    return resp


@router.get("/table")
def admin_table(request: Request, db: Reads, r: Rt):
    with db.read(who=False) as (s, _):
        return r.page(request, "_admin_table.html", **dashboard(r, s), token=request.query_params.get("token", ""))


@router.get("/export.zip")
def admin_export(db: Reads, r: Rt, include_incomplete: bool = False):
    with db.read(who=False) as (s, _):
        none = s.scalars(select(Participant.id).where(Participant.task == r.task.env_id)).first() is None
    if none:
        raise HTTPProblem(404, f"No session of {r.task.env_id} yet: nothing to export.")
    with tempfile.TemporaryDirectory() as tmp:
        export_trials(r.engine, tmp, task=r.task.env_id, include_incomplete=include_incomplete)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for name in ("participants.csv", "tests.csv"):
                z.write(Path(tmp) / name, name)
    return Response(buf.getvalue(), media_type="application/zip",
                    headers={"Content-Disposition": 'attachment; filename="causalplay-export.zip"',
                             "Cache-Control": "no-store"})
