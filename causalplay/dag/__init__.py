"""The causal-DAG task (Lampinen et al. 2023): structure enumeration, the exact conjugate posterior and EIG,
agents, the benchmark loop and the passive (behaviour-cloned) learner. The environment is
:mod:`causalplay.envs.causal_dag`; the Pyro model (the spec) is :mod:`causalplay.models.causal_dag`."""

from .structures import StructureSpace, count_structures, enumerate_structures

__all__ = ["StructureSpace", "count_structures", "enumerate_structures"]
