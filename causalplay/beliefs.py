"""Deprecated: moved to :mod:`causalplay.core.beliefs` (this alias goes in 0.3)."""

import warnings

from causalplay.core.beliefs import *  # noqa: F403
from causalplay.core.beliefs import __all__  # noqa: F401

warnings.warn("causalplay.beliefs moved to causalplay.core.beliefs", DeprecationWarning, stacklevel=2)
