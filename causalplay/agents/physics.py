"""Agents for the physics puzzles: PHYRE's baselines (RAND, MEM, MEM-O; DQN and DQN-O live in
:mod:`causalplay.agents.physics_dqn`) and ``ssup``, a simulation-based Bayesian learner.

Every agent plays a batch of tasks in lock-step through one protocol::

    agent.train(train_tasks, setting)     # once per fold; may use the simulator (PHYRE allows it in training)
    agent.begin(tasks)                    # a batch of test tasks (their scenes: the object list)
    a = agent.act(active)                 # [B, 3m] in [0, 1]; rows not active are ignored
    agent.observe(a, valid, solved, traj) # the evaluator's answer (traj: [B] trajectories, None if invalid)
    agent.end()                           # after the batch: online agents learn here

Each docstring says what the agent knows. The evaluator (:mod:`causalplay.bench.physics`) enforces the budget
and PHYRE's rule that invalid actions do not count.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from causalplay.envs.physics_sim import W, invalid, simulate
from causalplay.envs.physics_templates import ACTIONS, TIERS, PhysicsTask, action_set, load_tasks, to_balls
from causalplay.models.physics import PhysicsPrior, log_weights, sample_prior, simulate_particles

__all__ = ["PhysicsAgent", "RandAgent", "MemAgent", "SsupAgent", "PHYSICS_AGENTS", "make_physics_agent",
           "outcomes", "POOL"]

POOL = 6  # training-pool tasks per template whose outcomes on the whole action set are simulated


def _outcome_rows(tier: str, tasks: list[PhysicsTask], actions: np.ndarray) -> np.ndarray:
    out = np.full((len(tasks), len(actions)), -1, dtype=np.int8)
    balls = to_balls(actions)
    for i, t in enumerate(tasks):
        ok = np.flatnonzero(~invalid(t.scene, balls))
        out[i, ok] = [simulate(t.scene, balls[j], check=False).solved for j in ok]
    return out


def outcomes(tier: str, cache: str | Path = "runs/physics", executor=None,
             n_actions: int = ACTIONS) -> tuple[list[str], np.ndarray]:
    """Outcomes of the tier's fixed action set on the training pool (task indices ``< POOL`` of every template in
    the cached task pool, :func:`~causalplay.envs.physics_templates.load_tasks`): ``(keys, int8 [n_pool,
    n_actions])`` with 1 solved, 0 not, -1 invalid; simulated once and cached beside the tasks. Agents keep the
    rows of their fold's training tasks."""
    pool = [t for t in load_tasks(tier, cache) if int(t.key.split(":")[1]) < POOL]
    keys = [t.key for t in pool]
    path = Path(cache) / f"outcomes-{tier}-{n_actions}.npz"
    if path.exists():
        return keys, np.load(path)["o"]
    acts = action_set(tier, n_actions)
    chunks = [pool[i:i + 10] for i in range(0, len(pool), 10)]
    if executor is None:
        o = np.concatenate([_outcome_rows(tier, c, acts) for c in chunks])
    else:
        o = np.concatenate([f.result() for f in [executor.submit(_outcome_rows, tier, c, acts) for c in chunks]])
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, o=o)
    return keys, o


class PhysicsAgent:
    """Base class: keeps the batch's tasks and the actions each row has tried."""

    name, online = "agent", False

    def __init__(self, tier: str, seed: int = 0, cache: str = "runs/physics"):
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {list(TIERS)}, got {tier!r}")
        self.tier, self.m, self.seed, self.cache = tier, TIERS[tier], seed, cache
        self.rng = np.random.default_rng([seed, 7919])

    def train(self, tasks: list[PhysicsTask], setting: str) -> None:
        self.setting = setting

    def begin(self, tasks: list[PhysicsTask]) -> None:
        self.tasks = tasks
        self.tried = [[] for _ in tasks]

    def act(self, active: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def observe(self, action: np.ndarray, valid: np.ndarray, solved: np.ndarray, traj: list) -> None:
        for b in np.flatnonzero(valid):
            self.tried[b].append((action[b], bool(solved[b])))

    def end(self) -> None:
        pass


class RandAgent(PhysicsAgent):
    """RAND: uniform actions in ``[0, 1]^{3m}``. Knows nothing; no training."""

    name = "rand"

    def act(self, active):
        return self.rng.random((len(self.tasks), 3 * self.m))


class MemAgent(PhysicsAgent):
    """MEM (``online=False``) / MEM-O (``online=True``): ranks the tier's fixed action set by ``p_a``, the
    fraction of training-pool tasks each action solved (outcomes simulated once, :func:`outcomes`).

    Knows: the training tasks and the simulator (training only), and in the within-template setting the test
    task's template id (a per-template ranking, as in PHYRE); cross-template it uses one global ranking.
    MEM-O adds each finished test task's attempts to the counts with weight ``weight`` (PHYRE tunes it on the
    dev split; here it is fixed).
    """

    name = "mem"

    def __init__(self, tier, seed=0, cache="runs/physics", online: bool = False, weight: float = 5.0,
                 n_actions: int = ACTIONS):
        super().__init__(tier, seed, cache)
        self.online, self.weight, self.actions = online, weight, action_set(tier, n_actions)
        self.name = "mem-o" if online else "mem"

    def train(self, tasks, setting):
        super().train(tasks, setting)
        keys, o = outcomes(self.tier, self.cache, n_actions=len(self.actions))
        keep = set(t.key for t in tasks)
        rows = np.array([k in keep for k in keys])
        tmpl = np.array([int(k.split(":")[0]) for k in keys])[rows]
        win = (o[rows] == 1).astype(np.float64)
        self.succ = {None: win.sum(0)}
        self.tot = {None: np.full(len(self.actions), float(rows.sum()))}
        if setting == "within":
            for t in np.unique(tmpl):
                self.succ[t], self.tot[t] = win[tmpl == t].sum(0), np.full(len(self.actions), float((tmpl == t).sum()))

    def _key(self, task):
        return task.template if self.setting == "within" and task.template in self.succ else None

    def begin(self, tasks):
        super().begin(tasks)
        self.rank = [np.argsort(-(self.succ[self._key(t)] / np.maximum(self.tot[self._key(t)], 1)), kind="stable")
                     for t in tasks]
        self.pos = np.zeros(len(tasks), dtype=np.int64)
        self.done_idx = [[] for _ in tasks]

    def act(self, active):
        out = np.empty((len(self.tasks), 3 * self.m))
        for b in range(len(self.tasks)):
            i = self.rank[b][self.pos[b] % len(self.actions)]
            self.pos[b] += 1
            self.done_idx[b].append(i)
            out[b] = self.actions[i]
        return out

    def observe(self, action, valid, solved, traj):
        super().observe(action, valid, solved, traj)
        for b in np.flatnonzero(~valid):  # invalid: not an attempt, nothing learned
            self.done_idx[b].pop()
        for b in np.flatnonzero(valid):
            self.done_idx[b][-1] = (self.done_idx[b][-1], bool(solved[b]))

    def end(self):
        if not self.online:
            return
        for b, t in enumerate(self.tasks):
            k = self._key(t)
            for i, s in [d for d in self.done_idx[b] if isinstance(d, tuple)]:
                self.succ[k][i] += self.weight * s
                self.tot[k][i] += self.weight


# -- ssup ----------------------------------------------------------------------------------------------------
RELATIONS = ("above", "left", "right")
ROLES = ("goal", "other")


def _candidates(scene: np.ndarray, comp: np.ndarray, m: int, rng) -> tuple[np.ndarray, np.ndarray]:
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
    return np.clip(out, 0, 1), comp


def _kinds(scene: np.ndarray) -> np.ndarray:
    """The role (0 goal, 1 other) of each component's body: what the template-level prior is over."""
    dyn = np.flatnonzero(scene[:, 6] > 0)
    role = (scene[dyn, 7] != 1).astype(int)
    return np.repeat(role, len(RELATIONS)) * len(RELATIONS) + np.tile(np.arange(len(RELATIONS)), len(dyn))


def _sim(scene: np.ndarray, balls: np.ndarray):
    """The internal model's simulator: ``density`` scales the scene's bodies, the agent's balls keep 1."""
    def sim(density: float, **kw):
        return simulate(scene, balls, density=np.r_[np.full(len(scene), density), np.ones(len(balls))],
                        check=False, **kw)

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
    ``accept``; one round once 10 attempts have failed, which bounds the cost of a task it cannot solve). After
    a failure: the particles are reweighted by the likelihood of the observed trajectory (likelihood
    weighting, resampled when the effective sample size halves), the failed component's prior weight is
    multiplied by ``decay`` and candidates within ``tabu`` of a failed action are dropped.
    """

    name = "ssup"

    def __init__(self, tier, seed=0, cache="runs/physics", n_cand: int = 16, n_sims: int = 2, rounds: int = 4,
                 accept: float = 0.5, decay: float = 0.5, tabu: float = 0.04, particles: int = 8,
                 noise: float = 0.03, hierarchical: bool = True, calib_sd: float = 1.0):
        super().__init__(tier, seed, cache)
        self.n_cand, self.n_sims, self.rounds, self.accept, self.decay, self.tabu = (n_cand, n_sims, rounds,
                                                                                    accept, decay, tabu)
        self.P, self.hierarchical, self.calib_sd = particles, hierarchical, calib_sd
        self.prior = PhysicsPrior(noise=noise)
        self.sims = 0

    def train(self, tasks, setting):
        """Learn the overhypothesis: Dirichlet counts over action kinds (role x relation) of the training pool's
        solving actions, per template and pooled (the template prior's concentration is the pooled mean)."""
        super().train(tasks, setting)
        kinds = len(ROLES) * len(RELATIONS)
        self.counts = {None: np.ones(kinds)}
        self.physics = self._calibrate(tasks) if tasks else None
        if not self.hierarchical:
            return
        keys, o = outcomes(self.tier, self.cache)
        acts, by_key = action_set(self.tier), {t.key: t for t in tasks}
        for k, row in zip(keys, o, strict=True):
            if k not in by_key or not (row == 1).any():
                continue
            t = by_key[k]
            c = np.bincount([self._kind_of(t.scene, a) for a in acts[row == 1]], minlength=kinds)
            c = c / c.sum()  # each task counts once, whatever its number of solutions
            self.counts[None] = self.counts[None] + c
            self.counts[t.template] = self.counts.get(t.template, 0) + c

    def _calibrate(self, tasks, n_tasks: int = 16, n_particles: int = 128) -> dict:
        """The physics overhypothesis: likelihood weighting of ``n_particles`` prior draws on simulated attempts
        in ``n_tasks`` training-pool tasks (for each, the first action of the fixed set that solved it in
        training: an attempt where bodies collide, so its trajectory is informative); test tasks start from
        ``particles`` draws of this posterior."""
        parts, logw = sample_prior(n_particles, self.rng, self.prior), np.zeros(n_particles)
        keys, o = outcomes(self.tier, self.cache)
        by_key, acts, used = {t.key: t for t in tasks}, action_set(self.tier), 0
        for k, row in zip(keys, o, strict=True):
            if used == n_tasks or k not in by_key or not (row == 1).any():
                continue
            t, balls = by_key[k], to_balls(acts[np.argmax(row == 1)])
            real = simulate(t.scene, balls, record=self.prior.record, check=False)
            dyn = np.concatenate([t.scene[:, 6] > 0, np.ones(len(balls), bool)])
            logw += log_weights(_sim(t.scene, balls), dyn, parts, real.traj[:, dyn, :2], real.solved,
                                PhysicsPrior(noise=0.0, obs_sd=self.calib_sd))
            used += 1
        w = np.exp(logw - logw.max())
        return {k: v for k, v in parts.items()} | {"w": w / w.sum()}

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

    def begin(self, tasks):
        super().begin(tasks)
        self.belief = [self._draw_physics() for _ in tasks]
        self.logw = [np.zeros(self.P) for _ in tasks]
        self.weights, self.chosen = [], np.zeros(len(tasks), dtype=np.int64)
        for t in tasks:
            pooled = self.counts[None] / self.counts[None].sum()
            a = pooled * 4.0 + (self.counts.get(t.template, 0) if self.setting == "within" else 0)
            self.weights.append((a / np.sum(a))[_kinds(t.scene)])

    def _estimate(self, b: int, acts: np.ndarray) -> np.ndarray:
        """P(success) of each candidate: mean over ``n_sims`` particles drawn from the belief."""
        t, w = self.tasks[b], np.exp(self.logw[b] - self.logw[b].max())
        p = np.zeros(len(acts))
        for k, a in enumerate(acts):
            idx = self.rng.choice(self.P, self.n_sims, p=w / w.sum())
            parts = {n: v[idx] for n, v in self.belief[b].items()}
            sims = simulate_particles(_sim(t.scene, to_balls(a)), parts, self.prior.noise,
                                      int(self.rng.integers(2**31)))
            p[k] = np.mean([s.solved for s in sims])
        self.sims += len(acts) * self.n_sims
        return p

    def act(self, active):
        out = self.rng.random((len(self.tasks), 3 * self.m))
        for b in np.flatnonzero(active):
            scene, best, best_p = self.tasks[b].scene, None, -1.0
            failed = np.array([a for a, s in self.tried[b] if not s]).reshape(-1, 3 * self.m)
            for _ in range(self.rounds if len(self.tried[b]) < 10 else 1):  # long failures: cheaper attempts
                w = self.weights[b] + 1e-3 / len(self.weights[b])
                comp = self.rng.choice(len(w), 4 * self.n_cand, p=w / w.sum())
                acts, comp = _candidates(scene, comp, self.m, self.rng)
                ok = ~invalid(scene, to_balls(acts))
                if len(failed):
                    ok &= np.min(np.abs(acts[:, None] - failed[None]).max(-1), 1) > self.tabu
                acts, comp = acts[ok][:self.n_cand], comp[ok][:self.n_cand]
                if not len(acts):
                    continue
                p = self._estimate(b, acts)
                if p.max() > best_p:
                    best, best_p, self.chosen[b] = acts[p.argmax()], p.max(), comp[p.argmax()]
                if best_p >= self.accept:
                    break
            if best is not None:
                out[b] = best
        return out

    def observe(self, action, valid, solved, traj):
        super().observe(action, valid, solved, traj)
        for b in np.flatnonzero(valid & ~solved):
            self.weights[b][self.chosen[b]] *= self.decay
            if traj[b] is None:
                continue
            scene = self.tasks[b].scene
            balls = to_balls(action[b])
            dyn = np.concatenate([scene[:, 6] > 0, np.ones(len(balls), bool)])
            self.logw[b] = self.logw[b] + log_weights(_sim(scene, balls), dyn, self.belief[b], traj[b][:, dyn, :2],
                                                      False, self.prior, seed=int(self.rng.integers(2**31)))
            self.sims += self.P
            w = np.exp(self.logw[b] - self.logw[b].max())
            if w.sum() ** 2 / (w**2).sum() < self.P / 2:  # resample, with a little jitter to keep particles apart
                idx = self.rng.choice(self.P, self.P, p=w / w.sum())
                self.belief[b] = {k: np.abs(v[idx] * np.exp(0.05 * self.rng.standard_normal(self.P)))
                                  for k, v in self.belief[b].items()}
                self.logw[b] = np.zeros(self.P)


def _dqn(online: bool):
    def make(tier, seed=0, cache="runs/physics", **kw):
        from .physics_dqn import DqnAgent  # torch training code: only when asked for

        return DqnAgent(tier, seed, cache, online=online, **kw)

    return make


PHYSICS_AGENTS = {"rand": RandAgent, "mem": MemAgent, "mem-o": lambda *a, **k: MemAgent(*a, online=True, **k),
                  "dqn": _dqn(False), "dqn-o": _dqn(True), "ssup": SsupAgent}


def make_physics_agent(spec, tier: str, seed: int = 0, cache: str = "runs/physics") -> PhysicsAgent:
    """An agent from a spec ``name:key=value`` (:mod:`causalplay.core.specs`; names: :data:`PHYSICS_AGENTS`)."""
    from causalplay.core.specs import parse_spec

    s = parse_spec(spec, PHYSICS_AGENTS, "physics agent")
    return PHYSICS_AGENTS[s.name](tier, seed, cache, **s.kwargs)
