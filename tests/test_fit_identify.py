"""Pooling factors (Gelman & Pardoe 2006) and what fit() does with a parameter the data do not set per participant:
no retry ladder, a warning that names the model with it shared."""

import logging
import math
import warnings

import pytest
import torch
from causalplay.models.choice import get_model

import causalplay
from causalplay.data import load_nexiom
from causalplay.fitting import ConvergenceWarning, NUTSOptions, Parameterisation
from causalplay.fitting import inference as inf
from causalplay.fitting.identify import pooling_factors, unidentified

F64 = torch.float64


def _raw(sigma, z):
    """``random``'s sites with participant-level stop_a: sigma ``[1, S]`` and z ``[1, S, P]`` (one chain)."""
    z = torch.tensor([z], dtype=F64)
    S, P = z.shape[1:]
    return {"stop_a_mu": torch.zeros(1, S, dtype=F64), "stop_a_sigma": torch.tensor([sigma], dtype=F64),
            "stop_a_z": z}


def test_pooling_factor_by_hand():
    par = Parameterisation(get_model("random"), True, 2)
    assert [p.name for p in par.params if p.level == "participant"] == ["stop_a"]
    # deviations e = sigma * z per draw: [1, -1] and [-1, 1]: the posterior means are 0 for both participants, the
    # spread within each draw is 1: lambda = 1 - 0 / 1 = 1 (the data say nothing about who differs)
    assert pooling_factors(par, _raw([1.0, 1.0], [[1, -1], [-1, 1]])) == {"stop_a": 1.0}
    # e = [1, -1], [3, -3]: means [2, -2], variance over participants 4; within draws 1 and 9, mean 5: 1 - 4/5
    assert pooling_factors(par, _raw([1.0, 1.0], [[1, -1], [3, -3]]))["stop_a"] == pytest.approx(0.2, abs=1e-12)
    # sigma enters: sigma [1, 2], z [1, -1] twice: e = [1, -1], [2, -2]; means [1.5, -1.5] (2.25); within 1, 4
    # (2.5): 1 - 2.25 / 2.5 = 0.1
    assert pooling_factors(par, _raw([1.0, 2.0], [[1, -1], [1, -1]]))["stop_a"] == pytest.approx(0.1, abs=1e-12)
    # every participant's value known exactly and different: no pooling
    assert pooling_factors(par, _raw([0.5, 0.5, 0.5], [[2, 0], [2, 0], [2, 0]]))["stop_a"] == 0.0
    assert pooling_factors(par, _raw([0.0, 0.0], [[1, -1], [3, -3]]))["stop_a"] == 1.0  # no spread at all
    assert unidentified(par, _raw([1.0, 1.0], [[1, -1], [3, -3]])) == {}
    assert unidentified(par, _raw([1.0, 1.0], [[1, -1], [3, -3]]), pooling_max=0.19) == {"stop_a": pytest.approx(0.2)}
    # flat fits pool nothing; one participant has no spread to compare
    assert pooling_factors(Parameterisation(get_model("random"), False, 2), {}) == {}
    assert math.isnan(pooling_factors(Parameterisation(get_model("random"), True, 1),
                                      _raw([1.0, 1.0], [[1], [2]]))["stop_a"])


@pytest.fixture(scope="module")
def small():
    d = load_nexiom()
    return d.subset(d.ids[:4])


# 10 draws never converge, so every fit below misses the criteria at its first attempt
SHORT = NUTSOptions(chains=2, warmup=10, draws=10, workers=1)


def test_unidentified_parameters_stop_the_ladder_and_name_the_shared_model(small, monkeypatch, caplog):
    monkeypatch.setattr(inf, "POOLING_MAX", 0.0)  # every participant-level parameter counts as unidentified
    with caplog.at_level(logging.WARNING, logger="causalplay.fitting.inference"):
        with pytest.warns(ConvergenceWarning) as rec:
            f = causalplay.fit(small, "random", nuts=SHORT)
    assert f.extra["attempts"] == [] and f.options.target_accept == 0.9  # no retries at 0.95 and 0.99
    msg = str(rec[-1].message)
    assert "stop_a (pooling factor" in msg and "is not identified per participant" in msg
    assert "model='random:shared=[stop_a]'" in msg
    assert "the retries at 0.95, 0.99 are skipped" in caplog.text
    d = f.diagnostics(warn=False)
    assert set(d["pooling"]) == {"stop_a"} and d["unidentified"] == d["pooling"]
    assert all(0.0 <= v <= 1.0 for v in d["pooling"].values())


def test_identified_parameters_keep_the_ladder(small, monkeypatch):
    monkeypatch.setattr(inf, "POOLING_MAX", 1.01)  # nothing counts as unidentified: the ladder as before
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        f = causalplay.fit(small, "random", nuts=SHORT)
    assert [a.options.target_accept for a in f.extra["attempts"]] == [0.9, 0.95] and f.options.target_accept == 0.99
    assert f.diagnostics(warn=False)["unidentified"] == {}


def test_summary_leaves_out_the_sampler_sites_of_shared_parameters(small):
    f = causalplay.fit(small, "random", method="svi", svi=causalplay.fitting.SVIOptions(steps=30, draws=20))
    rows = set(f.summary().index)
    assert {"rho", "lapse", "stop_h", "stop_t", "stop_a_mu", "stop_a_sigma"} <= rows
    assert not any(r.endswith("_raw") for r in rows)
    assert "rho_raw" in set(f.summary(var_names=["rho_raw"]).index)  # still there when asked for
