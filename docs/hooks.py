"""MkDocs hook: lay the package out as installed before mkdocstrings reads it.

``models/`` and ``envs/`` install as ``causalplay.models`` and ``causalplay.envs`` (``package-dir`` in
pyproject.toml), a mapping griffe does not follow. The hook builds ``build/docs-src/causalplay`` from symlinks
(every entry of ``causalplay/`` plus ``models`` and ``envs``), which ``mkdocs.yml`` gives mkdocstrings as its
search path, the way ``make layers`` lays out a copy for import-linter.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[1]


# Before mkdocstrings' own on_config: it drops search paths that do not exist yet (a fresh clone has no build/).
@event_priority(100)
def on_config(config, **kwargs):
    pkg = ROOT / "build" / "docs-src" / "causalplay"
    shutil.rmtree(pkg, ignore_errors=True)
    pkg.mkdir(parents=True)
    links = {p.name: p for p in (ROOT / "causalplay").iterdir() if p.name not in ("models", "envs")}
    links.update(models=ROOT / "models", envs=ROOT / "envs")
    for name, target in links.items():
        if target.is_file():  # a copy: griffe resolves links, and the package's own folder must be this one
            shutil.copy2(target, pkg / name)
        else:
            (pkg / name).symlink_to(target)
    _index_names(pkg.parent)
    return config


_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const):<code>(~?)([A-Za-z_.][\w.]*)</code>")
#: short name -> the full paths of every object of the package with that name (built once per build, from the
#: laid-out package, statically: nothing is imported)
_NAMES: dict[str, set[str]] = {}


def _index_names(pkg_root: Path) -> None:
    import griffe

    _NAMES.clear()
    try:
        pkg = griffe.load("causalplay", search_paths=[str(pkg_root)], resolve_aliases=False, allow_inspection=False)
    except Exception:  # an index that cannot be built leaves short names unlinked, never breaks the build
        return

    def walk(obj) -> None:
        for name, member in obj.members.items():
            if member.is_alias:
                continue
            _NAMES.setdefault(name, set()).add(member.path)
            if member.is_module or member.is_class:
                walk(member)

    walk(pkg)


def _xref(match: re.Match) -> str:
    """A docstring's Sphinx role as an autorefs link: a full path links where mkdocstrings documents the object (or
    an alias of it); a short name links when exactly one object of the package has it. Links are optional: a
    target without an API entry stays plain code and never fails the strict build."""
    tilde, target = match.groups()
    target = target.lstrip(".")
    title = target.rsplit(".", 1)[-1] if tilde else target
    if target.startswith("causalplay"):
        identifier = target
    else:
        candidates = _NAMES.get(target.rsplit(".", 1)[-1], set())
        if target.count("."):  # Class.method: keep the candidates that end with it
            candidates = {c for c in candidates if c.endswith("." + target)}
        if len(candidates) != 1:
            return f"<code>{title}</code>"
        identifier = next(iter(candidates))
    return f'<autoref identifier="{identifier}" optional><code>{title}</code></autoref>'


def on_page_content(html, page, **kwargs):
    """Docstrings use Sphinx roles (``:class:`~x.Y```), which Markdown leaves as text: make each a cross-reference
    (resolved by mkdocs-autorefs once every page is rendered); and their parameter types' RST literals
    (````[B, H]````) reach the API pages as literal backquotes."""
    html = _ROLE.sub(_xref, html)
    return html.replace("``", "") if page.file.src_uri.startswith("reference/") else html
