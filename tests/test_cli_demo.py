import json
import subprocess
import sys
from pathlib import Path

import brute
import numpy as np
import pytest
from analysis import load_analysis
from typer.testing import CliRunner

from causalplay.cli import app

ROOT = Path(__file__).resolve().parents[1]


def test_demo_writes_results(tmp_path):
    r = CliRunner().invoke(app, ["demo", "--out", str(tmp_path), "--bench-episodes", "50"])
    assert r.exit_code == 0, r.output
    assert "backward blocking: AB lit; A lit" in r.output  # each scenario shows its evidence
    assert "Wilcoxon" not in r.output and "p=" not in r.output  # no test statistic from a couple of seeds
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
    row = rows[0]
    assert row["n_objects"] == 6 and row["episodes"] == 2
    # The exact marginals it compared against = brute-force enumeration (tests/brute.py, no causalplay code) of
    # the same seeded episodes; the reported MAE is the mean |SVI - exact| of the stored per-episode values.
    mod = load_analysis("svi_vs_exact")
    cfg = mod.SMOKE
    hs = mod.episodes(6, cfg, np.random.default_rng(cfg.seed))
    rules = ["disjunctive", "conjunctive"]
    for h, got in zip(hs, row["exact_blicket_probs"], strict=True):
        pairs = [(tuple(np.flatnonzero(t)), bool(lit)) for t, lit in zip(h.trials, h.lit, strict=True)]
        want, _ = brute.marginals(brute.posterior(pairs, 6, rules, p=cfg.blicket_prior, noise=cfg.noise), 6, rules)
        np.testing.assert_allclose(got, want, atol=1e-9)
    err = np.abs(np.asarray(row["svi_blicket_probs"]) - np.asarray(row["exact_blicket_probs"]))
    assert row["blicket_mae"] == pytest.approx(err.mean(), abs=1e-12)
    assert row["blicket_max"] == pytest.approx(err.max(), abs=1e-12)
