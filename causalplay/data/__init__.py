"""Human Blicket-detector trial data: a long-format schema, a validating loader, a checker and shipped data.

* :func:`load_trials` reads a folder (``participants.csv`` + ``tests.csv``; the schema is ``docs/data-schema.md``)
  into :class:`TrialData`, or raises a :class:`DataValidationError` naming every bad cell by file, row, column
  and value.
* :func:`check_data` validates a folder and returns a printable :class:`DataSummary` instead of raising.
* :func:`load_nexiom` -- the shipped Nexiom adults; :func:`example_folder` -- a small example folder to copy.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .check import DataSummary, check_data
from .loader import PARTICIPANT_COLUMNS, TEST_COLUMNS, load_trials
from .trials import SOURCES, DataValidationError, RowIssue, TrialData

__all__ = ["TrialData", "RowIssue", "DataValidationError", "load_trials", "load_nexiom", "check_data",
           "DataSummary", "example_folder", "PARTICIPANT_COLUMNS", "TEST_COLUMNS", "SOURCES"]


def load_nexiom() -> TrialData:
    """The shipped Nexiom adult data (78 participants, 4 objects, 2 blickets; see ``nexiom/README.md``)."""
    folder = resources.files(__name__) / "nexiom"
    with resources.as_file(folder) as path:
        return load_trials(path, n_objects=4)


def example_folder() -> Path:
    """The shipped example folder: an invented 6-participant pilot in the schema (4 objects, both rules, told
    blicket counts, demonstrations, a rule not asked); copy it as the template of your own data.

    Examples
    --------
    >>> from causalplay.data import example_folder, load_trials
    >>> len(load_trials(example_folder()))
    6
    """
    return Path(__file__).resolve().parent / "example"
