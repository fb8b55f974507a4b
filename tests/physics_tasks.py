"""A task cache for physics tests: the tasks of a small universe, generated once per test module."""

from __future__ import annotations

from causalplay.envs.physics_templates import get_task, task_keys


def task_cache(tmp_path_factory, tier: str, universe: dict, name: str) -> str:
    """A fresh folder holding tasks ``0..universe["n_tasks"]-1`` of ``universe["templates"]`` of ``tier``."""
    path = str(tmp_path_factory.mktemp(name))
    for k in task_keys(universe["templates"], universe["n_tasks"]):
        get_task(tier, k, path)
    return path
