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
    return config


_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const):(<code>)~?")


def on_page_content(html, page, **kwargs):
    """Docstrings use Sphinx roles (``:class:`~x.Y```), which Markdown leaves as text: keep only the code; and
    their parameter types' RST literals (````[B, H]````) reach the API pages as literal backquotes."""
    html = _ROLE.sub(r"\1", html)
    return html.replace("``", "") if page.file.src_uri.startswith("reference/") else html
