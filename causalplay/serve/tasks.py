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

__all__ = ["TASKS", "ServedTask", "NexiomServed", "BlicketServed", "World", "assign_condition", "episode_seed"]

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

    ``ServedTask(name, ...)`` builds the serve adapter the id's task family registers
    (:attr:`causalplay.envs.families.TaskFamily.serve`: :class:`NexiomServed`, :class:`BlicketServed`); the
    adapters supply the family's conditions, how a condition starts an episode, and what a participant is shown.
    ``conditions`` (dicts with the adapter's keys and an optional ``label``) replace the default ones;
    ``max_tests`` (0: the task's own) caps the tests; ``randomise_rule`` picks the IVRE/EST defaults (see the
    module docstring).
    """

    #: condition keys: required, and allowed besides ``label``
    need: frozenset = frozenset()
    keys: frozenset = frozenset()

    def __new__(cls, name: str, *args, **kwargs):
        if cls is ServedTask:  # dispatch to the family's adapter
            from causalplay.core.plugins import load_object
            from causalplay.envs.families import family_of

            env_id = TASKS.get(name, name)
            if env_id not in TASKS.values():
                ids = {v: k for k, v in TASKS.items()}
                raise ValueError(f"task must be one of {sorted(TASKS)} (or their ids {sorted(ids)}), got {name!r}")
            fam = family_of(env_id)
            if fam.serve is None:
                raise ValueError(f"task family {fam.name!r} of {env_id} has no serve adapter")
            cls = load_object(fam.serve)
        return super().__new__(cls)

    def __init__(self, name: str, conditions=(), max_tests: int = 0, randomise_rule: bool = True):
        ids = {v: k for k, v in TASKS.items()}
        name = ids.get(name, name)
        if name not in TASKS:
            raise ValueError(f"task must be one of {sorted(TASKS)} (or their ids {sorted(ids)}), got {name!r}")
        self.name, self.env_id = name, TASKS[name]
        probe = self._make(0, {})
        self.n_objects, self.n_context = probe.n_objects, probe.n_context
        self.rule_names = RULES  # the judgement options people are offered
        own, default = self._defaults(probe, randomise_rule)
        self.conditions = [self._condition(dict(c), probe) for c in (conditions or default)]
        self.labels = [c.pop("label") for c in self.conditions]
        if not (isinstance(max_tests, int) and 0 <= max_tests <= own):
            raise ValueError(f"max_tests must be an integer 1..{own} for {name} (0: all {own}), got {max_tests!r}")
        self.max_tests = max_tests or own

    # -- what an adapter supplies --------------------------------------------------------------------------------
    def _defaults(self, probe, randomise_rule: bool) -> tuple[int, list[dict]]:  # pragma: no cover - abstract
        """``(the task's own number of tests, the default conditions)``."""
        raise NotImplementedError

    def _check(self, c: dict, probe) -> dict:  # pragma: no cover - abstract
        """``c`` (keys checked, rule valid) checked against the task, with its label."""
        raise NotImplementedError

    def _begin(self, task, condition: dict) -> None:  # pragma: no cover - abstract
        """Reset ``task`` (a batch of one) into ``condition``, ready for the participant's first test."""
        raise NotImplementedError

    def _shown(self, task) -> tuple:  # pragma: no cover - abstract
        """``(objects, context)`` of :class:`World`."""
        raise NotImplementedError

    def _lit(self, task, n_past: int) -> bool:  # pragma: no cover - abstract
        """Whether the test just stepped (after ``n_past`` earlier ones) lit the machine."""
        raise NotImplementedError

    # -- shared --------------------------------------------------------------------------------------------------
    def _condition(self, c: dict, probe) -> dict:
        """``c`` checked against the task, with its label."""
        if not self.need <= set(c) <= self.keys:
            raise ValueError(f"a {self.name} condition needs {sorted(self.need)} and may have "
                             f"{sorted(self.keys - self.need)}; got {c}")
        rule = c.get("rule")
        if rule is not None and rule not in RULES:
            raise ValueError(f"condition rule must be one of {list(RULES)}, got {rule!r} in {c}")
        return self._check(c, probe)

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
        self._begin(task, condition)
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
        task = self._start(self.conditions[condition], seed)
        blickets = tuple(int(i) for i in np.flatnonzero(task.blickets[0].numpy()))
        rule = task.rules[int(task.rule_idx[0])].name
        return World(rule, blickets, self.n_objects, len(blickets), self.max_tests, *self._shown(task))

    def outcome(self, condition: int, seed: int, past: list[tuple[int, ...]], trial: tuple[int, ...]) -> bool:
        """Whether the machine lights for ``trial`` after the participant's ``past`` tests (replayed)."""
        if len(past) >= self.max_tests:
            raise ValueError(f"the task allows {self.max_tests} tests; {len(past)} were already run")
        task = self._start(self.conditions[condition], seed)
        for t in (*past, trial):
            task.step(self._action(task, t), check=False)
        return self._lit(task, len(past))


class NexiomServed(ServedTask):
    """Nexiom: a condition fixes the rule and the blickets (``NexiomBatch.reset(rule_idx=, blickets=)``); free
    tests up to the budget, no context panels."""

    need = frozenset({"rule", "blickets"})
    keys = frozenset({"label", "rule", "blickets"})

    def _defaults(self, probe, randomise_rule):
        return probe.budget, [{"rule": r.name, "blickets": list(b)} for r in probe.rules
                              for b in itertools.combinations(range(self.n_objects), probe.count)]

    def _check(self, c, probe):
        b, rule = c["blickets"], c["rule"]
        if not (isinstance(b, list) and b and len(set(b)) == len(b)
                and all(type(i) is int and 0 <= i < self.n_objects for i in b)):
            raise ValueError(f"condition blickets must be distinct object indices 0..{self.n_objects - 1}, "
                             f"got {b!r}")
        c.setdefault("label", f"{rule}, blickets {' '.join(map(str, sorted(b)))}")
        return c

    def _begin(self, task, condition):
        b = np.zeros((1, self.n_objects), dtype=bool)
        b[0, condition["blickets"]] = True
        task.reset(rule_idx=[[r.name for r in task.rules].index(condition["rule"])], blickets=b)

    def _shown(self, task):
        return None, ()

    def _lit(self, task, n_past):
        return bool(task.lit_now[0])


class BlicketServed(ServedTask):
    """IVRE / EST: a condition is the number of blickets and optionally the rule; the world (which objects, their
    looks, the context panels) comes from the episode seed, and the context panels are shown first."""

    need = frozenset({"n_blickets"})
    keys = frozenset({"label", "rule", "n_blickets"})

    def _defaults(self, probe, randomise_rule):
        ks = [int(k) for k in probe.config.n_blickets]
        return probe.horizon - probe.n_context, ([{"n_blickets": k, "rule": r} for r in RULES for k in ks if k >= 2]
                                                 if randomise_rule else [{"n_blickets": k} for k in ks])

    def _check(self, c, probe):
        k, ks, rule = c["n_blickets"], [int(x) for x in probe.config.n_blickets], c.get("rule")
        if type(k) is not int or k not in ks:
            raise ValueError(f"condition n_blickets must be one of {ks} for {self.name}, got {k!r}")
        if rule == "conjunctive" and k < 2:
            raise ValueError(f"a conjunctive machine with {k} blicket never lights; use n_blickets >= 2 in {c}")
        c.setdefault("label", f"{k} blicket{'s' * (k != 1)}" + (f", {rule}" if rule else ""))
        return c

    def _begin(self, task, condition):
        task.reset()
        # actions 1..C-1 only move through the context panels; their trials are ignored by the task
        for _ in range(self.n_context - 1):
            task.step(self._action(task, ()), check=False)

    def _shown(self, task):
        from causalplay.envs.sampling import OBJECT_POOL

        context = tuple((tuple(int(i) for i in np.flatnonzero(task.panels[0, k].numpy())), bool(task.lit[0, k]))
                        for k in range(self.n_context))
        return tuple(OBJECT_POOL[int(j)] for j in task.objects[0]), context

    def _lit(self, task, n_past):
        return bool(task.lit[0, self.n_context + n_past])
