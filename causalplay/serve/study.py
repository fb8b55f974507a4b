"""The study file of ``causalplay serve --study study.toml``: what participants read and which conditions run.

A TOML file (read with :mod:`tomllib`) whose top-level keys are the fields of :class:`Study`; conditions are
``[[conditions]]`` tables, an adaptive study's settings an ``[adaptive]`` table
(:class:`causalplay.serve.adaptive.AdaptiveSpec`). Every key is checked (an unknown key or a wrong type is an
error naming it); the conditions are checked against the task by :class:`causalplay.serve.tasks.ServedTask`.
``docs/serve.md`` shows complete examples. ``consent`` and ``debrief`` are Markdown (CommonMark); raw HTML in
them is shown as text.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from pathlib import Path

from markupsafe import Markup

from .adaptive import AdaptiveSpec

__all__ = ["Study", "load_study", "markdown"]


@dataclass(frozen=True)
class Study:
    """One study's settings (every field has a default, so an empty file is a valid study).

    Attributes
    ----------
    title, researcher, contact, ethics, duration, payment : str
        Shown on the consent page (``contact`` also on every error page and the debrief).
    consent, debrief : str
        Markdown: the study information above the consent box, and the text of the debrief page.
    completion_url, completion_code : str
        Shown on the debrief page (e.g. Prolific's completion link and code); the URL must be http(s).
    task : str
        ``nexiom``, ``ivre`` or ``est``.
    max_tests : int
        Tests per participant (0: the task's own number, 16 for Nexiom, 6 for IVRE/EST).
    practice : bool
        A practice machine before the task (its tests are logged as events, never exported as choices).
    randomise_rule : bool
        IVRE/EST default conditions cross the number of blickets with both rules (else the task's own rule).
    conditions : tuple of dict
        ``[[conditions]]`` tables (``label``; ``rule`` and ``blickets`` for Nexiom; ``n_blickets`` and optional
        ``rule`` for IVRE/EST); empty: the task's defaults.
    raw_ids : bool
        Export the Prolific ids as they are; by default the export carries a salted hash of them.
    id_salt : str
        Salt of that hash (default: random per server start; set it to recompute a participant's hash later).
    timeout_minutes : float
        A session idle this long without finishing is abandoned: its condition goes to the next participant.
    adaptive : AdaptiveSpec or None
        The ``[adaptive]`` table: each participant's design is chosen at consent by sequential adaptive design
        optimisation (:class:`causalplay.serve.adaptive.AdaptiveSpec`); it replaces ``conditions``.
    """

    title: str = "The Blicket machine"
    researcher: str = ""
    contact: str = ""
    ethics: str = ""
    duration: str = "about 5 minutes"
    payment: str = ""
    consent: str = ""
    debrief: str = ""
    completion_url: str = ""
    completion_code: str = ""
    task: str = "nexiom"
    max_tests: int = 0
    practice: bool = True
    randomise_rule: bool = True
    conditions: tuple = ()
    raw_ids: bool = False
    id_salt: str = ""
    timeout_minutes: float = 60.0
    adaptive: AdaptiveSpec | None = None

    def __post_init__(self):
        if isinstance(self.adaptive, dict):
            object.__setattr__(self, "adaptive", AdaptiveSpec.from_table(self.adaptive))
        elif not (self.adaptive is None or isinstance(self.adaptive, AdaptiveSpec)):
            raise ValueError(f"study: adaptive must be an [adaptive] table, got {self.adaptive!r}")
        if self.adaptive is not None and self.conditions:
            raise ValueError("study: an [adaptive] study chooses each participant's design itself; remove its "
                             "[[conditions]] (the conditions are the worlds of the candidate designs)")
        for f in fields(self):
            if f.name == "adaptive":
                continue
            v, want = getattr(self, f.name), type(f.default)
            if isinstance(v, list):
                object.__setattr__(self, f.name, v := tuple(v))
            if want is float and type(v) is int:
                object.__setattr__(self, f.name, v := float(v))
            if type(v) is not want:
                raise ValueError(f"study: {f.name} must be a {want.__name__}, got {v!r}")
        if not all(isinstance(c, dict) for c in self.conditions):
            raise ValueError(f"study: conditions must be [[conditions]] tables, got {self.conditions!r}")
        if self.completion_url and not self.completion_url.startswith(("https://", "http://")):
            raise ValueError(f"study: completion_url must start with https:// or http://, got {self.completion_url!r}")
        if not self.timeout_minutes > 0:
            raise ValueError(f"study: timeout_minutes must be > 0, got {self.timeout_minutes!r}")


def load_study(path: str | Path) -> Study:
    """The :class:`Study` of the TOML file at ``path`` (errors name the file and the key)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ValueError(f"study file {path}: {err}") from None
    known = {f.name for f in fields(Study)}
    if unknown := sorted(set(data) - known):
        raise ValueError(f"study file {path}: unknown keys {unknown}; the keys are {sorted(known)}")
    try:
        study = Study(**data)
    except ValueError as err:
        raise ValueError(f"study file {path}: {err}") from None
    if study.adaptive is not None:  # its files are named relative to the study file
        study = replace(study, adaptive=study.adaptive.relative_to(path.parent))
    return study


@lru_cache(maxsize=64)
def markdown(text: str) -> Markup:
    """``text`` (CommonMark) as HTML; raw HTML is escaped and only safe link schemes are kept (markdown-it)."""
    from markdown_it import MarkdownIt

    return Markup(MarkdownIt("commonmark", {"html": False}).render(text))
