"""Load an analysis script (``analyses/<name>.py``, not a package) as a module for its smoke test."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ANALYSES = Path(__file__).resolve().parents[1] / "analyses"


def load_analysis(name: str) -> ModuleType:
    """Import ``analyses/<name>.py`` under the module name ``name`` (registered in ``sys.modules``, where
    dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(name, ANALYSES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
