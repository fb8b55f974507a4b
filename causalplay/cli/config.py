"""Command-line helpers: the analysis scripts' command lines, generated from their dataclass configs (tyro), and
the usage errors of the ``causalplay`` sub-commands."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["parse_config", "usage_errors"]

C = TypeVar("C")


def parse_config(cls: type[C], argv: list[str] | None = None, *, smoke: C | None = None,
                 description: str | None = None) -> C:
    """A ``cls`` from the command line: every field of the dataclass is an option (``--field-name VALUE``;
    ``--help`` lists them with their defaults). ``--smoke`` starts from the script's ``smoke`` settings instead of
    the defaults, so ``--smoke --episodes 3`` changes one field of the smoke run.

    Parameters
    ----------
    cls : dataclass type
    argv : list of str, optional
        The arguments (default ``sys.argv[1:]``).
    smoke : cls, optional
        The smoke settings; without them ``--smoke`` is an error.
    description : str, optional
        The ``--help`` header (the script's first docstring line).
    """
    import tyro

    argv = list(sys.argv[1:] if argv is None else argv)
    default = None
    if "--smoke" in argv:
        if smoke is None:
            raise SystemExit(f"{cls.__name__}: this script has no --smoke setting")
        argv.remove("--smoke")
        default = smoke
    return tyro.cli(cls, args=argv, default=default, description=description)


@contextmanager
def usage_errors(hint: str | None = None, errors: tuple[type[Exception], ...] = (ValueError,)) -> Iterator[None]:
    """Turn ``errors`` raised inside into a usage error (exit 2) with their message, naming the option ``hint``
    (default: in a typer callback, the option being parsed)."""
    import typer

    try:
        yield
    except errors as err:
        raise typer.BadParameter(str(err), param_hint=hint) from None
