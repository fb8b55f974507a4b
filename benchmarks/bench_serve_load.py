"""Load test of ``causalplay serve``: simulated participants complete sessions concurrently on loopback.

Starts ``causalplay serve`` (one uvicorn process on 127.0.0.1 and a free port; ``--db sqlite``: a file in the
output folder, ``--db postgres``: a throw-away PostgreSQL server of the system's binaries, also on 127.0.0.1),
then runs ``--participants`` simulated participants at once with ``httpx.AsyncClient`` (one client, i.e. one
cookie jar, per participant). Each participant: consent page, consent, comprehension check, one practice test,
end of practice, 3-12 tests chosen at random (``--seed``) sent as htmx requests, answer page, answer, debrief;
``--think`` seconds (times a uniform 0.5-1.5 jitter) between steps. Every request times out after 60 s and the
whole run after ``--max-seconds``.

Checks after the run: every request answered 2xx/3xx (an error is any other status or a transport failure),
every session completed, and the export (``causalplay export``, read back with ``load_trials``) holds exactly
the tests each participant saw acknowledged, with the outcomes the pages announced ("lost rows": an
acknowledged test missing or different in the export). Prints the numbers and writes ``results.json``.

Usage::

    python benchmarks/bench_serve_load.py                              # 20 participants, SQLite, think 0.25 s
    python benchmarks/bench_serve_load.py --participants 100 --db postgres --think 2
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from serve_server import Server, postgres, write_study  # noqa: E402

RESULT = re.compile(r"Test (\d+):.*?the machine <strong>(lit up|did not light up)</strong>", re.S)


async def participant(k: int, url: str, rng: np.random.Generator, think: float, lat: list, errors: list,
                      acked: dict) -> bool:
    pid = f"LOAD{k:03d}"
    n_tests = int(rng.integers(3, 13))
    trials = [tuple(np.flatnonzero(rng.random(4) < 0.5).tolist()) for _ in range(n_tests)]
    acked[pid] = []
    # each participant from its own loopback address (127.1.x.y), as people come from their own: the server's
    # per-address limit on new sessions (60 at once, 2/s) is for one machine, not for a whole study
    transport = httpx.AsyncHTTPTransport(local_address=f"127.1.{k // 200}.{k % 200 + 1}")
    async with httpx.AsyncClient(base_url=url, timeout=60.0, transport=transport) as c:
        async def req(kind, method, path, **kw):
            await asyncio.sleep(think * rng.uniform(0.5, 1.5))
            t0 = time.perf_counter()
            try:
                r = await c.request(method, path, **kw)
            except httpx.HTTPError as err:
                errors.append(f"{pid} {kind}: {type(err).__name__}: {err}")
                return None
            lat.append((kind, time.perf_counter() - t0))
            if r.status_code >= 400:
                errors.append(f"{pid} {kind}: HTTP {r.status_code}")
                return None
            return r

        for kind, method, path, kw in (
                ("consent_page", "GET", f"/?PROLIFIC_PID={pid}", {}),
                ("consent", "POST", "/consent", {"data": {"consent": "yes", "pid": pid}}),
                ("check", "POST", "/check", {"data": {"how": "test", "count": "2", "when": "ready"}}),
                ("practice", "POST", "/practice/test", {"data": {"seq": "1", "objects": ["1"]},
                                                        "headers": {"HX-Request": "true"}}),
                ("practice_done", "POST", "/practice/done", {})):
            if await req(kind, method, path, **kw) is None:
                return False
        for j, on in enumerate(trials, start=1):
            r = await req("test", "POST", "/test", data={"seq": str(j), "objects": [str(i) for i in on]},
                          headers={"HX-Request": "true"})
            if r is None:
                return False
            m = RESULT.search(r.text)
            if not m or int(m.group(1)) != j:
                errors.append(f"{pid} test {j}: the answer does not announce test {j}")
                return False
            acked[pid].append((on, m.group(2) == "lit up"))
        if await req("judge_page", "GET", "/judge") is None:
            return False
        judged = [str(i) for i in rng.choice(4, size=2, replace=False)]
        if await req("judge", "POST", "/judge", data={"blickets": judged, "rule": "disjunctive"}) is None:
            return False
        r = await req("debrief", "GET", "/debrief")
        return r is not None and "Thank you" in r.text


async def run_all(url, n, seed, think, max_seconds):
    lat, errors, acked = [], [], {}
    rngs = [np.random.default_rng([seed, k]) for k in range(n)]
    t0 = time.perf_counter()
    done = await asyncio.wait_for(asyncio.gather(*(participant(k, url, rngs[k], think, lat, errors, acked)
                                                   for k in range(n))), max_seconds)
    return lat, errors, acked, done, time.perf_counter() - t0


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--participants", type=int, default=20)
    ap.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--max-seconds", type=float, default=600.0, help="the whole run's time limit")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--think", type=float, default=0.25, help="seconds between a participant's requests")
    ap.add_argument("--rate", type=float, default=None, help="server --rate (default: the server's)")
    ap.add_argument("--burst", type=int, default=None, help="server --burst (default: the server's)")
    ap.add_argument("--out", default="runs/serve_load")
    a = ap.parse_args(argv)
    if a.participants < 1 or a.think < 0:
        ap.error("--participants must be >= 1 and --think >= 0")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill still stops the server and PostgreSQL
    with postgres() if a.db == "postgres" else contextlib.nullcontext((None, None)) as (pg, reason):
        if a.db == "postgres" and pg is None:
            ap.error(reason)
        return run(a, out, pg)


def run(a, out: Path, pg: str | None) -> dict:
    if pg is None:
        db_path = out / "load.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    db = pg or f"sqlite:///{db_path.resolve()}"
    # raw ids, so the export can be matched to what each simulated participant saw acknowledged
    study = write_study(out / "study.toml", raw_ids=True, contact="load test")
    extra = [*(["--rate", str(a.rate)] if a.rate else []), *(["--burst", str(a.burst)] if a.burst else [])]
    srv = Server(db, "nexiom", a.seed, None, "--study", str(study), *extra).start()
    try:
        lat, errors, acked, done, wall = asyncio.run(run_all(srv.url, a.participants, a.seed, a.think,
                                                             a.max_seconds))
    finally:
        srv.stop()

    from causalplay.data import load_trials
    from causalplay.serve.store import export_trials

    got = {}
    if export_trials(db, out / "export")[0]:
        d = load_trials(out / "export", n_objects=4, impossible="raise")
        got = {pid: list(zip((tuple(o) for o in g["objects_on"]), g["lit"], strict=True))
               for pid, g in d.tests.groupby("participant")}
    lost = 0
    for pid, seq in acked.items():
        have = got.get(pid, [])
        lost += sum(1 for i, row in enumerate(seq) if i >= len(have) or have[i] != row)
    extra_rows = sum(max(0, len(got.get(pid, [])) - len(seq)) for pid, seq in acked.items())
    secs = np.array([t for _, t in lat])
    by_kind = {}
    for kind in sorted({k for k, _ in lat}):
        x = np.array([t for k, t in lat if k == kind])
        by_kind[kind] = {"n": len(x), "p50_ms": 1e3 * float(np.percentile(x, 50)),
                         "p95_ms": 1e3 * float(np.percentile(x, 95))}
    res = {
        "participants": a.participants, "completed": int(sum(done)), "errors": len(errors),
        "error_examples": errors[:10], "requests": len(lat), "acknowledged_tests": sum(map(len, acked.values())),
        "exported_tests": sum(map(len, got.values())), "lost_rows": lost, "unacknowledged_extra_rows": extra_rows,
        "wall_s": wall, "requests_per_s": len(lat) / wall,
        "latency_ms": {"p50": 1e3 * float(np.percentile(secs, 50)), "p95": 1e3 * float(np.percentile(secs, 95)),
                       "p99": 1e3 * float(np.percentile(secs, 99)), "max": 1e3 * float(secs.max())},
        "by_kind": by_kind, "db": a.db, "think_s": a.think, "rate": a.rate, "burst": a.burst, "seed": a.seed,
        "machine": {"cpus": os.cpu_count(), "load_avg_after": os.getloadavg(), "python": platform.python_version()},
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "git": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=ROOT).stdout.strip(),
    }
    (out / "results.json").write_text(json.dumps(res, indent=2))
    print(f"{a.db}: {res['completed']}/{a.participants} sessions completed, {res['errors']} errors, "
          f"{res['lost_rows']} lost rows ({res['acknowledged_tests']} acknowledged tests, "
          f"{res['exported_tests']} exported)")
    L = res["latency_ms"]
    for e in res["error_examples"]:
        print("  error:", e)
    print(f"{res['requests']} requests in {wall:.1f} s ({res['requests_per_s']:.1f}/s); latency p50 {L['p50']:.0f} ms, "
          f"p95 {L['p95']:.0f} ms, p99 {L['p99']:.0f} ms, max {L['max']:.0f} ms")
    for kind, v in by_kind.items():
        print(f"  {kind:13s} n={v['n']:4d}  p50 {v['p50_ms']:7.1f} ms  p95 {v['p95_ms']:7.1f} ms")
    print(f"load average after: {res['machine']['load_avg_after']}; results in {out / 'results.json'}")
    return res


if __name__ == "__main__":
    main()
