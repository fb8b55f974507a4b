"""Scoring fits: held-out log predictive probability (choices and judgements), PSIS-LOO and WAIC with their
diagnostics, and paired per-participant comparisons with standard errors."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from ..core import checks as V
from ..models.choice import build_features
from .convert import pointwise_log_lik, population_theta

if TYPE_CHECKING:
    from ..data import TrialData
    from .inference import Fit

__all__ = ["Score", "Comparison", "heldout_score", "compare", "paired_difference", "paired_se", "ic_table",
           "PARETO_K_BAD"]

PARETO_K_BAD = 0.7  # PSIS-LOO is unreliable for points above this (Vehtari et al. 2017/2024)


@dataclass
class Score:
    """Held-out log predictive probability of participants not used in fitting.

    Attributes
    ----------
    total_nats : float -- sum over participants of log P(their choices)
    n_choices : int -- tests + stops scored
    per_participant : Series -- log P(choices) of each participant (nats)
    judgements : DataFrame or None -- per participant log P of the judged (rule, set) pair (``joint``), of the
        judged blicket set alone (``blickets``, rule marginalised) and of the rule choice alone (``rule``);
        NaN where no judgement was given
    """

    total_nats: float
    n_choices: int
    per_participant: pd.Series
    judgements: pd.DataFrame | None = None

    @property
    def nats_per_choice(self) -> float:
        return -self.total_nats / self.n_choices

    def judgement_nats(self) -> dict[str, float]:
        """Total held-out log-likelihood of the judgements (joint, blickets, rule) and how many were scored."""
        if self.judgements is None:
            return {}
        j = self.judgements.dropna()
        return {**{part: float(j[part].sum()) for part in ("joint", "blickets", "rule")}, "n": len(j)}

    def __iter__(self):  # so ``total, n = fit.score(data)`` works
        return iter((self.total_nats, self.n_choices))

    @classmethod
    def concat(cls, scores: list[Score]) -> Score:
        """One score of disjoint groups of participants (the folds of a cross-validation), participants sorted
        by id so that two models' concatenated scores pair up."""
        if not scores:
            raise ValueError("Score.concat needs at least one score")
        per = pd.concat([s.per_participant for s in scores])
        if per.index.has_duplicates:
            twice = sorted(set(per.index[per.index.duplicated()]))
            raise ValueError(f"Score.concat: participants scored twice: {twice[:5]}")
        order = per.index.sort_values()
        judg = None
        if all(s.judgements is not None for s in scores):
            judg = pd.concat([s.judgements for s in scores]).loc[order]
        return cls(float(sum(s.total_nats for s in scores)), int(sum(s.n_choices for s in scores)), per.loc[order],
                   judg)


def heldout_score(fit: Fit, data: TrialData, *, n_draws: int = 400, n_new: int = 5, seed: int = 0) -> Score:
    """Log predictive probability (nats) of the choices and judgements of participants **not** used in fitting.

    Each held-out participant's parameters are unknown: they are integrated over the fitted population
    (``n_draws`` posterior draws of the group-level parameters x ``n_new`` new participants each; for flat
    fits, over the prior). Choices and judgements are scored separately (each integrated on its own).
    """
    n_draws = V.integer(n_draws, "n_draws", low=1)
    n_new = V.integer(n_new, "n_new", low=1)
    overlap = set(data.ids) & set(fit.feats.ids)
    if overlap:
        raise ValueError(f"score() is for participants not used in fitting; {sorted(overlap)[:5]} were fitted")
    feats = build_features(data, fit.learner)
    theta = population_theta(fit, feats, n_draws, n_new, torch.Generator().manual_seed(seed))
    choice_ll, judge_ll = pointwise_log_lik(fit.par, feats, theta)
    per = torch.zeros(n_draws * n_new, feats.n_participants, dtype=torch.float64)
    per.index_add_(1, feats.pid, choice_ll)
    lp = torch.logsumexp(per, 0) - math.log(per.shape[0])
    # Judgements: joint, and the blicket-set and rule parts alone (marginals of the same judgement model).
    with torch.no_grad():
        jl = fit.model.judgement_log_probs(feats, theta)  # [S, P, H] rule-major
    Sn = feats.space.n_sets
    j = feats.judgement.clamp_min(0)
    jr, js = j // Sn, j % Sn
    grid = jl.unflatten(-1, (-1, Sn))  # [S, P, R, Sets]
    blk = torch.logsumexp(grid, -2).gather(-1, js.expand(grid.shape[0], -1)[..., None]).squeeze(-1)
    rul = torch.logsumexp(grid, -1).gather(-1, jr.expand(grid.shape[0], -1)[..., None]).squeeze(-1)
    S = float(grid.shape[0])
    jt = pd.DataFrame({k: (torch.logsumexp(v, 0) - math.log(S)).numpy() for k, v in
                       (("joint", judge_ll), ("blickets", blk), ("rule", rul))}, index=feats.ids)
    jt[(feats.judgement < 0).numpy()] = np.nan
    return Score(float(lp.sum()), feats.n_decisions, pd.Series(lp.numpy(), index=feats.ids, name="log_p"), jt)


def paired_se(d: np.ndarray) -> float:
    """Standard error of the sum of per-participant differences ``d``: ``sqrt(P) * sd(d)`` (participants are the
    independent units); NaN with fewer than 2."""
    return float(math.sqrt(len(d)) * np.std(d, ddof=1)) if len(d) > 1 else float("nan")


def paired_difference(a: Score, b: Score, per_choice: bool = True) -> tuple[float, float]:
    """Difference ``a - b`` in held-out log predictive probability with its paired standard error.

    Both scores must cover the same participants; the SE is ``sqrt(P) * sd(d_p)`` over the per-participant
    differences ``d_p`` (participants are the independent units). ``per_choice``: both divided by the number of
    choices, with the sign flipped so that it reads as **nats per choice** (negative: ``a`` predicts better).
    """
    if list(a.per_participant.index) != list(b.per_participant.index):
        raise ValueError("paired_difference needs scores of the same participants in the same order")
    d = a.per_participant.to_numpy() - b.per_participant.to_numpy()
    diff, se = float(d.sum()), paired_se(d)
    if per_choice:
        return -diff / a.n_choices, se / a.n_choices
    return diff, se


def _loo_waic(idata, var_name: str):
    """``az.loo`` and ``az.waic`` with their warnings **shown** (re-issued once per model, never silenced)."""
    import arviz as az

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loo = az.loo(idata, var_name=var_name, pointwise=True)
        waic = az.waic(idata, var_name=var_name, pointwise=True)
    return loo, waic, caught


def ic_table(fits: dict[str, Fit], var_name: str = "choice") -> tuple[pd.DataFrame, dict]:
    """PSIS-LOO and WAIC per fit with Pareto-k counts; returns the table and the pointwise elpd_loo per model."""
    rows, pointwise = [], {}
    for name, f in fits.items():
        loo, waic, caught = _loo_waic(f.idata, var_name)
        k = np.asarray(loo.pareto_k)
        good_k = float(getattr(loo, "good_k", PARETO_K_BAD))
        seen = set()
        for w in caught:
            msg = str(w.message)
            if msg not in seen:
                seen.add(msg)
                warnings.warn(f"{name}: {msg}", w.category, stacklevel=3)
        # A point whose log-likelihood is the same in every draw (e.g. a first test under ``random``) has an exact
        # LOO value; ArviZ reports k = inf for it, which is not a problem, so it is not counted.
        ll = f.idata.log_likelihood[var_name].values
        const = np.nanstd(ll.reshape(-1, ll.shape[-1]), axis=0) < 1e-12
        thr = min(good_k, PARETO_K_BAD)
        n_bad = int(((k > thr) & ~const).sum())
        k = np.where(const, 0.0, k)
        if n_bad:
            warnings.warn(f"{name}: PSIS-LOO unreliable for {n_bad} of {k.size} choices (Pareto k > "
                          f"{thr:.2f}, max {k.max():.2f}); rely on held-out participants "
                          f"(compare(..., held_out=...)) for this comparison", UserWarning, stacklevel=3)
        pointwise[name] = np.asarray(loo.loo_i)
        rows.append({"model": name, "elpd_loo": float(loo.elpd_loo), "se_loo": float(loo.se),
                     "p_loo": float(loo.p_loo), "pareto_k_bad": n_bad, "pareto_k_good_threshold": good_k,
                     "pareto_k_max": float(k.max()), "constant_points": int(const.sum()),
                     "elpd_waic": float(waic.elpd_waic), "se_waic": float(waic.se),
                     "p_waic": float(waic.p_waic), "method": f.method,
                     "draws": int(f.idata.posterior.sizes["chain"] * f.idata.posterior.sizes["draw"])})
    return pd.DataFrame(rows).set_index("model"), pointwise


class Comparison(pd.DataFrame):
    """:func:`compare`'s table: a DataFrame (one row per model, best first, every column) that rounds and exports
    like any other; it prints the columns to read (:meth:`summary`) and a one-line :attr:`verdict`, and draws
    itself (:meth:`plot`). ``DataFrame(table)`` or ``table.to_string()`` show every column.

    Attributes
    ----------
    verdict : str -- which model predicts best and by how much, in one line
    scores : dict model -> Score, or None -- the held-out scores behind the held-out columns
    """

    _metadata = ["verdict", "scores"]

    @property
    def _constructor(self):
        return Comparison

    def summary(self) -> pd.DataFrame:
        """The columns to read, formatted (what the table prints): held-out nats per choice and the difference to
        the best with its paired SE; PSIS-LOO elpd with its SE and the paired difference to the best by LOO; the
        number of choices with an unreliable Pareto k; WAIC elpd."""
        out = pd.DataFrame(index=self.index)
        if "heldout_nats_per_choice" in self.columns:
            out["held-out"] = self["heldout_nats_per_choice"].map("{:.4f}".format)
            out["vs best ± SE"] = [f"+{d:.4f} ± {se:.4f}" if d or se else "best" for d, se in
                                   zip(self["heldout_diff"], self["heldout_diff_se"].fillna(0), strict=True)]
        out["elpd_loo ± SE"] = [f"{e:.1f} ± {se:.1f}" for e, se in zip(self["elpd_loo"], self["se_loo"], strict=True)]
        out["diff ± SE"] = [f"{e:.1f} ± {se:.1f}" if e or se else "0" for e, se in
                            zip(self["elpd_diff"], self["dse"], strict=True)]
        out["k bad"] = self["pareto_k_bad"].astype(int).astype(str)
        out["elpd_waic"] = self["elpd_waic"].map("{:.1f}".format)
        return out

    def _compact(self) -> bool:
        need = ("elpd_loo", "se_loo", "elpd_diff", "dse", "pareto_k_bad", "elpd_waic")
        return all(c in self.columns for c in need) and (
            "heldout_nats_per_choice" not in self.columns or "heldout_diff_se" in self.columns)

    def __repr__(self) -> str:
        if not self._compact():  # a slice without the key columns: an ordinary DataFrame
            return super().__repr__()
        v = getattr(self, "verdict", None)
        return self.summary().to_string() + (f"\n{v}" if v else "")

    def _repr_html_(self) -> str | None:
        if not self._compact():
            return super()._repr_html_()
        v = getattr(self, "verdict", None)
        return self.summary().to_html() + (f"<p>{v}</p>" if v else "")

    def plot(self, ax=None):
        """ArviZ-style comparison plot: each model's held-out nats per choice with the paired SE of its difference
        to the best (without held-out columns: ``elpd_loo`` with its SE, and the paired SE of the difference
        as a second bar); best model at the top. Returns the matplotlib Axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6.5, 0.45 * len(self) + 1.4))
        y = np.arange(len(self))
        if "heldout_nats_per_choice" in self.columns:
            x = self["heldout_nats_per_choice"].to_numpy()
            ax.errorbar(x, y, xerr=self["heldout_diff_se"].fillna(0).to_numpy(), fmt="o", color="k", capsize=3)
            ax.set_xlabel("held-out nats per choice (lower is better; bars: paired SE of the difference to the best)")
        else:
            x = self["elpd_loo"].to_numpy()
            ax.errorbar(x, y, xerr=self["se_loo"].to_numpy(), fmt="o", mfc="none", color="k", capsize=3,
                        label="elpd_loo ± SE")
            ax.errorbar(x[1:], y[1:] + 0.2, xerr=self["dse"].to_numpy()[1:], fmt="^", color="grey", capsize=3,
                        label="paired SE of the difference to the best")
            ax.set_xlabel("PSIS-LOO elpd (higher is better)")
            ax.legend(fontsize=8)
        ax.axvline(x[0], color="grey", ls="--", lw=1)
        ax.set_yticks(y, list(self.index))
        ax.invert_yaxis()
        ax.set_title(getattr(self, "verdict", "") or "", fontsize=8, wrap=True)
        return ax


def _verdict(table: pd.DataFrame) -> str:
    """One line: the best model, how far the runner-up is behind in paired SEs, and which column to trust."""
    bad = int(table["pareto_k_bad"].max())
    loo_note = (f" PSIS-LOO is unreliable for up to {bad} choices (Pareto k): trust the held-out column."
                if bad else "")
    if len(table) == 1:
        return f"One model ({table.index[0]}): nothing to compare."
    best, second = table.index[0], table.index[1]
    if "heldout_nats_per_choice" in table.columns:
        d, se = table.loc[second, "heldout_diff"], table.loc[second, "heldout_diff_se"]
        unit, what = "nats/choice", "predicts the held-out participants best"
    else:
        d, se = table.loc[second, "elpd_diff"], table.loc[second, "dse"]
        unit, what = "elpd", "is best by PSIS-LOO"
        loo_note = (f" PSIS-LOO is unreliable for up to {bad} choices (Pareto k): compare on held-out participants "
                    "(held_out=...)." if bad else "")
    z = d / se if se > 0 else math.inf
    if z < 2:
        call = f"{best} and {second} are not told apart ({second} {d:.3g} ± {se:.2g} {unit} behind, {z:.1f} paired SEs)"
    else:
        call = f"{best} {what}: {second} is {d:.3g} ± {se:.2g} {unit} behind ({z:.1f} paired SEs)"
    return call + "." + loo_note


def compare(fits: dict[str, Fit], held_out: TrialData | None = None, *, var_name: str = "choice",
            n_draws: int = 400, n_new: int = 5, seed: int = 0) -> Comparison:
    """Compare fits of the same data: PSIS-LOO, WAIC and (with ``held_out``) held-out scores, all paired.

    Parameters
    ----------
    fits : dict name -> Fit
        Fits of the same participants.
    held_out : TrialData, optional
        Participants none of the fits saw; adds ``heldout_nats_per_choice`` and the paired difference to the
        best model with its SE (per-participant differences: participants are the independent units), plus
        held-out judgement log-likelihoods (``heldout_judgement``, ``..._blickets``, ``..._rule``).
    var_name : str
        Log-likelihood variable for LOO/WAIC (``"choice"`` or ``"judgement"``).

    Returns
    -------
    Comparison
        A DataFrame, one row per model, sorted by held-out score when given, else by ``elpd_loo``, with a one-line
        ``verdict`` (printed under the table), the held-out ``scores`` and ``plot()``. Columns: ``elpd_loo``,
    ``se_loo``, ``p_loo``, ``elpd_diff``/``dse`` (paired, to the best by LOO), ``pareto_k_bad`` (points with
    Pareto k above the threshold), ``pareto_k_max``, ``elpd_waic``, ``se_waic``, ``p_waic``, and the held-out
    columns. LOO's and WAIC's own warnings are re-issued (never silenced), plus one warning per model with
    unreliable PSIS points.
    """
    if not isinstance(fits, dict) or not fits:
        raise TypeError("fits must be a non-empty dict name -> Fit")
    # what compare reads of a Fit (the class lives in .inference, which imports this module)
    bad = [k for k, f in fits.items() if not all(hasattr(f, a) for a in ("feats", "par", "flat_raw", "idata"))]
    if bad:
        raise TypeError(f"fits[{bad[0]!r}] is not a causalplay Fit")
    ids = {k: tuple(f.feats.ids) for k, f in fits.items()}
    if len(set(ids.values())) > 1:
        raise ValueError("compare() needs fits of the same participants; got different participant lists")
    table, pointwise = ic_table(fits, var_name)
    best = table["elpd_loo"].idxmax()
    table["elpd_diff"] = [float(pointwise[best].sum() - pointwise[m].sum()) for m in table.index]
    table["dse"] = [float(math.sqrt(len(pointwise[m])) * np.std(pointwise[best] - pointwise[m], ddof=1))
                    if m != best else 0.0 for m in table.index]
    if held_out is None:
        return _comparison(table.sort_values("elpd_loo", ascending=False), None)
    scores = {m: f.score(held_out, n_draws=n_draws, n_new=n_new, seed=seed) for m, f in fits.items()}
    table["heldout_nats_per_choice"] = [scores[m].nats_per_choice for m in table.index]
    top = min(scores, key=lambda m: scores[m].nats_per_choice)
    diffs = {m: paired_difference(scores[m], scores[top]) for m in table.index}
    table["heldout_diff"] = [diffs[m][0] for m in table.index]
    table["heldout_diff_se"] = [diffs[m][1] for m in table.index]
    for part in ("joint", "blickets", "rule"):
        col = "heldout_judgement" + ("" if part == "joint" else f"_{part}")
        table[col] = [scores[m].judgement_nats().get(part, np.nan) for m in table.index]
    return _comparison(table.sort_values("heldout_nats_per_choice"), scores)


def _comparison(table: pd.DataFrame, scores: dict | None) -> Comparison:
    """The table with its key columns first, as a :class:`Comparison` with its verdict."""
    first = [c for c in ("heldout_nats_per_choice", "heldout_diff", "heldout_diff_se", "elpd_loo", "se_loo",
                         "elpd_diff", "dse", "pareto_k_bad") if c in table.columns]
    out = Comparison(table[first + [c for c in table.columns if c not in first]])
    out.scores, out.verdict = scores, _verdict(out)
    return out
