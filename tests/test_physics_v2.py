"""World version 2 of the physics puzzles (PhysicsB-v2, Physics2B-v2): the ids and their deprecated predecessors,
stored solutions that solve, a 2B-v2 task that no single ball of a grid solves, version 0's tasks unchanged
(stored values written by the code before version 2 existed), and version 2's generators differ only where a
template was re-tuned. Tolerances: outcomes are exact (deterministic engine); stored actions and scenes match the
regenerated ones to 1e-12."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from causalplay.envs import PHYSICS_IDS
from causalplay.envs.physics import TIER_BODIES, TIER_OF_ID
from causalplay.envs.physics_sim import W, simulate
from causalplay.envs.physics_templates import (
    PAIRED,
    TEMPLATE_VERSION,
    TEMPLATES,
    TIERS,
    draw_scene,
    make_task,
    single_ball_search,
    to_balls,
)

from causalplay.bench.physics import tier_of

DATA = Path(__file__).parent / "data"
V2 = json.loads((DATA / "physics_v2_solutions.json").read_text())
V0 = json.loads((DATA / "physics_v0_tasks.json").read_text())


def test_the_new_ids_play_the_version_2_tiers_and_the_old_ones_warn_naming_them():
    import causalplay.envs  # noqa: F401

    assert PHYSICS_IDS[:2] == ("causalplay/PhysicsB-v2", "causalplay/Physics2B-v2")
    assert tier_of("causalplay/PhysicsB-v2") == "B-v2" and tier_of("causalplay/Physics2B-v2") == "2B-v2"
    assert set(TIER_OF_ID.values()) == set(TIERS) == set(TEMPLATE_VERSION) == set(TIER_BODIES)
    assert TIERS["B-v2"] == 1 and TIERS["2B-v2"] == 2 and set(PAIRED) == {"2B-v1", "2B-v2"}
    assert TEMPLATE_VERSION == {"B": 0, "2B-v1": 0, "2B": 0, "B-v2": 2, "2B-v2": 2}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the current ids do not warn
        env = gymnasium.make("causalplay/Physics2B-v2", templates=(0,), n_tasks=1)
        gymnasium.make("causalplay/PhysicsB-v2", templates=(0,), n_tasks=1)
    obs, info = env.reset(seed=0)
    assert obs["objects"].shape == (16, 8) and env.action_space.shape == (6,) and info["key"] == "00:000"
    for old, new in (("PhysicsB-v0", "PhysicsB-v2"), ("Physics2B-v1", "Physics2B-v2"),
                     ("Physics2B-v0", "Physics2B-v2")):
        with pytest.warns(FutureWarning, match=f"causalplay/{old} is deprecated: .*; use causalplay/{new}"):
            gymnasium.make(f"causalplay/{old}", templates=(0,), n_tasks=1)


@pytest.mark.parametrize("tier,key", [(t, k) for t in ("B-v2", "2B-v2") for k in sorted(V2[t])])
def test_version_2_tasks_are_solved_by_their_stored_solution_and_not_without_an_action(tier, key):
    task = make_task(tier, int(key[:2]), int(key[3:]))
    assert np.allclose(task.solution, V2[tier][key], rtol=0, atol=1e-12)
    assert simulate(task.scene, to_balls(task.solution)).solved
    assert not simulate(task.scene).solved
    assert len(task.scene) <= TIER_BODIES[tier]


def test_a_2b_v2_task_needs_both_balls():
    """Task 10:000 (domino, re-tuned): each stored ball alone fails and no ball of a 128-action grid solves it."""
    task = make_task("2B-v2", 10, 0)
    balls = to_balls(task.solution)
    assert simulate(task.scene, balls).solved
    assert not simulate(task.scene, balls[:1]).solved and not simulate(task.scene, balls[1:]).solved
    assert balls[0, 0] < W / 2 < balls[1, 0]  # one ball in each half of the wall
    hit, tried = single_ball_search(task.scene, nx=8, ny=8, nr=2)
    assert hit is None and tried > 60


@pytest.mark.parametrize("tier,key", [(t, k) for t in V0 for k in sorted(V0[t])])
def test_version_0_tasks_are_unchanged(tier, key):
    """Stored by the generator as it was before version 2 (scene and stored solution)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # make_task itself does not warn; only the deprecated ids do
        task = make_task(tier, int(key[:2]), int(key[3:]))
    assert np.allclose(task.scene, V0[tier][key]["scene"], rtol=0, atol=1e-12)
    assert np.allclose(task.solution, V0[tier][key]["solution"], rtol=0, atol=1e-12)


def test_version_2_redraws_only_the_retuned_templates():
    def scenes(version):
        return [draw_scene(t, np.random.default_rng(7), version) for t in range(len(TEMPLATES))]

    v0, v2 = scenes(0), scenes(2)
    same = [t for t in range(len(TEMPLATES)) if v0[t].shape == v2[t].shape and np.array_equal(v0[t], v2[t])]
    assert same == [1, 5, 7, 8, 9, 12, 14, 16, 18, 22]
    # by hand: domino v2 adds a static roof over the dominoes; two_sticks v2's target is static (purple)
    assert len(v2[10]) == len(v0[10]) + 1 and v2[20][2, 6] == 0 and v0[20][2, 6] == 1
    with pytest.raises(ValueError, match="template version must be 0 or 2, got 1"):
        draw_scene(0, np.random.default_rng(0), 1)
    with pytest.raises(ValueError, match="template must lie in"):
        draw_scene(25, np.random.default_rng(0), 2)
