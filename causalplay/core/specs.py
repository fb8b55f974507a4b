"""The one spec grammar: ``name:key=value:key=value`` names an agent (Blicket, causal-DAG, physics) or a choice
model with options, e.g. ``planner:depth=2`` or ``llm:model=m:base_url='http://h:8000/v1'``.

Values are Python literals (``depth=2``, ``oracle_beliefs=False``, ``cache=None``, ``[1, 2]``), bare strings
(``model=gpt-4o-mini``, ``path=runs/rl/ppo``) or lists of names (``shared=[gamma,stop_a]``); a value that
contains ``:`` or ``,`` must be quoted. A spec is parsed
once into a :class:`Spec` -- hashable and picklable, so benchmark workers receive it as it is -- and a list of specs
is split at commas outside quotes and brackets (:func:`split_specs`).

Code that builds a spec calls :func:`format_spec`, which quotes what needs quoting, so a value (a path with a
colon, a string that reads as a number) always parses back as itself; never build one by string formatting.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Spec", "format_spec", "parse_spec", "split_specs"]


@dataclass(frozen=True)
class Spec:
    """A parsed spec: ``name`` and its options as sorted ``(key, value)`` pairs (hashable).

    ``text`` is the spec as written (the benchmark's row label and shard identity).
    """

    name: str
    options: tuple[tuple[str, object], ...] = ()
    text: str = ""

    def __hash__(self) -> int:  # options may hold lists, so hash the written form
        return hash((self.name, self.text))

    @property
    def kwargs(self) -> dict:
        return dict(self.options)

    def __str__(self) -> str:
        return self.text or self.name


def _split_outside_quotes(text: str, sep: str, what: str) -> list[str]:
    """Split ``text`` at ``sep`` where it is outside quotes ('...' or "...", backslash escapes inside) and outside
    brackets (``()[]{}``), so Python literals such as ``[1, 2]`` or ``'http://h:80/v1'`` stay whole."""
    parts, cur, quote, depth, i = [], [], None, 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            if ch == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            cur.append(ch)
        elif ch in "([{" or ch in ")]}":
            depth += 1 if ch in "([{" else -1
            cur.append(ch)
        elif ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    if quote:
        raise ValueError(f"{what} {text!r} has an unterminated {quote} quote")
    if depth != 0:
        raise ValueError(f"{what} {text!r} has unbalanced brackets")
    parts.append("".join(cur))
    return parts


def split_specs(text: str, what: str = "agent list") -> list[str]:
    """``"eig,llm:model=m:base_url='http://h:8000/v1'"`` -> the two specs: commas inside quotes or brackets do not
    separate specs. Blank entries are dropped."""
    return [s.strip() for s in _split_outside_quotes(text, ",", what) if s.strip()]


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")  # a list's bare items: parameter or agent names, not expressions


def _is_literal(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return False
    return True


def _parse_value(value: str, opt: str, spec: str, what: str):
    if not value:
        raise ValueError(f"{what} option {opt!r} in {spec!r} has an empty value; write key=value "
                         "(quote a value that contains ':' or ',')")
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        items = [v.strip() for v in value[1:-1].split(",")] if value[0] == "[" and value[-1] == "]" else []
        if items and all(_NAME.fullmatch(v) or _is_literal(v) for v in items):
            # a list of names (and plain literals): shared=[gamma,stop_a]
            return [v if _NAME.fullmatch(v) and not _is_literal(v) else ast.literal_eval(v) for v in items]
        if value[0] in "'\"([{":  # meant as a literal (quoted string, list, ...) but not a valid one
            raise ValueError(f"{what} option {opt!r} in {spec!r}: {value!r} is not a valid Python literal") from None
        if any(c in value for c in "'\"") or any(c.isspace() for c in value):
            raise ValueError(f"{what} option {opt!r} in {spec!r}: bare value {value!r} may not contain quotes or "
                             "spaces; quote the whole value") from None
        return value  # a bare string, e.g. model=gpt-4o-mini


def parse_spec(spec: str | Spec, known: Iterable[str] | None = None, what: str = "agent") -> Spec:
    """Parse ``name:key=value:key=value`` into a :class:`Spec` (a Spec is returned as it is).

    Parameters
    ----------
    spec : str or Spec
    known : iterable of str, optional
        The names allowed (a registry's keys); an unknown name is a ``ValueError`` listing them.
    what : str
        What the spec names, for messages ("agent", "DAG agent", "choice model").

    Examples
    --------
    >>> parse_spec("planner:depth=2:beam=4").kwargs
    {'beam': 4, 'depth': 2}
    >>> parse_spec("llm:model=qwen2.5:base_url='http://127.0.0.1:8000/v1'").kwargs["base_url"]
    'http://127.0.0.1:8000/v1'

    Raises
    ------
    ValueError
        Unknown name, an option that is not ``key=value``, a repeated key, an empty value, an unterminated quote,
        or a value that looks like a literal but is not one. Each message names the spec.
    """
    if isinstance(spec, Spec):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"{what} spec must be a string like 'planner:depth=2', got {spec!r}")
    text = spec.strip()
    name, *opts = _split_outside_quotes(text, ":", f"{what} spec")
    if known is not None and name not in (known := list(known)):
        raise ValueError(f"unknown {what} {name!r} in {spec!r}; expected one of {known}")
    kwargs: dict = {}
    for opt in opts:
        key, sep, value = opt.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            hint = " (quote a value that contains ':' or ',')" if "=" not in opt else ""
            raise ValueError(f"{what} option {opt!r} in {spec!r} must look like key=value{hint}")
        if key in kwargs:
            raise ValueError(f"{what} option {key!r} is given twice in {spec!r}")
        kwargs[key] = _parse_value(value.strip(), opt, spec, what)
    return Spec(name, tuple(sorted(kwargs.items())), text)


_UNSAFE_BARE = set(":,'\"()[]{}=\\")


def _literal(value: object, where: str) -> str:
    """``value`` as a compact Python literal (no spaces, strings always quoted) that ``ast.literal_eval`` reads back."""
    if value is None or isinstance(value, bool | int | float):
        if isinstance(value, float) and value != value:  # nan has no literal
            raise ValueError(f"{where}: {value!r} has no Python literal; expected a finite number")
        if isinstance(value, float) and value in (float("inf"), float("-inf")):
            raise ValueError(f"{where}: {value!r} has no Python literal; expected a finite number")
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, list | tuple):
        inner = ",".join(_literal(v, where) for v in value)
        if isinstance(value, tuple):
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        return f"[{inner}]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_literal(k, where)}:{_literal(v, where)}" for k, v in value.items()) + "}"
    raise TypeError(f"{where}: {value!r} ({type(value).__name__}) cannot be written in a spec; expected None, a "
                    "bool, int, float, str, or a list, tuple or dict of those")


def _bare(value: object) -> bool:
    """A string that reads back as itself when written without quotes."""
    if not isinstance(value, str) or not value or (_UNSAFE_BARE & set(value)) or any(c.isspace() for c in value):
        return False
    try:
        ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return True  # e.g. gpt-4o-mini, runs/rl/ppo
    return False  # '1', 'True': would read back as another type


def _value(value: object, where: str) -> str:
    """A bare string where it reads back as the same string, a list of them as ``[a,b]``, else a literal."""
    if _bare(value):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) and _bare(v) and _NAME.fullmatch(v)
                                                 for v in value):
        return "[" + ",".join(value) + "]"
    return _literal(value, where)


def format_spec(name: str, /, **options: object) -> str:
    """The spec text for ``name`` with ``options``, in the one grammar: ``name:key=value:...``, keys sorted.

    Values are written so that :func:`parse_spec` reads each back as itself: strings bare where that is unambiguous
    (``model=gpt-4o-mini``), otherwise quoted (a path with ``:``, ``'True'``, ``'1'``); a list of names without
    quotes (``shared=[gamma,stop_a]``, which :func:`parse_spec` reads as a list of strings); other lists,
    tuples and dicts as compact literals (``x=[1,2.5]``, ``names=['a b','c']``). Options whose value is ``None``
    are written (``cache=None``).

    Examples
    --------
    >>> format_spec("eig_sweep", shared=["gamma", "stop_a"])
    'eig_sweep:shared=[gamma,stop_a]'
    >>> format_spec("rl", path="C:/runs/ppo", name="ppo-s1")
    "rl:name=ppo-s1:path='C:/runs/ppo'"
    >>> parse_spec(format_spec("llm", model="1")).kwargs
    {'model': '1'}

    Raises
    ------
    ValueError
        ``name`` empty or containing a character of the grammar (``: , = ' "`` or brackets), a key that is not an
        identifier, or a float with no literal (nan, inf).
    TypeError
        A value of another type (an object, a set, a Path: pass ``str(path)``).
    """
    if not isinstance(name, str) or not name.strip() or (_UNSAFE_BARE & set(name)) or name != name.strip():
        raise ValueError(f"spec name {name!r} must be a non-empty string without spaces around it and without "
                         "any of : , = ' \" ( ) [ ] { }")
    parts = [name]
    for key in sorted(options):
        if not key.isidentifier():
            raise ValueError(f"spec option key {key!r} of {name!r} must be a Python identifier")
        parts.append(f"{key}={_value(options[key], f'spec {name!r} option {key!r}')}")
    return ":".join(parts)
