"""RL agents (the ``rl`` extra): features, the history-LSTM encoder, n-step targets, the paper preset against the
docs, a tiny run of every algorithm, checkpoints, resume, and ``rl:path=`` in the benchmark. Every training here
is a few hundred env steps on tiny networks (seconds)."""

from __future__ import annotations

import ast
import json
import re
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

from causalplay.agents import agent_label, make_agent  # noqa: E402
from causalplay.agents.base import task_beliefs  # noqa: E402
from causalplay.agents.rl import Policy, load_model, load_policy, read_run  # noqa: E402
from causalplay.agents.rl_features import FeatureMap, HistoryLSTM, to_env_action  # noqa: E402
from causalplay.core.exact import log_likelihood  # noqa: E402
from causalplay.rl.envs import make_train_env  # noqa: E402
from causalplay.rl.train import PRESETS, TrainConfig, build_model, evaluate, read_config, train  # noqa: E402

ENV = "causalplay/IVRE-v0"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "rl.md"

#: the paper preset shrunk (tiny networks, short warm-ups) so every algorithm trains in seconds
TINY = {"ppo": {"net_arch": [32, 32], "n_steps": 16, "batch_size": 128},
        "recurrent-ppo": {"net_arch": [32], "lstm": 16, "n_steps": 16, "batch_size": 64, "n_epochs": 1},
        "td3": {"net_arch": [32, 32], "learning_starts": 64, "batch_size": 32, "buffer_size": 2000},
        "ddpg": {"net_arch": [32, 32], "learning_starts": 64, "batch_size": 32, "buffer_size": 2000}}
#: fixture key -> (agent, --recurrent)
RUNS = {"ppo": ("ppo", False), "td3": ("td3", False), "ddpg": ("ddpg", False),
        "recurrent-ppo": ("recurrent-ppo", False), "ppo-re": ("ppo", True), "td3-re": ("td3", True),
        "ddpg-re": ("ddpg", True)}
NAMES = {"ppo": "ppo-ff", "td3": "td3-ff", "ddpg": "ddpg-ff", "recurrent-ppo": "ppo-lstm", "ppo-re": "ppo-re",
         "td3-re": "td3-re", "ddpg-re": "ddpg-re"}


def tiny(key: str, out, steps: int = 256, **kw) -> TrainConfig:
    agent, rec = RUNS[key]
    return TrainConfig(agent=agent, out=str(out), env=ENV, steps=steps, seed=0, envs=8, eval_every=128,
                       eval_episodes=40, recurrent=rec, hyper=TINY[agent], **kw)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One tiny run of every algorithm and variant (the PPO one with --belief-input / --belief-tracker too)."""
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("rl")
    out = {k: train(tiny(k, root / k), progress=False) for k in RUNS}
    out["ppo-belief"] = train(tiny("ppo", root / "ppo-belief", belief_input=True), progress=False)
    out["ppo-tracked"] = train(tiny("ppo", root / "ppo-tracked", belief_tracker=True), progress=False)
    return out


# -- features ------------------------------------------------------------------------------------------------
def _by_hand_posterior(space, trials: list, lits: list, count: torch.Tensor, rejected: list) -> torch.Tensor:
    """``[B, S]`` set posterior from the panels seen (the core engine's batched ``log_likelihood``, another code
    path than the tracker's step-by-step ``observe_``), the announced count and the rejected set codes."""
    lw = space.log_prior[None] + log_likelihood(space, torch.stack(trials, 1).double(), torch.stack(lits, 1).double())
    S = space.n_sets
    bad = space.sets.sum(-1).round().long()[None] != count[:, None]
    for b, codes in enumerate(rejected):
        bad[b, codes] = True
    lw = lw.masked_fill(bad.repeat(1, space.n_rules), -torch.inf)
    w = (lw - torch.logsumexp(lw, -1, keepdim=True)).exp()
    return w.reshape(lw.shape[0], -1, S).sum(1)


@pytest.mark.parametrize("tracker", [False, True])
def test_belief_features_equal_the_exact_posterior(tracker):
    """The features = the exact posterior by hand (uniform over sets of the announced count and over rules; with the
    tracker also every set the env rejected -- the episode went on -- excluded, and its MAP set); random actions
    make the trials and the guesses. Compared on the rows still playing (every panel they showed is real)."""
    B, N = 32, 9
    env = make_batch("causalplay/IVRE-Noisy-v0", B, seed=5, obs_mode="history")
    panel = make_batch("causalplay/IVRE-Noisy-v0", B, seed=5)
    obs, pobs = env.reset(), panel.reset()
    fm = FeatureMap.for_task(env, belief=True, tracker=tracker)
    fm.reset(B)
    assert fm.size == env.obs_size + (2 * N if tracker else N)
    space = task_beliefs(panel.info(), 1, dtype=torch.float64).space
    rng = np.random.default_rng(0)
    trials, lits, rejected = [], [], [[] for _ in range(B)]
    count = (pobs[:, N + 1] * N).round().long()
    for _ in range(env.horizon):
        active = ~panel.done
        trials.append(pobs[:, :N] > 0.5)
        lits.append(pobs[:, N] > 0.5)
        probs = _by_hand_posterior(space, trials, lits, count, rejected)
        f, on = fm(obs), active.numpy()
        np.testing.assert_array_equal(f[:, :env.obs_size], obs.numpy())
        np.testing.assert_allclose(f[on, env.obs_size:env.obs_size + N], (probs @ space.sets)[active].numpy(),
                                   atol=1e-9)
        if tracker:
            top2 = probs.topk(2, -1).values
            clear = (active & (top2[:, 0] - top2[:, 1] > 1e-9)).numpy()  # MAP not a float tie
            np.testing.assert_array_equal(f[clear, -N:], space.sets[probs.argmax(-1)][torch.from_numpy(clear)])
        a = rng.uniform(0.0, 1.0, (B, 2 * N))
        pobs, *_ = panel.step(a)
        obs, *_ = env.step(a)
        if tracker:
            for b in np.flatnonzero((~panel.done).numpy()):  # the env went on: that guess was wrong
                rejected[b].append(int(((a[b, N:] > 0.5) << np.arange(N)).sum()))
    assert not tracker or sum(map(len, rejected)) > 100


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
    assert all(set(i["episode"]) == {"r", "l", "solved"} and i["episode"]["l"] <= 10 for i in infos)
    fresh = FeatureMap.for_task(env.venv.task, tracker=True)
    fresh.reset(4)
    np.testing.assert_array_equal(obs, fresh(env.venv.task.observation().numpy()))
    assert (env.features._guesses == -1).all() and (env.features._steps == 1).all()


def test_rule_marginals_when_the_rule_varies():
    from causalplay.envs.core import history_layout

    from causalplay.core.rules import make_rules

    fm = FeatureMap(9, 10, tuple(make_rules(("disjunctive", "conjunctive"))), history_layout(9, 10), belief=True)
    assert fm.size == 111 + 9 + 2
    f = fm(make_batch(ENV, 5, seed=0, obs_mode="history").reset())
    np.testing.assert_allclose(f[:, -2:].sum(1), 1.0, atol=1e-6)


def test_action_scaling_and_shapes():
    np.testing.assert_array_equal(to_env_action(np.array([[-1.0, 0.0, 1.0, -3.0, 3.0]])), [[0.0, 0.5, 1.0, 0.0, 1.0]])
    env = make_train_env(ENV, 4, seed=0)
    assert env.observation_space.shape == (111,) and env.action_space.shape == (18,)
    assert env.action_space.low.min() == -1.0 and env.action_space.high.max() == 1.0
    assert env.reset().shape == (4, 111)
    # learner action -1 everywhere = env action 0: empty trials, all-zero beliefs -> the env records belief 0
    env.step(-np.ones((4, 18), np.float32))
    task = env.venv.task
    np.testing.assert_array_equal(task.last_belief.numpy(), 0.0)
    env.step(np.ones((4, 18), np.float32))
    np.testing.assert_array_equal(task.last_belief.numpy(), 1.0)
    assert make_train_env(ENV, 2, seed=0, belief=True).observation_space.shape == (120,)


# -- the paper's recurrent encoder, n-step targets, the preset ---------------------------------------------------
def test_history_lstm_equals_a_hand_unrolled_lstm():
    from gymnasium import spaces

    torch.manual_seed(0)
    N, T, H = 9, 10, 8
    env = make_batch(ENV, 3, seed=2, obs_mode="history")
    obs = env.reset()
    for _ in range(3):  # a few panels in, the rest zero padding
        obs, *_ = env.step(torch.rand(3, 2 * N, generator=torch.Generator().manual_seed(1)))
    extra = torch.rand(3, 2, dtype=torch.float32)  # features appended after the history (--belief-input)
    x = torch.cat([obs.float(), extra], 1)
    enc = HistoryLSTM(spaces.Box(0, 1, (x.shape[1],)), N, T, hidden=H)
    assert enc.features_dim == H + 1 + 2
    got = enc(x).detach()
    # by hand: panel rows (on, lit) after count and shown; gates in torch's order i, f, g, o
    Wi, Wh = enc.lstm.weight_ih_l0.detach(), enc.lstm.weight_hh_l0.detach()
    b = (enc.lstm.bias_ih_l0 + enc.lstm.bias_hh_l0).detach()
    h, c = torch.zeros(3, H), torch.zeros(3, H)
    for t in range(T):
        panel = x[:, 2 + t * (N + 1):2 + (t + 1) * (N + 1)]
        z = (panel @ enc.embed.weight.detach().T + enc.embed.bias.detach()) @ Wi.T + h @ Wh.T + b
        i, f, g, o = z.split(H, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
    want = torch.cat([h, x[:, :1], extra], 1)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)
    assert (x[:, 2 + (T - 1) * (N + 1):2 + T * (N + 1)] == 0).all()  # the padding was part of the unroll


def test_recurrent_models_give_actor_and_critic_their_own_encoder(runs):
    for key in ("td3-re", "ddpg-re", "ppo-re"):
        pol = load_policy(runs[key])
        p = pol.model.policy
        if key == "ppo-re":
            encs = [p.pi_features_extractor, p.vf_features_extractor]
        else:
            encs = [p.actor.features_extractor, p.critic.features_extractor]
        assert all(isinstance(e, HistoryLSTM) and e.lstm.hidden_size == 32 for e in encs)
        assert encs[0] is not encs[1] and encs[0].lstm.weight_hh_l0.data_ptr() != encs[1].lstm.weight_hh_l0.data_ptr()


def test_n_step_targets_equal_hand_computation(tmp_path):
    """The paper preset's 10-step returns: a 3-step toy episode and the start of the next one in the replay buffer
    of the model ``build_model`` makes; the sampled return, discount, bootstrap observation and done flag -- and
    the critic target DDPG computes from them -- equal the hand computation."""
    from stable_baselines3.common.buffers import NStepReplayBuffer

    cfg = TrainConfig(agent="ddpg", out=str(tmp_path), envs=1, hyper={"net_arch": [16, 16], "buffer_size": 100})
    model = build_model(cfg, make_train_env(ENV, 1, seed=0))
    buf, g = model.replay_buffer, cfg.hp["gamma"]
    assert isinstance(buf, NStepReplayBuffer) and buf.n_steps == 10 and buf.gamma == g == 0.99
    rng = np.random.default_rng(0)
    o = rng.uniform(0, 1, (6, 111)).astype(np.float32)  # o0 o1 o2 o3(final) | o4 o5 (next episode)
    r = np.array([-1.3, -1.1, 20.0, -1.2, -1.4], np.float32)
    for s, s2, rew, done in [(0, 1, r[0], 0), (1, 2, r[1], 0), (2, 3, r[2], 1), (4, 5, r[3], 0), (5, 5, r[4], 0)]:
        buf.add(o[s][None], o[s2][None], rng.uniform(-1, 1, (1, 18)), np.array([rew]), np.array([done]), [{}])
    smp = buf._get_samples(np.arange(4))
    want_r = [r[0] + g * r[1] + g**2 * r[2], r[1] + g * r[2], r[2], r[3] + g * r[4]]
    np.testing.assert_allclose(smp.rewards.numpy()[:, 0], want_r, rtol=1e-6)
    np.testing.assert_array_equal(smp.dones.numpy()[:, 0], [1, 1, 1, 0])  # the last one ends at the buffer's end
    np.testing.assert_allclose(smp.discounts.numpy()[:, 0], [g**3, g**2, g, g**2], rtol=1e-6)
    np.testing.assert_array_equal(smp.next_observations.numpy(), o[[3, 3, 3, 5]])
    with torch.no_grad():  # DDPG's target: R + (1 - done) gamma^k Q'(s_{t+k}, mu'(s_{t+k}))
        q = model.critic_target(smp.next_observations, model.actor_target(smp.next_observations))[0][:, 0]
        target = smp.rewards[:, 0] + (1 - smp.dones[:, 0]) * smp.discounts[:, 0] * q
    hand = torch.tensor(want_r) + torch.tensor([0.0, 0.0, 0.0, 1.0]) * torch.tensor([g**3, g**2, g, g**2]) * q
    torch.testing.assert_close(target, hand.float())


def _docs_tables() -> dict[str, dict[str, dict]]:
    """docs/rl.md's settings tables: group ('off-policy' / 'ppo') -> preset -> {key: value}."""
    text = DOCS.read_text()
    out = {}
    for group, head in (("off-policy", "### DDPG and TD3"), ("ppo", "### PPO")):
        section = text.split(head, 1)[1].split("\n#", 1)[0]
        rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
                if re.match(r"\| `\w+` \|", line)]
        out[group] = {p: {r[0].strip("`"): ast.literal_eval(r[col].strip("`")) for r in rows}
                      for p, col in (("paper", 2), ("fast", 3))}
    return out


def test_paper_preset_equals_the_docs_table():
    tables = _docs_tables()
    for preset in ("paper", "fast"):
        assert tables["off-policy"][preset] == PRESETS[preset]["td3"]
        assert {k: v for k, v in tables["off-policy"][preset].items() if k in PRESETS[preset]["ddpg"]} == \
            PRESETS[preset]["ddpg"]
        assert tables["ppo"][preset] == PRESETS[preset]["ppo"]
    assert TrainConfig(agent="ddpg", out="x").preset == "paper" and TrainConfig(agent="ppo", out="x").hp == \
        tables["ppo"]["paper"]


# -- training, checkpoints, the bench agent --------------------------------------------------------------------
@pytest.mark.parametrize("key", list(RUNS))
def test_every_algorithm_trains_and_round_trips(runs, key, tmp_path):
    d = runs[key]
    cfg = read_config(d)
    assert cfg.name == NAMES[key] and read_run(d).name == NAMES[key] and cfg.preset == "paper"
    prog = pd.read_csv(d / "progress.csv")
    assert prog.steps.tolist()[-1] >= 256 and len(prog) == 2 and prog.best.iloc[0] == 1
    assert prog.train_episodes.iloc[-1] >= 8 and prog.columns[:9].tolist() == [
        "steps", "wall_s", "steps_per_s", "train_episodes", "train_acc", "train_reward", "eval_acc", "eval_reward",
        "best"] and any(c.startswith("train/") for c in prog.columns)  # SB3's own values through its logger
    assert (d / "best.zip").is_file() and (d / "learning_curve.png").is_file()
    # checkpoint round trip: a saved and reloaded model acts exactly as the one saved, over whole episodes
    pol = load_policy(d, "last")
    assert all(p.device.type == "cpu" for p in pol.model.policy.parameters())
    pol.model.save(tmp_path / "again.zip")
    pol2 = Policy(load_model(cfg.agent, tmp_path / "again.zip", device="cpu"), pol.config)
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

    for key in ("ppo-belief", "ppo-tracked", "td3-re"):
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
        # training's evaluation is the same play loop on the same shard
        ev = evaluate(pol, ENV, 64, seed=(3, 1))
        assert ev["episode_reward"] == pytest.approx(df.episode_reward.mean(), abs=1e-12)
        assert ev["episode_acc"] == pytest.approx(df.episode_solved.mean(), abs=1e-12)


def test_training_is_deterministic_per_seed(runs, tmp_path):
    for key in ("ppo", "td3"):
        again = train(tiny(key, tmp_path / key), progress=False)
        a, b = pd.read_csv(runs[key] / "progress.csv"), pd.read_csv(again / "progress.csv")
        pd.testing.assert_frame_equal(a.drop(columns=["wall_s", "steps_per_s"]),
                                      b.drop(columns=["wall_s", "steps_per_s"]))


@pytest.mark.parametrize("key", ["td3", "ddpg-re", "ppo"])
def test_resume_continues_the_step_count(tmp_path, key):
    d = train(tiny(key, tmp_path / "run", steps=128), progress=False)
    assert json.loads((d / "state.json").read_text())["num_timesteps"] == (128 if key == "ppo" else 160)
    train(tiny(key, tmp_path / "run", steps=384), progress=False)
    prog = pd.read_csv(d / "progress.csv")
    assert prog.steps.tolist() == ([128, 256, 384] if key == "ppo" else [160, 320, 400])  # paper: 10-step collects
    assert prog.train_episodes.is_monotonic_increasing and prog.train_episodes.iloc[-1] >= 3 * 8  # cumulative
    assert json.loads((d / "state.json").read_text())["num_timesteps"] == prog.steps.iloc[-1]
    assert (d / ("last_vecnormalize.pkl" if key == "ppo" else "last_buffer.pkl")).is_file()
    with pytest.raises(ValueError, match="different config .*seed: 0 vs 1"):
        train(TrainConfig(**{**vars(tiny(key, d, steps=512)), "seed": 1}), progress=False)


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match="unknown agent 'foo'"):
        TrainConfig(agent="foo", out=str(tmp_path))
    with pytest.raises(ValueError, match="'causalplay/Nope-v0'"):
        TrainConfig(agent="ppo", out=str(tmp_path), env="causalplay/Nope-v0")
    with pytest.raises(ValueError, match="unknown hyper-parameter.*'lr'"):
        TrainConfig(agent="ppo", out=str(tmp_path), hyper={"lr": 1.0})
    with pytest.raises(ValueError, match="unknown preset 'huge'"):
        TrainConfig(agent="ppo", out=str(tmp_path), preset="huge")
    with pytest.raises(ValueError, match="steps must be a positive integer, got 0"):
        TrainConfig(agent="ppo", out=str(tmp_path), steps=0)
    with pytest.raises(ValueError, match="--recurrent is for ppo, td3 and ddpg"):
        TrainConfig(agent="recurrent-ppo", out=str(tmp_path), recurrent=True)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device 'cuda': torch sees no CUDA device"):
            TrainConfig(agent="td3", out=str(tmp_path), device="cuda")
    for env in ("causalplay/IVRE-Pixels-v0", "causalplay/Overhypothesis-v0"):
        with pytest.raises(ValueError, match=f"--belief-tracker needs a symbolic Blicket id.*'{env}'"):
            TrainConfig(agent="ppo", out=str(tmp_path), env=env, belief_tracker=True)
    assert TrainConfig(agent="ppo", out=str(tmp_path), belief_tracker=True).name == "ppo-ff-belief-tracked"
    assert TrainConfig(agent="td3", out=str(tmp_path), recurrent=True).name == "td3-re"
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


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_training_loads_on_cpu(tmp_path):
    d = train(TrainConfig(**{**vars(tiny("td3-re", tmp_path / "gpu")), "device": "cuda"}), progress=False)
    pol = load_policy(d, device="cpu")
    assert all(p.device.type == "cpu" for p in pol.model.policy.parameters())
    assert np.isfinite(evaluate(pol, ENV, 16)["episode_reward"])


def test_cli_train_rejects_bad_options():
    from typer.testing import CliRunner

    from causalplay.cli import app

    cli = CliRunner(env={"COLUMNS": "400"})
    res = cli.invoke(app, ["train", "--agent", "foo", "--out", "x"])
    assert res.exit_code == 2 and "unknown agent 'foo'" in res.output
    res = cli.invoke(app, ["train", "--agent", "ppo", "--preset", "huge", "--out", "x"])
    assert res.exit_code == 2 and "unknown preset 'huge'" in res.output


def test_import_causalplay_stays_light_and_agents_do_not_import_rl(runs):
    code = ("import sys, causalplay, causalplay.agents, causalplay.agents.rl_features, causalplay.cli, "
            "causalplay.bench.runner; print(any(m.startswith(('stable_baselines3', 'sb3_contrib')) for m in "
            "sys.modules)); from causalplay.agents import make_agent; "
            f"make_agent('rl:path={runs['td3-re']}'); print('causalplay.rl' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]  # playing a run needs the agents layer only


def test_rl_table_smoke(tmp_path):
    mod = load_analysis("rl_table")
    cfg = mod.parse(["--smoke"])
    cfg.out_root = str(tmp_path)
    tab = mod.main(cfg)
    out = tmp_path / "rl_table_smoke"
    assert tab.row.tolist() == ["ppo-ff", "td3-re"]
    assert tab.episodes.tolist() == [100, 100] and tab.steps.tolist() == [128, 160]
    assert tab.set_index("row").loc["ppo-ff", "paper_episode_acc"] == 28.56
    assert (out / "learning_curves.png").is_file() and (out / "cross_template.md").is_file()
    assert "| ppo-ff | paper | 1 | 128 |" in (out / "table.md").read_text()


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
                           "--episodes", "10", "--seeds", "1", "--executor", "serial", "--out", str(tmp_path / "b")])
    assert res.exit_code == 2 and "would share the table row 'ppo-ff'" in res.output
    res = cli.invoke(app, ["bench", "--agents", f"rl:path={tmp_path}/missing", "--out", str(tmp_path / "b")])
    assert res.exit_code == 2 and "missing" in res.output
    res = cli.invoke(app, ["bench", "--agents", f"rl:path={d},rl:path={d}:name=again", "--episodes", "20",
                           "--seeds", "1", "--executor", "serial", "--out", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    table = pd.read_csv(tmp_path / "b" / "table.csv")
    assert table.agent.tolist() == ["ppo-ff", "again"]
    assert table.episode_acc.iloc[0] == table.episode_acc.iloc[1]  # same checkpoint, same episodes
