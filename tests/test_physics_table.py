"""analyses/physics_table.py --smoke: the whole pipeline (tasks, outcomes, every agent through the benchmark runner,
table, figures) on a few tasks of three templates."""

from __future__ import annotations

import dataclasses

import pandas as pd
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
