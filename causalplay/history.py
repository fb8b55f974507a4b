"""Deprecated: moved to :mod:`causalplay.core.history` (this alias goes in 0.3)."""

import warnings

from causalplay.core.history import *  # noqa: F403
from causalplay.core.history import __all__  # noqa: F401

warnings.warn("causalplay.history moved to causalplay.core.history", DeprecationWarning, stacklevel=2)
