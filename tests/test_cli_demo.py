import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from causalplay.cli import app

ROOT = Path(__file__).resolve().parents[1]


def test_demo_writes_results(tmp_path):
    r = CliRunner().invoke(app, ["demo", "--out", str(tmp_path), "--bench-episodes", "50"])
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "results.json").read_text())
    # Backward blocking (disjunctive, p = 1/3): B returns to its prior.
    assert abs(res["backward blocking"]["blicket_prob"][1] - 1 / 3) < 1e-12
    assert res["indirect screening-off"]["blicket_prob"] == [0.0, 1.0]
    bench = json.loads((tmp_path / "bench" / "results.json").read_text())
    assert {r["agent"] for r in bench} >= {"eig", "planner"} and all(r["episodes"] == 50 for r in bench)


def test_svi_vs_exact_smoke(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "analyses" / "svi_vs_exact.py"), "--smoke"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = json.loads((tmp_path / "runs" / "svi_vs_exact_smoke" / "results.json").read_text())
    assert rows[0]["n_objects"] == 6 and 0 <= rows[0]["blicket_mae"] <= 1
