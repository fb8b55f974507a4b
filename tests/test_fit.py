"""Fitting: the NUTS density equals the Pyro model's, fits return well-formed ArviZ data, score, compare
(LOO warnings surface, WAIC and paired held-out SEs are reported), options and bad data are rejected clearly."""

import math
import warnings

import numpy as np
import pandas as pd
import pyro
import pytest
import torch
from causalplay.models.choice import build_features, get_model

import causalplay
from causalplay.data import load_nexiom, load_trials
from causalplay.fitting import ConvergenceWarning, NUTSOptions, Parameterisation, SVIOptions, compare, load_fit
from causalplay.fitting.inference import log_density, pyro_model

FAST = SVIOptions(steps=100, draws=60)


@pytest.fixture(scope="module")
def split():
    d = load_nexiom()
    return d.subset(d.ids[:10]), d.subset(d.ids[10:14])


@pytest.fixture(scope="module")
def fits(split):
    data, _ = split
    return {m: causalplay.fit(data, model=m, method="svi", svi=FAST) for m in ("random", "eig_sweep")}


@pytest.mark.parametrize("hierarchical", [True, False])
@pytest.mark.parametrize("judgement", ["sample", "softmax"])
def test_nuts_density_equals_pyro_model(split, hierarchical, judgement):
    """The hand-written log density used by NUTS = Pyro's log joint (+ log-sigma Jacobian), at a random point."""
    data, _ = split
    feats = build_features(data)
    par = Parameterisation(get_model("eig_sweep", judgement), hierarchical, len(data))
    q = par.init(0.3, torch.Generator().manual_seed(1))
    cond = {(k[:-len("_logsigma")] + "_sigma" if k.endswith("_logsigma") else k):
            (v.exp() if k.endswith("_logsigma") else v) for k, v in q.items()}
    tr = pyro.poutine.trace(pyro.condition(pyro_model, data=cond)).get_trace(feats, par, True)
    jac = sum(v.sum() for k, v in q.items() if k.endswith("_logsigma")) if hierarchical else 0.0
    assert float(log_density(feats, par, True, q)) == pytest.approx(float(tr.log_prob_sum() + jac), rel=1e-12)


def test_svi_fit_idata_score_simulate(split, fits, tmp_path):
    data, held = split
    f = fits["eig_sweep"]
    idata = f.idata
    assert {"posterior", "log_likelihood", "observed_data", "constant_data"} <= set(idata.groups())
    assert idata.posterior["beta"].dims == ("chain", "draw", "participant")
    assert list(idata.posterior["participant"].values) == data.ids
    ll = idata.log_likelihood["choice"]
    assert ll.dims == ("chain", "draw", "choice") and ll.sizes["choice"] == data.n_choices
    assert (idata.log_likelihood["test"].values[:3] == [1, 2, 3]).all()
    assert idata.constant_data["true_blickets"].dims == ("participant", "object")
    # Under `random` a set is chosen uniformly from the 16 and the first test cannot be a stop (min_tests = 1):
    # its log-likelihood is exactly -log 16 in every draw; later tests add log P(go) < 0.
    rl = fits["random"].idata.log_likelihood
    r_ll, first = rl["choice"].values.reshape(-1, data.n_choices), rl["test"].values == 1
    np.testing.assert_allclose(r_ll[:, first], -math.log(16), rtol=0, atol=1e-12)
    stops = rl["test"].values == np.repeat([len(h) + 1 for h in data.histories().values()],
                                           [len(h) + 1 for h in data.histories().values()])
    assert (r_ll[:, ~first & ~stops] < -math.log(16) - 1e-6).all()
    s = f.score(held, n_draws=100, n_new=2)
    assert s.n_choices == held.n_choices
    total, n = s
    assert (total, n) == (s.total_nats, held.n_choices) and total < 0
    assert -s.total_nats / s.n_choices < math.log(17) + 1.0
    # Judgements: the blicket and rule parts are marginals of the joint, so each is at least the joint.
    j = s.judgements
    assert list(j.columns) == ["joint", "blickets", "rule"] and len(j) == len(held)
    assert (j["blickets"] >= j["joint"] - 1e-9).all() and (j["rule"] >= j["joint"] - 1e-9).all()
    assert (j["rule"] > math.log(0.01)).all()  # (its "<= 0" half was dropped: a log-probability always is)
    with pytest.raises(ValueError, match="not used in fitting"):
        f.score(data)
    with pytest.warns(ConvergenceWarning, match="SVI"):
        f.diagnostics()
    assert isinstance(f.summary(), pd.DataFrame)
    tab = f.participant_table(0.9)
    assert set(tab["parameter"]) == {"beta", "gamma", "delta", "stop_a"} and (tab["q5"] <= tab["q95"]).all()
    # Simulated participants obey the schema and the machine: writing them out and reloading flags nothing.
    sim = f.simulate(seed=3)
    assert len(sim) == len(data) and (sim.participants["n_tests"] >= 1).all()
    folder = tmp_path / "sim"
    folder.mkdir()
    p = sim.participants.copy()
    for c in ("true_blickets", "judged_blickets"):
        p[c] = p[c].map(lambda x: " ".join(map(str, x)))
    t = sim.tests.drop(columns=["possible"]).copy()
    t["objects_on"] = t["objects_on"].map(lambda x: " ".join(map(str, x)))
    p.to_csv(folder / "participants.csv", index=False)
    t.to_csv(folder / "tests.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = load_trials(folder, n_objects=4)
    assert again.n_choices == sim.n_choices
    assert len(f.simulate(5, seed=1)) == 5
    # A saved fit comes back with the same model and posterior.
    f.idata.to_netcdf(tmp_path / "fit.nc")
    g = load_fit(tmp_path / "fit.nc", data)
    assert g.model.name == "eig_sweep" and g.model.judge.name == "sample" and g.hierarchical
    torch.testing.assert_close(g.theta()["delta"], f.theta()["delta"])
    with pytest.raises(ValueError, match="participant lists differ"):
        load_fit(f.idata, held)


def _random_model_log_lik(theta: dict, s: int, p: int, n_tests: int) -> float:
    """log P(one participant's choices) under `random` with stop_h = 0, written out by hand: each test picks
    one of 16 sets (log 1/16) and goes on with P(go) = sigmoid(-z_t) (none before the first test); the stop has
    P = sigmoid(z_T); z_t = stop_a + stop_t (t - 5) / 5."""
    a, c = float(theta["stop_a"][s, p]), float(theta["stop_t"][s, p])

    def log_sig(x):
        return -math.log1p(math.exp(-x))

    z = [a + c * (t - 5) / 5 for t in range(n_tests + 1)]
    return sum(-math.log(16) + (log_sig(-z[t]) if t >= 1 else 0.0) for t in range(n_tests)) + log_sig(z[n_tests])


@pytest.mark.parametrize("point_mass", [True, False])
def test_score_is_the_log_of_the_mean_likelihood_over_draws(split, fits, monkeypatch, point_mass):
    """Fit.score against a hand-written closed form (`random`, stop_h = 0). With every draw the same (a point
    mass) the held-out log P is that draw's log-likelihood exactly: a log of the *sum* over draws would add
    log S. With draws that differ it is the Monte Carlo average log(mean_s exp(ll_s)), computed here by brute
    force: a mean of the log-likelihoods would be lower by the Jensen gap."""
    _, held = split
    f = fits["random"]
    orig, used = Parameterisation.theta, {}

    def theta(self, raw, n=None):  # Parameterisation is frozen: wrap the method on the class for this test
        th = orig(self, raw, n)
        if point_mass:
            th = {k: v[:1, :1].expand_as(v).clone() for k, v in th.items()}
        th["stop_h"] = torch.zeros_like(th["stop_h"])  # the entropy term off: the closed form needs no posterior
        used.update(th)
        return th

    monkeypatch.setattr(Parameterisation, "theta", theta)
    n_draws, n_new = 40, 3
    sc = f.score(held, n_draws=n_draws, n_new=n_new)
    S = n_draws * n_new
    assert used["stop_a"].shape == (S, len(held))
    tests = [len(held.histories()[k]) for k in held.ids]
    want = []
    for p, T in enumerate(tests):
        ll = np.array([_random_model_log_lik(used, s, p, T) for s in range(S)])
        if point_mass:
            assert np.ptp(ll) == 0.0
        else:
            assert np.ptp(ll) > 0.5  # the draws differ enough for the mean of logs to be clearly lower
        m = ll.max()
        want.append(m + math.log(np.mean(np.exp(ll - m))))
    np.testing.assert_allclose(sc.per_participant.to_numpy(), want, rtol=0, atol=1e-9)
    assert sc.total_nats == pytest.approx(sum(want), abs=1e-9)
    assert sc.nats_per_choice == pytest.approx(-sum(want) / sum(T + 1 for T in tests), abs=1e-12)


def test_compare_surfaces_loo_warnings_waic_and_paired_se(split, fits):
    data, held = split
    # 60 SVI draws of 10 participants: PSIS is unreliable for some choices, and compare() must say so.
    with pytest.warns(UserWarning, match="PSIS-LOO unreliable") as rec:
        table = compare(fits, held, n_draws=60, n_new=2)
    assert any("Pareto" in str(w.message) for w in rec)  # ArviZ's own warning is re-issued, not swallowed
    assert set(table.index) == {"random", "eig_sweep"}
    for col in ("elpd_loo", "se_loo", "pareto_k_bad", "pareto_k_max", "elpd_waic", "p_waic", "elpd_diff", "dse",
                "heldout_nats_per_choice", "heldout_diff", "heldout_diff_se", "heldout_judgement_blickets",
                "heldout_judgement_rule"):
        assert col in table.columns, col
    assert (table["pareto_k_bad"] > 0).any()
    # The paired SE is computed from per-participant differences, by hand here.
    sc = table.attrs["scores"]
    d = sc["random"].per_participant - sc["eig_sweep"].per_participant
    best = table.index[0]
    other = table.index[1]
    want = math.sqrt(len(d)) * d.std(ddof=1) / sc[other].n_choices
    assert table.loc[other, "heldout_diff_se"] == pytest.approx(want)
    assert table.loc[best, "heldout_diff"] == 0.0
    with pytest.raises(TypeError, match="dict"):
        compare([])
    other_fit = causalplay.fit(data.subset(data.ids[:5]), model="random", method="svi", svi=SVIOptions(steps=5,
                                                                                                         draws=10))
    with pytest.raises(ValueError, match="same participants"):
        compare({"a": fits["random"], "b": other_fit})


def test_nuts_in_two_processes_and_loud_warnings(split):
    data, _ = split
    with pytest.warns(ConvergenceWarning, match="bulk ESS"):
        f = causalplay.fit(data.subset(data.ids[:4]), model="random",
                           nuts=NUTSOptions(chains=2, warmup=15, draws=10, workers=2))
    assert f.idata.posterior.sizes["chain"] == 2 and f.idata.posterior.sizes["draw"] == 10
    assert f.idata.sample_stats["diverging"].dtype == bool
    # Chains start apart (jittered), so they are not copies of each other.
    assert not np.allclose(f.raw["rho_raw"][0], f.raw["rho_raw"][1])
    d = f.diagnostics(warn=False)
    assert {"rhat_max", "ess_bulk_min", "divergences", "ok", "problems", "cpu_seconds"} <= set(d)
    assert not d["ok"]


def test_bad_arguments(split):
    data, _ = split
    with pytest.raises(TypeError, match="TrialData"):
        causalplay.fit(pd.DataFrame())
    with pytest.raises(ValueError, match="method"):
        causalplay.fit(data, method="vi")
    with pytest.raises(ValueError, match="unknown choice model 'oracle'"):
        causalplay.fit(data, model="oracle")
    with pytest.raises(ValueError, match="unknown judgement model 'map'"):
        causalplay.fit(data, judgement="map")
    with pytest.raises(ValueError, match="NUTSOptions.draws must be an integer >= 1, got 0"):
        NUTSOptions(draws=0)
    with pytest.raises(ValueError, match=r"NUTSOptions.target_accept must be in \(0, 1\), got 1.5"):
        NUTSOptions(target_accept=1.5)
    with pytest.raises(ValueError, match=r"SVIOptions.lr must be in \(0, inf\], got -0.1"):
        SVIOptions(lr=-0.1)
    with pytest.raises(TypeError, match="SVIOptions.steps must be an integer"):
        SVIOptions(steps=1.5)
    with pytest.raises(TypeError, match="nuts must be NUTSOptions"):
        causalplay.fit(data, nuts={"chains": 4})


def _write(folder, participants, tests):
    folder.mkdir()
    (folder / "participants.csv").write_text(
        "participant,rule,true_blickets,judged_blickets,rule_choice,n_tests\n" + "\n".join(participants) + "\n")
    (folder / "tests.csv").write_text("participant,test,objects_on,lit\n" + "\n".join(tests) + "\n")


def test_bad_data_gives_clear_errors(tmp_path):
    ok = ["A,disjunctive,0 1,0 1,disjunctive,2"]
    ok_tests = ["A,1,0,true", "A,2,2,false"]
    _write(tmp_path / "zero", ok + ["B,conjunctive,0 1,,conjunctive,0"], ok_tests)
    zero = load_trials(tmp_path / "zero", n_objects=4)
    with pytest.raises(ValueError, match="participant 'B' ran 0 test"):
        causalplay.fit(zero, method="svi", svi=FAST)
    _write(tmp_path / "thr", ok + ["B,conjunctive,0 1,0 1,threshold3,1"], ok_tests + ["B,1,0 1,true"])
    thr = load_trials(tmp_path / "thr", n_objects=4)
    with pytest.raises(ValueError, match="participant 'B' chose rule 'threshold3'"):
        causalplay.fit(thr, method="svi", svi=FAST)
    # An empty rule choice is a missing judgement (documented), not an error.
    _write(tmp_path / "miss", ok + ["B,conjunctive,0 1,0 1,,1"], ok_tests + ["B,1,0 1,true"])
    miss = load_trials(tmp_path / "miss", n_objects=4)
    assert build_features(miss).judgement.tolist()[1] == -1
