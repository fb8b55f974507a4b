"""Turning a model's free-text answer into a set of objects, with every failure counted, never raised.

Rules (objects are 1-based in the text, ``1..n``):

* With a template ``answer_marker`` (chain of thought), only the text after its last occurrence is read; the
  first non-empty line of what remains is the answer (a model that goes on talking after its answer does
  not add objects).
* Phrases the template's question primed (``"From 1-9,"``, ``"objects that can activate the machine are"``,
  ``"I will put"``) are removed first, so an echoed primer is not read as the objects 1 and 9.
* Numbers are objects; ``a-b`` / ``a to b`` with ``a < b`` is a range. Number words (one..twenty) count only
  in an answer made of nothing else ("three and five"), so "no one knows" is not object 1.
* "None", "no objects", "nothing", "no object", "none of them" alone mean the empty set (a valid answer).
* The answer **fails** to parse (``ok=False``) when it names no object and is not an explicit "none" (empty
  replies, refusals, prose), or when it names a number outside ``1..n`` (the in-range numbers are kept).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .template import NUMBER_WORDS

__all__ = ["ParsedAnswer", "parse_objects"]

#: number word -> its value (``"nine" -> 9``), the words the dialogue template writes
WORD_NUMBERS = {w: i for i, w in enumerate(NUMBER_WORDS)}
_WORDS = "|".join(sorted(WORD_NUMBERS, key=len, reverse=True))
_NUM = rf"(?:\d+|{_WORDS})"
_RANGE = re.compile(rf"\b({_NUM})\s*(?:-|–|—|\bto\b|\bthrough\b)\s*({_NUM})\b", re.I)
_DIGITS = re.compile(r"\b\d+\b")
_WORD_LIST = re.compile(rf"(?:[\s,.;!]|\band\b|\bobjects?\b|{_WORDS})*", re.I)
_WORD = re.compile(rf"\b(?:{_WORDS})\b", re.I)
_NONE = re.compile(r"^\s*(?:none(?: of them)?|no objects?|nothing|no object can|there are none|"
                   r"none of the objects)\b[^0-9]*$", re.I)


@dataclass(frozen=True)
class ParsedAnswer:
    """``objects``: sorted 0-based indices; ``ok``: parsed cleanly; ``reason``: why not (``""`` when ok)."""

    objects: tuple[int, ...]
    ok: bool
    reason: str = ""


def _num(token: str) -> int:
    t = token.lower()
    return WORD_NUMBERS[t] if t in WORD_NUMBERS else int(t)


def parse_objects(text: str | None, n_objects: int, primers: tuple[str, ...] = (),
                  answer_marker: str | None = None) -> ParsedAnswer:
    """Parse one answer into 0-based object indices (see the module docstring for the rules).

    Parameters
    ----------
    text : str or None
        The model's reply (``None`` -- no content -- fails).
    n_objects : int
        Objects are ``1..n_objects`` in the text.
    primers : tuple of str
        Phrases to remove before reading numbers (a template's :meth:`answer_primer_phrases`).
    answer_marker : str, optional
        Read only after the last occurrence of this marker.

    Returns
    -------
    ParsedAnswer
    """
    if text is None or not text.strip():
        return ParsedAnswer((), False, "empty reply")
    s = text
    if answer_marker:
        idx = s.lower().rfind(answer_marker.lower())
        if idx < 0:
            return ParsedAnswer((), False, f"no {answer_marker!r} line")
        s = s[idx + len(answer_marker):]
    lines = [ln for ln in s.splitlines() if ln.strip()]
    s = lines[0] if lines else ""
    for p in sorted(primers, key=len, reverse=True):
        s = re.sub(re.escape(p), " ", s, flags=re.I)
    if _NONE.match(s):
        return ParsedAnswer((), True)
    found: set[int] = set()
    bad: list[int] = []

    def take(v: int) -> None:
        (found.add(v - 1) if 1 <= v <= n_objects else bad.append(v))

    def repl(m: re.Match) -> str:
        a, b = _num(m.group(1)), _num(m.group(2))
        if a < b:
            for v in range(a, b + 1):
                take(v)
            return " "
        return m.group(0).replace("-", " ")

    words_only = not any(c.isdigit() for c in s) and _WORD_LIST.fullmatch(s) is not None
    s = _RANGE.sub(repl, s) if words_only or any(c.isdigit() for c in s) else s
    for m in (_WORD if words_only else _DIGITS).finditer(s):
        take(_num(m.group(0)))
    objs = tuple(sorted(found))
    if bad:
        return ParsedAnswer(objs, False, f"out of range 1-{n_objects}: {bad}")
    if not objs:
        return ParsedAnswer((), False, "no object named")
    return ParsedAnswer(objs, True)
