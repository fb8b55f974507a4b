"""Adaptive studies in ``causalplay serve``: each participant's design chosen at consent by sequential adaptive design
optimisation (:mod:`causalplay.design.ado`) from the participants who finished before them.

A study file's ``[adaptive]`` table (:class:`AdaptiveSpec`, every key checked) names the candidate models, their
fits (netcdf files written by ``fit.idata.to_netcdf`` and the data they were fitted to, which
:func:`causalplay.fitting.load_fit` needs), the prior over the models, the candidate designs (a
:func:`causalplay.design.design_space` call's arguments, or a list) and the ADO settings ``draws``, ``seed`` and
``choices``. Only for tasks whose conditions are a world (rule, blickets), i.e. Nexiom; the study's conditions are
then the distinct worlds of the candidates.

:class:`Adaptive` is what a server holds (built once at start): the fits, the candidates' predictions
(:func:`causalplay.design.ado.prepare`, the slow part) and the database row of the ADO state
(:class:`causalplay.serve.store.AdoState`). The database is the single source of truth:

* at consent the state row is read inside the consent's write transaction and the participant gets
  :func:`~causalplay.design.ado.next_design` of it (cached per state version, so a consent costs a primary-key
  read);
* when a participant finishes, :meth:`Adaptive.catch_up` runs after the response (a FastAPI background task, in
  the thread pool): it reads every finished participant the state does not count yet, builds their
  :class:`~causalplay.data.TrialData` from the database rows exactly as the export writes them, computes their
  marginal likelihoods (:func:`~causalplay.design.ado.update`) outside any transaction, then in one short write
  transaction re-reads the latest state and records only the participants it still lacks
  (:func:`~causalplay.design.ado.record`), bumping the version. Several server processes on one database
  therefore never lose or double-count a participant; the server also catches up when it starts.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

__all__ = ["AdaptiveSpec", "Adaptive", "design_of"]

log = logging.getLogger(__name__)

_SPACE_KEYS = {"n_objects": int, "rules": list, "n_blickets": list, "demonstrations": int, "told": list,
               "max_tests": list}
_DESIGN_KEYS = {"rule": str, "blickets": list, "demonstrations": list, "n_blickets_told": int, "max_tests": int,
                "n_objects": int}


def _check_keys(table: dict, kinds: dict, where: str) -> None:
    """Every key of ``table`` known (in ``kinds``) and of its type; ``ValueError`` naming the key otherwise."""
    for k, v in table.items():
        if k not in kinds:
            raise ValueError(f"study: unknown key {k!r} in {where}; its keys are {sorted(kinds)}")
        if type(v) is not kinds[k]:
            raise ValueError(f"study: {where}.{k} must be a {kinds[k].__name__}, got {v!r}")


def _int(v, what: str, low: int) -> int:
    if type(v) is not int or v < low:
        raise ValueError(f"study: adaptive.{what} must be an integer >= {low}, got {v!r}")
    return v


@dataclass(frozen=True)
class AdaptiveSpec:
    """The ``[adaptive]`` table of a study file.

    Attributes
    ----------
    models : tuple of str
        The candidate models (names ``causalplay fit --model`` takes; the order of the ADO state).
    fits : tuple of str
        One netcdf file per model, in ``models`` order (``fits = {positive = "fits/positive.nc", ...}`` in the
        file); relative paths are read from the study file's folder.
    data : str
        The data the fits were fitted to: a folder :func:`causalplay.data.load_trials` reads, or ``"nexiom"`` for
        the shipped study (:func:`causalplay.data.load_nexiom`).
    prior : tuple of float or None
        Prior weight of each model in ``models`` order (a table ``{model = weight}`` or a list in the file),
        normalised; None: uniform.
    draws, seed, choices, samples : int
        New participants per fitted population, their seed, ``K``, the first choices the utility is about, and the
        simulated sequences per model and design where ``K`` choices are too many to sum over
        (:func:`causalplay.design.ado.start`).
    space : dict or None
        Keyword arguments of :func:`causalplay.design.design_space` (``rules``, ``n_blickets``,
        ``demonstrations``, ``told``, ``max_tests``; ``n_objects`` defaults to the task's).
    designs : tuple of dict or None
        Explicit candidates (``[[adaptive.designs]]``: ``rule``, ``blickets``, optional ``demonstrations`` as
        lists of object indices, ``n_blickets_told``, ``max_tests``). Exactly one of ``space`` and ``designs``.
    sample : int
        Keep this many candidates, drawn without replacement with ``seed`` (0: all).
    """

    models: tuple
    fits: tuple
    data: str
    prior: tuple | None = None
    draws: int = 200
    seed: int = 0
    choices: int = 2
    space: dict | None = None
    designs: tuple | None = None
    sample: int = 0
    samples: int = 200

    @classmethod
    def from_table(cls, t: dict) -> AdaptiveSpec:
        """The spec of an ``[adaptive]`` table (every key checked; errors name ``adaptive.<key>``)."""
        known = {"models", "fits", "data", "prior", "draws", "seed", "choices", "space", "designs", "sample",
                 "samples"}
        if unknown := sorted(set(t) - known):
            raise ValueError(f"study: unknown key(s) {unknown} in [adaptive]; its keys are {sorted(known)}")
        if missing := sorted({"models", "fits", "data"} - set(t)):
            raise ValueError(f"study: [adaptive] needs {missing} (the candidate models, their fits and the data "
                             f"the fits were fitted to)")
        models = t["models"]
        if not (isinstance(models, list) and models and all(isinstance(m, str) and m for m in models)):
            raise ValueError(f"study: adaptive.models must be a non-empty list of model names, got {models!r}")
        if len(set(models)) != len(models):
            raise ValueError(f"study: adaptive.models names a model twice: {models!r}")
        fits = t["fits"]
        if not (isinstance(fits, dict) and set(fits) == set(models)
                and all(isinstance(v, str) and v for v in fits.values())):
            raise ValueError(f"study: adaptive.fits must be a table model = \"path of its netcdf file\" for exactly "
                             f"the models {models}, got {fits!r}")
        if not (isinstance(t["data"], str) and t["data"]):
            raise ValueError(f"study: adaptive.data must be the folder the fits were fitted to, or \"nexiom\", "
                             f"got {t['data']!r}")
        prior = t.get("prior")
        if isinstance(prior, dict):
            if set(prior) != set(models):
                raise ValueError(f"study: adaptive.prior must give a weight to exactly the models {models}, got "
                                 f"{sorted(prior)}")
            prior = [prior[m] for m in models]
        if prior is not None:
            if not (isinstance(prior, list) and len(prior) == len(models)
                    and all(type(w) in (int, float) and math.isfinite(w) and w >= 0 for w in prior)
                    and sum(prior) > 0):
                raise ValueError(f"study: adaptive.prior must be {len(models)} weights >= 0 (not all 0), as a list "
                                 f"in models order or a table model = weight, got {t['prior']!r}")
            prior = tuple(float(w) for w in prior)
        space, designs = t.get("space"), t.get("designs")
        if (space is None) == (designs is None):
            raise ValueError("study: [adaptive] needs exactly one of adaptive.space (design_space's arguments) and "
                             "[[adaptive.designs]] (a list of candidate designs)")
        if space is not None:
            if not isinstance(space, dict):
                raise ValueError(f"study: adaptive.space must be a table of design_space's arguments, got {space!r}")
            _check_keys(space, _SPACE_KEYS, "adaptive.space")
            for k, kind in (("rules", str), ("n_blickets", int), ("told", bool), ("max_tests", int)):
                if k in space and not (space[k] and all(type(x) is kind for x in space[k])):
                    raise ValueError(f"study: adaptive.space.{k} must be a non-empty list of {kind.__name__}s, "
                                     f"got {space[k]!r}")
            space = dict(space)
        if designs is not None:
            if not (isinstance(designs, list) and designs and all(isinstance(d, dict) for d in designs)):
                raise ValueError(f"study: adaptive.designs must be [[adaptive.designs]] tables, got {designs!r}")
            for i, d in enumerate(designs):
                if missing := sorted({"rule", "blickets"} - set(d)):
                    raise ValueError(f"study: adaptive.designs[{i}] needs {missing}, got {d!r}")
                _check_keys(d, _DESIGN_KEYS, f"adaptive.designs[{i}]")
            designs = tuple(dict(d) for d in designs)
        spec = cls(tuple(models), tuple(fits[m] for m in models), t["data"], prior,
                   _int(t.get("draws", 200), "draws", 1), _int(t.get("seed", 0), "seed", 0),
                   _int(t.get("choices", 2), "choices", 1), space, designs, _int(t.get("sample", 0), "sample", 0),
                   _int(t.get("samples", 200), "samples", 1))
        return spec

    def relative_to(self, base: str | Path) -> AdaptiveSpec:
        """The spec with relative file names read from folder ``base`` (the study file's)."""
        def at(p: str) -> str:
            return p if Path(p).is_absolute() else str(Path(base) / p)
        return replace(self, fits=tuple(map(at, self.fits)), data=self.data if self.data == "nexiom" else at(self.data))

    def candidate_designs(self, n_objects: int) -> list:
        """The candidate :class:`~causalplay.design.Design` list for a task with ``n_objects`` objects."""
        import numpy as np

        from causalplay.design import Design, design_space

        if self.space is not None:
            kw = dict(self.space)
            kw.setdefault("n_objects", n_objects)
            if kw["n_objects"] != n_objects:
                raise ValueError(f"study: adaptive.space.n_objects is {kw['n_objects']}, but the task has {n_objects} "
                                 f"objects")
            for k in ("rules", "n_blickets", "told", "max_tests"):
                if k in kw:
                    kw[k] = tuple(kw[k])
            try:
                designs = design_space(**kw)
            except (TypeError, ValueError) as err:
                raise ValueError(f"study: adaptive.space {self.space}: {err}") from None
        else:
            designs = []
            for i, d in enumerate(self.designs):
                try:
                    designs.append(Design(d.get("n_objects", n_objects), tuple(d["blickets"]), d["rule"],
                                          tuple(tuple(on) for on in d.get("demonstrations", [])),
                                          d.get("n_blickets_told"), d.get("max_tests")))
                except (TypeError, ValueError) as err:
                    raise ValueError(f"study: adaptive.designs[{i}]: {err}") from None
        if not designs:
            raise ValueError(f"study: adaptive.space {self.space} holds no design")
        if self.sample and self.sample < len(designs):
            keep = np.sort(np.random.default_rng(self.seed).choice(len(designs), self.sample, replace=False))
            designs = [designs[int(i)] for i in keep]
        return designs


@lru_cache(maxsize=4096)
def design_of(text: str):
    """The :class:`~causalplay.design.Design` a participant row's ``design`` column holds (JSON)."""
    from causalplay.design import Design

    return Design.from_dict(json.loads(text))


class Adaptive:
    """An adaptive study's server side (built once per app by :class:`causalplay.serve.deps.Runtime`).

    Parameters
    ----------
    spec : AdaptiveSpec
    task : causalplay.serve.tasks.ServedTask
        A task whose conditions are worlds (rule, blickets); its conditions are replaced by :attr:`worlds`'s.
    """

    def __init__(self, spec: AdaptiveSpec, task):
        from causalplay.design import ado

        if task.need != frozenset({"rule", "blickets"}):
            raise ValueError(f"study: [adaptive] needs a task whose conditions are a world (rule, blickets), such as "
                             f"nexiom; task {task.name!r} ({task.env_id}) has conditions of {sorted(task.need)}")
        self.spec, self.env_id = spec, task.env_id
        self.designs = spec.candidate_designs(task.n_objects)
        for i, d in enumerate(self.designs):
            if d.n_objects != task.n_objects:
                raise ValueError(f"study: candidate design {i} ({d}) has {d.n_objects} objects; task {task.name!r} "
                                 f"has {task.n_objects}")
            if d.rule not in task.rule_names:
                raise ValueError(f"study: candidate design {i} ({d}) has rule {d.rule!r}; the task serves "
                                 f"{list(task.rule_names)}")
            if d.max_tests is not None and d.max_tests > task.max_tests:
                raise ValueError(f"study: candidate design {i} ({d}) allows {d.max_tests} tests; the task allows "
                                 f"at most {task.max_tests} (max_tests)")
        #: the conditions: every distinct world of the candidates, sorted
        self.worlds = sorted({(d.rule, d.blickets) for d in self.designs})
        try:
            self.start_state = ado.start(list(spec.models), None if spec.prior is None else list(spec.prior),
                                         draws=spec.draws, seed=spec.seed, choices=spec.choices,
                                         samples=spec.samples)
        except (TypeError, ValueError) as err:
            raise ValueError(f"study: [adaptive]: {err}") from None
        self.fits = self._load_fits()
        t0 = time.perf_counter()
        self.candidates = ado.prepare(self.fits, self.designs, self.start_state)
        log.info("adaptive: %d candidate designs x %d models prepared in %.1f s", len(self.designs),
                 len(spec.models), time.perf_counter() - t0)
        self._cache: tuple[int, object] | None = None  # (state version, its next design)
        self._mutex = threading.Lock()
        self._running = self._again = False

    def conditions(self) -> list[dict]:
        """The task's conditions: one per world of the candidates."""
        return [{"rule": r, "blickets": list(b)} for r, b in self.worlds]

    def _load_fits(self) -> dict:
        from causalplay.data import load_nexiom, load_trials
        from causalplay.fitting import load_fit

        spec = self.spec
        try:
            data = load_nexiom() if spec.data == "nexiom" else load_trials(spec.data)
        except (OSError, ValueError) as err:
            raise ValueError(f"study: adaptive.data {spec.data!r}: {err}") from None
        fits = {}
        for m, path in zip(spec.models, spec.fits, strict=True):
            if not Path(path).is_file():
                raise ValueError(f"study: adaptive.fits.{m}: no file {path}")
            try:
                fits[m] = load_fit(path, data, model=m)
            except (OSError, TypeError, ValueError, KeyError) as err:
                raise ValueError(f"study: adaptive.fits.{m} ({path}) with adaptive.data {spec.data!r}: {err} (the fit "
                                 f"must be of exactly that data's participants: causalplay fit --held-out 0)") \
                    from None
        return fits

    # ---- the state row ------------------------------------------------------------------------------------------
    def _settings(self, state: dict) -> tuple:
        # states written before samples was a setting used 200
        return (*(state[k] for k in ("version", "models", "prior", "draws", "seed", "choices")),
                state.get("samples", 200))

    def ensure_state(self, s) -> None:
        """Create the task's state row (inside the caller's write transaction), or check the stored one is this
        study's (same models, prior, draws, seed, choices)."""
        from .store import AdoState

        row = s.get(AdoState, self.env_id)
        if row is None:
            s.add(AdoState(task=self.env_id, state=json.dumps(self.start_state, allow_nan=False), n_participants=0,
                           version=0, updated_at=time.time()))
            return
        stored = json.loads(row.state)
        if self._settings(stored) != self._settings(self.start_state):
            raise ValueError(f"the database holds an adaptive state of {self.env_id} for (version, models, prior, "
                             f"draws, seed, choices, samples) = {self._settings(stored)}, but the study says "
                             f"{self._settings(self.start_state)}; use a new database for a changed study")

    def state(self, s) -> tuple[dict, int]:
        """``(state, version)`` as stored now (in the caller's transaction)."""
        from .store import AdoState

        row = s.get(AdoState, self.env_id)
        return json.loads(row.state), row.version

    def choose(self, s):
        """``(design, condition, state version, participants counted)`` for a participant consenting now: the
        candidate :func:`~causalplay.design.ado.next_design` picks under the stored state (read in ``s``)."""
        from causalplay.design import ado

        from .store import AdoState

        row = s.get(AdoState, self.env_id)
        with self._mutex:
            cached = self._cache
        if cached is None or cached[0] != row.version:
            design = ado.next_design(json.loads(row.state), self.candidates)
            cached = (row.version, design)
            with self._mutex:
                self._cache = cached
        design = cached[1]
        return design, self.worlds.index((design.rule, design.blickets)), row.version, row.n_participants

    # ---- counting finished participants -------------------------------------------------------------------------
    def catch_up_soon(self, r) -> None:
        """:meth:`catch_up`, coalesced: while one runs in this process, a second call makes it run once more
        instead of running beside it. Errors are logged (the next finish or restart tries again)."""
        with self._mutex:
            if self._running:
                self._again = True
                return
            self._running = True
        try:
            while True:
                with self._mutex:
                    self._again = False
                self.catch_up(r)
                with self._mutex:
                    if not self._again:
                        break
        except Exception:
            log.exception("adaptive: counting finished participants failed; the next finish tries again")
        finally:
            with self._mutex:
                self._running = False

    def catch_up(self, r) -> int:
        """Count every finished participant the stored state lacks (see the module docstring); returns how many
        were added here (0 when another process or thread had counted them)."""
        from sqlalchemy import select
        from sqlalchemy.orm import Session

        from causalplay.design import Design, ado

        from .store import AdoState, Participant, trial_data

        with Session(r.reader) as s, s.begin():
            state, _ = self.state(s)
            counted = {p["id"] for p in state["participants"]}
            ps = [p for p in s.scalars(select(Participant).where(
                Participant.task == self.env_id, Participant.stage == "done", Participant.design.is_not(None))
                .order_by(Participant.slot)).all() if (p.export_id or p.code) not in counted]
            if not ps:
                return 0
            data = trial_data(ps)
        t0 = time.perf_counter()
        added = ado.update(state, data, self.fits)["participants"][len(state["participants"]):]
        with r.writing() as s:
            q = select(AdoState).where(AdoState.task == self.env_id)
            if s.get_bind().dialect.name != "sqlite":
                q = q.with_for_update()  # SQLite's BEGIN IMMEDIATE already serialises writers
            row = s.scalars(q).one()
            latest = json.loads(row.state)
            have = {p["id"] for p in latest["participants"]}
            fresh = [e for e in added if e["id"] not in have]
            if fresh:
                new = ado.record(latest, [e["id"] for e in fresh],
                                 [[-math.inf if v is None else v for v in e["log_evidence"]] for e in fresh],
                                 [None if e["design"] is None else Design.from_dict(e["design"]) for e in fresh],
                                 [e["n_choices"] for e in fresh])
                row.state = json.dumps(new, allow_nan=False)
                row.n_participants, row.version, row.updated_at = len(new["participants"]), row.version + 1, time.time()
        log.info("adaptive: counted %d finished participant(s) in %.2f s", len(fresh), time.perf_counter() - t0)
        return len(fresh)

    def summary(self, s) -> dict:
        """What the dashboard shows: the posterior (and prior) per model, participants counted and finished, the
        next participant's design and when the state changed."""
        from sqlalchemy import func, select

        from causalplay.design import ado

        from .store import AdoState, Participant

        row = s.get(AdoState, self.env_id)
        state = json.loads(row.state)
        post = ado.posterior(state)
        finished = s.scalar(select(func.count()).select_from(Participant).where(
            Participant.task == self.env_id, Participant.stage == "done", Participant.design.is_not(None)))
        design, cond, _, _ = self.choose(s)
        return {"models": [{"name": m, "prior": f"{w:.3f}", "posterior": f"{post[m]:.3f}",
                            "percent": f"{100 * post[m]:.0f}"} for m, w in zip(state["models"], state["prior"],
                                                                              strict=True)],
                "counted": row.n_participants, "finished": finished, "pending": max(finished - row.n_participants, 0),
                "next": str(design), "version": row.version, "n_candidates": len(self.designs),
                "choices": state["choices"], "draws": state["draws"],
                "updated": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(row.updated_at))}
