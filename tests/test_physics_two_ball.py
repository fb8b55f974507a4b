"""Two-ball tasks need both balls (Physics2B-v1): the conjunctive goal relation, a single-ball grid search that
finds nothing, and stored two-ball solutions that solve; the search does find a ball where one suffices (the
deprecated Physics2B-v0 world). Tolerances: outcomes are exact (deterministic engine); stored solutions match the
regenerated ones to 1e-12."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from causalplay.envs.physics_sim import BALL, BAR, GOAL, OTHER, TARGET, W, simulate
from causalplay.envs.physics_templates import (
    HALF,
    TIERS,
    get_task,
    make_task,
    single_ball_grid,
    single_ball_search,
    to_balls,
)

from causalplay.bench.physics import tier_of

STORED = json.loads((Path(__file__).parent / "data" / "physics_2b_v1_solutions.json").read_text())


def _resting(x, role_below):
    """A pad at ``x`` (``role_below``) with a green ball resting on it."""
    return [[BAR, x, 0.6, 1.5, 0.2, 0.0, 0, role_below], [BALL, x, 0.7 + 0.3, 0.3, 0.0, 0.0, 1, GOAL]]


def test_goal_relation_needs_every_green_body_on_a_target():
    floor = [[BAR, W / 2, 0.25, W, 0.5, 0.0, 0, OTHER]]
    both = np.array(floor + _resting(2.5, TARGET) + _resting(7.5, TARGET), dtype=float)
    one = np.array(floor + _resting(2.5, TARGET) + _resting(7.5, OTHER), dtype=float)
    single = np.array(floor + _resting(2.5, TARGET), dtype=float)
    # by hand: each green ball rests on its pad from the start, so contact holds from the first step
    assert simulate(both).solved and simulate(single).solved
    assert not simulate(one).solved  # one green body never touches a target


@pytest.mark.parametrize("key", sorted(STORED))
def test_sampled_2b_v1_tasks_need_two_balls_and_the_stored_solution_solves(key):
    task = make_task("2B-v1", int(key[:2]), int(key[3:]))
    assert np.allclose(task.solution, STORED[key], rtol=0, atol=1e-12)
    balls = to_balls(np.asarray(STORED[key]))
    assert simulate(task.scene, balls).solved
    assert not simulate(task.scene).solved
    assert not simulate(task.scene, balls[:1]).solved and not simulate(task.scene, balls[1:]).solved
    # a wall of the world's height between the halves; one ball of the stored solution in each half
    assert task.scene[0][0] == BAR and task.scene[0][1] == W / 2 and task.scene[0][4] == W
    assert balls[0, 0] < W / 2 < balls[1, 0]
    hit, tried = single_ball_search(task.scene, nx=8, ny=8, nr=2)  # 128 single-ball actions
    assert hit is None and tried > 60  # most grid balls are valid placements, none solves


def test_the_search_finds_one_ball_where_one_suffices():
    """Physics2B-v0 task 24:000 (two_shelves) falls to one ball; the grid search finds one that solves."""
    task = get_task("2B", "24:000")
    hit, _ = single_ball_search(task.scene, nx=6, ny=6, nr=2)
    assert hit is not None and simulate(task.scene, to_balls(hit)).solved
    grid = single_ball_grid(6, 6, 2)
    assert grid.shape == (72, 3) and any(np.allclose(hit, g) for g in grid)
    assert np.allclose(to_balls(grid)[:, 0, 2].min(), 0.25) and np.allclose(to_balls(grid)[:, 0, 2].max(), 1.0)


def test_versions_and_ids():
    assert TIERS["2B-v1"] == 2 and 0 < HALF < 0.5
    assert tier_of("causalplay/Physics2B-v1") == "2B-v1" and tier_of("causalplay/Physics2B-v0") == "2B"
    assert tier_of("causalplay/PhysicsB-v0") == "B"
    with pytest.raises(ValueError, match="not a physics id"):
        tier_of("causalplay/Physics3B-v0")
    import causalplay.envs  # noqa: F401

    env = gymnasium.make("causalplay/Physics2B-v1", templates=(0,), n_tasks=1)
    obs, info = env.reset(seed=0)
    assert obs["objects"].shape == (16, 8) and info["key"] == "00:000"
    with pytest.warns(FutureWarning, match="Physics2B-v0 is deprecated"):
        gymnasium.make("causalplay/Physics2B-v0", templates=(0,), n_tasks=1)
