"""``causalplay fit-cv``, ``fit-recovery`` and ``fit-ppc``: the installed commands for what the fitting guide runs
(cross-validation, model recovery, posterior predictive checks), and the statistics of the check by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from typer.testing import CliRunner

from causalplay.cli import app
from causalplay.data import example_folder, load_trials
from causalplay.fitting import SVIOptions
from causalplay.fitting.ppc import statistics
from causalplay.fitting.workflows import crossval

runner = CliRunner(env={"COLUMNS": "300", "TERMINAL_WIDTH": "300"})


def test_statistics_of_the_example_folder_by_hand():
    # own (chosen) tests of S01..S06, demonstrations left out (S04 and S05 watched two each):
    # first own tests (0), (0 1), (0 1), (0), (2), (0 1 2 3); own tests per person 5, 6, 5, 4, 2, 4
    s = statistics(load_trials(example_folder()), rho=0.0)
    assert s["first_has_0"] == pytest.approx(5 / 6)
    assert s["first_single"] == pytest.approx(3 / 6) and s["first_pair"] == pytest.approx(2 / 6)
    assert s["size_t1"] == pytest.approx((1 + 2 + 2 + 1 + 1 + 4) / 6)
    assert s["mean_tests"] == pytest.approx(26 / 6) and s["median_tests"] == 4.5
    assert s["tests_eq_4"] == pytest.approx(2 / 6) and s["tests_eq_2"] == pytest.approx(1 / 6)
    # judgements: disjunctive S01, S03 (no rule given), S05 all blickets right; conjunctive S06 judged 0 1 2 for 0 1
    # and S04 said disjunctive
    assert s["blickets_correct_disjunctive"] == 1.0 and s["rule_correct_disjunctive"] == pytest.approx(2 / 3)
    assert s["blickets_correct_conjunctive"] == pytest.approx(2 / 3)
    assert s["rule_correct_conjunctive"] == pytest.approx(2 / 3)
    assert 0.0 <= s["top_eig_share"] <= 1.0


def test_fit_cv_is_crossval(tmp_path):
    ex = example_folder()
    r = runner.invoke(app, ["fit-cv", "--data", str(ex), "--models", "random,eig_sweep", "--folds", "2",
                            "--steps", "40", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    table = pd.read_csv(tmp_path / "crossval.csv")
    ref = crossval(load_trials(ex), ["random", "eig_sweep"], folds=2, svi=SVIOptions(steps=40), verbose=False).table
    pd.testing.assert_frame_equal(table, ref.reset_index(drop=True), check_exact=False, rtol=1e-9)
    assert set(table["n_participants"]) == {6} and set(table["n_choices"]) == {32}  # 26 tests + 6 stops
    assert "6 participants, 32 choices, 2 folds" in r.output
    assert len(pd.read_csv(tmp_path / "crossval_participants.csv")) == 2 * 6
    r = runner.invoke(app, ["fit-cv", "--data", str(ex), "--folds", "4"])
    assert r.exit_code == 2 and "6 participants must be an integer >= 8 with folds=4" in " ".join(r.output.split())


def test_fit_recovery_writes_the_confusion_tables(tmp_path):
    r = runner.invoke(app, ["fit-recovery", "--data", str(example_folder()), "--models", "random", "--datasets",
                            "1", "--participants", "8", "--steps", "30", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    conf = pd.read_csv(tmp_path / "confusion_1se.csv", index_col=0)
    assert conf.to_dict() == {"random": {"random": 1}}  # one model, one data set: it picks itself
    assert "recovered: random 1.00" in r.output
    for name in ("model_recovery.csv", "confusion.csv", "inversion.csv", "inversion_1se.csv"):
        assert (tmp_path / name).exists(), name
    r = runner.invoke(app, ["fit-recovery", "--data", str(example_folder()), "--participants", "3"])
    assert r.exit_code == 2 and "data sets of 3 participants must be an integer >= 8" in " ".join(r.output.split())


def test_fit_ppc_of_a_saved_fit(tmp_path):
    ex = example_folder()
    r = runner.invoke(app, ["fit", "--data", str(ex), "--models", "random", "--steps", "40", "--held-out", "0",
                            "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["fit-ppc", "--fit", str(tmp_path / "fits" / "random.nc"), "--data", str(ex),
                            "--replicas", "2", "--out", str(tmp_path / "ppc.csv")])
    assert r.exit_code == 0, r.output
    t = pd.read_csv(tmp_path / "ppc.csv", index_col=0)
    assert t.loc["first_has_0", "people"] == pytest.approx(5 / 6)
    assert t.loc["mean_tests", "people"] == pytest.approx(26 / 6)
    t = t.dropna()  # a statistic no replica has (a 9th test) is NaN
    assert len(t) >= 8 and (t["q5"] <= t["model"] + 1e-12).all() and (t["model"] <= t["q95"] + 1e-12).all()
    assert not math.isnan(t.loc["mean_tests", "model"])


def test_workflow_progress_goes_to_logging_not_stdout(capsys, caplog, monkeypatch):
    """crossval/model_recovery progress: stderr when nobody configured logging, the logger when someone did,
    never stdout (a library must not print into its caller's output)."""
    import logging

    from causalplay.fitting import workflows

    with monkeypatch.context() as m:  # pytest's own log capture is a handler: cut it off to see "unconfigured"
        m.setattr(workflows.log, "propagate", False)
        workflows._log("[crossval] fold 1/2 eig: 1.0 nats/choice", True)
        workflows._log("[crossval] quiet", False)
    out, err = capsys.readouterr()
    assert out == "" and err == "[crossval] fold 1/2 eig: 1.0 nats/choice\n"
    with caplog.at_level(logging.INFO, logger=workflows.log.name):
        workflows._log("[models] random #0: picked random", True)
    assert [r.getMessage() for r in caplog.records] == ["[models] random #0: picked random"]
    assert capsys.readouterr() == ("", "")


def test_paired_se_by_hand():
    """sqrt(P) * sd(d): d = (1, 3) has sd sqrt(2), so the SE of their sum is sqrt(2) * sqrt(2) = 2; one participant
    has no spread to estimate."""
    import math

    import numpy as np

    from causalplay.fitting.scoring import paired_se

    assert paired_se(np.array([1.0, 3.0])) == pytest.approx(2.0, rel=1e-15)
    assert paired_se(np.array([0.5, 0.5, 0.5])) == 0.0
    assert math.isnan(paired_se(np.array([1.0])))
