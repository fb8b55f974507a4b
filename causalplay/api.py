"""Deprecated: moved to :mod:`causalplay.learners.api` (this alias goes in 0.3)."""

import warnings

from causalplay.learners.api import *  # noqa: F403
from causalplay.learners.api import __all__  # noqa: F401

warnings.warn("causalplay.api moved to causalplay.learners.api", DeprecationWarning, stacklevel=2)
