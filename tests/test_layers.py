"""The package's layers, read from the source (every import statement, those inside functions included).

A component is a top-level module or sub-package of ``causalplay`` (``models/`` and ``envs/`` count as
``causalplay.models`` and ``causalplay.envs``, as installed). ``lint-imports`` (run by ``make test``) checks the
layer order of ``pyproject.toml``; these tests check what it does not: no import cycle between any two components,
nothing inside the package imports the package face, and ``import causalplay`` loads neither the environments nor
anything above the core.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"causalplay": "causalplay", "models": "causalplay.models", "envs": "causalplay.envs"}


def _modules() -> dict[str, Path]:
    out = {}
    for folder, pkg in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([pkg, *parts])] = path
    return out


def _component(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(module: str, path: Path, known: dict) -> set[str]:
    """The causalplay modules ``module`` imports anywhere in its file (longest known prefix of each name)."""
    out = set()
    tree = ast.parse(path.read_text(), str(path))
    # imports under ``if TYPE_CHECKING:`` are for annotations only: never run, so no dependency at import time
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and _is_type_checking(node.test)
                   for stmt in node.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = module.split(".")[: len(module.split(".")) - (0 if path.name == "__init__.py" else 1)]
                base = ".".join(pkg[: len(pkg) - node.level + 1] + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        for name in names:
            parts = name.split(".")
            while parts and ".".join(parts) not in known:
                parts.pop()
            if parts:
                out.add(".".join(parts))
    return out


def _graph() -> dict[str, set[str]]:
    known = _modules()
    graph: dict[str, set[str]] = {}
    for mod, path in known.items():
        for target in _imports(mod, path, known):
            a, b = _component(mod), _component(target)
            if a != b:
                graph.setdefault(a, set()).add(b)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                out.append(sorted(scc))

    for v in sorted(set(graph) | {w for ws in graph.values() for w in ws}):
        if v not in index:
            visit(v)
    return out


def test_the_checker_finds_a_cycle_and_a_function_level_import(tmp_path):
    """The checker itself, on a hand-made graph and a hand-made file."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": {"c"}}) == []
    f = tmp_path / "x.py"
    f.write_text("import os\n\ndef g():\n    from causalplay.core.rules import Rule\n    from .eig import eig_bits\n")
    known = {"causalplay.core.rules": None, "causalplay.core.eig": None, "causalplay.core": None}
    assert _imports("causalplay.core.x", f, known) == {"causalplay.core.rules", "causalplay.core.eig"}
    f.write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .eig import eig_bits\n"
                 "import typing\n\nif typing.TYPE_CHECKING:\n    from causalplay.core.rules import Rule\n")
    assert _imports("causalplay.core.x", f, known) == set()  # annotations only: not a dependency at run time


def test_no_import_cycle_between_components():
    graph = _graph()
    assert len(graph) >= 10  # the walk found the package
    assert _cycles(graph) == []


def test_nothing_inside_the_package_imports_its_face():
    known = _modules()
    offenders = [m for m, path in known.items() if m != "causalplay" and "causalplay" in _imports(m, path, known)]
    assert offenders == []


def test_import_causalplay_loads_only_the_core_and_learners():
    code = ("import sys, causalplay; causalplay.infer([([0], True)], n_objects=2); "
            "print(sorted({'.'.join(m.split('.')[:2]) for m in sys.modules if m.startswith('causalplay')}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['causalplay', 'causalplay.core', 'causalplay.learners']"


def _package(module: str, known: dict) -> str:
    """The package a module's file belongs to (a package's ``__init__`` belongs to the package itself)."""
    return module if known[module].name == "__init__.py" else module.rsplit(".", 1)[0]


def _file_graph() -> dict[str, set[str]]:
    """Imports between the files of one package (a package's ``__init__`` counts as one of its files)."""
    known = _modules()
    graph: dict[str, set[str]] = {}
    for mod, path in known.items():
        pkg = _package(mod, known)
        for target in _imports(mod, path, known):
            if target != mod and _package(target, known) in (pkg, mod) or pkg == target:
                graph.setdefault(mod, set()).add(target)
    return graph


#: File-level cycles not yet taken apart (none: a new one fails the test below).
KNOWN_FILE_CYCLES: list[list[str]] = []


def test_the_file_graph_sees_a_cycle_through_a_package_init(tmp_path, monkeypatch):
    """``envs/__init__`` -> ``envs.families`` -> ``envs.vector`` -> ``envs/__init__`` (the shape that was taken apart
    when the vector env stopped importing the package) is a cycle to this graph."""
    known = {"p": Path("p/__init__.py"), "p.a": Path("p/a.py"), "p.b": Path("p/b.py"), "q.c": Path("q/c.py")}
    imports = {"p": {"p.a"}, "p.a": {"p.b", "q.c"}, "p.b": {"p"}, "q.c": set()}
    monkeypatch.setattr(sys.modules[__name__], "_modules", lambda: known)
    monkeypatch.setattr(sys.modules[__name__], "_imports", lambda m, path, k: imports[m])
    assert _cycles(_file_graph()) == [["p", "p.a", "p.b"]]


def test_no_import_cycle_between_the_files_of_a_package():
    """Counting imports inside functions; the cycles still to take apart are listed, so a new one fails here."""
    assert sorted(sorted(c) for c in _cycles(_file_graph())) == KNOWN_FILE_CYCLES
