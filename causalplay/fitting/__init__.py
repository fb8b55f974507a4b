"""Fit models of people's choices to human Blicket data: hierarchical Bayesian fits (NUTS or SVI) -> ArviZ.

::

    from causalplay.data import load_nexiom
    from causalplay.fitting import NUTSOptions
    fit_data, held_out = load_nexiom().split(0.25, seed=0)
    f = causalplay.fit(fit_data, model="eig_sweep", nuts=NUTSOptions(chains=4))
    f.diagnostics(); f.summary(); f.score(held_out)
    causalplay.compare({"eig": f, "random": causalplay.fit(fit_data, model="random")}, held_out)

One module per concept:

* :mod:`.parameterisation` -- the :class:`Parameterisation` (shared / hierarchical non-centred / flat) of a model's
  parameters: sites, priors, log density, constrained values, new participants;
* :class:`NUTSOptions`, :class:`SVIOptions` -- the settings of :mod:`causalplay.core.pyro`, the one Pyro driver;
* :mod:`.inference` -- :func:`fit` and the :class:`Fit` it returns (diagnostics, summaries);
* :mod:`.scoring` -- held-out scores (choices and judgements), LOO/WAIC with Pareto-k, paired comparisons;
* :mod:`.simulation` -- simulated participants, driving the Nexiom batch task;
* :mod:`.convert` -- ArviZ InferenceData with named dims.
"""

from ..core.pyro import NUTSOptions, SVIOptions
from .inference import ConvergenceWarning, Fit, fit, load_fit
from .parameterisation import Parameterisation
from .scoring import Score, compare, fit_and_score, heldout_score, ic_table, paired_difference
from .simulation import simulate, simulate_fit

__all__ = ["fit", "load_fit", "compare", "Fit", "Score", "simulate", "simulate_fit", "NUTSOptions", "SVIOptions",
           "Parameterisation", "ConvergenceWarning", "heldout_score", "fit_and_score", "paired_difference", "ic_table"]
