"""Deprecated: moved to :mod:`causalplay.core.exact` (this alias goes in 0.3)."""

import warnings

from causalplay.core.exact import *  # noqa: F403
from causalplay.core.exact import __all__  # noqa: F401

warnings.warn("causalplay.exact moved to causalplay.core.exact", DeprecationWarning, stacklevel=2)
