"""The tasks people play in ``causalplay serve``: the package's own batched Tasks, one row per participant.

The server never keeps a Task in memory between requests: for every test it rebuilds the participant's row
from the stored episode seed and condition (``causalplay.envs.make_batch(env_id, 1, seed=episode_seed, ...)``),
replays the stored tests and steps the new one. The machine, rules, noise and seeds are therefore exactly the
ones agents face in the gymnasium envs and the benchmark, and a restarted server continues every session
where it stopped.

Conditions (counterbalanced by :func:`assign_condition`; a study file may list its own, ``docs/serve.md``):

* ``nexiom`` (``causalplay/Nexiom-v0``): 2 rules x 6 blicket pairs of the 4 objects = 12 conditions, each fixed
  with ``NexiomBatch.reset(rule_idx=, blickets=)``; up to 16 tests, no context panels.
* ``ivre`` (``causalplay/IVRE-v0``) / ``est`` (``causalplay/EST-v1``): the number of blickets and the rule
  (``make_batch(..., n_blickets=(k,), rule=...)``): 2-4 / 3-8 blickets x {disjunctive, conjunctive} = 6 / 12
  conditions (a conjunctive machine needs 2 blickets, so IVRE's 1-blicket world is left out to keep the rules
  balanced); with ``randomise_rule=False`` the task's own rule (disjunctive) and its whole range 1-4 / 3-8.
  Which objects are blickets, the objects' looks and the 4 context panels come from the episode seed. The
  context panels are shown before the first test; the participant then runs up to the task's
  ``horizon - n_context`` tests (6).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["TASKS", "ServedTask", "World", "assign_condition", "episode_seed"]

#: Short names accepted by ``causalplay serve --task`` and the environment ids they serve.
TASKS = {"nexiom": "causalplay/Nexiom-v0", "ivre": "causalplay/IVRE-v0", "est": "causalplay/EST-v1"}
RULES = ("disjunctive", "conjunctive")


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


def assign_condition(design_seed: int, counts) -> int:
    """The condition for the next participant, given how many sessions hold each condition (``counts[c]``).

    ``counts`` are the sessions that completed or are still active (abandoned ones free their condition).
    The next participant gets a condition with the fewest; ties are broken by the order of the permuted block
    ``numpy.random.default_rng([design_seed, m]).permutation(C)`` where ``m`` is that fewest count. Without
    abandoned sessions this is exactly permuted-block randomisation: the ``k``-th participant gets position
    ``k % C`` of block ``k // C``, so every block of ``C`` consecutive participants covers every condition once.
    """
    counts = [int(c) for c in counts]
    if not counts or min(counts) < 0:
        raise ValueError(f"counts must be a non-empty list of counts >= 0, got {counts}")
    m = min(counts)
    return next(c for c in _block(design_seed, m, len(counts)) if counts[c] == m)


@lru_cache(maxsize=256)
def _block(design_seed: int, block: int, n: int) -> tuple[int, ...]:
    return tuple(np.random.default_rng([design_seed, block]).permutation(n).tolist())


def episode_seed(design_seed: int, slot: int) -> int:
    """The episode seed of the ``slot``-th participant (fits a signed 32-bit database integer)."""
    return int(np.random.SeedSequence([design_seed, slot, 1]).generate_state(1)[0] >> 1)


class ServedTask:
    """A task served to people. ``name`` is a key of :data:`TASKS` or one of its environment ids.

    ``conditions`` (dicts with ``rule`` and ``blickets`` for Nexiom, ``n_blickets`` and optionally ``rule`` for
    IVRE/EST, and an optional ``label``) replace the default ones; ``max_tests`` (0: the task's own) caps the
    tests; ``randomise_rule`` picks the IVRE/EST defaults (see the module docstring).
    """

    def __init__(self, name: str, conditions=(), max_tests: int = 0, randomise_rule: bool = True):
        ids = {v: k for k, v in TASKS.items()}
        name = ids.get(name, name)
        if name not in TASKS:
            raise ValueError(f"task must be one of {sorted(TASKS)} (or their ids {sorted(ids)}), got {name!r}")
        self.name, self.env_id = name, TASKS[name]
        probe = self._make(0, {})
        self.n_objects, self.n_context = probe.n_objects, probe.n_context
        self.rule_names = RULES  # the judgement options people are offered
        if name == "nexiom":
            own = probe.budget
            default = [{"rule": r.name, "blickets": list(b)} for r in probe.rules
                       for b in itertools.combinations(range(self.n_objects), probe.count)]
        else:
            own, ks = probe.horizon - probe.n_context, [int(k) for k in probe.config.n_blickets]
            default = ([{"n_blickets": k, "rule": r} for r in RULES for k in ks if k >= 2] if randomise_rule
                       else [{"n_blickets": k} for k in ks])
        self.conditions = [self._condition(dict(c), probe) for c in (conditions or default)]
        self.labels = [c.pop("label") for c in self.conditions]
        if not (isinstance(max_tests, int) and 0 <= max_tests <= own):
            raise ValueError(f"max_tests must be an integer 1..{own} for {name} (0: all {own}), got {max_tests!r}")
        self.max_tests = max_tests or own

    def _condition(self, c: dict, probe) -> dict:
        """``c`` checked against the task, with its label."""
        keys = {"label", "rule", "blickets"} if self.name == "nexiom" else {"label", "rule", "n_blickets"}
        need = {"rule", "blickets"} if self.name == "nexiom" else {"n_blickets"}
        if not need <= set(c) <= keys:
            raise ValueError(f"a {self.name} condition needs {sorted(need)} and may have {sorted(keys - need)}; "
                             f"got {c}")
        rule = c.get("rule")
        if rule is not None and rule not in RULES:
            raise ValueError(f"condition rule must be one of {list(RULES)}, got {rule!r} in {c}")
        if self.name == "nexiom":
            b = c["blickets"]
            if not (isinstance(b, list) and b and len(set(b)) == len(b)
                    and all(type(i) is int and 0 <= i < self.n_objects for i in b)):
                raise ValueError(f"condition blickets must be distinct object indices 0..{self.n_objects - 1}, "
                                 f"got {b!r}")
            c.setdefault("label", f"{rule}, blickets {' '.join(map(str, sorted(b)))}")
            return c
        k, ks = c["n_blickets"], [int(x) for x in probe.config.n_blickets]
        if type(k) is not int or k not in ks:
            raise ValueError(f"condition n_blickets must be one of {ks} for {self.name}, got {k!r}")
        if rule == "conjunctive" and k < 2:
            raise ValueError(f"a conjunctive machine with {k} blicket never lights; use n_blickets >= 2 in {c}")
        c.setdefault("label", f"{k} blicket{'s' * (k != 1)}" + (f", {rule}" if rule else ""))
        return c

    def _make(self, seed: int, condition: dict):
        from causalplay.envs import make_batch

        kw = {}
        if "n_blickets" in condition:
            kw["n_blickets"] = (condition["n_blickets"],)
            if condition.get("rule"):
                kw["rule"] = condition["rule"]  # the env's own machinery draws the world under this rule
        return make_batch(self.env_id, 1, seed=seed, **kw)

    def _start(self, condition: dict, seed: int):
        task = self._make(seed, condition)
        if self.name == "nexiom":
            b = np.zeros((1, self.n_objects), dtype=bool)
            b[0, condition["blickets"]] = True
            task.reset(rule_idx=[[r.name for r in task.rules].index(condition["rule"])], blickets=b)
        else:
            task.reset()
            # actions 1..C-1 only move through the context panels; their trials are ignored by the task
            for _ in range(self.n_context - 1):
                task.step(self._action(task, ()), check=False)
        return task

    def _action(self, task, trial):
        import torch

        N = self.n_objects
        a = torch.zeros((1, task.action_size), dtype=torch.float64)
        a[0, list(trial)] = 1.0
        # belief 0.5 everywhere: never "solved" (tol 0.5 is strict), so the episode runs until the person stops
        a[0, N:2 * N] = 0.5
        return a

    def world(self, condition: int, seed: int) -> World:
        """The episode of a participant in ``condition`` (an index of :attr:`conditions`) with ``seed``."""
        return self._world(int(condition), int(seed))

    @lru_cache(maxsize=4096)  # noqa: B019  (one ServedTask per app lives for the process; worlds are tiny)
    def _world(self, condition: int, seed: int) -> World:
        cond = self.conditions[condition]
        task = self._start(cond, seed)
        blickets = tuple(int(i) for i in np.flatnonzero(task.blickets[0].numpy()))
        rule = task.rules[int(task.rule_idx[0])].name
        if self.name == "nexiom":
            return World(rule, blickets, self.n_objects, len(blickets), self.max_tests, None, ())
        from causalplay.envs.sampling import OBJECT_POOL

        context = tuple((tuple(int(i) for i in np.flatnonzero(task.panels[0, k].numpy())), bool(task.lit[0, k]))
                        for k in range(self.n_context))
        objects = tuple(OBJECT_POOL[int(j)] for j in task.objects[0])
        return World(rule, blickets, self.n_objects, len(blickets), self.max_tests, objects, context)

    def outcome(self, condition: int, seed: int, past: list[tuple[int, ...]], trial: tuple[int, ...]) -> bool:
        """Whether the machine lights for ``trial`` after the participant's ``past`` tests (replayed)."""
        if len(past) >= self.max_tests:
            raise ValueError(f"the task allows {self.max_tests} tests; {len(past)} were already run")
        task = self._start(self.conditions[condition], seed)
        for t in (*past, trial):
            task.step(self._action(task, t), check=False)
        if self.name == "nexiom":
            return bool(task.lit_now[0])
        return bool(task.lit[0, self.n_context + len(past)])
