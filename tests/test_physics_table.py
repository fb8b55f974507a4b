"""analyses/physics_table.py --smoke: the whole pipeline (tasks, outcomes, every agent through the benchmark runner,
table, figures) on a few tasks of three templates."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from analysis import load_analysis

from causalplay.bench.physics import fold_tasks


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
    # the dev stage (tuning): trained on train alone, the dev split played, tuned.md names the best spec by mean
    dev = dataclasses.replace(other, name="physics_smoke_dev", stage="dev", agents=("random", "mem"))
    mod.run(dev)
    rec = pd.read_csv(tmp_path / dev.name / "episodes.csv")
    played = fold_tasks("B-v2", 0, "within", cfg.templates, cfg.n_tasks, "dev")[1]
    assert sorted(set(rec.key)) == sorted(played[:cfg.test_tasks])
    best = pd.read_csv(tmp_path / dev.name / "tuned.csv").iloc[0]
    auc = pd.read_csv(tmp_path / dev.name / "summary.csv").set_index("agent").auccess
    assert best.best == auc.idxmax() and best.auccess == auc.max()
    assert f"B-v2 within: `{best.best}` ({best.auccess:.1f}" in (tmp_path / dev.name / "tuned.md").read_text()
    with pytest.raises(ValueError, match="stage must be one of"):
        mod.run(dataclasses.replace(dev, stage="val"))


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


def test_tuned_picks_the_best_mean_and_gives_ties_to_the_spec_listed_first():
    """Three folds: a = (10, 20, 30) and b = (12, 21, 27) both average 20, c = (5, 5, 5). The tie goes to whichever
    of a and b is listed first; a's lead over b is (-2, -1, 3): mean 0, SE sd / sqrt(3) = 2.6458 / 1.7321 = 1.5275.
    Means that differ only by float rounding (0.1, 0.2, 0.3 summed in two orders) count as a tie too."""
    mod = load_analysis("physics_table")
    per = pd.DataFrame({"tier": "B-v2", "setting": "within", "fold": [0, 1, 2] * 3, "agent": list("aaabbbccc"),
                        "auccess": [10.0, 20.0, 30.0, 12.0, 21.0, 27.0, 5.0, 5.0, 5.0]})
    r = mod.tuned(per, ["a", "b", "c"]).iloc[0]
    assert (r.best, r.second, r.folds) == ("a", "b", 3) and r.auccess == 20.0 and abs(r.se - 10 / np.sqrt(3)) < 1e-12
    assert abs(r.lead) < 1e-12 and abs(r.lead_se - 1.5275) < 1e-4
    assert mod.tuned(per, ["c", "b", "a"]).iloc[0][["best", "second"]].tolist() == ["b", "a"]
    noisy = pd.DataFrame({"tier": "B-v2", "setting": "within", "fold": [0, 1, 2] * 2, "agent": list("xxxyyy"),
                          "auccess": [0.1, 0.2, 0.3, 0.3, 0.2, 0.1]})
    means = noisy.pivot(index="fold", columns="agent", values="auccess").mean()  # as tuned() averages
    assert means.x != means.y  # they differ in the last bit
    for order in (["x", "y"], ["y", "x"]):
        assert mod.tuned(noisy, order).iloc[0].best == order[0]


def test_positions_bin_each_fold_sequence_in_key_order():
    """Fold 0 plays 00:001, 00:002, 00:003 (key order, whatever the rows' order) solved at attempt 4, 11 and never;
    fold 1 plays 01:000 and 01:005 solved at 10 and 1. success@10 by position, bins (1, 2): task 1 solved within 10
    on both folds (100%), task 2 on fold 1 only (50%), task 3 never (0%, one task)."""
    mod = load_analysis("physics_table")
    rec = pd.DataFrame({"env": "causalplay/PhysicsB-v2", "setting": "within", "agent": "a", "fold": [0, 0, 0, 1, 1],
                        "key": ["00:003", "00:001", "00:002", "01:005", "01:000"], "solved_at": [0, 4, 11, 1, 10]})
    got = mod.positions(rec, edges=(1, 2))
    assert got.positions.astype(str).tolist() == ["1", "2", "3+"]
    assert got.tasks.tolist() == [2, 2, 1] and got.success10.tolist() == [100.0, 50.0, 0.0]
    assert set(got.tier) == {"B-v2"}
