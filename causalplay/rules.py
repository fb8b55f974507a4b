"""Deprecated: moved to :mod:`causalplay.core.rules` (this alias goes in 0.3)."""

import warnings

from causalplay.core.rules import *  # noqa: F403
from causalplay.core.rules import __all__  # noqa: F401

warnings.warn("causalplay.rules moved to causalplay.core.rules", DeprecationWarning, stacklevel=2)
