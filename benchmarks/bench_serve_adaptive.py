"""Consent latency of an adaptive ``causalplay serve`` study: simulated participants over HTTP on loopback, at once.

Fits the candidate models (``--models``, SVI with ``--svi-steps``, seed 0) to the shipped Nexiom people, writes
their netcdf files and a study file whose ``[adaptive]`` table offers the designs of
``design_space(4, demonstrations=1, told=(False, True))`` (384; ``--designs`` keeps a seeded sample) with
``--draws`` new participants per model and ``--choices`` choices, starts ``causalplay serve`` (one uvicorn process
on 127.0.0.1 and a free port, SQLite in the output folder) and times its start (the fits loaded and every model's
predictions prepared). Then ``--participants`` simulated participants run in threads, participant ``k`` starting
``k * --spread / participants`` seconds in, so later consents meet earlier participants' finishes and the
counting that runs after them: consent page, consent (the design chosen: the timed request), comprehension check,
1-5 tests of a seeded random policy, answer; ``--think`` seconds (times a uniform 0.5-1.5 jitter) before each
request. One ``httpx.Client`` (one cookie jar) per participant.

Checks after the run: every request answered 2xx/3xx, the ADO state counts every participant (and how long after
the last answer), and the export read back by ``load_trials`` holds every row. Prints the numbers (median and p95
per request kind) and writes ``results.json`` to ``--out``.

Usage::

    python benchmarks/bench_serve_adaptive.py                    # 20 participants, 3 models, 384 designs
    python benchmarks/bench_serve_adaptive.py --participants 50 --think 0
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from serve_server import Server  # noqa: E402

SEQ = re.compile(r'name="seq" value="(\d+)"')


def participant(k: int, url: str, a, lat: list, errors: list, lock: threading.Lock) -> int:
    """One simulated participant; returns the rows of tests.csv they should have (demonstrations and tests)."""
    rng = np.random.default_rng([a.seed, k])
    time.sleep(k * a.spread / a.participants)
    pid = f"BENCH{k:03d}"
    transport = httpx.HTTPTransport(local_address=f"127.1.{k // 200}.{k % 200 + 1}")  # an address per person
    with httpx.Client(base_url=url, timeout=60.0, transport=transport) as c:
        def req(kind, method, path, **kw):
            time.sleep(a.think * rng.uniform(0.5, 1.5))
            t0 = time.perf_counter()
            r = c.request(method, path, **kw)
            with lock:
                lat.append((kind, time.perf_counter() - t0))
            if r.status_code >= 400:
                raise RuntimeError(f"{pid} {kind}: HTTP {r.status_code}")
            return r

        try:
            req("consent_page", "GET", f"/?PROLIFIC_PID={pid}")
            req("consent", "POST", "/consent", data={"consent": "yes", "pid": pid})
            page = req("check_page", "GET", "/check").text
            told = re.search(r'id="n-blickets">(\d+)<', page)
            req("check", "POST", "/check", data={"how": "test", "count": told.group(1) if told else "",
                                                 "when": "ready"})
            page = req("task_page", "GET", "/task").text
            rows = page.count("<figcaption>Example ")
            for _ in range(int(rng.integers(1, 6))):
                on = [str(i) for i in np.flatnonzero(rng.random(4) < 0.5)] or ["0"]
                page = req("test", "POST", "/test", data={"seq": SEQ.search(page).group(1), "objects": on},
                           headers={"HX-Request": "true"}).text
                rows += 1
            req("judge", "POST", "/judge", data={"blickets": ["0"], "rule": "disjunctive"})
            return rows
        except (httpx.HTTPError, RuntimeError, AttributeError) as err:
            with lock:
                errors.append(f"{pid}: {type(err).__name__}: {err}")
            return -1


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--participants", type=int, default=20)
    ap.add_argument("--models", default="positive,random,eig_sweep_single")
    ap.add_argument("--draws", type=int, default=100, help="new participants per fitted model (ADO's draws)")
    ap.add_argument("--designs", type=int, default=0, help="candidate designs kept (0: all 384)")
    ap.add_argument("--choices", type=int, default=2)
    ap.add_argument("--svi-steps", type=int, default=200)
    ap.add_argument("--think", type=float, default=0.25, help="seconds before each request")
    ap.add_argument("--spread", type=float, default=3.0, help="seconds over which the participants start")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs/bench_serve_adaptive")
    a = ap.parse_args(argv)
    if a.participants < 1 or a.think < 0 or a.spread < 0:
        ap.error("--participants must be >= 1, --think and --spread >= 0")
    out = Path(a.out).resolve()
    (out / "fits").mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()

    import causalplay
    from causalplay.data import load_nexiom, load_trials
    from causalplay.fitting import SVIOptions

    models = a.models.split(",")
    t0 = time.perf_counter()
    people = load_nexiom()
    for m in models:
        causalplay.fit(people, m, method="svi", svi=SVIOptions(steps=a.svi_steps, progress=False),
                       seed=0).idata.to_netcdf(out / "fits" / f"{m}.nc")
    fit_s = time.perf_counter() - t0
    study = out / "study.toml"
    study.write_text("\n".join([
        'title = "Adaptive benchmark"', 'contact = "bench@example.org"', 'task = "nexiom"', "practice = false",
        "raw_ids = true", "", "[adaptive]", f"models = {json.dumps(models)}", 'data = "nexiom"',
        f"draws = {a.draws}", f"seed = {a.seed}", f"choices = {a.choices}", f"sample = {a.designs}", "",
        "[adaptive.fits]", *(f'{m} = "fits/{m}.nc"' for m in models), "",
        "[adaptive.space]", "demonstrations = 1", "told = [false, true]", ""]))
    db_path = out / "adaptive.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    db = f"sqlite:///{db_path}"
    t0 = time.perf_counter()
    srv = Server(db, "nexiom", a.seed, None, "--study", str(study)).start(timeout=900)
    start_s = time.perf_counter() - t0
    lat, errors, lock = [], [], threading.Lock()
    try:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(a.participants) as pool:
            rows = list(pool.map(lambda k: participant(k, srv.url, a, lat, errors, lock), range(a.participants)))
        wall = time.perf_counter() - t0
        from sqlalchemy import create_engine
        from sqlalchemy.orm import Session

        from causalplay.design import ado
        from causalplay.serve.store import AdoState, export_trials

        engine = create_engine(db)
        t1 = time.perf_counter()
        while True:
            with Session(engine) as s:
                row = s.get(AdoState, "causalplay/Nexiom-v0")
                counted, state = row.n_participants, json.loads(row.state)
            if counted >= a.participants - len(errors) or time.perf_counter() - t1 > 120:
                break
            time.sleep(0.05)
        counted_after = time.perf_counter() - t1
    finally:
        srv.stop()
    n_exp, n_rows = export_trials(db, out / "export")
    data = load_trials(out / "export", impossible="raise")
    by_kind = {}
    for kind in dict.fromkeys(k for k, _ in lat):
        x = np.array([t for k, t in lat if k == kind])
        by_kind[kind] = {"n": len(x), "p50_ms": 1e3 * float(np.median(x)), "p95_ms": 1e3 * float(np.percentile(x, 95)),
                         "max_ms": 1e3 * float(x.max())}
    designs = {json.dumps(p["design"]) for p in state["participants"]}
    res = {
        "participants": a.participants, "errors": len(errors), "error_examples": errors[:10],
        "consent_ms": {k: by_kind["consent"][k] for k in ("p50_ms", "p95_ms", "max_ms")} if "consent" in by_kind
        else None,
        "by_kind": by_kind, "wall_s": wall, "server_start_s": start_s, "fit_s": fit_s,
        "counted": counted, "counted_s_after_last_answer": counted_after, "distinct_designs": len(designs),
        "posterior": ado.posterior(state), "exported_participants": n_exp, "exported_rows": n_rows,
        "expected_rows": sum(r for r in rows if r >= 0), "loaded_rows": len(data.tests),
        "models": models, "draws": a.draws, "designs": a.designs or 384, "choices": a.choices, "think_s": a.think,
        "spread_s": a.spread, "seed": a.seed,
        "machine": {"cpus": os.cpu_count(), "load_avg_before": load_before, "load_avg_after": os.getloadavg(),
                    "python": platform.python_version()},
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "git": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=ROOT).stdout.strip(),
    }
    (out / "results.json").write_text(json.dumps(res, indent=2))
    print(f"{a.participants} participants ({len(errors)} errors), {len(models)} models, {res['designs']} designs, "
          f"{a.draws} draws, K = {a.choices}; server start {start_s:.1f} s (fits {fit_s:.1f} s before)")
    for e in errors[:10]:
        print("  error:", e)
    for kind, v in by_kind.items():
        print(f"  {kind:13s} n={v['n']:4d}  median {v['p50_ms']:7.1f} ms  p95 {v['p95_ms']:7.1f} ms  "
              f"max {v['max_ms']:7.1f} ms")
    post = ", ".join(f"{m} {p:.3f}" for m, p in res["posterior"].items())
    print(f"ADO state counts {counted} participants, {counted_after:.2f} s after the last answer; "
          f"{len(designs)} distinct designs; posterior {post}")
    print(f"export: {n_exp} participants, {n_rows} rows (expected {res['expected_rows']}, load_trials read "
          f"{res['loaded_rows']})")
    print(f"load average before {load_before}, after {res['machine']['load_avg_after']}; results in "
          f"{out / 'results.json'}")
    return res


if __name__ == "__main__":
    main()
