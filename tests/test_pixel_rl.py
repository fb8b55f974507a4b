"""Pixel RL (PPO-V / TD3-V / DDPG-V): observation by hand, training env = bench agent, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("stable_baselines3")

from causalplay.agents.rl_features import PixelHistory, downsample, pixel_obs_space  # noqa: E402
from causalplay.render import bpy_available  # noqa: E402
from causalplay.rl.train import TrainConfig  # noqa: E402

needs_bpy = pytest.mark.skipif(not bpy_available(), reason="bpy (Blender as a Python module) is not installed; "
                               "pip install 'causalplay[render]'")
PIX = "causalplay/IVRE-Pixels-v0"


def test_downsample_by_hand():
    rng = np.random.default_rng(0)
    f = rng.integers(0, 256, (2, 120, 160, 3), dtype=np.uint8)
    d = downsample(f)
    assert d.shape == (2, 3, 60, 80) and d.dtype == np.uint8
    for b, c, y, x in ((0, 0, 0, 0), (1, 2, 59, 79), (0, 1, 17, 33)):
        block = f[b, 2 * y:2 * y + 2, 2 * x:2 * x + 2, c].astype(float)
        assert d[b, c, y, x] == int(np.rint(block.mean()))


def test_history_fields():
    h = PixelHistory(3, 10, 9)
    h.reset_rows(np.arange(3), np.array([1, 2, 4]))
    frame = np.full((1, 120, 160, 3), 200, np.uint8)
    h.push(np.array([1]), np.array([2]), frame)
    o = h.obs()
    assert pixel_obs_space(10, 9).contains({k: v[1] for k, v in o.items()})
    np.testing.assert_allclose(o["vec"][:, 0], [1 / 9, 2 / 9, 4 / 9])
    assert o["vec"][1, 1] == pytest.approx(0.3) and o["vec"][0, 1] == 0.0  # panels shown / T
    assert (o["frames"][1, 6:9] == 200).all() and o["frames"][1, :6].max() == 0 and o["frames"][0].max() == 0
    assert (o["vec"][:, 2:] == 0.5).all()


def test_config_bad_input():
    with pytest.raises(ValueError, match="must be one of \\['ppo', 'td3', 'ddpg'\\]"):
        TrainConfig(agent="recurrent-ppo", out="x", env=PIX)
    with pytest.raises(ValueError, match="with --belief-input"):
        TrainConfig(agent="ppo", out="x", env=PIX, belief_input=True)
    with pytest.raises(ValueError, match="with --recurrent"):
        TrainConfig(agent="td3", out="x", env=PIX, recurrent=True)
    with pytest.raises(ValueError, match="unknown or unsupported environment id 'causalplay/IVRE-Pixels-v9'"):
        TrainConfig(agent="ppo", out="x", env="causalplay/IVRE-Pixels-v9")
    cfg = TrainConfig(agent="td3", out="x", env=PIX)
    assert cfg.name == "td3-v" and cfg.hp["buffer_size"] == 4000 and cfg.hp["envs"] == 16 and cfg.preset == "fast"


@needs_bpy
@pytest.mark.parametrize("agent,hyper", [("ppo", {"n_steps": 8, "batch_size": 16}),
                                         ("td3", {"learning_starts": 16, "buffer_size": 64, "batch_size": 8})])
def test_train_then_bench_agent_sees_the_training_observation(tmp_path, agent, hyper):
    """A tiny run's checkpoint, played by the bench's rl agent, earns exactly what the same policy earns on the
    training env (PixelRLVecEnv) over the same episodes: the two build the same observations."""
    from causalplay.envs import make_batch

    from causalplay.agents.rl import load_policy
    from causalplay.bench.runner import run_episodes
    from causalplay.rl.envs import PixelRLVecEnv
    from causalplay.rl.train import train

    torch.set_num_threads(1)
    cfg = TrainConfig(agent=agent, out=str(tmp_path / agent), env=PIX, steps=48, envs=4, eval_every=48,
                      eval_episodes=4, hyper=hyper)
    out = train(cfg, progress=False)
    assert (out / "best.zip").is_file() and (out / "progress.csv").read_text().count("\n") == 2
    B = 5
    bench = run_episodes(PIX, f"rl:path={out}", B, seed=7)
    policy = load_policy(out)
    env = PixelRLVecEnv(make_batch(PIX, B, seed=[7, 0]))
    obs = env.reset()
    ret, first = np.zeros(B), np.ones(B, bool)
    while first.any():
        a, _ = policy.model.predict(obs, deterministic=True)
        obs, r, done, _ = env.step(a)
        ret[first] += r[first]
        first &= ~done
    np.testing.assert_allclose(bench["episode_reward"].to_numpy(), ret, rtol=0, atol=1e-4)
    with pytest.raises(ValueError, match="pick a pixel id"):
        run_episodes("causalplay/IVRE-v0", f"rl:path={out}", 2, seed=0)
