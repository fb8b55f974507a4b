"""The ResNet-18 DQN (PHYRE's architecture family) in a tiny smoke run: shapes, the ranking's solved_at by hand,
the learning curve file, seeds, and bad devices / masks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from causalplay.envs.physics_templates import action_set, get_task

from causalplay.agents.physics_resnet import ResNetFilm, balanced_batch, solved_at_of_ranking, train_curve


def test_solved_at_counts_valid_attempts_only():
    outcome = np.array([-1, 0, 1, -1, 0, 1])
    # order 0, 3, 1, 2: invalid, invalid, fail (attempt 1), solve (attempt 2)
    assert solved_at_of_ranking(np.array([0, 3, 1, 2, 4, 5]), outcome) == 2
    assert solved_at_of_ranking(np.array([1, 4, 0, 3, 2, 5]), outcome, budget=2) == 0  # both attempts fail
    assert solved_at_of_ranking(np.array([5, 0, 1, 2, 3, 4]), outcome) == 1


def test_resnet_shapes_and_trunk_head_split():
    torch.manual_seed(0)
    net = ResNetFilm(m=2, width=4).eval()
    img, act = torch.rand(3, 7, 32, 32), torch.rand(3, 6)
    assert net(img, act).shape == (3,)
    assert torch.allclose(net.head(net.trunk(img), act), net(img, act))
    assert sum(p.numel() for p in ResNetFilm(1, 64).parameters()) > 11_000_000  # ResNet-18's size at width 64
    with pytest.raises(ValueError, match="width"):
        ResNetFilm(1, 0)


def test_train_curve_smoke(tmp_path):
    import torch

    torch.backends.mkldnn.enabled = False  # two runs compared exactly; oneDNN convolutions differ run to run here
    tasks = [get_task("B", k) for k in ("00:000", "00:001", "02:000", "02:001")]
    acts = action_set("B", 40)
    outcomes = np.random.default_rng(0).choice([-1, 0, 1], size=(4, 40), p=[0.2, 0.6, 0.2]).astype(np.int8)
    held = np.array([False, True, False, True])
    kw = dict(m=1, steps=4, batch=8, res=32, width=4, eval_every=2)
    train_curve([t.scene for t in tasks], outcomes, acts, held, tmp_path / "a", **kw)
    curve = pd.read_csv(tmp_path / "a" / "curve.csv")
    assert curve.batches.tolist() == [2, 4] and curve.attempts.tolist() == [16, 32]
    assert curve.auccess.between(0, 100).all() and np.isfinite(curve.loss).all()
    train_curve([t.scene for t in tasks], outcomes, acts, held, tmp_path / "b", **kw)
    assert pd.read_csv(tmp_path / "b" / "curve.csv").equals(curve)  # same seed, same curve
    with pytest.raises(ValueError, match="held_out"):
        train_curve([t.scene for t in tasks], outcomes, acts, np.zeros(4, bool), tmp_path / "c", **kw)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA"):
            train_curve([t.scene for t in tasks], outcomes, acts, held, tmp_path / "d", device="cuda", **kw)


def test_mem_reference_line_of_the_learning_curve_by_hand():
    """analyses/physics_dqn_resnet.py's MEM line: per-template success rates on the training tasks, stable order.
    Template 0 ranks actions 2, 0, 3, 1 (rates 1, .5, .5, 0) and its held-out task solves at the second valid
    attempt (action 0 is invalid there); template 1 ranks 1, 3, 0, 2 and solves at the third. AUCCESS with PHYRE's
    weights w_k = log(k + 1) - log(k), k = 1..100: (0.5 (log 3 - log 2) + (log 101 - log 3)) / log 101."""
    import math

    from analysis import load_analysis

    mod = load_analysis("physics_dqn_resnet")
    o = np.array([[1, 0, 1, -1], [0, 0, 1, 1], [-1, 0, 0, 1],
                  [0, 1, 0, 0], [0, 1, 0, 1], [1, 0, 0, 0]], dtype=np.int8)
    templates, held = np.array([0, 0, 0, 1, 1, 1]), np.array([False, False, True, False, False, True])
    want = 100 * (0.5 * (math.log(3) - math.log(2)) + (math.log(101) - math.log(3))) / math.log(101)
    assert mod.mem_auccess(o, templates, held) == pytest.approx(want, abs=1e-9)
    assert want == pytest.approx(80.588, abs=1e-3)


def test_balanced_batch_draws_solving_rows_then_failing_rows():
    """Three rows from ``pos`` (indices: the generator's first draw) then two from ``neg`` (its second); with one
    failing row both of those are it. Asking for rows of an empty side is refused by name."""
    pos, neg = np.array([[0, 1], [2, 3], [4, 5]]), np.array([[6, 7]])
    got = balanced_batch(np.random.default_rng(5), pos, neg, 3, 2)
    gen = np.random.default_rng(5)
    first = gen.integers(0, 3, 3)
    assert got.tolist() == pos[first].tolist() + [[6, 7], [6, 7]]
    assert balanced_batch(np.random.default_rng(5), pos, neg[:0], 3, 0).tolist() == pos[first].tolist()
    with pytest.raises(ValueError, match="asked for 2 failing attempts, but there are none"):
        balanced_batch(np.random.default_rng(5), pos, neg[:0], 3, 2)
    with pytest.raises(ValueError, match="asked for 1 solving attempts, but there are none"):
        balanced_batch(np.random.default_rng(5), pos[:0], neg, 1, 1)
