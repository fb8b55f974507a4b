"""causalplay.fitting.sbc: the rank statistics and their uniformity test checked by hand, and a small end-to-end
smoke run (prior draw -> simulated participants on designs -> SVI fit -> ranks -> plot)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from analysis import load_analysis
from scipy.stats import chi2

from causalplay.design import Design, nexiom_designs
from causalplay.fitting import SBCResult, SVIOptions, rank_uniformity, sbc


def test_uniformity_by_hand():
    """L = 9 (10 ranks), 20 simulations, 2 bins (ranks 0-4, 5-9; 10 expected in each, the most bins leaving 5
    per bin): counts (16, 4) -> chi2 = (36 + 36) / 10 = 7.2 on 1 df; uniform counts (10, 10) -> 0, p = 1."""
    skewed = pd.DataFrame({"a": [0] * 16 + [9] * 4, "b": [0, 9] * 10})
    t = rank_uniformity(skewed, L=9)
    assert t.loc["a", "bins"] == 2 and t.loc["a", "chi2"] == pytest.approx(7.2)
    assert t.loc["a", "p_value"] == pytest.approx(chi2.sf(7.2, 1))
    assert t.loc["b", "chi2"] == 0.0 and t.loc["b", "p_value"] == pytest.approx(1.0)
    # mean of rank / L: (4 * 9) / 20 / 9 = 0.2; SE under uniformity sqrt((L + 2) / (12 L) / n)
    assert t.loc["a", "mean_rank"] == pytest.approx(0.2)
    assert t.loc["a", "mean_rank_se"] == pytest.approx(np.sqrt(11 / 108 / 20))
    # 5 bins by request: counts (16, 0, 0, 0, 4), expected 4 each: chi2 = (144 + 16 * 3 + 0) / 4 = 48
    assert rank_uniformity(skewed, L=9, bins=5).loc["a", "chi2"] == pytest.approx(48.0)


def test_uniform_ranks_pass_and_a_u_shape_fails():
    rng = np.random.default_rng(0)
    L, n = 99, 400
    ok = pd.DataFrame({"x": rng.integers(0, L + 1, n)})
    u = pd.DataFrame({"x": np.where(rng.random(n) < 0.5, rng.integers(0, 10, n), rng.integers(90, 100, n))})
    assert rank_uniformity(ok, L).loc["x", "p_value"] > 0.01  # seeded: p = 0.43 here
    assert rank_uniformity(u, L).loc["x", "p_value"] < 1e-10
    assert rank_uniformity(ok, L).loc["x", "bins"] == 20


def test_bad_input():
    with pytest.raises(ValueError, match="ranks must lie in 0 .. L=9"):
        rank_uniformity(pd.DataFrame({"a": [10] * 20}), L=9)
    with pytest.raises(ValueError, match="too few"):
        rank_uniformity(pd.DataFrame({"a": [1, 2, 3]}), L=9)
    with pytest.raises(ValueError, match="does not divide"):
        rank_uniformity(pd.DataFrame({"a": [1] * 30}), L=9, bins=3)
    with pytest.raises(ValueError, match="method"):
        sbc("random", nexiom_designs(), method="mcmc")
    with pytest.raises(TypeError, match="designs must be"):
        sbc("random", [1, 2])
    with pytest.raises(ValueError, match="share n_objects"):
        sbc("random", [Design(3, (0,), "disjunctive"), Design(4, (0,), "disjunctive")])


def test_smoke_run_and_plot(tmp_path):
    """Two simulations of `random` on 4 designs (one with a demonstration and a told count), short SVI fits: one
    rank per population parameter in 0 .. L, the fit's checks kept per simulation, the same seed the same ranks."""
    designs = nexiom_designs()[:3] + [Design(4, (0, 1), "conjunctive", demonstrations=[(0, 1)], n_blickets_told=2)]
    svi = SVIOptions(steps=30, draws=20, progress=False)
    r = sbc("random", designs, method="svi", sims=2, L=9, svi=svi, max_tests=6, seed=1)
    assert isinstance(r, SBCResult) and r.sims == 2
    assert list(r.ranks.columns) == ["rho_raw", "stop_a_mu", "stop_a_sigma", "stop_h_raw", "stop_t_raw", "lapse_raw",
                                     "judge_lapse_raw"]
    assert ((r.ranks >= 0) & (r.ranks <= 9)).all().all()
    assert (r.diagnostics["participants"] == 4).all() and "elbo_converged" in r.diagnostics
    again = sbc("random", designs, method="svi", sims=1, L=9, svi=svi, max_tests=6, seed=1, first=1)
    assert again.ranks.index.tolist() == [1] and again.ranks.loc[1].equals(r.ranks.loc[1])
    first = SBCResult(r.ranks.loc[[0]], 9, r.model, r.method, r.diagnostics.loc[[0]])
    assert SBCResult.concat([again, first]).ranks.equals(r.ranks)
    with pytest.raises(ValueError, match="appear twice"):
        SBCResult.concat([again, again])
    r.plot(tmp_path / "sbc.png")
    assert (tmp_path / "sbc.png").stat().st_size > 1000


def test_analysis_refuses_to_join_chunks_of_other_settings(tmp_path):
    """analyses/design_sbc.py's chunks carry no fit options: the run folder records them and a rerun with other
    options, or chunks with no record, stop with the difference named instead of joining two fits' ranks."""
    check = load_analysis("design_sbc").check_settings
    nuts = {"model": "m", "method": "nuts", "L": 99, "seed": 0, "nuts_chains": 2, "nuts_warmup": 300,
            "nuts_draws": 300}
    check(tmp_path, "m_nuts_0", nuts)
    assert json.loads((tmp_path / "m_nuts_0.json").read_text()) == nuts
    check(tmp_path, "m_nuts_0", dict(nuts))  # the same settings: carry on
    with pytest.raises(SystemExit, match=r"nuts_warmup: 300 there, 500 now"):
        check(tmp_path, "m_nuts_0", {**nuts, "nuts_warmup": 500})
    (tmp_path / "m_svi_0_0000.pkl").write_bytes(b"")
    with pytest.raises(SystemExit, match="no record of their settings"):
        check(tmp_path, "m_svi_0", {**nuts, "method": "svi"})


def test_retry_ladder_reaches_the_fit_and_is_checked(monkeypatch):
    """sbc(retry_target_accept=...) is the ladder each simulation's fit gets (fit's own by default); a value
    outside (0, 1) is refused by name before any simulation runs."""
    import causalplay.fitting.inference as inference

    seen, real = [], inference.fit

    def spy(*args, **kw):
        seen.append(kw["retry_target_accept"])
        return real(*args, **kw)

    monkeypatch.setattr(inference, "fit", spy)
    designs = nexiom_designs()[:2]
    svi = SVIOptions(steps=10, draws=20, progress=False)
    sbc("random", designs, method="svi", sims=1, L=9, svi=svi, max_tests=4, retry_target_accept=())
    sbc("random", designs, method="svi", sims=1, L=9, svi=svi, max_tests=4)
    assert seen == [(), (0.95, 0.99)]
    with pytest.raises(ValueError, match="retry_target_accept"):
        sbc("random", designs, method="nuts", retry_target_accept=(1.5,))
