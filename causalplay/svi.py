"""Deprecated: moved to :mod:`causalplay.learners.svi` (this alias goes in 0.3)."""

import warnings

from causalplay.learners.svi import *  # noqa: F403
from causalplay.learners.svi import __all__  # noqa: F401

warnings.warn("causalplay.svi moved to causalplay.learners.svi", DeprecationWarning, stacklevel=2)
