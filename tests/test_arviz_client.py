"""ArviZ as a client of ``Fit.idata``: its public functions, called as a user calls them (not through causalplay's
wrappers), on NUTS and SVI fits of two models, each result checked against a number computed here by hand from the
package's own pointwise log-likelihoods, the posterior draws, the data, or :func:`causalplay.compare`'s table.

The fits are tiny (4 participants of the example folder; SVI 60 steps x 40 draws; NUTS 2 chains x (20 + 15),
tree depth <= 4), so the numbers are not of interest, only that ArviZ reads them right.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from causalplay.models.choice import build_features

import causalplay
from causalplay.data import example_folder, load_trials
from causalplay.fitting import NUTSOptions, SVIOptions, load_fit
from causalplay.fitting.convert import pointwise_log_lik
from causalplay.fitting.inference import log_density

az = pytest.importorskip("arviz")

MODELS = ("random", "eig_sweep")
METHODS = ("svi", "nuts")
SVI = SVIOptions(steps=60, draws=40, progress=False)
NUTS = NUTSOptions(chains=2, warmup=20, draws=15, workers=1, max_tree_depth=4, progress=False)
N_OPTIONS = 17  # 4 objects: 16 sets by code, then stop (code 16)


@pytest.fixture(scope="module")
def split():
    return load_trials(example_folder()).split(0.34, seed=0)  # 4 fitted, 2 held out


@pytest.fixture(scope="module")
def fits(split):
    data, _ = split
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the short fits' convergence warnings are expected (not under test)
        return {(meth, m): causalplay.fit(data, m, method=meth, svi=SVI, nuts=NUTS, seed=1, warn=False)
                for meth in METHODS for m in MODELS}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def _agg():
    import matplotlib

    matplotlib.use("Agg")


def hand_ll(f):
    """The package's own pointwise log-likelihoods of the fit's draws, ``[S, D]`` and ``[S, P]``."""
    return pointwise_log_lik(f.par, f.feats, f.theta())


def hand_waic(ll: np.ndarray) -> float:
    """WAIC's elpd from a ``[S, N]`` pointwise log-likelihood: sum of log mean exp minus the variance over draws
    (ArviZ takes the variance with divisor S)."""
    lppd = np.log(np.exp(ll).mean(0))
    return float((lppd - ll.var(0)).sum())


def lppd(ll: np.ndarray) -> float:
    return float((np.logaddexp.reduce(ll, axis=0) - math.log(ll.shape[0])).sum())


# ---- the layout ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", [(meth, m) for meth in METHODS for m in MODELS], ids="-".join)
def test_groups_once_and_variables_never_named_like_a_dim(fits, key):
    f = fits[key]
    idata = f.idata
    groups = idata.groups()
    assert len(groups) == len(set(groups))
    assert set(groups) == {"posterior", "posterior_predictive", "log_likelihood", "sample_stats", "observed_data",
                           "constant_data"}
    for g in groups:
        ds = idata[g]
        assert not set(ds.data_vars) & set(ds.dims), g
        assert not set(ds.data_vars) & set(ds.coords), g
    ll = idata.log_likelihood
    assert set(ll.data_vars) == {"choice", "judgement"}
    assert ll["choice"].dims == ("chain", "draw", "decision") and ll["judgement"].dims == ("chain", "draw",
                                                                                           "participant")
    for g in ("posterior_predictive", "observed_data"):
        assert idata[g]["choice"].dims[-1] == "decision" and idata[g]["judgement"].dims[-1] == "participant"
    # the observed data and the log-likelihood are the package's own, draw for draw
    np.testing.assert_array_equal(idata.observed_data["choice"].values, f.feats.choice.numpy())
    c_ll, j_ll = hand_ll(f)
    np.testing.assert_allclose(ll["choice"].values.reshape(-1, f.feats.n_decisions), c_ll.numpy(), rtol=1e-12)
    has = (f.feats.judgement >= 0).numpy()
    np.testing.assert_allclose(ll["judgement"].values.reshape(-1, len(has))[:, has], j_ll.numpy()[:, has], rtol=1e-12)
    assert np.isnan(ll["judgement"].values[..., ~has]).all()
    # whose decision at which test: each participant's own tests (after any demonstrations) and the stop at T + 1
    pid = ll["participant_of_choice"].values
    for p, h in f.data.histories().items():
        t = ll["test"].values[pid == p]
        assert t[0] >= 1 and list(t) == list(range(t[0], len(h) + 2))


@pytest.mark.parametrize("method", METHODS)
def test_sample_stats(fits, method):
    f = fits[(method, "eig_sweep")]
    ss = f.idata.sample_stats
    if method == "svi":
        assert list(ss.data_vars) == ["elbo"] and ss["elbo"].dims == ("svi_step",)
        np.testing.assert_array_equal(ss["elbo"].values, -np.asarray(f.extra["elbo_losses"]))
        assert ss.sizes["svi_step"] == SVI.steps
        return
    assert {"diverging", "lp", "acceptance_rate", "step_size", "n_steps", "tree_depth"} <= set(ss.data_vars)
    for v in ss.data_vars:
        assert ss[v].dims == ("chain", "draw")
    assert ss["diverging"].dtype == bool and int(ss["diverging"].sum()) == f.diagnostics(warn=False)["divergences"]
    # lp: the log density (unconstrained space, Jacobian included) at each kept draw, recomputed here
    q = {}
    for k in f.par.sites():
        name = k[: -len("_logsigma")] + "_sigma" if k.endswith("_logsigma") else k
        v = f.raw[name]
        q[k] = v.log() if k.endswith("_logsigma") else v
    for c in range(NUTS.chains):
        for d in (0, NUTS.draws - 1):
            want = float(log_density(f.feats, f.par, f.judgements, {k: v[c, d] for k, v in q.items()}))
            assert float(ss["lp"][c, d]) == pytest.approx(want, rel=1e-9, abs=1e-9)
    # one step size per chain after adaptation: the chain's final one
    np.testing.assert_array_equal(ss["step_size"].values[:, -1], f.extra["step_size"])
    assert (ss["step_size"].values == ss["step_size"].values[:, :1]).all()
    n = ss["n_steps"].values
    assert (n >= 1).all() and (n <= 2 ** NUTS.max_tree_depth - 1).all()
    np.testing.assert_array_equal(ss["tree_depth"].values, np.ceil(np.log2(n + 1)))
    a = ss["acceptance_rate"].values
    assert ((a >= -1e-9) & (a <= 1 + 1e-9)).all()


# ---- LOO, WAIC, compare --------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", [(meth, m) for meth in METHODS for m in MODELS], ids="-".join)
def test_loo_and_waic_score_the_choices_when_asked_and_refuse_to_guess(fits, key):
    f = fits[key]
    with pytest.raises(TypeError, match="several log likelihood arrays.*var_name"):
        az.loo(f.idata)
    with pytest.raises(TypeError, match="several log likelihood arrays.*var_name"):
        az.waic(f.idata)
    c_ll, j_ll = (x.numpy() for x in hand_ll(f))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Pareto-k and WAIC variance warnings of a few draws: expected here
        loo = az.loo(f.idata, var_name="choice", pointwise=True)
        waic = az.waic(f.idata, var_name="choice", pointwise=True)
        jw = az.waic(f.idata, var_name="judgement")
    assert loo.n_data_points == f.feats.n_decisions == f.data.n_choices
    # ArviZ's p_loo is lppd - elpd_loo: the lppd of our choices, by hand
    assert float(loo.elpd_loo + loo.p_loo) == pytest.approx(lppd(c_ll), rel=1e-10)
    assert float(np.sum(loo.loo_i)) == pytest.approx(float(loo.elpd_loo), rel=1e-10)
    const = c_ll.std(0) < 1e-12  # e.g. a first test under `random`: leaving it out changes nothing
    np.testing.assert_allclose(np.asarray(loo.loo_i)[const], c_ll[0, const], rtol=1e-12)
    assert float(waic.elpd_waic) == pytest.approx(hand_waic(c_ll), rel=1e-10)
    has = f.feats.judgement.numpy() >= 0
    assert float(jw.elpd_waic) == pytest.approx(hand_waic(j_ll[:, has]), rel=1e-10)


@pytest.mark.parametrize("method", METHODS)
def test_az_compare_ranks_like_causalplay_compare(fits, method):
    pair = {m: fits[(method, m)] for m in MODELS}
    idatas = {m: f.idata for m, f in pair.items()}
    with pytest.raises(TypeError) as err:
        az.compare(idatas)
    chain, e = [], err.value
    while e is not None:
        chain.append(str(e))
        e = e.__cause__
    # ArviZ's own message, at the root of the chain: compare -> loo of the first model -> several arrays
    assert "several log likelihood arrays" in chain[-1] and "var_name" in chain[-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = causalplay.compare(pair)
        theirs = az.compare(idatas, var_name="choice")
    assert list(theirs.index) == list(ours.index)  # the same ranking, by the choices
    for m in MODELS:
        assert float(theirs.loc[m, "elpd_loo"]) == pytest.approx(float(ours.loc[m, "elpd_loo"]), rel=1e-12)
        assert float(theirs.loc[m, "elpd_diff"]) == pytest.approx(float(ours.loc[m, "elpd_diff"]), abs=1e-9)
        assert float(theirs.loc[m, "p_loo"]) == pytest.approx(float(ours.loc[m, "p_loo"]), rel=1e-12)


# ---- summaries and convergence statistics --------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_summary_ess_rhat(fits, method):
    f = fits[(method, "eig_sweep")]
    post = f.idata.posterior
    group = f.par.group_sites()
    s = az.summary(f.idata, var_names=group, round_to="none", kind="stats")
    for v in group:
        x = post[v].values.ravel()
        assert s.loc[v, "mean"] == pytest.approx(x.mean(), rel=1e-12)
        assert s.loc[v, "sd"] == pytest.approx(x.std(ddof=1), rel=1e-10)
    per = az.summary(f.idata, var_names=["beta"], round_to="none", kind="stats")
    assert list(per.index) == [f"beta[{p}]" for p in f.feats.ids]
    np.testing.assert_allclose(per["mean"].to_numpy(), f.theta()["beta"].numpy().mean(0), rtol=1e-12)
    ess = az.ess(f.idata, var_names=group)
    for v in group:  # the (chain, draw) layout read right: the same as the bare array of the draws
        assert float(ess[v]) == pytest.approx(float(az.ess(f.raw[v].numpy())), rel=1e-12)
    if method == "svi":  # independent draws of the fitted guide: an ESS near their number
        n = SVI.draws
        assert all(n / 3 < float(ess[v]) < 3 * n for v in group)
        return
    rhat = az.rhat(f.idata, var_names=group, method="split")
    for v in group:  # split R-hat by hand: each chain cut in two halves
        x = f.raw[v].numpy()
        half = x.shape[1] // 2
        ch = np.concatenate([x[:, :half], x[:, x.shape[1] - half:]])
        n = ch.shape[1]
        w = ch.var(1, ddof=1).mean()
        b = n * ch.mean(1).var(ddof=1)
        assert float(rhat[v]) == pytest.approx(math.sqrt(((n - 1) / n * w + b / n) / w), rel=1e-10)


# ---- plots -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_plots(fits, method):
    _agg()
    f = fits[(method, "eig_sweep")]
    post = f.idata.posterior
    # forest: one row per participant of a participant-level parameter, at its posterior mean
    axes = az.plot_forest(f.idata, var_names=["beta"], combined=True, hdi_prob=0.9)
    labels = " ".join(t.get_text() for t in axes[0].get_yticklabels())
    assert all(p in labels for p in f.feats.ids)
    # trace: the draws of each chain, as drawn
    axes = az.plot_trace(f.idata, var_names=["beta_mu", "rho"], compact=False)
    assert axes.shape == (2, 2)
    for i, v in enumerate(["beta_mu", "rho"]):
        ys = [ln.get_ydata() for ln in axes[i, 1].get_lines() if len(ln.get_ydata()) == post.sizes["draw"]]
        for c in range(post.sizes["chain"]):
            assert any(np.array_equal(y, post[v].values[c]) for y in ys)
    axes = az.plot_rank(f.idata, var_names=["beta_mu", "rho"])
    assert len(np.ravel(axes)) == 2
    # ppc: the observed choices' empirical CDF and the replicas' (kind="cumulative")
    ax = az.plot_ppc(f.idata, var_names=["choice"], kind="cumulative", num_pp_samples=5, random_seed=0)
    ax = np.ravel(ax)[0]
    obs = [ln for ln in ax.get_lines() if ln.get_label() == "Observed"]
    assert len(obs) == 1
    np.testing.assert_array_equal(obs[0].get_xdata(), np.sort(f.feats.choice.numpy()))
    mean = [ln for ln in ax.get_lines() if "mean" in ln.get_label().lower()]
    np.testing.assert_array_equal(mean[0].get_xdata(),
                                  np.sort(f.idata.posterior_predictive["choice"].values.ravel()))


# ---- the posterior predictive and the predictions --------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_posterior_predictive_draws_follow_the_model(fits, method):
    """Each replica choice is a draw from the model's choice probabilities at that decision: never an impossible
    option (no stop before the first test), and the stops as often as the probabilities say (within 4 SEs)."""
    f = fits[(method, "eig_sweep")]
    rep = f.idata.posterior_predictive["choice"].values.reshape(-1, f.feats.n_decisions)
    assert ((rep >= 0) & (rep < N_OPTIONS)).all()
    first = f.feats.test_index.numpy() == 1
    assert (rep[:, first] != N_OPTIONS - 1).all()
    with torch.no_grad():
        p_stop = f.model.log_probs(f.feats, f.theta())[..., -1].exp().numpy()  # [S, D]
    got, want = float((rep == N_OPTIONS - 1).sum()), float(p_stop.sum())
    assert abs(got - want) < 4 * math.sqrt((p_stop * (1 - p_stop)).sum()) + 1
    jrep = f.idata.posterior_predictive["judgement"].values
    none = f.feats.judgement.numpy() < 0
    assert (jrep[..., none] == -1).all() and (jrep[..., ~none] >= 0).all()


def test_predictions_for_held_out_people_and_the_round_trip(fits, split, tmp_path):
    data, held = split
    f = fits[("svi", "random")]
    pred = f.predict(held, n_draws=100, n_new=4, seed=2)
    assert set(pred.groups()) == {"predictions", "predictions_constant_data"}
    p = pred.predictions
    assert p["choice"].dims == ("chain", "draw", "decision") and p.sizes["draw"] == 400
    assert list(p["participant"].values) == held.ids
    np.testing.assert_array_equal(pred.predictions_constant_data["observed_choice"].values,
                                  build_features(held, f.learner).choice.numpy())
    assert p.sizes["decision"] == held.n_choices
    # under `random` a first test is uniform over the 16 sets: chi-square of the 400 x (first tests) draws
    first = p["test"].values == 1
    codes = p["choice"].values[0][:, first].ravel()
    counts = np.bincount(codes, minlength=N_OPTIONS)
    assert counts[-1] == 0
    e = len(codes) / 16
    chi2 = float(((counts[:16] - e) ** 2 / e).sum())
    assert chi2 < 45.0  # 15 degrees of freedom: P(chi2 > 45) ~ 7e-5
    with pytest.raises(ValueError, match="not used in fitting"):
        f.predict(data)
    # the round trip: every group and every value back, and load_fit rebuilds the same fit
    f.idata.extend(pred)
    for key, fit in fits.items():
        path = tmp_path / f"{'-'.join(key)}.nc"
        fit.idata.to_netcdf(path)
        back = az.from_netcdf(path)
        assert back.groups() == fit.idata.groups()
        for g in back.groups():
            a, b = fit.idata[g], back[g]
            assert a.attrs == b.attrs, g
            assert set(a.data_vars) == set(b.data_vars) and set(a.coords) == set(b.coords), g
            for v in list(a.data_vars) + list(a.coords):
                np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=f"{g}.{v}")
                assert a[v].dims == b[v].dims and a[v].dtype == b[v].dtype, f"{g}.{v}"
        g = load_fit(path, data)
        assert (g.method, g.model.name, g.judgements) == (fit.method, fit.model.name, fit.judgements)
        if fit.method == "svi":
            np.testing.assert_array_equal(g.elbo, fit.elbo)
            assert g.diagnostics(warn=False)["elbo_drift"] == fit.diagnostics(warn=False)["elbo_drift"]
        else:
            np.testing.assert_array_equal(g.diverging, fit.diverging)
            assert g.extra["step_size"] == fit.extra["step_size"]
            for k, v in fit.extra["sample_stats"].items():
                np.testing.assert_array_equal(g.extra["sample_stats"][k], v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = causalplay.compare({m: load_fit(tmp_path / f"svi-{m}.nc", data) for m in MODELS})
        want = causalplay.compare({m: fits[("svi", m)] for m in MODELS})
    np.testing.assert_array_equal(again["elpd_loo"].to_numpy(), want["elpd_loo"].to_numpy())
