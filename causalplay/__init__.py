"""causalplay: how people and machines learn causes by experimenting, on the Blicket detector.

The one-line analysis::

    import causalplay
    b = causalplay.infer([([0, 1], True), ([0], False)], n_objects=3)
    b.blicket_prob, b.rule_prob, b.eig(), b.best_trial()
"""

from . import envs as _envs  # noqa: F401  (registers the gymnasium ids causalplay/<Name>-v<N>)
from .api import EXACT_LIMIT, choose_method, infer, infer_batch, make_spec
from .beliefs import BatchBeliefs, Beliefs, BeliefsLike
from .eig import eig_bits, exact_eig
from .exact import InconsistentEvidenceError, log_posterior, observe
from .history import History, HistoryBatch, all_trials, code_to_set, set_to_code
from .rules import Rule, Sigmoid, Threshold, conjunctive, disjunctive
from .spec import HypothesisSpace, WorldSpec

__version__ = "0.1.0"


def __getattr__(name: str):
    # Heavier capabilities load on first use so `import causalplay` stays quick.
    if name == "SVIBeliefs":
        from .svi import SVIBeliefs

        return SVIBeliefs
    if name == "infer_overhypothesis":
        from .overhypothesis import infer_overhypothesis

        return infer_overhypothesis
    if name in ("fit", "compare"):
        from . import fitting

        return getattr(fitting, name)
    if name in ("data", "agents", "bench", "models", "svi", "overhypothesis"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'causalplay' has no attribute {name!r}")


__all__ = [
    "infer",
    "infer_batch",
    "infer_overhypothesis",
    "make_spec",
    "EXACT_LIMIT",
    "choose_method",
    "Beliefs",
    "BatchBeliefs",
    "BeliefsLike",
    "SVIBeliefs",
    "set_to_code",
    "code_to_set",
    "History",
    "HistoryBatch",
    "all_trials",
    "WorldSpec",
    "HypothesisSpace",
    "Rule",
    "Threshold",
    "Sigmoid",
    "disjunctive",
    "conjunctive",
    "log_posterior",
    "observe",
    "eig_bits",
    "exact_eig",
    "InconsistentEvidenceError",
    "fit",
    "compare",
]
