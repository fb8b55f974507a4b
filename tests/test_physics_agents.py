"""Physics agents on the one Agent protocol and the physics family on the one runner: ssup's posterior against a
hand grid, budget rules, determinism (DQN's initial weights included), resume, executors, direct play."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
import torch
from causalplay.envs.physics import PhysicsBatch
from causalplay.envs.physics_sim import BALL, BAR, GOAL, OTHER, TARGET, W, simulate
from causalplay.envs.physics_templates import PhysicsTask, get_task, make_task
from causalplay.models.physics import PhysicsPrior, log_weights
from physics_tasks import task_cache

from causalplay.agents import make_agent
from causalplay.agents.physics import PhysicsAgent, SsupAgent, _sim
from causalplay.agents.physics_dqn import train_dqn
from causalplay.bench.physics import PhysicsFamily, fold_tasks
from causalplay.bench.play import play
from causalplay.bench.runner import run_benchmark

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
    """The trajectory in the observation after a failed attempt reweights ssup's particles as the hand grid says."""
    batch = PhysicsBatch([PhysicsTask("00:000", 0, SCENE, np.zeros(3))], "B", record=10)
    ag = SsupAgent(seed=0, particles=len(GRID), noise=0.0, hierarchical=False)
    ag.train("B", [], "cross")
    ag.reset(batch.info(), batch.reset())
    ag.belief[0] = {"friction": np.full(len(GRID), 0.5), "elasticity": GRID.copy(), "density": np.ones(len(GRID))}
    action = np.array([[0.3, 0.4, (0.5 - 0.25) / 0.75]])  # BALLS in action units
    real = simulate(SCENE, BALLS, elasticity=float(GRID[8]), record=10)  # a world whose elasticity is GRID[8]
    obs = {**batch.obs(), "valid": torch.tensor([True]), "solved": torch.tensor([False]), "traj": [real.traj]}
    ag.observe(action, obs)
    hand = np.array([hand_log_lik(e, real.traj[:, 2:, :2], ag.prior.obs_sd, ag.prior.eps) for e in GRID])
    w = np.exp(hand - hand.max())
    want = (w * GRID).sum() / w.sum()
    aw = np.exp(ag.logw[0] - ag.logw[0].max())
    got = (aw * ag.belief[0]["elasticity"]).sum() / aw.sum()
    assert abs(got - want) < 0.03  # resampling (with 5% jitter) moves particles a little
    assert abs(want - GRID[8]) < 0.1


ENV, TIER = "causalplay/PhysicsB-v2", "B-v2"
UNIVERSE = {"templates": [0, 2, 10], "n_tasks": 12}  # 36 tasks; cross fold 0 tests 12, within fold 0 tests 4


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A task cache holding the 36 tasks of UNIVERSE (generated once for the module)."""
    return task_cache(tmp_path_factory, TIER, UNIVERSE, "physics")


def _strip(df):
    return df.drop(columns=["seconds", "train_seconds"]).reset_index(drop=True)


@pytest.mark.parametrize("agent", ["random", "mem", "mem-o", "dqn:steps=20", "dqn-o:steps=20:updates=2", "ssup"])
def test_family_records_are_valid_and_reproducible(agent, cache):
    fam, kw = PhysicsFamily(), {"fold": 0, "setting": "cross", "cache": cache, **UNIVERSE}
    n = len(fold_tasks(TIER, 0, "cross", **UNIVERSE)[1])
    a, b = (fam.episodes(ENV, agent, n, seed=3, env_kwargs=kw) for _ in range(2))
    pd.testing.assert_frame_equal(_strip(a), _strip(b))
    assert len(a) == n == 12 and (a.attempts <= 100).all() and (a.solved_at <= a.attempts).all()
    assert ((a.solved_at == 0) == (a.attempts == 100)).all()  # unsolved means the budget ran out


def test_dqn_weights_depend_on_its_seed_only(cache, tmp_path):
    """Two trainings with the same seed under different states of the caller's torch generator give the same
    network (its initial weights come from ``seed``), and leave that generator as they found it."""
    keys, nets = fold_tasks(TIER, 0, "cross", **UNIVERSE)[0], []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)
        state = torch.random.get_rng_state()
        nets.append(train_dqn(TIER, keys, tmp_path / str(global_seed), seed=7, steps=3, cache=cache).state_dict())
        assert torch.equal(torch.random.get_rng_state(), state)
    assert nets[0].keys() == nets[1].keys() and all(torch.equal(nets[0][k], nets[1][k]) for k in nets[0])


class _Fixed(PhysicsAgent):
    def __init__(self, action):
        super().__init__()
        self.action = np.asarray(action, dtype=np.float64)

    def choose(self, obs, active):
        return np.tile(self.action, (self.B, 1))


def test_budget_counts_valid_attempts_only():
    task = make_task(TIER, 0, 0)
    batch = PhysicsBatch([task], TIER, budget=7, max_invalid=25)
    rec = play(batch, _Fixed([0.0, 0.0, 1.0]))  # out of the world: never counts; given up after 25 in a row
    assert rec["attempts"][0] == 0 and rec["invalid"][0] == 25
    rec = play(PhysicsBatch([task], TIER, budget=7), _Fixed([0.03, 0.95, 0.0]))  # a small ball top left: harmless
    assert rec["attempts"][0] == 7 and rec["solved_at"][0] == 0


def test_runner_resumes_matches_direct_play_and_a_process_pool(cache, tmp_path):
    """Two folds through run_benchmark (serial): a rerun reuses every shard and recomputes a damaged one; the
    records equal a direct play() of the same tasks by the same agents; a process pool (its own cache of
    networks, so DQN trains in other processes) gives the same records."""
    variants = [v for v in PhysicsFamily().variants(ENV) if dict(v)["fold"] in (0, 1)]
    agents, logs = ["random", "mem-o", "dqn:steps=5"], []

    def run(out, executor, kw):
        return run_benchmark([ENV], agents, 2, [0], tmp_path / out, executor=executor, progress=False,
                             workers=2 if executor == "process" else None, env_kwargs=kw, variants=variants,
                             log=logs.append)

    kw = {"cache": cache, **UNIVERSE}
    a = run("a", "serial", kw)
    assert len(a) == len(agents) * 4 * 2 and set(a.fold) == {0, 1} and set(a.setting) == {"within", "cross"}
    assert not logs
    shard = sorted((tmp_path / "a" / "shards").glob("*random*.csv"))[0]
    shard.write_bytes(shard.read_bytes().replace(b",", b";", 1))  # damaged: recomputed, the rest reused
    pd.testing.assert_frame_equal(_strip(a), _strip(run("a", "serial", kw)))
    assert len(logs) == 1 and shard.name in logs[0]
    for agent in agents:  # fold 1, cross-template, by hand: train on train + dev, then play the 2 test tasks
        train, test = fold_tasks(TIER, 1, "cross", **UNIVERSE)
        keys = sorted(test[:2])
        ag = make_agent(agent, seed=0, family="physics")
        ag.train(TIER, train, "cross", cache)
        rec = play(PhysicsBatch([get_task(TIER, k, cache) for k in keys], TIER, sequential=ag.online), ag)
        got = a[(a.fold == 1) & (a.setting == "cross") & (a.agent == agent)].set_index("key").loc[keys]
        for col in ("solved_at", "attempts", "invalid"):
            assert got[col].tolist() == rec[col].tolist(), (agent, col)
    own = tmp_path / "cache"
    shutil.copytree(cache, own, ignore=shutil.ignore_patterns("dqn"))  # the networks are trained anew
    pd.testing.assert_frame_equal(_strip(a), _strip(run("p", "process", {**kw, "cache": str(own)})))


def test_dev_stage_trains_on_train_alone_and_plays_the_dev_split(cache, monkeypatch):
    """stage="dev" (PHYRE tunes hyperparameters so): the agent is trained on the fold's train split alone and plays
    its dev split; each key's split worked out by task_split, and the plays equal a direct play of MEM trained on
    those keys. The test stage trains on train + dev."""
    from causalplay.envs.physics_templates import task_keys, task_split

    from causalplay.agents.physics import MemAgent

    keys = task_keys(UNIVERSE["templates"], UNIVERSE["n_tasks"])
    want = {s: sorted(k for k in keys if task_split(TIER, k, 2, "within") == s) for s in ("train", "dev", "test")}
    assert len(want["dev"]) == 5
    trained, played = fold_tasks(TIER, 2, "within", **UNIVERSE, stage="dev")
    assert sorted(trained) == want["train"] and sorted(played) == want["dev"]
    assert sorted(fold_tasks(TIER, 2, "within", **UNIVERSE)[0]) == sorted(want["train"] + want["dev"])
    for fold in range(10):  # cross-template: whole templates develop; every template's first 2 tasks
        every = task_keys(None, 2)
        trained, played = fold_tasks(TIER, fold, "cross", n_tasks=2, stage="dev")
        assert sorted(played) == sorted(k for k in every if task_split(TIER, k, fold, "cross") == "dev") != []
        assert sorted(trained) == sorted(k for k in every if task_split(TIER, k, fold, "cross") == "train")
    seen, real = [], MemAgent.train

    def recording(self, tier, keys, *args, **kw):
        seen.append(sorted(keys))
        return real(self, tier, keys, *args, **kw)

    monkeypatch.setattr(MemAgent, "train", recording)
    kw = {"fold": 2, "setting": "within", "cache": cache, "stage": "dev", **UNIVERSE}
    rec = PhysicsFamily().episodes(ENV, "mem", 5, seed=0, env_kwargs=kw)
    assert seen == [want["train"]] and sorted(rec.key) == want["dev"]
    ag = make_agent("mem", seed=0, family="physics")
    ag.train(TIER, want["train"], "within", cache)
    direct = play(PhysicsBatch([get_task(TIER, k, cache) for k in want["dev"]], TIER), ag)
    got = rec.set_index("key").loc[want["dev"]]
    for col in ("solved_at", "attempts", "invalid"):
        assert got[col].tolist() == direct[col].tolist(), col
    with pytest.raises(ValueError, match="ask for fewer"):
        PhysicsFamily().episodes(ENV, "mem", 6, seed=0, env_kwargs=kw)
    with pytest.raises(ValueError, match=r"stage must be one of \('test', 'dev'\).*got 'val'"):
        fold_tasks(TIER, 2, "within", **UNIVERSE, stage="val")
    with pytest.raises(ValueError, match=r"PhysicsB-v2's stage must be one of .*got 'val'"):
        PhysicsFamily().check_env(ENV, {"stage": "val"})


def test_agent_specs_are_checked():
    assert make_agent("ssup:n_cand=4", family="physics").n_cand == 4
    assert make_agent("dqn-o:updates=3", family="physics").online
    with pytest.raises(ValueError, match="unknown physics agent"):
        make_agent("nope", family="physics")
    with pytest.raises(ValueError, match="key=value"):
        make_agent("ssup:n_cand", family="physics")
    with pytest.raises(ValueError, match="fold has 4 test tasks"):
        PhysicsFamily().episodes(ENV, "random", 7, 0, env_kwargs={"fold": 0, "setting": "within", **UNIVERSE})


def test_cli_bench_plays_the_folds_asked_for(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from causalplay.cli import app

    monkeypatch.chdir(tmp_path)  # the default task cache, runs/physics, lands here
    cli, out = CliRunner(), str(tmp_path / "out")
    # PHYRE's name for the uniform baseline, deprecated: it runs as `random`, and the command says so
    res = cli.invoke(app, ["bench", "--env", ENV, "--agents", "rand", "--folds", "3", "--episodes", "1", "--seeds",
                           "1", "--executor", "serial", "--out", out, "--wide"])
    assert res.exit_code == 0, res.output
    assert "warning: physics agent name 'rand' is deprecated; use 'random'" in res.output
    rec = pd.read_csv(tmp_path / "out" / "episodes.csv")
    assert rec.fold.tolist() == [3, 3] and sorted(rec.setting) == ["cross", "within"]
    assert set(rec.agent) == {"random"}
    assert "setting=within" in res.output and "(mean ± SD" in res.output  # SD over folds
    for folds, env, agent in (("12", ENV, "random"), ("0-x", ENV, "random"), ("0", "causalplay/IVRE-v0", "random")):
        bad = cli.invoke(app, ["bench", "--env", env, "--agents", agent, "--folds", folds, "--out", out])
        assert bad.exit_code == 2 and "--folds" in bad.output, bad.output


def test_ssup_early_stop_gives_the_same_plays():
    """ssup with each candidate rollout stopped once its outcome is decided plays exactly as with full rollouts
    (same seed, 5 attempts on 3 tasks); and on noisy rollouts the early stop never changes an outcome."""
    tasks = [get_task(TIER, k) for k in ("00:004", "10:001", "13:000")]
    recs = []
    for early in (False, True):
        ag = SsupAgent(seed=3, n_cand=6, early_stop=early)
        ag.train(TIER, [], "cross")
        recs.append(play(PhysicsBatch(tasks, TIER, budget=5, record=ag.record), ag))
    for c in ("solved_at", "attempts", "invalid"):
        assert np.array_equal(recs[0][c], recs[1][c])
    rng, shorter = np.random.default_rng(0), 0
    for t in tasks:
        for a in rng.random((6, 3)):
            kw = {"noise": 0.03, "seed": int(rng.integers(100)), "check": True}
            full = simulate(t.scene, a * [W, W, 0.75] + [0, 0, 0.25], stop_decided=False, **kw)
            early = simulate(t.scene, a * [W, W, 0.75] + [0, 0, 0.25], stop_decided=True, **kw)
            assert (full.valid, full.solved) == (early.valid, early.solved) and early.steps <= full.steps
            shorter += early.steps < full.steps
    assert shorter > 0  # the stop did cut some rollouts short


def test_ssup_simulates_late_sims_particles_per_candidate_once_late_attempts_failed(monkeypatch):
    """Attempts 1..late simulate each candidate under n_sims particles; after `late` failures, under late_sims
    (counted at the simulator's door, on a task ssup does not solve in its first 4 attempts)."""
    import causalplay.agents.physics as ap

    calls, real = [], ap.simulate_particles

    def counting(sim, parts, *a, **kw):
        calls.append((len(ag.tried[0]), len(parts["friction"])))
        return real(sim, parts, *a, **kw)

    monkeypatch.setattr(ap, "simulate_particles", counting)
    ag = SsupAgent(seed=0, n_cand=4, n_sims=3, late=2, late_sims=1)
    ag.train(TIER, [], "cross")
    rec = play(PhysicsBatch([get_task(TIER, "00:004")], TIER, budget=4, record=ag.record), ag)
    assert rec["solved_at"][0] == 0 and rec["attempts"][0] == 4
    early = {n for tried, n in calls if tried < 2}
    late = {n for tried, n in calls if tried >= 2}
    assert early == {3} and late == {1}
    with pytest.raises(ValueError, match="late_sims must be an integer >= 1.*got 0"):
        make_agent("ssup:late_sims=0", family="physics")
