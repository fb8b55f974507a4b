"""Tutorial 2 (``docs/tutorials/02-your-lab-data.ipynb``) runs top to bottom in a fresh kernel and prints the
comparison table with its verdict (about 2 minutes on an idle 2-core machine; the time is printed, not asserted, as
it depends on the machine's load)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "tutorials" / "02-your-lab-data.ipynb"


@pytest.mark.slow
def test_tutorial_2_runs_and_prints_the_comparison(tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="the dev extra's nbformat/nbclient run the tutorials")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    t0 = time.perf_counter()
    nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    print(f"tutorial 2 ran in {time.perf_counter() - t0:.0f} s")

    def text(cell) -> str:
        return "".join(o.get("text", "") + "".join(o.get("data", {}).get("text/plain", ""))
                       for o in cell.get("outputs", []))

    printed = [text(c) for c in nb.cells if c.cell_type == "code"]
    table = next(t for t in printed if "held-out" in t and "elpd_loo" in t)
    lines = table.strip().splitlines()
    assert lines[0].split()[:2] == ["held-out", "vs"]
    assert {ln.split()[0] for ln in lines[2:5]} == {"eig_sweep_single", "eig_sweep", "random"}
    assert "paired SE" in lines[5]  # the verdict
    assert any("valid" in t and "demonstrations" in t for t in printed)  # check_data's summary
    assert not any(o.get("output_type") == "error" for c in nb.cells for o in c.get("outputs", []))
