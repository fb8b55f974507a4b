"""The agent protocol: batched agents that map a task's observations to its actions.

An agent plays ``B`` episodes of a batched task (a :class:`causalplay.envs.task.Task`) in lock-step::

    agent.reset(task.info(), obs)     # what the task tells every player; obs: the first observation of every row
    for t in 1..T:
        action = agent.act(obs, active)   # one action per row in the task's layout; rows of ended episodes ignored
        obs, reward, terminated, truncated = task.step(action)

``task.info()`` is a :class:`~causalplay.envs.task.PlayerInfo` (the action's size, the horizon, the observation
layout, the reward constants), or the family's subclass of it with the family's own fields:
:class:`~causalplay.envs.core.BlicketInfo` (``n_context``, ``rules``, ``n_blickets``),
:class:`~causalplay.envs.causal_dag.DAGInfo` (``config``), :class:`~causalplay.envs.physics.PhysicsInfo` (``tier``).
Every agent's docstring says what it **knows**: for the Blicket agents, the rule family of the task (``rules``,
told to every player as the task's instructions), the announced blicket count (in the observation), and whether it
uses the fact that a step which did not end the episode means its previous guess was wrong.
"""

from __future__ import annotations

import torch

from causalplay.core.beliefs import BatchBeliefs
from causalplay.core.spec import HypothesisSpace, WorldSpec
from causalplay.envs.core import BlicketInfo
from causalplay.envs.task import PlayerInfo

__all__ = ["Agent", "PlayerInfo", "BlicketInfo", "TaskInfo", "MemoryAgent", "map_side_belief", "task_beliefs"]

#: The Blicket tasks' info under its earlier name (what the Blicket agents' ``reset`` gets): an alias of
#: :class:`~causalplay.envs.core.BlicketInfo`, so ``TaskInfo(n_objects, horizon, n_context, rules)`` still builds
#: one. Another family's task tells its own type (:meth:`causalplay.envs.task.Task.info`).
TaskInfo = BlicketInfo


class Agent:
    """The agent protocol. Subclasses set :attr:`name` and implement :meth:`act` (and :meth:`reset` when they keep
    per-episode state; call ``super().reset`` first).

    An agent plays ``B`` episodes of one batched task at once; :func:`causalplay.bench.play.play` is the loop::

        agent.reset(task.info(), obs)      # once per batch, before the first act
        while not task.done.all():
            obs, reward, terminated, truncated = task.step(agent.act(obs, ~task.done))

    * ``__init__(seed=0, **options)``: ``options`` are the spec's ``key=value`` pairs (``planner:depth=2`` gives
      ``depth=2``); ``causalplay bench`` checks them against this signature before any work starts. The benchmark
      builds an agent once per worker and calls :meth:`reseed` per shard.
    * :meth:`reset` gets what the task's instructions tell every player (``task.info()``, never the episodes'
      ground truth): a :class:`~causalplay.envs.task.PlayerInfo` with ``n_objects``, ``horizon``, ``layout`` (the
      flat observation's fields; ``None`` for a dict observation) and ``rewards``, or the family's subclass of it
      (Blicket tasks: :class:`~causalplay.envs.core.BlicketInfo`, adding ``n_context``, ``rules`` and
      ``n_blickets``; causal-DAG worlds: :class:`~causalplay.envs.causal_dag.DAGInfo`, adding ``config``; physics:
      :class:`~causalplay.envs.physics.PhysicsInfo`, adding ``tier``), and the first observation of every row.
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

    def reset(self, task: PlayerInfo, obs: torch.Tensor) -> None:
        """Start a batch of episodes: ``task`` is what the task tells every player (``task.info()``: objects,
        horizon, observation layout, reward constants, and the family's own fields), ``obs`` the first observation
        of every row (``[B, obs_size]``, or the dict the task documents). Subclasses call this first, then set up
        their own per-episode state."""
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

    # -- helpers for the Blicket tasks (``self.task`` a BlicketInfo) ---------------------------------------------
    def trial_runs(self) -> bool:
        """Whether the trial in the action about to be taken (action ``self.t``) is run by the env (Blicket tasks:
        after the context panels)."""
        return self.task.n_context <= self.t < self.task.horizon

    def parse(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``on [B, N]`` bool, ``lit [B]`` bool, announced count ``[B]`` long, from the task's observation layout."""
        lay = self.task.obs_layout
        return (lay.get(obs, "on") > 0.5, lay.get(obs, "lit")[:, 0] > 0.5,
                lay.get(obs, "count")[:, 0].round().long())


class MemoryAgent(Agent):
    """Keeps every panel of a Blicket task seen: ``self.panels [B, t, N]`` bool, ``self.lits [B, t]`` bool."""

    def reset(self, task: BlicketInfo, obs: torch.Tensor) -> None:
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


def task_beliefs(task: BlicketInfo, batch_size: int, dtype: torch.dtype = torch.float32) -> BatchBeliefs:
    """The agents' belief tracker: ``batch_size`` exact learners over all ``2^N`` blicket sets x the task's rules
    (uniform over both), rule-major ``h = r * S + code`` -- a set's index is its integer code ``sum_i x_i 2^i``.

    float32 by default: the agents' hot path, and their decisions (argmax of posteriors / EIG) do not need float64.
    Update it with :meth:`~causalplay.core.beliefs.BatchBeliefs.observe_`, mask it with ``condition_count_`` /
    ``exclude_`` (renormalised by the next ``observe_``).
    """
    spec = WorldSpec.from_options(task.n_objects, task.rules, blicket_prior=0.5)
    return BatchBeliefs.prior(HypothesisSpace.build(spec, dtype=dtype), batch_size)
