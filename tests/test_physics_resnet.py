"""The ResNet-18 DQN (PHYRE's architecture family) in a tiny smoke run: shapes, the ranking's solved_at by hand,
the learning curve file, seeds, and bad devices / masks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from causalplay.envs.physics_templates import action_set, get_task

from causalplay.agents.physics_resnet import ResNetFilm, solved_at_of_ranking, train_curve


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
