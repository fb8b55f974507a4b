"""Fit models of people's choices to human Blicket data: hierarchical Bayesian fits (NUTS or SVI) -> ArviZ.

::

    from causalplay.data import load_nexiom
    fit_data, held_out = load_nexiom().split(0.25, seed=0)
    f = causalplay.fit(fit_data, model="eig_softmax", hierarchical=True, method="nuts")
    f.diagnostics(); f.summary(); f.score(held_out)
    causalplay.compare({"eig": f, "random": causalplay.fit(fit_data, model="random")})

Parameters live on an unconstrained scale with ``Normal(loc, scale)`` priors from the model's
:class:`~causalplay.models.choice_base.Param` list. Hierarchical: each participant-level parameter is
``mu + sigma * z_p`` (non-centred) with ``mu ~ Normal(loc, scale)``, ``sigma ~ HalfNormal(1)``, ``z_p ~ N(0, 1)``.
Not hierarchical: ``raw_p ~ Normal(loc, scale)`` independently. The likelihood covers every choice (each test's
object set and each stop) and, by default, each participant's final judgement.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyro
import pyro.distributions as dist
import torch

from .models.choice_base import ChoiceModel, Features, LearnerConfig, build_features, get_model, step_features

__all__ = ["fit", "compare", "Fit", "Score", "simulate"]


# ---- the Pyro model ---------------------------------------------------------------------------------------
def _theta_from_raw(cm: ChoiceModel, raw: dict, hierarchical: bool, n_participants: int) -> dict:
    """Constrained parameters ``[..., P]`` from the raw (unconstrained) site values."""
    out = {}
    for p in cm.all_params():
        if p.level == "shared":
            v = raw[p.name + "_raw"][..., None].expand(*raw[p.name + "_raw"].shape, n_participants)
        elif hierarchical:
            v = raw[p.name + "_mu"][..., None] + raw[p.name + "_sigma"][..., None] * raw[p.name + "_z"]
        else:
            v = raw[p.name + "_raw"]
        out[p.name] = p.constrain(v)
    return out


def _pyro_model(feats: Features, cm: ChoiceModel, hierarchical: bool, judgements: bool):
    P = feats.n_participants
    one = torch.ones((), dtype=torch.float64)
    raw = {}
    for p in cm.all_params():
        if p.level == "shared":
            raw[p.name + "_raw"] = pyro.sample(p.name + "_raw", dist.Normal(p.loc * one, p.scale * one))
        elif hierarchical:
            raw[p.name + "_mu"] = pyro.sample(p.name + "_mu", dist.Normal(p.loc * one, p.scale * one))
            raw[p.name + "_sigma"] = pyro.sample(p.name + "_sigma", dist.HalfNormal(one))
    with pyro.plate("participant", P, dim=-1):
        for p in cm.all_params():
            if p.level == "participant":
                if hierarchical:
                    raw[p.name + "_z"] = pyro.sample(p.name + "_z", dist.Normal(0 * one, one))
                else:
                    raw[p.name + "_raw"] = pyro.sample(p.name + "_raw", dist.Normal(p.loc * one, p.scale * one))
    theta = _theta_from_raw(cm, raw, hierarchical, P)
    lp = cm.log_probs(feats, theta)
    pyro.factor("choices", lp.gather(-1, feats.choice[:, None]).sum())
    if judgements:
        jl = cm.judgement_log_probs(feats, theta)
        ok = feats.judgement >= 0
        pyro.factor("judgements", jl.gather(-1, feats.judgement.clamp_min(0)[:, None]).squeeze(-1)[ok].sum())


def _log_joint(feats: Features, cm: ChoiceModel, hierarchical: bool, judgements: bool, q: dict) -> torch.Tensor:
    """Log density of the same posterior as :func:`_pyro_model` on a fully unconstrained scale (for NUTS).

    Hierarchical scales are sampled as ``log sigma`` (so the HalfNormal density gains the Jacobian
    ``+ log sigma``); everything else is as in the Pyro model. A test checks the two agree.
    """
    one = torch.ones((), dtype=torch.float64)  # float64 constants: float32 ones cost 1e-7 relative accuracy
    lp = torch.zeros((), dtype=torch.float64)
    raw = {}
    for p in cm.all_params():
        if p.level == "shared" or not hierarchical:
            v = q[p.name + "_raw"]
            lp = lp + dist.Normal(p.loc * one, p.scale * one).log_prob(v).sum()
            raw[p.name + "_raw"] = v
        else:
            mu, ls, z = q[p.name + "_mu"], q[p.name + "_logsigma"], q[p.name + "_z"]
            sigma = ls.exp()
            lp = lp + dist.Normal(p.loc * one, p.scale * one).log_prob(mu) + dist.HalfNormal(one).log_prob(sigma) + ls
            lp = lp + dist.Normal(0.0 * one, one).log_prob(z).sum()
            raw.update({p.name + "_mu": mu, p.name + "_sigma": sigma, p.name + "_z": z})
    theta = _theta_from_raw(cm, raw, hierarchical, feats.n_participants)
    lp = lp + cm.log_probs(feats, theta).gather(-1, feats.choice[:, None]).sum()
    if judgements:
        jl = cm.judgement_log_probs(feats, theta)
        ok = feats.judgement >= 0
        lp = lp + jl.gather(-1, feats.judgement.clamp_min(0)[:, None]).squeeze(-1)[ok].sum()
    return lp


def _init_q(cm: ChoiceModel, hierarchical: bool, P: int) -> dict:
    """NUTS starts every chain at the prior centre (z = 0, sigma = 0.5): a feasible, unremarkable point."""
    q = {}
    for p in cm.all_params():
        if p.level == "shared":
            q[p.name + "_raw"] = torch.tensor(p.loc, dtype=torch.float64)
        elif hierarchical:
            q[p.name + "_mu"] = torch.tensor(p.loc, dtype=torch.float64)
            q[p.name + "_logsigma"] = torch.tensor(math.log(0.5), dtype=torch.float64)
            q[p.name + "_z"] = torch.zeros(P, dtype=torch.float64)
        else:
            q[p.name + "_raw"] = torch.full((P,), p.loc, dtype=torch.float64)
    return q


def _sample_prior_raw(cm: ChoiceModel, hierarchical: bool, group: dict | None, n_draws: int, n_new: int,
                      gen: torch.Generator) -> dict:
    """Raw parameters of ``n_new`` *new* participants for each of ``n_draws`` posterior (or prior) draws."""
    raw = {}
    for p in cm.all_params():
        if p.level == "shared":
            raw[p.name + "_raw"] = group[p.name + "_raw"] if group is not None and p.name + "_raw" in group else \
                p.loc + p.scale * torch.randn(n_draws, generator=gen, dtype=torch.float64)
        elif hierarchical:
            raw[p.name + "_mu"] = group[p.name + "_mu"]
            raw[p.name + "_sigma"] = group[p.name + "_sigma"]
            raw[p.name + "_z"] = torch.randn(n_draws, n_new, generator=gen, dtype=torch.float64)
        else:
            raw[p.name + "_raw"] = p.loc + p.scale * torch.randn(n_draws, n_new, generator=gen, dtype=torch.float64)
    return raw


@dataclass
class Score:
    """Held-out log predictive probability of the choices of participants not used in fitting."""

    total_nats: float
    n_choices: int
    per_participant: pd.Series

    @property
    def nats_per_choice(self) -> float:
        return -self.total_nats / self.n_choices

    def __iter__(self):  # so ``total, n = fit.score(data)`` works
        return iter((self.total_nats, self.n_choices))


@dataclass
class Fit:
    """A fitted choice model: posterior draws as ArviZ InferenceData plus helpers."""

    model: ChoiceModel
    hierarchical: bool
    method: str
    learner: LearnerConfig
    data: object
    feats: Features
    raw: dict  # site -> Tensor [chains, draws, ...]
    idata: object
    seconds: float
    judgements: bool = True
    extra: dict = field(default_factory=dict)

    # -- parameters
    def theta(self) -> dict:
        """Constrained parameters per participant, ``[chains * draws, P]`` each."""
        flat = {k: v.reshape(-1, *v.shape[2:]) for k, v in self.raw.items()}
        return _theta_from_raw(self.model, flat, self.hierarchical, self.feats.n_participants)

    def participant_means(self) -> pd.DataFrame:
        """Posterior mean of each participant-level parameter (rows: participants)."""
        th = self.theta()
        cols = {p.name: th[p.name].mean(0).numpy() for p in self.model.all_params() if p.level == "participant"}
        return pd.DataFrame(cols, index=pd.Index(self.feats.ids, name="participant"))

    def summary(self, **kw) -> pd.DataFrame:
        """``az.summary`` of the group-level and shared parameters (participant-level ones with ``var_names``)."""
        import arviz as az

        if "var_names" not in kw:
            kw["var_names"] = [v for v in self.idata.posterior.data_vars if "participant" not in
                               self.idata.posterior[v].dims]
        if self.idata.posterior.sizes["chain"] < 2:
            kw.setdefault("kind", "stats")  # one chain (SVI): no R-hat/ESS to report
        return az.summary(self.idata, **kw)

    def diagnostics(self, rhat_max: float = 1.01, ess_min: float = 400.0, warn: bool = True) -> dict:
        """Worst R-hat, smallest bulk/tail ESS and divergences over all latent sites; warns when they are bad."""
        import arviz as az

        post = self.idata.posterior[[f"{k}" for k in self.raw]]
        out = {"method": self.method, "chains": int(post.sizes["chain"]), "draws": int(post.sizes["draw"]),
               "seconds": round(self.seconds, 1)}
        if self.method == "nuts" and out["chains"] >= 2:
            rhat = az.rhat(post)
            ess_b, ess_t = az.ess(post, method="bulk"), az.ess(post, method="tail")
            out["rhat_max"] = float(max(float(rhat[v].max()) for v in rhat.data_vars))
            out["ess_bulk_min"] = float(min(float(ess_b[v].min()) for v in ess_b.data_vars))
            out["ess_tail_min"] = float(min(float(ess_t[v].min()) for v in ess_t.data_vars))
        if self.method == "nuts":
            out["divergences"] = int(self.idata.sample_stats["diverging"].sum())
        problems = []
        if out.get("rhat_max", 1.0) > rhat_max:
            problems.append(f"R-hat {out['rhat_max']:.3f} > {rhat_max}")
        if out.get("ess_bulk_min", np.inf) < ess_min:
            problems.append(f"bulk ESS {out['ess_bulk_min']:.0f} < {ess_min:g}")
        if out.get("divergences", 0) > 0:
            problems.append(f"{out['divergences']} divergent transitions")
        if self.method == "nuts" and out["chains"] < 2:
            problems.append("R-hat needs at least 2 chains")
        if self.method == "svi":
            problems.append("SVI: no R-hat/ESS (variational approximation); compare with a NUTS fit")
        out["ok"] = not problems
        out["problems"] = problems
        if warn and problems:
            warnings.warn(f"fit diagnostics of {self.model.name}: " + "; ".join(problems), stacklevel=2)
        return out

    # -- prediction
    def score(self, data, *, n_draws: int = 400, n_new: int = 5, seed: int = 0) -> Score:
        """Total log predictive probability (nats) of the choices of participants **not** used in fitting.

        Each held-out participant's parameters are unknown: they are integrated over the fitted population
        (``n_draws`` posterior draws of the group-level parameters x ``n_new`` new participants each;
        for non-hierarchical fits, over the prior). Judgements are not scored.

        Returns
        -------
        Score
            ``total_nats``, ``n_choices`` (tests + stops) and ``nats_per_choice``; unpacks as ``(total, n)``.
        """
        overlap = set(data.ids) & set(self.feats.ids)
        if overlap:
            raise ValueError(f"score() is for participants not used in fitting; {sorted(overlap)[:5]} were fitted")
        feats = build_features(data, self.learner)
        gen = torch.Generator().manual_seed(seed)
        flat = {k: v.reshape(-1, *v.shape[2:]) for k, v in self.raw.items()}
        total = flat[next(iter(flat))].shape[0]
        idx = torch.randint(total, (n_draws,), generator=gen)
        group = {k: v[idx].repeat_interleave(n_new, 0) for k, v in flat.items() if v.dim() == 1}
        raw = _sample_prior_raw(self.model, self.hierarchical, group, n_draws * n_new, feats.n_participants, gen)
        theta = _theta_from_raw(self.model, raw, self.hierarchical, feats.n_participants)
        per = torch.zeros(n_draws * n_new, feats.n_participants, dtype=torch.float64)
        with torch.no_grad():
            for s in range(0, n_draws * n_new, 200):
                th = {k: v[s:s + 200] for k, v in theta.items()}
                lp = self.model.log_probs(feats, th)
                ll = lp.gather(-1, feats.choice.expand(lp.shape[0], -1)[..., None])
                per[s:s + 200].index_add_(1, feats.pid, ll.squeeze(-1))
        lp = torch.logsumexp(per, 0) - math.log(per.shape[0])
        return Score(float(lp.sum()), feats.n_decisions, pd.Series(lp.numpy(), index=feats.ids, name="log_p"))

    def simulate(self, n_participants: int | None = None, *, worlds=None, seed: int = 0, max_tests: int = 30):
        """Synthetic participants as :class:`causalplay.data.TrialData`.

        ``n_participants=None``: one replica of every fitted participant (their own posterior draw, their own
        true rule and blickets) -- the posterior predictive check. Otherwise new participants drawn from the
        fitted population, with worlds ``[(rule, blickets), ...]`` (default: drawn from the fitted data's).
        """
        gen = torch.Generator().manual_seed(seed)
        th = self.theta()
        draws = th["lapse"].shape[0]
        P = self.feats.n_participants
        parts = self.data.participants
        if n_participants is None:
            d = torch.randint(draws, (P,), generator=gen)
            theta = {k: v[d, torch.arange(P)] for k, v in th.items()}
            worlds = list(zip(parts["rule"], parts["true_blickets"], strict=True))
        else:
            flat = {k: v.reshape(-1, *v.shape[2:]) for k, v in self.raw.items()}
            d = torch.randint(draws, (n_participants,), generator=gen)
            group = {k: v[d] for k, v in flat.items() if v.dim() == 1}
            raw = _sample_prior_raw(self.model, self.hierarchical, group, n_participants, 1, gen)
            theta = {k: v[:, 0] for k, v in _theta_from_raw(self.model, raw, self.hierarchical, 1).items()}
            if worlds is None:
                w = torch.randint(P, (n_participants,), generator=gen).tolist()
                worlds = [(parts["rule"].iloc[i], parts["true_blickets"].iloc[i]) for i in w]
        return simulate(self.model, theta, worlds, self.data.n_objects, learner=self.learner, seed=seed + 1,
                        max_tests=max_tests)


# ---- simulation -------------------------------------------------------------------------------------------
def simulate(model: str | ChoiceModel, theta: dict, worlds, n_objects: int, *, learner: LearnerConfig | None = None,
             seed: int = 0, max_tests: int = 30, prefix: str = "S"):
    """Simulate participants of a choice model with known parameters on deterministic Blicket machines.

    Parameters
    ----------
    model : model name or ChoiceModel
    theta : dict name -> float or array ``[P]``
        Constrained parameter values (every parameter of the model, see ``model.all_params()``).
    worlds : list of (rule name, blicket indices)
        One per participant; the machine follows :mod:`causalplay.rules`.
    max_tests : int
        Participants who have not stopped by then stop.

    Returns
    -------
    causalplay.data.TrialData
    """
    from .data import TrialData
    from .envs.nexiom_core import NexiomBatch
    from .exact import log_likelihood

    cm = get_model(model)
    learner = learner or LearnerConfig()
    P = len(worlds)
    names = {p.name for p in cm.all_params()}
    missing = names - set(theta)
    if missing:
        raise ValueError(f"theta lacks parameter(s) {sorted(missing)} of model {cm.name!r}")
    th = {k: torch.as_tensor(np.broadcast_to(np.asarray(theta[k], dtype=np.float64), (P,)).copy()) for k in names}
    gen = torch.Generator().manual_seed(seed)
    space = learner.space(n_objects)
    S = 2**n_objects
    # The one Nexiom task loop: the machine, the test budget and the answer's scoring are the task's.
    task = NexiomBatch(P, np.random.default_rng(seed), n_objects=n_objects, budget=max_tests)
    rule_names = [r.name for r in task.rules]
    if any(r not in rule_names for r, _ in worlds):
        bad = next(r for r, _ in worlds if r not in rule_names)
        raise ValueError(f"world rule {bad!r} is not one of the Nexiom task's rules {rule_names}")
    true = torch.zeros(P, n_objects, dtype=torch.bool)
    for i, (_, b) in enumerate(worlds):
        true[i, list(b)] = True
    task.reset(rule_idx=[rule_names.index(r) for r, _ in worlds], blickets=true)
    ll = torch.zeros(P, space.n_hypotheses, dtype=torch.float64)
    tested = torch.zeros(P, S, dtype=torch.bool)
    ids = [f"{prefix}{i + 1:03d}" for i in range(P)]
    judged = torch.zeros(P, dtype=torch.long)
    log_rows: list[tuple[torch.Tensor, ...]] = []
    bits = torch.arange(n_objects)
    t = 0
    while not bool(task.done.all()):
        active = ~task.done
        feats = step_features(space, ll, t, tested, learner.min_tests, ids)
        with torch.no_grad():
            lp = cm.log_probs(feats, th)
        choice = (torch.full((P,), S) if t == max_tests
                  else torch.multinomial(lp.exp(), 1, generator=gen).squeeze(-1))
        stop = active & (choice == S)
        if bool(stop.any()):  # the judgement of those who stop now, from what they know now
            with torch.no_grad():
                jl = cm.judgement_log_probs(step_features(space, ll, 0, tested, learner.min_tests, ids), th)
            judged = torch.where(stop, torch.multinomial(jl.exp(), 1, generator=gen).squeeze(-1), judged)
        r, code = judged // S, judged % S
        trial = ((choice[:, None] >> bits) & 1).to(torch.float64)
        belief = ((code[:, None] >> bits) & 1).to(torch.float64)
        action = torch.cat([trial, belief, stop.double()[:, None], r.double()[:, None]], 1)
        obs, _, _, _ = task.step(action)
        go = active & ~stop
        lay = task.layout
        lit = lay.get(obs, "lit")[:, 0]
        log_rows.append((torch.nonzero(go).flatten(), task.tests[go].clone(), choice[go], lit[go] > 0.5))
        upd = log_likelihood(space, trial[:, None], lit[:, None].double())
        ll = torch.where(go[:, None], ll + upd, ll)
        tested[go, choice[go]] = True
        t += 1
    rec = task.record()
    who, num, codes, lits = (torch.cat(x).numpy() for x in zip(*log_rows, strict=True))
    order = np.lexsort((num, who))
    tests = pd.DataFrame({
        "participant": np.asarray(ids)[who[order]], "test": num[order],
        "objects_on": [tuple(np.flatnonzero((c >> np.arange(n_objects)) & 1).tolist()) for c in codes[order]],
        "lit": lits[order].astype(bool), "seconds_since_previous": None, "possible": True},
        columns=["participant", "test", "objects_on", "lit", "seconds_since_previous", "possible"])
    parts = []
    for i in range(P):
        js = tuple(b for b in range(n_objects) if int(code[i]) >> b & 1)
        tb = tuple(sorted(int(b) for b in worlds[i][1]))
        parts.append({"participant": ids[i], "rule": rec["rule"][i], "true_blickets": tb,
                      "judged_blickets": js, "blickets_correct": bool(rec["blickets_correct"][i]),
                      "rule_choice": rule_names[int(r[i])], "rule_correct": bool(rec["rule_correct"][i]),
                      "n_tests": int(rec["n_tests"][i])})
    return TrialData(pd.DataFrame(parts), tests, n_objects, [], f"simulate({cm.name})")


# ---- fitting ----------------------------------------------------------------------------------------------
def _to_idata(cm: ChoiceModel, feats: Features, raw: dict, hierarchical: bool, judgements: bool,
              diverging: np.ndarray | None, data):
    import arviz as az

    C, S = next(iter(raw.values())).shape[:2]
    flat = {k: v.reshape(C * S, *v.shape[2:]) for k, v in raw.items()}
    theta = _theta_from_raw(cm, flat, hierarchical, feats.n_participants)
    choice_ll = torch.empty(C * S, feats.n_decisions, dtype=torch.float64)
    judge_ll = torch.empty(C * S, feats.n_participants, dtype=torch.float64)
    with torch.no_grad():
        for s in range(0, C * S, 200):
            th = {k: v[s:s + 200] for k, v in theta.items()}
            lp = cm.log_probs(feats, th)
            choice_ll[s:s + 200] = lp.gather(-1, feats.choice.expand(lp.shape[0], -1)[..., None]).squeeze(-1)
            jl = cm.judgement_log_probs(feats, th)
            judge_ll[s:s + 200] = jl.gather(-1, feats.judgement.clamp_min(0).expand(jl.shape[0], -1)[..., None]
                                            ).squeeze(-1)
    posterior, dims = {}, {}
    for k, v in raw.items():
        posterior[k] = v.numpy()
        if v.dim() == 3:
            dims[k] = ["participant"]
    for p in cm.all_params():
        if p.level == "participant":
            posterior[p.name] = theta[p.name].reshape(C, S, -1).numpy()
            dims[p.name] = ["participant"]
        else:
            posterior[p.name] = theta[p.name][:, 0].reshape(C, S).numpy()
    ll = {"choice": choice_ll.reshape(C, S, -1).numpy()}
    if judgements:
        ll["judgement"] = judge_ll.reshape(C, S, -1).numpy()
    dims.update({"choice": ["choice"], "judgement": ["participant"]})
    pid = np.asarray(feats.ids)[feats.pid.numpy()]
    coords = {"participant": feats.ids, "choice": np.arange(feats.n_decisions),
              "choice_participant": ("choice", pid), "choice_test": ("choice", feats.test_index.numpy()),
              "object": np.arange(data.n_objects)}
    obs = {"choice": feats.choice.numpy(), "judgement": feats.judgement.numpy()}
    kw = {}
    if diverging is not None:
        kw["sample_stats"] = {"diverging": diverging}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = az.from_dict(posterior=posterior, log_likelihood=ll, observed_data=obs,
                             dims=dims, coords={k: v for k, v in coords.items() if not isinstance(v, tuple)}, **kw)
    # The flat choice dim carries which participant and which test each choice belongs to.
    for grp in ("log_likelihood", "observed_data"):
        idata[grp] = idata[grp].assign_coords(participant_of_choice=("choice", pid),
                                              test=("choice", feats.test_index.numpy()))
    idata["constant_data"] = az.from_dict(constant_data={"true_blickets": np.stack([
        np.isin(np.arange(data.n_objects), b) for b in data.participants["true_blickets"]]).astype(int)},
        dims={"true_blickets": ["participant", "object"]},
        coords={"participant": feats.ids, "object": np.arange(data.n_objects)}).constant_data
    return idata


def fit(data, model: str | ChoiceModel = "eig_softmax", *, hierarchical: bool = True, method: str = "nuts",
        num_samples: int = 500, warmup: int = 500, chains: int = 2, svi_steps: int = 1500, lr: float = 0.03,
        judgements: bool = True, learner: LearnerConfig | None = None, seed: int = 0, progress: bool = True,
        target_accept: float = 0.85, max_tree_depth: int = 8, threads: int | None = 1,
        jit: bool = True) -> Fit:
    """Fit a choice model to trial data.

    Parameters
    ----------
    data : causalplay.data.TrialData
    model : name of a ``models/choice_<name>.py`` model, or a ChoiceModel
    hierarchical : bool
        Participant-level parameters drawn from group-level priors (non-centred).
    method : {"nuts", "svi"}
        NUTS: ``chains`` chains run one after the other (``warmup`` + ``num_samples`` each, JIT-compiled).
        SVI: a mean-field normal guide (``svi_steps`` Adam steps at ``lr``), then ``num_samples`` guide draws.
    judgements : bool
        Include the final judgements in the likelihood (they inform the rule prior).
    learner : LearnerConfig
        The modelled learner's fixed assumptions (set prior, machine noise, minimum tests before stopping).
    seed : int
    jit : bool
        Trace the NUTS log density with ``torch.jit.trace``.
    threads : int or None
        torch threads while fitting (restored afterwards); ``None`` leaves the setting alone.

    Returns
    -------
    Fit
    """
    from .data import TrialData

    if not isinstance(data, TrialData):
        raise TypeError(f"data must be causalplay.data.TrialData (see load_trials), got {type(data).__name__}")
    if method not in ("nuts", "svi"):
        raise ValueError(f"method must be 'nuts' or 'svi', got {method!r}")
    for label, v in (("num_samples", num_samples), ("warmup", warmup), ("chains", chains), ("svi_steps", svi_steps)):
        if isinstance(v, bool) or not isinstance(v, int) or v < (0 if label == "warmup" else 1):
            raise ValueError(f"{label} must be a positive integer, got {v!r}")
    cm = get_model(model)
    learner = learner or LearnerConfig()
    feats = build_features(data, learner)
    old_threads = torch.get_num_threads()
    if threads is not None:
        # Small tensors: one thread is much faster than several fighting over shared cores (measured 25x here).
        torch.set_num_threads(threads)
    try:
        return _fit(data, cm, feats, hierarchical, method, num_samples, warmup, chains, svi_steps, lr, judgements,
                    learner, seed, progress, target_accept, max_tree_depth, jit)
    finally:
        torch.set_num_threads(old_threads)


def _fit(data, cm, feats, hierarchical, method, num_samples, warmup, chains, svi_steps, lr, judgements, learner,
         seed, progress, target_accept, max_tree_depth, jit) -> Fit:
    t0 = time.perf_counter()
    pyro.set_rng_seed(seed)
    diverging = None
    if method == "nuts":
        from pyro.infer import MCMC, NUTS

        q0 = _init_q(cm, hierarchical, feats.n_participants)
        keys = list(q0)

        def log_joint(*vals):
            return _log_joint(feats, cm, hierarchical, judgements, dict(zip(keys, vals, strict=True)))

        if jit:
            # Tracing removes Python/autograd overhead (measured 7.0 -> 4.4 ms per gradient); the data are fixed
            # and the graph has no data-dependent branches, so the trace is exact.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                log_joint = torch.jit.trace(log_joint, tuple(q0.values()), check_trace=False)

        def potential(q):
            return -log_joint(*(q[k] for k in keys))

        samples, div = [], []
        for c in range(chains):
            pyro.set_rng_seed(seed + 1000 * c)
            kernel = NUTS(potential_fn=potential, target_accept_prob=target_accept, max_tree_depth=max_tree_depth,
                          full_mass=False)
            mcmc = MCMC(kernel, num_samples=num_samples, warmup_steps=warmup, num_chains=1,
                        initial_params=q0,
                        disable_progbar=not progress)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mcmc.run()
            smp = {k: v.detach() for k, v in mcmc.get_samples().items()}
            for k in [k for k in smp if k.endswith("_logsigma")]:
                smp[k[: -len("_logsigma")] + "_sigma"] = smp.pop(k).exp()
            samples.append(smp)
            d = np.zeros(num_samples, dtype=bool)
            idx = mcmc.diagnostics().get("divergences", {}).get("chain 0", [])
            d[np.asarray(idx, dtype=int)] = True
            div.append(d)
        raw = {k: torch.stack([s[k] for s in samples]) for k in samples[0]}
        diverging = np.stack(div)
    else:
        from pyro.infer import SVI, Trace_ELBO
        from pyro.infer.autoguide import AutoNormal

        pyro.clear_param_store()
        guide = AutoNormal(_pyro_model, init_scale=0.05)
        svi = SVI(_pyro_model, guide, pyro.optim.ClippedAdam({"lr": lr, "lrd": 0.1 ** (1 / svi_steps)}),
                  Trace_ELBO())
        from tqdm.auto import tqdm

        losses = []
        for _ in tqdm(range(svi_steps), disable=not progress, desc=f"SVI {cm.name}"):
            losses.append(svi.step(feats, cm, hierarchical, judgements))
        with torch.no_grad():
            draws = [guide(feats, cm, hierarchical, judgements) for _ in range(num_samples)]
        raw = {k: torch.stack([d[k].detach() for d in draws])[None] for k in draws[0]}
    seconds = time.perf_counter() - t0
    idata = _to_idata(cm, feats, raw, hierarchical, judgements, diverging, data)
    f = Fit(cm, hierarchical, method, learner, data, feats, raw, idata, seconds, judgements)
    if method == "svi":
        f.extra["elbo_losses"] = losses
    return f


def compare(fits: dict, *, ic: str = "loo", var_name: str = "choice", **kw) -> pd.DataFrame:
    """``az.compare`` of several fits on the pointwise log-likelihood of the choices (LOO by default)."""
    import arviz as az

    if not isinstance(fits, dict) or not fits:
        raise TypeError("fits must be a non-empty dict name -> Fit")
    bad = [k for k, f in fits.items() if not isinstance(f, Fit)]
    if bad:
        raise TypeError(f"fits[{bad[0]!r}] is not a causalplay Fit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return az.compare({k: f.idata for k, f in fits.items()}, ic=ic, var_name=var_name, **kw)
