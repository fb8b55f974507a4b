"""The analysis script runs end to end in its smoke setting and writes its tables and figures."""

import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_nexiom_fit_smoke(tmp_path):
    spec = importlib.util.spec_from_file_location("nexiom_fit", ROOT / "analyses" / "nexiom_fit.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["nexiom_fit"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    res = mod.run(replace(mod.SMOKE, out_root=str(tmp_path)))
    out = tmp_path / "smoke"
    for name in ("config.json", "heldout.csv", "loo.csv", "heldout.png", "nuts_summary.csv",
                 "nuts_diagnostics.json", "ppc_n_tests.png", "ppc_set_size.png", "ppc_accuracy.png",
                 "eig_rank.png", "results.json"):
        assert (out / name).is_file(), name
    assert json.loads((out / "results.json").read_text())["n_participants"] == 12
    assert {r["model"] for r in res["heldout"]} == {"random", "eig_softmax"}
