"""Benchmark metrics; they live in :mod:`causalplay.core.metrics` (re-exported here)."""

from causalplay.core.metrics import *  # noqa: F401,F403
from causalplay.core.metrics import __all__  # noqa: F401
