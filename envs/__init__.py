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
``causalplay/PhysicsB-v2``             PHYRE-style physics puzzle, one ball per attempt (``physics`` extra;
                                       ``causalplay/Physics2B-v2``: two balls, both needed); world version 2,
                                       as hard for a random agent as PHYRE; ``PhysicsB-v0``, ``Physics2B-v1``
                                       and ``Physics2B-v0`` deprecated (warn); :data:`PHYSICS_IDS`
=====================================  ==================================================================

Every Blicket id has a single env (``gymnasium.make``) and a native vector env (``gymnasium.make_vec(id, num_envs=B)``,
:mod:`causalplay.envs.vector`) on the same batched engine; :func:`make_batch` gives the engine itself (a
:class:`causalplay.envs.task.Task`). Every constant and the exact observation / action layout are documented on
:class:`causalplay.envs.blicket.BlicketEnv` and in ``docs/environments.md``.
"""

from __future__ import annotations

from .families import BUILTIN_FAMILIES, DAG, NEXIOM, PHYSICS, PIXEL_IDS, SEQUENCE, task_factory

__all__ = ["ENV_IDS", "DAG_ENV_IDS", "SEQUENCE_IDS", "PHYSICS_IDS", "make_batch", "task_factory"]

# Every family's ids, with their entry points, single, vector and batched, are registered by ``.families`` on import
# (the built-in families; a plug-in family's when it is first asked for).

#: The causal-DAG ids (Lampinen et al. 2023; a Discrete action space and their own Task, ``CausalDAGBatch``).
DAG_ENV_IDS = DAG.ids
#: Tasks whose gymnasium episode is a *sequence* of machines (kept out of ENV_IDS: the single-machine benchmark
#: and its generic tests do not apply).
SEQUENCE_IDS = SEQUENCE.ids
#: The physics puzzles (a Dict observation; their Task is ``causalplay.envs.physics.PhysicsBatch``).
PHYSICS_IDS = PHYSICS.ids
#: The symbolic Blicket ids and Nexiom's (the pixel ids are :data:`causalplay.envs.pixels.PIXEL_IDS`).
ENV_IDS = tuple(i for i in BUILTIN_FAMILIES[0].ids if i not in PIXEL_IDS) + NEXIOM.ids


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

    return task_factory(env_id, **kwargs)(batch_size, np.random.default_rng(seed))

