"""The agent protocol: batched agents that map observations to ``[trial, belief]`` actions.

An agent plays ``B`` episodes of a batched task (a :class:`causalplay.envs.task.Task`) in lock-step::

    agent.reset(TaskInfo.from_env(task), obs)   # what the task tells every player; obs: [B, obs_size]
    for t in 1..T:
        action = agent.act(obs, active)   # [B, 2N] in [0, 1]; rows of ended episodes are ignored
        obs, reward, terminated, truncated = env.step(action)

Every agent's docstring says what it **knows**: the rule family of the task (``task.rules``, told to every
player as the task's instructions), the announced blicket count (in the observation), and whether it uses
the fact that a step which did not end the episode means its previous guess was wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from causalplay.core.beliefs import BatchBeliefs
from causalplay.core.rules import Rule
from causalplay.core.spec import HypothesisSpace, WorldSpec
from causalplay.envs.task import ObsLayout, RewardSpec

__all__ = ["Agent", "TaskInfo", "MemoryAgent", "map_side_belief", "task_beliefs"]


@dataclass(frozen=True)
class TaskInfo:
    """What the task's instructions tell a player (never the episode's ground truth).

    ``layout`` says where each field sits in the observation and ``rewards`` holds the reward constants, so
    agents read them from the task instead of hard-coding them (``None``: the Blicket panel layout and the
    IVRE constants).
    """

    n_objects: int
    horizon: int
    n_context: int
    rules: tuple[Rule, ...]
    layout: ObsLayout | None = None
    rewards: RewardSpec | None = None
    #: Blicket counts the task may draw (the instructions' "up to four"); ``()`` when the task does not say.
    n_blickets: tuple[int, ...] = ()
    #: The task's constants as its family states them (e.g. the causal-DAG world's ``DAGConfig``: exploration
    #: steps, linearity, intervention value); the family's generative settings, never an episode's truth.
    config: object = None

    @classmethod
    def from_env(cls, env) -> TaskInfo:
        """From a :class:`causalplay.envs.task.Task`."""
        config = getattr(env, "config", None)
        counts = getattr(config, "n_blickets", ()) or ()
        return cls(env.n_objects, env.horizon, env.n_context, tuple(env.rules), getattr(env, "layout", None),
                   getattr(env, "rewards", None), n_blickets=tuple(int(c) for c in counts), config=config)

    @property
    def obs_layout(self) -> ObsLayout:
        if self.layout is not None:
            return self.layout
        from causalplay.envs.core import panel_layout

        return panel_layout(self.n_objects, self.horizon)

    @property
    def reward_spec(self) -> RewardSpec:
        return self.rewards if self.rewards is not None else RewardSpec()


class Agent:
    """The agent protocol. Subclasses set :attr:`name` and implement :meth:`act` (and :meth:`reset` when they keep
    per-episode state; call ``super().reset`` first).

    An agent plays ``B`` episodes of one batched task at once; :func:`causalplay.bench.play.play` is the loop::

        agent.reset(TaskInfo.from_env(task), obs)      # once per batch, before the first act
        while not task.done.all():
            obs, reward, terminated, truncated = task.step(agent.act(obs, ~task.done))

    * ``__init__(seed=0, **options)``: ``options`` are the spec's ``key=value`` pairs (``planner:depth=2`` gives
      ``depth=2``); ``causalplay bench`` checks them against this signature before any work starts. The benchmark
      builds an agent once per worker and calls :meth:`reseed` per shard.
    * :meth:`reset` gets what the task's instructions tell every player (:class:`TaskInfo`, never the episodes'
      ground truth) and the first observation of every row.
    * :meth:`act` is called once per step for the whole batch until every row's episode has ended. ``active``
      (bool ``[B]``) marks the rows still playing; an inactive row's episode has ended (solved, answered or out of
      steps), the task ignores its action and rewards it 0, so the agent returns any valid action there (zeros
      will do) and need not update that row's state; a row never becomes active again within a batch.
    * The action is one row per episode, all ``B`` rows, in the task's action layout: Blicket tasks (IVRE, EST,
      Overhypothesis) float ``[B, 2N]`` in [0, 1], the first ``N`` the trial (object ``i`` goes on the machine
      when its value is above 0.5; ignored while context panels are shown), the last ``N`` the belief that each
      object is a blicket (solved when every belief is within 0.5 of the truth); Nexiom ``[B, 2N + 2]``: trial,
      belief, "answer now" (> 0.5), P(conjunctive); causal-DAG worlds long ``[B]`` action indices below ``2n``;
      physics puzzles the array their task documents.
    * Class attributes the runner reads: ``name`` (the registry key), ``families`` (optional: the task families
      the agent plays; a plug-in agent without it is offered to every family), ``uses_oracle`` (True: the task is
      handed over as ``agent.oracle``, for experts that know the truth), ``obs_mode`` (an observation mode the
      task should use, e.g. ``"history"``).

    Another distribution adds an agent through an entry point (:mod:`causalplay.core.plugins`)::

        [project.entry-points."causalplay.agents"]
        my-agent = "my_pkg.agents:MyAgent"
    """

    name = "agent"

    def __init__(self, seed: int = 0):
        self.reseed(seed)

    def reseed(self, seed: int) -> None:
        """Seed the agent's generator (the benchmark builds an agent once per worker and reseeds it per shard;
        everything else an episode needs is set up by :meth:`reset`)."""
        self.seed = seed
        self.gen = torch.Generator().manual_seed(int(seed))

    def reset(self, task: TaskInfo, obs: torch.Tensor) -> None:
        """Start a batch of episodes: ``task`` describes them (objects, horizon, rules, observation layout), ``obs``
        is the first observation of every row, ``[B, obs_size]``. Subclasses call this first, then set up their own
        per-episode state."""
        self.task = task
        self.B = obs.shape[0]
        self.t = 0

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        """The next action of every row.

        Parameters
        ----------
        obs : Tensor [B, obs_size]
            The current observation of each row, laid out as ``self.task.obs_layout`` says.
        active : Tensor [B] bool
            Rows whose episode is still running; the task ignores the actions of the others.

        Returns
        -------
        Tensor [B, action_size]
            One action per row (for the Blicket tasks ``[trial (N), belief (N)]`` in [0, 1]). Called once per
            step by the play loop (:func:`causalplay.bench.play.play`) until every row's episode has ended.
        """
        raise NotImplementedError

    # -- helpers -------------------------------------------------------------------------------------------
    def trial_runs(self) -> bool:
        """Whether the trial in the action about to be taken (action ``self.t``) is run by the env."""
        return self.task.n_context <= self.t < self.task.horizon

    def parse(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``on [B, N]`` bool, ``lit [B]`` bool, announced count ``[B]`` long, from the task's observation layout."""
        lay = self.task.obs_layout
        return (lay.get(obs, "on") > 0.5, lay.get(obs, "lit")[:, 0] > 0.5,
                lay.get(obs, "count")[:, 0].round().long())


class MemoryAgent(Agent):
    """Keeps every panel seen: ``self.panels [B, t, N]`` bool, ``self.lits [B, t]`` bool."""

    def reset(self, task: TaskInfo, obs: torch.Tensor) -> None:
        super().reset(task, obs)
        self.panels = torch.zeros(self.B, 0, task.n_objects, dtype=torch.bool)
        self.lits = torch.zeros(self.B, 0, dtype=torch.bool)

    def remember(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        self.t += 1
        on, lit, count = self.parse(obs)
        self.panels = torch.cat([self.panels, on[:, None]], 1)
        self.lits = torch.cat([self.lits, lit[:, None]], 1)
        self.count = count
        return on, lit, count


def map_side_belief(marginals: torch.Tensor, guess: torch.Tensor, eps: float = 1e-3) -> torch.Tensor:
    """Beliefs that round to ``guess`` (so the solve check tests that set) but stay as close as possible to the
    marginals (so the JSD penalty stays small when the guess is wrong)."""
    m = marginals.to(torch.float64)
    return torch.where(guess, m.clamp_min(0.5 + eps), m.clamp_max(0.5 - eps)).clamp(0.0, 1.0)


def task_beliefs(task: TaskInfo, batch_size: int, dtype: torch.dtype = torch.float32) -> BatchBeliefs:
    """The agents' belief tracker: ``batch_size`` exact learners over all ``2^N`` blicket sets x the task's rules
    (uniform over both), rule-major ``h = r * S + code`` -- a set's index is its integer code ``sum_i x_i 2^i``.

    float32 by default: the agents' hot path, and their decisions (argmax of posteriors / EIG) do not need float64.
    Update it with :meth:`~causalplay.core.beliefs.BatchBeliefs.observe_`, mask it with ``condition_count_`` /
    ``exclude_`` (renormalised by the next ``observe_``).
    """
    spec = WorldSpec.from_options(task.n_objects, task.rules, blicket_prior=0.5)
    return BatchBeliefs.prior(HypothesisSpace.build(spec, dtype=dtype), batch_size)
