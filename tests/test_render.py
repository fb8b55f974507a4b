"""Renderer tests. Frame-level tests need Blender (``bpy``) and share one worker process for the session."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from causalplay.render import COLORS, MATERIALS, SHAPES, FrameCache, RendererUnavailable, bpy_available, make_frame
from causalplay.render import renderer as renderer_mod
from causalplay.render.scene import HEIGHT, LENS_MM, SENSOR_MM, WIDTH, camera_pose, machine_box, signature

needs_bpy = pytest.mark.skipif(not bpy_available(), reason="bpy (Blender as a Python module) is not installed; "
                               "pip install 'causalplay[render]'")
REF = Path(__file__).parent / "data" / "render_ref_40x30.png"
REF_OBJECTS = [{"shape": "cube", "material": "metal", "color": "red"},
               {"shape": "sphere", "material": "rubber", "color": "cyan"},
               {"shape": "cylinder", "material": "rubber", "color": "yellow"}]
REF_ON, REF_LIT = [True, False, True], True


@pytest.fixture(scope="session")
def renderer():
    if not bpy_available():
        pytest.skip("bpy (Blender as a Python module) is not installed; pip install 'causalplay[render]'")
    from causalplay.envs.pixels import shared_renderer  # the same worker the pixel-env tests use

    return shared_renderer()


def downsample(img: np.ndarray, k: int = 4) -> np.ndarray:
    """k x k block means (smooths anti-aliasing differences between GL implementations)."""
    h, w, c = img.shape
    return img.reshape(h // k, k, w // k, k, c).astype(np.float64).mean(axis=(1, 3))


def project(point, n: int) -> tuple[float, float]:
    """Pinhole projection of a world point into pixel (x, y) for the camera of an n-object scene (by hand)."""
    (cx, cy, cz), (rx, _, _) = camera_pose(n)
    px, py, pz = point[0] - cx, point[1] - cy, point[2] - cz
    # camera frame = world rotated by R_x(rx); invert the rotation about x
    yc = math.cos(rx) * py + math.sin(rx) * pz
    zc = -math.sin(rx) * py + math.cos(rx) * pz
    f = LENS_MM / SENSOR_MM * WIDTH  # focal length in pixels (horizontal sensor fit)
    return WIDTH / 2 + f * px / -zc, HEIGHT / 2 - f * yc / -zc


# --- no Blender needed -------------------------------------------------------------------------------------------
def test_make_frame_validates():
    with pytest.raises(ValueError, match="shape"):
        make_frame([{"shape": "cone", "material": "metal", "color": "red"}], [1], True)
    with pytest.raises(ValueError, match="color"):
        make_frame([{"shape": "cube", "material": "metal", "color": "pink"}], [1], True)
    with pytest.raises(ValueError, match="length 1"):
        make_frame([{"shape": "cube", "material": "metal", "color": "red"}], [1, 0], True)
    with pytest.raises(ValueError, match="1..16"):
        make_frame([], [], True)
    with pytest.raises(TypeError, match="dict"):
        make_frame(["cube"], [1], True)


def test_signature_changes_with_what_is_drawn():
    f = make_frame(REF_OBJECTS, REF_ON, True)
    assert signature(f, "workbench", 16) == signature(make_frame(REF_OBJECTS, [1, 0, 1], 1), "workbench", 99)
    assert signature(f, "workbench", 16) != signature(make_frame(REF_OBJECTS, REF_ON, False), "workbench", 16)
    assert signature(f, "workbench", 16) != signature(f, "cycles", 16)
    assert signature(f, "cycles", 16) != signature(f, "cycles", 32)


def test_cache_lru_and_disk(tmp_path):
    c = FrameCache(max_frames=2, cache_dir=tmp_path)
    imgs = {k: np.full((HEIGHT, WIDTH, 3), i * 40, np.uint8) for i, k in enumerate(["aa1", "bb2", "cc3"])}
    for k, v in imgs.items():
        c.put(k, v.copy())
    assert len(c) == 2 and "aa1" not in c._mem  # least recently used evicted
    got = FrameCache(max_frames=2, cache_dir=tmp_path).get("aa1")  # a new process-like cache reads the disk
    np.testing.assert_array_equal(got, imgs["aa1"])
    assert not got.flags.writeable
    assert FrameCache(0).get("zz") is None
    with pytest.raises(ValueError, match="max_frames"):
        FrameCache(-1)


def test_missing_bpy_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(renderer_mod, "bpy_available", lambda: False)
    with pytest.raises(RendererUnavailable, match=r"causalplay\[render\]"):
        renderer_mod.Renderer()
    with pytest.raises(ValueError, match="engine"):
        renderer_mod.Renderer(engine="eevee")


# --- frames ------------------------------------------------------------------------------------------------------
@needs_bpy
def test_frame_format_and_cache(renderer):
    a = renderer.render(REF_OBJECTS, REF_ON, REF_LIT)
    assert a.shape == (HEIGHT, WIDTH, 3) and a.dtype == np.uint8
    n = renderer.renders
    b = renderer.render(REF_OBJECTS, REF_ON, REF_LIT)
    assert renderer.renders == n and b is a  # served from the LRU, no new render


@needs_bpy
@pytest.mark.parametrize("n", [3, 9])
def test_lit_and_unlit_differ_where_the_machine_is(renderer, n):
    objs = [{"shape": SHAPES[i % 3], "material": MATERIALS[i % 2], "color": list(COLORS)[i % 8]} for i in range(n)]
    on = [i % 2 == 0 for i in range(n)]
    lit, unlit = (renderer.render(objs, on, x).astype(int) for x in (True, False))
    changed = np.abs(lit - unlit).max(-1) > 30
    # where the machine's lit parts project (bounding box of the body and lamp corners, computed by hand)
    lo, hi = machine_box(n)
    corners = [project((x, y, z), n) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    xs, ys = [c[0] for c in corners], [c[1] for c in corners]
    box = np.zeros_like(changed)
    box[max(0, int(min(ys)) - 1): int(max(ys)) + 2, max(0, int(min(xs)) - 1): int(max(xs)) + 2] = True
    assert changed.sum() > 0.02 * changed.size  # clearly visible: > 2% of the image (384 px)
    assert changed[box].sum() >= 0.98 * changed.sum()  # and only where the machine is
    assert lit[changed].mean() > unlit[changed].mean() + 40  # lit is brighter there


@needs_bpy
def test_different_objects_render_differently(renderer):
    base = {"shape": "cube", "material": "rubber", "color": "red"}
    variants = [base] + [{**base, "color": c} for c in COLORS if c != "red"]
    variants += [{**base, "shape": s} for s in SHAPES if s != "cube"] + [{**base, "material": "metal"}]
    imgs = renderer.render_frames([make_frame([v], [True], False) for v in variants])
    flat = np.stack([i.astype(int) for i in imgs]).reshape(len(imgs), -1)
    # every pair differs by more than 20 levels on at least 30 pixels (a person sees it; noise changes none)
    for i in range(len(imgs)):
        for j in range(i + 1, len(imgs)):
            assert (np.abs(flat[i] - flat[j]) > 20).sum() >= 30, (variants[i], variants[j])


@needs_bpy
def test_reference_frame(renderer):
    """The stored 40x30 reference (4x4 block means): mean |diff| <= 3 levels and 99th pct <= 20 levels.

    Tolerance: Mesa's software GL is deterministic on one machine; the slack covers anti-aliasing and
    shading differences between Mesa/llvmpipe builds, while any change to the layout, colours or light
    moves block means by far more (a shifted object or switched light changes dozens of blocks by > 50).
    """
    from PIL import Image

    got = downsample(renderer.render(REF_OBJECTS, REF_ON, REF_LIT))
    ref = np.asarray(Image.open(REF).convert("RGB")).astype(np.float64)
    d = np.abs(got - ref)
    assert d.mean() <= 3.0 and np.percentile(d, 99) <= 20.0, (d.mean(), np.percentile(d, 99))


@needs_bpy
def test_worker_restarts_after_dying(renderer):
    before = renderer.restarts
    renderer._crash_worker()
    assert not renderer.alive
    img = renderer.render_frames([make_frame(REF_OBJECTS, [False, True, False], False)])[0]
    assert img.shape == (HEIGHT, WIDTH, 3) and renderer.alive and renderer.restarts == before + 1


@needs_bpy
@pytest.mark.slow
def test_falls_back_to_cycles_without_egl(monkeypatch):
    """Hide every EGL vendor from libglvnd: Workbench aborts the worker, the renderer warns and uses Cycles."""
    monkeypatch.setenv("__EGL_VENDOR_LIBRARY_FILENAMES", "/nonexistent/egl_vendor.json")
    r = renderer_mod.Renderer(samples=1)
    try:
        with pytest.warns(RuntimeWarning, match="libegl1 libegl-mesa0 libgl1-mesa-dri"):
            img = r.render(REF_OBJECTS, REF_ON, REF_LIT)
        assert r.engine == "cycles" and img.shape == (HEIGHT, WIDTH, 3) and img.std() > 5
    finally:
        r.close()


def write_reference() -> None:  # pragma: no cover - run by hand when the scene's look changes on purpose
    from PIL import Image

    from causalplay.render import Renderer

    with Renderer() as r:
        img = downsample(r.render(REF_OBJECTS, REF_ON, REF_LIT))
    REF.parent.mkdir(exist_ok=True)
    Image.fromarray(np.round(img).astype(np.uint8)).save(REF, optimize=True)


if __name__ == "__main__":
    write_reference()
