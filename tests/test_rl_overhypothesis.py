"""Meta-RL on ``causalplay/Overhypothesis-v0``: training, checkpoint round trip, scoring by machine index."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from analysis import load_analysis

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

from causalplay.envs.overhypothesis import OVERHYPOTHESIS, OverhypothesisBatch  # noqa: E402

from causalplay.agents import make_agent  # noqa: E402
from causalplay.agents.rl import Policy, load_model, load_policy  # noqa: E402
from causalplay.agents.rl_features import FeatureMap, to_env_action  # noqa: E402
from causalplay.bench.sequences import run_sequences, summarise_by_machine  # noqa: E402
from causalplay.rl.envs import make_train_env  # noqa: E402
from causalplay.rl.train import TrainConfig, evaluate, read_config, train  # noqa: E402

ENV = "causalplay/Overhypothesis-v0"
TINY = {"ppo": {"net_arch": [32], "n_steps": 16, "batch_size": 64, "n_epochs": 1},
        "recurrent-ppo": {"net_arch": [32], "lstm": 16, "n_steps": 16, "batch_size": 64, "n_epochs": 1}}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A tiny RecurrentPPO (with the exact-posterior input) and a tiny feed-forward PPO on the sequence task."""
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("ohrl")
    out = {}
    for agent, belief in (("recurrent-ppo", True), ("ppo", False)):
        cfg = TrainConfig(agent=agent, out=str(root / agent), env=ENV, steps=256, seed=0, envs=8, eval_every=128,
                          eval_episodes=8, hyper=TINY[agent], belief_input=belief)
        out[agent] = train(cfg, progress=False)
    return out


def _by_hand(pol: Policy, B: int, seed: int, rule_per: str = "sequence") -> dict:
    """Play B sequences (rows seeded ``[seed, i]``) with the policy, its LSTM state kept across machines."""
    task = OverhypothesisBatch(OVERHYPOTHESIS, B, [np.random.default_rng([seed, i]) for i in range(B)],
                               rule_per=rule_per, obs_mode="history")
    fm = FeatureMap.for_task(task, belief=pol.config.belief_input)
    obs = task.reset()
    pol.reset(B)
    while not bool(task.done.all()):
        obs, *_ = task.step(to_env_action(pol.act(fm(obs))))
    return task.record()


def test_training_on_sequences_round_trips(runs, tmp_path):
    for agent, d in runs.items():
        cfg = read_config(d)
        assert cfg.env == ENV and cfg.name == ("ppo-lstm-belief" if agent == "recurrent-ppo" else "ppo-ff")
        assert cfg.preset == "fast"  # no paper set-up on a sequence id
        prog = pd.read_csv(d / "progress.csv")
        assert prog.steps.tolist() == [128, 256]
        # evaluation reports per-machine means: Acc in [0, 1], R within one machine's range [-2 T, 20]
        assert prog.eval_acc.between(0, 1).all() and prog.eval_reward.between(-20, 20).all()
        pol = load_policy(d, "last")
        pol.model.save(tmp_path / f"{agent}.zip")
        pol2 = Policy(load_model(cfg.agent, tmp_path / f"{agent}.zip"), pol.config)
        r1, r2 = _by_hand(pol, 12, seed=5), _by_hand(pol2, 12, seed=5)
        for k in ("solved_step", "episode_reward", "rule"):
            np.testing.assert_array_equal(r1[k], r2[k])


def test_rl_agent_scored_by_machine_equals_the_policy_by_hand(runs):
    for d in runs.values():
        for rule_per in ("sequence", "episode"):
            df = run_sequences(f"rl:path={d}", 16, seed=3, rule_per=rule_per)
            assert set(df.agent) == {read_config(d).name} and len(df) == 16 * 5
            rec = _by_hand(load_policy(d), 16, seed=3, rule_per=rule_per)
            T = OVERHYPOTHESIS.horizon
            np.testing.assert_array_equal(df.trials_to_solve.to_numpy(),
                                          np.where(rec["solved_step"] > 0, rec["solved_step"], T + 1).reshape(-1))
            np.testing.assert_allclose(df.episode_reward.to_numpy(), rec["episode_reward"].reshape(-1))
            np.testing.assert_array_equal(df.rule.to_numpy(), rec["rule"].reshape(-1))
            if rule_per == "sequence":  # one rule per sequence
                assert (df.groupby("sequence").rule.nunique() == 1).all()
    # training's evaluation is the same loop, averaged per machine
    pol = load_policy(runs["recurrent-ppo"])
    ev = evaluate(pol, ENV, 16, seed=(3, 0))
    df = run_sequences(f"rl:path={runs['recurrent-ppo']}", 16, seed=3)
    assert ev["episode_reward"] == pytest.approx(df.episode_reward.mean(), abs=1e-12)
    assert ev["episode_acc"] == pytest.approx(df.solved.mean(), abs=1e-12)


def test_an_sb3_episode_is_the_whole_sequence():
    # RecurrentPPO resets its LSTM only where the VecEnv reports done: that must be the sequence's end, not a
    # machine's, or there is no memory across machines to learn with
    env = make_train_env(ENV, 6, seed=0)
    env.reset()
    ends = np.zeros(6, int)
    for step in range(50):
        # an empty trial and an empty belief never solve: every machine takes its T = 10 actions
        _, _, done, _ = env.step(-np.ones((6, 18), np.float32))
        ends += done
        if step < 49:
            assert not done.any(), step
    assert (ends == 1).all()
    env.close()


def test_summary_by_machine_against_hand_means():
    df = run_sequences("random", 6, seed=1)
    df2 = run_sequences("random", 6, seed=1, label="random2")
    s = summarise_by_machine(pd.concat([df, df2]), reference="random")
    row = s[(s.agent == "random") & (s.machine == 3)].iloc[0]
    x = df[df.machine == 2].trials_to_solve.to_numpy(float)
    assert row.trials_to_solve == pytest.approx(x.mean())
    assert row.trials_to_solve_hi - row.trials_to_solve == pytest.approx(1.96 * x.std(ddof=1) / np.sqrt(6))
    # Wilson interval of the solve rate, by hand for k of n
    k, n = int(df[df.machine == 2].solved.sum()), 6
    p, z = k / n, 1.959964  # the 97.5 % normal quantile, to 7 figures
    c, h = (p + z * z / 12) / (1 + z * z / 6), z * np.sqrt(p * (1 - p) / 6 + z * z / 144) / (1 + z * z / 6)
    assert (row.solved_lo, row.solved_hi) == pytest.approx((max(0, c - h), min(1, c + h)))
    # the same agent and seed replay the same machines and actions: the paired difference is exactly 0
    same = s[s.agent == "random2"]
    assert (same.fewer_trials == 0).all() and (same.gain_R == 0).all()


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match="'causalplay/Overhypothesis-v9'.*causalplay/Overhypothesis-v0"):
        TrainConfig(agent="recurrent-ppo", out=str(tmp_path), env="causalplay/Overhypothesis-v9")
    with pytest.raises(ValueError, match="n_sequences must be a positive integer, got 0"):
        run_sequences("random", 0)
    with pytest.raises(TypeError, match="agent spec string or an Agent"):
        run_sequences(3, 2)
    with pytest.raises(ValueError, match="agent_kwargs need an agent spec"):
        run_sequences(make_agent("random"), 2, agent_kwargs={"x": 1})
    with pytest.raises(ValueError, match="rule_per must be one of"):
        run_sequences("random", 2, rule_per="machine")
    df = run_sequences("random", 2)
    with pytest.raises(ValueError, match="reference agent 'eig'"):
        summarise_by_machine(df, reference="eig")
    with pytest.raises(ValueError, match=r"lack the column\(s\) \['trials_to_solve'\]"):
        summarise_by_machine(df.drop(columns="trials_to_solve"))


def test_overhypothesis_rl_analysis_smoke(tmp_path):
    import dataclasses

    mod = load_analysis("overhypothesis_rl")
    summary = mod.run(dataclasses.replace(mod.SMOKE, out=str(tmp_path)))
    out = tmp_path / "overhypothesis_rl_smoke"
    rec = pd.read_csv(out / "records.csv")
    assert sorted(set(rec.agent)) == ["eig-transfer", "ppo-ff-belief", "ppo-lstm-belief"]
    assert len(rec) == 2 * 3 * 4 * 5  # conditions x agents x sequences x machines
    # every agent met the same machines: the rule and blicket count agree across agents per (sequence, machine)
    assert (rec.groupby(["rule_per", "sequence", "machine"])[["rule", "n_blickets"]].nunique() == 1).all().all()
    assert len(summary) == 2 * 3 * 5 and summary.fewer_trials.notna().sum() == 2 * 2 * 5
    assert (out / "by_machine.png").is_file()
    with pytest.raises(FileNotFoundError, match="not a `causalplay train` output folder"):
        mod.run(mod.Config(out=str(tmp_path), runs={"x": str(tmp_path)}, eig_agents=()))


def test_overhypothesis_rl_command_line_is_its_config():
    """The documented commands (docs/overhypotheses.md) parse to the config they mean."""
    from causalplay.cli.config import parse_config

    mod = load_analysis("overhypothesis_rl")
    cfg = parse_config(mod.Config, ["--eig-agents", "--runs", "ppo-ff-belief", "runs/oh_rl/ppo-ff-belief",
                                    "--name", "oh_rl_ppo"])
    assert cfg.runs == {"ppo-ff-belief": "runs/oh_rl/ppo-ff-belief"} and cfg.eig_agents == ()
    assert cfg.name == "oh_rl_ppo" and cfg.rule_per == ("sequence", "episode") and cfg.merge == ()
    assert parse_config(mod.Config, ["--merge", "runs/a", "runs/b"]).merge == ("runs/a", "runs/b")
    assert parse_config(mod.Config, ["--smoke"], smoke=mod.SMOKE).train_tiny
