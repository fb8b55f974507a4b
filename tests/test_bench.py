"""Benchmark metrics against hand-computed values; runner determinism and resuming; the CLI."""

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from causalplay.bench import (
    SerialExecutor,
    assign_split,
    auccess,
    mean_ci,
    ratio_ci,
    run_benchmark,
    run_episodes,
    stable_unit,
    success_curve,
    summarise,
    template_folds,
    wilcoxon,
    wilson_ci,
)


def test_success_curve_by_hand():
    np.testing.assert_allclose(success_curve(np.array([5, 0, 7, 1]), 10),
                               [.25, .25, .25, .25, .5, .5, .75, .75, .75, .75])


def test_auccess_by_hand():
    # Trial steps k = 1..6 are actions 5..10: s = .5, .5, .75, .75, .75, .75; w_k = log(k+1) - log(k) telescopes:
    # sum w = log 7, w1 + w2 = log 3, w3..w6 = log(7/3).
    want = (0.5 * math.log(3) + 0.75 * math.log(7 / 3)) / math.log(7)
    assert auccess(np.array([5, 0, 7, 1]), 4, 10) == pytest.approx(want, abs=1e-12)
    assert auccess(np.array([1, 2]), 4, 10) == pytest.approx(1.0)
    assert auccess(np.array([0, 0]), 4, 10) == 0.0
    with pytest.raises(ValueError, match="trial step"):
        auccess(np.array([1]), 10, 10)


def test_wilcoxon_exact_by_hand():
    # 5 positive differences: W- = 0; exact two-sided p = 2 / 2^5.
    stat, p = wilcoxon([1, 2, 3, 4, 5], [0, 0, 0, 0, 0])
    assert stat == 0 and p == pytest.approx(2 / 32)
    # differences 1, -2, 3, 4, 5: W- = 2; P(W- <= 2) = |{}, {1}, {2}| / 32, two-sided doubles it.
    stat, p = wilcoxon([1, -2, 3, 4, 5], [0, 0, 0, 0, 0])
    assert stat == 2 and p == pytest.approx(6 / 32)
    with warnings.catch_warnings():  # answered without scipy, which warns (divides by a zero SE) on no differences
        warnings.simplefilter("error")
        assert wilcoxon([1, 2], [1, 2]) == (0.0, 1.0)
    with pytest.raises(ValueError, match="paired"):
        wilcoxon([1, 2], [1])


def test_mean_ci_by_hand():
    m, h = mean_ci([1.0, 2.0, 3.0])
    # sd = 1, t(0.975, 2) = 4.302652729749464 (tables), half-width = t / sqrt(3)
    assert m == 2.0 and h == pytest.approx(4.302652729749464 / math.sqrt(3), rel=1e-9)
    assert mean_ci([4.0]) == (4.0, 0.0)


def test_wilson_ci_by_hand():
    # 3 of 4: p = 0.75; with z = 1.959964, centre (p + z^2/8) / (1 + z^2/4) = 0.627527 and half-width
    # z sqrt(p(1-p)/4 + z^2/64) / (1 + z^2/4) = 0.326885 -> (0.300642, 0.954413); tables give (0.3006, 0.9544)
    p, lo, hi = wilson_ci([1, 1, 0, 1])
    assert p == 0.75 and (lo, hi) == pytest.approx((0.300642, 0.954413), abs=2e-6)
    # 0 of 5: lower bound 0 (not negative), upper z^2 / (5 + z^2) = 0.434482
    assert wilson_ci(np.zeros(5, bool)) == pytest.approx((0.0, 0.0, 0.434482), abs=2e-6)
    assert wilson_ci([True] * 2000)[2] == 1.0  # exactly, though c + h rounds below 1 there
    assert wilson_ci([0, 0, 0])[1] == 0.0  # exactly, though c - h rounds above 0 there
    # 5 of 5 mirrors 0 of 5: lower bound 1 - 0.434482
    assert wilson_ci([1] * 5) == pytest.approx((1.0, 0.565518, 1.0), abs=2e-6)
    for bad in ([], [0.5, 1.0], [[1, 0]]):
        with pytest.raises(ValueError, match="successes"):
            wilson_ci(bad)
    for level in (0.0, 1.0, 95):
        with pytest.raises(ValueError, match=r"level must be in \(0, 1\)"):
            wilson_ci([1, 0], level=level)


def test_ratio_ci_refuses_what_it_cannot_answer():
    with pytest.raises(ValueError, match="same length"):
        ratio_ci([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="non-empty"):
        ratio_ci([], [])
    with pytest.raises(ValueError, match=r"^ratio_ci: mean\(y\) is 0"):
        ratio_ci([1.0, 2.0], [1.0, -1.0])
    r, h = ratio_ci([3.0], [2.0])
    assert r == 1.5 and math.isnan(h)
    assert math.isfinite(ratio_ci([1.0, 2.0], [1.0, 3.0])[1])  # two pairs have a covariance


def test_ratio_ci_delta_method_with_covariance_by_hand():
    # x = (1, 2, 4), y = (1, 3, 5): r = (7/3) / 3 = 7/9; var x = 7/3, var y = 4, cov = 3 (ddof 1), so
    # var(r) = (7/3 - 2 (7/9) 3 + (7/9)^2 4) / (3 * 3^2) = (7/81) / 27 = 7/2187; half-width = z sqrt(7/2187)
    r, h = ratio_ci([1, 2, 4], [1, 3, 5])
    assert r == pytest.approx(7 / 9, rel=1e-12)
    assert h == pytest.approx(1.959963984540054 * math.sqrt(7 / 2187), rel=1e-9)


def test_stable_hash_splits_by_hand():
    # SHA-256("abc") = ba7816bf 8f01cfea ... (FIPS 180-2 test vector)
    assert stable_unit("abc") == pytest.approx(0xBA7816BF8F01CFEA / 2**64, abs=0)
    assert assign_split("abc") == "train"  # 0.728 < 0.8
    assert assign_split("abc", (0.5, 0.3, 0.2)) == "dev"  # 0.5 <= 0.728 < 0.8
    assert assign_split("abc", (0.5, 0.1, 0.4)) == "test"
    with pytest.raises(ValueError, match="fractions"):
        assign_split("abc", (0.5, 0.5, 0.5))
    keys = [f"k{i}" for i in range(4000)]
    share = pd.Series([assign_split(k) for k in keys]).value_counts(normalize=True)
    assert abs(share["train"] - 0.8) < 0.03  # 4000 draws: sd 0.0063


def test_template_folds_partition():
    ts = ["disjunctive|random", "conjunctive|random", "disjunctive|acre", "conjunctive|acre", "noisy|random"]
    folds = template_folds(ts, n_folds=5)
    assert folds == template_folds(list(reversed(ts)), n_folds=5)  # order of input does not matter
    tested = []
    for f in folds.values():
        parts = f["train"] + f["dev"] + f["test"]
        assert sorted(parts) == sorted(ts) and len(set(parts)) == len(ts)
        tested += f["test"]
    assert sorted(tested) == sorted(ts)  # every template is held out exactly once


def test_metric_boundaries_and_errors_by_hand(monkeypatch):
    """The edges the tests above do not reach (found by mutation testing, docs/testing.md)."""
    import hashlib

    import causalplay.core.metrics as M

    np.testing.assert_allclose(success_curve(np.array([3]), 4), [0, 0, 1, 1])  # one episode is enough
    for bad in (np.array([]), np.ones((2, 2))):
        with pytest.raises(ValueError, match=rf"non-empty 1-d array, got shape \({bad.shape[0]},"):
            success_curve(bad, 3)
    assert auccess(np.array([5, 0]), 4, 5) == 0.5  # one trial step (K = 1) is allowed
    with pytest.raises(ValueError, match="horizon=4, n_context=4"):
        auccess(np.array([1]), 4, 4)
    # a one-sample test of `a` is not the paired test: differences -1, 2, 3, 4, 5 give W- = 1, p = 2 * 2 / 32
    stat, p = wilcoxon([1, 2, 3, 4, 5], [2, 0, 0, 0, 0])
    assert stat == 1 and p == pytest.approx(4 / 32)
    m, h = mean_ci([1.0, 3.0, 5.0])  # sd 2: half-width = t(0.975, 2) * 2 / sqrt(3)
    assert m == 3.0 and h == pytest.approx(4.302652729749464 * 2 / math.sqrt(3), rel=1e-9)
    v32 = np.array([0.1, 0.2, 0.7], dtype=np.float32)  # averaged in float64, not float32
    assert mean_ci(v32)[0] == pytest.approx(sum(float(x) for x in v32) / 3, rel=0, abs=1e-15)
    with pytest.raises(ValueError, match="^mean_ci needs at least one value$"):
        mean_ci([])
    with pytest.raises(TypeError, match="key must be a str, got 3"):
        M.stable_unit(3)
    assert assign_split("abc", (0.8, 0.2, 0.0)) == "train"  # a zero fraction is allowed
    for bad in ((0.5, 0.5), (1.2, -0.1, -0.1)):
        with pytest.raises(ValueError, match="fractions must be three numbers"):
            assign_split("abc", bad)
    monkeypatch.setattr(M, "stable_unit", lambda key: 0.8)  # on a boundary: [0, 0.8) is train, [0.8, 0.9) dev
    assert M.assign_split("x") == "dev"
    monkeypatch.setattr(M, "stable_unit", lambda key: 1.0 - 1e-12)  # fractions summing to 1 - 1e-10 (accepted)
    assert M.assign_split("x", (0.5, 0.3, 0.2 - 1e-10)) == "test"
    monkeypatch.undo()
    # template folds: ranked by the first 8 bytes of sha256 (computed here with hashlib), default 5 folds,
    # 2 templates are enough, more templates than folds put several in one test fold, dev is one template
    ts = [f"t{i}" for i in range(7)]
    rank = sorted(ts, key=lambda t: int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big"))
    folds = template_folds(ts, n_folds=3)
    assert [f["test"] for f in folds.values()] == [rank[0::3], rank[1::3], rank[2::3]]
    assert all(len(f["dev"]) == 1 and f["dev"] == [t for t in rank if t not in f["test"]][:1] for f in folds.values())
    assert len(template_folds(ts)) == 5
    two = template_folds(["a", "b"], n_folds=2)
    assert sorted(two[0]["test"] + two[1]["test"]) == ["a", "b"]
    with pytest.raises(ValueError, match=r"at least 2 templates, got \['a'\]"):
        template_folds(["a", "a"])


def test_run_episodes_is_deterministic():
    a = run_episodes("causalplay/IVRE-v0", "search-naive", 50, seed=3, shard=1)
    b = run_episodes("causalplay/IVRE-v0", "search-naive", 50, seed=3, shard=1)
    cols = [c for c in a.columns if c != "seconds"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    assert (a["context_reward"] >= a["episode_reward"] - 20 * a["episode_solved"]).all()


def test_run_benchmark_resumes_and_summarises(tmp_path):
    df = run_benchmark(["causalplay/IVRE-v0"], ["random", "eig"], 60, [0, 1], tmp_path, shard_size=30,
                       executor=SerialExecutor(), progress=False)
    assert len(df) == 2 * 2 * 60
    shards = sorted((tmp_path / "shards").glob("*.csv"))
    assert len(shards) == 8
    mtimes = [p.stat().st_mtime_ns for p in shards]
    df2 = run_benchmark(["causalplay/IVRE-v0"], ["random", "eig"], 60, [0, 1], tmp_path, shard_size=30,
                        executor=SerialExecutor(), progress=False)
    assert [p.stat().st_mtime_ns for p in shards] == mtimes  # nothing re-run
    pd.testing.assert_frame_equal(df, df2)
    # Fewer episodes in the same folder: only shards of exactly that plan count.
    df3 = run_benchmark(["causalplay/IVRE-v0"], ["random"], 20, [0], tmp_path, shard_size=30,
                        executor=SerialExecutor(), progress=False)
    assert len(df3) == 20
    rows = summarise(df)
    assert {r["agent"] for r in rows} == {"random", "eig"} and len(rows) == 4
    assert set(rows[0]) >= {"env", "agent", "seed", "episodes", "context_acc", "context_reward", "episode_acc",
                            "episode_reward", "auccess"}


def test_cli_bench(tmp_path):
    from causalplay.cli import app

    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["bench", "--agents", "naive,eig", "--episodes", "40", "--seeds", "2",
                                   "--executor", "serial", "--out", str(out), "--shard-size", "20"])
    assert res.exit_code == 0, res.output
    assert "naive" in res.output and "eig" in res.output and "Wilcoxon" not in res.output  # no planner: no test
    rows = json.loads((out / "results.json").read_text())
    assert len(rows) == 4 and {r["seed"] for r in rows} == {0, 1}
    assert (out / "episodes.csv").exists() and list(out.glob("success_*.png")) and list(out.glob("rewards_*.png"))
    bad = CliRunner().invoke(app, ["bench", "--agents", "oracle", "--episodes", "2", "--out", str(out)])
    assert bad.exit_code != 0


def test_cli_bench_refuses_pixel_and_symbolic_mixups_before_any_work(tmp_path):
    from causalplay.cli import app

    cli = CliRunner(env={"COLUMNS": "400"})  # rich wraps error boxes to the terminal width
    for env, agent, why in (("causalplay/IVRE-Pixels-v0", "eig", "it is a pixel env"),
                            ("causalplay/IVRE-v0", "eig-pixels", "that agent reads rendered panels")):
        res = cli.invoke(app, ["bench", "--env", env, "--agents", agent, "--episodes", "2", "--seeds", "1",
                               "--executor", "serial", "--out", str(tmp_path / "x")])
        assert res.exit_code == 2 and f"agent '{agent}' cannot play {env}: {why}" in res.output, res.output
        assert not (tmp_path / "x").exists()


def test_eig_learner_plays_nexiom_like_people():
    from causalplay.bench.nexiom import compare_nexiom, run_nexiom

    df = run_nexiom(200, seed=0)
    # 2 of 4 blickets, deterministic machine: the exact learner identifies set and rule every time and never
    # needs the whole budget (C(4,2) x 2 = 12 hypotheses: at most 11 informative tests).
    assert df["blickets_correct"].all() and df["rule_correct"].all()
    assert df["n_tests"].between(1, 11).all()
    table = compare_nexiom(50, seed=1)
    assert set(table["who"]) == {"people", "eig"} and set(table["rule"]) == {"conjunctive", "disjunctive"}
    people = table[table.who == "people"].set_index("rule")
    assert people.loc["disjunctive", "n"] == 38 and people.loc["conjunctive", "n"] == 40  # the data's sizes
