"""Deprecated: moved to :mod:`causalplay.core.overhypothesis` (this alias goes in 0.3)."""

import warnings

from causalplay.core.overhypothesis import *  # noqa: F403
from causalplay.core.overhypothesis import __all__  # noqa: F401

warnings.warn("causalplay.overhypothesis moved to causalplay.core.overhypothesis", DeprecationWarning, stacklevel=2)
