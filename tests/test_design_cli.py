"""``causalplay design``: ranks a stated space of designs by utility, writes the table and the plot."""

from __future__ import annotations

import pandas as pd
from typer.testing import CliRunner

from causalplay.cli import app
from causalplay.data import example_folder


def test_design_command_ranks_and_writes(tmp_path):
    r = CliRunner().invoke(app, ["design", "--data", str(example_folder()), "--models", "random,positive",
                                 "--demonstrations", "1", "--told", "no", "--rules", "disjunctive", "--steps", "10",
                                 "--draws", "5", "--top", "3", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    t = pd.read_csv(tmp_path / "designs.csv")
    assert len(t) == 6 * 16  # 6 blicket pairs x (no demonstration + 15 single ones)
    assert t["nats"].is_monotonic_decreasing and (t["nats"] >= 0).all()
    assert (tmp_path / "designs.png").stat().st_size > 1000
    assert "96 candidate designs" in r.output


def test_design_command_bad_options(tmp_path):
    r = CliRunner().invoke(app, ["design", "--told", "maybe", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "--told" in r.output
    r = CliRunner().invoke(app, ["design", "--rules", "sometimes", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "unknown rule 'sometimes'" in r.output
    r = CliRunner().invoke(app, ["design", "--blickets", "two", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "--blickets" in r.output


def test_design_simulate_writes_recovery(tmp_path):
    """--simulate: every (arm, generating model) job ran (serial, then the same settings again on a process pool:
    resumed, nothing rerun), the curves are read at both arms' participant counts."""
    args = ["design", "--data", str(example_folder()), "--models", "random,positive", "--demonstrations", "1",
            "--told", "no", "--rules", "disjunctive", "--blickets", "1", "--steps", "10", "--draws", "5",
            "--out", str(tmp_path), "--simulate", "--studies", "2", "--participants", "4", "--ado-participants", "2"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    rows = pd.read_csv(tmp_path / "rows.csv")
    assert len(rows) == 2 * 2 * (4 + 2)
    assert set(zip(rows["arm"], rows["true"], strict=True)) == {(a, m) for a in ("fixed", "ado")
                                                                 for m in ("random", "positive")}
    curve = pd.read_csv(tmp_path / "recovery.csv")
    assert set(curve.loc[curve["arm"] == "ado", "n"]) == {1, 2, 3} - {3}
    assert 4 in set(curve.loc[curve["arm"] == "fixed", "n"])
    assert "participants for recovery >= 0.8 (one_se)" in r.output and (tmp_path / "recovery.png").exists()
    r = CliRunner().invoke(app, [*args, "--executor", "process", "--workers", "2"])
    assert r.exit_code == 0, r.output
    pd.testing.assert_frame_equal(rows, pd.read_csv(tmp_path / "rows.csv"))
    r = CliRunner().invoke(app, [*args, "--executor", "sometimes"])
    assert r.exit_code == 2 and "executor must be one of" in " ".join(r.output.replace("│", " ").split()), r.output
