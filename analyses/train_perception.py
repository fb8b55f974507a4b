"""Train the perception CNN (:mod:`causalplay.agents.perception`) on rendered panels and measure it on held-out ones.

Panels are drawn by :func:`causalplay.agents.perception.sample_panels` (objects as the envs draw them, on-bits and the
light independent coin flips): training frames from ``default_rng([seed, 0])``, held-out frames from
``default_rng([seed, 1])`` (other objects, other masks), both rendered by our Blender renderer into the disk
store ``cache_dir`` (a second run reads them back instead of rendering). Optionally a set of Cycles frames from
``default_rng([seed, 2])`` is scored too (the model never sees Cycles in training).

Writes ``runs/<name>/``: ``model.pt`` (weights + meta, loadable by ``Perception.load``), ``progress.csv`` (one
line per epoch), ``metrics.json`` (per-bit and per-frame accuracy on the held-out frames, every misread frame)
and ``errors.png`` (the misread held-out frames, or the least confident ones if none is misread).

Run ``python analyses/train_perception.py`` (the shipped weights' config), ``--smoke`` (tiny; used by the
tests), ``--ship`` to copy the result to ``causalplay/data/perception/``. The shipped file came from
``--name perception_aug`` (the default config under another folder name); ``--no-augment`` is the first,
Workbench-only model (``runs/perception``).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from causalplay.agents.perception import DEFAULT_WEIGHTS, Perception, PerceptionNet, render_panels, sample_panels
from causalplay.core.metrics import wilson_ci
from causalplay.render.scene import MAX_OBJECTS, SCENE_VERSION


@dataclass
class Config:
    name: str = "perception"
    n_objects: tuple[int, ...] = (9,)
    train_frames: int = 8000
    val_frames: int = 2000
    cycles_frames: int = 200
    engine: str = "workbench"
    epochs: int = 5
    batch: int = 32
    lr: float = 3e-3
    width: int = 16
    hidden: int = 128
    seed: int = 0
    #: photometric augmentation of training frames (per-channel gain, brightness, blur): with it a Workbench-only
    #: model reads Cycles frames too (99.5 % vs 71.5 % per frame without; docs/perception.md)
    augment: bool = True
    threads: int = 1
    cache_dir: str = "runs/frames"
    out: str = "runs"
    ship: bool = False  # copy model.pt to the package's default weights
    eval_only: bool = False  # score runs/<name>/model.pt again, no training


SMOKE = Config(name="perception_smoke", train_frames=384, val_frames=64, cycles_frames=0, epochs=10, batch=16, width=8,
               hidden=32, augment=False)


def _labels(on: np.ndarray, lit: np.ndarray, n: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """Targets ``[n, MAX_OBJECTS + 1]`` and the mask of bits that exist (slots past ``N`` are not scored)."""
    y = torch.from_numpy(np.concatenate([on, lit[:, None]], 1).astype(np.float32))
    slots = torch.arange(MAX_OBJECTS + 1)
    mask = ((slots < torch.as_tensor(n)[:, None]) | (slots == MAX_OBJECTS)).float()
    return y, mask


def augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """uint8 frames ``[b, H, W, 3]`` with a random per-channel gain in [0.7, 1.3], a brightness shift in
    [-25, 25] grey levels and, for half of them, a 3x3 box blur (the geometry, hence the labels, is unchanged)."""
    b = x.shape[0]
    f = x.float()
    gain = 0.7 + 0.6 * torch.rand(b, 1, 1, 3, generator=gen)
    shift = -25.0 + 50.0 * torch.rand(b, 1, 1, 1, generator=gen)
    f = f * gain + shift
    blur = torch.rand(b, generator=gen) < 0.5
    if bool(blur.any()):
        g = f[blur].permute(0, 3, 1, 2)
        f[blur] = F.avg_pool2d(g, 3, stride=1, padding=1, count_include_pad=False).permute(0, 2, 3, 1)
    return f.clamp(0, 255).round().to(torch.uint8)


def score(model: Perception, frames: np.ndarray, on: np.ndarray, lit: np.ndarray, n: np.ndarray) -> dict:
    """Per-bit and per-frame (every bit and the light right) accuracy, hard labels at 0.5."""
    right_bits, total_bits, frame_ok, lit_ok, errors, conf = 0, 0, np.zeros(len(frames), bool), 0, [], []
    for k in sorted(set(n.tolist())):
        idx = np.flatnonzero(n == k)
        p_on, p_lit = model.probs(frames[idx], k)
        h_on, h_lit = (p_on > 0.5).numpy(), (p_lit > 0.5).numpy()
        ok_on = h_on == on[idx, :k]
        ok_lit = h_lit == lit[idx]
        right_bits += int(ok_on.sum() + ok_lit.sum())
        total_bits += ok_on.size + ok_lit.size
        lit_ok += int(ok_lit.sum())
        frame_ok[idx] = ok_on.all(1) & ok_lit
        margin = np.minimum(np.abs(p_on.numpy() - 0.5).min(1), np.abs(p_lit.numpy() - 0.5))
        conf += list(zip(idx.tolist(), margin.tolist(), strict=True))
        for j in np.flatnonzero(~frame_ok[idx]):
            errors.append({"index": int(idx[j]), "n_objects": k, "wrong_slots": np.flatnonzero(~ok_on[j]).tolist(),
                           "lit_wrong": bool(~ok_lit[j]), "p_on": [round(float(x), 4) for x in p_on[j]],
                           "p_lit": round(float(p_lit[j]), 4)})
    nf = len(frames)
    # the per-frame accuracy with its 95% Wilson interval (no frames: nan, and the whole of [0, 1])
    acc, lo, hi = wilson_ci(frame_ok) if nf else (float("nan"), 0.0, 1.0)
    return {"frames": nf, "frame_acc": acc, "frame_acc_wilson95": [float(lo), float(hi)],
            "bit_acc": right_bits / max(1, total_bits), "lit_acc": lit_ok / max(1, nf), "n_wrong_frames": len(errors),
            "errors": errors, "least_confident": [i for i, _ in sorted(conf, key=lambda t: t[1])[:8]]}


def _render(cfg: Config, stream: int, n: int, engine: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from causalplay.render import Renderer

    frames, on, lit = sample_panels(n, np.random.default_rng([cfg.seed, stream]), cfg.n_objects)
    t0 = time.perf_counter()
    cycles = engine == "cycles"
    with Renderer(engine=engine, cache_dir=cfg.cache_dir, cache_size=0, timeout=600.0 if cycles else 120.0) as r:
        imgs = render_panels(frames, r, progress=n > 500 or cycles, chunk=50 if cycles else 500,
                             request=8 if cycles else 64)
        new = r.renders
    dt = time.perf_counter() - t0
    print(f"{engine} stream {stream}: {n} frames ({new} rendered, {n - new} from {cfg.cache_dir}) in {dt:.1f} s",
          flush=True)
    return imgs, on, lit, np.array([len(f["on"]) for f in frames])


def _figure(path: Path, imgs: np.ndarray, res: dict, on: np.ndarray, lit: np.ndarray) -> None:
    from matplotlib.figure import Figure  # no pyplot: a file, no display

    shown = [e["index"] for e in res["errors"][:8]] or res["least_confident"][:8]
    title = "misread held-out frames" if res["errors"] else "no misread held-out frame; the 8 least confident"
    fig = Figure(figsize=(12, 5.2))
    axes = fig.subplots(2, 4)
    for ax in axes.flat:
        ax.axis("off")
    for ax, i in zip(axes.flat, shown, strict=False):
        ax.imshow(imgs[i])
        err = next((e for e in res["errors"] if e["index"] == i), None)
        k = len(np.flatnonzero(on[i])) if err is None else None
        truth = "".join("1" if b else "0" for b in on[i][: (err["n_objects"] if err else max(9, k or 0))])
        cap = f"#{i} on={truth} lit={int(lit[i])}"
        if err:
            cap += f"\nwrong slots {err['wrong_slots']}" + (" + light" if err["lit_wrong"] else "")
        ax.set_title(cap, fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def evaluate(cfg: Config, model: Perception | None = None) -> dict:
    """Score ``runs/<name>/model.pt`` (or ``model``) on the held-out frames (and Cycles frames); writes
    ``metrics.json`` and ``errors.png``."""
    out = Path(cfg.out) / cfg.name
    model = model or Perception.load(out / "model.pt")
    x_va, on_va, lit_va, n_va = _render(cfg, 1, cfg.val_frames, cfg.engine)
    res = score(model, x_va, on_va, lit_va, n_va)
    metrics = {"workbench": res}
    _figure(out / "errors.png", x_va, res, on_va, lit_va)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2))  # before the slow Cycles part
    if cfg.cycles_frames:
        x_cy, on_cy, lit_cy, n_cy = _render(cfg, 2, cfg.cycles_frames, "cycles")
        metrics["cycles"] = score(model, x_cy, on_cy, lit_cy, n_cy)
        _figure(out / "errors_cycles.png", x_cy, metrics["cycles"], on_cy, lit_cy)
        (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
    return metrics


def run(cfg: Config) -> dict:
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    out = Path(cfg.out) / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=2))
    x_tr, on_tr, lit_tr, n_tr = _render(cfg, 0, cfg.train_frames, cfg.engine)
    x_va, on_va, lit_va, n_va = _render(cfg, 1, cfg.val_frames, cfg.engine)
    y_tr, m_tr = _labels(on_tr, lit_tr, n_tr)
    X = torch.from_numpy(x_tr)
    net = PerceptionNet(cfg.width, cfg.hidden)
    opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr, weight_decay=1e-4)
    steps = cfg.epochs * -(-len(X) // cfg.batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=max(1, steps))
    gen = torch.Generator().manual_seed(cfg.seed)
    model = Perception(net, {"n_objects": list(cfg.n_objects), "engine": cfg.engine, "scene_version": SCENE_VERSION,
                             "config": dataclasses.asdict(cfg)})
    log = out / "progress.csv"
    log.write_text("epoch,seconds,train_loss,val_frame_acc,val_bit_acc\n")
    t0 = time.perf_counter()
    for epoch in range(1, cfg.epochs + 1):
        net.train()
        perm = torch.randperm(len(X), generator=gen)
        total = 0.0
        for s in range(0, len(X), cfg.batch):
            b = perm[s:s + cfg.batch]
            xb = augment(X[b], gen) if cfg.augment else X[b]
            loss = (F.binary_cross_entropy_with_logits(net(xb), y_tr[b], reduction="none") * m_tr[b]).sum() \
                / m_tr[b].sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(b)
        net.eval()
        res = score(model, x_va, on_va, lit_va, n_va)
        line = (f"{epoch},{time.perf_counter() - t0:.1f},{total / len(X):.5f},{res['frame_acc']:.5f},"
                f"{res['bit_acc']:.6f}")
        with log.open("a") as f:
            f.write(line + "\n")
        print(f"epoch {epoch}/{cfg.epochs}: loss {total / len(X):.4f}, held-out frame acc {res['frame_acc']:.4f} "
              f"({res['n_wrong_frames']} wrong of {res['frames']}), {time.perf_counter() - t0:.0f} s", flush=True)
    model.meta["validation"] = {k: v for k, v in res.items() if k not in ("errors", "least_confident")}
    model.save(out / "model.pt")
    train_s = time.perf_counter() - t0
    # scored again from the saved file: float16 weights, what the package ships
    return {**evaluate(cfg, Perception.load(out / "model.pt")), "train_seconds": train_s}


def parse(argv=None) -> Config:
    """Every :class:`Config` field is an option; ``--smoke`` starts from the tiny setting the tests run."""
    from causalplay.cli.config import parse_config

    return parse_config(Config, argv, smoke=SMOKE, description=__doc__.splitlines()[0])


if __name__ == "__main__":
    c = parse()
    m = evaluate(c) if c.eval_only else run(c)
    print(json.dumps({k: {kk: vv for kk, vv in v.items() if kk not in ("errors", "least_confident")}
                      if isinstance(v, dict) else v for k, v in m.items()}, indent=2))
    if c.ship:
        DEFAULT_WEIGHTS.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(c.out) / c.name / "model.pt", DEFAULT_WEIGHTS)
        print(f"shipped {DEFAULT_WEIGHTS} ({DEFAULT_WEIGHTS.stat().st_size} bytes)")
