"""Deprecated: moved to :mod:`causalplay.agents.llm` (this alias goes in 0.3)."""

import warnings

from causalplay.agents.llm import *  # noqa: F403
from causalplay.agents.llm import __all__  # noqa: F401

warnings.warn("causalplay.llm moved to causalplay.agents.llm", DeprecationWarning, stacklevel=2)
