# ruff: noqa: E402, I001  (the pixel-env hook at the end must be a plain import after the registrations)
"""Symbolic Blicket environments, registered with gymnasium on import (ids ``causalplay/<Name>-v<N>``).

=================================  ======================================================================
id                                 task
=================================  ======================================================================
``causalplay/IVRE-v0``             9 objects, 1-4 blickets, 4 random context panels of 1-4 objects, T=10
``causalplay/IVRE-Conjunctive-v0`` IVRE with a conjunctive machine and 2-4 blickets
``causalplay/IVRE-Noisy-v0``       IVRE with a disjunctive machine whose response flips with prob. 0.1
``causalplay/EST-v0``              9 objects, 3-8 blickets, 4 ACRE-structured context panels of 2-6 objects
``causalplay/EST-Conjunctive-v0``  EST with a conjunctive machine
``causalplay/EST-Noisy-v0``        EST with noise 0.1
``causalplay/Nexiom-v0``           the human task: 4 objects, 2 blickets, conj./disj., free tests, budget 16
``causalplay/CausalDAG-v0``        Lampinen et al. 2023 causal DAG world: 5 variables, 5 interventions + goal
``causalplay/CausalDAG-Adaptive-v0`` the DAG world with 10 variables, 5 relevant (several-hot in the obs.)
=================================  ======================================================================

Every constant and the exact observation / action layout are documented on
:class:`causalplay.envs.blicket.BlicketEnv` and in ``docs/environments.md``. The batched torch version is
:class:`causalplay.envs.core.BlicketBatch` (see :func:`make_batch`).
"""

from __future__ import annotations

import gymnasium

__all__ = ["ENV_IDS", "DAG_ENV_IDS", "make_batch"]

_BLICKET = "causalplay.envs.blicket"

#: id -> (entry point, kwargs). Kept here (strings only) so `import causalplay` stays cheap.
_SPECS: dict[str, tuple[str, dict]] = {
    "causalplay/IVRE-v0": (f"{_BLICKET}:make_ivre", {}),
    "causalplay/IVRE-Conjunctive-v0": (f"{_BLICKET}:make_ivre", {"rule": "conjunctive", "n_blickets": (2, 3, 4)}),
    "causalplay/IVRE-Noisy-v0": (f"{_BLICKET}:make_ivre", {"noise": 0.1}),
    "causalplay/EST-v0": (f"{_BLICKET}:make_est", {}),
    "causalplay/EST-Conjunctive-v0": (f"{_BLICKET}:make_est", {"rule": "conjunctive"}),
    "causalplay/EST-Noisy-v0": (f"{_BLICKET}:make_est", {"noise": 0.1}),
    "causalplay/Nexiom-v0": ("causalplay.envs.nexiom:NexiomEnv", {}),
    "causalplay/CausalDAG-v0": ("causalplay.envs.causal_dag:CausalDAGEnv", {}),
    "causalplay/CausalDAG-Adaptive-v0": ("causalplay.envs.causal_dag:make_adaptive", {}),
}

#: The symbolic Blicket ids registered by this package (the pixel ids are registered by ``envs/pixels.py``).
ENV_IDS = tuple(i for i in _SPECS if not i.startswith("causalplay/CausalDAG"))
#: The causal-DAG ids (Lampinen et al. 2023; a Discrete action space and their own Task, ``CausalDAGBatch``).
DAG_ENV_IDS = tuple(i for i in _SPECS if i.startswith("causalplay/CausalDAG"))

for _id, (_entry, _kwargs) in _SPECS.items():
    if _id not in gymnasium.registry:
        gymnasium.register(id=_id, entry_point=_entry, kwargs=dict(_kwargs))


def make_batch(env_id: str, batch_size: int, seed: int | None = None, **kwargs):
    """A batched (torch) version of a registered symbolic id: ``B`` episodes stepped together.

    Parameters
    ----------
    env_id : str
        One of :data:`ENV_IDS` or :data:`DAG_ENV_IDS`.
    batch_size : int
    seed : int, optional
        Seeds the ``numpy.random.Generator`` all episodes draw from.
    **kwargs
        Override the id's keyword arguments (``rule``, ``noise``, ``n_blickets``; ``budget`` for Nexiom).

    Returns
    -------
    BlicketBatch, NexiomBatch or CausalDAGBatch
    """
    import numpy as np

    if env_id not in _SPECS:
        raise ValueError(f"unknown environment id {env_id!r}; expected one of {ENV_IDS + DAG_ENV_IDS}")
    entry, base = _SPECS[env_id]
    rng = np.random.default_rng(seed)
    if "causal_dag" in entry:
        from .causal_dag import CausalDAGBatch, CausalDAGEnv

        env = CausalDAGEnv(**{**base, **({"adaptive": True} if entry.endswith("make_adaptive") else {}), **kwargs})
        return CausalDAGBatch(env.config, batch_size, rng)
    if entry.endswith("NexiomEnv"):
        from .nexiom_core import NexiomBatch

        return NexiomBatch(batch_size, rng, **{**base, **kwargs})
    from .core import BlicketBatch
    from .blicket import make_est, make_ivre

    env = (make_ivre if entry.endswith("make_ivre") else make_est)(**{**base, **kwargs})
    return BlicketBatch(env.config, batch_size, rng)


import importlib.util as _ilu
if _ilu.find_spec(f"{__name__}.pixels") is not None:
    from . import pixels  # noqa: F401,E402  (registers the pixel ids; written by the pixel-env engineer)
