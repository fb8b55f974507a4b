# ruff: noqa: E402, I001  (the pixel-env hook at the end must be a plain import after the registrations)
"""Symbolic Blicket environments, registered with gymnasium on import (ids ``causalplay/<Name>-v<N>``).

=====================================  ==================================================================
id                                     task
=====================================  ==================================================================
``causalplay/IVRE-v0``                 9 objects, 1-4 blickets, 4 random context panels of 1-4 objects, T=10
``causalplay/IVRE-Conjunctive-v0``     IVRE with a conjunctive machine and 2-4 blickets
``causalplay/IVRE-Noisy-v0``           IVRE with a disjunctive machine whose response flips with prob. 0.1
``causalplay/EST-v1``                  9 objects, 3-8 blickets, 4 random context panels of 2-6 objects (paper)
``causalplay/EST-Conjunctive-v1``      EST-v1 with a conjunctive machine
``causalplay/EST-Noisy-v1``            EST-v1 with noise 0.1
``causalplay/EST-ACRE-v0``             EST with 4 designed, ACRE-structured context panels (easier)
``causalplay/EST-v0``                  deprecated: the same as EST-ACRE-v0 (``-Conjunctive-v0``,
                                       ``-Noisy-v0`` likewise), warns
``causalplay/Nexiom-v0``               the human task: 4 objects, 2 blickets, conj./disj., free tests, budget 16
``causalplay/CausalDAG-v1``            Lampinen et al. 2023 causal DAG world: 5 variables, 5 interventions + goal
``causalplay/CausalDAG-Adaptive-v1``   the DAG world with 10 variables, 5 relevant (several-hot in the obs.)
``causalplay/CausalDAG-v0``            deprecated (``-Adaptive-v0`` likewise): v1 with the goal-phase no-op shown as
                                       an intervention in the last observation, warns
``causalplay/Overhypothesis-v0``       5 IVRE machines (2-4 blickets) sharing a rule drawn per sequence
                                       (``rule_per="episode"``: the control); :data:`SEQUENCE_IDS`
``causalplay/PhysicsB-v0``             PHYRE-style physics puzzle, one ball per attempt (``physics`` extra;
                                       ``causalplay/Physics2B-v0``: two balls); :data:`PHYSICS_IDS`
=====================================  ==================================================================

Every Blicket id has a single env (``gymnasium.make``) and a native vector env (``gymnasium.make_vec(id, num_envs=B)``,
:mod:`causalplay.envs.vector`) on the same batched engine; :func:`make_batch` gives the engine itself (a
:class:`causalplay.envs.task.Task`). Every constant and the exact observation / action layout are documented on
:class:`causalplay.envs.blicket.BlicketEnv` and in ``docs/environments.md``.
"""

from __future__ import annotations

from functools import partial

import gymnasium

__all__ = ["ENV_IDS", "DAG_ENV_IDS", "SEQUENCE_IDS", "PHYSICS_IDS", "make_batch", "task_factory"]

_BLICKET = "causalplay.envs.blicket"

#: id -> (single-env entry point, kwargs). Strings only, so importing this registry stays cheap. Every id but the
#: DAG ones (a Discrete action space) and the physics ones (a Dict observation) also has the native vector env:
#: ``gymnasium.make_vec`` runs one batched Task.
_SPECS: dict[str, tuple[str, dict]] = {
    "causalplay/IVRE-v0": (f"{_BLICKET}:make_ivre", {}),
    "causalplay/IVRE-Conjunctive-v0": (f"{_BLICKET}:make_ivre", {"rule": "conjunctive", "n_blickets": (2, 3, 4)}),
    "causalplay/IVRE-Noisy-v0": (f"{_BLICKET}:make_ivre", {"noise": 0.1}),
    "causalplay/EST-v1": (f"{_BLICKET}:make_est", {}),
    "causalplay/EST-Conjunctive-v1": (f"{_BLICKET}:make_est", {"rule": "conjunctive"}),
    "causalplay/EST-Noisy-v1": (f"{_BLICKET}:make_est", {"noise": 0.1}),
    "causalplay/EST-ACRE-v0": (f"{_BLICKET}:make_est_acre", {}),
    "causalplay/EST-v0": (f"{_BLICKET}:make_est_v0", {}),
    "causalplay/EST-Conjunctive-v0": (f"{_BLICKET}:make_est_v0", {"rule": "conjunctive"}),
    "causalplay/EST-Noisy-v0": (f"{_BLICKET}:make_est_v0", {"noise": 0.1}),
    "causalplay/Nexiom-v0": ("causalplay.envs.nexiom:NexiomEnv", {}),
    "causalplay/CausalDAG-v1": ("causalplay.envs.causal_dag:CausalDAGEnv", {}),
    "causalplay/CausalDAG-Adaptive-v1": ("causalplay.envs.causal_dag:make_adaptive", {}),
    "causalplay/CausalDAG-v0": ("causalplay.envs.causal_dag:CausalDAGEnv", {"legacy_goal_obs": True}),
    "causalplay/CausalDAG-Adaptive-v0": ("causalplay.envs.causal_dag:make_adaptive", {"legacy_goal_obs": True}),
    "causalplay/Overhypothesis-v0": ("causalplay.envs.overhypothesis:make_overhypothesis", {}),
    "causalplay/PhysicsB-v0": ("causalplay.envs.physics:make_b", {}),
    "causalplay/Physics2B-v0": ("causalplay.envs.physics:make_2b", {}),
}

#: The causal-DAG ids (Lampinen et al. 2023; a Discrete action space and their own Task, ``CausalDAGBatch``).
DAG_ENV_IDS = tuple(i for i in _SPECS if i.startswith("causalplay/CausalDAG"))
#: Tasks whose gymnasium episode is a *sequence* of machines (kept out of ENV_IDS: the single-machine benchmark
#: and its generic tests do not apply).
SEQUENCE_IDS = ("causalplay/Overhypothesis-v0",)
#: The physics puzzles (a Dict observation; their Task is ``causalplay.envs.physics.PhysicsBatch``).
PHYSICS_IDS = tuple(i for i in _SPECS if i.startswith("causalplay/Physics"))
#: The symbolic Blicket ids registered by this package (the pixel ids are registered by ``envs/pixels.py``).
ENV_IDS = tuple(i for i in _SPECS if i not in DAG_ENV_IDS + SEQUENCE_IDS + PHYSICS_IDS)


def _make_vec(num_envs: int = 1, *, env_id: str, **kwargs):
    from .vector import make_vec

    return make_vec(num_envs, env_id=env_id, **kwargs)


for _id, (_entry, _kwargs) in _SPECS.items():
    if _id not in gymnasium.registry:
        gymnasium.register(id=_id, entry_point=_entry, kwargs=dict(_kwargs),
                           vector_entry_point=None if _id in DAG_ENV_IDS + PHYSICS_IDS
                           else partial(_make_vec, env_id=_id))


def task_factory(env_id: str, **kwargs):
    """``(batch_size, rng) -> Task``: the one place a registered symbolic id becomes a batched Task (used by
    :func:`make_batch`, the native vector envs and the SB3 vector env). ``rng`` is a numpy Generator, or one per
    row. ``kwargs`` override the id's keyword arguments."""
    if env_id not in _SPECS:
        raise ValueError(f"unknown environment id {env_id!r}; expected one of {tuple(_SPECS)}")
    entry, base = _SPECS[env_id]
    kw = {**base, **kwargs}
    name = entry.rsplit(":", 1)[-1]
    if env_id in PHYSICS_IDS:
        from .physics import draw_batch

        return lambda B, rng: draw_batch(B, rng, "2B" if name == "make_2b" else "B", **kw)
    if env_id in SEQUENCE_IDS:
        from .overhypothesis import OVERHYPOTHESIS, OverhypothesisBatch

        return lambda B, rng: OverhypothesisBatch(OVERHYPOTHESIS, B, rng, **kw)
    if env_id in DAG_ENV_IDS:
        from .causal_dag import CausalDAGBatch, CausalDAGEnv

        config = CausalDAGEnv(**kw, **({"adaptive": True} if name == "make_adaptive" else {})).config
        return lambda B, rng: CausalDAGBatch(config, B, rng)
    if name == "NexiomEnv":
        from .nexiom_core import NexiomBatch

        return lambda B, rng: NexiomBatch(B, rng, **kw)
    from . import blicket
    from .core import BlicketBatch

    if name == "make_est_v0":
        blicket.warn_est_v0()
    obs_mode = kw.pop("obs_mode", "panel")
    config = blicket.configure({"make_ivre": blicket.IVRE, "make_est": blicket.EST}.get(name, blicket.EST_ACRE), **kw)
    return lambda B, rng: BlicketBatch(config, B, rng, obs_mode=obs_mode)


def make_batch(env_id: str, batch_size: int, seed=None, **kwargs):
    """The batched engine (a :class:`causalplay.envs.task.Task`) of a registered id.

    Parameters
    ----------
    env_id : str
        One of :data:`ENV_IDS`, :data:`DAG_ENV_IDS`, :data:`SEQUENCE_IDS`, :data:`PHYSICS_IDS` or a pixel id.
    batch_size : int
    seed : int or sequence of int, optional
        Seeds the one ``numpy.random.Generator`` all episodes draw from.
    **kwargs
        Override the id's keyword arguments (``rule``, ``noise``, ``n_blickets``, ``obs_mode``; ``budget`` for
        Nexiom; ``templates``, ``n_tasks``, ``budget``, ``record`` for the physics ids; ``engine`` and ``cache_dir``
        for the pixel ids, whose batch is a :class:`causalplay.envs.pixels.PixelBatch`).

    Returns
    -------
    BlicketBatch, NexiomBatch, CausalDAGBatch, OverhypothesisBatch, PhysicsBatch or PixelBatch
    """
    import numpy as np

    if env_id in pixels.PIXEL_IDS:  # rendered by Blender on demand
        return pixels.make_pixel_batch(env_id, batch_size, seed=seed, **kwargs)
    return task_factory(env_id, **kwargs)(batch_size, np.random.default_rng(seed))


from . import pixels  # registers the pixel ids (it imports no Blender)
