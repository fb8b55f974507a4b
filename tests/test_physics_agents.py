"""Physics agents and the evaluator: ssup's posterior against a hand grid, budget rules, determinism, executors."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from causalplay.envs.physics import PhysicsBatch
from causalplay.envs.physics_sim import BALL, BAR, GOAL, OTHER, TARGET, W, simulate
from causalplay.envs.physics_templates import PhysicsTask, make_task
from causalplay.models.physics import PhysicsPrior, log_weights

from causalplay.agents.physics import PhysicsAgent, SsupAgent, _sim, make_physics_agent
from causalplay.bench.executors import make_executor
from causalplay.bench.physics import _play, evaluate, run

SCENE = np.array([[BAR, W / 2, 0.25, W, 0.5, 0, 0, OTHER], [BAR, 9.0, 0.6, 1.0, 0.2, 0, 0, TARGET],
                  [BALL, 3.0, 0.9, 0.4, 0, 0, 1, GOAL]])
BALLS = np.array([[3.0, 4.0, 0.5]])  # falls onto the green ball and bounces
GRID = np.linspace(0.05, 0.6, 23)


def hand_log_lik(e: float, obs: np.ndarray, sd: float, eps: float) -> float:
    """log N(obs; simulated positions, sd) + log P(not solved), the simulation run directly (frames of a run that
    stopped early hold their last value, the model's convention)."""
    r = simulate(SCENE, BALLS, elasticity=e, record=10)
    pos = r.traj[:len(obs), 2:, :2]
    pos = np.concatenate([pos, np.repeat(pos[-1:], len(obs) - len(pos), 0)])
    ll = (-0.5 * ((obs - pos) / sd) ** 2 - np.log(sd * np.sqrt(2 * np.pi))).sum()
    return ll + np.log(1 - eps if not r.solved else eps)


@pytest.mark.parametrize("sd", [0.05, 0.3])
def test_posterior_over_elasticity_matches_a_hand_grid(sd):
    """Uniform prior on a grid of elasticities, other parameters known: the model's likelihood weights equal
    the grid posterior computed by hand, and with a sharp observation the mode is the true value (0.35)."""
    truth = simulate(SCENE, BALLS, elasticity=float(GRID[8]), record=10)
    obs = truth.traj[:, 2:, :2]
    prior = PhysicsPrior(obs_sd=sd)
    parts = {"friction": np.full(len(GRID), 0.5), "elasticity": GRID, "density": np.ones(len(GRID))}
    lw = log_weights(_sim(SCENE, BALLS), np.array([False, False, True, True]), parts, obs, False, prior)
    hand = np.array([hand_log_lik(e, obs, sd, prior.eps) for e in GRID])
    post, want = np.exp(lw - lw.max()), np.exp(hand - hand.max())
    np.testing.assert_allclose(post / post.sum(), want / want.sum(), atol=1e-9)
    if sd == 0.05:
        assert GRID[np.argmax(lw)] == GRID[8]


def test_ssup_update_moves_its_belief_to_the_hand_posterior():
    task = PhysicsTask("00:000", 0, SCENE, np.zeros(3))
    ag = SsupAgent("B", seed=0, particles=len(GRID), noise=0.0, hierarchical=False)
    ag.train([], "cross")
    ag.begin([task])
    ag.belief[0] = {"friction": np.full(len(GRID), 0.5), "elasticity": GRID.copy(), "density": np.ones(len(GRID))}
    action = np.array([[0.3, 0.4, (0.5 - 0.25) / 0.75]])  # BALLS in action units
    real = simulate(SCENE, BALLS, elasticity=float(GRID[8]), record=10)
    ag.observe(action, np.array([True]), np.array([False]), [real.traj])
    hand = np.array([hand_log_lik(e, real.traj[:, 2:, :2], ag.prior.obs_sd, ag.prior.eps) for e in GRID])
    w = np.exp(hand - hand.max())
    want = (w * GRID).sum() / w.sum()
    aw = np.exp(ag.logw[0] - ag.logw[0].max())
    got = (aw * ag.belief[0]["elasticity"]).sum() / aw.sum()
    assert abs(got - want) < 0.03  # resampling (with 5% jitter) moves particles a little
    assert abs(want - GRID[8]) < 0.1


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A small tier-B task cache: 12 tasks of each of three templates (the evaluator reads the same file name)."""
    path = tmp_path_factory.mktemp("physics")
    tasks = [make_task("B", t, i) for t in (0, 2, 10) for i in range(12)]
    (path / "tasks-B.pkl").write_bytes(pickle.dumps(tasks))
    return str(path)


def _strip(df):
    return df.drop(columns=["seconds", "train_seconds"])


@pytest.mark.parametrize("agent", ["rand", "mem", "mem-o", "dqn:steps=20", "dqn-o:steps=20:updates=2", "ssup"])
def test_evaluate_records_are_valid_and_reproducible(agent, cache):
    a = evaluate(0, "B", "cross", agent, seed=3, cache=cache)
    b = evaluate(0, "B", "cross", agent, seed=3, cache=cache)
    pd.testing.assert_frame_equal(_strip(a), _strip(b))
    assert len(a) > 0 and (a.attempts <= 100).all() and (a.solved_at <= a.attempts).all()
    assert ((a.solved_at == 0) == (a.attempts == 100)).all()  # unsolved means the budget ran out


class _Fixed(PhysicsAgent):
    def __init__(self, action):
        super().__init__("B")
        self.action = np.asarray(action, dtype=np.float64)

    def act(self, active):
        return np.tile(self.action, (len(self.tasks), 1))


def test_budget_counts_valid_attempts_only():
    task = make_task("B", 0, 0)
    batch = PhysicsBatch([task], "B", budget=7)
    _play(_Fixed([0.0, 0.0, 1.0]), batch, max_invalid=25)  # out of the world: never counts
    assert batch.record()["attempts"][0] == 0 and batch.record()["invalid"][0] == 25
    batch = PhysicsBatch([task], "B", budget=7)
    _play(_Fixed([0.03, 0.95, 0.0]), batch, max_invalid=25)  # a small ball in the top-left corner: harmless
    assert batch.record()["attempts"][0] == 7 and batch.record()["solved_at"][0] == 0


def test_run_over_a_process_pool_matches_serial(cache):
    kw = dict(tiers=("B",), settings=("within",), agents=("rand", "mem"), fold_ids=(0, 1), cache=cache)
    serial = run(**kw)
    with make_executor("process", workers=2) as ex:
        pooled = run(executor=ex, **kw)
    pd.testing.assert_frame_equal(_strip(serial), _strip(pooled))


def test_agent_specs_are_checked():
    assert make_physics_agent("ssup:n_cand=4", "B").n_cand == 4
    with pytest.raises(ValueError, match="unknown physics agent"):
        make_physics_agent("nope", "B")
    with pytest.raises(ValueError, match="key=value"):
        make_physics_agent("ssup:n_cand", "B")
