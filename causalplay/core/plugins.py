"""Plug-ins from other distributions: Python entry points, resolved by name when first asked for.

Two groups extend causalplay without a change to it (``docs/architecture.md``):

* ``causalplay.agents``: an agent name -> ``module:Class`` (an :class:`causalplay.agents.Agent` subclass). The name
  is then accepted by ``causalplay bench --agents`` and :func:`causalplay.agents.make_agent` for every task family
  the class plays (its ``families`` attribute, a tuple of family names; without one, every family).
* ``causalplay.families``: a family name -> ``module:OBJECT`` (a :class:`causalplay.envs.families.TaskFamily`): its
  env ids, batch tasks, agents, scorer and defaults.

A distribution declares them in its ``pyproject.toml``::

    [project.entry-points."causalplay.agents"]
    my-agent = "my_pkg.agents:MyAgent"

Nothing is imported until a name is used, and every executor's workers (serial, process, Ray, Dask) resolve the
same names from the installed metadata, so an agent that runs in the driver runs in the workers too.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from importlib import metadata

__all__ = ["AGENT_GROUP", "FAMILY_GROUP", "Plugin", "PluginError", "load_object", "plugins"]

AGENT_GROUP = "causalplay.agents"
FAMILY_GROUP = "causalplay.families"


class PluginError(ImportError):
    """A plug-in's entry point could not be loaded; the message names the distribution and the entry point."""


@dataclass(frozen=True)
class Plugin:
    """One entry point of a group: ``name = value`` declared by ``distribution`` (``version``)."""

    name: str
    value: str
    group: str
    distribution: str
    version: str

    @property
    def source(self) -> str:
        """Where the plug-in comes from, for listings and messages: ``distribution version (module:attr)``."""
        return f"{self.distribution} {self.version} ({self.value})"

    def load(self) -> object:
        """The object the entry point names; :class:`PluginError` naming the distribution if it fails to import."""
        try:
            return load_object(self.value)
        except Exception as err:  # any failure in a third party's import is reported as that plug-in's
            raise PluginError(f"plug-in {self.name!r} ({self.group} = {self.value!r}) of distribution "
                              f"{self.distribution} {self.version} failed to load: {type(err).__name__}: "
                              f"{err}") from err


def plugins(group: str) -> dict[str, Plugin]:
    """The entry points of ``group`` installed in this environment, by name. The distributions' metadata is read
    once per process and ``sys.path`` (a scan of every installed distribution takes tens of milliseconds, and a
    benchmark asks for agents by name many times); each worker reads its own environment's. The first distribution
    that declares a name wins, as :func:`importlib.metadata.entry_points` orders them."""
    key = (group, tuple(sys.path))
    if key not in _SCANNED:
        out: dict[str, Plugin] = {}
        for ep in metadata.entry_points(group=group):
            if ep.name not in out:
                dist = ep.dist
                out[ep.name] = Plugin(ep.name, ep.value, group, dist.name if dist else "?",
                                      dist.version if dist else "?")
        _SCANNED[key] = out
    return dict(_SCANNED[key])


_SCANNED: dict[tuple, dict[str, Plugin]] = {}


def load_object(ref: str) -> object:
    """The object ``module:attr`` (or ``module:attr.sub``) names, importing the module.

    Raises
    ------
    ValueError
        ``ref`` is not of the form ``module:attr``.
    ImportError, AttributeError
        The module or the attribute does not exist.
    """
    mod, sep, attr = ref.partition(":")
    if not sep or not mod or not attr:
        raise ValueError(f"expected 'module:attr', got {ref!r}")
    obj = importlib.import_module(mod)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj
