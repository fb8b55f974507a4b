"""Perception front end: the CNN reads rendered panels; eig-pixels = eig when the reading is right; soft evidence."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch
from analysis import load_analysis

from causalplay.agents import EIGAgent, TaskInfo, make_agent
from causalplay.agents.perception import DEFAULT_WEIGHTS, Perception, PerceptionNet, sample_panels
from causalplay.agents.pixels import EIGPixelsAgent
from causalplay.core.rules import disjunctive
from causalplay.render import bpy_available

ROOT = Path(__file__).resolve().parents[1]
needs_bpy = pytest.mark.skipif(not bpy_available(), reason="bpy (Blender as a Python module) is not installed; "
                               "pip install 'causalplay[render]'")


def _analysis():
    return load_analysis("train_perception")


class OraclePerception:
    """Test stand-in for the CNN: reads the batch's symbolic state (the labels the frames were rendered from)."""

    def __init__(self, batch):
        self.batch = batch

    def probs(self, frames, n_objects):
        s = self.batch.symbolic
        rows = np.flatnonzero(~s.done.numpy())
        assert len(rows) == len(frames)
        k = s.current_panel().numpy()[rows]
        return (s.panels[rows, k].double(), s.lit[rows, k].double())


# -- the model and its file ------------------------------------------------------------------------------------------
def test_net_shapes_and_roundtrip(tmp_path):
    torch.manual_seed(0)
    net = PerceptionNet(width=4, hidden=8)
    model = Perception(net, {"n_objects": [9]})
    frames = torch.randint(0, 256, (3, 120, 160, 3), dtype=torch.uint8)
    on, lit = model.probs(frames, 9)
    assert on.shape == (3, 9) and lit.shape == (3,)
    p = model.save(tmp_path / "m.pt")
    back = Perception.load(p)
    on2, lit2 = back.probs(frames, 9)
    # saved in float16: readouts agree to float16 rounding of the weights
    assert torch.allclose(on, on2, atol=2e-2) and torch.allclose(lit, lit2, atol=2e-2)
    assert back.n_objects == (9,)


def test_bad_input(tmp_path):
    model = Perception(PerceptionNet(width=4, hidden=8), {"n_objects": [9]})
    with pytest.raises(ValueError, match=r"shape \(2, 60, 80, 3\)"):
        model.probs(torch.zeros(2, 60, 80, 3, dtype=torch.uint8), 9)
    with pytest.raises(ValueError, match="dtype uint8"):
        model.probs(torch.zeros(2, 120, 160, 3), 9)
    with pytest.raises(ValueError, match="not N = 6"):
        model.probs(torch.zeros(1, 120, 160, 3, dtype=torch.uint8), 6)
    with pytest.raises(ValueError, match="n_objects must be an int in 1..16"):
        model.probs(torch.zeros(1, 120, 160, 3, dtype=torch.uint8), 17)
    with pytest.raises(FileNotFoundError, match="nope.pt"):
        Perception.load(tmp_path / "nope.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a torch file")
    with pytest.raises(Exception):  # noqa: B017  (torch's own unpickling error)
        Perception.load(tmp_path / "junk.pt")
    torch.save({"x": 1}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a causalplay perception file"):
        Perception.load(tmp_path / "other.pt")
    with pytest.raises(ValueError, match="n must be an int >= 0"):
        sample_panels(-1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_objects must be a non-empty list"):
        sample_panels(2, np.random.default_rng(0), n_objects=(0,))
    with pytest.raises(ValueError, match="width must be an int >= 1"):
        PerceptionNet(width=0)
    for kw, msg in (({"sure": 0.5}, "sure must be"), ({"floor": 0.5}, "floor must be"),
                    ({"max_unsure": -1}, "max_unsure must be"), ({"perception": 3}, "perception must be")):
        with pytest.raises((ValueError, TypeError), match=msg):
            EIGPixelsAgent(**{"perception": model, **kw})


def test_sample_panels_labels_match_frames():
    frames, on, lit = sample_panels(50, np.random.default_rng(3), n_objects=(4, 9))
    for f, o, li in zip(frames, on, lit, strict=True):
        n = len(f["objects"])
        assert n in (4, 9) and f["on"] == o[:n].tolist() and not o[n:].any() and f["lit"] == bool(li)
        assert len({tuple(x) for x in f["objects"]}) == n  # distinct objects, as the envs draw them
    # on-bits and light are independent fair coins: 50 * 6.5 bits, mean within 4 sd of 1/2
    assert abs(on[:, :4].mean() - 0.5) < 4 * 0.5 / np.sqrt(200) and abs(lit.mean() - 0.5) < 4 * 0.5 / np.sqrt(50)


# -- soft evidence, by hand ------------------------------------------------------------------------------------------
def _agent_on_tiny_task(N=3):
    agent = EIGPixelsAgent(perception=Perception(PerceptionNet(4, 8), {"n_objects": [N]}))
    task = TaskInfo(N, 6, 0, (disjunctive(),))
    agent.reset(task, {"frame": torch.zeros(1, 120, 160, 3, dtype=torch.uint8), "count": torch.tensor([1])})
    return agent


def test_soft_likelihood_brute_force():
    agent = _agent_on_tiny_task()
    space = agent.post.space
    p_on = torch.tensor([0.9, 0.2, 0.9999], dtype=torch.float64)  # bits 0 and 1 unsure, bit 2 on for sure
    p_lit = torch.tensor(0.7, dtype=torch.float64)
    ll = agent._soft_ll(p_on, p_lit, 0.01)
    sets = space.sets.numpy().astype(bool)
    for h in range(space.n_hypotheses):
        s = sets[h % space.n_sets]
        want = 0.0
        for b0, b1 in itertools.product((0, 1), repeat=2):
            on = np.array([b0, b1, 1], bool)
            q = (0.9 if b0 else 0.1) * (0.2 if b1 else 0.8)
            fires = bool((on & s).any())  # disjunctive, noiseless
            want += q * (0.7 if fires else 0.3)
        assert float(ll[h].exp()) == pytest.approx(want, rel=1e-5)


def test_misread_panel_is_rebuilt_not_fatal():
    agent = _agent_on_tiny_task()
    # two confident panels that contradict a deterministic disjunctive machine: {0} lit, then {0} dark
    for lit in (1.0, 0.0):
        agent.readouts.append((torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64), torch.tensor([lit])))
        agent.post.observe_(torch.tensor([[True, False, False]]), torch.tensor([bool(lit)]), torch.tensor([True]))
    agent.count = torch.tensor([1])
    assert not torch.isfinite(agent.post.log_w).all()  # the exact learner has nothing left
    agent._rebuild([0])
    w = agent.post.log_w[0].exp()
    assert torch.isfinite(agent.post.log_w[0]).any() and float(w.sum()) == pytest.approx(1.0, abs=1e-5)
    # by hand: count 1 leaves {0}, {1}, {2}; {0} explains one panel (0.99 * 0.01), the others the other one
    sets = agent.post.space.sets
    m = (w[:, None] * sets).sum(0)
    assert float(m[0]) == pytest.approx(1 / 3, abs=1e-4) and float(m[1]) == pytest.approx(1 / 3, abs=1e-4)


# -- playing the pixel ids -------------------------------------------------------------------------------------------
@needs_bpy
@pytest.mark.parametrize("env_id", ["causalplay/IVRE-Pixels-v0", "causalplay/EST-Pixels-v1"])
def test_eig_pixels_with_perfect_perception_is_eig(env_id):
    from causalplay.envs import make_batch

    sym = make_batch(env_id.replace("-Pixels", ""), 12, seed=[5, 0])
    pix = make_batch(env_id, 12, seed=[5, 0])
    a_sym, a_pix = EIGAgent(seed=0), EIGPixelsAgent(perception=OraclePerception(pix))
    o_sym, o_pix = sym.reset(), pix.reset()
    assert o_pix["frame"].shape == (12, 120, 160, 3) and o_pix["frame"].dtype == torch.uint8
    a_sym.reset(sym.info(), o_sym)
    a_pix.reset(pix.info(), o_pix)
    while not bool(sym.done.all()):
        x, y = a_sym.act(o_sym, ~sym.done), a_pix.act(o_pix, ~pix.done)
        torch.testing.assert_close(x, y, rtol=0, atol=0)
        o_sym, *_ = sym.step(x)
        o_pix, *_ = pix.step(y)
        assert bool((o_pix["frame"][pix.done.numpy()] == 0).all())  # ended episodes are not rendered
    assert a_pix.stats["soft"] == 0 and a_pix.stats["rebuilt"] == 0
    for k, v in sym.record().items():
        np.testing.assert_array_equal(v, pix.record()[k])


@needs_bpy
def test_shipped_model_reads_fresh_frames():
    from causalplay.agents.perception import render_panels
    from causalplay.render import Renderer

    assert DEFAULT_WEIGHTS.is_file() and DEFAULT_WEIGHTS.stat().st_size <= 2 * 2**20
    model = Perception.load()
    frames, on, lit = sample_panels(24, np.random.default_rng([2024, 11]))  # streams never used in training
    with Renderer(cache_size=0) as r:
        imgs = render_panels(frames, r)
    p_on, p_lit = model.probs(imgs, 9)
    np.testing.assert_array_equal((p_on > 0.5).numpy(), on[:, :9])
    np.testing.assert_array_equal((p_lit > 0.5).numpy(), lit)


@needs_bpy
def test_bench_eig_pixels_matches_symbolic_eig():
    from causalplay.bench.runner import run_episodes

    pix = run_episodes("causalplay/IVRE-Pixels-v0", "eig-pixels", 16, seed=3)
    sym = run_episodes("causalplay/IVRE-v0", "eig", 16, seed=3)
    for col in ("solved_step", "episode_solved", "context_reward", "episode_reward", "n_blickets"):
        np.testing.assert_array_equal(pix[col].to_numpy(), sym[col].to_numpy())
    with pytest.raises(ValueError, match="pick a pixel id"):
        run_episodes("causalplay/IVRE-v0", "eig-pixels", 2, seed=0)
    with pytest.raises(ValueError, match="pick an agent that reads pixels"):
        run_episodes("causalplay/IVRE-Pixels-v0", "eig", 2, seed=0)
    from causalplay.envs import make_batch

    with pytest.raises(ValueError, match="obs_mode = 'history'"):
        make_batch("causalplay/IVRE-Pixels-v0", 1, obs_mode="history")


def test_augment_keeps_geometry_and_range():
    mod = _analysis()
    gen = torch.Generator().manual_seed(0)
    x = torch.zeros(8, 120, 160, 3, dtype=torch.uint8)
    x[:, 50:60, 70:90] = 200  # one bright block
    y = mod.augment(x, gen)
    assert y.shape == x.shape and y.dtype == torch.uint8 and not torch.equal(x, y)
    # gain in [0.7, 1.3] and shift in [-25, 25] (then a 3x3 blur that leaves the block's centre alone)
    centre = y[:, 55, 80].float()
    assert bool(((centre >= 200 * 0.7 - 25 - 1) & (centre <= 255)).all())
    far = y[:, 5, 5].float()  # background 0 -> at most the shift
    assert bool((far <= 25 + 1).all())
    cfg = mod.parse(["--no-augment"])
    assert cfg.augment is False and mod.parse([]).augment is True and mod.SMOKE.augment is False


@needs_bpy
def test_train_perception_smoke(tmp_path):
    mod = _analysis()
    cfg = mod.parse(["--smoke", "--out", str(tmp_path), "--cache-dir", str(tmp_path / "frames")])
    m = mod.run(cfg)
    out = tmp_path / cfg.name
    for f in ("model.pt", "metrics.json", "progress.csv", "errors.png", "config.json"):
        assert (out / f).is_file(), f
    # tiny model (width 8), 384 frames, 10 epochs: 64/64 held-out frames read exactly when measured (seed 0);
    # the bound leaves room for another Mesa build's pixels. Chance is 2^-10 per frame, 1/2 per bit.
    assert m["workbench"]["frame_acc"] >= 0.9, m["workbench"]["frame_acc"]
    assert m["workbench"]["bit_acc"] >= 0.98, m["workbench"]["bit_acc"]
    assert len(open(out / "progress.csv").read().splitlines()) == cfg.epochs + 1
    # the agent loads it by path
    assert isinstance(make_agent(f"eig-pixels:perception='{out / 'model.pt'}'").perception, Perception)
