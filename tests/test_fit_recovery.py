"""Parameter recovery: simulate EIG-softmax participants with known parameters, refit, correlate.

Thresholds: Pearson r >= 0.4 for ``log beta`` and r >= 0.5 for ``stop_a`` across 80 simulated participants, and
the shared rule bias ``rho`` within 0.6 of the truth (-2). Why: each simulated participant makes only ~8 choices
(as the humans do), so per-participant estimates are noisy and shrunk; over seeds 0-4 of this setup the measured
correlations were 0.55-0.63 (beta) and 0.62-0.77 (stop_a), and rho came back as -2.26 ... -1.72. With 80
participants a fit that ignored the data would give r ~ N(0, 0.11), so 0.4 (3.6 sd) and 0.5 still catch a broken
fit while tolerating seed variation.
"""

import numpy as np
import torch

import causalplay
from causalplay.fitting import simulate


def _world(rng):
    return (["disjunctive", "conjunctive"][rng.integers(2)], tuple(sorted(rng.choice(4, 2, replace=False))))


def test_eig_softmax_parameters_are_recovered():
    rng = np.random.default_rng(0)
    # Population close to the SVI fit of the Nexiom humans (beta_mu 1.5, beta_sigma 0.8, stop_a_sigma 1.4,
    # rho_mu -2.1), so the spread the test must detect is the one people show.
    P = 80
    truth = {
        "beta": np.exp(rng.normal(1.5, 0.8, P)),
        "rho": -2.0,
        "stop_a": rng.normal(-1.5, 1.4, P),
        "stop_h": -1.0, "stop_t": 0.8, "lapse": 0.05, "judge_lapse": 0.1,
    }
    data = simulate("eig_softmax", truth, [_world(rng) for _ in range(P)], 4, seed=1)
    torch.manual_seed(0)
    f = causalplay.fit(data, model="eig_softmax", method="svi", svi_steps=800, num_samples=200, seed=0,
                       progress=False)
    est = f.participant_means()
    r_beta = np.corrcoef(np.log(truth["beta"]), np.log(est["beta"]))[0, 1]
    r_stop = np.corrcoef(truth["stop_a"], est["stop_a"])[0, 1]
    print(f"recovery r(beta)={r_beta:.2f} r(stop_a)={r_stop:.2f} rho={float(f.raw['rho_raw'].mean()):.2f}")
    assert r_beta >= 0.4
    assert r_stop >= 0.5
    assert abs(float(f.raw["rho_raw"].mean()) + 2.0) < 0.6
