"""The Blicket world as a Pyro generative model -- the specification every engine answers to.

``blicket_model(trials, lit, mask, spec=...)`` draws, for each episode, a rule (overhypothesis) and a set of
blickets, then the machine's response to every trial. This is the *enumerable* form: the blicket set is one
categorical choice among the ``S`` sets the prior allows (integer-code order, as in
:class:`causalplay.core.spec.HypothesisSpace`). The per-object form for worlds too large to enumerate is
:mod:`causalplay.models.blicket_objects`; tests check both forms give the same joint density.

Sample sites
------------
===============  ============================================  ===================  ===============
site             distribution                                  support              shape
===============  ============================================  ===================  ===============
``rule``         ``Categorical(spec.rule_prior)``              ``{0, ..., R-1}``    ``[B, 1]``
``blicket_set``  ``Categorical(exp(prior.log_prob(sets)))``    ``{0, ..., S-1}``    ``[B, 1]``
``blickets``     deterministic ``sets[blicket_set]``           ``{0, 1}^N``         ``[B, 1, N]``
``lit``          ``Bernoulli(P(lit | rule, k_t))``, observed   ``{0, 1}``           ``[B, T]``
===============  ============================================  ===================  ===============

``prior`` is ``spec.set_prior()`` (:class:`causalplay.core.priors.BlicketSetPrior`). Plates: ``episodes`` (size ``B``,
dim -2) and ``trials`` (size ``T``, dim -1). ``k_t`` is the number of blickets among the objects of trial ``t``;
``P(lit | rule, k)`` comes from :mod:`causalplay.core.rules`, the one place the likelihood is written. ``rule`` and
``blicket_set`` are marked for parallel enumeration, so Pyro's own ``TraceEnum_ELBO.compute_marginals`` computes exact
posteriors -- the reference the exact engine is tested against. Padding (``mask=False``) contributes nothing.

:class:`BlicketWorld` binds a WorldSpec and a history into a model ``model(design)`` with the call shape
``pyro.contrib.oed`` expects: it draws ``rule`` and ``blickets`` from the current beliefs and ``lit`` for
each candidate trial of ``design [..., N]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyro
import pyro.distributions as dist
import torch

from causalplay.core.eig import eig_bits
from causalplay.core.exact import log_posterior
from causalplay.core.history import History, HistoryBatch, vectors_to_codes
from causalplay.core.spec import HypothesisSpace, WorldSpec

__all__ = ["blicket_model", "BlicketWorld", "exact_eig", "labels_to_target"]


def blicket_model(trials: torch.Tensor, lit: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                  *, spec: WorldSpec) -> torch.Tensor:
    """Generate (or condition on) the machine's responses to ``trials [B, T, N]``.

    Parameters
    ----------
    trials : Tensor ``[B, T, N]``
        0/1 objects on the machine in each trial of each episode.
    lit : Tensor ``[B, T]``, optional
        Observed responses; sampled when omitted.
    mask : Tensor ``[B, T]`` bool, optional
        False marks padding.
    spec : WorldSpec

    Returns
    -------
    Tensor ``[B, T]``: the responses (observed or sampled).
    """
    B, T, N = trials.shape
    if N != spec.n_objects:
        raise ValueError(f"trials have {N} objects, spec has n_objects={spec.n_objects}")
    dtype = trials.dtype if torch.is_floating_point(trials) else torch.get_default_dtype()
    table = spec.lit_table(dtype=dtype, device=trials.device)  # [R, N+1]
    prior = spec.set_prior()
    sets = prior.enumerate_support(expand=False).to(dtype=dtype, device=trials.device)
    set_logits = prior.log_prob(sets)
    with pyro.plate("episodes", B, dim=-2):
        rule = pyro.sample("rule", dist.Categorical(spec.rule_probs(dtype, trials.device)),
                           infer={"enumerate": "parallel"})
        idx = pyro.sample("blicket_set", dist.Categorical(logits=set_logits), infer={"enumerate": "parallel"})
        blickets = pyro.deterministic("blickets", sets[idx], event_dim=1)
        k = (trials.to(dtype) * blickets).sum(-1)  # [..., B, T]
        p = table[rule, k.round().long()]
        return lit_site(p, T, lit, mask)


def lit_site(p: torch.Tensor, T: int, lit: torch.Tensor | None, mask: torch.Tensor | None) -> torch.Tensor:
    """The ``lit`` site of every Blicket model: ``Bernoulli(p)`` in the ``trials`` plate (size ``T``, dim -1),
    observed when ``lit`` is given; padding (``mask=False``) contributes nothing."""
    with pyro.plate("trials", T, dim=-1):
        d = dist.Bernoulli(probs=p)
        return pyro.sample("lit", d if mask is None else d.mask(mask), obs=lit)


class _HypothesisSets(dist.TorchDistribution):
    """The blicket set of a hypothesis drawn from exact beliefs: value = set vector, by set index."""

    has_enumerate_support = False

    def __init__(self, sets: torch.Tensor, logits: torch.Tensor):
        self.sets, self.logits = sets, logits
        self._cat = dist.Categorical(logits=logits)
        super().__init__(self._cat.batch_shape, torch.Size([sets.shape[-1]]), validate_args=False)

    def sample(self, sample_shape=torch.Size()):
        return self.sets[self._cat.sample(sample_shape)]

    def log_prob(self, value):
        n = self.sets.shape[-1]
        code = vectors_to_codes(value)
        table = torch.full((2**n,), -1, dtype=torch.long, device=value.device)
        table[vectors_to_codes(self.sets)] = torch.arange(self.sets.shape[0], device=value.device)
        idx = table[code]
        lp = self._cat.log_prob(idx.clamp_min(0))
        return torch.where(idx >= 0, lp, torch.full_like(lp, -float("inf")))


class BlicketWorld:
    """A WorldSpec plus the history seen so far, usable as a Pyro model over designs.

    Parameters
    ----------
    spec : WorldSpec
    history : History or HistoryBatch, optional
        What has been seen; empty by default (then beliefs are the prior).
    device, dtype :
        Where the exact engine computes the current beliefs.

    Calling ``world(design)`` with ``design [..., N]`` samples

    ============  ==================================  ======================
    site          distribution                        shape
    ============  ==================================  ======================
    ``rule``      current rule marginal               ``design.shape[:-1]``
    ``blickets``  current P(set | rule)               ``design.shape[:-1] + [N]``
    ``lit``       ``Bernoulli(P(lit | rule, k))``     ``design.shape[:-1]``
    ============  ==================================  ======================
    """

    def __init__(self, spec: WorldSpec, history: History | HistoryBatch | None = None, *,
                 device=None, dtype: torch.dtype = torch.float64):
        self.spec = spec
        self.space = HypothesisSpace.build(spec, device, dtype)
        if isinstance(history, History):
            history = HistoryBatch.from_histories([history], spec.n_objects, dtype=dtype, device=device)
        self.batch = history

    def log_posterior(self) -> torch.Tensor:
        """``[B, H]`` exact log posterior (``B = 1`` without a history)."""
        if self.batch is None:
            return self.space.log_prior[None, :]
        return log_posterior(self.space, self.batch)

    def __call__(self, design: torch.Tensor) -> torch.Tensor:
        space = self.space
        log_w = self.log_posterior()
        if log_w.shape[0] != 1:
            raise ValueError("BlicketWorld as a design model needs a single history")
        log_w = log_w[0].reshape(space.n_rules, space.n_sets)
        rule_logits = torch.logsumexp(log_w, -1)
        batch_shape = design.shape[:-1]
        rule = pyro.sample("rule", dist.Categorical(logits=rule_logits).expand(batch_shape))
        blickets = pyro.sample("blickets", _HypothesisSets(space.sets, log_w[rule]))
        k = (design.to(space.dtype) * blickets).sum(-1)
        p = space.lit_table[rule, k.round().long()]
        return pyro.sample("lit", dist.Bernoulli(probs=p))


_TARGETS = {frozenset({"blickets", "rule"}): "joint", frozenset({"blickets"}): "blickets", frozenset({"rule"}): "rule"}


def labels_to_target(target_labels: str | Sequence[str]) -> str:
    """Map Pyro-style target labels (site names ``"blickets"``, ``"rule"``) to an EIG target."""
    labels = frozenset({target_labels} if isinstance(target_labels, str) else target_labels)
    if labels not in _TARGETS:
        raise ValueError(f"target_labels must be 'blickets', 'rule' or both, got {target_labels!r}")
    return _TARGETS[labels]


def exact_eig(model, design: torch.Tensor, observation_labels: str | Sequence[str] = "lit",
              target_labels: str | Sequence[str] = ("blickets", "rule")) -> torch.Tensor:
    """Exact EIG (bits) with the call shape of ``pyro.contrib.oed.eig.nmc_eig``.

    Parameters
    ----------
    model : BlicketWorld
        A world model bound to a WorldSpec and the history seen so far (see :mod:`causalplay.models.blicket`).
    design : Tensor ``[D, N]``
        Candidate trials (0/1).
    observation_labels : "lit"
        The observed site of the next trial.
    target_labels : "blickets", "rule" or both
        What the information is about.

    Returns
    -------
    Tensor ``[D]`` (or ``[B, D]`` when the model holds a batch of histories).

    Notes
    -----
    ``pyro.contrib.oed.eig.nmc_eig`` returns nats; multiply by ``ln 2`` to compare.
    """
    if not isinstance(model, BlicketWorld):
        raise TypeError(f"exact_eig needs a causalplay.models.blicket.BlicketWorld, got {type(model).__name__}")
    obs = {observation_labels} if isinstance(observation_labels, str) else set(observation_labels)
    if obs != {"lit"}:
        raise ValueError(f"observation_labels must be 'lit', got {observation_labels!r}")
    target = labels_to_target(target_labels)
    log_w = model.log_posterior()
    out = eig_bits(model.space, log_w, design.to(model.space.dtype), target)
    return out[0] if model.batch is None or model.batch.batch_size == 1 else out
