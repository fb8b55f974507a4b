"""The tasks people play in ``causalplay serve``: the package's own batched Tasks, one row per participant.

The server never keeps a Task in memory between requests: for every test it rebuilds the participant's row
from the stored episode seed and condition (``causalplay.envs.make_batch(env_id, 1, seed=episode_seed)``),
replays the stored tests and steps the new one. The machine, rules, noise and seeds are therefore exactly the
ones agents face in the gymnasium envs and the benchmark, and a restarted server continues every session
where it stopped.

Conditions (counterbalanced by :func:`assign_condition`):

* ``nexiom`` (``causalplay/Nexiom-v0``): 2 rules x 6 blicket pairs of the 4 objects = 12 conditions, each fixed
  with ``NexiomBatch.reset(rule_idx=, blickets=)``; up to 16 tests, no context panels.
* ``ivre`` (``causalplay/IVRE-v0``) / ``est`` (``causalplay/EST-v1``): the number of blickets (1-4 / 3-8, the
  task's own range) is the condition (``make_batch(..., n_blickets=(k,))``); which objects are blickets, the
  objects' looks and the 4 context panels come from the episode seed. The context panels are shown before
  the first test; the participant then runs the task's ``horizon - n_context`` tests (6).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["TASKS", "ServedTask", "World", "assign_condition", "episode_seed", "get_task"]

#: Short names accepted by ``causalplay serve --task`` and the environment ids they serve.
TASKS = {"nexiom": "causalplay/Nexiom-v0", "ivre": "causalplay/IVRE-v0", "est": "causalplay/EST-v1"}


@dataclass(frozen=True)
class World:
    """One participant's episode as the server holds it. ``rule`` and ``blickets`` are the hidden truth."""

    rule: str
    blickets: tuple[int, ...]
    n_objects: int
    n_blickets: int
    max_tests: int
    objects: tuple[tuple[str, str, str], ...] | None  # (shape, material, colour) per object, IVRE/EST only
    context: tuple[tuple[tuple[int, ...], bool], ...]  # (objects on, lit) per context panel


def assign_condition(design_seed: int, slot: int, n_conditions: int) -> int:
    """Counterbalanced condition of the ``slot``-th participant (0-based): permuted blocks.

    Slots ``k * n_conditions .. (k + 1) * n_conditions - 1`` receive every condition exactly once, in an order
    drawn from ``numpy.random.default_rng([design_seed, k])`` -- so after any number of participants the
    counts of two conditions differ by at most one, and the order is reproducible from the seed.
    """
    if slot < 0 or n_conditions < 1:
        raise ValueError(f"need slot >= 0 and n_conditions >= 1, got {slot} and {n_conditions}")
    block, pos = divmod(slot, n_conditions)
    return int(_block(design_seed, block, n_conditions)[pos])


@lru_cache(maxsize=256)
def _block(design_seed: int, block: int, n: int) -> tuple[int, ...]:
    return tuple(np.random.default_rng([design_seed, block]).permutation(n).tolist())


def episode_seed(design_seed: int, slot: int) -> int:
    """The episode seed of the ``slot``-th participant (fits a signed 32-bit database integer)."""
    return int(np.random.SeedSequence([design_seed, slot, 1]).generate_state(1)[0] >> 1)


class ServedTask:
    """A task served to people. ``name`` is a key of :data:`TASKS` or one of its environment ids."""

    def __init__(self, name: str):
        ids = {v: k for k, v in TASKS.items()}
        if name in ids:
            name = ids[name]
        if name not in TASKS:
            raise ValueError(f"task must be one of {sorted(TASKS)} (or their ids {sorted(ids)}), got {name!r}")
        self.name, self.env_id = name, TASKS[name]
        probe = self._make(0, None)
        self.n_objects = probe.n_objects
        self.n_context = probe.n_context
        if name == "nexiom":
            pairs = list(itertools.combinations(range(self.n_objects), probe.count))
            self.conditions: list[dict] = [{"rule_idx": r, "blickets": list(b)} for r in (0, 1) for b in pairs]
            self.rule_names = tuple(r.name for r in probe.rules)
            self.max_tests = probe.budget
        else:
            self.conditions = [{"n_blickets": int(k)} for k in probe.config.n_blickets]
            self.rule_names = ("disjunctive", "conjunctive")  # the judgement options people are offered
            self.max_tests = probe.horizon - probe.n_context

    def _make(self, seed: int, condition: dict | None):
        from causalplay.envs import make_batch

        kw = {} if condition is None or "n_blickets" not in condition else {"n_blickets": (condition["n_blickets"],)}
        return make_batch(self.env_id, 1, seed=seed, **kw)

    def _start(self, condition: dict, seed: int):
        task = self._make(seed, condition)
        if self.name == "nexiom":
            b = np.zeros((1, self.n_objects), dtype=bool)
            b[0, condition["blickets"]] = True
            task.reset(rule_idx=[condition["rule_idx"]], blickets=b)
        else:
            task.reset()
            # actions 1..C-1 only move through the context panels; their trials are ignored by the task
            for _ in range(self.n_context - 1):
                task.step(self._action(()), check=False)
        return task

    def _action(self, trial):
        import torch

        N = self.n_objects
        a = torch.zeros((1, 2 * N + (2 if self.name == "nexiom" else 0)), dtype=torch.float64)
        a[0, list(trial)] = 1.0
        # belief 0.5 everywhere: never "solved" (tol 0.5 is strict), so the episode runs until the person stops
        a[0, N:2 * N] = 0.5
        return a

    def world(self, condition: int, seed: int) -> World:
        """The episode of a participant in ``condition`` (an index of :attr:`conditions`) with ``seed``."""
        return self._world(int(condition), int(seed))

    @lru_cache(maxsize=4096)  # noqa: B019  (one ServedTask per name lives for the process; worlds are tiny)
    def _world(self, condition: int, seed: int) -> World:
        cond = self.conditions[condition]
        task = self._start(cond, seed)
        blickets = tuple(int(i) for i in np.flatnonzero(task.blickets[0].numpy()))
        rule = task.rules[int(task.rule_idx[0])].name
        if self.name == "nexiom":
            return World(rule, blickets, self.n_objects, len(blickets), self.max_tests, None, ())
        from causalplay.envs.sampling import OBJECT_POOL

        C = self.n_context
        context = tuple((tuple(int(i) for i in np.flatnonzero(task.panels[0, k].numpy())), bool(task.lit[0, k]))
                        for k in range(C))
        objects = tuple(OBJECT_POOL[int(j)] for j in task.objects[0])
        return World(rule, blickets, self.n_objects, len(blickets), self.max_tests, objects, context)

    def outcome(self, condition: int, seed: int, past: list[tuple[int, ...]], trial: tuple[int, ...]) -> bool:
        """Whether the machine lights for ``trial`` after the participant's ``past`` tests (replayed)."""
        if len(past) >= self.max_tests:
            raise ValueError(f"the task allows {self.max_tests} tests; {len(past)} were already run")
        task = self._start(self.conditions[condition], seed)
        for t in (*past, trial):
            task.step(self._action(t), check=False)
        if self.name == "nexiom":
            return bool(task.lit_now[0])
        return bool(task.lit[0, self.n_context + len(past)])


@lru_cache(maxsize=8)
def get_task(name: str) -> ServedTask:
    """A shared :class:`ServedTask` per name (building one probes the environment once)."""
    return ServedTask(name)
