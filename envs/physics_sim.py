"""A 2D Newtonian simulator for PHYRE-style puzzles, on pymunk (Chipmunk2D).

A **scene** is a float array ``[n, 8]``, one row per body, columns :data:`COLS`:
``kind`` (:data:`BALL`, :data:`BAR`, :data:`JAR`), centre ``x, y``, size ``a, b`` (ball: radius, unused; bar:
width, height; jar: outer width, height), ``angle`` (radians), ``dyn`` (1 dynamic, 0 static) and ``role``
(:data:`OTHER`, :data:`GOAL` -- the body that must touch --, :data:`TARGET` -- the body it must touch --, or
:data:`AGENT` for the balls an action adds). The world is the square ``[0, W]^2`` (y up) under gravity ``G``; a
scene supplies its own floor. Bodies that fall below ``y = -1`` leave the world, as in PHYRE.

The goal relation is PHYRE's *touching*: the goal body and the target body in contact continuously for at
least :data:`HOLD` seconds within the :data:`HORIZON` (the run stops as soon as it holds, or when every
dynamic body sleeps -- nothing can change any more). An action is a list of balls ``(x, y, r)``; one that
leaves the world or overlaps a body (or another of its balls) is **invalid** and is not simulated.

Engine choice (``benchmarks/bench_physics.py``, 1,000 identical 3-s rollouts): pymunk 7.3 ran them faster than
Box2D 2.3.10 and both were bit-for-bit deterministic across runs; pymunk's cffi calls cost less per step than
the SWIG bindings, and Chipmunk's sleeping ends settled scenes early. A rollout's set-up and step loop run in C
(``envs/physics_rollout.c``, compiled at install where a C compiler is found) with the same Chipmunk calls as the Python
loop kept here as the reference (``engine="python"``); the two give equal rollouts, bit for bit.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["COLS", "BALL", "BAR", "JAR", "OTHER", "GOAL", "TARGET", "AGENT", "W", "G", "DT", "HORIZON", "HOLD",
           "FRICTION", "ELASTICITY", "DENSITY", "PALETTE", "Rollout", "simulate", "rollout_engine", "parts", "invalid",
           "add_balls", "render", "render_rgb", "object_list"]

COLS = ("kind", "x", "y", "a", "b", "angle", "dyn", "role")
BALL, BAR, JAR = 0, 1, 2
OTHER, GOAL, TARGET, AGENT = 0, 1, 2, 3
W, G, DT = 10.0, 9.8, 1 / 60
HORIZON, HOLD = 3.0, 0.5
FRICTION, ELASTICITY, DENSITY = 0.5, 0.2, 1.0
JAR_WALL = 0.2
#: PHYRE's colour code as RGB: background, agent (red), dynamic goal object (green), dynamic goal subject
#: (blue), static goal subject (purple), dynamic confounder (gray), static confounder (black).
PALETTE = np.array([[255, 255, 255], [240, 64, 64], [64, 192, 64], [64, 96, 240], [160, 64, 200],
                    [150, 150, 150], [0, 0, 0]], dtype=np.uint8)


@dataclass
class Rollout:
    """One simulation: ``valid`` (False: the action was rejected, nothing ran), ``solved``, ``steps`` run, and
    (with ``record > 0``) ``traj [frames, n, 3]``: every body's ``x, y, angle`` each ``record`` steps."""

    valid: bool
    solved: bool = False
    steps: int = 0
    traj: np.ndarray | None = None


def parts(scene: np.ndarray, poses: np.ndarray | None = None) -> list[tuple[int, int, float, float, float, float,
                                                                              float]]:
    """Primitive shapes of a scene ``(body, kind 0 disc / 1 box, cx, cy, w_or_r, h, angle)`` in world coordinates
    (``poses [n, 3]`` overrides each body's ``x, y, angle``, e.g. a trajectory frame)."""
    out = []
    for i, (kind, x, y, a, b, ang, _, _) in enumerate(scene):
        if poses is not None:
            x, y, ang = poses[i]
        if kind == BALL:
            out.append((i, 0, x, y, a, 0.0, 0.0))
            continue
        local = [(0.0, 0.0, a, b)] if kind == BAR else [
            (0.0, -b / 2 + JAR_WALL / 2, a, JAR_WALL), (-a / 2 + JAR_WALL / 2, 0.0, JAR_WALL, b),
            (a / 2 - JAR_WALL / 2, 0.0, JAR_WALL, b)]
        c, s = np.cos(ang), np.sin(ang)
        out += [(i, 1, x + c * lx - s * ly, y + s * lx + c * ly, w, h, ang) for lx, ly, w, h in local]
    return out


def _overlap(p: tuple, xy: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Which discs ``(xy [K, 2], r [K])`` overlap primitive ``p``."""
    _, kind, cx, cy, w, h, ang = p
    d = xy - (cx, cy)
    if kind == 0:
        return np.hypot(d[:, 0], d[:, 1]) < r + w
    c, s = np.cos(ang), np.sin(ang)
    lx, ly = c * d[:, 0] + s * d[:, 1], -s * d[:, 0] + c * d[:, 1]  # disc centre in the box frame
    qx, qy = lx - np.clip(lx, -w / 2, w / 2), ly - np.clip(ly, -h / 2, h / 2)
    return np.hypot(qx, qy) < r


def invalid(scene: np.ndarray, balls: np.ndarray) -> np.ndarray:
    """Which actions are invalid: ``balls [K, m, 3]`` (``m`` balls ``x, y, r`` each) -> bool ``[K]``: a ball
    leaves ``[0, W]^2``, overlaps a body of the scene, or overlaps another ball of the same action."""
    balls = np.asarray(balls, dtype=np.float64).reshape(len(balls), -1, 3)
    xy, r = balls[..., :2], balls[..., 2]
    bad = ((xy - r[..., None] < 0) | (xy + r[..., None] > W)).any(-1).any(-1)
    for p in parts(scene):
        bad |= _overlap(p, xy.reshape(-1, 2), r.reshape(-1)).reshape(r.shape).any(-1)
    for i in range(balls.shape[1]):
        for j in range(i + 1, balls.shape[1]):
            bad |= np.hypot(*(xy[:, i] - xy[:, j]).T) < r[:, i] + r[:, j]
    return bad


def add_balls(scene: np.ndarray, balls: np.ndarray) -> np.ndarray:
    """The scene with an action's balls ``[m, 3]`` appended as dynamic :data:`AGENT` bodies."""
    balls = np.asarray(balls, dtype=np.float64).reshape(-1, 3)
    rows = np.zeros((len(balls), len(COLS)))
    rows[:, 1:4], rows[:, 6], rows[:, 7] = balls, 1.0, AGENT
    return np.concatenate([scene, rows])


_IDENTITY = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)  # cpTransform a, b, c, d, tx, ty: what pymunk's Poly passes by default


@lru_cache(maxsize=4096)
def _local_shapes(row: tuple) -> tuple:
    """One scene row's (a tuple of its :data:`COLS`) shapes in its body's frame: ``(0, radius)`` or
    ``(1, vertices)``, the vertices as Chipmunk's ``cpBodyWorldToLocal`` maps the world corners of :func:`parts`
    (computed on a body at the row's pose)."""
    import pymunk
    from pymunk._chipmunk import lib as _cp

    r = np.array(row, dtype=np.float64)
    body = pymunk.Body(body_type=pymunk.Body.DYNAMIC if r[6] else pymunk.Body.STATIC)
    _cp.cpBodySetPosition(body._body, (r[1], r[2]))
    _cp.cpBodySetAngle(body._body, r[5])
    out = []
    for _, kind, cx, cy, w, h, ang in parts(r[None]):
        if kind == 0:
            out.append((0, w))
            continue
        c, s = np.cos(ang), np.sin(ang)
        corners = [(cx + c * u - s * v, cy + s * u + c * v) for u, v in
                   ((-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2))]
        out.append((1, tuple((q.x, q.y) for q in (_cp.cpBodyWorldToLocal(body._body, p) for p in corners))))
    return tuple(out)


#: Chipmunk's functions the compiled rollout calls, in the order of ``physics_rollout.c``'s ``Api`` struct
_API_NAMES = ("cpSpaceNew", "cpSpaceFree", "cpSpaceSetGravity", "cpSpaceSetIterations", "cpSpaceSetSleepTimeThreshold",
              "cpSpaceAddCollisionHandler", "cpSpaceStep", "cpSpaceAddBody", "cpSpaceAddShape", "cpSpaceRemoveBody",
              "cpSpaceRemoveShape", "cpBodyNew", "cpBodyNewStatic", "cpBodyFree", "cpBodySetPosition",
              "cpBodyGetPosition", "cpBodySetAngle", "cpBodyGetAngle", "cpBodyGetVelocity", "cpBodySetVelocity",
              "cpBodyIsSleeping", "cpBodyGetSpace", "cpCircleShapeNew", "cpPolyShapeNew", "cpShapeFree",
              "cpShapeSetFriction", "cpShapeSetElasticity", "cpShapeSetCollisionType", "cpShapeSetDensity",
              "cpShapeGetSpace", "cpArbiterGetShapes")
_C_MAX_BODIES = 64  # physics_rollout.c's fixed arrays (MAX_BODIES; at most 4 shapes a body, MAX_SHAPES 256)


@lru_cache(maxsize=1)
def _compiled():
    """The compiled rollout module, given Chipmunk's function addresses; None where it was not built, or where
    the struct layouts it declares differ from pymunk's (another pymunk build), so the Python loop runs."""
    try:
        from causalplay.envs import physics_rollout
    except ImportError:
        return None
    from pymunk._chipmunk import ffi, lib

    lay = physics_rollout.layout()
    theirs = {"cpVect": ffi.sizeof("cpVect"), "cpTransform": ffi.sizeof("cpTransform"),
              "cpCollisionHandler": ffi.sizeof("cpCollisionHandler"),
              **{f: ffi.offsetof("cpCollisionHandler", f) for f in ("beginFunc", "separateFunc", "userData")}}
    if lay != theirs:
        import warnings

        warnings.warn(f"causalplay.envs.physics_rollout declares Chipmunk's structs as {lay}, this pymunk as "
                      f"{theirs}: physics rollouts run the (slower) Python loop", RuntimeWarning, stacklevel=3)
        return None
    physics_rollout.init(np.array([int(ffi.cast("uintptr_t", ffi.addressof(lib, n))) for n in _API_NAMES],
                                 dtype=np.uintp).tobytes())
    return physics_rollout


def rollout_engine() -> str:
    """``"c"`` where the compiled rollout loop is built and matches this pymunk, else ``"python"``: which loop
    :func:`simulate` runs by default (the same rollouts either way, faster in C)."""
    return "python" if _compiled() is None else "c"


def _collision_type(role: float) -> int:
    """A body's Chipmunk collision type: 1 goal body, 2 target, 0 any other (the goal handler watches 1-2 pairs)."""
    return 1 if role == GOAL else 2 if role == TARGET else 0


def _shapes_of(row: tuple) -> tuple:
    """:func:`_local_shapes` of a row; a ball's directly (its one disc, centred), since an action's balls are new
    rows in nearly every rollout and would only fill the cache."""
    return ((0, row[3]),) if row[0] == BALL else _local_shapes(row)


@lru_cache(maxsize=4096)
def _flat_box_shapes(row: tuple) -> tuple:
    out = []
    for kind, g in _local_shapes(row):  # a bar's or jar's: boxes only
        if kind != 1 or len(g) != 4:
            raise ValueError(f"row {row} has a shape other than a 4-vertex box; the compiled loop reads boxes")
        out += [1.0] + [c for v in g for c in v]
    return tuple(out)


def _flat_shapes(row: tuple) -> tuple:
    """A row's shapes as ``physics_rollout.c`` reads them: 9 floats a shape, ``0, radius, 0 ...`` for a disc, ``1`` and
    the 4 vertices for a box (:func:`_shapes_of`'s, in its order)."""
    return (0.0, row[3], 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0) if row[0] == BALL else _flat_box_shapes(row)


def _simulate_c(mod, scene: np.ndarray, dens: np.ndarray, friction: float, elasticity: float, gravity: float,
                noise: float, seed: int, record: int, horizon: float, stop_decided: bool) -> Rollout:
    """:func:`simulate`'s rollout in the compiled loop: the same bodies, shapes, noise normals (drawn here, as many
    as the run could use, from the same stream) and steps as the Python path."""
    rows, geom, n_dyn = [], [], 0
    for row, d in zip(map(tuple, scene.tolist()), dens.tolist(), strict=True):
        g = _flat_shapes(row)
        rows += (row[1], row[2], row[5], row[6], _collision_type(row[7]), d, len(g) // 9)
        geom += g
        n_dyn += row[6] != 0
    n_steps, need = int(round(horizon / DT)), int(round(HOLD / DT))
    z = (np.random.default_rng(seed).standard_normal(2 * n_dyn * (n_steps // 6)) if noise > 0 else np.empty(0))
    traj = np.empty(((n_steps // record + 2) if record else 0, len(scene), 3))
    solved, steps, frames = mod.rollout(array("d", rows), array("d", geom), friction, elasticity, gravity, DT, noise,
                                        z, n_steps, need, int(stop_decided and not record), int(record), traj)
    return Rollout(valid=True, solved=bool(solved), steps=steps, traj=traj[:frames] if record else None)


def simulate(scene: np.ndarray, balls=None, *, friction: float = FRICTION, elasticity: float = ELASTICITY,
             density=DENSITY, gravity: float = G, noise: float = 0.0, seed: int = 0, record: int = 0,
             horizon: float = HORIZON, check: bool = True, stop_decided: bool = True,
             engine: str | None = None) -> Rollout:
    """Run one scene (plus an action's ``balls [m, 3]``) for ``horizon`` seconds; see the module docstring.

    ``friction``, ``elasticity`` are the shapes' coefficients (Chipmunk multiplies the two of a contact);
    ``density`` a number or one per body (after the action's balls are appended). ``noise > 0`` gives noisy
    dynamics: every 0.1 s each awake dynamic body's velocity is perturbed by ``N(0, (noise |v|)^2)`` per axis
    (``seed`` fixes the draws); the internal model of :mod:`causalplay.models.physics` uses it.
    ``check=False`` skips the validity test (the caller did it, batched, with :func:`invalid`).
    A run without ``record`` also stops once the goal can no longer hold for :data:`HOLD` before the horizon
    (fewer steps left than the hold still needs): ``solved`` is the same, ``steps`` smaller; ``stop_decided=False``
    runs it to the horizon or to rest (``steps`` as a recorded run would count them).
    ``engine``: ``"c"`` runs the set-up and step loop in the compiled ``causalplay.envs.physics_rollout`` (built at
    install; :func:`rollout_engine` says whether it is here), ``"python"`` the same Chipmunk calls from Python (the
    reference; the same rollouts, tested equal), None the compiled loop where it is built.
    """
    import pymunk  # here, not at the top: the agents and tasks import this module without the physics extra
    from pymunk._chipmunk import ffi as _ffi
    from pymunk._chipmunk import lib as _cp

    scene = np.asarray(scene, dtype=np.float64)
    if scene.ndim != 2 or scene.shape[1] != len(COLS):
        raise ValueError(f"scene must be an array [n, {len(COLS)}] with columns {COLS}, got shape {scene.shape}")
    if balls is not None and len(np.asarray(balls).reshape(-1, 3)):
        if check and invalid(scene, np.asarray(balls)[None])[0]:
            return Rollout(valid=False)
        scene = add_balls(scene, balls)
    dens = np.broadcast_to(np.asarray(density, dtype=np.float64), (len(scene),))
    if engine not in (None, "c", "python"):
        raise ValueError(f"engine must be 'c', 'python' or None (compiled where built), got {engine!r}")
    compiled = _compiled() if engine != "python" else None
    if engine == "c" and compiled is None:
        raise RuntimeError("engine='c' asked for, but causalplay.envs.physics_rollout was not built (a C compiler at "
                           "install: pip install -e . rebuilds it); engine=None falls back to the Python loop")
    if compiled is not None and len(scene) <= _C_MAX_BODIES:
        return _simulate_c(compiled, scene, dens, float(friction), float(elasticity), float(gravity), float(noise),
                           seed, record, horizon, stop_decided)
    space = pymunk.Space()  # the space and its collision handler through pymunk; bodies and shapes below are Chipmunk's
    space.gravity, space.iterations, space.sleep_time_threshold = (0.0, -gravity), 10, 0.3
    sp = space._space
    # Bodies and shapes are made, set and added by the Chipmunk calls pymunk's Body, Circle, Poly and Space.add make,
    # in the same order (so the same simulation), without their Python wrappers, which cost half of a short rollout;
    # each body's local geometry is computed once per distinct row (_local_shapes). They are freed in ``finally``.
    bodies, shapes, dyn, goal_of = [], [], [], {}
    goals = 0
    friction, elasticity = float(friction), float(elasticity)
    try:
        # rows as Python floats (the same values; numpy scalars cost more to read than the C calls they feed)
        for row, d in zip(map(tuple, scene.tolist()), dens.tolist(), strict=True):
            _, x, y, _, _, angle, dynamic, role = row
            bp = _cp.cpBodyNew(0.0, 0.0) if dynamic else _cp.cpBodyNewStatic()
            bodies.append(bp)
            _cp.cpBodySetPosition(bp, (x, y))
            _cp.cpBodySetAngle(bp, angle)
            ctype = _collision_type(role)
            own = [_cp.cpCircleShapeNew(bp, g, (0.0, 0.0)) if kind == 0 else
                   _cp.cpPolyShapeNew(bp, len(g), g, _IDENTITY, 0.0) for kind, g in _shapes_of(row)]
            for ptr in own:
                shapes.append(ptr)
                _cp.cpShapeSetFriction(ptr, friction)
                _cp.cpShapeSetElasticity(ptr, elasticity)
                _cp.cpShapeSetCollisionType(ptr, ctype)
                if dynamic:
                    _cp.cpShapeSetDensity(ptr, d)
                if ctype == 1:
                    goal_of[int(_ffi.cast("uintptr_t", ptr))] = goals
            goals += ctype == 1
            _cp.cpSpaceAddBody(sp, bp)
            for ptr in own:
                _cp.cpSpaceAddShape(sp, ptr)
            if dynamic:
                dyn.append((bp, own))
        return _run(space, dyn, bodies, goal_of, max(goals, 1), noise, seed, record, horizon, stop_decided)
    finally:
        # take everything out of the space (its separate callbacks may run) before freeing it
        for ptr in shapes:
            if _cp.cpShapeGetSpace(ptr) != _ffi.NULL:
                _cp.cpSpaceRemoveShape(sp, ptr)
            _cp.cpShapeFree(ptr)
        for bp in bodies:
            if _cp.cpBodyGetSpace(bp) != _ffi.NULL:
                _cp.cpSpaceRemoveBody(sp, bp)
            _cp.cpBodyFree(bp)


def _run(space, dyn: list, bodies: list, goal_of: dict, n_goals: int, noise: float, seed: int, record: int,
         horizon: float, stop_decided: bool) -> Rollout:
    """The rollout of :func:`simulate` on its built pymunk ``space``: ``dyn`` each dynamic body with its shapes,
    ``bodies`` every body, ``goal_of`` a goal shape's address -> its goal body's index (Chipmunk pointers)."""
    from pymunk._chipmunk import ffi as _ffi
    from pymunk._chipmunk import lib as _cp

    sp = space._space
    # contacts per goal body: the relation holds when every goal body touches a target (one goal body in every
    # template of tiers B and 2B; the two-ball tiers have one per half of the world); ``apart[0]`` counts the goal
    # bodies touching none, so each step reads one number
    touching = [0] * n_goals
    apart = [n_goals]
    pa, pb = _ffi.new("cpShape *[1]"), _ffi.new("cpShape *[1]")

    def goal(arb):
        _cp.cpArbiterGetShapes(arb._arbiter, pa, pb)
        g = goal_of.get(int(_ffi.cast("uintptr_t", pa[0])))
        return goal_of.get(int(_ffi.cast("uintptr_t", pb[0]))) if g is None else g

    def begin(arb, sp_, data):
        g = goal(arb)
        touching[g] += 1
        apart[0] -= touching[g] == 1

    def separate(arb, sp_, data):
        g = goal(arb)
        touching[g] -= 1
        apart[0] += touching[g] == 0

    space.on_collision(1, 2, begin=begin, separate=separate)
    rng = np.random.default_rng(seed) if noise > 0 else None
    n_steps, need = int(round(horizon / DT)), int(round(HOLD / DT))
    frames, held, solved, live = [], 0, False, list(dyn)
    early = stop_decided and not record
    raw = _cp.cpSpaceStep
    # the per-step bookkeeping through Chipmunk's C calls (what pymunk's properties call, without their Python
    # wrappers); the noise normals come from a block drawn ahead and used in order, the same values one-by-one
    # draws would give
    get_pos, get_vel, set_vel, asleep, get_angle = (_cp.cpBodyGetPosition, _cp.cpBodyGetVelocity,
                                                    _cp.cpBodySetVelocity, _cp.cpBodyIsSleeping, _cp.cpBodyGetAngle)
    z, zi = (rng.standard_normal(64).tolist(), 0) if rng is not None else (None, 0)

    def frame() -> list:
        return [(q.x, q.y, get_angle(bp)) for bp in bodies for q in (get_pos(bp),)]

    for step in range(1, n_steps + 1):
        if record and (step - 1) % record == 0:
            frames.append(frame())
        raw(sp, DT)
        held = 0 if apart[0] else held + 1
        if held >= need:
            solved = True
            break
        if early and held + (n_steps - step) < need:  # the hold cannot be completed any more
            break
        if step % 6 == 0:
            # one pass over the live bodies: noise on the awake ones, who left the world, whether all sleep (setting
            # an awake body's velocity never changes whether any body sleeps)
            rest, gone = True, []
            for j, (bp, _) in enumerate(live):
                if not asleep(bp):
                    rest = False
                    if rng is not None:
                        v = get_vel(bp)
                        vx, vy = v.x, v.y
                        sd = noise * (vx * vx + vy * vy) ** 0.5
                        if zi + 2 > len(z):
                            z, zi = z[zi:] + rng.standard_normal(64).tolist(), 0
                        set_vel(bp, (vx + sd * z[zi], vy + sd * z[zi + 1]))
                        zi += 2
                if get_pos(bp).y < -1.0:
                    gone.append(j)
            if gone:
                for j in reversed(gone):  # left the world: the body, then its shapes (pymunk's Space.remove order)
                    _cp.cpSpaceRemoveBody(sp, live[j][0])
                    for sh in live[j][1]:
                        _cp.cpSpaceRemoveShape(sp, sh)
                    del live[j]
                rest = all(asleep(bp) for bp, _ in live)  # a removal may wake the bodies it touched
            if rest:  # at rest: the contact state is final
                solved = not apart[0] and held + (n_steps - step) >= need
                break
    traj = None
    if record:
        frames.append(frame())
        traj = np.asarray(frames)
    return Rollout(valid=True, solved=bool(solved), steps=step, traj=traj)


def render(scene: np.ndarray, balls=None, poses: np.ndarray | None = None, res: int = 256) -> np.ndarray:
    """The scene (plus an action's balls) as a ``[res, res]`` uint8 image of PHYRE colour indices (row 0 at the
    top; see :data:`PALETTE`); ``poses [n, 3]`` draws the bodies where a trajectory frame puts them."""
    if balls is not None:
        scene = add_balls(scene, balls)
    img = np.zeros((res, res), dtype=np.uint8)
    u = (np.arange(res) + 0.5) * W / res
    px, py = np.meshgrid(u, u[::-1])
    xy = np.stack([px.ravel(), py.ravel()], 1)
    colour = {(GOAL, 1): 2, (GOAL, 0): 2, (TARGET, 1): 3, (TARGET, 0): 4, (OTHER, 1): 5, (OTHER, 0): 6,
              (AGENT, 1): 1, (AGENT, 0): 1}
    order = sorted(parts(scene, poses), key=lambda p: scene[p[0], 6] + (scene[p[0], 7] == AGENT))  # statics first
    eps = np.full(len(xy), 1e-9)  # a pixel centre inside a part (distance 0) counts
    for p in order:
        img.ravel()[_overlap(p, xy, eps)] = colour[(int(scene[p[0], 7]), int(scene[p[0], 6]))]
    return img


def render_rgb(img: np.ndarray) -> np.ndarray:
    """Colour indices ``[..., H, W]`` -> RGB uint8 ``[..., H, W, 3]``."""
    return PALETTE[img]


def object_list(scene: np.ndarray) -> np.ndarray:
    """The scene's bodies as the env's object list: float32 ``[n, 8]``, positions and sizes divided by ``W`` so
    every column lies in ``[0, 1]`` (angle: ``angle / (2 pi) mod 1``; kind and role divided by 3)."""
    o = np.asarray(scene, dtype=np.float64).copy()
    o[:, 1:5] /= W
    o[:, 5] = np.mod(o[:, 5] / (2 * np.pi), 1.0)
    o[:, [0, 7]] /= 3.0
    return o.astype(np.float32)
