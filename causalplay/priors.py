"""Deprecated: moved to :mod:`causalplay.core.priors` (this alias goes in 0.3)."""

import warnings

from causalplay.core.priors import *  # noqa: F403
from causalplay.core.priors import __all__  # noqa: F401

warnings.warn("causalplay.priors moved to causalplay.core.priors", DeprecationWarning, stacklevel=2)
