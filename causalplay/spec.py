"""Deprecated: moved to :mod:`causalplay.core.spec` (this alias goes in 0.3)."""

import warnings

from causalplay.core.spec import *  # noqa: F403
from causalplay.core.spec import __all__  # noqa: F401

warnings.warn("causalplay.spec moved to causalplay.core.spec", DeprecationWarning, stacklevel=2)
