"""The analysis script and the workflows it runs (causalplay.fitting.workflows): ``--help`` works, ``--data FOLDER``
runs every stage on a tiny folder in the schema (smoke settings) and writes its tables and figures, a 5-participant
pilot skips the stages that need more participants and says why, and bad folders fail with a message naming the
problem."""

import json
import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from analysis import load_analysis

from causalplay.data import load_nexiom
from causalplay.fitting import workflows as W

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def script():
    return load_analysis("nexiom_fit")


def _write_folder(data, folder: Path) -> Path:
    folder.mkdir()
    p = data.participants.copy()
    for c in ("true_blickets", "judged_blickets"):
        p[c] = p[c].map(lambda x: " ".join(map(str, x)))
    p["n_objects"] = data.n_objects  # the schema needs the number of objects (it is never guessed)
    p[["participant", "n_objects", "rule", "true_blickets", "judged_blickets", "rule_choice", "n_tests"]].to_csv(
        folder / "participants.csv", index=False)
    t = data.tests.copy()
    t["objects_on"] = t["objects_on"].map(lambda x: " ".join(map(str, x)))
    t[["participant", "test", "objects_on", "lit"]].to_csv(folder / "tests.csv", index=False)
    return folder


def test_help(script, capsys):
    with pytest.raises(SystemExit) as e:
        script.main(["--help"])
    assert e.value.code == 0
    assert "--data" in capsys.readouterr().out


def test_all_stages_on_a_tiny_data_folder(script, tmp_path, capsys, caplog):
    d = load_nexiom()
    folder = _write_folder(d.subset(d.ids[:12]), tmp_path / "mylab")
    script.main(["--smoke", "--data", str(folder), "--out", str(tmp_path / "out")])
    out = tmp_path / "out" / "smoke"
    for name in ("config.json", "prior_predictive.png", "compare.csv", "heldout.png", "judgements.csv",
                 "nuts_summary.csv", "nuts_diagnostics.json", "participants.csv", "idata.nc", "rank.png",
                 "forest.png", "ppc.png", "pareto_k.png", "ppc.json", "ppc_first_test.png", "ppc_set_size.png",
                 "ppc_n_tests.png", "ppc_accuracy.png", "ppc_top_eig.png", "recovery_participant.csv",
                 "recovery_group.csv", "confusion.csv", "confusion_1se.csv", "inversion.csv", "inversion_1se.csv",
                 "results.json", "crossval.csv", "crossval_participants.csv", "nuts_all.csv"):
        assert (out / name).is_file(), name
    res = json.loads((out / "results.json").read_text())
    assert res["n_participants"] == 12 and res["data"] == str(folder)
    assert {r["model"] for r in res["compare"]} == {"random", "eig_sweep"}
    # cross-validation: every participant held out exactly once per model; the table recomputed from the rows
    rows = pd.read_csv(out / "crossval_participants.csv")
    assert rows.groupby("model")["participant"].apply(sorted).map(tuple).nunique() == 1
    assert sorted(rows[rows.model == "random"]["participant"].astype(str)) == sorted(map(str, d.ids[:12]))
    tab = pd.read_csv(out / "crossval.csv").set_index("model")
    per = rows.pivot(index="participant", columns="model", values="log_p")
    n = rows[rows.model == "random"]["n_choices"].sum()
    assert n == d.subset(d.ids[:12]).n_choices
    for m in ("random", "eig_sweep"):
        assert tab.loc[m, "nats_per_choice"] == pytest.approx(-per[m].sum() / n, rel=1e-12)
    best, other = tab.index[0], tab.index[1]
    diff = per[best] - per[other]
    assert tab.loc[other, "diff_vs_best"] == pytest.approx(diff.sum() / n, rel=1e-12)
    assert tab.loc[other, "diff_se"] == pytest.approx(np.sqrt(len(diff)) * diff.std(ddof=1) / n, rel=1e-12)
    # NUTS of every model: gamma and stop_a shared where a model has them (random has no gamma); ok is the
    # documented rule; 10 draws cannot converge, so every row is not ok, and each model is refit at the smoke
    # retry ladder's 0.95 after 0.9 -- unless its first attempt found participant-level parameters the data do
    # not set (pooling factor >= 0.9), which smaller steps cannot fix: then fit stops after that attempt
    na = pd.read_csv(out / "nuts_all.csv", keep_default_na=False)
    assert list(dict.fromkeys(na["model"])) == ["random:shared=[stop_a]", "eig_sweep:shared=[gamma,stop_a]"]
    for _, g in na.groupby("model", sort=False):
        ladder = [0.9] if g["unidentified"].iloc[0] else [0.9, 0.95]
        assert list(g["target_accept"]) == ladder, g
    rule = (na["rhat_max"] <= 1.01) & (na["ess_bulk_min"] >= 400) & (na["divergences"] == 0)
    assert (na["ok"] == rule).all() and not na["ok"].any()
    assert (na["draws"] == 10).all() and (na["chains"] == 2).all() and not na["dense_mass"].any()
    assert res["nuts_all"]["all_ok"] is False
    # a rerun (an interrupted run resumed) skips the models already in the table and leaves their rows alone
    before = (out / "nuts_all.csv").read_text()
    capsys.readouterr()
    script.main(["--smoke", "--data", str(folder), "--out", str(tmp_path / "out"), "--stages", "nuts_all"])
    assert capsys.readouterr().out.count("already in") == 2
    assert (out / "nuts_all.csv").read_text() == before
    # model recovery resumes the same way: both (true model, data set) rows kept, their confusion unchanged
    before, conf = (out / "model_recovery.csv").read_text(), (out / "confusion.csv").read_text()
    with caplog.at_level(logging.INFO, logger="causalplay.fitting.workflows"):  # model_recovery logs its progress
        script.main(["--smoke", "--data", str(folder), "--out", str(tmp_path / "out"), "--stages", "models"])
    assert caplog.text.count("already in") == 2
    assert (out / "model_recovery.csv").read_text() == before and (out / "confusion.csv").read_text() == conf
    # ... and refuses to mix in rows scored another way
    with pytest.raises(ValueError, match="folds \\[1\\], not 2"):
        script.main(["--smoke", "--data", str(folder), "--out", str(tmp_path / "out"), "--stages", "models",
                     "--model-recovery-folds", "2"])
    with pytest.raises(ValueError, match="scores the models"):
        script.main(["--smoke", "--data", str(folder), "--out", str(tmp_path / "out"), "--stages", "models",
                     "--model-recovery-models", "random", "naive"])
    # parameter recovery too: its one data set kept; a table of SVI refits is not extended with NUTS refits
    before = (out / "recovery_group.csv").read_text(), (out / "recovery_participant.csv").read_text()
    again = ["--smoke", "--data", str(folder), "--out", str(tmp_path / "out"), "--stages", "recovery",
             "--fit", str(out / "idata.nc")]
    script.main(again)
    assert capsys.readouterr().out.count("already in") == 1
    assert ((out / "recovery_group.csv").read_text(), (out / "recovery_participant.csv").read_text()) == before
    with pytest.raises(ValueError, match="not --recovery-method nuts"):
        script.main(again + ["--recovery-method", "nuts"])


def test_nuts_all_shares_only_the_parameters_a_model_has(script):
    assert script.with_shared("random", ("gamma", "stop_a")) == "random:shared=[stop_a]"
    assert script.with_shared("eig_size", ("gamma", "stop_a")) == "eig_size:shared=[gamma,stop_a]"
    assert script.with_shared("eig_sweep", ()) == "eig_sweep"
    assert script.parse_args(["--nuts-shared"]).nuts_shared == ()
    assert script.parse_args(["--nuts-shared", "stop_a", "gamma"]).nuts_shared == ("stop_a", "gamma")
    assert script._nuts(script.parse_args(["--nuts-target-accept", "0.95"])).target_accept == 0.95
    assert script._nuts(script.parse_args(["--nuts-dense-mass"])).dense_mass
    assert not script._nuts(script.parse_args([])).dense_mass
    with pytest.raises(ValueError, match="target_accept"):
        script._nuts(script.parse_args(["--nuts-target-accept", "1.5"]))


def test_the_default_comparisons_and_model_recovery_cover_every_registered_choice_model(script):
    from causalplay.models.choice import REGISTRY

    cfg = script.Config()
    assert sorted(cfg.models) == sorted(REGISTRY) == sorted(cfg.model_recovery_models)
    assert len(set(cfg.models)) == len(cfg.models)


def test_bad_data_folders(script, tmp_path, capsys):
    with pytest.raises(SystemExit):
        script.main(["--data", str(tmp_path / "nope")])
    assert "is not a folder" in capsys.readouterr().err
    d = load_nexiom()
    folder = _write_folder(d.subset(d.ids[:3]), tmp_path / "bad")
    text = (folder / "participants.csv").read_text().splitlines()
    text[1] = text[1].replace("conjunctive", "sideways", 1).replace("disjunctive", "sideways", 1)
    (folder / "participants.csv").write_text("\n".join(text) + "\n")
    with pytest.raises(ValueError, match="sideways"):
        script.main(["--smoke", "--data", str(folder), "--out", str(tmp_path / "o")])


def test_one_se_rule_picks_the_simplest_model_within_one_paired_se_of_the_best():
    from causalplay.fitting import Score

    def score(lp):  # two participants, 10 choices in all
        return Score(float(sum(lp)), 10, pd.Series(lp, index=["a", "b"]))

    order = ("random", "eig_softmax", "eig_sweep")
    # best: eig_sweep (-10 nats). eig_softmax (-11): per-participant gaps to the best (-1, +2) -> 0.1 nats/choice
    # worse, paired SE sqrt(2) * sd(-1, 2) / 10 = 0.3
    scores = {"eig_sweep": score([-4.0, -6.0]), "eig_softmax": score([-3.0, -8.0]), "random": score([-9.0, -9.0])}
    assert W.pick_one_se(scores, order) == "eig_softmax"  # 0.1 <= 0.3: one parameter beats three
    # random: gaps (5, 3) -> 0.8 worse, SE sqrt(2) * sd(5, 3) / 10 = 0.2: out. Widen eig_softmax's gap:
    scores["eig_softmax"] = score([-8.0, -8.0])  # gaps (4, 2): 0.6 worse, SE 0.2 -> out too
    assert W.pick_one_se(scores, order) == "eig_sweep"
    # Equally simple models both within one SE: the better held-out score wins, not the place in ``order``.
    # naive (-10.5): gaps (-1, 1.5) -> 0.05 worse, SE sqrt(2) * sd(-1, 1.5) / 10 = 0.25; size (-10.2): gaps
    # (0, 0.2) -> 0.02 worse, SE sqrt(2) * sd(0, 0.2) / 10 = 0.02: both in, both one parameter, size scores better
    order = ("random", "naive", "size", "eig_sweep")
    scores = {"random": score([-9.0, -9.0]), "naive": score([-3.0, -7.5]), "size": score([-4.0, -6.2]),
              "eig_sweep": score([-4.0, -6.0])}
    assert W.pick_one_se(scores, order) == "size"
    # the same pick from the columns of model_recovery.csv (nats per choice, paired SE against the best)
    nats = {"random": 1.8, "naive": 1.05, "size": 1.015, "eig_sweep": 1.0}
    se = {"random": 0.0, "naive": 0.25, "size": 0.02}
    assert W.one_se_pick(nats, se, order) == "size"
    assert W.one_se_pick({**nats, "size": 1.03}, se, order) == "naive"  # 0.03 > its SE 0.02: size out


def test_inversion_gives_the_generator_given_the_pick_with_equal_prior_on_generators():
    # A simulated 5 times (picked A 4, B 1), B 10 times (A 2, B 8): P(pick | true) is 0.8 / 0.2 and 0.2 / 0.8,
    # so with generators equally likely P(true A | picked A) = 0.8 / (0.8 + 0.2) = 0.8 -- not the raw column
    # share 4 / 6 that B's extra data sets would give. C is never picked: no row; D generates nothing: no column.
    conf = pd.DataFrame([[4, 1, 0, 0], [2, 8, 0, 0], [0, 5, 0, 0]], index=["A", "B", "C"], columns=list("ABCD"))
    inv = W.inversion(conf)
    assert list(inv.index) == ["A", "B"] and list(inv.columns) == ["A", "B", "C"]
    # picked B: P(B | A) 0.2, P(B | B) 0.8, P(B | C) 1 -> posterior 0.2 / 2, 0.8 / 2, 1 / 2
    np.testing.assert_allclose(inv.to_numpy(), [[0.8, 0.2, 0.0], [0.1, 0.4, 0.5]], rtol=1e-12)


def test_population_labels_are_exact():
    assert W.population_label(None) == "fitted"
    assert W.population_label({"gamma_mu": -0.3, "beta_mu": 0.0}) == "beta_mu=0;gamma_mu=-0.3"
    assert W.population_label({"beta_mu": -0.693147}) == "beta_mu=-0.693147"
    # 6 significant digits would call these two the same population
    a, b = W.population_label({"beta_mu": 0.1234561}), W.population_label({"beta_mu": 0.1234564})
    assert a != b and float(a.split("=")[1]) == 0.1234561


def test_model_recovery_scores_by_one_split_or_by_k_fold_cv(script, capsys):
    import causalplay

    d = load_nexiom()
    data = d.subset(d.ids[:12])
    cfg = script.SMOKE
    # folds=1: exactly the fit on one stratified split, scored on its held-out part
    kw = {"method": "svi", "svi": script._svi(cfg), "judgement": cfg.judgement, "seed": cfg.seed,
          "n_draws": cfg.score_draws, "score_seed": 3, "test_fraction": cfg.test_fraction}
    one = W.heldout_job(data, ("random", "eig_sweep"), folds=1, split_seed=3, **kw)()
    fit_d, held = data.split(cfg.test_fraction, seed=3)
    direct = causalplay.fit(fit_d, "eig_sweep", method="svi", svi=script._svi(cfg), judgement=cfg.judgement,
                            seed=cfg.seed).score(held, n_draws=cfg.score_draws, seed=3)
    assert one["eig_sweep"].nats_per_choice == pytest.approx(direct.nats_per_choice, rel=1e-12)
    # folds=3: every participant scored once, all choices counted
    cv = W.heldout_job(data, ("random", "eig_sweep"), folds=3, split_seed=3, **kw)()
    for sc in cv.values():
        assert sorted(map(str, sc.per_participant.index)) == sorted(map(str, data.ids))
        assert sc.n_choices == data.n_choices
    # fit_and_score (the work of each fit above) refuses a held-out set that was fitted, and an unknown model
    from causalplay.fitting import fit_and_score

    with pytest.raises(ValueError, match="were fitted"):
        fit_and_score(fit_d, fit_d, "random", svi=script._svi(cfg), n_draws=5)
    with pytest.raises(ValueError, match="eig_sideways"):
        fit_and_score(fit_d, held, "eig_sideways", svi=script._svi(cfg), n_draws=5)
    with pytest.raises(SystemExit):
        script.parse_args(["--model-recovery-folds", "0"])
    assert "--model-recovery-folds must be 1" in capsys.readouterr().err
    with pytest.raises(ValueError, match="folds must be an integer >= 1"):
        W.model_recovery(data, ("random",), folds=0)


def test_model_recovery_in_worker_processes_gives_the_serial_table(script, tmp_path, capsys):
    # every fit is seeded, so --workers only changes where it runs: the same held-out scores (tolerance 1e-9
    # relative, for summation order; measured equal) and the same picks
    tabs = {}
    for w in (1, 2):
        script.main(["--smoke", "--stages", "models", "--out", str(tmp_path), "--name", f"w{w}", "--workers", str(w)])
        tabs[w] = pd.read_csv(tmp_path / f"w{w}" / "model_recovery.csv")
    assert len(tabs[1]) == 2  # smoke: 2 models x 1 data set
    assert (tabs[1][["true", "picked", "picked_1se"]] == tabs[2][["true", "picked", "picked_1se"]]).all().all()
    np.testing.assert_allclose(tabs[2].filter(like="nats_"), tabs[1].filter(like="nats_"), rtol=1e-9)
    with pytest.raises(SystemExit):
        script.parse_args(["--workers", "0"])
    assert "--workers must be 1 or more" in capsys.readouterr().err


def test_model_recovery_from_chosen_generating_models_and_population_values(script, tmp_path, capsys):
    base = ["--smoke", "--stages", "models", "--out", str(tmp_path)]
    script.main(base + ["--name", "all"])
    whole = pd.read_csv(tmp_path / "all" / "model_recovery.csv")
    assert list(whole["population"]) == ["fitted", "fitted"]
    # a data set keeps the worlds and seed it has in the whole run whichever models generate data: eig_sweep
    # alone gives the whole run's eig_sweep row (scores equal to 1e-12 relative; measured identical)
    script.main(base + ["--name", "one", "--model-recovery-true", "eig_sweep"])
    one = pd.read_csv(tmp_path / "one" / "model_recovery.csv")
    assert list(one["true"]) == ["eig_sweep"]
    np.testing.assert_allclose(one.filter(like="nats_"), whole[whole["true"] == "eig_sweep"].filter(like="nats_"),
                               rtol=1e-12)
    assert list(pd.read_csv(tmp_path / "one" / "confusion.csv", index_col=0).index) == ["eig_sweep"]
    # the same data set simulated with another group-level value: labelled, recorded beside the fitted value, and
    # simulated from it (other choices, so other scores)
    script.main(base + ["--name", "strong", "--model-recovery-true", "eig_sweep",
                        "--model-recovery-population", "eig_sweep:beta_mu=3"])
    pops = json.loads((tmp_path / "strong" / "results.json").read_text())["model_recovery_populations"]
    assert pops["simulated"]["eig_sweep"]["beta_mu"] == 3.0 != pops["fitted"]["eig_sweep"]["beta_mu"]
    assert {k: v for k, v in pops["simulated"]["eig_sweep"].items() if k != "beta_mu"} == {
        k: v for k, v in pops["fitted"]["eig_sweep"].items() if k != "beta_mu"}
    strong = pd.read_csv(tmp_path / "strong" / "model_recovery.csv")
    assert list(strong["population"]) == ["beta_mu=3"]
    assert not np.allclose(strong.filter(like="nats_"), one.filter(like="nats_"))
    # a resumed run refuses to mix in data sets from another population
    with pytest.raises(ValueError, match="population \\['fitted'\\], not 'beta_mu=3'"):
        script.main(base + ["--name", "one", "--model-recovery-true", "eig_sweep",
                            "--model-recovery-population", "eig_sweep:beta_mu=3"])
    # bad values name themselves
    with pytest.raises(ValueError, match="has no group-level site\\(s\\) \\['beta_nu'\\]"):
        script.main(base + ["--name", "bad", "--model-recovery-true", "eig_sweep",
                            "--model-recovery-population", "eig_sweep:beta_nu=3"])
    with pytest.raises(ValueError, match="sets 'random', which generates no data set"):
        script.main(base + ["--name", "bad", "--model-recovery-true", "eig_sweep",
                            "--model-recovery-population", "random:beta_mu=3"])
    with pytest.raises(ValueError, match="generating models \\['naive'\\] are not among"):
        script.main(base + ["--name", "bad", "--model-recovery-true", "naive"])
    for item in ("eig_sweep:beta_mu", "eig_sweep:beta_mu=big", "eig_sweep:beta_mu=inf"):
        with pytest.raises(SystemExit):
            script.parse_args(["--model-recovery-population", item])
        assert f"item {item!r} is not MODEL:SITE=VALUE" in capsys.readouterr().err
    cfg = script.parse_args(["--model-recovery-population", "positive:beta_mu=0", " size:gamma_mu=-0.5"])
    want = {"positive": {"beta_mu": 0.0}, "size": {"gamma_mu": -0.5}}
    assert script.population(cfg.model_recovery_population) == want


def test_model_recovery_simulates_the_stated_number_of_participants(script, tmp_path, capsys, monkeypatch):
    base = ["--smoke", "--stages", "models", "--out", str(tmp_path), "--model-recovery-true", "eig_sweep"]
    script.main(base + ["--name", "default"])
    default = pd.read_csv(tmp_path / "default" / "model_recovery.csv")
    assert list(default["participants"]) == [12]  # smoke: the people's first 12
    # 30 simulated participants: the data set scored by 3-fold CV has 30, and 30 is written in the table and in
    # results.json
    n = 30
    cfg = replace(script.SMOKE, model_recovery_true=("eig_sweep",), model_recovery_participants=n,
                  model_recovery_folds=3, out=str(tmp_path), name="n30", stages=("models",))
    seen, real = [], W.heldout_job

    def spy(data, models, **kw):
        seen.append((len(data), kw["folds"]))
        return real(data, models, **kw)

    monkeypatch.setattr(W, "heldout_job", spy)
    res = script.run(cfg)
    assert seen == [(n, 3)]
    assert res["model_recovery"]["participants"] == n
    tab = pd.read_csv(tmp_path / "n30" / "model_recovery.csv")
    assert list(tab["participants"]) == [n]
    # a resumed run refuses to mix data sets of another size, including a table written before the column
    with pytest.raises(ValueError, match="of \\[30\\] simulated participants, not 24"):
        script.run(replace(cfg, model_recovery_participants=24))
    default.drop(columns="participants").to_csv(tmp_path / "default" / "model_recovery.csv", index=False)
    with pytest.raises(ValueError, match="of \\[12\\] simulated participants, not 30"):
        script.main(base + ["--name", "default", "--model-recovery-participants", "30"])
    # too few to hold out two participants in every part: refused by the command line and by the stage
    for args, need in ((["--model-recovery-participants", "7"], 8),
                       (["--model-recovery-participants", "5", "--model-recovery-folds", "3"], 6)):
        with pytest.raises(SystemExit):
            script.parse_args(args)
        assert f"--model-recovery-participants must be an integer >= {need}" in capsys.readouterr().err
    with pytest.raises(ValueError, match="must be an integer >= 6 with folds=3 .* got 5"):
        W.model_recovery(script.load_data(cfg), ("random",), folds=3, participants=5)


def test_nuts_all_tabulates_every_attempt_of_fits_retry_ladder_and_resumes_by_model(script, tmp_path,
                                                                                   monkeypatch):
    """fit() refits a model that did not converge up its target-acceptance ladder (tests/test_fit.py); nuts_all
    writes one row per attempt, in order, and a rerun fits only the models not in the table."""
    from types import SimpleNamespace

    import arviz

    class FakeFit:
        def __init__(self, accept, ok, attempts=()):
            self.ok, self.idata, self.seconds = ok, None, 1.0
            self.options = SimpleNamespace(target_accept=accept)
            self.extra = {"attempts": list(attempts)}

        def diagnostics(self, warn):
            return {"ok": self.ok, "rhat_max": 1.0, "rhat_worst_site": "x", "ess_bulk_min": 500.0,
                    "ess_bulk_worst_site": "x", "ess_tail_min": 500.0, "divergences": 0 if self.ok else 1,
                    "chains": 4, "draws": 10, "cpu_seconds": 1.0}

    calls = []

    def fake_fit(data, name, judgement, nuts, seed, retry_target_accept):  # random at once; eig_sweep at 0.99
        calls.append((name, retry_target_accept))
        if "eig_sweep" in name:
            return FakeFit(0.99, True, [FakeFit(0.9, False), FakeFit(0.95, False)])
        return FakeFit(0.9, True)

    monkeypatch.setattr(script, "fit", fake_fit)
    monkeypatch.setattr(arviz, "loo", lambda idata, var_name, pointwise: SimpleNamespace(
        elpd_loo=-1.0, se=0.1, pareto_k=np.zeros(3)))
    cfg = replace(script.SMOKE, models=("random", "eig_sweep"), nuts_retry_target_accept=(0.95, 0.99))
    res = {}
    script.stage_nuts_all(cfg, None, tmp_path, res)
    r, e = "random:shared=[stop_a]", "eig_sweep:shared=[gamma,stop_a]"
    assert calls == [(r, (0.95, 0.99)), (e, (0.95, 0.99))]  # the ladder is fit's, from --nuts-retry-target-accept
    assert res["nuts_all"]["all_ok"] is True and res["nuts_all"]["converged"] == {r: True, e: True}
    table = pd.read_csv(tmp_path / "nuts_all.csv")
    assert list(table["model"]) == [r, e, e, e] and list(table["target_accept"]) == [0.9, 0.9, 0.95, 0.99]
    assert list(table["ok"]) == [True, False, False, True]
    calls.clear()
    script.stage_nuts_all(cfg, None, tmp_path, {})  # resumed: nothing left to fit
    assert calls == []
    assert script.parse_args(["--nuts-retry-target-accept"]).nuts_retry_target_accept == ()
    assert script.parse_args(["--nuts-retry-target-accept", "0.97"]).nuts_retry_target_accept == (0.97,)


def test_a_five_participant_pilot_runs_and_skips_what_needs_more_participants(script, tmp_path, capsys):
    """The pilot pipeline on 5 participants: every stage that can run does; the held-out split (1 participant
    held out) and model recovery (8 simulated participants needed for one held-out quarter of 2) say why they
    are skipped, naming no option the user did not pass."""
    d = load_nexiom()
    folder = _write_folder(d.subset(d.ids[:5]), tmp_path / "pilot")
    script.main(["--smoke", "--data", str(folder), "--out", str(tmp_path / "out")])
    out = tmp_path / "out" / "smoke"
    res = json.loads((out / "results.json").read_text())
    assert set(res["skipped"]) == {"compare", "models"}
    assert "holds out 1" in res["skipped"]["compare"]
    assert "5 simulated participants (as many as the data has)" in res["skipped"]["models"]
    printed = capsys.readouterr().out
    assert "[compare] skipped: " in printed and "[models] skipped: " in printed
    for name in ("crossval.csv", "nuts_diagnostics.json", "nuts_all.csv", "ppc.json", "recovery_group.csv",
                 "prior_predictive.png"):
        assert (out / name).is_file(), name
    assert not (out / "compare.csv").exists() and not (out / "model_recovery.csv").exists()
