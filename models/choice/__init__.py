"""Models of people's choices on the Blicket task, with an explicit registry.

Every model shares the learner (exact beliefs, a fitted rule prior ``rho``), the stopping rule, the lapse and a
judgement model (:mod:`.judgement`); they differ only in how they score the object sets (:mod:`.linear`,
features in :mod:`.features`). ``REGISTRY`` maps each name to its model; ``get_model(name)`` looks one up, and
adding a model is one entry here.

=================  ===========================================================================================
name               set preference (softmax over the 16 sets)
=================  ===========================================================================================
random             uniform
naive              beta * [single object not yet tested alone]
positive           beta * P(lit | set) -- positive testing (Klayman & Ha 1987): test where you expect a yes
eig_softmax        beta * EIG
eig_size           beta * EIG + gamma * |set|
eig_sweep          beta * EIG + gamma * |set| + delta * sweep   (sweep chosen after seeing the shipped data)
eig_sweep_single   eig_sweep + kappa * [single object not yet tested alone]   (naive's feature added to eig_sweep
                   after seeing the shipped data)
size               gamma * |set|                                 (ablation)
sweep              delta * sweep                                 (ablation)
size_sweep         gamma * |set| + delta * sweep                 (ablation)
eig_plus_sweep     beta * EIG + delta * sweep                    (ablation)
=================  ===========================================================================================
"""

from __future__ import annotations

import warnings

from causalplay.core.specs import Spec, format_spec, parse_spec

from .base import (
    RULE_PARAMS,
    STOP_PARAMS,
    TRANSFER_PARAMS,
    ChoiceModel,
    Features,
    JudgementModel,
    LearnerConfig,
    Param,
    build_features,
    step_features,
    transferred_rule_priors,
)
from .judgement import JUDGEMENT_MODELS, get_judgement
from .linear import BETA_EIG, DELTA_SWEEP, GAMMA_SIZE, KAPPA_SINGLE, LinearChoice

__all__ = ["REGISTRY", "ABLATIONS", "MAIN_MODELS", "get_model", "available_models", "ChoiceModel", "LinearChoice",
           "JudgementModel", "JUDGEMENT_MODELS", "get_judgement", "Param", "Features", "LearnerConfig",
           "build_features", "step_features", "STOP_PARAMS", "RULE_PARAMS", "TRANSFER_PARAMS",
           "transferred_rule_priors"]

REGISTRY: dict[str, ChoiceModel] = {
    "random": LinearChoice("random", (), "object sets uniformly at random"),
    "naive": LinearChoice("naive", (("untested_single", Param(
        "beta", 1.0, 1.0, "exp", doc="log-preference for an untested single object")),),
        "prefers single objects not yet tested on their own"),
    "positive": LinearChoice("positive", (("p_lit", Param(
        "beta", 1.0, 1.0, "exp", doc="inverse temperature on the predicted P(lit)")),),
        "positive testing: softmax of the learner's predicted P(lit | set)"),
    "eig_softmax": LinearChoice("eig_softmax", (("eig", BETA_EIG),), "softmax of exact EIG"),
    "eig_size": LinearChoice("eig_size", (("eig", BETA_EIG), ("size", GAMMA_SIZE)), "EIG + set-size bias"),
    "eig_sweep": LinearChoice("eig_sweep", (("eig", BETA_EIG), ("size", GAMMA_SIZE), ("sweep", DELTA_SWEEP)),
                              "EIG + set-size bias + left-to-right sweep"),
    "size": LinearChoice("size", (("size", GAMMA_SIZE),), "set-size bias only (ablation)"),
    "sweep": LinearChoice("sweep", (("sweep", DELTA_SWEEP),), "left-to-right sweep only (ablation)"),
    "size_sweep": LinearChoice("size_sweep", (("size", GAMMA_SIZE), ("sweep", DELTA_SWEEP)),
                               "set size + sweep, no EIG (ablation)"),
    "eig_sweep_single": LinearChoice("eig_sweep_single", (("eig", BETA_EIG), ("size", GAMMA_SIZE),
                                                          ("sweep", DELTA_SWEEP), ("untested_single", KAPPA_SINGLE)),
                                     "eig_sweep + naive's preference for an untested single object"),
    "eig_plus_sweep": LinearChoice("eig_plus_sweep", (("eig", BETA_EIG), ("sweep", DELTA_SWEEP)),
                                   "EIG + sweep, no size bias (ablation)"),
}
MAIN_MODELS = ("random", "naive", "positive", "eig_softmax", "eig_size", "eig_sweep")
ABLATIONS = ("eig_softmax", "size", "sweep", "eig_size", "eig_plus_sweep", "size_sweep", "eig_sweep")


def get_model(name: str | ChoiceModel | Spec, judgement: str | JudgementModel | None = None) -> ChoiceModel:
    """The registered model ``name`` (or ``name`` itself if it is a ChoiceModel), optionally with another
    judgement model (``"sample"`` or ``"softmax"``).

    ``name`` is a spec in the package's one grammar (:mod:`causalplay.core.specs`; build one with
    :func:`~causalplay.core.specs.format_spec`): ``"eig_sweep"``, ``"eig_sweep:transfer=True"`` (the weight of a rule
    prior transferred from earlier rounds; :meth:`ChoiceModel.with_transfer`, multi-round data,
    ``LearnerConfig(transfer=True)``), ``"eig_sweep:shared=['gamma','stop_a']"`` (participant-level parameters shared
    by everybody; :meth:`ChoiceModel.with_shared`), ``"eig_sweep:judgement=softmax"``. A modified model's ``name`` is
    the spec that builds it again, judgement aside: the name leaves the judgement model out (a fit records it
    apart, ``causalplay_judgement`` in its ArviZ attributes), so two judgements of one model share a name. The
    forms ``"<name>+transfer"`` and ``"<name>+shared(a,b)"`` are deprecated (they warn and name their spec; removed
    in 0.4).
    """
    if isinstance(name, ChoiceModel):
        cm = name
    elif isinstance(name, str) and "+" in name and name.split("+", 1)[0] in REGISTRY:
        return get_model(_plus_form(name), judgement)
    elif isinstance(name, Spec | str):
        spec = parse_spec(name, REGISTRY, "choice model")
        opts = spec.kwargs
        if bad := sorted(set(opts) - {"transfer", "shared", "judgement"}):
            raise ValueError(f"choice model option(s) {bad} in {str(spec)!r}; expected transfer=, shared=, judgement=")
        cm = REGISTRY[spec.name]
        if "shared" in opts:
            cm = cm.with_shared(opts["shared"])  # a name or a list of them (an empty one is refused there)
        if not isinstance(opts.get("transfer", False), bool):
            raise ValueError(f"choice model option transfer={opts['transfer']!r} in {str(spec)!r}; expected True "
                             "or False")
        if opts.get("transfer"):
            cm = cm.with_transfer()
        judgement = opts.get("judgement", judgement)
    else:
        raise ValueError(f"unknown choice model {name!r}; available: {available_models()}")
    return cm if judgement is None else cm.with_judgement(judgement)


def _plus_form(name: str) -> str:
    """The spec of a deprecated ``<name>+transfer+shared(a,b)`` form, with a warning that names it."""
    base, _, rest = name.partition("+")
    opts: dict = {}
    for mod in rest.split("+"):
        if mod == "transfer":
            opts["transfer"] = True
        elif mod.startswith("shared(") and mod.endswith(")"):
            opts["shared"] = sorted({*opts.get("shared", ()), *(n.strip() for n in mod[7:-1].split(",") if n.strip())})
        else:
            raise ValueError(f"unknown modifier {'+' + mod!r} in choice model {name!r}; expected "
                             "'+transfer' or '+shared(param,...)' (deprecated; write e.g. "
                             "\"eig_sweep:shared=['gamma']:transfer=True\")")
    spec = format_spec(base, **opts)
    warnings.warn(f"choice model {name!r}: the '+' form is deprecated and will be removed in 0.4; write {spec!r}",
                  DeprecationWarning, stacklevel=3)
    return spec


def available_models() -> list[str]:
    """Names of the registered choice models."""
    return sorted(REGISTRY)
