"""PHYRE-style task templates, tiers, fixed action sets and the 10 deterministic folds.

A **template** is a parameterised scene generator with one goal ("make the green body touch the purple/blue
one"): every task of a template shares the goal and differs in positions and sizes (PHYRE's definition). Each
template yields 100 tasks per tier; task ``i`` of template ``t`` depends on ``(tier, t, i)`` only, so any
subset can be regenerated on its own. A draw is kept only when the scene without an action does **not** reach
the goal and a search over the tier's action space **finds** an action that does; that action is stored with
the task (:attr:`PhysicsTask.solution`). Rejected draws are redrawn from the next sub-seed.

Tiers (the id each is played by in brackets): ``B-v2`` (one ball, ``causalplay/PhysicsB-v2``; an action is
``(x, y, r)`` in ``[0, 1]^3``) and ``2B-v2`` (two balls, ``causalplay/Physics2B-v2``; ``[0, 1]^6``), drawn from
the templates of world version 2; and the deprecated ``B`` (``PhysicsB-v0``), ``2B-v1`` (``Physics2B-v1``) and
``2B`` (``Physics2B-v0``), drawn from version 0's. :data:`TEMPLATE_VERSION` maps a tier to its template version
and :func:`draw_scene` draws a scene of either version. Version 2 makes the templates that a uniform random
agent solved too often harder (thicker sticks, smaller or farther targets, roofs; RAND's AUCCESS on version 0
was about twice PHYRE's on B and three times on 2B) and keeps the others; version 0's generators are unchanged,
so every version-0 task regenerates byte for byte. A tier's name is in every seed and cache path, so tiers never
share tasks.

The paired tiers (:data:`PAIRED`: ``2B-v1``, ``2B-v2``) **need both balls**. A paired task of template ``t``
puts two tasks of ``t`` side by side, each scaled by :data:`HALF` into one half of the world, with a static wall
of the world's full height between them; the goal relation holds when *every* green body touches a target (one
per half) for the hold time at the same time. A ball lies in one half (it cannot overlap the wall), and neither
half reaches its goal without an action (checked at generation), so no single ball solves a task;
:func:`single_ball_search` confirms it by a dense grid search, and the stored solution (one ball per half)
solves it. ``2B`` (v0) draws a tier-B scene and verifies it with two-ball actions, so most of its tasks fall to
one ball (hence its deprecation).

Actions map to the world as ``x = a0 W``, ``y = a1 W``, ``r = RMIN + a2 (RMAX - RMIN)``.
"""

from __future__ import annotations

import functools
import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from causalplay.core.metrics import stable_unit, template_folds

from .physics_sim import BALL, BAR, JAR, OTHER, TARGET, W, add_balls, invalid, parts, simulate
from .physics_sim import GOAL as G_

__all__ = ["TEMPLATES", "TIERS", "TEMPLATE_VERSION", "PAIRED", "RMIN", "RMAX", "N_TASKS", "ACTIONS", "HALF",
           "PhysicsTask", "to_balls", "draw_scene", "make_task", "task_keys", "get_task", "cached", "action_set",
           "folds", "task_split", "single_ball_search", "single_ball_grid"]

TIERS = {"B": 1, "2B-v1": 2, "2B": 2, "B-v2": 1, "2B-v2": 2}
#: The template version each tier draws its scenes from (:func:`draw_scene`): 0, the original templates, or 2,
#: world version 2's (harder for a random agent).
TEMPLATE_VERSION = {"B": 0, "2B-v1": 0, "2B": 0, "B-v2": 2, "2B-v2": 2}
#: The tiers whose tasks pair two half-size scenes of one template (every task needs both balls).
PAIRED = ("2B-v1", "2B-v2")
#: Scale of each half of a 2B-v1 task (a template's 10 x 10 scene drawn into 4.9 x 4.9), the wall's half-width,
#: and the left edges of the two halves.
HALF, WALL, HALVES = 0.49, 0.1, (0.0, 5.1)
RMIN, RMAX = 0.25, 1.0
N_TASKS = 100
SEARCH = 3000  # actions tried per draw before it is rejected as unsolved
ACTIONS = 500  # size of the fixed ranked action set (PHYRE: 10,000)


@dataclass(frozen=True)
class PhysicsTask:
    """One task: ``key`` (``"<template>:<index>"``), ``template`` index, ``scene [n, 8]`` and the stored
    ``solution`` (an action in ``[0, 1]^{3m}`` that solves it)."""

    key: str
    template: int
    scene: np.ndarray
    solution: np.ndarray


def to_balls(actions: np.ndarray) -> np.ndarray:
    """Actions ``[K, 3m]`` in ``[0, 1]`` -> balls ``[K, m, 3]`` in world units (``x, y, r``); one action ``[3m]`` ->
    ``[m, 3]``."""
    a = np.asarray(actions, dtype=np.float64)
    a = a.reshape(*a.shape[:-1], -1, 3)
    return np.stack([a[..., 0] * W, a[..., 1] * W, RMIN + a[..., 2] * (RMAX - RMIN)], -1)


# -- scene pieces --------------------------------------------------------------------------------------------
def _ball(x, y, r, dyn=1, role=OTHER):
    return [BALL, x, y, r, 0.0, 0.0, dyn, role]


def _bar(x, y, w, h, ang=0.0, dyn=0, role=OTHER):
    return [BAR, x, y, w, h, ang, dyn, role]


def _jar(x, y, w, h, dyn=1, role=OTHER):
    return [JAR, x, y, w, h, 0.0, dyn, role]


def _floor(role=OTHER):
    return _bar(W / 2, 0.25, W, 0.5, role=role)


def _side(rng) -> int:
    return 1 if rng.random() < 0.5 else -1


# Each template: rng -> rows. The floor's top is at y = 0.5. A static target is purple, a dynamic one blue.
def _knock_off_shelf(rng, pad=False):
    s, h, w, r = _side(rng), rng.uniform(3, 6), rng.uniform(2, 3.5), rng.uniform(0.3, 0.6)
    cx = W / 2 - s * rng.uniform(0.5, 2.5)
    rows = [_floor(OTHER if pad else TARGET), _bar(cx, h, w, 0.3),
            _ball(cx + s * (w / 2 - r - rng.uniform(0, 0.4)), h + 0.15 + r, r, role=G_)]
    if pad:
        rows.append(_bar(cx + s * (w / 2 + rng.uniform(0.8, 2.5)), 0.6, rng.uniform(1.2, 2.2), 0.2, role=TARGET))
    return rows


def _topple_stick(rng, wall=False, shelf=False):
    s, h = _side(rng), rng.uniform(1.8, 3.2)
    x0, base = W / 2 + rng.uniform(-1.5, 1.5), 0.5
    rows = [_floor(TARGET if shelf else OTHER)]
    if shelf:
        base = rng.uniform(2, 3.5)
        rows.append(_bar(x0 - s * 0.4, base - 0.15, rng.uniform(1.2, 2.0), 0.3))
    rows.append(_bar(x0, base + h / 2, rng.uniform(0.25, 0.4), h, dyn=1, role=G_))
    if wall:
        rows.append(_bar(x0 + s * rng.uniform(0.5, 0.8) * h, 0.5 + rng.uniform(0.5, 1.5) / 2,
                         0.3, rng.uniform(0.5, 1.5), role=TARGET))
    elif not shelf:
        rows.append(_bar(x0 + s * rng.uniform(0.7, 1.0) * h, 0.6, rng.uniform(0.8, 1.6), 0.2, role=TARGET))
    return rows


def _jar_off_shelf(rng):
    s, w, h, sh = _side(rng), rng.uniform(0.9, 1.4), rng.uniform(0.8, 1.4), rng.uniform(2.5, 5)
    cx = W / 2 - s * rng.uniform(0.5, 2.5)
    return [_floor(TARGET), _bar(cx, sh, 2.4, 0.3), _jar(cx + s * (1.2 - w / 2 - rng.uniform(0, 0.3)),
                                                         sh + 0.15 + h / 2, w, h, role=G_)]


def _ball_into_jar(rng):
    s, h, w, r = _side(rng), rng.uniform(3, 5.5), rng.uniform(2, 3), rng.uniform(0.3, 0.5)
    cx = W / 2 - s * rng.uniform(1, 2.5)
    jw, jh = rng.uniform(1.6, 2.4), rng.uniform(0.8, 1.4)
    return [_floor(), _bar(cx, h, w, 0.3), _ball(cx + s * (w / 2 - r - 0.2), h + 0.15 + r, r, role=G_),
            _jar(cx + s * (w / 2 + jw / 2 + rng.uniform(0.3, 1.5)), 0.5 + jh / 2, jw, jh, role=TARGET)]


def _chain_push(rng, floor_level=False):
    s, r, rg = _side(rng), rng.uniform(0.35, 0.55), rng.uniform(0.35, 0.6)
    if floor_level:  # gray ball pushes the green one, under a roof, into a purple wall
        x = W / 2 + rng.uniform(-1.5, 1.5)
        return [_floor(), _ball(x, 0.5 + r, r, role=G_), _bar(x + s * 0.3, 0.5 + 2 * r + 0.35, 2.2, 0.3),
                _ball(x - s * (r + rg + rng.uniform(0.3, 1.0)), 0.5 + rg, rg),
                _bar(x + s * rng.uniform(2.0, 3.5), 1.5, 0.3, 2.0, role=TARGET)]
    h, w = rng.uniform(3, 5.5), rng.uniform(3.5, 4.5)
    cx = W / 2 + s * rng.uniform(-1.0, 1.0)
    gx = cx + s * (w / 2 - r - 0.05)
    return [_floor(TARGET), _bar(cx, h, w, 0.3), _ball(gx, h + 0.15 + r, r, role=G_),
            _bar(gx, h + 0.15 + 2 * r + 0.3, 2 * r + 0.6, 0.2),  # a roof: the green ball is reached only by pushing
            _ball(gx - s * (r + rg + rng.uniform(0.5, 1.5)), h + 0.15 + rg, rg)]


def _support_removal(rng):
    x, span, ph = W / 2 + rng.uniform(-2, 2), rng.uniform(2.0, 3.0), rng.uniform(1.2, 2.5)
    r = rng.uniform(0.3, 0.5)
    return [_floor(), _bar(x - span / 2, 0.5 + ph / 2, 0.3, ph, dyn=1),
            _bar(x + span / 2, 0.5 + ph / 2, 0.3, ph, dyn=1),
            _bar(x, 0.5 + ph + 0.1, span + 0.6, 0.2, dyn=1),
            _ball(x + rng.uniform(-0.5, 0.5), 0.5 + ph + 0.2 + r, r, role=G_),
            _bar(x + _side(rng) * rng.uniform(2.5, 3.5), 0.6, 1.5, 0.2, role=TARGET)]


def _domino(rng):
    s, n, gap, h = _side(rng), int(rng.integers(2, 4)), rng.uniform(0.8, 1.3), rng.uniform(1.5, 2.2)
    x0 = W / 2 - s * gap * n / 2
    rows = [_floor()] + [_bar(x0 + s * gap * k, 0.5 + h / 2, 0.25, h, dyn=1, role=G_ if k == n else OTHER)
                         for k in range(n + 1)]
    return rows + [_bar(x0 + s * (gap * n + rng.uniform(0.6, 0.9) * h), 0.6, 1.2, 0.2, role=TARGET)]


def _roll_to_wall(rng, bump=False):
    s, r, x = _side(rng), rng.uniform(0.3, 0.6), W / 2 + rng.uniform(-1.5, 1.5)
    d = rng.uniform(1.5, 3.5)
    rows = [_floor(), _ball(x, 0.5 + r, r, role=G_), _bar(x + s * d, 0.5 + 1.0, 0.3, 2.0, role=TARGET)]
    if bump:
        rows.append(_bar(x + s * d / 2, 0.6, 0.4, 0.2))
    return rows


def _tower(rng):
    x, n, bw = W / 2 + rng.uniform(-2, 2), int(rng.integers(2, 4)), rng.uniform(0.5, 0.9)
    rows, y = [_floor()], 0.5
    for _ in range(n):
        bh = rng.uniform(0.5, 0.9)
        rows.append(_bar(x, y + bh / 2, bw, bh, dyn=1))
        y += bh
    r = rng.uniform(0.25, 0.4)
    return rows + [_ball(x, y + r, r, role=G_), _bar(x + _side(rng) * rng.uniform(1.5, 3.0), 0.6, 1.5, 0.2,
                                                       role=TARGET)]


def _ramp(rng):
    s, h, r = _side(rng), rng.uniform(3, 5), rng.uniform(0.3, 0.5)
    top = W / 2 - s * rng.uniform(1.5, 3)
    ramp_len, ang = rng.uniform(2.5, 3.5), rng.uniform(0.25, 0.45)
    rx, ry = top + s * (0.75 + ramp_len / 2 * np.cos(ang)), h - ramp_len / 2 * np.sin(ang)
    return [_floor(), _bar(top, h, 1.5, 0.3), _ball(top, h + 0.15 + r, r, role=G_),
            _bar(rx + s * 0.05, ry, ramp_len, 0.3, -s * ang),
            _bar(rx + s * rng.uniform(2.5, 4.0), 1.5, 0.3, 2.0, role=TARGET)]


def _shelf_to_shelf(rng):
    s, h, r = _side(rng), rng.uniform(4.5, 6.5), rng.uniform(0.3, 0.5)
    cx = W / 2 - s * rng.uniform(1, 2.5)
    return [_floor(), _bar(cx, h, 2.0, 0.3), _ball(cx + s * 0.6, h + 0.15 + r, r, role=G_),
            _bar(cx + s * rng.uniform(2.0, 3.5), h - rng.uniform(1.5, 3), rng.uniform(1.5, 2.5), 0.3, role=TARGET)]


def _jar_topple(rng):
    s, w, h = _side(rng), rng.uniform(0.8, 1.2), rng.uniform(1.8, 2.6)
    x = W / 2 + rng.uniform(-1.5, 1.5)
    return [_floor(), _jar(x, 0.5 + h / 2, w, h, role=G_),
            _bar(x + s * rng.uniform(0.6, 0.9) * h, 0.5 + 0.6, 0.3, 1.2, role=TARGET)]


def _box_target(rng):
    s, h, r = _side(rng), rng.uniform(3, 5), rng.uniform(0.3, 0.5)
    cx = W / 2 - s * rng.uniform(1, 2.5)
    bw, bh = rng.uniform(1.2, 2.2), rng.uniform(0.6, 1.4)
    return [_floor(), _bar(cx, h, 2.5, 0.3), _ball(cx + s * 0.9, h + 0.15 + r, r, role=G_),
            _bar(cx + s * (1.25 + bw / 2 + rng.uniform(0.2, 1.2)), 0.5 + bh / 2, bw, bh, dyn=1, role=TARGET)]


def _ball_meets_ball(rng):
    s, r1, r2 = _side(rng), rng.uniform(0.3, 0.5), rng.uniform(0.4, 0.7)
    h, cx = rng.uniform(3, 5.5), W / 2 - s * rng.uniform(0.5, 2)
    bx = cx + s * rng.uniform(1.8, 3.0)
    return [_floor(), _bar(cx, h, 2.5, 0.3), _ball(cx + s * 0.8, h + 0.15 + r1, r1, role=G_),
            _bar(bx - 0.55 * r2 - 0.1, 0.6, 0.2, 0.2), _bar(bx + 0.55 * r2 + 0.1, 0.6, 0.2, 0.2),  # a cradle
            _ball(bx, 0.5 + np.sqrt(r2**2 - (0.55 * r2) ** 2) + 0.2, r2, role=TARGET)]


def _lift_bar(rng):
    """A green bar lying across a static block must end touching a purple pad: tip it off by one end."""
    x, bl = W / 2 + rng.uniform(-2, 2), rng.uniform(2.5, 3.5)
    bh = rng.uniform(0.8, 1.8)
    return [_floor(), _bar(x, 0.5 + bh / 2, 0.6, bh), _bar(x, 0.5 + bh + 0.12, bl, 0.24, dyn=1, role=G_),
            _bar(x + _side(rng) * rng.uniform(1.8, 3.0), 0.6, 1.2, 0.2, role=TARGET)]


def _two_sticks(rng):
    s, h, x = _side(rng), rng.uniform(1.8, 2.8), W / 2 + rng.uniform(-2, 2)
    d = rng.uniform(0.8, 1.4)
    return [_floor(), _bar(x, 0.5 + h / 2, 0.3, h, dyn=1, role=G_),
            _bar(x + s * d, 0.5 + h * 0.4, 0.3, h * 0.8, dyn=1, role=TARGET)]


def _pendulum_ball(rng, stopper=0.4):
    """A green ball on a tilted static bar held by a small stopper; lift it over the stopper."""
    s, r, ang = _side(rng), rng.uniform(0.3, 0.5), rng.uniform(0.15, 0.3)
    x, h, L = W / 2 + rng.uniform(-1, 1), rng.uniform(3, 5), 4.0
    c, sn = np.cos(ang), np.sin(ang)
    bx = x + s * 0.8  # the ball rests against the stopper, on the down-hill side of the bar's centre
    top = h + 0.15 / c + (bx - x) * (-s * np.tan(ang)) * s * s
    return [_floor(TARGET), _bar(x, h, L, 0.3, s * ang if s < 0 else -ang),
            _bar(x + s * 1.6 * c, h + 0.15 + stopper / 2 - s * s * 1.6 * sn, 0.2, stopper),
            _ball(bx - s * 2 * r, max(top, h) + r + 0.4, r, role=G_)]


def _shelf_to_wall(rng):
    s, h, r = _side(rng), rng.uniform(2, 4), rng.uniform(0.3, 0.5)
    cx = W / 2 - s * rng.uniform(1, 2.5)
    return [_floor(), _bar(cx, h, 2.5, 0.3), _ball(cx + s * rng.uniform(0.3, 0.9), h + 0.15 + r, r, role=G_),
            _bar(cx + s * rng.uniform(3.0, 4.5), 1.5, 0.3, 2.0, role=TARGET)]


def _stick_hits_ball(rng):
    s, h, r = _side(rng), rng.uniform(2.0, 3.0), rng.uniform(0.4, 0.6)
    x = W / 2 + rng.uniform(-1.5, 1.5)
    bx = x + s * rng.uniform(0.6, 0.9) * h
    return [_floor(), _bar(x, 0.5 + h / 2, 0.3, h, dyn=1, role=G_), _bar(bx - 0.55 * r - 0.1, 0.6, 0.2, 0.2),
            _bar(bx + 0.55 * r + 0.1, 0.6, 0.2, 0.2), _ball(bx, 0.5 + np.sqrt(r**2 - (0.55 * r) ** 2) + 0.2, r,
                                                           role=TARGET)]


def _two_shelves(rng):
    """A gray ball on a high shelf must fall onto a roofed green ball on a lower shelf: a two-step chain."""
    s, r, rg = _side(rng), rng.uniform(0.3, 0.45), rng.uniform(0.3, 0.5)
    lo, cx = rng.uniform(2.5, 3.5), W / 2 + s * rng.uniform(0, 1.5)
    hi = lo + rng.uniform(2.2, 3.0)
    gx = cx + s * 0.9
    return [_floor(TARGET), _bar(cx, lo, 2.2, 0.3), _ball(gx, lo + 0.15 + r, r, role=G_),
            _bar(cx - s * 1.6, hi, 2.0, 0.3), _ball(cx - s * 1.2, hi + 0.15 + rg, rg)]


_T: list[tuple[str, Callable]] = [
    ("knock_off_shelf", _knock_off_shelf), ("knock_onto_pad", lambda g: _knock_off_shelf(g, pad=True)),
    ("topple_stick_pad", _topple_stick), ("topple_stick_wall", lambda g: _topple_stick(g, wall=True)),
    ("stick_off_shelf", lambda g: _topple_stick(g, shelf=True)), ("jar_off_shelf", _jar_off_shelf),
    ("ball_into_jar", _ball_into_jar), ("chain_push_shelf", _chain_push),
    ("chain_push_floor", lambda g: _chain_push(g, floor_level=True)), ("support_removal", _support_removal),
    ("domino", _domino), ("roll_to_wall", _roll_to_wall), ("roll_over_bump", lambda g: _roll_to_wall(g, bump=True)),
    ("tower_topple", _tower), ("ramp", _ramp), ("shelf_to_shelf", _shelf_to_shelf), ("jar_topple", _jar_topple),
    ("box_target", _box_target), ("ball_meets_ball", _ball_meets_ball), ("lift_bar", _lift_bar),
    ("two_sticks", _two_sticks), ("tilted_stopper", _pendulum_ball), ("shelf_to_wall", _shelf_to_wall),
    ("stick_hits_ball", _stick_hits_ball), ("two_shelves", _two_shelves),
]
#: Template names, in index order.
TEMPLATES = tuple(n for n, _ in _T)


# -- world version 2 (tiers B-v2, 2B-v2) ---------------------------------------------------------------------
# The templates of version 0 that a uniform random ball solved too often (RAND far above PHYRE's; per-template
# success probabilities in docs/dev/physics-log.md) get harder variants: the same goal and bodies, with thicker
# sticks (a harder hit topples them), smaller or farther targets and roofs that shield the green body from balls
# dropped from above. The other templates are version 0's, unchanged. Version 0's functions above stay as they
# were, so every version-0 task regenerates byte for byte.
def _knock_off_shelf_v2(rng):
    """The green ball sits farther in from the shelf's edge (version 0: at most 0.4 in)."""
    s, h, w, r = _side(rng), rng.uniform(3, 6), rng.uniform(2.5, 3.5), rng.uniform(0.3, 0.5)
    cx = W / 2 - s * rng.uniform(0.5, 2.5)
    return [_floor(TARGET), _bar(cx, h, w, 0.3), _ball(cx + s * (w / 2 - r - rng.uniform(0.5, 1.0)), h + 0.15 + r, r,
                                                      role=G_)]


def _topple_stick_v2(rng, wall=False, shelf=False):
    s, h = _side(rng), rng.uniform(1.6, 2.4)
    x0, base = W / 2 + rng.uniform(-1.5, 1.5), 0.5
    rows = [_floor(TARGET if shelf else OTHER)]
    if shelf:  # the shelf reaches past the stick, so it must topple hard to fall off
        base = rng.uniform(2, 3.5)
        rows.append(_bar(x0 - s * 0.1, base - 0.15, rng.uniform(1.6, 2.2), 0.3))
    rows.append(_bar(x0, base + h / 2, rng.uniform(0.7, 0.9), h, dyn=1, role=G_))
    if wall:
        wh = rng.uniform(0.4, 0.8)
        rows.append(_bar(x0 + s * rng.uniform(0.6, 0.85) * h, 0.5 + wh / 2, 0.3, wh, role=TARGET))
    elif not shelf:
        rows.append(_bar(x0 + s * rng.uniform(0.8, 1.0) * h, 0.6, rng.uniform(0.4, 0.7), 0.2, role=TARGET))
    return rows


def _ball_into_jar_v2(rng):
    s, h, w, r = _side(rng), rng.uniform(3, 5.5), rng.uniform(2, 3), rng.uniform(0.3, 0.45)
    cx = W / 2 - s * rng.uniform(1, 2.5)
    jw, jh = rng.uniform(1.0, 1.3), rng.uniform(1.0, 1.5)
    return [_floor(), _bar(cx, h, w, 0.3), _ball(cx + s * (w / 2 - r - 0.2), h + 0.15 + r, r, role=G_),
            _jar(cx + s * (w / 2 + jw / 2 + rng.uniform(1.0, 2.0)), 0.5 + jh / 2, jw, jh, role=TARGET)]


def _domino_v2(rng):
    """Dominoes under a static roof that leaves only the outer edge of the first one's top open."""
    s, n, gap, h = _side(rng), int(rng.integers(2, 4)), rng.uniform(1.2, 1.5), rng.uniform(1.6, 2.2)
    x0 = W / 2 - s * gap * n / 2
    rows = [_floor()] + [_bar(x0 + s * gap * k, 0.5 + h / 2, 0.35, h, dyn=1, role=G_ if k == n else OTHER)
                         for k in range(n + 1)]
    roof = gap * n + 0.7  # from 0.1 outwards of the first domino's centre to 0.6 past the last one's
    rows.append(_bar(x0 + s * (roof / 2 - 0.1), 0.5 + h + 0.25, roof, 0.2))
    return rows + [_bar(x0 + s * (gap * n + rng.uniform(1.05, 1.2) * h), 0.6, rng.uniform(0.3, 0.5), 0.2,
                        role=TARGET)]


def _roll_to_wall_v2(rng):
    """A small green ball, a low wall far off and a low bump half way."""
    s, r, x = _side(rng), rng.uniform(0.2, 0.35), W / 2 + rng.uniform(-1.5, 1.5)
    d, wh = rng.uniform(3.0, 4.5), rng.uniform(0.4, 0.8)
    return [_floor(), _ball(x, 0.5 + r, r, role=G_), _bar(x + s * d, 0.5 + wh / 2, 0.3, wh, role=TARGET),
            _bar(x + s * d / 2, 0.56, 0.4, 0.12)]


def _tower_v2(rng):
    x, n, bw = W / 2 + rng.uniform(-2, 2), int(rng.integers(2, 4)), rng.uniform(0.7, 1.0)
    rows, y = [_floor()], 0.5
    for _ in range(n):
        bh = rng.uniform(0.4, 0.7)
        rows.append(_bar(x, y + bh / 2, bw, bh, dyn=1))
        y += bh
    r = rng.uniform(0.25, 0.4)
    return rows + [_ball(x, y + r, r, role=G_), _bar(x + _side(rng) * rng.uniform(3.0, 4.5), 0.55,
                                                       rng.uniform(0.4, 0.6), 0.1, role=TARGET)]


def _shelf_to_shelf_v2(rng):
    s, h, r = _side(rng), rng.uniform(4.5, 6.5), rng.uniform(0.3, 0.5)
    cx = W / 2 - s * rng.uniform(1, 2.5)
    return [_floor(), _bar(cx, h, 2.0, 0.3), _ball(cx + s * 0.6, h + 0.15 + r, r, role=G_),
            _bar(cx + s * rng.uniform(2.0, 3.5), h - rng.uniform(1.5, 3), rng.uniform(1.0, 1.5), 0.3, role=TARGET)]


def _box_target_v2(rng):
    s, h, r = _side(rng), rng.uniform(3, 5), rng.uniform(0.3, 0.5)
    cx = W / 2 - s * rng.uniform(1, 2.5)
    bw, bh = rng.uniform(0.4, 0.6), rng.uniform(0.3, 0.5)
    return [_floor(), _bar(cx, h, 2.5, 0.3), _ball(cx + s * 0.9, h + 0.15 + r, r, role=G_),
            _bar(cx + s * (1.25 + bw / 2 + rng.uniform(2.0, 3.0)), 0.5 + bh / 2, bw, bh, dyn=1, role=TARGET)]


def _lift_bar_v2(rng):
    x, bl = W / 2 + rng.uniform(-2, 2), rng.uniform(2.5, 3.5)
    bh = rng.uniform(0.8, 1.8)
    return [_floor(), _bar(x, 0.5 + bh / 2, 0.6, bh), _bar(x, 0.5 + bh + 0.12, bl, 0.24, dyn=1, role=G_),
            _bar(x + _side(rng) * rng.uniform(2.8, 3.8), 0.6, rng.uniform(0.4, 0.6), 0.2, role=TARGET)]


def _two_sticks_v2(rng):
    s, h, x = _side(rng), rng.uniform(1.8, 2.6), W / 2 + rng.uniform(-2, 2)
    d = rng.uniform(0.85, 1.0) * h
    return [_floor(), _bar(x, 0.5 + h / 2, 0.7, h, dyn=1, role=G_),
            _bar(x + s * d, 0.5 + h * 0.1, 0.8, h * 0.2, role=TARGET)]


def _stick_hits_ball_v2(rng):
    s, h, r = _side(rng), rng.uniform(2.0, 3.0), rng.uniform(0.25, 0.35)
    x = W / 2 + rng.uniform(-1.5, 1.5)
    bx = x + s * rng.uniform(0.95, 1.1) * h
    return [_floor(), _bar(x, 0.5 + h / 2, 0.7, h, dyn=1, role=G_), _bar(bx - 0.55 * r - 0.1, 0.6, 0.2, 0.2),
            _bar(bx + 0.55 * r + 0.1, 0.6, 0.2, 0.2), _ball(bx, 0.5 + np.sqrt(r**2 - (0.55 * r) ** 2) + 0.2, r,
                                                           role=TARGET)]


def _tilted_stopper_v2(rng):
    """Version 0's scene (its bar always slopes down to the right) with a taller stopper, and a purple pad past
    the bar's lower (right) end instead of a purple floor: knocking the ball back up the bar no longer solves it."""
    rows = _pendulum_ball(rng, stopper=0.55)
    x, ang = rows[1][1], abs(rows[1][5])
    rows[0] = _floor()
    return rows + [_bar(x + 2.0 * np.cos(ang) + rng.uniform(0.3, 1.2), 0.6, rng.uniform(0.6, 1.0), 0.2, role=TARGET)]


def _two_shelves_v2(rng):
    """Version 0's ``two_shelves`` with a static roof over the green ball, reaching 0.6 past it towards the lower
    shelf's far edge, so a ball dropped from above no longer knocks it off directly."""
    s, r, rg = _side(rng), rng.uniform(0.3, 0.45), rng.uniform(0.3, 0.5)
    lo, cx = rng.uniform(2.5, 3.5), W / 2 + s * rng.uniform(0, 1.5)
    hi = lo + rng.uniform(2.2, 3.0)
    gx = cx + s * 0.9
    return [_floor(TARGET), _bar(cx, lo, 2.2, 0.3), _ball(gx, lo + 0.15 + r, r, role=G_),
            _bar(gx + s * 0.3, lo + 0.15 + 2 * r + 0.35, 2 * r + 0.6, 0.2),
            _bar(cx - s * 1.6, hi, 2.0, 0.3), _ball(cx - s * 1.2, hi + 0.15 + rg, rg)]


#: Version 2's replacements, by template index; every other template is version 0's.
_T2: dict[int, Callable] = {
    0: _knock_off_shelf_v2, 2: _topple_stick_v2, 3: lambda g: _topple_stick_v2(g, wall=True),
    4: lambda g: _topple_stick_v2(g, shelf=True),
    6: _ball_into_jar_v2, 10: _domino_v2, 11: _roll_to_wall_v2, 13: _tower_v2, 15: _shelf_to_shelf_v2,
    17: _box_target_v2, 19: _lift_bar_v2, 20: _two_sticks_v2, 21: _tilted_stopper_v2, 23: _stick_hits_ball_v2,
    24: _two_shelves_v2,
}


def _proposals(scene: np.ndarray, rng, k: int, m: int) -> np.ndarray:
    """``k`` candidate actions ``[k, 3m]`` for the solvability search: half uniform, half near dynamic bodies."""
    a = rng.random((k, m, 3))
    dyn = scene[scene[:, 6] > 0]
    near = rng.random((k, m)) < 0.5
    pick = dyn[rng.integers(0, len(dyn), (k, m))]
    a[..., 0] = np.where(near, np.clip((pick[..., 1] + rng.normal(0, 1.0, (k, m))) / W, 0, 1), a[..., 0])
    a[..., 1] = np.where(near, np.clip((pick[..., 2] + rng.uniform(0, 3, (k, m))) / W, 0, 1), a[..., 1])
    return a.reshape(k, 3 * m)


def search(scene: np.ndarray, m: int, rng, budget: int = SEARCH) -> np.ndarray | None:
    """The first of up to ``budget`` valid proposals that solves ``scene`` with ``m`` balls, or ``None``."""
    tried = 0
    while tried < budget:
        acts = _proposals(scene, rng, 64, m)
        for act in acts[~invalid(scene, to_balls(acts))]:
            tried += 1
            if simulate(scene, to_balls(act), check=False).solved:
                return act
    return None


def _wall() -> list:
    return _bar(W / 2, W / 2, 2 * WALL, W)


def draw_scene(template: int, rng: np.random.Generator, version: int = 0) -> np.ndarray:
    """One draw ``[n, 8]`` of ``template``'s scene generator in template ``version`` (0 or 2, see
    :data:`TEMPLATE_VERSION`); version 2 replaces the generators of the templates a random agent solved too often
    and keeps the others. The draw is not checked (:func:`make_task` checks it)."""
    if version not in (0, 2):
        raise ValueError(f"template version must be 0 or 2, got {version!r}")
    if not 0 <= template < len(_T):
        raise ValueError(f"template must lie in [0, {len(_T)}), got {template!r}")
    gen = _T2.get(template, _T[template][1]) if version == 2 else _T[template][1]
    return np.asarray(gen(rng), dtype=np.float64)


def _half(rng, template: int, side: int, version: int) -> np.ndarray | None:
    """One half of a paired (2B-v1, 2B-v2) scene: a draw of ``template`` scaled by :data:`HALF` into half ``side``
    (0 left, 1 right), or None when a body would reach past the half's edges."""
    scene = draw_scene(template, rng, version)
    scene[:, 1:5] *= HALF
    scene[:, 1] += HALVES[side]
    lo, hi = HALVES[side], HALVES[side] + HALF * W
    for _, kind, cx, _cy, w, h, ang in parts(scene):
        ext = w if kind == 0 else 0.5 * (abs(w * np.cos(ang)) + abs(h * np.sin(ang)))
        if cx - ext < lo - 1e-9 or cx + ext > hi + 1e-9:
            return None
    return scene


def _draw_half(tier: str, template: int, index: int, side: int, draw: int):
    """Draw ``draw`` of half ``side`` of a paired task, from its own sub-seed stream: the half (None when it leaves
    its half of the world or is solved without an action) and the stream, which the ball search goes on drawing."""
    rng = np.random.default_rng(int(stable_unit(f"{tier}:{template}:{index}:{side}:{draw}") * 2**63))
    half = _half(rng, template, side, TEMPLATE_VERSION[tier])
    if half is None or simulate(np.concatenate([np.asarray([_wall()]), half])).solved:
        return None, rng
    return half, rng


def _make_pair(tier: str, template: int, index: int, max_draws: int) -> PhysicsTask:
    """A 2B-v1 task (module docstring): each half is the first draw of its own sub-seed stream that stays in its
    half, is not solved without an action and is solved by one ball in the half search; the halves' balls together
    must solve the whole scene (their holds must overlap), else the right half is redrawn."""
    halves, sols = [], []
    for side in (0, 1):
        draw = 0
        while True:
            if draw >= max_draws:
                raise RuntimeError(f"template {TEMPLATES[template]!r}: no solvable {tier} half {side} for task "
                                   f"{index} in {max_draws} draws")
            half, rng = _draw_half(tier, template, index, side, draw)
            draw += 1
            if half is None:
                continue
            sol = search(np.concatenate([np.asarray([_wall()]), half]), 1, rng)
            if sol is None:
                continue
            if side == 1:
                scene = np.concatenate([np.asarray([_wall()]), halves[0], half])
                both = np.concatenate([sols[0], sol])
                if not simulate(scene, to_balls(both)).solved:
                    continue
            halves.append(half)
            sols.append(sol)
            break
    return PhysicsTask(f"{template:02d}:{index:03d}", template, scene, both)


def _make_pair_joint(tier: str, template: int, index: int, max_draws: int) -> PhysicsTask:
    """A 2B-v2 task (module docstring). The left half is the first draw of its sub-seed stream that stays in its
    half, is not solved without an action and is solved by one ball in the half search. The right half's ball is
    searched in the whole scene with the left ball in place, so that its hold fits the left one's (version 2's
    narrower targets make holds brief; the 2B-v1 rule, a ball found for each half alone and then checked together,
    rejects most right halves). When ``max_draws`` right halves fail, the next left half is drawn and the right
    halves are tried again from the first."""
    wall = np.asarray([_wall()])
    left_draw = 0
    while True:
        while True:  # the next left half that one ball solves
            if left_draw >= max_draws:
                raise RuntimeError(f"template {TEMPLATES[template]!r}: no solvable {tier} pair for task {index} "
                                   f"in {max_draws} draws of each half")
            left, rng = _draw_half(tier, template, index, 0, left_draw)
            left_draw += 1
            left_sol = None if left is None else search(np.concatenate([wall, left]), 1, rng)
            if left_sol is not None:
                break
        for draw in range(max_draws):
            right, rng = _draw_half(tier, template, index, 1, draw)
            if right is None:
                continue
            scene = np.concatenate([wall, left, right])
            sol = search(add_balls(scene, to_balls(left_sol)), 1, rng)
            # the right half is walled off from the left one, so a solving ball lies in it; checked anyway
            if sol is None or to_balls(sol)[0, 0] < W / 2:
                continue
            both = np.concatenate([left_sol, sol])
            if simulate(scene, to_balls(both)).solved:
                return PhysicsTask(f"{template:02d}:{index:03d}", template, scene, both)


def make_task(tier: str, template: int, index: int, max_draws: int = 50) -> PhysicsTask:
    """Task ``index`` of ``template`` in ``tier`` (see the module docstring); raises when ``max_draws`` draws in
    a row are unsolvable or already solved without an action."""
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {list(TIERS)}, got {tier!r}")
    if not 0 <= template < len(_T):
        raise ValueError(f"template must lie in [0, {len(_T)}), got {template!r}")
    if tier in PAIRED:
        make = _make_pair_joint if TEMPLATE_VERSION[tier] >= 2 else _make_pair
        return make(tier, template, index, max_draws)
    for draw in range(max_draws):
        rng = np.random.default_rng(int(stable_unit(f"{tier}:{template}:{index}:{draw}") * 2**63))
        scene = draw_scene(template, rng, TEMPLATE_VERSION[tier])
        if simulate(scene).solved:
            continue
        sol = search(scene, TIERS[tier], rng)
        if sol is not None:
            return PhysicsTask(f"{template:02d}:{index:03d}", template, scene, sol)
    raise RuntimeError(f"template {TEMPLATES[template]!r}: no solvable draw for task {index} in {max_draws} draws")


def single_ball_grid(nx: int = 20, ny: int = 20, nr: int = 4) -> np.ndarray:
    """The single-ball actions ``[nx * ny * nr, 3]`` of :func:`single_ball_search`: ball centres at the centres
    of an ``nx x ny`` grid of cells over the world, each with ``nr`` radii evenly from ``RMIN`` to ``RMAX``."""
    x, y = (np.arange(nx) + 0.5) / nx, (np.arange(ny) + 0.5) / ny
    r = np.linspace(0.0, 1.0, nr)
    return np.stack(np.meshgrid(x, y, r, indexing="ij"), -1).reshape(-1, 3)


def single_ball_search(scene: np.ndarray, nx: int = 20, ny: int = 20, nr: int = 4) -> tuple[np.ndarray | None, int]:
    """Every valid action of :func:`single_ball_grid` simulated on ``scene`` until one solves it: ``(the first
    solving action or None, how many valid actions were simulated)``. The default grid is 1,600 actions (cells of
    0.5 x 0.5 world units, radii 0.25, 0.5, 0.75, 1.0)."""
    acts = single_ball_grid(nx, ny, nr)
    acts = acts[~invalid(scene, to_balls(acts))]
    for j, a in enumerate(acts):
        if simulate(scene, to_balls(a), check=False).solved:
            return a, j + 1
    return None, len(acts)


def task_keys(templates=None, n: int = N_TASKS) -> list[str]:
    """The keys ``"<template>:<index>"`` of tasks ``0..n-1`` of each template (all by default), template-major."""
    return [f"{t:02d}:{i:03d}" for t in (range(len(_T)) if templates is None else templates) for i in range(n)]


def cached(path: Path, make: Callable):
    """``make()``, pickled at ``path``: read when the file exists, else computed and written atomically (a unique
    temp file renamed into place), so processes that fill one cache at once never read a partial file."""
    if path.exists():
        return pickle.loads(path.read_bytes())
    obj = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(pickle.dumps(obj))
    os.replace(tmp, path)
    return obj


@functools.lru_cache(maxsize=8192)
def get_task(tier: str, key: str, cache: str | None = None) -> PhysicsTask:
    """Task ``key`` (``"<template>:<index>"``) of ``tier``: :func:`make_task`'s, kept in memory and, when ``cache``
    names a folder, in ``cache/tasks-<tier>/`` (one file per task). Generation is deterministic, so a cached task
    is the generated one byte for byte."""
    t, _, i = key.partition(":")
    if not (t.isdigit() and i.isdigit()):
        raise ValueError(f"task key must look like '07:013' (template:index), got {key!r}")
    if cache is None:
        return make_task(tier, int(t), int(i))
    return cached(Path(cache) / f"tasks-{tier}" / f"{t}-{i}.pkl", lambda: make_task(tier, int(t), int(i)))


def action_set(tier: str, n: int = ACTIONS, seed: int = 0) -> np.ndarray:
    """The tier's fixed action set ``[n, 3m]`` (uniform in ``[0, 1]``; PHYRE ranks 10,000), the same on every
    machine for a given ``seed``."""
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {list(TIERS)}, got {tier!r}")
    return np.random.default_rng([seed, TIERS[tier]]).random((n, 3 * TIERS[tier]))


def task_split(tier: str, key: str, fold: int, setting: str) -> str:
    """``"train"``, ``"dev"`` or ``"test"`` for task ``key`` in ``fold`` (0-9) of ``setting`` ("within"/"cross").

    within: each template's tasks ranked by stable hash into tenths; tenth ``fold`` tests, tenth ``fold + 1``
    develops, the rest train. cross: :func:`causalplay.bench.metrics.template_folds` over the template names
    with 10 folds (fold ``i`` tests on every tenth template from ``i``).
    """
    if setting not in ("within", "cross") or not 0 <= fold < 10:
        raise ValueError(f"need setting 'within' or 'cross' and fold in 0..9, got {setting!r}, {fold!r}")
    t, i = (int(p) for p in key.split(":"))
    if setting == "cross":
        f = template_folds(TEMPLATES, n_folds=10)[fold]
        return next(s for s in ("test", "dev", "train") if TEMPLATES[t] in f[s])
    ranks = np.argsort(np.argsort([stable_unit(f"{tier}:{t:02d}:{j:03d}") for j in range(N_TASKS)]))
    tenth = int(ranks[i]) * 10 // N_TASKS
    return "test" if tenth == fold else "dev" if tenth == (fold + 1) % 10 else "train"


def folds(tier: str, fold: int, setting: str, keys) -> dict[str, list[str]]:
    """The task keys of each split (``train``, ``dev``, ``test``) of one fold, in the order given."""
    out = {"train": [], "dev": [], "test": []}
    for k in keys:
        out[task_split(tier, k, fold, setting)].append(k)
    return out
