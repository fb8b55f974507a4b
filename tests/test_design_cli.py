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
