"""Overhypothesis-v0 (issue 15): gymnasium conformance, determinism, the sequence contract, the transfer agent."""

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
import torch
from causalplay.envs import SEQUENCE_IDS, make_batch
from causalplay.envs.overhypothesis import OVERHYPOTHESIS, OverhypothesisBatch
from causalplay.envs.vector import TaskVectorEnv
from gymnasium.utils.env_checker import check_env
from vector_check import assert_vector_equals_singles

import causalplay  # noqa: F401  (registers the ids)
from causalplay.agents import EIGAgent, TransferEIGAgent, make_agent

ID = "causalplay/Overhypothesis-v0"


@pytest.fixture
def one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)  # the machine is shared: intra-op threads only add contention at this size
    yield
    torch.set_num_threads(old)


def test_registered():
    assert ID in SEQUENCE_IDS and ID in gym.registry


@pytest.mark.parametrize("obs_mode", ["panel", "history"])
def test_check_env(obs_mode):
    check_env(gym.make(ID, obs_mode=obs_mode).unwrapped, skip_render_check=True)


def _rollout(seed, n_steps=60, **kw):
    env = gym.make(ID, **kw)
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(123)
    out = [(obs.copy(), repr(info))]
    for _ in range(n_steps):
        obs, r, term, trunc, info = env.step(rng.random(env.action_space.shape).astype(np.float32))
        out.append((obs.copy(), r, term, trunc, repr(info)))
        if term or trunc:
            break
    return out


def test_same_seed_same_rollout_two_instances():
    a, b = _rollout(7), _rollout(7)
    assert len(a) == len(b) > 2
    for x, y in zip(a, b, strict=True):
        for u, v in zip(x, y, strict=True):
            np.testing.assert_array_equal(u, v) if isinstance(u, np.ndarray) else (u == v or pytest.fail(f"{u}!={v}"))
    assert _rollout(8)[0][0].tolist() != a[0][0].tolist() or _rollout(8)[1:] != a[1:]


def test_sequence_contract():
    B, K, T = 64, 5, 10
    task = make_batch(ID, B, seed=0)
    obs = task.reset()
    assert obs.shape == (B, 9 + 5) and task.layout.get(obs, "episode")[:, 0].tolist() == [1.0] * B
    steps, total = 0, np.zeros(B)
    objects = [task.objects.clone()]
    rng = np.random.default_rng(0)
    ends = np.zeros(B, int)
    while not bool(task.done.all()):
        before = task.episode.clone()
        active = ~task.done
        obs, r, term, trunc = task.step(torch.as_tensor(rng.random((B, 18))))
        total += r.numpy()
        changed = (task.episode != before).numpy()
        ends += changed
        assert not bool((term | trunc)[torch.from_numpy(changed)].any())  # a machine ending mid-sequence is no end
        assert bool(((term | trunc) <= active).all())
        if changed.any():
            objects.append(task.objects[torch.from_numpy(changed)].clone())
            # the new machine starts at panel 1 (the layout scales the field back to the panel number)
            step = task.layout.get(obs, "step")[torch.from_numpy(changed), 0]
            assert torch.equal(step, torch.ones_like(step))
            ep = task.layout.get(obs, "episode")[torch.from_numpy(changed), 0]
            assert torch.equal(ep, (task.episode[torch.from_numpy(changed)] + 1).float())
        steps += 1
        assert steps <= K * T
    rec = task.record()
    assert ends.tolist() == [K - 1] * B
    assert rec["solved_step"].shape == (B, K)
    np.testing.assert_allclose(rec["episode_reward"].sum(1), total, atol=1e-9)
    assert ((rec["trials_to_solve"] >= 1) & (rec["trials_to_solve"] <= T + 1)).all()
    assert (rec["rule"] == rec["rule"][:, :1]).all()  # one rule per sequence
    assert 0.3 < rec["rule"][:, 0].mean() < 0.7
    assert set(np.unique(rec["n_blickets"])) <= {2, 3, 4}


def test_control_redraws_the_rule_and_objects_are_fresh():
    task = make_batch(ID, 200, seed=1, rule_per="episode", n_episodes=3)
    task.reset()
    while not bool(task.done.all()):
        task.step(torch.full((200, 18), 0.3, dtype=torch.float64))
    rule = task.record()["rule"]
    mixed = (rule != rule[:, :1]).any(1).mean()
    assert 0.6 < mixed < 0.9  # 1 - 2 * (1/2)^3 = 0.75 when independent
    seq = make_batch(ID, 4, seed=1, n_episodes=2)
    seq.reset()
    first = seq.objects.clone()
    while not bool(seq.done.all()):
        seq.step(torch.full((4, 18), 0.3, dtype=torch.float64))
    assert not torch.equal(first, seq.objects)  # a fresh draw of objects for machine 2


def test_make_vec_is_native_and_equals_single_envs():
    B, seed = 3, 11
    venv = gym.make_vec(ID, num_envs=B, n_episodes=2)
    singles = [gym.make(ID, n_episodes=2) for _ in range(B)]
    assert isinstance(venv.unwrapped, TaskVectorEnv)
    assert_vector_equals_singles(venv, singles, seed, steps=45)


def test_single_env_info_and_errors():
    env = gym.make(ID, n_episodes=2)
    with pytest.raises((RuntimeError, gym.error.ResetNeeded), match="reset"):
        env.step(np.zeros(18, np.float32))
    obs, info = env.reset(seed=3)
    assert info["episode"] == 0 and len(info["objects"]) == 9
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        env.step(np.full(18, 2.0, np.float32))
    seen = []
    for _ in range(20):
        obs, r, te, tr, info = env.step(np.full(18, 0.3, np.float32))
        if info.get("machine_ended"):
            seen.append(info)
        if te or tr:
            break
    assert [i["episode"] for i in seen] == [0, 1] and "new_objects" in seen[0] and "new_objects" not in seen[1]
    assert all(i["rule"] == seen[0]["rule"] for i in seen)
    with pytest.raises(ValueError, match="rule_per"):
        OverhypothesisBatch(OVERHYPOTHESIS, 2, np.random.default_rng(0), rule_per="never")
    with pytest.raises(ValueError, match="n_episodes"):
        OverhypothesisBatch(OVERHYPOTHESIS, 2, np.random.default_rng(0), n_episodes=0)


def _play(task, agent):
    obs = task.reset()
    agent.reset(task.info(), obs)
    actions = []
    while not bool(task.done.all()):
        a = agent.act(obs, ~task.done)
        actions.append(a)
        obs, *_ = task.step(a)
    return task.record(), actions


@pytest.mark.parametrize("env_id", ["causalplay/IVRE-v0", "causalplay/IVRE-Conjunctive-v0"])
def test_without_transfer_the_agent_plays_like_eig(env_id, one_thread):
    r1, a1 = _play(make_batch(env_id, 24, seed=5), EIGAgent())
    r2, a2 = _play(make_batch(env_id, 24, seed=5), TransferEIGAgent(transfer=False))
    assert len(a1) == len(a2)
    for x, y in zip(a1, a2, strict=True):
        torch.testing.assert_close(x, y)
    np.testing.assert_array_equal(r1["solved_step"], r2["solved_step"])


def test_transfer_agent_learns_the_sequence_rule(one_thread):
    B = 24
    rngs = [np.random.default_rng([2, i]) for i in range(B)]
    task = OverhypothesisBatch(dataclasses.replace(OVERHYPOTHESIS), B, rngs, n_episodes=3)
    agent = TransferEIGAgent(concentration=0.5)
    rec, _ = _play(task, agent)
    # the rule prior the agent used on the last machine, against the sequence's rule
    rho_conj = agent.rule_log_prior[:, 1].exp().numpy()
    truth = rec["rule"][:, -1]
    assert (rho_conj[truth == 1] > 0.5).mean() > 0.8 and (rho_conj[truth == 0] < 0.5).mean() > 0.8
    # exact: the prior equals E[theta | evidence] of the stored per-machine evidence
    from causalplay.core.overhypothesis import predictive_rule_probs

    want = predictive_rule_probs(agent.evidence[:, :2], torch.tensor([0.5, 0.5], dtype=torch.float64))
    np.testing.assert_allclose(rho_conj, want[:, 1].numpy(), atol=1e-12)
    with pytest.raises(ValueError, match="concentration"):
        make_agent("eig-transfer:concentration=0")


def test_transfer_analysis_smoke(tmp_path, one_thread, monkeypatch):
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "analyses" / "overhypothesis_transfer.py"
    spec = importlib.util.spec_from_file_location("overhypothesis_transfer", path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "overhypothesis_transfer", mod)  # dataclasses look their module up
    spec.loader.exec_module(mod)
    cfg = dataclasses.replace(mod.SMOKE, out=str(tmp_path), executor="serial")
    res = mod.run(cfg)
    out = tmp_path / cfg.name
    for f in ("pattern.csv", "episodes.csv", "summary.csv", "transfer.png", "config.json"):
        assert (out / f).exists(), f
    pat = res["pattern"].set_index(["form", "training"])
    for form in ("rules", "sigmoid"):
        assert pat.loc[(form, "conjunctive"), "P(D lights alone)"] < pat.loc[(form, "disjunctive"), "P(D lights alone)"]
    s = res["summary"]
    assert set(s.machine) == {1, 2} and (s.n == cfg.n_sequences).all()
    # machine 1 is played before anything can transfer: the two agents are identical there
    first = s[(s.machine == 1) & s.fewer_trials.notna()]
    assert (first.fewer_trials == 0).all()


def test_sb3_vec_env_equals_dummy_vec_env():
    # the adapter RecurrentPPO (meta-RL across machines) would train on
    pytest.importorskip("stable_baselines3")
    from causalplay.envs.sb3 import make_sb3_vec
    from stable_baselines3.common.vec_env import DummyVecEnv

    B = 3
    ours = make_sb3_vec(ID, B, seed=7, n_episodes=2)
    ref = DummyVecEnv([lambda: gym.make(ID, n_episodes=2) for _ in range(B)])
    ref.seed(7)
    np.testing.assert_array_equal(ours.reset(), ref.reset())
    rng = np.random.default_rng(2)
    n_done = 0
    for _ in range(45):
        a = rng.random((B, 18)).astype(np.float32)
        o1, r1, d1, _ = ours.step(a)
        o2, r2, d2, _ = ref.step(a)
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_allclose(r1, r2, atol=1e-6)
        np.testing.assert_array_equal(d1, d2)
        n_done += int(d2.sum())
    assert n_done >= B
