"""RL agents (the ``rl`` extra): features, action scaling, a tiny run of every algorithm, checkpoints, resume, and
``rl:path=`` in the benchmark. Every training here is a few hundred env steps on tiny networks (seconds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from analysis import load_analysis

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

from causalplay.envs import make_batch  # noqa: E402

from causalplay.agents import TaskInfo, agent_label, make_agent  # noqa: E402
from causalplay.agents.base import task_beliefs  # noqa: E402
from causalplay.rl.envs import make_train_env, to_env_action  # noqa: E402
from causalplay.rl.features import FeatureMap  # noqa: E402
from causalplay.rl.train import ALGOS, TrainConfig, load_policy, read_config, train  # noqa: E402

ENV = "causalplay/IVRE-v0"

#: tiny networks and short warm-ups so every algorithm trains in seconds
TINY = {"ppo": {"net_arch": [32], "n_steps": 16, "batch_size": 64, "n_epochs": 1},
        "recurrent-ppo": {"net_arch": [32], "lstm": 16, "n_steps": 16, "batch_size": 64, "n_epochs": 1},
        "td3": {"net_arch": [32], "learning_starts": 64, "batch_size": 32, "buffer_size": 2000, "gradient_steps": 1},
        "ddpg": {"net_arch": [32], "learning_starts": 64, "batch_size": 32, "buffer_size": 2000, "gradient_steps": 1},
        "recurrent-td3": {"hidden": 32, "lstm": 16, "learning_starts": 64, "batch_episodes": 8,
                          "buffer_episodes": 200},
        "recurrent-ddpg": {"hidden": 32, "lstm": 16, "learning_starts": 64, "batch_episodes": 8,
                           "buffer_episodes": 200}}


def tiny(agent: str, out, steps: int = 256, **kw) -> TrainConfig:
    return TrainConfig(agent=agent, out=str(out), env=ENV, steps=steps, seed=0, envs=8, eval_every=128,
                       eval_episodes=40, hyper=TINY[agent], **kw)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One tiny run of every algorithm (the PPO one with --belief-input too)."""
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("rl")
    out = {a: train(tiny(a, root / a), progress=False) for a in ALGOS}
    out["ppo-belief"] = train(tiny("ppo", root / "ppo-belief", belief_input=True), progress=False)
    out["ppo-tracked"] = train(tiny("ppo", root / "ppo-tracked", belief_tracker=True), progress=False)
    return out


def test_belief_features_equal_the_exact_posterior():
    env = make_batch("causalplay/IVRE-Noisy-v0", 32, seed=4, obs_mode="history")
    panel = make_batch("causalplay/IVRE-Noisy-v0", 32, seed=4)
    obs, pobs = env.reset(), panel.reset()
    fm = FeatureMap.for_task(env, belief=True)
    assert fm.size == env.obs_size + 9
    post = task_beliefs(TaskInfo.from_env(panel), 32, dtype=torch.float64)
    agent = make_agent("random", seed=0)
    agent.reset(TaskInfo.from_env(panel), pobs)
    for _ in range(env.horizon):
        active = ~panel.done
        post.observe_(pobs[:, :9] > 0.5, pobs[:, 9] > 0.5, active)
        post.condition_count_((pobs[:, 10] * 9).round().long())
        w = post.log_w.exp()
        marg = (w / w.sum(-1, keepdim=True)).reshape(32, -1, post.space.n_sets).sum(1) @ post.space.sets
        f = fm(obs)
        np.testing.assert_array_equal(f[:, :env.obs_size], obs.numpy())
        np.testing.assert_allclose(f[active.numpy(), -9:], marg[active].numpy(), atol=1e-6)
        a = agent.act(pobs, active)
        pobs, *_ = panel.step(a)
        obs, *_ = env.step(a)


def test_belief_tracker_equals_the_exact_learner_with_the_rejected_guesses_excluded():
    """The tracked features = agents.base.task_beliefs (another code path: the core engine's observe()) after
    excluding every set the env rejected (the episode went on), with its MAP set; random beliefs make guesses."""
    B, N = 32, 9
    env = make_batch("causalplay/IVRE-Noisy-v0", B, seed=5, obs_mode="history")
    panel = make_batch("causalplay/IVRE-Noisy-v0", B, seed=5)
    obs, pobs = env.reset(), panel.reset()
    fm = FeatureMap.for_task(env, tracker=True)
    fm.reset(B)
    assert fm.size == env.obs_size + 2 * N
    post = task_beliefs(TaskInfo.from_env(panel), B, dtype=torch.float64)
    rng = np.random.default_rng(0)
    excluded = 0
    for _ in range(env.horizon):
        active = ~panel.done
        post.observe_(pobs[:, :N] > 0.5, pobs[:, N] > 0.5, active)
        post.condition_count_((pobs[:, N + 1] * N).round().long())
        w = post.log_w.exp()
        probs = (w / w.sum(-1, keepdim=True)).reshape(B, -1, post.space.n_sets).sum(1)  # [B, S] sets, rules summed out
        f = fm(obs)
        on = active.numpy()
        np.testing.assert_allclose(f[on, env.obs_size:env.obs_size + N], (probs @ post.space.sets)[active].numpy(),
                                   atol=1e-6)
        top2 = probs.topk(2, -1).values
        clear = (active & (top2[:, 0] - top2[:, 1] > 1e-9)).numpy()  # MAP not a float tie
        np.testing.assert_array_equal(f[clear, -N:], post.space.sets[probs.argmax(-1)][torch.from_numpy(clear)])
        belief = rng.uniform(0.0, 1.0, (B, N))
        a = np.concatenate([rng.uniform(0.0, 1.0, (B, N)), belief], 1)
        pobs, *_ = panel.step(a)
        obs, *_ = env.step(a)
        codes = torch.from_numpy(((belief > 0.5) << np.arange(N)).sum(1))
        post.exclude_(codes, ~panel.done)  # the env went on: that guess was wrong
        excluded += int((~panel.done).sum())
    assert excluded > 100


def test_belief_tracker_misuse_is_refused():
    env = make_batch(ENV, 3, seed=0, obs_mode="history")
    obs = env.reset()
    fm = FeatureMap.for_task(env, tracker=True)
    with pytest.raises(RuntimeError, match=r"needs reset\(batch_size\) before its first call"):
        fm(obs)
    fm.reset(3)
    with pytest.raises(ValueError, match="2 observations for 3 tracked rows"):
        fm(obs[:2])
    assert fm(obs[:2], rows=np.array([0, 2])).shape == (2, 111 + 18)


def test_belief_tracker_forgets_at_a_vector_envs_auto_reset():
    env = make_train_env(ENV, 4, seed=0, tracker=True)
    obs = env.reset()
    assert obs.shape == (4, 111 + 18)
    guess = np.concatenate([-np.ones((4, 9)), np.where(np.arange(9) < 3, 1.0, -1.0)[None].repeat(4, 0)], 1)
    for _ in range(env.horizon):  # the same wrong guess (or a solve) every step, until every row has ended once
        obs, _, done, infos = env.step(guess.astype(np.float32))
    assert done.all()  # IVRE-v0 has T = 10 for every row
    fresh = FeatureMap.for_task(env.venv.task, tracker=True)
    fresh.reset(4)
    np.testing.assert_array_equal(obs, fresh(env.venv.task.observation().numpy()))
    assert not env.features._rejected.any() and (env.features._steps == 1).all()


def test_rule_marginals_when_the_rule_varies():
    from causalplay.envs.core import history_layout

    from causalplay.core.rules import make_rules

    fm = FeatureMap(9, 10, tuple(make_rules(("disjunctive", "conjunctive"))), history_layout(9, 10), belief=True)
    assert fm.size == 111 + 9 + 2
    obs = make_batch(ENV, 5, seed=0, obs_mode="history").reset()
    f = fm(obs)
    np.testing.assert_allclose(f[:, -2:].sum(1), 1.0, atol=1e-6)


def test_action_scaling_and_shapes():
    np.testing.assert_array_equal(to_env_action(np.array([[-1.0, 0.0, 1.0, -3.0, 3.0]])), [[0.0, 0.5, 1.0, 0.0, 1.0]])
    env = make_train_env(ENV, 4, seed=0)
    assert env.observation_space.shape == (111,) and env.action_space.shape == (18,)
    assert env.action_space.low.min() == -1.0 and env.action_space.high.max() == 1.0
    obs = env.reset()
    assert obs.shape == (4, 111)
    # learner action -1 everywhere = env action 0: empty trials, all-zero beliefs -> the env records belief 0
    env.step(-np.ones((4, 18), np.float32))
    task = env.venv.task
    np.testing.assert_array_equal(task.last_belief.numpy(), 0.0)
    env.step(np.ones((4, 18), np.float32))
    np.testing.assert_array_equal(task.last_belief.numpy(), 1.0)
    assert make_train_env(ENV, 2, seed=0, belief=True).observation_space.shape == (120,)


@pytest.mark.parametrize("agent", list(ALGOS))
def test_every_algorithm_trains_and_round_trips(runs, agent, tmp_path):
    d = runs[agent]
    cfg = read_config(d)
    assert cfg.name == {"ppo": "ppo-ff", "td3": "td3-ff", "ddpg": "ddpg-ff", "recurrent-ppo": "ppo-re",
                        "recurrent-td3": "td3-re", "recurrent-ddpg": "ddpg-re"}[agent]
    prog = pd.read_csv(d / "progress.csv")
    assert prog.steps.tolist()[-1] >= 256 and len(prog) == 2 and prog.best.iloc[0] == 1
    assert (d / f"best{cfg.suffix}").is_file() and (d / "learning_curve.png").is_file()
    # checkpoint round trip: a saved and reloaded model acts exactly as the one saved, over whole episodes
    pol = load_policy(d, "last")
    pol.model.save(tmp_path / f"again{cfg.suffix}")
    from causalplay.rl.train import Policy, _load_model

    pol2 = Policy(_load_model(cfg, tmp_path / f"again{cfg.suffix}"), cfg)
    env = make_batch(ENV, 16, seed=1, obs_mode="history")
    obs = env.reset()
    fm = FeatureMap.for_task(env)
    pol.reset(16)
    pol2.reset(16)
    for _ in range(env.horizon):
        a1, a2 = pol.act(fm(obs)), pol2.act(fm(obs))
        assert a1.shape == (16, 18) and np.abs(a1).max() <= 1.0
        np.testing.assert_array_equal(a1, a2)
        obs, *_ = env.step(to_env_action(a1))


def test_bench_rl_agent_equals_the_policy_by_hand(runs):
    from causalplay.bench.runner import run_episodes

    for key in ("ppo-belief", "ppo-tracked", "recurrent-td3"):
        d = runs[key]
        df = run_episodes(ENV, f"rl:path={d}", 64, seed=3, shard=1)
        assert set(df.agent) == {f"rl:path={d}"}  # shards keep the spec; the bench names the row (below)
        assert agent_label(f"rl:path={d}") == read_config(d).name
        pol = load_policy(d)
        env = make_batch(ENV, 64, seed=[3, 1], obs_mode="history")
        obs = env.reset()
        fm = FeatureMap.for_task(env, belief=pol.config.belief_input, tracker=pol.config.belief_tracker)
        fm.reset(64)
        pol.reset(64)
        while not bool(env.done.all()):
            obs, *_ = env.step(to_env_action(pol.act(fm(obs))))
        rec = env.record()
        np.testing.assert_array_equal(df.solved_step.to_numpy(), rec["solved_step"])
        np.testing.assert_allclose(df.episode_reward.to_numpy(), rec["episode_reward"])


def test_training_is_deterministic_per_seed(runs, tmp_path):
    again = train(tiny("ppo", tmp_path / "ppo"), progress=False)
    a, b = pd.read_csv(runs["ppo"] / "progress.csv"), pd.read_csv(again / "progress.csv")
    pd.testing.assert_frame_equal(a.drop(columns=["wall_s", "steps_per_s"]), b.drop(columns=["wall_s", "steps_per_s"]))


@pytest.mark.parametrize("agent", ["td3", "recurrent-ddpg"])
def test_resume_continues_the_step_count(tmp_path, agent):
    d = train(tiny(agent, tmp_path / "run", steps=128), progress=False)
    state = json.loads((d / "state.json").read_text())
    assert state["num_timesteps"] == 128
    train(tiny(agent, tmp_path / "run", steps=384), progress=False)
    prog = pd.read_csv(d / "progress.csv")
    assert prog.steps.tolist() == [128, 256, 384]
    assert prog.train_episodes.is_monotonic_increasing and prog.train_episodes.iloc[-1] >= 3 * 8  # cumulative
    assert json.loads((d / "state.json").read_text())["num_timesteps"] == 384
    assert (d / ("last_buffer.npz" if agent.startswith("recurrent") else "last_buffer.pkl")).is_file()
    with pytest.raises(ValueError, match="different config .*seed: 0 vs 1"):
        train(TrainConfig(**{**vars(tiny(agent, d, steps=512)), "seed": 1}), progress=False)


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match="unknown agent 'foo'"):
        TrainConfig(agent="foo", out=str(tmp_path))
    with pytest.raises(ValueError, match="'causalplay/Nope-v0'"):
        TrainConfig(agent="ppo", out=str(tmp_path), env="causalplay/Nope-v0")
    with pytest.raises(ValueError, match="unknown hyper-parameter.*'lr'"):
        TrainConfig(agent="ppo", out=str(tmp_path), hyper={"lr": 1.0})
    with pytest.raises(ValueError, match="steps must be a positive integer, got 0"):
        TrainConfig(agent="ppo", out=str(tmp_path), steps=0)
    for env in ("causalplay/IVRE-Pixels-v0", "causalplay/Overhypothesis-v0"):
        with pytest.raises(ValueError, match=f"--belief-tracker needs a symbolic Blicket id.*'{env}'"):
            TrainConfig(agent="ppo", out=str(tmp_path), env=env, belief_tracker=True)
    assert TrainConfig(agent="ppo", out=str(tmp_path), belief_tracker=True).name == "ppo-ff-belief-tracked"
    with pytest.raises(FileNotFoundError, match="no/such/dir"):
        make_agent(f"rl:path={tmp_path}/no/such/dir")
    with pytest.raises(FileNotFoundError, match="no config.json"):
        make_agent(f"rl:path={tmp_path}")
    with pytest.raises(ValueError, match="needs path=DIR"):
        make_agent("rl")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "x").write_text("")
    with pytest.raises(FileExistsError, match="not empty"):
        train(tiny("ppo", tmp_path / "junk"), progress=False)


def test_cli_train_rejects_an_unknown_agent():
    from typer.testing import CliRunner

    from causalplay.cli import app

    res = CliRunner(env={"COLUMNS": "400"}).invoke(app, ["train", "--agent", "foo", "--out", "x"])
    assert res.exit_code == 2 and "unknown agent 'foo'" in res.output


def test_import_causalplay_stays_light():
    code = ("import sys, causalplay, causalplay.agents, causalplay.cli, causalplay.bench.runner; "
            "print(any(m.startswith(('stable_baselines3', 'sb3_contrib')) for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_rl_table_smoke(tmp_path):

    mod = load_analysis("rl_table")
    cfg = mod.parse(["--smoke"])
    cfg.out_root = str(tmp_path)
    tab = mod.main(cfg)
    out = tmp_path / "rl_table_smoke"
    assert tab.row.tolist() == ["ppo-ff", "td3-re"]
    assert tab.episodes.tolist() == [100, 100] and tab.steps.tolist() == [128, 128]
    assert tab.set_index("row").loc["ppo-ff", "paper_episode_acc"] == 28.56
    assert (out / "learning_curves.png").is_file() and (out / "cross_template.md").is_file()
    assert "| ppo-ff | 1 | 128 |" in (out / "table.md").read_text()


def test_belief_diagnosis_plays_the_benchmarks_episodes(runs):
    """The diagnosis's 'policy' and 'eig' modes are the benchmark's rl and eig rows on the same episodes (seed
    [7, 0]); its 'exact-belief' mode keeps the policy's trials, so the context panels (no trial yet) are judged
    by the exact posterior alone and must match the eig agent's context score, which is also that posterior."""
    from causalplay.bench.runner import run_episodes

    mod = load_analysis("rl_table")
    d = runs["ppo-belief"]
    res = mod.belief_diagnosis(Path(d), ENV, 64, seed=7)
    pol = run_episodes(ENV, f"rl:path={d}", 64, seed=7, shard=0)
    eig = run_episodes(ENV, "eig", 64, seed=7, shard=0)
    assert res["policy"]["episode_acc"] == pytest.approx(100 * pol.episode_solved.mean(), abs=1e-9)
    assert res["policy"]["episode_reward"] == pytest.approx(pol.episode_reward.mean(), abs=1e-9)
    assert res["eig"]["episode_acc"] == pytest.approx(100 * eig.episode_solved.mean(), abs=1e-9)
    assert res["exact-belief"]["context_acc"] == pytest.approx(100 * eig.context_solved.mean(), abs=1e-9)


def test_rl_table_pairs_rows_with_the_papers_rows():
    mod = load_analysis("rl_table")
    # a budget suffix names a longer run of the same agent; belief-input rows have no paper row
    assert [mod.paper_row(r) for r in ("ddpg-ff", "ddpg-ff-4m", "td3-re-10m", "ppo-ff-belief",
                                        "ppo-ff-belief-10m", "ppo-ff-2.5m")] == \
        ["ddpg-ff", "ddpg-ff", "td3-re", None, None, "ppo-ff"]
    assert mod.row_of("ddpg-ff-4m-s12") == "ddpg-ff-4m"


def test_bench_cli_names_rl_rows_and_refuses_a_clash(runs, tmp_path):
    from typer.testing import CliRunner

    from causalplay.cli import app

    d = runs["ppo"]
    cli = CliRunner(env={"COLUMNS": "400"})  # rich wraps error boxes to the terminal width
    # two runs named alike (the belief run renamed to the feed-forward run's row)
    res = cli.invoke(app, ["bench", "--agents", f"rl:path={d},rl:path={runs['ppo-belief']}:name=ppo-ff",
                           "--episodes", "10", "--seeds",
                                   "1", "--executor", "serial", "--out", str(tmp_path / "b")])
    assert res.exit_code == 2 and "would share the table row 'ppo-ff'" in res.output
    res = cli.invoke(app, ["bench", "--agents", f"rl:path={tmp_path}/missing", "--out", str(tmp_path / "b")])
    assert res.exit_code == 2 and "missing" in res.output
    res = cli.invoke(app, ["bench", "--agents", f"rl:path={d},rl:path={d}:name=again", "--episodes", "20",
                                   "--seeds", "1", "--executor", "serial", "--out", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    table = pd.read_csv(tmp_path / "b" / "table.csv")
    assert table.agent.tolist() == ["ppo-ff", "again"]
    assert table.episode_acc.iloc[0] == table.episode_acc.iloc[1]  # same checkpoint, same episodes
