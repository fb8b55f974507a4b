"""Renderer benchmark: uncached Workbench frames/s per worker, memory over many frames, cached env steps/s.

Usage::

    .venv/bin/python benchmarks/bench_render.py --frames 10000 --episodes 300 --out runs/bench_render.json

1. ``uncached``: ``--frames`` distinct random panels (N=9, the IVRE size) through one worker with the cache off,
   in requests of 64 frames; frames/s, and the worker's and this process's RSS at the start, every 1000 frames
   and at the end (memory flat = the end within a few MB of the start).
2. ``env``: a ``--episodes``-episode evaluation of ``causalplay/IVRE-Pixels-v0`` (seeds 0..E-1, seeded random
   actions) three times: ``cold`` (every frame rendered, written to a disk cache), ``warm_disk`` (a new renderer,
   empty memory, the same disk cache: a repeated evaluation in a new process) and ``warm_memory`` (the same
   renderer again: frames from the in-memory LRU). Env steps/s for each.
Results are printed and written (incrementally) as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import causalplay.envs  # noqa: F401  (registers the env ids)
import gymnasium
import numpy as np
from tqdm import tqdm

from causalplay.render import COLORS, MATERIALS, SHAPES, Renderer, make_frame


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def random_frames(n_frames: int, n_objects: int, seed: int) -> list[dict]:
    pool = [{"shape": s, "material": m, "color": c} for s in SHAPES for m in MATERIALS for c in COLORS]
    rng = np.random.default_rng(seed)
    frames = []
    for _ in range(n_frames):
        objs = [pool[i] for i in rng.choice(len(pool), n_objects, replace=False)]
        frames.append(make_frame(objs, rng.random(n_objects) < 0.4, bool(rng.random() < 0.5)))
    return frames


def bench_uncached(n_frames: int, engine: str, save) -> dict:
    r = Renderer(engine=engine, cache_size=0).start()
    frames = random_frames(n_frames, 9, seed=0)
    r.render_frames(frames[:8])  # warm up the GL pipeline
    res = {"engine": r.engine, "frames": n_frames, "rss_mb": []}
    t0, chunk = time.perf_counter(), 64
    with tqdm(total=n_frames, desc=f"uncached {r.engine}", unit="frame") as bar:
        for done in range(0, n_frames, chunk):
            if done % 1000 < chunk:
                res["rss_mb"].append({"frame": done, "worker": r.worker_rss() / 2**20, "parent": rss_mb()})
            part = frames[done : done + chunk]
            r.render_frames(part)
            bar.update(len(part))
    dt = time.perf_counter() - t0
    res["rss_mb"].append({"frame": n_frames, "worker": r.worker_rss() / 2**20, "parent": rss_mb()})
    res.update(seconds=dt, frames_per_s=n_frames / dt, renders=r.renders)
    r.close()
    save("uncached", res)
    return res


def _timed(renderer) -> dict:
    """Accumulate the wall time spent inside ``renderer.render_frames`` (the pixel layer's share of a step)."""
    acc = {"seconds": 0.0}
    inner = renderer.render_frames

    def render_frames(frames, *a, **k):
        t = time.perf_counter()
        try:
            return inner(frames, *a, **k)
        finally:
            acc["seconds"] += time.perf_counter() - t

    renderer.render_frames = render_frames
    return acc


def run_eval(env_id: str, episodes: int, renderer=None) -> tuple[int, float]:
    """(env steps, seconds) of ``episodes`` episodes (seeds 0..E-1, seeded random actions); ``renderer=None``: the
    symbolic env, without a progress bar."""
    kw = {} if renderer is None else {"renderer": renderer}
    env = gymnasium.make(env_id, disable_env_checker=True, **kw)
    steps, t0 = 0, time.perf_counter()
    for ep in tqdm(range(episodes), desc="episodes", unit="ep", leave=False, disable=renderer is None):
        env.reset(seed=ep)
        rng = np.random.default_rng(ep)
        done = False
        while not done:
            _, _, term, trunc, _ = env.step(rng.random(env.action_space.shape).astype(np.float32))
            steps += 1
            done = term or trunc
    return steps, time.perf_counter() - t0


def bench_env(episodes: int, engine: str, save) -> dict:
    env_id = "causalplay/IVRE-Pixels-v0"
    res = {"env": env_id, "episodes": episodes}
    with tempfile.TemporaryDirectory(prefix="causalplay_frames_") as cache_dir:
        cold = Renderer(engine=engine, cache_size=200_000, cache_dir=cache_dir)
        warm = Renderer(engine=engine, cache_size=200_000, cache_dir=cache_dir)
        for name, r in (("cold", cold), ("warm_disk", warm), ("warm_memory", warm)):
            acc, before = _timed(r), r.renders
            steps, dt = run_eval(env_id, episodes, r)
            res[name] = {"steps": steps, "seconds": dt, "steps_per_s": steps / dt, "renders": r.renders - before,
                         "render_seconds": acc["seconds"], "pixel_layer_steps_per_s": steps / acc["seconds"]}
            del r.render_frames  # drop the timing wrapper
            save("env", res)
        pngs = list(Path(cache_dir).rglob("*.png"))
        res["disk_cache"] = {"frames": len(pngs), "mb": sum(p.stat().st_size for p in pngs) / 2**20}
        cold.close()
        warm.close()
    # the symbolic env alone, for reference (the floor under the pixel env's steps/s)
    steps, dt = run_eval("causalplay/IVRE-v0", episodes)
    res["symbolic_steps_per_s"] = steps / dt
    save("env", res)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=10_000, help="uncached frames (throughput and memory)")
    ap.add_argument("--episodes", type=int, default=300, help="episodes of the cached env evaluation")
    ap.add_argument("--engine", default="workbench", choices=["workbench", "cycles"])
    ap.add_argument("--out", default="runs/bench_render.json")
    args = ap.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    results: dict = {"args": vars(args), "machine": {"cpus": os.cpu_count(), "python": platform.python_version()}}

    def save(key: str, value: dict) -> None:
        results[key] = value
        out.write_text(json.dumps(results, indent=2))

    if args.frames:
        u = bench_uncached(args.frames, args.engine, save)
        rss = u["rss_mb"]
        print(f"uncached {u['engine']}: {u['frames_per_s']:.1f} frames/s over {u['frames']} frames; worker RSS "
              f"{rss[0]['worker']:.0f} -> {rss[-1]['worker']:.0f} MB, parent {rss[0]['parent']:.0f} -> "
              f"{rss[-1]['parent']:.0f} MB")
    if args.episodes:
        e = bench_env(args.episodes, args.engine, save)
        for k in ("cold", "warm_disk", "warm_memory"):
            print(f"env {k}: {e[k]['steps_per_s']:.0f} steps/s ({e[k]['steps']} steps, {e['episodes']} episodes, "
                  f"{e[k]['renders']} renders); frames alone: {e[k]['pixel_layer_steps_per_s']:.0f} per s")
        print(f"symbolic env alone: {e['symbolic_steps_per_s']:.0f} steps/s; disk cache {e['disk_cache']}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
