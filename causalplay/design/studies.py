"""Simulated studies before running one: does a study recover the model that generated its participants, under a
fixed design and under sequential adaptive design (:mod:`causalplay.design.ado`), as participants accrue?

Each simulated study draws its participants, one after another, from a **generating** fitted population (new
participants at the strengths fitted to people, :func:`causalplay.fitting.simulate_fit`). Under the **fixed** arm
each participant meets a design drawn (seeded, uniformly) from the fixed study's designs; under the **ado** arm each
meets the candidate design of highest utility given the participants before them (:func:`ado.next_design`). After
``n`` participants the study selects a model from every finished participant's marginal likelihood under each
candidate model (:func:`ado.pick`: the one-SE rule, or the posterior's mode); **recovery** at ``n`` is the share of
studies that select their generating model, with a Wilson 95% interval over the independent studies.

Model selection here is by marginal likelihood under each **fitted** population, the quantity ADO itself updates
on: the candidate models are the populations fitted to people, not refitted to each simulated study (the package's
:func:`causalplay.fitting.workflows.model_recovery` refits every model to every data set and scores held-out
participants; that is the stricter and far costlier check).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from ..core import checks as V
from ..core.design import Design
from ..core.metrics import wilson_ci
from . import ado
from .predict import sums_exactly

if TYPE_CHECKING:
    from ..fitting import Fit

__all__ = ["fixed_arm", "ado_arm", "recovery", "confusion", "participants_needed", "simulate_studies",
           "StudySimulation", "plot_recovery"]

log = logging.getLogger(__name__)

_ARMS = ("fixed", "ado")


def _evidence(fits: Sequence[Fit], data, state: Mapping) -> tuple[np.ndarray, np.ndarray]:
    cols, n = [], None
    for f in fits:
        lp, _, n = ado.log_marginal(f, data, draws=state["draws"], seed=state["seed"])
        cols.append(lp)
    return torch.stack(cols, 1).numpy(), n.numpy()


def _rows(arm: str, true: str, study: np.ndarray, position: np.ndarray, designs: Sequence[Design], ev: np.ndarray,
          n: np.ndarray, models: Sequence[str]) -> pd.DataFrame:
    df = pd.DataFrame({"arm": arm, "true": true, "study": study, "position": position,
                       "design": [json.dumps(d.to_dict()) for d in designs], "n_choices": n})
    for j, m in enumerate(models):
        df[f"ev_{m}"] = ev[:, j]
    return df


def fixed_arm(generating: Fit, fits: Mapping[str, Fit], designs: Sequence[Design], participants: int, studies: int,
              state: Mapping, *, true: str = "", seed: int = 0, chunk: int = 500,
              progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """``studies`` simulated studies of ``participants`` each under a fixed design: every participant from
    ``generating``'s population, on a design drawn uniformly (seeded) from ``designs``.

    Returns one row per participant: ``arm, true, study, position`` (0-based order in its study), ``design`` (JSON),
    ``n_choices`` and ``ev_<model>``, the log marginal likelihood under each model of ``fits`` (the state's draws and
    seed, as ADO would score them).
    """
    from ..fitting import simulate_fit

    participants = V.integer(participants, "participants", low=1)
    studies = V.integer(studies, "studies", low=1)
    designs = list(designs)
    if not designs or not all(isinstance(d, Design) for d in designs):
        raise TypeError("designs must be a non-empty list of causalplay.design.Design")
    ordered = ado.fits_in_order(state, fits)
    total = participants * studies
    rng = np.random.default_rng(V.integer(seed, "seed", low=0))
    pick = rng.integers(len(designs), size=total)
    out = []
    for a in range(0, total, chunk):
        b = min(total, a + chunk)
        ds = [designs[i] for i in pick[a:b]]
        sim = simulate_fit(generating, b - a, designs=ds, seed=seed * 1000 + a // chunk + 1)
        ev, n = _evidence(ordered, sim, state)
        idx = np.arange(a, b)
        out.append(_rows("fixed", true, idx // participants, idx % participants, ds, ev, n, state["models"]))
        if progress:
            progress(f"fixed {true}: {b}/{total} participants")
    return pd.concat(out, ignore_index=True)


def ado_arm(generating: Fit, fits: Mapping[str, Fit], candidates: ado.Candidates, participants: int, studies: int,
            state: Mapping, *, true: str = "", seed: int = 0,
            progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """``studies`` simulated studies of ``participants`` each under sequential ADO from ``state`` (usually
    :func:`ado.start`): participant ``t`` of a study meets :func:`ado.next_design` given the study's first ``t``
    participants. The studies advance together (one batched simulation and scoring per step). Rows as
    :func:`fixed_arm`'s."""
    from ..fitting import simulate_fit

    participants = V.integer(participants, "participants", low=1)
    studies = V.integer(studies, "studies", low=1)
    seed = V.integer(seed, "seed", low=0)
    ordered = ado.fits_in_order(state, fits)
    states = [dict(state) for _ in range(studies)]
    out = []
    for t in range(participants):
        ds = [ado.next_design(s, candidates) for s in states]
        sim = simulate_fit(generating, studies, designs=ds, seed=seed * 100003 + t + 1)
        ev, n = _evidence(ordered, sim, state)
        states = [ado.record(s, [f"p{t}"], ev[i:i + 1], [ds[i]], [int(n[i])]) for i, s in enumerate(states)]
        out.append(_rows("ado", true, np.arange(studies), np.full(studies, t), ds, ev, n, state["models"]))
        if progress and ((t + 1) % 5 == 0 or t + 1 == participants):
            progress(f"ado {true}: {t + 1}/{participants} participants per study")
    return pd.concat(out, ignore_index=True).sort_values(["study", "position"], kind="stable", ignore_index=True)


# ---- recovery -----------------------------------------------------------------------------------------------------
def _models_of(rows: pd.DataFrame) -> list[str]:
    return [c[3:] for c in rows.columns if c.startswith("ev_")]


def _picks(rows: pd.DataFrame, n: int, rule: str, models: list[str]) -> pd.DataFrame:
    """The model each study (arm, true, study) picks from its first ``n`` participants (studies with fewer: none)."""
    head = rows[rows["position"] < n]
    out = []
    for (arm, true, study), g in head.groupby(["arm", "true", "study"], sort=True):
        if len(g) < n:
            continue
        ev = g.sort_values("position")[[f"ev_{m}" for m in models]].to_numpy()
        out.append({"arm": arm, "true": true, "study": study, "n": n,
                    "picked": ado.pick(ev, g["n_choices"].to_numpy(), models, rule)})
    return pd.DataFrame(out, columns=["arm", "true", "study", "n", "picked"])


def recovery(rows: pd.DataFrame, grid: Sequence[int], rules: Sequence[str] = ("one_se", "map"),
             level: float = 0.95, models: Sequence[str] | None = None) -> pd.DataFrame:
    """Recovery per arm, participant count ``n`` in ``grid``, selection rule and generating model (``true``; ``all``:
    every study of every generating model pooled, each generating model with the same number of studies): the
    studies that selected their generating model, their share and its Wilson interval.

    ``models`` restricts the selection to some of the candidate models: each study then picks among those alone
    (their ``ev_`` columns), and only the studies they generated count -- how well the same participants tell,
    say, two models apart when the others are known to be wrong. None: every model of ``rows``.
    """
    every = _models_of(rows)
    if models is None:
        models = every
    else:
        models = list(models)
        if not models or any(m not in every for m in models):
            raise ValueError(f"models must be a non-empty list of the models of rows {every}, got {models}")
        rows = rows[rows["true"].isin(models)]
    out = []
    for rule in rules:
        for n in grid:
            p = _picks(rows, int(n), rule, models)
            for arm, ga in p.groupby("arm", sort=False):
                hit = (ga["picked"] == ga["true"]).to_numpy(float)
                groups = [(t, (gt["picked"] == t).to_numpy(float)) for t, gt in ga.groupby("true", sort=False)]
                for true, h in [*groups, ("all", hit)]:
                    rate, lo, hi = wilson_ci(h, level)
                    out.append({"arm": arm, "rule": rule, "n": int(n), "true": true, "recovered": int(h.sum()),
                                "studies": len(h), "rate": rate, "lo": lo, "hi": hi})
    return pd.DataFrame(out, columns=["arm", "rule", "n", "true", "recovered", "studies", "rate", "lo", "hi"])


def confusion(rows: pd.DataFrame, arm: str, n: int, rule: str = "one_se") -> pd.DataFrame:
    """Counts of studies: generating model (rows) x selected model (columns), for ``arm`` after ``n`` participants."""
    models = _models_of(rows)
    p = _picks(rows[rows["arm"] == arm], int(n), rule, models)
    trues = [m for m in models if m in set(p["true"])]
    return pd.crosstab(p["true"], p["picked"]).reindex(index=trues, columns=models, fill_value=0)


def participants_needed(curve: pd.DataFrame, target: float = 0.8, rule: str = "one_se") -> dict[str, float]:
    """Per arm, the smallest ``n`` of the curve whose pooled recovery (``true == "all"``) is at least ``target``
    and stays so at every larger ``n`` measured (NaN: never)."""
    out = {}
    c = curve[(curve["true"] == "all") & (curve["rule"] == rule)]
    for arm, g in c.groupby("arm", sort=False):
        g = g.sort_values("n")
        ok = (g["rate"] >= target).to_numpy()
        later = np.flip(np.logical_and.accumulate(np.flip(ok)))  # true from the last failure on
        out[arm] = float(g["n"].to_numpy()[later][0]) if later.any() else math.nan
    return out


def plot_recovery(curve: pd.DataFrame, path, rule: str = "one_se", target: float = 0.8) -> None:
    """Pooled recovery against participants, one line per arm with its 95% band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    c = curve[(curve["true"] == "all") & (curve["rule"] == rule)]
    for i, (arm, g) in enumerate(c.groupby("arm", sort=False)):
        g = g.sort_values("n")
        label = {"fixed": "fixed design", "ado": "sequential ADO"}.get(arm, arm)
        ax.plot(g["n"], g["rate"], "o-", color=f"C{i}", label=f"{label} ({int(g['studies'].iloc[0])} studies)")
        ax.fill_between(g["n"], g["lo"], g["hi"], color=f"C{i}", alpha=0.2)
    ax.axhline(target, color="grey", ls=":", lw=1)
    ax.set_xlabel("participants")
    ax.set_ylabel(f"model recovery ({'one-SE rule' if rule == 'one_se' else 'posterior mode'})")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---- the whole simulation -----------------------------------------------------------------------------------------
@dataclass
class StudySimulation:
    """What :func:`simulate_studies` returns: every simulated participant's row and the recovery curves."""

    rows: pd.DataFrame
    curve: pd.DataFrame

    def needed(self, target: float = 0.8, rule: str = "one_se") -> dict[str, float]:
        return participants_needed(self.curve, target, rule)


def _job(arm: str, true: str, fits: Mapping[str, Fit], fixed: list, cands, participants: int, studies: int,
         state: dict, seed: int) -> pd.DataFrame:
    torch.set_num_threads(1)
    if arm == "fixed":
        return fixed_arm(fits[true], fits, fixed, participants, studies, state, true=true, seed=seed,
                         progress=log.info)
    return ado_arm(fits[true], fits, cands, participants, studies, state, true=true, seed=seed, progress=log.info)


def simulate_studies(fits: Mapping[str, Fit], fixed_designs: Sequence[Design], candidates: Sequence[Design], *,
                     generating: Sequence[str] | None = None, participants_fixed: int = 120,
                     participants_ado: int = 40, studies: int = 20, grid: Sequence[int] | None = None,
                     draws: int = 200, choices: int = 2, seed: int = 0, out: str | Path | None = None,
                     executor: Executor | None = None, samples: int = 200) -> StudySimulation:
    """Simulated studies of every generating model under the fixed design and under sequential ADO, and their
    recovery curves (:func:`recovery`).

    Parameters
    ----------
    fits : dict name -> Fit
        The candidate models, fitted to people; each in ``generating`` also generates participants.
    fixed_designs : sequence of Design
        The fixed study's designs (each participant gets one drawn uniformly), e.g. :func:`nexiom_designs`.
    candidates : sequence of Design
        The designs ADO chooses among.
    participants_fixed, participants_ado, studies : int
        Participants per study in each arm; studies per generating model and arm.
    grid : sequence of int, optional
        Participant counts the curves are read at (default: 1, 2, 3, 5, 7, 10, 15, 20, 25, 30, 40, 50, 60, 80, 100,
        120, ... below the larger arm's count, and both arms' counts).
    draws, choices, seed, samples : int
        ADO's state (:func:`ado.start`: the population draws each model stands for, the choices its utility is
        about, the simulated sequences per model and design where those choices are too many to sum over); the
        same draws score the fixed arm.
    out : folder, optional
        ``rows.csv`` (every participant), ``recovery.csv`` and ``recovery.png`` are rewritten there after every
        finished (arm, generating model); a rerun into the same folder with the same settings skips those already
        there, and one with other settings is refused.
    executor : concurrent.futures.Executor, optional
        Runs the (arm, generating model) jobs (:func:`causalplay.bench.executors.make_executor`); None: here.
    """
    names = list(fits)
    generating = list(generating or names)
    if bad := sorted(set(generating) - set(names)):
        raise ValueError(f"generating model(s) {bad} are not among the fitted models {names}")
    state = ado.start(names, draws=draws, seed=seed, choices=choices, samples=samples)
    top = max(participants_fixed, participants_ado)
    if grid is None:
        grid = sorted({n for n in (1, 2, 3, 5, 7, 10, 15, 20, 25, 30, 40, 50, 60, 80, 100, 120, 160, 200, 300, 400,
                                   600, 800) if n < top} | {participants_fixed, participants_ado})
    settings = {"models": names, "generating": generating, "fixed_designs": [d.to_dict() for d in fixed_designs],
                "candidates": len(candidates), "participants_fixed": participants_fixed,
                "participants_ado": participants_ado, "studies": studies, "draws": draws, "choices": choices,
                "seed": seed}
    if candidates and not sums_exactly(candidates[0].n_objects, choices):  # a Monte Carlo utility
        settings["samples"] = samples
    rows = pd.DataFrame()
    folder = None
    if out is not None:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        cfg = folder / "settings.json"
        if cfg.exists() and json.loads(cfg.read_text()) != settings:
            raise ValueError(f"{folder} holds a simulation with other settings ({cfg}); use another folder")
        cfg.write_text(json.dumps(settings, indent=1))
        if (folder / "rows.csv").exists():
            rows = pd.read_csv(folder / "rows.csv")
    done = set() if rows.empty else set(zip(rows["arm"], rows["true"], strict=True))
    log.info("preparing ADO's predictions for %d candidate designs (K=%d, %d draws per model)", len(candidates),
             choices, draws)
    t0 = time.perf_counter()
    cands = ado.prepare(fits, list(candidates), state)
    log.info("prepared in %.0f s", time.perf_counter() - t0)
    # a job's seed follows from its model's place among the fits, so a run of some generating models gives the rows
    # a run of all of them gives for those models
    jobs = [(arm, g, 1 + 2 * names.index(g) + i) for g in generating for i, arm in enumerate(_ARMS)
            if (arm, g) not in done]
    fixed = list(fixed_designs)

    def finish(df: pd.DataFrame) -> None:
        nonlocal rows
        rows = pd.concat([rows, df], ignore_index=True)
        if folder is not None:
            rows.to_csv(folder / "rows.csv", index=False)
            curve = recovery(rows, grid)
            curve.to_csv(folder / "recovery.csv", index=False)
            plot_recovery(curve, folder / "recovery.png")
        log.info("finished %s %s (%.0f s)", df["arm"].iloc[0], df["true"].iloc[0], time.perf_counter() - t0)

    args = {"fixed": participants_fixed, "ado": participants_ado}
    if executor is None:
        for arm, g, s in jobs:
            finish(_job(arm, g, fits, fixed, cands, args[arm], studies, state, seed * 1000 + s))
    else:
        futures = [executor.submit(_job, arm, g, fits, fixed, cands, args[arm], studies, state, seed * 1000 + s)
                   for arm, g, s in jobs]
        for f in futures:
            finish(f.result())
    curve = recovery(rows, grid)
    if folder is not None:  # also when every job was already there (a resumed run joined from parts)
        curve.to_csv(folder / "recovery.csv", index=False)
        plot_recovery(curve, folder / "recovery.png")
    return StudySimulation(rows, curve)
