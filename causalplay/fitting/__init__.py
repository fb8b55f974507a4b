"""Fit models of people's choices to human Blicket data: hierarchical Bayesian fits (NUTS or SVI) -> ArviZ.

::

    from causalplay.data import load_nexiom
    fit_data, held_out = load_nexiom().split(0.25, seed=0)
    fits = {m: causalplay.fit(fit_data, m, method="svi") for m in ("eig_sweep", "random")}   # seconds
    print(causalplay.compare(fits, held_out))                                                  # table + verdict
    f = causalplay.fit(fit_data, "eig_sweep")                                                # NUTS, the paper's
    f.diagnostics(); f.summary(); f.score(held_out)

One module per concept:

* :mod:`.parameterisation` -- the :class:`Parameterisation` (shared / hierarchical non-centred / flat) of a model's
  parameters: sites, priors, log density, constrained values, new participants;
* :class:`NUTSOptions`, :class:`SVIOptions` -- the settings of :mod:`causalplay.core.pyro`, the one Pyro driver;
* :mod:`.inference` -- :func:`fit` and the :class:`Fit` it returns (diagnostics, summaries);
* :mod:`.scoring` -- held-out scores (choices and judgements), LOO/WAIC with Pareto-k, paired comparisons
  (:func:`compare` -> :class:`Comparison`);
* :mod:`.workflows` -- k-fold cross-validation and model recovery on any executor of :mod:`causalplay.bench`;
* :mod:`.simulation` -- simulated participants, driving the Nexiom batch task;
* :mod:`.sbc` -- simulation-based calibration of a fit (:func:`sbc`: ranks, a uniformity test, plots);
* :mod:`.convert` -- ArviZ InferenceData with named dims.
"""

from ..core.pyro import NUTSOptions, SVIOptions
from .inference import ConvergenceWarning, Fit, fit, load_fit
from .parameterisation import Parameterisation
from .sbc import SBCResult, rank_uniformity, sbc
from .scoring import Comparison, Score, compare, heldout_score, ic_table, paired_difference
from .simulation import simulate, simulate_fit
from .workflows import fit_and_score

__all__ = ["fit", "load_fit", "compare", "Comparison", "Fit", "Score", "simulate", "simulate_fit", "NUTSOptions",
           "SVIOptions", "Parameterisation", "ConvergenceWarning", "heldout_score", "fit_and_score",
           "paired_difference", "ic_table", "sbc", "SBCResult", "rank_uniformity"]
