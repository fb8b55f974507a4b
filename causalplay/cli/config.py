"""Command lines of the analysis scripts, generated from their dataclass configs (tyro)."""

from __future__ import annotations

import sys
from typing import TypeVar

__all__ = ["parse_config"]

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
