"""Deprecated: moved to :mod:`causalplay.core.eig` (this alias goes in 0.3)."""

import warnings

from causalplay.core.eig import *  # noqa: F403
from causalplay.core.eig import __all__  # noqa: F401

warnings.warn("causalplay.eig moved to causalplay.core.eig", DeprecationWarning, stacklevel=2)
