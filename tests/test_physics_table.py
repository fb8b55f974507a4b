"""analyses/physics_table.py --smoke: the whole pipeline (tasks, outcomes, every agent through the benchmark runner,
table, figures) on a few tasks of three templates."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from analysis import load_analysis


def test_physics_table_smoke(tmp_path):
    mod = load_analysis("physics_table")
    cfg = dataclasses.replace(mod.SMOKE, runs_dir=str(tmp_path))
    summary = mod.run(cfg)
    out = tmp_path / cfg.name
    rec = pd.read_csv(out / "episodes.csv")
    assert set(rec.agent) == set(cfg.agents) and set(rec.setting) == {"within", "cross"}
    assert (rec.attempts <= 100).all() and ((rec.solved_at > 0) | (rec.attempts == 100)).all()
    assert len(rec) == len(cfg.agents) * 2 * cfg.test_tasks and (rec.fold == 0).all()
    assert len(summary) == len(cfg.agents) * 2 and summary.auccess.between(0, 100).all()
    table = (out / "table.md").read_text()
    assert all(f"| {a} |" in table for a in cfg.agents) and "56.2 ± 10.5" in table  # PHYRE's DQN-O beside ours
    for f in ("success_physics.png", "physics_templates.png", "physics_rollout.gif"):
        assert (out / f).stat().st_size > 1000
    again = mod.run(cfg)  # every shard is on disk and verifies: nothing reruns, same summary
    pd.testing.assert_frame_equal(summary, again)
    # a run with cache= scores agents on the first run's tasks and outcomes: none made in its own folder, the same
    # plays as the first run's
    other = dataclasses.replace(cfg, name="physics_smoke_cached", cache=str(out), agents=("mem",),
                                settings=("within",))
    mod.run(other)
    made = sorted(p.name for p in (tmp_path / other.name).iterdir())
    assert not [m for m in made if m.startswith(("outcomes-", "tasks", "dqn"))], made
    cols = ["fold", "setting", "key", "solved_at", "attempts", "invalid"]
    mine = pd.read_csv(tmp_path / other.name / "episodes.csv")[cols].sort_values("key").reset_index(drop=True)
    first = rec[(rec.agent == "mem") & (rec.setting == "within")][cols].sort_values("key").reset_index(drop=True)
    pd.testing.assert_frame_equal(mine, first)


def test_prepare_makes_the_outcomes_of_every_action_set_asked_for(tmp_path):
    """An agent spec's ``n_actions`` (``mem:n_actions=30``) gets its training-pool outcomes made up front, beside
    the default set's that ssup and the other agents read; each table equals the package's outcomes()."""
    from causalplay.envs.physics_templates import ACTIONS, task_keys

    from causalplay.agents.physics import outcomes

    mod = load_analysis("physics_table")
    cfg = dataclasses.replace(mod.SMOKE, runs_dir=str(tmp_path), tiers=("B-v2",), templates=(0,), n_tasks=6,
                              agents=("random", "mem:n_actions=30", "dqn:n_actions=30:steps=2:pool=None"))
    cfg = dataclasses.replace(cfg, n_tasks=8)
    mod.prepare(cfg, tmp_path, None)
    for n, tasks in ((ACTIONS, 6), (30, 8)):  # pool=None: every task, not only the first 6 of each template
        folder = tmp_path / f"outcomes-B-v2-{n}"
        assert sorted(p.name for p in folder.iterdir()) == [f"00-{i:03d}.pkl" for i in range(tasks)]
        assert outcomes("B-v2", task_keys((0,), 8), tmp_path, n_actions=n, pool=None if n == 30 else 6)[1].shape == (
            tasks, n)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("outcomes-")) == [
        "outcomes-B-v2-30", f"outcomes-B-v2-{ACTIONS}"]


def test_paired_comparison_matches_hand_values():
    """Differences 1, 2, 3, -0.5 over four folds: mean 1.375, SD 1.493 / 2 = SE 0.747, ahead on 3; the exact
    two-sided Wilcoxon p for ranks (2, 3, 4) positive and 1 negative is 2 * P(W- <= 1) = 2 * 2/16 = 0.25."""
    mod = load_analysis("physics_table")
    per = pd.DataFrame({"tier": "B-v2", "setting": "within", "fold": [0, 1, 2, 3] * 2,
                        "agent": ["x"] * 4 + ["y"] * 4, "auccess": [11.0, 22.0, 33.0, 9.0, 10.0, 20.0, 30.0, 9.5]})
    r = mod.paired(per, "x", "y").iloc[0]
    assert (r.folds, r.ahead) == (4, 3) and r["diff"] == 1.375
    assert abs(r.se - np.std([1, 2, 3, -0.5], ddof=1) / 2) < 1e-12 and abs(r.se - 0.7465) < 1e-4
    assert abs(r.p - 0.25) < 1e-12
    with pytest.raises(ValueError, match=r"pair x/z: no AUCCESS for \['z'\]"):
        mod.paired(per, "x", "z")
