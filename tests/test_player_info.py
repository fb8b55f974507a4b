"""What a task tells its players (``task.info()``): the family-neutral :class:`PlayerInfo` and each family's own
type, checked against the tasks' published constants (IVRE: 9 objects, 4 context panels then 6 trials, 1-4
blickets, disjunctive; EST: 3-8 blickets; Nexiom: both rules, a 16-test budget; the causal-DAG worlds: 5 variables,
5 exploration steps then one goal step; PHYRE: 100 attempts)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from causalplay.envs import make_batch
from causalplay.envs.causal_dag import DAGConfig, DAGInfo, DAGRewards
from causalplay.envs.core import BlicketInfo, panel_layout
from causalplay.envs.task import PlayerInfo, RewardSpec

from causalplay.agents import Agent, TaskInfo, make_agent
from causalplay.bench.play import play
from causalplay.core.rules import conjunctive, disjunctive


@pytest.mark.parametrize("env_id, counts", [("causalplay/IVRE-v0", (1, 2, 3, 4)),
                                            ("causalplay/EST-v1", (3, 4, 5, 6, 7, 8))])
def test_blicket_tasks_tell_their_instructions(env_id, counts):
    task = make_batch(env_id, 3, seed=0)
    info = task.info()
    assert type(info) is BlicketInfo
    assert (info.n_objects, info.horizon, info.n_context, info.rules, info.n_blickets) == (9, 10, 4, (disjunctive(),),
                                                                                          counts)
    assert info.layout == panel_layout(9, 10) and info.rewards == RewardSpec()


def test_nexiom_tells_both_rules_and_its_budget():
    info = make_batch("causalplay/Nexiom-v0", 2, seed=0, budget=16).info()
    assert type(info) is BlicketInfo
    assert (info.n_objects, info.horizon, info.n_context, info.rules, info.n_blickets) == (
        4, 17, 0, (disjunctive(), conjunctive()), ())
    assert [f.name for f in info.obs_layout.fields] == ["on", "lit", "count", "tests", "tested"]


def test_the_dag_world_tells_its_config_and_nothing_blicket_shaped():
    task = make_batch("causalplay/CausalDAG-v1", 2, seed=0)
    info = task.info()
    assert type(info) is DAGInfo
    assert (info.n_objects, info.horizon) == (5, 6)
    assert info.config == DAGConfig() and info.rewards == DAGRewards(0.0)
    assert [f.name for f in info.obs_layout.fields] == ["prev_values", "prev_intervention", "outcome",
                                                          "next_values", "goal"]
    for name in ("n_context", "rules", "n_blickets"):
        assert not hasattr(info, name) and not hasattr(task, name)


def test_a_physics_puzzle_tells_its_tier_and_has_no_flat_layout():
    pytest.importorskip("pymunk")
    from causalplay.envs.physics import PhysicsBatch
    from causalplay.envs.physics_sim import BALL, BAR, GOAL, OTHER, TARGET, W
    from causalplay.envs.physics_templates import PhysicsTask

    scene = np.array([[BAR, W / 2, 0.25, W, 0.5, 0, 0, OTHER], [BAR, 9.0, 0.6, 1.0, 0.2, 0, 0, TARGET],
                      [BALL, 3.0, 0.9, 0.4, 0, 0, 1, GOAL]])
    task = PhysicsBatch([PhysicsTask("00:000", 0, scene, np.zeros(3))], "B")
    info = task.info()
    assert dataclasses.asdict(info) == {"n_objects": 10, "horizon": 100, "layout": None,
                                        "rewards": {"solve_reward": 1.0, "step_cost": 0.0, "tol": 0.5, "slots": 48,
                                                    "eps": 1e-7}, "tier": "B"}
    with pytest.raises(ValueError, match="not a flat vector"):
        _ = info.obs_layout
    for name in ("n_context", "rules", "layout", "config"):
        assert not hasattr(task, name)


def test_task_info_is_the_blicket_info_with_its_defaults():
    assert TaskInfo is BlicketInfo and issubclass(BlicketInfo, PlayerInfo)
    info = TaskInfo(3, 5, 0, (disjunctive(),))  # the 0.2 positional form
    assert (info.n_objects, info.horizon, info.n_context, info.rules, info.n_blickets) == (3, 5, 0, (disjunctive(),),
                                                                                          ())
    assert info.obs_layout == panel_layout(3, 5) and info.reward_spec == RewardSpec()


def test_from_env_is_deprecated_and_returns_the_tasks_own_info():
    task = make_batch("causalplay/CausalDAG-v1", 2, seed=0)
    with pytest.warns(DeprecationWarning, match=r"task\.info\(\)"):
        info = TaskInfo.from_env(task)
    assert info == task.info()


def test_play_hands_the_agent_the_tasks_info():
    class Spy(Agent):
        def reset(self, task, obs):
            super().reset(task, obs)
            self.told = task

        def act(self, obs, active):
            return torch.zeros(self.B, 18)

    task = make_batch("causalplay/IVRE-v0", 2, seed=1)
    play(task, spy := Spy())
    assert spy.told == make_batch("causalplay/IVRE-v0", 2, seed=1).info()


def test_play_refuses_a_task_without_info():
    class Legacy:  # a 0.2 task: Blicket-shaped fields, no info()
        B, n_objects, n_context, horizon, rules = 1, 2, 0, 2, (disjunctive(),)
        done = torch.zeros(1, dtype=torch.bool)

        def reset(self, rows=None):
            return torch.zeros(1, 4)

    with pytest.raises(TypeError, match=r"Legacy has no info\(\) method"):
        play(Legacy(), make_agent("random"))


def test_the_pixel_batch_tells_the_symbolic_info_without_its_flat_layout():
    from causalplay.envs.pixels import PixelBatch, shared_renderer

    sym = make_batch("causalplay/IVRE-v0", 2, seed=np.random.default_rng(0))
    info = PixelBatch(sym, shared_renderer()).info()
    assert info == dataclasses.replace(sym.info(), layout=None)
    assert info.obs_layout == panel_layout(9, 10)  # what the Blicket agents read when they parse a panel


def test_the_blicket_scorer_reads_the_context_panels_from_the_tasks_info():
    from causalplay.bench.blicket import BlicketFamily

    fam = BlicketFamily()
    fam.check_env("causalplay/IVRE-v0")  # 4 context panels
    with pytest.raises(ValueError, match="Nexiom-v0 has no context/trial structure"):
        fam.check_env("causalplay/Nexiom-v0")  # a Blicket-shaped world without context panels
    with pytest.raises(ValueError, match="CausalDAG-v1 has no context/trial structure"):
        fam.check_env("causalplay/CausalDAG-v1")  # not a Blicket world at all


def test_rl_training_takes_the_blicket_familys_ids_and_refuses_nexiom():
    pytest.importorskip("stable_baselines3")
    from causalplay.rl.train import TrainConfig

    assert TrainConfig(agent="ppo", out="x", env="causalplay/EST-v1").preset == "paper"  # a symbolic Blicket id
    with pytest.raises(ValueError, match="unknown or unsupported environment id 'causalplay/Nexiom-v0'"):
        TrainConfig(agent="ppo", out="x", env="causalplay/Nexiom-v0")


def test_the_blicket_scorer_knows_a_pixel_batch_by_its_type():
    from causalplay.bench.blicket import BlicketFamily

    with pytest.raises(ValueError, match="agent 'eig' cannot play causalplay/IVRE-Pixels-v0: it is a pixel env"):
        BlicketFamily().episodes("causalplay/IVRE-Pixels-v0", "eig", 2, 0)
