"""causalplay: how people and machines learn causes by experimenting, on the Blicket detector.

The one-line analysis::

    import causalplay
    b = causalplay.infer([([0, 1], True), ([0], False)], n_objects=3)
    b.blicket_prob, b.rule_prob, b.eig(), b.best_trial()

This module only re-exports (nothing inside the package imports it), and lazily: ``import causalplay`` loads the
core engine and nothing else -- not the environments: ``import causalplay.envs`` registers the gymnasium ids, or
name the module in the id, ``gymnasium.make("causalplay.envs:causalplay/IVRE-v0")``.
"""

import importlib

from .core._version import __version__  # noqa: F401  (the package version)

# public name -> the module that defines it (docs/architecture.md maps every layer)
_HOME = {
    **dict.fromkeys(["infer", "infer_batch", "make_spec", "choose_method", "EXACT_LIMIT"], "learners.api"),
    "SVIBeliefs": "learners.svi",
    "exact_eig": "models.blicket",
    **dict.fromkeys(["Beliefs", "BatchBeliefs", "BeliefsLike"], "core.beliefs"),
    "eig_bits": "core.eig",
    **dict.fromkeys(["InconsistentEvidenceError", "log_posterior", "observe"], "core.exact"),
    **dict.fromkeys(["History", "HistoryBatch", "all_trials", "code_to_set", "set_to_code"], "core.history"),
    **dict.fromkeys(["Rule", "Sigmoid", "Threshold", "conjunctive", "disjunctive"], "core.rules"),
    **dict.fromkeys(["HypothesisSpace", "WorldSpec"], "core.spec"),
    "infer_overhypothesis": "core.overhypothesis",
    **dict.fromkeys(["fit", "compare"], "fitting"),
}
_SUBPACKAGES = ("core", "learners", "models", "envs", "data", "agents", "bench", "fitting", "rl", "serve", "render")

__all__ = [
    "infer", "infer_batch", "infer_overhypothesis", "make_spec", "EXACT_LIMIT", "choose_method", "Beliefs",
    "BatchBeliefs", "BeliefsLike", "SVIBeliefs", "set_to_code", "code_to_set", "History", "HistoryBatch",
    "all_trials", "WorldSpec", "HypothesisSpace", "Rule", "Threshold", "Sigmoid", "disjunctive", "conjunctive",
    "log_posterior", "observe", "eig_bits", "exact_eig", "InconsistentEvidenceError", "fit", "compare",
]


def __getattr__(name: str):
    if name in _HOME:
        value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'causalplay' has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_SUBPACKAGES))
