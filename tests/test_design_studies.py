"""causalplay.design.studies (simulated studies, fixed design vs sequential ADO) and analyses/design_recovery.py:
recovery counted by hand on a constructed table, the smoke run's ADO designs replayed step by step through
ado.next_design, its picks recomputed from the stored marginal likelihoods, and a rerun that skips finished work."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from analysis import load_analysis

from causalplay.design import Design, ado, design_space
from causalplay.design.studies import confusion, participants_needed, recovery


def _table() -> pd.DataFrame:
    """Two models, one arm, 'random' generates 3 studies of 2 participants and 'positive' 1 study. Study evidence
    (positive, random) per participant: s0 (-1, -2), (-1, -2) -> positive; s1 (-2, -1), (-2, -1) -> random;
    s2 (-1, -1.5), (-1.5, -1.4) -> positive by the sum (-2.5 vs -2.9) after 2, positive after 1;
    positive's s0 (-1, -3), (-1, -3) -> positive."""
    ev = {("random", 0): [(-1, -2), (-1, -2)], ("random", 1): [(-2, -1), (-2, -1)],
          ("random", 2): [(-1, -1.5), (-1.5, -1.4)], ("positive", 0): [(-1, -3), (-1, -3)]}
    rows = []
    for (true, s), parts in ev.items():
        for t, (a, b) in enumerate(parts):
            rows.append({"arm": "fixed", "true": true, "study": s, "position": t, "design": "{}", "n_choices": 3,
                         "ev_positive": a, "ev_random": b})
    return pd.DataFrame(rows)


def test_recovery_counted_by_hand():
    c = recovery(_table(), [1, 2], rules=("map",)).set_index(["n", "true"])
    # n=2: random recovered in s1 only (1/3); positive 1/1; pooled 2/4
    assert (c.loc[(2, "random"), "recovered"], c.loc[(2, "random"), "studies"]) == (1, 3)
    assert c.loc[(2, "positive"), "recovered"] == 1 and c.loc[(2, "all"), "rate"] == 0.5
    # Wilson 95% interval of 2/4 by its closed form
    z, n, p = 1.959963984540054, 4, 0.5
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (
        1 + z * z / n)
    assert c.loc[(2, "all"), "lo"] == pytest.approx(centre - half, abs=1e-12)
    assert c.loc[(2, "all"), "hi"] == pytest.approx(centre + half, abs=1e-12)
    conf = confusion(_table(), "fixed", 2, "map")
    assert conf.loc["random"].tolist() == [2, 1] and conf.loc["positive"].tolist() == [1, 0]
    # needed: pooled rate per n is read off a curve; the first n from which it stays >= target
    curve = pd.DataFrame({"arm": "a", "rule": "one_se", "true": "all", "n": [1, 2, 3, 4],
                          "rate": [0.9, 0.7, 0.8, 0.85]})
    assert participants_needed(curve, 0.8) == {"a": 3.0}
    assert math.isnan(participants_needed(curve, 0.95)["a"])



def test_recovery_among_some_models_counted_by_hand():
    """A third model joins the table: 'eig' beats both in random's s0 and generates one study of its own. Among all
    three, random's s0 picks eig (-0.5 x 2); among positive and random alone the table picks as before, eig's
    study does not count."""
    t = _table()
    t["ev_eig"] = -5.0
    t.loc[(t["true"] == "random") & (t["study"] == 0), "ev_eig"] = -0.5
    eig = t[(t["true"] == "positive")].assign(true="eig", ev_eig=-0.1)
    t = pd.concat([t, eig], ignore_index=True)
    every = recovery(t, [2], rules=("map",)).set_index(["n", "true"])
    assert every.loc[(2, "random"), "recovered"] == 1 and every.loc[(2, "eig"), "recovered"] == 1
    assert every.loc[(2, "all"), "studies"] == 5
    pair = recovery(t, [2], rules=("map",), models=["positive", "random"]).set_index(["n", "true"])
    assert "eig" not in pair.index.get_level_values("true")
    # s0 of random now picks positive (-2 vs -4): random 1/3 (s1), positive 1/1, pooled 2/4 as in the two-model table
    assert (pair.loc[(2, "random"), "recovered"], pair.loc[(2, "all"), "recovered"]) == (1, 2)
    assert pair.loc[(2, "all"), "studies"] == 4
    with pytest.raises(ValueError, match=r"models must be a non-empty list of the models of rows .*'naive'"):
        recovery(t, [2], models=["positive", "naive"])
    with pytest.raises(ValueError, match="non-empty"):
        recovery(t, [2], models=[])

@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    mod = load_analysis("design_recovery")
    root = tmp_path_factory.mktemp("runs")
    cfg = mod.Config.smoke(root=str(root))
    return mod, cfg, mod.run(cfg)


def test_smoke_run_writes_its_tables(smoke):
    mod, cfg, res = smoke
    folder = res["folder"]
    rows = pd.read_csv(folder / "rows.csv")
    assert len(rows) == 4 * cfg.studies * (cfg.fixed + cfg.ado)
    for f in ("recovery.csv", "recovery.png", "summary.json", "recovery_among.csv", f"confusion_fixed_n{cfg.fixed}.csv",
              f"confusion_ado_n{cfg.ado}.csv", "settings.json"):
        assert (folder / f).exists(), f
    assert set(json.loads((folder / "summary.json").read_text())["needed_for_0.8"]) == {"one_se", "map"}
    # fixed-arm designs are the Nexiom ones; every log marginal likelihood is a log probability
    nexiom = {json.dumps(Design.nexiom(r, b).to_dict()) for r in ("conjunctive", "disjunctive")
              for b in [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]}
    assert set(rows.loc[rows["arm"] == "fixed", "design"]) <= nexiom
    ev = rows[[c for c in rows.columns if c.startswith("ev_")]].to_numpy()
    assert np.all(ev <= 0) and np.all(np.isfinite(ev))
    # the picks behind the curve, recomputed from the rows: posterior mode = largest summed evidence
    curve = pd.read_csv(folder / "recovery.csv")
    models = [c[3:] for c in rows.columns if c.startswith("ev_")]
    for arm, n in (("fixed", cfg.fixed), ("ado", cfg.ado)):
        hits = 0
        for (_, _), g in rows[(rows["arm"] == arm) & (rows["position"] < n)].groupby(["true", "study"]):
            hits += models[int(np.argmax(g[[f"ev_{m}" for m in models]].sum().to_numpy()))] == g["true"].iloc[0]
        got = curve[(curve["arm"] == arm) & (curve["n"] == n) & (curve["rule"] == "map") & (curve["true"] == "all")]
        assert int(got["recovered"].iloc[0]) == hits
    # positive vs random alone: each of their studies picks between the two (ado.pick on those columns); the other
    # models' studies counted as recovered
    among = pd.read_csv(folder / "recovery_among.csv").set_index(["arm", "n"])
    pair = ["positive", "random"]
    for arm, n in (("fixed", cfg.fixed), ("ado", cfg.ado)):
        head = rows[(rows["arm"] == arm) & (rows["position"] < n) & rows["true"].isin(pair)]
        hits = sum(ado.pick(g.sort_values("position")[[f"ev_{m}" for m in pair]].to_numpy(), None, pair) == true
                   for (true, _), g in head.groupby(["true", "study"]))
        assert among.loc[(arm, n), "recovered"] == hits and among.loc[(arm, n), "studies"] == 2 * cfg.studies
        assert among.loc[(arm, n), "if_others_recovered"] == pytest.approx((hits + 2 * cfg.studies) / (4 * cfg.studies))
    # one participant's log Bayes factor positive vs random, by arm and generating model
    pe = mod.pair_evidence(rows, "positive", "random")
    g = rows[(rows["arm"] == "ado") & (rows["true"] == "random")]
    d = (g["ev_positive"] - g["ev_random"]).to_numpy()
    assert pe.loc[("ado", "random"), "mean"] == pytest.approx(d.mean(), abs=1e-12)
    assert pe.loc[("ado", "random"), "se"] == pytest.approx(d.std(ddof=1) / math.sqrt(len(d)), abs=1e-12)
    assert pe.loc[("ado", "random"), "participants"] == cfg.studies * cfg.ado


def test_smoke_ado_designs_replay(smoke):
    """Each ADO participant's design is ado.next_design given the study's participants before them (their stored
    marginal likelihoods), from a fresh state."""
    mod, cfg, res = smoke
    rows = res["rows"]
    fits = mod.fitted(cfg, res["folder"])
    state0 = ado.start(list(fits), draws=cfg.draws, seed=cfg.seed, choices=cfg.choices)
    cands = ado.prepare(fits, design_space(4, demonstrations=1, told=(False, True))[:cfg.candidates], state0)
    models = list(fits)
    for (_, _), g in rows[rows["arm"] == "ado"].groupby(["true", "study"]):
        g = g.sort_values("position")
        state = state0
        for t, r in enumerate(g.itertuples()):
            assert json.loads(r.design) == ado.next_design(state, cands).to_dict()
            state = ado.record(state, [f"p{t}"], [[getattr(r, f"ev_{m}") for m in models]])


def test_smoke_rerun_skips_finished_jobs(smoke, caplog):
    mod, cfg, res = smoke
    before = pd.read_csv(res["folder"] / "rows.csv")
    with caplog.at_level("INFO", logger="causalplay.design.studies"):
        again = mod.run(cfg)
    assert not any(m.startswith("finished") for m in caplog.messages)
    pd.testing.assert_frame_equal(before, pd.read_csv(again["folder"] / "rows.csv"))
    other = mod.Config.smoke(root=cfg.root)
    other.studies = 3
    with pytest.raises(ValueError, match="other settings"):
        mod.run(other)


def test_smoke_subset_of_generating_models_gives_the_same_rows(smoke, tmp_path):
    """A run of one generating model gives the rows a run of all gives for it (a job's seed follows from the
    model's place among the fits), so a long run can be split across processes and joined."""
    import shutil

    mod, cfg, res = smoke
    sub = mod.Config.smoke(root=str(tmp_path))
    sub.generating = ("eig_sweep",)
    shutil.copytree(res["folder"] / "fits", tmp_path / sub.name / "fits")
    part = mod.run(sub)["rows"]
    full = pd.read_csv(res["folder"] / "rows.csv")
    full = full[full["true"] == "eig_sweep"].reset_index(drop=True)
    pd.testing.assert_frame_equal(full, part.reset_index(drop=True), check_dtype=False)


def test_smoke_reuses_another_runs_fixed_arm(smoke, tmp_path):
    """--fixed-from: a run with other ADO candidates starts from the first run's fixed arm (the same rows, its fits
    copied) and simulates only its ADO arm, on its own candidates; a run whose fixed arm would differ is refused."""
    mod, cfg, res = smoke
    other = mod.Config.smoke(root=str(tmp_path))
    other.candidates, other.fixed_from = 4, str(res["folder"])
    rows = mod.run(other)["rows"]
    first = pd.read_csv(res["folder"] / "rows.csv")
    fixed = rows[rows["arm"] == "fixed"].reset_index(drop=True)
    pd.testing.assert_frame_equal(first[first["arm"] == "fixed"].reset_index(drop=True), fixed, check_dtype=False)
    four = {json.dumps(d.to_dict()) for d in design_space(4, demonstrations=1, told=(False, True))[:4]}
    assert set(rows.loc[rows["arm"] == "ado", "design"]) <= four
    assert len(rows[rows["arm"] == "ado"]) == 4 * cfg.studies * cfg.ado
    bad = mod.Config.smoke(root=str(tmp_path / "bad"))
    bad.studies, bad.fixed_from = 3, str(res["folder"])
    with pytest.raises(ValueError, match=r"\['studies'\] differ"):
        mod.run(bad)
