"""No module of the package uses another module's private names (issue 48, "names that explain themselves").

Checked statically with :mod:`ast`, over every module of the installed layout (``causalplay/``, ``envs/`` as
``causalplay.envs``, ``models/`` as ``causalplay.models``):

* ``from causalplay.x import _name`` (or its relative form) where ``causalplay.x`` is another module;
* ``m._name`` where ``m`` is bound in the module to another causalplay module (``import causalplay.x as m``,
  ``from causalplay import x``).

Not covered (not decidable without running the code): ``obj._name`` on an *object* made by another module, e.g. an
attribute of a task or a hypothesis space; such uses are reviewed by hand (the issue's list). Private *modules*
(``core/_version.py``, ``core/_futures.py``, ``envs/_single.py``) are private to the package, not to a module, and
may be imported anywhere in it; the names they define for the package are public ones.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: package directory -> its module name once installed (pyproject's package-dir)
LAYOUT = {ROOT / "causalplay": "causalplay", ROOT / "envs": "causalplay.envs", ROOT / "models": "causalplay.models"}

#: Private names still imported across modules, each with why it is still allowed (none now; an entry needs a reason).
ALLOWED: set[tuple[str, str]] = set()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def modules() -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    out = {}
    for folder, pkg in LAYOUT.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([pkg, *parts])] = path
    return out


def private_uses(source: str, module: str, is_package: bool, known: set[str]) -> list[str]:
    """The private names of other causalplay modules that ``source`` (module ``module``) imports or reads off an
    imported module, as ``"line: what"``. ``known`` holds the package's module names (to tell a submodule from
    a name)."""
    tree = ast.parse(source)
    here = module.split(".") if is_package else module.split(".")[:-1]
    bound: dict[str, str] = {}  # local name -> the causalplay module it is bound to
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("causalplay") and a.asname:
                    bound[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            src = ".".join(base + ([node.module] if node.module else []))
            if not src.startswith("causalplay"):
                continue
            for a in node.names:
                if _private(a.name) and src != module and (src, a.name) not in ALLOWED:
                    out.append(f"{node.lineno}: from {src} import {a.name}")
                if f"{src}.{a.name}" in known:
                    bound[a.asname or a.name] = f"{src}.{a.name}"
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name)
                and bound.get(node.value.id, module) != module and (bound[node.value.id], node.attr) not in ALLOWED):
            out.append(f"{node.lineno}: {bound[node.value.id]}.{node.attr} (as {node.value.id}.{node.attr})")
    return sorted(out, key=lambda s: int(s.split(":")[0]))


def test_no_module_uses_another_modules_private_names():
    mods = modules()
    assert len(mods) > 100 and "causalplay.envs.task" in mods and "causalplay.models.blicket" in mods
    bad = {name: found for name, path in mods.items()
           if (found := private_uses(path.read_text(), name, path.name == "__init__.py", set(mods)))}
    assert not bad, f"private names used across modules: {bad}"


def test_the_check_finds_what_it_is_for():
    known = {"causalplay.core", "causalplay.core.spec", "causalplay.bench", "causalplay.bench.plots",
             "causalplay.envs", "causalplay.envs.task"}
    src = """
from causalplay.core.spec import HypothesisSpace, _private_helper, __version__
from ..core.spec import _relative
from .plots import _subplots, figure
from causalplay.bench import plots
import causalplay.core.spec as spec
from causalplay.envs.task import _reset_rows
plots._subplots(1)
spec._cache
plots.figure
self._mine
"""
    found = private_uses(src, "causalplay.bench.runner", False, known)
    assert found == ["2: from causalplay.core.spec import _private_helper",
                     "3: from causalplay.core.spec import _relative", "4: from causalplay.bench.plots import _subplots",
                     "7: from causalplay.envs.task import _reset_rows",
                     "8: causalplay.bench.plots._subplots (as plots._subplots)",
                     "9: causalplay.core.spec._cache (as spec._cache)"]
    # a package's own __init__ resolves relative imports from itself; a module's own private names are its own
    assert private_uses("from .spec import _x", "causalplay.core", True, known) == [
        "1: from causalplay.core.spec import _x"]
    assert private_uses("from causalplay.core.spec import _x", "causalplay.core.spec", False, known) == []
