"""The physics world: goal relations, invalid actions, templates, folds, AUCCESS, the Task and the gymnasium ids."""

from __future__ import annotations

import math

import gymnasium
import numpy as np
import pandas as pd
import pytest
import torch
from causalplay.envs import PHYSICS_IDS, make_batch
from causalplay.envs.physics import PhysicsBatch
from causalplay.envs.physics_sim import BALL, BAR, GOAL, OTHER, TARGET, W, invalid, render, simulate
from causalplay.envs.physics_templates import (
    ACTIONS,
    N_TASKS,
    TEMPLATES,
    TIERS,
    action_set,
    folds,
    make_task,
    task_split,
    to_balls,
)
from gymnasium.utils.env_checker import check_env

from causalplay.bench.physics import PhysicsFamily


def floor(role=OTHER):
    return [BAR, W / 2, 0.25, W, 0.5, 0.0, 0, role]


def test_touching_held_is_solved_and_a_glancing_touch_is_not():
    ball = [BALL, 5.0, 3.0, 0.5, 0, 0, 1, GOAL]
    assert simulate(np.array([floor(TARGET), ball])).solved  # lands at 0.68 s and rests on the target
    # the same fall against a 0.6-s horizon: contact starts at ~0.68 s, so it is never held
    assert not simulate(np.array([floor(TARGET), ball]), horizon=0.6).solved
    # contact begins at 0.68 s: a 1.1-s horizon leaves 0.42 s < HOLD = 0.5 s; 1.25 s leaves 0.57 s
    assert not simulate(np.array([floor(TARGET), ball]), horizon=1.1).solved
    assert simulate(np.array([floor(TARGET), ball]), horizon=1.25).solved
    # target elsewhere: the ball rests on a black floor, never touching the purple pad
    assert not simulate(np.array([floor(), ball, [BAR, 8.5, 0.6, 1.0, 0.2, 0, 0, TARGET]])).solved
    # a steep purple slab the ball glances off: contact shorter than HOLD
    slab = [BAR, 5.3, 2.0, 0.6, 0.2, 1.2, 0, TARGET]
    r = simulate(np.array([floor(), ball, slab]), record=1)
    assert r.valid and not r.solved and abs(r.traj[-1, 1, 0] - 5.0) > 0.5  # it did hit and roll away


def test_two_goal_bodies_must_hold_together():
    """The two-ball tiers' rule: every green body touches a target at the same time for HOLD seconds. Two copies
    of the fall above, one per half of a walled world; each lands at ~0.68 s."""
    wall = [BAR, 5.0, 5.0, 0.2, W, 0.0, 0, OTHER]
    left, right = [BALL, 2.5, 3.0, 0.5, 0, 0, 1, GOAL], [BALL, 7.5, 3.0, 0.5, 0, 0, 1, GOAL]
    halves = [[BAR, 2.5, 0.25, 5.0, 0.5, 0.0, 0, TARGET], [BAR, 7.5, 0.25, 5.0, 0.5, 0.0, 0, TARGET]]
    both = np.array([wall, *halves, left, right])
    assert simulate(both).solved
    assert not simulate(both, horizon=1.1).solved and simulate(both, horizon=1.25).solved  # as with one body
    black = np.array([wall, halves[0], [BAR, 7.5, 0.25, 5.0, 0.5, 0.0, 0, OTHER], left, right])
    assert not simulate(black).solved and simulate(black[[0, 1, 2, 3]]).solved  # the right body never touches
    # the right body glances off a purple slab (contact begins and ends) and rests on black while the left one
    # holds throughout: never both at once for 0.5 s
    slab = [BAR, 7.8, 2.0, 0.6, 0.2, 1.2, 0, TARGET]
    r = simulate(np.vstack([black, [slab]]), record=1)
    assert r.valid and not r.solved and r.traj[-1, 4, 1] < 1.0 and abs(r.traj[-1, 4, 0] - 7.5) > 0.5


def test_body_geometry_is_chipmunks_world_to_local_of_the_parts():
    """Each body's shapes are built from its parts' world corners mapped by pymunk's ``world_to_local`` on a body
    at the row's pose (computed once per distinct row): here checked against pymunk directly."""
    import pymunk
    from causalplay.envs.physics_sim import JAR, _local_shapes, parts

    for row in ([BAR, 4.0, 3.0, 2.0, 0.3, 0.7, 0, OTHER], [JAR, 6.0, 2.0, 1.5, 1.2, -0.4, 1, OTHER],
                [BALL, 1.0, 1.0, 0.4, 0, 0, 1, GOAL]):
        row = np.asarray(row, dtype=np.float64)
        body = pymunk.Body(body_type=pymunk.Body.DYNAMIC if row[6] else pymunk.Body.STATIC)
        body.position, body.angle = (row[1], row[2]), row[5]
        want = []
        for _, kind, cx, cy, w, h, ang in parts(row[None]):
            if kind == 0:
                want.append((0, w))
                continue
            c, s = np.cos(ang), np.sin(ang)  # as parts() and the simulator compute them
            corners = [(cx + c * u - s * v, cy + s * u + c * v) for u, v in
                       ((-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2))]
            want.append((1, tuple(tuple(body.world_to_local(p)) for p in corners)))
        assert _local_shapes(tuple(row.tolist())) == tuple(want)
        assert len(want) == {BAR: 1, JAR: 3, BALL: 1}[int(row[0])]


def test_dynamic_target_and_action_ball():
    """A ball dropped by the action knocks a green ball off a shelf onto the purple floor."""
    scene = np.array([floor(TARGET), [BAR, 4.0, 3.0, 2.0, 0.3, 0, 0, OTHER], [BALL, 4.6, 3.55, 0.4, 0, 0, 1, GOAL]])
    assert not simulate(scene).solved
    assert simulate(scene, [[4.0, 6.0, 0.5]]).solved  # hits the green ball on its left: it rolls off the shelf
    assert not simulate(scene, [[1.0, 8.0, 0.3]]).solved  # far away: nothing happens to the green ball


def test_invalid_actions_are_rejected():
    scene = np.array([floor(), [BAR, 5.0, 3.0, 2.0, 1.0, 0.0, 0, OTHER], [BALL, 2.0, 1.0, 0.5, 0, 0, 1, GOAL]])
    # by hand: the box spans x 4..6, y 2.5..3.5; a ball at (6.3, 3.0) r=0.25 is 0.05 clear; r=0.35 overlaps
    balls = np.array([[[6.3, 3.0, 0.25]], [[6.3, 3.0, 0.35]], [[2.0, 2.0, 0.49]], [[2.0, 2.0, 0.51]],
                      [[0.2, 5.0, 0.25]], [[0.2, 5.0, 0.19]], [[5.0, 9.8, 0.25]]])
    assert invalid(scene, balls).tolist() == [False, True, False, True, True, False, True]
    # corner: distance from (6.3, 3.8) to the corner (6, 3.5) is sqrt(0.18) = 0.424
    assert invalid(scene, np.array([[[6.3, 3.8, 0.43]], [[6.3, 3.8, 0.42]]])).tolist() == [True, False]
    assert not simulate(scene, [[6.3, 3.0, 0.35]]).valid
    # two balls of one action may not overlap each other
    assert invalid(scene, np.array([[[8, 6, 0.5], [8.9, 6, 0.5]], [[8, 6, 0.5], [9.1, 6, 0.3]]])).tolist() == [True,
                                                                                                            False]
    batch = PhysicsBatch([make_task("B", 0, 0)], "B", budget=3)
    batch.reset()
    inside = np.array([[0.0, 0.0, 1.0]])  # a radius-1 ball at the corner leaves the world
    batch.step(inside)
    assert batch.attempts[0] == 0 and batch.invalid[0] == 1 and not batch.done[0]


def test_render_uses_phyre_colours():
    scene = np.array([floor(TARGET), [BALL, 5.0, 5.0, 1.0, 0, 0, 1, GOAL], [BAR, 2, 5, 1, 1, 0, 1, OTHER]])
    img = render(scene, balls=[[8.0, 8.0, 0.5]], res=100)
    assert img.shape == (100, 100)
    assert img[50, 50] == 2 and img[99, 10] == 4 and img[50, 20] == 5 and img[20, 80] == 1 and img[5, 5] == 0
    # disc area in pixels ~ pi r^2 (10 px per unit)
    assert abs((img == 2).sum() - math.pi * 100) < 0.05 * math.pi * 100


@pytest.mark.parametrize("tier", ["B-v2", "2B-v2", "B", "2B-v1", "2B"])
def test_every_template_is_solvable_and_deterministic(tier):
    """Task 0 of every template: the stored solution solves it, the empty scene does not, regeneration matches.
    B-v2 regenerates three templates only (its task 0 of tilted_stopper alone takes 10 s); test_physics_v2.py checks
    version 2's tasks against solutions stored by another process."""
    m = TIERS[tier]
    for t in range(len(TEMPLATES)) if m == 1 else (0, 7, 10):
        task = make_task(tier, t, 0)
        assert task.solution.shape == (3 * m,)
        assert simulate(task.scene, to_balls(task.solution)).solved
        assert not simulate(task.scene).solved
        if tier == "B-v2" and t not in (0, 10, 20):
            continue
        again = make_task(tier, t, 0)
        assert np.array_equal(task.scene, again.scene) and np.array_equal(task.solution, again.solution)
    assert len(TEMPLATES) >= 25


def test_folds_are_deterministic_and_partition_the_tasks():
    keys = [f"{t:02d}:{i:03d}" for t in range(len(TEMPLATES)) for i in range(N_TASKS)]
    tests = []
    for fold in range(10):
        f = folds("B", fold, "within", keys)
        assert sorted(f["train"] + f["dev"] + f["test"]) == sorted(keys)
        # each template contributes exactly a tenth of its tasks to test and to dev
        assert pd.Series([k[:2] for k in f["test"]]).value_counts().eq(N_TASKS // 10).all()
        tests += f["test"]
        assert f == folds("B", fold, "within", keys)
    assert sorted(tests) == sorted(keys)  # every task is tested in exactly one fold
    cross = [{k[:2] for k in folds("B", fold, "cross", keys)["test"]} for fold in range(10)]
    assert sorted(t for c in cross for t in c) == [f"{t:02d}" for t in range(len(TEMPLATES))]
    f0 = folds("B", 0, "cross", keys)
    assert not {k[:2] for k in f0["test"]} & {k[:2] for k in f0["train"] + f0["dev"]}
    assert folds("2B", 0, "within", keys)["test"] != folds("B", 0, "within", keys)["test"]  # tiers hash apart
    assert task_split("B", "03:017", 4, "within") == task_split("B", "03:017", 4, "within")
    with pytest.raises(ValueError, match="fold"):
        task_split("B", "03:017", 10, "within")
    assert np.array_equal(action_set("2B"), action_set("2B")) and action_set("2B").shape == (ACTIONS, 6)


def test_auccess_of_a_hand_written_success_curve():
    # fold 0: solved at attempts 1 and 3, one at 100, one never: s_1 = s_2 = 1/4, s_3..s_99 = 1/2, s_100 = 3/4
    want = (0.25 * math.log(3) + 0.5 * (math.log(100) - math.log(3)) + 0.75 * (math.log(101) - math.log(100)))
    want = 100 * want / math.log(101)
    # fold 1: both solved at attempt 1: AUCCESS 100, success@10 100
    rec = pd.DataFrame({"env": "causalplay/PhysicsB-v0", "setting": "within", "agent": "x", "seed": 0,
                        "fold": [0, 0, 0, 0, 1, 1], "solved_at": [1, 3, 0, 100, 1, 1]})
    fam = PhysicsFamily()
    rows = fam.summarise(rec)
    assert rows[0]["auccess"] == pytest.approx(want, abs=1e-9) and rows[0]["success10"] == pytest.approx(50.0)
    assert rows[1]["auccess"] == pytest.approx(100.0) and rows[1]["success10"] == pytest.approx(100.0)
    tab = fam.table(rows).iloc[0]  # mean and SD (n - 1) over the two folds
    assert tab.auccess == pytest.approx((want + 100) / 2) and tab.auccess_sd == pytest.approx((100 - want) / 2 ** 0.5)
    assert tab.success10 == pytest.approx(75.0) and tab.folds == 2 and tab.episodes == 6


def test_batch_task_budget_and_record():
    task = make_task("B", 0, 1)
    batch = PhysicsBatch([task, task], "B", budget=2, record=10)
    obs = batch.reset()
    n = len(task.scene)
    assert obs["scene"].shape == (2, 10, 8) and torch.equal(obs["scene"][0, :n], torch.from_numpy(task.scene))
    assert obs["n_bodies"].tolist() == [n, n] and not obs["scene"][:, n:].any() and obs["traj"] == [None, None]
    far = np.array([[0.05, 0.9, 0.0], task.solution])
    obs, rew, term, trunc = batch.step(far)
    assert rew.tolist() == [0.0, 1.0] and term.tolist() == [False, True]
    assert obs["valid"].tolist() == [True, True] and obs["solved"].tolist() == [False, True]
    assert obs["traj"][1].shape[1:] == (n + 1, 3) and obs["attempts"].tolist() == [1, 1]  # the ball is body n
    obs, rew, term, trunc = batch.step(far)
    assert trunc.tolist() == [True, False] and rew.tolist() == [0.0, 0.0]  # row 1 had ended: ignored
    assert obs["valid"].tolist() == [True, False] and obs["traj"][1] is None
    rec = batch.record()
    assert rec["solved_at"].tolist() == [0, 1] and rec["attempts"].tolist() == [2, 1]
    with pytest.raises(ValueError, match="action"):
        batch.step(np.array([[2.0, 0.5, 0.5]] * 2))


def test_a_sequence_moves_on_after_each_task_and_shows_how_the_last_one_ended():
    t0, t1 = make_task("B", 0, 1), make_task("B", 2, 0)
    seq = PhysicsBatch([t0, t1], "B", budget=3, max_invalid=2, sequential=True)
    obs = seq.reset()
    assert seq.B == 1 and obs["task"].tolist() == [0] and obs["template"].tolist() == [0]
    obs, rew, term, trunc = seq.step(t0.solution[None])  # solves task 0: the row moves on, not done
    assert obs["task"].tolist() == [1] and obs["solved"].tolist() == [True] and obs["template"].tolist() == [2]
    assert rew.tolist() == [1.0] and not seq.done[0] and obs["attempts"].tolist() == [0]
    corner = np.array([[0.0, 0.0, 1.0]])  # out of the world: invalid; two in a row give task 1 up
    seq.step(corner)
    obs, rew, term, trunc = seq.step(corner)
    assert seq.done[0] and trunc.tolist() == [True] and obs["valid"].tolist() == [False]
    rec = seq.record()
    assert rec["solved_at"].tolist() == [1, 0] and rec["attempts"].tolist() == [1, 0]
    assert rec["invalid"].tolist() == [0, 2]


@pytest.mark.parametrize("env_id", PHYSICS_IDS)
def test_gym_ids_check_env_and_seeded_rollouts_match(env_id):
    kw = {"templates": (0, 2), "n_tasks": 2}
    env = gymnasium.make(env_id, **kw)
    check_env(env.unwrapped, skip_render_check=True)
    a, b = gymnasium.make(env_id, **kw), gymnasium.make(env_id, **kw)
    for seed in (0, 1, 2):
        oa, ia = a.reset(seed=seed)
        ob, ib = b.reset(seed=seed)
        assert ia == ib and all(np.array_equal(oa[k], ob[k]) for k in oa)
        act = a.action_space.sample()
        ra, rb = a.step(act), b.step(act)
        assert ra[1:3] == rb[1:3] and ra[4] == rb[4]
    obs, _ = a.reset(seed=0)
    assert obs["image"].shape == (256, 256) and obs["objects"].shape[1] == 8
    with pytest.raises(ValueError, match="action"):
        a.step(np.full(a.action_space.shape, 1.5, dtype=np.float32))
    # make_batch draws the tasks as the env draws them, from one seeded generator
    b1, b2 = (make_batch(env_id, 3, seed=5, **kw) for _ in range(2))
    assert [t.key for t in b1.tasks] == [t.key for t in b2.tasks] and b1.action_size == a.action_space.shape[0]
    assert {t.template for t in b1.tasks} <= {0, 2} and {int(t.key[3:]) for t in b1.tasks} <= {0, 1}
