"""Deprecated: the causal-DAG code moved by layer (this alias goes in 0.3) -- structures and the SCM to
:mod:`causalplay.core.dag`, the conjugate posterior to :mod:`causalplay.core.dag_posterior`, the agents to
:mod:`causalplay.agents.dag` (``make_agent(spec, family="dag")``), the benchmark loop to the one runner
(:mod:`causalplay.bench.dag`) and behaviour cloning to :mod:`causalplay.rl.bc`. The old submodule paths
(``causalplay.dag.structures``, ``.posterior``, ``.agents``, ``.bench``, ``.passive``) import those modules."""

import importlib
import sys
import warnings

from causalplay.core.dag import StructureSpace, count_structures, enumerate_structures

__all__ = ["StructureSpace", "count_structures", "enumerate_structures"]

for _old, _new in {"structures": "causalplay.core.dag", "posterior": "causalplay.core.dag_posterior",
                   "agents": "causalplay.agents.dag", "bench": "causalplay.bench.dag",
                   "passive": "causalplay.rl.bc"}.items():
    sys.modules[f"{__name__}.{_old}"] = importlib.import_module(_new)
warnings.warn("causalplay.dag moved (see its docstring)", DeprecationWarning, stacklevel=2)
