"""``causalplay check-data`` and ``causalplay fit``: the summary and exit codes of check-data, and a fit command
whose comparison table is the API's (``causalplay.fit`` + ``compare`` with the same split and seeds)."""

from __future__ import annotations

import re
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import causalplay
from causalplay.cli import app
from causalplay.data import check_data, example_folder, load_trials
from causalplay.fitting import SVIOptions, compare, load_fit

runner = CliRunner(env={"COLUMNS": "300", "TERMINAL_WIDTH": "300"})  # usage errors on one line, unwrapped


def _flat(text: str) -> str:
    """Output with rich's error-box borders and line breaks folded into single spaces."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_check_data_prints_the_summary_and_exits_1_when_the_data_do_not_load(tmp_path):
    r = runner.invoke(app, ["check-data", str(example_folder())])
    assert r.exit_code == 0, r.output
    assert r.output.strip() == str(check_data(example_folder())).strip()
    bad = shutil.copytree(example_folder(), tmp_path / "bad")
    text = (bad / "participants.csv").read_text().replace(",disjunctive,0 2,", ",sideways,0 2,", 1)
    (bad / "participants.csv").write_text(text)
    r = runner.invoke(app, ["check-data", str(bad)])
    assert r.exit_code == 1 and "sideways" in r.output and "1 problem" in r.output
    r = runner.invoke(app, ["check-data", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "does not exist" in _flat(r.output)


def test_fit_writes_the_apis_comparison_its_plot_and_the_fits(tmp_path):
    out = tmp_path / "out"
    r = runner.invoke(app, ["fit", "--data", str(example_folder()), "--models", "eig_sweep,random", "--method", "svi",
                            "--steps", "40", "--out", str(out)])
    assert r.exit_code == 0, r.output
    table = pd.read_csv(out / "compare.csv", index_col="model")
    assert (out / "compare.png").stat().st_size > 0
    # the same comparison through the API: a quarter held out (seed 0), every fit seeded 0
    data = load_trials(example_folder())
    fit_data, held = data.split(0.25, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = {m: causalplay.fit(fit_data, m, method="svi", svi=SVIOptions(steps=40), seed=0)
                for m in ("eig_sweep", "random")}
        want = compare(fits, held)
    assert list(table.index) == list(want.index)
    num = want.select_dtypes("number").columns
    np.testing.assert_allclose(table[num].to_numpy(float), want[num].to_numpy(float), rtol=1e-9)
    assert str(want) in r.output  # the printed table and its verdict
    # the saved fits rebuild the fits
    again = load_fit(out / "fits" / "eig_sweep.nc", fit_data)
    np.testing.assert_array_equal(again.raw["beta_mu"].numpy(), fits["eig_sweep"].raw["beta_mu"].numpy())
    # with the held-out participants' predictions, the same as the API's
    want_pred = fits["eig_sweep"].predict(held, seed=0).predictions
    np.testing.assert_array_equal(again.idata.predictions["choice"].values, want_pred["choice"].values)
    assert list(again.idata.predictions["participant"].values) == held.ids


@pytest.mark.parametrize("args, says", [
    (["--models", "eig_sideways"], "unknown choice model 'eig_sideways'"),
    (["--models", "random,random"], "named twice"),
    (["--method", "mcmc"], "must be svi or nuts"),
    (["--held-out", "2"], "--held-out"),
    (["--steps", "0"], "--steps"),
])
def test_fit_usage_errors_exit_2_naming_the_option(tmp_path, args, says):
    r = runner.invoke(app, ["fit", "--data", str(example_folder()), "--out", str(tmp_path), *args])
    assert r.exit_code == 2 and says in _flat(r.output), r.output
    assert not (tmp_path / "compare.csv").exists()
