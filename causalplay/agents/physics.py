"""Agents for the physics puzzles: PHYRE's baselines (RAND, named ``random`` as in every family; MEM, MEM-O; DQN and
DQN-O live in :mod:`causalplay.agents.physics_dqn`) and ``ssup``, a simulation-based Bayesian learner.

Each is an :class:`~causalplay.agents.base.Agent` that :func:`causalplay.bench.play.play` drives on a
:class:`causalplay.envs.physics.PhysicsBatch`: ``reset(info, obs)`` starts a batch of tasks (``obs`` holds their
object lists), ``act(obs, active)`` returns ``[B, 3m]`` actions in ``[0, 1]`` and reads in ``obs`` what the previous
one did (valid, solved, and the trajectory when the task records it). Before a fold's test tasks, the benchmark calls
``train(tier, keys, setting, cache)`` with its training tasks (PHYRE allows the simulator there). Online agents play
a fold's test tasks as one sequence and learn when a task ends. Each docstring says what the agent knows.
"""

from __future__ import annotations

import warnings
from functools import partial
from pathlib import Path

import numpy as np
import torch

from causalplay.envs.physics import PhysicsInfo
from causalplay.envs.physics_sim import W, invalid, simulate
from causalplay.envs.physics_templates import ACTIONS, TIERS, PhysicsTask, action_set, cached, get_task, to_balls
from causalplay.models.physics import PhysicsPrior, log_weights, sample_prior, simulate_particles

from .base import Agent

__all__ = ["PhysicsAgent", "RandomPhysicsAgent", "MemAgent", "MemOAgent", "SsupAgent", "outcomes", "POOL"]

POOL = 6  # training-pool tasks per template whose outcomes on the whole action set are simulated


def _outcome_rows(tier: str, keys: list[str], cache: str, n_actions: int) -> list[np.ndarray]:
    acts = action_set(tier, n_actions)
    balls = to_balls(acts)

    def row(key: str) -> np.ndarray:
        scene, out = get_task(tier, key, cache).scene, np.full(len(acts), -1, dtype=np.int8)
        ok = np.flatnonzero(~invalid(scene, balls))
        out[ok] = [simulate(scene, balls[j], check=False).solved for j in ok]
        return out

    folder = Path(cache) / f"outcomes-{tier}-{n_actions}"
    return [cached(folder / f"{k.replace(':', '-')}.pkl", lambda k=k: row(k)) for k in keys]


def outcomes(tier: str, keys, cache: str | Path = "runs/physics", executor=None,
             n_actions: int = ACTIONS, pool: int | None = POOL) -> tuple[list[PhysicsTask], np.ndarray]:
    """Outcomes of the tier's fixed action set (its first ``n_actions``) on the training-pool tasks among ``keys``
    (task index ``< pool``; ``pool=None``: every task in ``keys``), in key order: ``(tasks, int8 [n, n_actions])``
    with 1 solved, 0 not, -1 invalid. Each task's row is simulated once and cached in
    ``cache/outcomes-<tier>-<n_actions>/`` (the tasks in ``cache/tasks-<tier>/``); ``executor`` fills missing rows in
    parallel."""
    _check_pool(pool)
    cache = str(cache)
    picked = sorted(k for k in keys if pool is None or int(k.split(":")[1]) < pool)
    chunks = [picked[i:i + 10] for i in range(0, len(picked), 10)]
    rows = [r for rs in (executor.map if executor else map)(partial(_outcome_rows, tier, cache=cache,
                                                                      n_actions=n_actions), chunks) for r in rs]
    return [get_task(tier, k, cache) for k in picked], np.array(rows, dtype=np.int8).reshape(len(picked), n_actions)


def _check_pool(pool, who: str = "outcomes") -> None:
    if pool is not None and (isinstance(pool, bool) or not isinstance(pool, int | np.integer) or pool < 1):
        raise ValueError(f"{who}'s pool must be an integer >= 1 (training tasks per template whose outcomes are "
                         f"simulated: those with task index < pool) or None (every training task), got {pool!r}")


class PhysicsAgent(Agent):
    """Base class: keeps each row's scene (from the observation's object list), template and the valid attempts
    it made (``tried``: ``(action, solved)``); subclasses implement :meth:`choose` and may override
    :meth:`begin`, :meth:`observe` and :meth:`finish`."""

    name = "physics"
    #: learns between test tasks (played as one sequence); trajectory frame spacing it reads (0: none)
    online, record = False, 0

    def reseed(self, seed: int) -> None:
        super().reseed(seed)
        self.rng = np.random.default_rng([seed, 7919])

    def train(self, tier: str, keys: list[str], setting: str, cache: str | Path = "runs/physics") -> None:
        """Learn from a fold's training tasks ``keys`` (train + dev; train alone when tuning on dev) before the tasks
        it plays in ``setting`` ("within" or "cross" template); simulated outcomes are cached in ``cache``."""
        if tier not in TIERS or setting not in ("within", "cross"):
            raise ValueError(f"need a tier in {list(TIERS)} and setting 'within' or 'cross', got {tier!r}, "
                             f"{setting!r}")
        self.tier, self.setting, self.cache = tier, setting, str(cache)

    def reset(self, task: PhysicsInfo, obs: dict) -> None:
        self.task, self.B, self.t, self.m, self.prev = task, len(obs["task"]), 0, TIERS[task.tier], None
        self.begin(obs)

    def act(self, obs: dict, active: torch.Tensor) -> np.ndarray:
        if self.prev is not None:
            self.observe(self.prev, obs)
            if bool((obs["task"] != self.current).any()):  # a sequence (one row) moved on to its next task
                self.finish()
                self.begin(obs)
        self.prev = self.choose(obs, active.numpy())
        self.t += 1
        return self.prev

    def begin(self, obs: dict) -> None:
        """New tasks in every row: read their scenes and templates."""
        n = obs["n_bodies"].tolist()
        self.current, self.templates = obs["task"].clone(), obs["template"].tolist()
        self.scenes = [obs["scene"][b, :n[b]].numpy() for b in range(self.B)]
        self.tried = [[] for _ in range(self.B)]

    def choose(self, obs: dict, active: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def observe(self, action: np.ndarray, obs: dict) -> None:
        """What the previous ``action`` did (``obs``: valid, solved, traj)."""
        valid, solved = obs["valid"].numpy(), obs["solved"].numpy()
        for b in np.flatnonzero(valid):
            self.tried[b].append((action[b], bool(solved[b])))

    def finish(self) -> None:
        """Every row's task has ended (online agents learn here)."""


class RandomPhysicsAgent(PhysicsAgent):
    """PHYRE's RAND: uniform actions in ``[0, 1]^{3m}``. Knows nothing; no training. Registered as ``random``, the
    uniform baseline's name in every family (``rand``, its name before 0.3, still works and warns)."""

    name = "random"

    def choose(self, obs, active):
        return self.rng.random((self.B, 3 * self.m))


class MemAgent(PhysicsAgent):
    """MEM: ranks the tier's fixed action set (its first ``n_actions``: 500 by default, PHYRE ranks 10,000) by
    ``p_a``, the fraction of training-pool tasks each action solved (outcomes simulated once, :func:`outcomes`).
    The pool is the fold's training tasks with task index below ``pool`` (6 per template by default), or every
    training task with ``pool=None`` (PHYRE's MEM).

    Knows: the training tasks and the simulator (training only), and in the within-template setting the test
    task's template id (a per-template ranking, as in PHYRE); cross-template it uses one global ranking.
    """

    name = "mem"

    def __init__(self, seed: int = 0, weight: float = 5.0, n_actions: int = ACTIONS, pool: int | None = POOL):
        super().__init__(seed)
        _check_pool(pool, self.name)
        self.pool = pool
        if isinstance(n_actions, bool) or not isinstance(n_actions, int | np.integer) or n_actions < 1:
            raise ValueError(f"{self.name}'s n_actions must be an integer >= 1 (the size of the ranked action set; "
                             f"PHYRE ranks 10,000), got {n_actions!r}")
        self.weight, self.n_actions = weight, int(n_actions)

    def train(self, tier, keys, setting, cache="runs/physics"):
        super().train(tier, keys, setting, cache)
        self.actions = action_set(tier, self.n_actions)
        pool, o = outcomes(tier, keys, cache, n_actions=self.n_actions, pool=self.pool)
        tmpl, win = np.array([t.template for t in pool]), (o == 1).astype(np.float64)
        self.succ = {None: win.sum(0)}
        self.tot = {None: np.full(len(self.actions), float(len(pool)))}
        if setting == "within":
            for t in np.unique(tmpl):
                self.succ[t], self.tot[t] = win[tmpl == t].sum(0), np.full(len(self.actions), float((tmpl == t).sum()))

    def _key(self, template: int):
        return template if self.setting == "within" and template in self.succ else None

    def ranks(self) -> list[np.ndarray]:
        """Each row's order of the fixed actions, best first."""
        return [np.argsort(-(self.succ[k] / np.maximum(self.tot[k], 1)), kind="stable")
                for k in map(self._key, self.templates)]

    def begin(self, obs):
        super().begin(obs)
        self.rank, self.pos, self.done_idx = self.ranks(), np.zeros(self.B, dtype=np.int64), [[] for _ in range(self.B)]

    def choose(self, obs, active):
        self.picked = np.array([self.rank[b][self.pos[b] % len(self.actions)] for b in range(self.B)], dtype=np.int64)
        self.pos += 1
        return self.actions[self.picked]

    def observe(self, action, obs):
        """Record each valid attempt as ``(action index, solved)`` (an invalid one, or a row that had ended, is
        not an attempt: nothing is learned)."""
        super().observe(action, obs)
        solved = obs["solved"].numpy()
        for b in np.flatnonzero(obs["valid"].numpy()):
            self.done_idx[b].append((self.picked[b], bool(solved[b])))

    def finish(self):
        if not self.online:
            return
        for b, tpl in enumerate(self.templates):
            k = self._key(tpl)
            for i, s in self.done_idx[b]:
                self.succ[k][i] += self.weight * s
                self.tot[k][i] += self.weight


class MemOAgent(MemAgent):
    """MEM-O: MEM, plus each finished test task's attempts added to the counts with weight ``weight`` (PHYRE tunes
    it on the dev split; here it is fixed). Knows what MEM knows and the outcomes of its own test attempts."""

    name, online = "mem-o", True


# -- ssup ----------------------------------------------------------------------------------------------------
RELATIONS = ("above", "left", "right")
ROLES = ("goal", "other")


def _candidates(scene: np.ndarray, comp: np.ndarray, m: int, rng) -> np.ndarray:
    """Object-oriented proposals ``[K, 3m]`` in ``[0, 1]`` for components ``comp [K]`` (index into the scene's
    dynamic bodies x :data:`RELATIONS`); extra balls of 2B go in the same way on a second draw."""
    dyn = np.flatnonzero(scene[:, 6] > 0)
    K = len(comp)
    out = np.empty((K, m, 3))
    for j in range(m):
        c = comp if j == 0 else rng.integers(0, len(dyn) * len(RELATIONS), K)
        body, rel = scene[dyn[c // len(RELATIONS)]], c % len(RELATIONS)
        size = np.where(body[:, 0] == 0, body[:, 3], np.maximum(body[:, 3], body[:, 4]) / 2)
        r = rng.uniform(0.25, 1.0, K)
        side = np.where(rel == 1, -1.0, 1.0)
        x = np.where(rel == 0, body[:, 1] + rng.normal(0, 1.0, K) * (size + r),
                     body[:, 1] + side * (size + r + rng.uniform(0.0, 1.5, K)))
        y = np.where(rel == 0, body[:, 2] + size + r + rng.uniform(0.05, 4.0, K),
                     body[:, 2] + rng.uniform(-0.5, 2.0, K))
        out[:, j] = np.stack([x / W, y / W, (r - 0.25) / 0.75], 1)
    out = out.reshape(K, 3 * m)
    uniform = rng.random(K) < 0.1  # a little mass everywhere: no action is ruled out a priori
    out[uniform] = rng.random((int(uniform.sum()), 3 * m))
    return np.clip(out, 0, 1)


def _kinds(scene: np.ndarray) -> np.ndarray:
    """The role (0 goal, 1 other) of each component's body: what the template-level prior is over."""
    dyn = np.flatnonzero(scene[:, 6] > 0)
    role = (scene[dyn, 7] != 1).astype(int)
    return np.repeat(role, len(RELATIONS)) * len(RELATIONS) + np.tile(np.arange(len(RELATIONS)), len(dyn))


def _sim(scene: np.ndarray, balls: np.ndarray, stop_decided: bool = True):
    """The internal model's simulator: ``density`` scales the scene's bodies, the agent's balls keep 1;
    ``stop_decided``: a rollout without a recorded trajectory stops once its outcome is decided."""
    def sim(density: float, **kw):
        return simulate(scene, balls, density=np.concatenate([np.full(len(scene), density), np.ones(len(balls))]),
                        check=False, stop_decided=stop_decided, **kw)

    return sim


class SsupAgent(PhysicsAgent):
    """``ssup``: Sample, Simulate, Update (Allen, Smith & Tenenbaum 2020) with a Bayesian internal model.

    Knows: the scene's object list (as the env observes it), the kind of physics (a simulator it runs with
    *uncertain* friction, elasticity and densities -- :mod:`causalplay.models.physics` -- and noisy dynamics),
    and, from training (where PHYRE allows the simulator): a posterior over those physical parameters fitted
    to simulated training attempts (:meth:`_calibrate`), and an overhypothesis: which kind of action (a ball
    above / left / right of the goal body or of another dynamic body) solved tasks, per template
    (within-template) and pooled (cross-template).
    It never sees the true physical parameters or the stored solutions.

    Each attempt: draw ``n_cand`` valid candidates from the action prior (a mixture over action kinds and
    dynamic bodies), simulate each under ``n_sims`` particles of the belief with noisy dynamics, and try the
    candidate with the highest estimated P(success) (up to ``rounds`` rounds of candidates until one reaches
    ``accept``). Once ``late`` attempts have failed, each attempt is one round and each candidate is simulated under
    ``late_sims`` particles (default ``n_sims``): one round bounds the cost of a task it cannot solve, where nearly
    every estimate is 0. ``late_sims=1`` is a speed option with a measured price (``docs/physics.md``, cost
    section: on B-v2 at PHYRE's test-split size 1.4x less CPU and 1.0 AUCCESS point lower). After
    a failure: the particles are reweighted by the likelihood of the observed trajectory (likelihood
    weighting, resampled when the effective sample size halves), the failed component's prior weight is
    multiplied by ``decay`` and candidates within ``tabu`` of a failed action are dropped. ``early_stop``: each
    candidate rollout stops once its outcome is decided (the same choices; ``False`` runs every rollout to its
    natural end, for ``benchmarks/bench_ssup.py``).
    """

    name = "ssup"

    def __init__(self, seed: int = 0, n_cand: int = 16, n_sims: int = 2, rounds: int = 4, accept: float = 0.5,
                 decay: float = 0.5, tabu: float = 0.04, particles: int = 8, noise: float = 0.03,
                 hierarchical: bool = True, calib_sd: float = 1.0, early_stop: bool = True, late: int = 10,
                 late_sims: int | None = None):
        super().__init__(seed)
        late_sims = n_sims if late_sims is None else late_sims
        for name, v in (("n_sims", n_sims), ("late_sims", late_sims)):
            if not isinstance(v, int | np.integer) or v < 1:
                raise ValueError(f"ssup's {name} must be an integer >= 1 (particles simulated per candidate), "
                                 f"got {v!r}")
        self.early_stop, self.late, self.late_sims = early_stop, late, late_sims
        self.n_cand, self.n_sims, self.rounds, self.accept, self.decay, self.tabu = (n_cand, n_sims, rounds,
                                                                                    accept, decay, tabu)
        self.P, self.hierarchical, self.calib_sd = particles, hierarchical, calib_sd
        self.prior = PhysicsPrior(noise=noise)
        self.record = self.prior.record  # it reads every attempt's trajectory, at the model's frames

    def train(self, tier, keys, setting, cache="runs/physics"):
        """Learn the overhypothesis: Dirichlet counts over action kinds (role x relation) of the training pool's
        solving actions, per template and pooled (the template prior's concentration is the pooled mean)."""
        super().train(tier, keys, setting, cache)
        kinds = len(ROLES) * len(RELATIONS)
        self.counts = {None: np.ones(kinds)}
        pool, o = outcomes(tier, keys, cache)
        self.physics = self._calibrate(pool, o) if len(keys) else None
        if not self.hierarchical:
            return
        acts = action_set(tier)
        for t, row in zip(pool, o, strict=True):
            if not (row == 1).any():
                continue
            c = np.bincount([self._kind_of(t.scene, a) for a in acts[row == 1]], minlength=kinds)
            c = c / c.sum()  # each task counts once, whatever its number of solutions
            self.counts[None] = self.counts[None] + c
            self.counts[t.template] = self.counts.get(t.template, 0) + c

    def _calibrate(self, pool: list[PhysicsTask], o: np.ndarray, n_tasks: int = 16, n_particles: int = 128) -> dict:
        """The physics overhypothesis: likelihood weighting of ``n_particles`` prior draws on simulated attempts
        in ``n_tasks`` training-pool tasks (for each, the first action of the fixed set that solved it in
        training: an attempt where bodies collide, so its trajectory is informative); test tasks start from
        ``particles`` draws of this posterior."""
        parts, logw = sample_prior(n_particles, self.rng, self.prior), np.zeros(n_particles)
        acts, used = action_set(self.tier), 0
        for t, row in zip(pool, o, strict=True):
            if used == n_tasks or not (row == 1).any():
                continue
            balls = to_balls(acts[np.argmax(row == 1)])
            real = simulate(t.scene, balls, record=self.prior.record, check=False)
            dyn = np.concatenate([t.scene[:, 6] > 0, np.ones(len(balls), bool)])
            logw += log_weights(_sim(t.scene, balls), dyn, parts, real.traj[:, dyn, :2], real.solved,
                                PhysicsPrior(noise=0.0, obs_sd=self.calib_sd))
            used += 1
        w = np.exp(logw - logw.max())
        return parts | {"w": w / w.sum()}

    def _draw_physics(self) -> dict:
        if self.physics is None:
            return sample_prior(self.P, self.rng, self.prior)
        idx = self.rng.choice(len(self.physics["w"]), self.P, p=self.physics["w"])
        return {k: v[idx] * np.exp(0.05 * self.rng.standard_normal(self.P)) for k, v in self.physics.items()
                if k != "w"}

    def _kind_of(self, scene, action) -> int:
        """The action kind of one (first) ball: nearest dynamic body's role x where the ball is relative to it."""
        dyn = np.flatnonzero(scene[:, 6] > 0)
        x, y, _ = to_balls(action[None])[0, 0]
        j = dyn[np.argmin(np.hypot(scene[dyn, 1] - x, scene[dyn, 2] - y))]
        rel = 0 if y > scene[j, 2] + 0.2 and abs(x - scene[j, 1]) < 1.0 else (1 if x < scene[j, 1] else 2)
        return int(scene[j, 7] != 1) * len(RELATIONS) + rel

    def begin(self, obs):
        super().begin(obs)
        self.belief = [self._draw_physics() for _ in range(self.B)]
        self.logw = [np.zeros(self.P) for _ in range(self.B)]
        self.weights, self.chosen = [], np.zeros(self.B, dtype=np.int64)
        pooled = self.counts[None] / self.counts[None].sum()
        for scene, tpl in zip(self.scenes, self.templates, strict=True):
            a = pooled * 4.0 + (self.counts.get(tpl, 0) if self.setting == "within" else 0)
            self.weights.append((a / np.sum(a))[_kinds(scene)])

    def _estimate(self, b: int, acts: np.ndarray, n_sims: int) -> np.ndarray:
        """P(success) of each candidate: mean over ``n_sims`` particles drawn from the belief."""
        scene, w = self.scenes[b], np.exp(self.logw[b] - self.logw[b].max())
        p = np.zeros(len(acts))
        for k, a in enumerate(acts):
            idx = self.rng.choice(self.P, n_sims, p=w / w.sum())
            parts = {n: v[idx] for n, v in self.belief[b].items()}
            sims = simulate_particles(_sim(scene, to_balls(a), self.early_stop), parts, self.prior.noise,
                                      int(self.rng.integers(2**31)))
            p[k] = np.mean([s.solved for s in sims])
        return p

    def choose(self, obs, active):
        out = self.rng.random((self.B, 3 * self.m))
        for b in np.flatnonzero(active):
            scene, best, best_p = self.scenes[b], None, -1.0
            failed = np.array([a for a, s in self.tried[b] if not s]).reshape(-1, 3 * self.m)
            late = len(self.tried[b]) >= self.late  # long failures: cheaper attempts (one round, late_sims each)
            for _ in range(1 if late else self.rounds):
                w = self.weights[b] + 1e-3 / len(self.weights[b])
                comp = self.rng.choice(len(w), 4 * self.n_cand, p=w / w.sum())
                acts = _candidates(scene, comp, self.m, self.rng)
                ok = ~invalid(scene, to_balls(acts))
                if len(failed):
                    ok &= np.min(np.abs(acts[:, None] - failed[None]).max(-1), 1) > self.tabu
                acts, comp = acts[ok][:self.n_cand], comp[ok][:self.n_cand]
                if not len(acts):
                    continue
                p = self._estimate(b, acts, self.late_sims if late else self.n_sims)
                if p.max() > best_p:
                    best, best_p, self.chosen[b] = acts[p.argmax()], p.max(), comp[p.argmax()]
                if best_p >= self.accept:
                    break
            if best is not None:
                out[b] = best
        return out

    def observe(self, action, obs):
        super().observe(action, obs)
        valid, solved, traj = obs["valid"].numpy(), obs["solved"].numpy(), obs["traj"]
        for b in np.flatnonzero(valid & ~solved):
            self.weights[b][self.chosen[b]] *= self.decay
            if traj[b] is None:
                continue
            scene, balls = self.scenes[b], to_balls(action[b])
            dyn = np.concatenate([scene[:, 6] > 0, np.ones(len(balls), bool)])
            self.logw[b] = self.logw[b] + log_weights(_sim(scene, balls), dyn, self.belief[b], traj[b][:, dyn, :2],
                                                      False, self.prior, seed=int(self.rng.integers(2**31)))
            w = np.exp(self.logw[b] - self.logw[b].max())
            if w.sum() ** 2 / (w**2).sum() < self.P / 2:  # resample, with a little jitter to keep particles apart
                idx = self.rng.choice(self.P, self.P, p=w / w.sum())
                self.belief[b] = {k: np.abs(v[idx] * np.exp(0.05 * self.rng.standard_normal(self.P)))
                                  for k, v in self.belief[b].items()}
                self.logw[b] = np.zeros(self.P)


def __getattr__(name: str):
    if name == "RandAgent":  # renamed in 0.3
        warnings.warn("causalplay.agents.physics.RandAgent is deprecated; use RandomPhysicsAgent (agent name "
                      "'random')", DeprecationWarning, stacklevel=2)
        return RandomPhysicsAgent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
