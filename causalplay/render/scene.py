"""The procedural CLEVR-style Blicket scene: vocabulary (pure Python) and the Blender side (bpy, worker only).

The module imports without Blender: the vocabulary (:data:`SHAPES`, :data:`MATERIALS`, :data:`COLORS`), frame
validation (:func:`make_frame`) and the scene signature (:func:`signature`) are plain Python so the parent process,
the cache and the environments can use them. Everything that touches ``bpy`` lives in :class:`BlenderScene`, which
only the worker process (:mod:`causalplay.render.worker`) constructs.

Layout (Blender units, z up). Object ``i`` of ``N`` always stands in the same column
``x_i = (i - (N - 1) / 2) * SPACING``: on the machine's top plate when it is on the machine, on the table in a
row in front of the machine otherwise. So a viewer (or a pixel agent) can tell every object apart and see which
are on the machine. The machine's body and a lamp dome behind the plate glow when it is lit.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

SHAPES = ("cube", "sphere", "cylinder")
MATERIALS = ("rubber", "metal")
# CLEVR's palette (sRGB 0-255, from the CLEVR generator's properties.json).
COLORS: dict[str, tuple[int, int, int]] = {"gray": (87, 87, 87), "red": (173, 35, 35), "blue": (42, 75, 215),
                                           "green": (29, 105, 20), "brown": (129, 74, 25), "purple": (129, 38, 192),
                                           "cyan": (41, 208, 208), "yellow": (255, 238, 51)}
ENGINES = ("workbench", "cycles")
WIDTH, HEIGHT = 160, 120
MAX_OBJECTS = 16
SPACING = 0.95
OBJECT_SIZE = 0.7
SCENE_VERSION = 2  # bump when the scene's look changes: it is part of every cache key

# Machine geometry (the body's width follows N so it always holds every object).
_BODY_HEIGHT, _PLATE_HEIGHT = 0.6, 0.08
_MACHINE_FRONT = 0.2  # y of the machine's front face
_TABLE_Y = -0.8  # y of the back row of objects on the table
_CAM_ELEVATION = 48.0
_METALLIC = 0.55  # Workbench darkens fully metallic colours to near black; this keeps hue and adds a sharp highlight


def _srgb_to_linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def make_frame(objects: Sequence[Mapping[str, str]], on: Sequence[Any], lit: bool) -> dict[str, Any]:
    """Validate one panel and put it in canonical form.

    Parameters
    ----------
    objects : sequence of mappings
        One ``{"shape", "material", "color"}`` dict per object (``1 <= N <= MAX_OBJECTS``).
    on : sequence of bool or 0/1
        Length-``N`` mask of the objects on the machine.
    lit : bool
        Whether the machine is lit.

    Returns
    -------
    dict
        ``{"objects": [[shape, material, color], ...], "on": [bool, ...], "lit": bool}`` (JSON-able).
    """
    objs = list(objects)
    if not 1 <= len(objs) <= MAX_OBJECTS:
        raise ValueError(f"objects: expected 1..{MAX_OBJECTS} objects, got {len(objs)}")
    canon = []
    for i, o in enumerate(objs):
        if not isinstance(o, Mapping):
            raise TypeError(f"objects[{i}]: expected a dict with shape/material/color, got {o!r}")
        for key, allowed in (("shape", SHAPES), ("material", MATERIALS), ("color", COLORS)):
            if o.get(key) not in allowed:
                raise ValueError(f"objects[{i}][{key!r}] = {o.get(key)!r}; expected one of {tuple(allowed)}")
        canon.append([o["shape"], o["material"], o["color"]])
    on = list(on)  # once: an iterator would be empty the second time
    if len(on) != len(canon):
        raise ValueError(f"on: expected a mask of length {len(canon)} (one per object), got length {len(on)}")
    for x in on:
        if x not in (0, 1, True, False):
            raise ValueError(f"on: expected booleans or 0/1, got {x!r}")
    return {"objects": canon, "on": [bool(x) for x in on], "lit": bool(lit)}


def signature(frame: Mapping[str, Any], engine: str, samples: int) -> str:
    """Scene signature of a canonical frame: everything that changes its pixels, hashed (the cache key)."""
    payload = {"v": SCENE_VERSION, "engine": engine, "size": [WIDTH, HEIGHT], "frame": frame}
    if engine == "cycles":
        payload["samples"] = samples
    return hashlib.sha1(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def grid(n: int) -> tuple[int, int]:
    """(rows, columns) of the slot grid for ``n`` objects: one row up to 6 objects, two rows beyond."""
    rows = 1 if n <= 6 else 2
    return rows, -(-n // rows)


def machine_depth(n: int) -> float:
    return grid(n)[0] * SPACING + 0.5


def slot_position(i: int, n: int, on: bool) -> tuple[float, float, float]:
    """Centre of object ``i`` of ``n``: a fixed grid cell, on the machine's plate or on the table in front.

    Object ``i`` sits in row ``i // cols`` (row 0 at the back) and column ``i % cols`` in both places, so its
    position tells which object it is and its height whether it is on the machine.
    """
    rows, cols = grid(n)
    r, c = divmod(i, cols)
    x = (c - (cols - 1) / 2) * SPACING
    if on:
        y = _MACHINE_FRONT + 0.25 + SPACING / 2 + (rows - 1 - r) * SPACING
        return (x, y, _BODY_HEIGHT + _PLATE_HEIGHT + OBJECT_SIZE / 2)
    return (x, _TABLE_Y - r * SPACING, OBJECT_SIZE / 2)


def machine_width(n: int) -> float:
    return grid(n)[1] * SPACING + 0.5


LENS_MM, SENSOR_MM = 35.0, 36.0  # Blender's default sensor fit: the 36 mm width spans the image width


def camera_pose(n: int) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Camera location and Euler rotation for ``n`` objects: everything framed, pulled back for wide rows."""
    rows, _ = grid(n)
    back = _MACHINE_FRONT + machine_depth(n) + 0.25
    front = _TABLE_Y - (rows - 1) * SPACING - 0.5
    d = max(5.6, 0.62 * (machine_width(n) + 1.2) / math.tan(math.radians(27)), 1.25 * (back - front))
    e = math.radians(_CAM_ELEVATION)
    ty, tz = (front + back) / 2 - 0.1, 0.45
    return (0.0, ty - d * math.cos(e), tz + d * math.sin(e)), (math.pi / 2 - e, 0.0, 0.0)


def machine_box(n: int) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Axis-aligned bounds (min corner, max corner) of the parts that light up: body and lamp dome."""
    w, depth = machine_width(n), machine_depth(n)
    back = _MACHINE_FRONT + depth + 0.25
    lamp_r = OBJECT_SIZE / 2 * 2.4
    top = _BODY_HEIGHT + 0.55 + OBJECT_SIZE / 2 * 1.3
    return (-max(w, 2 * lamp_r) / 2, _MACHINE_FRONT, 0.0), (max(w, 2 * lamp_r) / 2, back + OBJECT_SIZE / 2 * 0.9, top)


class BlenderScene:
    """The scene inside Blender, built once; :meth:`render` only moves slots and swaps meshes/materials.

    Only the worker process constructs this (it imports ``bpy``).

    Parameters
    ----------
    engine : {"workbench", "cycles"}
    samples : int
        Cycles samples per pixel (ignored by Workbench).
    out_path : str
        Scratch file the frame is written to (a BMP on ``/dev/shm`` when available).
    """

    def __init__(self, engine: str = "workbench", samples: int = 16, out_path: str = "/tmp/causalplay_frame.bmp"):
        import bpy  # worker process only

        if engine not in ENGINES:
            raise ValueError(f"engine = {engine!r}; expected one of {ENGINES}")
        self.engine, self.samples, self.out_path = engine, int(samples), out_path
        bpy.ops.wm.read_factory_settings(use_empty=True)
        self.bpy, self.scene = bpy, bpy.context.scene
        self._materials()
        self._meshes()
        self._stage()
        self._slots()
        self._settings()

    # --- construction -------------------------------------------------------------------------------------------
    def _material(self, name: str, rgb: Sequence[float], metallic: float, roughness: float, emission: float = 0.0):
        """One material for both engines: viewport colour (Workbench) and a Principled BSDF (Cycles)."""
        bpy = self.bpy
        lin = [_srgb_to_linear(c) for c in rgb]
        m = bpy.data.materials.new(name)
        m.diffuse_color = (*lin, 1.0)
        m.metallic, m.roughness = metallic, roughness
        m.use_nodes = True
        bsdf = m.node_tree.nodes.get("Principled BSDF")
        bsdf.inputs["Base Color"].default_value = (*lin, 1.0)
        bsdf.inputs["Metallic"].default_value = metallic
        bsdf.inputs["Roughness"].default_value = roughness
        if emission > 0:
            bsdf.inputs["Emission Color"].default_value = (*lin, 1.0)
            bsdf.inputs["Emission Strength"].default_value = emission
        return m

    def _materials(self) -> None:
        self.obj_mats = {}
        for cname, rgb in COLORS.items():
            c = [v / 255 for v in rgb]
            self.obj_mats[("rubber", cname)] = self._material(f"{cname}_rubber", c, 0.0, 0.9)
            self.obj_mats[("metal", cname)] = self._material(f"{cname}_metal", c, _METALLIC, 0.12)
        self.mat_floor = self._material("floor", (0.78, 0.78, 0.76), 0.0, 0.9)
        self.mat_plate = self._material("plate", (0.62, 0.62, 0.64), 0.0, 0.6)
        self.mat_body_off = self._material("body_off", (0.13, 0.13, 0.15), 0.0, 0.7)
        self.mat_body_on = self._material("body_on", (1.0, 0.6, 0.1), 0.0, 0.5, emission=4.0)
        self.mat_lamp_off = self._material("lamp_off", (0.25, 0.25, 0.27), 0.0, 0.4)
        self.mat_lamp_on = self._material("lamp_on", (1.0, 0.93, 0.45), 0.0, 0.3, emission=12.0)

    def _meshes(self) -> None:
        import bmesh

        bpy, s = self.bpy, OBJECT_SIZE
        self.meshes = {}
        for shape in SHAPES:
            bm = bmesh.new()
            if shape == "cube":
                bmesh.ops.create_cube(bm, size=s * 0.9)
            elif shape == "sphere":
                bmesh.ops.create_uvsphere(bm, u_segments=32, v_segments=16, radius=s / 2)
            else:
                bmesh.ops.create_cone(bm, cap_ends=True, segments=32, radius1=s / 2, radius2=s / 2, depth=s)
            me = bpy.data.meshes.new(shape)
            bm.to_mesh(me)
            bm.free()
            for p in me.polygons:
                # smooth curved surfaces, keep cube faces and cylinder caps flat
                p.use_smooth = shape == "sphere" or (shape == "cylinder" and abs(p.normal.z) < 0.5)
            me.materials.append(None)
            self.meshes[shape] = me

    def _box(self, name: str, size: Sequence[float], loc: Sequence[float], mat):
        import bmesh

        bpy = self.bpy
        bm = bmesh.new()
        bmesh.ops.create_cube(bm, size=1.0)
        me = bpy.data.meshes.new(name)
        bm.to_mesh(me)
        bm.free()
        me.materials.append(mat)
        ob = bpy.data.objects.new(name, me)
        ob.scale, ob.location = size, loc
        self.scene.collection.objects.link(ob)
        return ob

    def _stage(self) -> None:
        bpy, sc = self.bpy, self.scene
        self.floor = self._box("floor", (400, 400, 0.02), (0, 0, -0.01), self.mat_floor)
        self.body = self._box("body", (1, 1, _BODY_HEIGHT), (0, 0, _BODY_HEIGHT / 2), self.mat_body_off)
        self.plate = self._box("plate", (1, 1, _PLATE_HEIGHT), (0, 0, _BODY_HEIGHT + _PLATE_HEIGHT / 2), self.mat_plate)
        self.body.material_slots[0].link = "OBJECT"
        # the lamp: a flattened sphere on a post behind the plate, big enough to read at 160x120
        lamp_mesh = self.meshes["sphere"].copy()
        lamp_mesh.materials[0] = None
        self.lamp = bpy.data.objects.new("lamp", lamp_mesh)
        self.lamp.scale, self.lamp.location = (2.4, 0.9, 1.3), (0, 0, _BODY_HEIGHT + 0.55)
        sc.collection.objects.link(self.lamp)
        self.lamp.material_slots[0].link = "OBJECT"
        self.post = self._box("post", (0.15, 0.15, _BODY_HEIGHT + 0.3), (0, 0, (_BODY_HEIGHT + 0.3) / 2),
                              self.mat_body_off)

        cam_data = bpy.data.cameras.new("camera")
        cam_data.lens, cam_data.sensor_width, cam_data.sensor_fit = LENS_MM, SENSOR_MM, "HORIZONTAL"
        self.camera = bpy.data.objects.new("camera", cam_data)
        sc.collection.objects.link(self.camera)
        sc.camera = self.camera

        # Cycles lighting: a key area light and a sun; Workbench uses its studio light instead.
        key = bpy.data.lights.new("key", "AREA")
        key.energy, key.size = 600.0, 6.0
        key_ob = bpy.data.objects.new("key", key)
        key_ob.location, key_ob.rotation_euler = (3.0, -5.0, 7.0), (math.radians(40), 0, math.radians(25))
        sc.collection.objects.link(key_ob)
        sun = bpy.data.lights.new("sun", "SUN")
        sun.energy = 2.0
        sun_ob = bpy.data.objects.new("sun", sun)
        sun_ob.rotation_euler = (math.radians(35), math.radians(-25), 0)
        sc.collection.objects.link(sun_ob)

        world = bpy.data.worlds.new("world")
        world.color = (0.42, 0.44, 0.48)
        world.use_nodes = True
        bg = world.node_tree.nodes.get("Background")
        if bg is not None:
            bg.inputs["Color"].default_value = (0.5, 0.52, 0.55, 1.0)
            bg.inputs["Strength"].default_value = 0.6
        sc.world = world

    def _slots(self) -> None:
        bpy = self.bpy
        self.slots = []
        for i in range(MAX_OBJECTS):
            ob = bpy.data.objects.new(f"slot{i}", self.meshes["cube"])
            self.scene.collection.objects.link(ob)
            ob.material_slots[0].link = "OBJECT"  # material follows the slot, not the swapped mesh
            ob.hide_render = True
            self.slots.append(ob)

    def _settings(self) -> None:
        sc = self.scene
        r = sc.render
        r.resolution_x, r.resolution_y, r.resolution_percentage = WIDTH, HEIGHT, 100
        r.image_settings.file_format, r.image_settings.color_mode = "BMP", "RGB"
        r.filepath, r.film_transparent = self.out_path, False
        sc.view_settings.view_transform = "Standard"  # keep CLEVR's colours as they are
        # Workbench's studio light renders CLEVR's palette dim (yellow reads as olive); lift it.
        sc.view_settings.exposure = 0.9 if self.engine == "workbench" else 0.0
        if self.engine == "workbench":
            r.engine = "BLENDER_WORKBENCH"
            sh = sc.display.shading
            sh.light, sh.color_type, sh.show_shadows = "STUDIO", "MATERIAL", True
            sh.shadow_intensity, sh.show_specular_highlight, sh.show_cavity = 0.35, True, False
            # FXAA: one pass, 2.5x the frames/s of 5-sample AA (53 vs 21 at 160x120), no visible loss at this size.
            sc.display.render_aa = "FXAA"
            sc.display.light_direction = (0.45, -0.35, 0.8)
        else:
            r.engine = "CYCLES"
            cy = sc.cycles
            cy.device, cy.samples, cy.use_adaptive_sampling = "CPU", self.samples, False
            cy.use_denoising, cy.max_bounces = True, 4
            r.threads_mode, r.threads = "FIXED", 1

    # --- per frame ------------------------------------------------------------------------------------------------
    def set_frame(self, frame: Mapping[str, Any]) -> None:
        """Pose the scene for one canonical frame (see :func:`make_frame`)."""
        objs, on, lit = frame["objects"], frame["on"], frame["lit"]
        n = len(objs)
        width, depth = machine_width(n), machine_depth(n)
        yc = _MACHINE_FRONT + depth / 2
        self.body.scale.x, self.body.scale.y, self.body.location.y = width, depth, yc
        self.plate.scale.x, self.plate.scale.y, self.plate.location.y = width - 0.2, depth - 0.2, yc
        back = _MACHINE_FRONT + depth + 0.25
        self.lamp.location.y = self.post.location.y = back
        self.body.material_slots[0].material = self.mat_body_on if lit else self.mat_body_off
        self.lamp.material_slots[0].material = self.mat_lamp_on if lit else self.mat_lamp_off
        for i, ob in enumerate(self.slots):
            if i >= n:
                ob.hide_render = True
                continue
            shape, material, color = objs[i]
            ob.hide_render = False
            ob.data = self.meshes[shape]
            ob.material_slots[0].material = self.obj_mats[(material, color)]
            ob.location = slot_position(i, n, on[i])
            ob.rotation_euler = (0, 0, math.radians(20) if shape == "cube" else 0)
        self.camera.location, self.camera.rotation_euler = camera_pose(n)

    def render(self, frame: Mapping[str, Any]) -> bytes:
        """Render one frame; returns ``HEIGHT * WIDTH * 3`` bytes, RGB, top row first."""
        self.set_frame(frame)
        self.bpy.ops.render.render(write_still=True)
        return read_bmp(self.out_path)


def read_bmp(path: str) -> bytes:
    """Pixels of the BMP Blender writes, as RGB bytes with the top row first."""
    from PIL import Image

    with Image.open(path) as im:
        return im.convert("RGB").tobytes()
