"""The compiled rollout loop (envs/physics_rollout.c) against the Python loop of envs/physics_sim.py, one by one.

The Python loop is the reference: both make the same Chipmunk calls in the same order, so every outcome, step count
and recorded trajectory must be equal to the bit, with and without noise, recording and the early stop, on the
tiers' tasks and on scenes built to reach each way a rollout ends (held, at rest, a body leaving the world, the
horizon, the hold no longer possible).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from causalplay.envs import physics_sim as ps
from causalplay.envs.physics_sim import BALL, BAR, GOAL, OTHER, TARGET, W, simulate
from causalplay.envs.physics_templates import make_task, to_balls

pytestmark = pytest.mark.skipif(ps.rollout_engine() != "c", reason="causalplay.envs.physics_rollout is not built here")


def same(a: ps.Rollout, b: ps.Rollout) -> bool:
    return (a.valid, a.solved, a.steps) == (b.valid, b.solved, b.steps) and (
        (a.traj is None and b.traj is None) or np.array_equal(a.traj, b.traj))


def both(scene, balls=None, **kw) -> tuple[ps.Rollout, ps.Rollout]:
    return simulate(scene, balls, engine="c", **kw), simulate(scene, balls, engine="python", **kw)


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_the_compiled_loop_is_built_where_a_compiler_is():
    assert ps.rollout_engine() == "c"


def test_each_way_a_rollout_ends_is_the_same_in_c():
    """Hand-built scenes (world of side W, floor at y = 0.5), each reaching one exit of the loop; the Python
    loop's result for each is checked by hand first, so the comparison is not between two wrong loops."""
    floor = [BAR, W / 2, 0.25, W, 0.5, 0.0, 0, TARGET]
    ball = [BALL, 5.0, 3.0, 0.5, 0, 0, 1, GOAL]
    # held: lands on the target at ~0.68 s and holds 0.5 s -> stops at ~1.18 s, well before the horizon
    c, p = both(np.array([floor, ball]), record=1)
    assert p.solved and p.steps < 80 and same(c, p)
    # at rest on black (no target anywhere touched): every body sleeps -> stops before the horizon, unsolved
    black = [BAR, W / 2, 0.25, W, 0.5, 0.0, 0, OTHER]
    c, p = both(np.array([black, ball, [BAR, 9.0, 5.0, 0.5, 0.5, 0.0, 0, TARGET]]), stop_decided=False)
    assert not p.solved and p.steps < 180 and same(c, p)
    # a body leaves the world: no floor under a second ball (the pad spans x 3..7), which falls below y = -1 at
    # ~0.9 s and is removed, before the first ball's hold completes
    pad = [BAR, 5.0, 0.25, 4.0, 0.5, 0.0, 0, TARGET]
    c, p = both(np.array([pad, ball, [BALL, 8.5, 3.0, 0.3, 0, 0, 1, OTHER]]), record=3)
    gone = p.traj[:, 2, 1] < -1.0
    assert p.solved and gone.any() and same(c, p)
    # the hold no longer possible (early stop) vs run to the horizon: a slab the ball glances off
    slab = [BAR, 5.3, 2.0, 0.6, 0.2, 1.2, 0, TARGET]
    for decided in (True, False):
        c, p = both(np.array([[BAR, W / 2, 0.25, W, 0.5, 0.0, 0, OTHER], ball, slab]), stop_decided=decided)
        assert not p.solved and same(c, p)
    # the horizon: at 0.6 s the ball is still falling (it lands at ~0.68 s)
    c, p = both(np.array([floor, ball]), horizon=0.6, stop_decided=False, record=6)
    assert not p.solved and p.steps == 36 and len(p.traj) == 7 and same(c, p)
    # at rest before a horizon too short for the hold: asleep by step 60 with 0.1 s left, the hold not complete
    c, p = both(np.array([floor, ball]), horizon=1.1, stop_decided=False)
    assert not p.solved and p.steps == 60 and same(c, p)


@pytest.mark.parametrize("tier,templates", [("B-v2", (0, 10, 20)), ("2B-v2", (0, 7, 10))])
def test_task_rollouts_are_the_same_in_c(tier, templates):
    """Each task's stored solution, its empty scene and 12 random valid actions, under noise 0, 0.03 and 0.2 (the
    noise normals drawn in one block in C, in blocks of 64 in Python), recording every 1 or 5 steps or not, with
    and without the early stop, uncertain physics (friction, per-body densities)."""
    rng = np.random.default_rng(0)
    n = solved = 0
    for t in templates:
        task = make_task(tier, t, 0)
        m = len(to_balls(task.solution))
        acts = [to_balls(task.solution), None]
        while len(acts) < 14:
            b = np.column_stack([rng.uniform(0.5, 9.5, m), rng.uniform(0.5, 9.5, m), rng.uniform(0.2, 1.0, m)])
            if not ps.invalid(task.scene, b[None])[0]:
                acts.append(b)
        for k, balls in enumerate(acts):
            n_bodies = len(task.scene) + (0 if balls is None else m)
            kw = {"noise": (0.0, 0.03, 0.2)[k % 3], "seed": k, "record": (0, 1, 5, 0)[k % 4],
                  "stop_decided": k % 5 != 0, "friction": 0.3 + 0.1 * (k % 3),
                  "density": rng.uniform(0.5, 2.0, n_bodies) if k % 2 else 1.0}
            c, p = both(task.scene, balls, **kw)
            assert same(c, p), (tier, t, k, kw)
            n, solved = n + 1, solved + p.solved
    assert n == 42 and solved >= 3  # the stored solutions solve at least under the smaller noises


def test_engine_is_checked_and_the_python_loop_is_the_fallback(monkeypatch):
    scene = np.array([[BAR, W / 2, 0.25, W, 0.5, 0.0, 0, TARGET], [BALL, 5.0, 3.0, 0.5, 0, 0, 1, GOAL]])
    with pytest.raises(ValueError, match="engine must be 'c', 'python' or None.*'fortran'"):
        simulate(scene, engine="fortran")
    ref = simulate(scene, engine="python", record=2, noise=0.1, seed=3)
    monkeypatch.setattr(ps, "_compiled", lambda: None)  # as where the module was not built
    assert ps.rollout_engine() == "python"
    assert same(simulate(scene, record=2, noise=0.1, seed=3), ref)
    with pytest.raises(RuntimeError, match="engine='c' asked for, but causalplay.envs.physics_rollout was not built"):
        simulate(scene, engine="c")
