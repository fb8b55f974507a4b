"""The one spec grammar: ``name:key=value:key=value`` names an agent (Blicket, causal-DAG, physics) or a choice
model with options, e.g. ``planner:depth=2`` or ``llm:model=m:base_url='http://h:8000/v1'``.

Values are Python literals (``depth=2``, ``oracle_beliefs=False``, ``cache=None``, ``[1, 2]``) or bare strings
(``model=gpt-4o-mini``, ``path=runs/rl/ppo``); a value that contains ``:`` or ``,`` must be quoted. A spec is parsed
once into a :class:`Spec` -- hashable and picklable, so benchmark workers receive it as it is -- and a list of specs
is split at commas outside quotes and brackets (:func:`split_specs`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Spec", "parse_spec", "split_specs"]


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


def _parse_value(value: str, opt: str, spec: str, what: str):
    if not value:
        raise ValueError(f"{what} option {opt!r} in {spec!r} has an empty value; write key=value "
                         "(quote a value that contains ':' or ',')")
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
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
