"""``causalplay/Overhypothesis-v0``: a sequence of ``K`` Blicket machines that share a rule.

:class:`OverhypothesisBatch` is a :class:`causalplay.envs.task.Task` (``B`` sequences stepped together) and
:class:`OverhypothesisEnv` its gymnasium env (``B = 1``, same code path); ``gymnasium.make_vec`` runs ``B`` of
them natively (:class:`causalplay.envs.vector.TaskVectorEnv`). The task is described on :class:`OverhypothesisEnv`;
both rules allow the same blicket counts (2-4), so the count does not give the rule away.

Randomness: a sequence reset draws one uniform (the rule) and then the machine's block of uniforms
(:mod:`causalplay.envs.sampling`); each later machine draws its own block. Rows may own generators (the vector
env), so row ``i`` equals a single env seeded like it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from causalplay.core.rules import make_rule

from ._single import SingleEnv, unit_box
from .core import BlicketBatch, ConfigTask
from .sampling import Episodes, TaskConfig
from .task import ObsLayout, batch_action, numpy_obs, reset_rows

__all__ = ["OVERHYPOTHESIS", "OverhypothesisBatch", "OverhypothesisEnv", "make_overhypothesis",
           "overhypothesis_batch", "RULE_PER"]

#: One machine of the sequence: IVRE with both rules and 2-4 blickets.
OVERHYPOTHESIS = TaskConfig(name="Overhypothesis", n_blickets=(2, 3, 4), n_context=4, context_size=(1, 4),
                            context="random", rules=(make_rule("disjunctive"), make_rule("conjunctive")))

RULE_PER = ("sequence", "episode")
OBS_MODES = ("panel", "history")


class _Machines(BlicketBatch):
    """The IVRE engine with the rule of each row set by its sequence (or drawn per machine)."""

    seq_rule: np.ndarray
    per_episode: bool

    def _sample(self, rows: np.ndarray) -> Episodes:
        ep = super()._sample(rows)
        if not self.per_episode:
            ep.rule_idx = self.seq_rule[rows].copy()
        return ep

    def hold(self, rows: np.ndarray) -> None:
        """Mark ``rows`` (a bool mask or indices) done, so a step leaves them as they are (their sequence ended)."""
        self._np["done"][rows] = True


class OverhypothesisBatch(ConfigTask):
    """``B`` sequences of ``K`` Blicket machines sharing a rule (a :class:`~causalplay.envs.task.Task`).

    Parameters
    ----------
    config : TaskConfig
        One machine (default :data:`OVERHYPOTHESIS`); its ``rules`` are what a sequence draws from.
    batch_size : int
    rng : numpy.random.Generator or sequence of them (one per row)
    n_episodes : int
        ``K``, machines per sequence (5).
    rule_per : {"sequence", "episode"}
        Draw the rule once per sequence (the task) or per machine (the control).
    noise : float
        Flip probability of every machine's response.
    obs_mode : {"panel", "history"}
        The IVRE observation of the current machine (:mod:`causalplay.envs.core`) followed by one field
        ``episode`` = (machine index + 1) / K.

    Stepping: an action goes to the current machine of each row, with that machine's IVRE rewards; machines follow
    one another and the sequence ends as :class:`OverhypothesisEnv` ("Episode End") describes.

    Attributes
    ----------
    episode : long ``[B]`` -- index of the current machine; rule_idx : long ``[B]`` -- the sequence's rule (the
    current machine's under the control); done : bool ``[B]`` -- the sequence ended; machines : the inner
    IVRE engine (``blickets``, ``panels``, ``lit``, ``n_blickets`` of the current machine).
    """

    def __init__(self, config: TaskConfig = OVERHYPOTHESIS, batch_size: int = 1, rng=None, *, n_episodes: int = 5,
                 rule_per: str = "sequence", noise: float = 0.0, obs_mode: str = "panel"):
        if isinstance(n_episodes, bool) or not isinstance(n_episodes, (int, np.integer)) or n_episodes < 1:
            raise ValueError(f"n_episodes must be a positive integer, got {n_episodes!r}")
        if rule_per not in RULE_PER:
            raise ValueError(f"rule_per must be one of {RULE_PER}, got {rule_per!r}")
        if obs_mode not in OBS_MODES:
            raise ValueError(f"obs_mode must be one of {OBS_MODES} for Overhypothesis-v0, got {obs_mode!r}")
        if noise:
            config = dataclasses.replace(config, rules=tuple(dataclasses.replace(r, noise=noise) for r in config.rules))
        rng = np.random.default_rng() if rng is None else rng
        self.machines = _Machines(config, batch_size, rng, obs_mode=obs_mode)
        self.machines.per_episode = rule_per == "episode"
        self.machines.seq_rule = np.zeros(batch_size, dtype=np.int64)
        self.config, self.B, self.K = config, batch_size, int(n_episodes)
        self.rule_per, self.obs_mode = rule_per, obs_mode
        inner = self.machines.layout
        self.layout = ObsLayout.of(*[(f.name, f.size, f.scale, f.doc) for f in inner.fields],
                                   ("episode", 1, float(self.K), "machine number in the sequence / K"))
        K = self.K
        self._np = {"episode": np.zeros(batch_size, np.int64), "done": np.ones(batch_size, bool),
                    "solved_step": np.zeros((batch_size, K), np.int64),
                    "episode_reward": np.zeros((batch_size, K)), "context_reward": np.zeros((batch_size, K)),
                    "rule": np.zeros((batch_size, K), np.int64), "n_blickets_k": np.zeros((batch_size, K), np.int64)}
        self.episode = torch.from_numpy(self._np["episode"])
        self.done = torch.from_numpy(self._np["done"])
        self._started = False

    n_episodes = property(lambda self: self.K)

    # the current machine's state (views of the inner engine)
    blickets = property(lambda self: self.machines.blickets)
    panels = property(lambda self: self.machines.panels)
    lit = property(lambda self: self.machines.lit)
    n_blickets = property(lambda self: self.machines.n_blickets)
    rule_idx = property(lambda self: self.machines.rule_idx)
    t = property(lambda self: self.machines.t)
    objects = property(lambda self: self.machines.objects)

    @property
    def rng(self):
        return self.machines.rng

    @rng.setter
    def rng(self, value) -> None:
        self.machines.rng = value

    # -- the loop -------------------------------------------------------------------------------------------
    def _draw_rules(self, idx: np.ndarray) -> None:
        R = len(self.config.rules)
        m = self.machines
        u = m.rng.random(len(idx)) if m.rngs is None else np.array([m.rngs[int(i)].random() for i in idx])
        m.seq_rule[idx] = np.minimum((u * R).astype(np.int64), R - 1)

    def reset(self, rows=None) -> torch.Tensor:
        """Start new sequences in ``rows`` (None: all); returns every row's observation."""
        idx = reset_rows(self, rows).numpy()
        if len(idx):
            self._draw_rules(idx)
            x = self._np
            x["episode"][idx], x["done"][idx] = 0, False
            for k in ("solved_step", "episode_reward", "context_reward", "rule", "n_blickets_k"):
                x[k][idx] = 0
            self.machines.reset(idx if self.machines._started else None)
            self._note_machine(idx)
        return self.observation()

    def _note_machine(self, idx: np.ndarray) -> None:
        x, m = self._np, self.machines
        e = x["episode"][idx]
        x["rule"][idx, e] = m.rule_idx.numpy()[idx]  # the engine's public tensors share its numpy state
        x["n_blickets_k"][idx, e] = m.n_blickets.numpy()[idx]

    def observation(self) -> torch.Tensor:
        inner = self.machines.observation()
        ep = torch.from_numpy(((self._np["episode"] + 1) / self.K).astype(np.float32))[:, None]
        return torch.cat([inner, ep], 1)

    def step(self, action, *, check: bool = True):
        """Apply ``action [B, 2N]`` to each row's current machine; returns ``obs, reward, terminated, truncated``
        of the sequence (see the class docstring)."""
        if not self._started:
            raise RuntimeError("call reset() before step()")
        a = batch_action(action, self.action_size, self.B, check)
        x, m = self._np, self.machines
        active = ~x["done"]
        m.hold(~active)  # ended sequences: the machine ignores the row
        _, reward, solved, trunc = m.step(a, check=False)
        solved, trunc = solved.numpy(), trunc.numpy()
        ended = active & (solved | trunc)
        rows = np.flatnonzero(ended)
        if len(rows):
            e = x["episode"][rows]
            x["solved_step"][rows, e] = m.solved_at.numpy()[rows]
            x["episode_reward"][rows, e] = m.returns.numpy()[rows]
            x["context_reward"][rows, e] = m.context_returns.numpy()[rows]
        last = ended & (x["episode"] == self.K - 1)
        more = np.flatnonzero(ended & ~last)
        if len(more):
            x["episode"][more] += 1
            m.reset(more)
            self._note_machine(more)
        x["done"] |= last
        terminated = torch.from_numpy(last & solved)
        truncated = torch.from_numpy(last & ~solved)
        reward = reward.clone()
        reward[torch.from_numpy(~active)] = 0.0
        return self.observation(), reward, terminated, truncated

    def record(self) -> dict[str, np.ndarray]:
        """Per sequence and machine (``[B, K]``): ``solved_step`` (0 = not solved), ``episode_solved``,
        ``trials_to_solve`` (actions used to solve; ``T + 1`` when not solved), ``episode_reward``,
        ``context_reward``, ``rule`` (index into ``rules``), ``n_blickets``; read once every row is done."""
        x, T = self._np, self.config.horizon
        s = x["solved_step"].copy()
        return {"solved_step": s, "episode_solved": s > 0, "trials_to_solve": np.where(s > 0, s, T + 1),
                "episode_reward": x["episode_reward"].copy(), "context_reward": x["context_reward"].copy(),
                "rule": x["rule"].copy(), "n_blickets": x["n_blickets_k"].copy()}


class OverhypothesisEnv(SingleEnv):
    """A sequence of ``K`` Blicket machines that share a rule (``causalplay/Overhypothesis-v0``).

    ## Description
    Kemp, Perfors & Tenenbaum (2007), Lucas & Griffiths (2010) and Kosoy et al. (2022, CausalOverhypotheses):
    an overhypothesis -- how machines of one kind combine their causes -- is learned across machines. One
    gymnasium episode is a **sequence** of ``K`` (5) IVRE machines with fresh objects, blicket sets (2-4) and
    context panels, all under one rule drawn per sequence (disjunctive or conjunctive, uniformly). An agent
    that learns the rule on early machines can solve later ones faster. ``rule_per="episode"`` redraws the rule
    for every machine (the control: nothing to transfer). The engine is :class:`OverhypothesisBatch`.

    ## Action Space
    ``Box(0, 1, (2N,), float32)`` as IVRE: ``[trial_0 .. trial_{N-1}, belief_0 .. belief_{N-1}]`` for the
    current machine. NaN, a wrong shape or values outside [0, 1] raise ``ValueError``.

    ## Observation Space
    The IVRE observation of the current machine followed by ``episode`` = (machine number) / K:
    ``obs_mode="panel"``: ``Box(0, 1, (N + 5,))`` = ``[on (N), lit, count / N, panel / T, phase, episode]``;
    ``obs_mode="history"``: ``Box(0, 1, (2 + T(N + 1) + N + 1,))``. A new machine starts at panel 1.

    ## Rewards
    Each machine's IVRE rewards: ``+20`` for solving it, else ``-1 - JSD(oracle, belief)`` per action
    (:class:`causalplay.envs.blicket.BlicketEnv`).

    ## Starting State
    ``reset`` draws the sequence's rule and the first machine from ``self.np_random``; every later machine is
    drawn from it when the previous one ends. The same seed gives the same sequence.

    ## Episode End
    A machine ends when solved or after ``T`` = 10 actions; the next machine starts with the next observation
    (``terminated = truncated = False``). The sequence ends with its ``K``-th machine: ``terminated`` if that
    machine was solved, ``truncated`` otherwise (at most ``K T`` = 50 steps).

    ## Info
    ``reset``: ``objects``, ``n_blickets``, ``episode`` (0), ``step``. Every step: ``episode`` (the machine
    the action went to), ``step``, ``solved``; when a machine ends: ``machine_ended``, its ``blickets`` and
    ``rule``; ``new_objects`` when a fresh machine starts.

    ## Arguments
    * ``n_episodes`` (int): machines per sequence ``K`` (5).
    * ``rule_per`` (``"sequence"`` or ``"episode"``): the task, or the control.
    * ``noise`` (float): flip probability of the machines.
    * ``obs_mode`` (``"panel"`` or ``"history"``).

    ## Version History
    * v0: initial version (issue 15).
    """

    def __init__(self, n_episodes: int = 5, rule_per: str = "sequence", noise: float = 0.0, obs_mode: str = "panel"):
        self.config = OVERHYPOTHESIS
        self.kw = dict(n_episodes=n_episodes, rule_per=rule_per, noise=noise, obs_mode=obs_mode)
        probe = OverhypothesisBatch(self.config, 1, np.random.default_rng(0), **self.kw)
        self.n_objects = N = self.config.n_objects
        self.observation_space = unit_box((probe.obs_size,))
        self.action_space = unit_box((2 * N,))

    def _make_batch(self) -> OverhypothesisBatch:
        return OverhypothesisBatch(self.config, 1, self.np_random, **self.kw)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = super().reset(seed=seed, options=options)
        info["episode"] = 0
        return obs, info

    def step(self, action):
        a = self._one_action(action, 2 * self.n_objects)
        b = self._batch
        m = b.machines
        e = int(b.episode[0])
        was = {"blickets": m.blickets[0].numpy().copy(), "rule": b.rules[int(m.rule_idx[0])].name}
        obs, reward, term, trunc = b.step(a[None], check=False)
        terminated, truncated = bool(term[0]), bool(trunc[0])
        ended = terminated or truncated or int(b.episode[0]) != e
        solved_at = int(b._np["solved_step"][0, e])
        info = {"episode": e, "step": (solved_at or self.config.horizon) if ended else int(m.t[0]),
                "solved": ended and solved_at > 0}
        if ended:
            info.update(machine_ended=True, **was)
        if ended and not (terminated or truncated):
            info["new_objects"] = [int(i) for i in m.objects[0]]
        if terminated or truncated:
            self._ended = True
        return numpy_obs(obs, 0), float(reward[0]), terminated, truncated, info


#: The entry point of ``causalplay/Overhypothesis-v0``.
make_overhypothesis = OverhypothesisEnv


def overhypothesis_batch(batch_size: int, rng, **kwargs) -> OverhypothesisBatch:
    """The batch entry point of ``causalplay/Overhypothesis-v0`` (keyword arguments as :class:`OverhypothesisBatch`)."""
    return OverhypothesisBatch(OVERHYPOTHESIS, batch_size, rng, **kwargs)
