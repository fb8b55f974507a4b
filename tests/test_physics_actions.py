"""MEM and DQN on a ranked action set of any size (PHYRE ranks 10,000; the default is 500) and on any training
pool (6 tasks per template by default; PHYRE's MEM: every training task): the outcomes table against a brute-force
enumeration by direct simulation, MEM's success rates and ranking against hand counts, DQN trained on and ranking
the larger set, and bad sizes and pools refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from causalplay.envs.physics import PhysicsBatch
from causalplay.envs.physics_sim import invalid, simulate
from causalplay.envs.physics_templates import action_set, get_task, task_keys, to_balls
from physics_tasks import task_cache

from causalplay.agents import make_agent
from causalplay.agents.physics import POOL, MemAgent, outcomes
from causalplay.agents.physics_dqn import DqnAgent
from causalplay.bench.physics import fold_tasks

TIER, N = "B-v2", 40
UNIVERSE = {"templates": [0, 2, 10], "n_tasks": 8}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return task_cache(tmp_path_factory, TIER, UNIVERSE, "physics_actions")


def brute_force(keys, cache, n, pool=POOL):
    """Outcome of each of the tier's first ``n`` fixed actions on each training-pool task among ``keys`` (task
    index below ``pool``; None: all), one simulation per (task, action) with the validity test inside ``simulate``:
    1 solved, 0 not, -1 invalid."""
    pool = sorted(k for k in keys if pool is None or int(k.split(":")[1]) < pool)
    acts, table = action_set(TIER, n), []
    for k in pool:
        scene = get_task(TIER, k, cache).scene
        rows = [simulate(scene, to_balls(a[None])[0]) for a in acts]
        table.append([-1 if not r.valid else int(r.solved) for r in rows])
    return pool, np.array(table)


def test_outcomes_on_a_larger_set_match_direct_simulation_and_nest(cache):
    """The cached table on N actions equals one direct simulation per entry, and its first 20 columns equal the
    table on 20 actions (the fixed sets are nested: PHYRE's 10,000 start with the default 500)."""
    keys = task_keys(UNIVERSE["templates"], UNIVERSE["n_tasks"])
    pool, o = outcomes(TIER, keys, cache, n_actions=N)
    want_keys, want = brute_force(keys, cache, N)
    assert [t.key for t in pool] == want_keys and o.shape == (len(want_keys), N)
    np.testing.assert_array_equal(o, want)
    assert (want == 1).any() and (want == 0).any() and (want == -1).any()  # the check sees all three outcomes
    np.testing.assert_array_equal(outcomes(TIER, keys, cache, n_actions=20)[1], o[:, :20])
    np.testing.assert_array_equal(action_set(TIER, N)[:20], action_set(TIER, 20))


@pytest.mark.parametrize("pool", [POOL, None])
def test_mem_ranks_n_actions_by_hand_counted_success(cache, pool):
    """Within-template MEM with n_actions=N: per template, the fraction of its training-pool tasks (the first 6,
    or all) each action solved, counted by hand from the brute-force table; a test task's ranking is that
    fraction, best first, ties in action-set order."""
    train, test = fold_tasks(TIER, 0, "within", **UNIVERSE)
    ag = MemAgent(seed=0, n_actions=N, pool=pool)
    ag.train(TIER, train, "within", cache)
    pool, table = brute_force(train, cache, N, pool)
    assert len(pool) == len(train) if ag.pool is None else max(int(k[3:]) for k in pool) < POOL
    tmpl = np.array([int(k.split(":")[0]) for k in pool])
    np.testing.assert_array_equal(ag.actions, action_set(TIER, N))
    for t in UNIVERSE["templates"]:
        rate = (table[tmpl == t] == 1).sum(0) / (tmpl == t).sum()
        np.testing.assert_allclose(ag.succ[t] / ag.tot[t], rate, rtol=0, atol=0)
    batch = PhysicsBatch([get_task(TIER, k, cache) for k in test[:2]], TIER)
    ag.reset(batch.info(), batch.reset())
    for b, key in enumerate(test[:2]):
        rate = (table[tmpl == int(key.split(":")[0])] == 1).sum(0) / (tmpl == int(key.split(":")[0])).sum()
        np.testing.assert_array_equal(ag.rank[b], np.argsort(-rate, kind="stable"))


def test_dqn_trains_on_and_ranks_its_own_action_set(cache):
    """DQN with n_actions=N trains on the pool's N-action outcomes (its positives counted by hand), in a network
    folder of its own (the 500-action networks keep theirs), and ranks all N actions of each test task."""
    train, test = fold_tasks(TIER, 0, "within", **UNIVERSE)
    ag = DqnAgent(seed=0, steps=3, n_actions=N)
    ag.train(TIER, train, "within", cache)
    folder = [p for p in (Path(cache) / "dqn").iterdir() if p.name.endswith(f"-s0-a{N}-n3")]
    assert len(folder) == 1
    cfg = json.loads((folder[0] / "config.json").read_text())
    assert cfg["n_actions"] == N and cfg["positives"] == int((brute_force(train, cache, N)[1] == 1).sum())
    batch = PhysicsBatch([get_task(TIER, k, cache) for k in test[:2]], TIER)
    ag.reset(batch.info(), batch.reset())
    assert all(sorted(r.tolist()) == list(range(N)) for r in ag.rank)
    DqnAgent(seed=0, steps=3).train(TIER, train, "within", cache)
    assert sum(p.name.endswith("-s0-n3") for p in (Path(cache) / "dqn").iterdir()) == 1
    # another training length is another network (it once read the cached one of the same fold)
    DqnAgent(seed=0, steps=4, n_actions=N).train(TIER, train, "within", cache)
    longer = [p for p in (Path(cache) / "dqn").iterdir() if p.name.endswith(f"-s0-a{N}-n4")]
    assert len(longer) == 1 and json.loads((longer[0] / "config.json").read_text())["steps"] == 4


@pytest.mark.parametrize("bad", [0, -5, 2.5, True, "10000"])
def test_bad_action_set_sizes_and_pools_are_refused_by_name(bad):
    for cls in (MemAgent, DqnAgent):
        with pytest.raises(ValueError, match=f"n_actions must be an integer >= 1.*got {bad!r}"):
            cls(n_actions=bad)
        with pytest.raises(ValueError, match=f"pool must be an integer >= 1 .*or None .*got {bad!r}"):
            cls(pool=bad)
    with pytest.raises(ValueError, match="n_actions must be an integer >= 1"):
        make_agent("mem-o:n_actions=0", family="physics")
    with pytest.raises(ValueError, match="outcomes's pool must be"):
        outcomes(TIER, ["00:000"], "unused", pool=bad)


def test_dqn_on_every_training_task_has_its_own_network(cache):
    """pool=None trains on every training task's outcomes (counted by the brute-force table) in a folder of its
    own; the spec string's None reaches the agent."""
    train, _ = fold_tasks(TIER, 0, "within", **UNIVERSE)
    ag = make_agent(f"dqn:steps=2:n_actions={N}:pool=None", seed=1, family="physics")
    assert ag.pool is None
    ag.train(TIER, train, "within", cache)
    folder = [p for p in (Path(cache) / "dqn").iterdir() if p.name.endswith(f"-s1-a{N}-pall-n2")]
    cfg = json.loads((folder[0] / "config.json").read_text())
    _, table = brute_force(train, cache, N, None)
    assert cfg["pool"] is None and cfg["tasks"] == len(train) > 3 * POOL
    assert cfg["positives"] == int((table == 1).sum())


def test_brute_force_treats_a_rejected_action_as_invalid(cache):
    """The enumerator's -1 is simulate's own rejection, which is the batched validity test's."""
    scene, balls = get_task(TIER, "00:000", cache).scene, to_balls(action_set(TIER, N))
    direct = np.array([not simulate(scene, b).valid for b in balls])
    np.testing.assert_array_equal(direct, invalid(scene, balls))


@pytest.mark.parametrize("replay, arch", [(0, "cnn"), (8, "cnn"), (8, "resnet")])
def test_dqn_o_online_step_is_the_test_loss_plus_the_replayed_training_loss(cache, replay, arch):
    """One online update of DQN-O, rebuilt by hand on a copy of the network: cross-entropy of the task's attempts
    (image trunk fixed), plus with replay > 0 that of ``replay`` training examples, half solving and half failing,
    drawn from the agent's replay stream; one Adam step at lr_online gives the same weights. The copy stays in eval
    mode, so for the ResNet the batch norms' running statistics must also be left as trained."""
    import copy

    import torch
    from torch import nn

    from causalplay.agents.physics_dqn import DqnOAgent, images

    train, test = fold_tasks(TIER, 0, "within", **UNIVERSE)
    ag = DqnOAgent(seed=0, steps=2, n_actions=N, updates=1, replay=replay, arch=arch,
                   **({"width": 4} if arch == "resnet" else {}))
    ag.train(TIER, train, "within", cache)
    batch = PhysicsBatch([get_task(TIER, test[0], cache)], TIER)
    ag.reset(batch.info(), batch.reset())
    ag.done_idx = [[(3, False), (7, True), (11, False)]]
    net = copy.deepcopy(ag.net)
    opt = torch.optim.Adam(net.parameters(), lr=ag.lr_online)
    with torch.no_grad():
        feat = net.trunk(images(ag.scenes))
    loss = nn.functional.binary_cross_entropy_with_logits(
        net.head(feat.expand(3, -1, -1, -1), ag.acts_t[[3, 7, 11]]), torch.tensor([0.0, 1.0, 0.0]))
    if replay:
        pos, neg = np.argwhere(ag.train_o == 1), np.argwhere(ag.train_o == 0)
        gen = copy.deepcopy(ag.replay_rng)
        half = replay // 2
        pick = np.concatenate([pos[gen.integers(0, len(pos), half)], neg[gen.integers(0, len(neg), half)]])
        assert (ag.train_o[pick[:, 0], pick[:, 1]] == 1).sum() == replay // 2
        y = torch.tensor((ag.train_o[pick[:, 0], pick[:, 1]] == 1).astype(np.float32))
        loss = loss + nn.functional.binary_cross_entropy_with_logits(net.head(ag.train_feat[pick[:, 0]],
                                                                              ag.acts_t[pick[:, 1]]), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    before = {k: v.clone() for k, v in ag.net.state_dict().items()}
    ag.finish()
    after, want = ag.net.state_dict(), net.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in after)  # the step moved the network
    for k in want:
        torch.testing.assert_close(after[k], want[k], rtol=0, atol=1e-7)


@pytest.mark.parametrize("bad", [-2, 3, 2.5, True])
def test_bad_replay_sizes_are_refused_by_name(bad):
    from causalplay.agents.physics_dqn import DqnOAgent

    with pytest.raises(ValueError, match=f"replay must be an even integer >= 0.*got {bad!r}"):
        DqnOAgent(replay=bad)
    with pytest.raises(ValueError, match="replay=64 mixes training examples into online updates, which dqn does not"):
        make_agent("dqn:replay=64", family="physics")


def test_dqn_with_the_resnet_trains_it_in_a_folder_of_its_own(cache):
    """``dqn:arch=resnet`` trains :class:`ResNetFilm` (its state dict has ResNet-18's layout: the stem, three
    stages and the last one, batch norms included) for ``steps`` batches on the same positives as the CNN, in a
    folder named by arch, width and steps, and ranks all N actions; a second agent reads the saved network."""
    import torch

    from causalplay.agents.physics_resnet import ResNetFilm

    train, test = fold_tasks(TIER, 0, "within", **UNIVERSE)
    ag = make_agent(f"dqn:arch=resnet:width=4:steps=2:n_actions={N}", seed=0, family="physics")
    ag.train(TIER, train, "within", cache)
    assert isinstance(ag.net, ResNetFilm) and not ag.net.training
    folder = [p for p in (Path(cache) / "dqn").iterdir() if p.name.endswith(f"-s0-a{N}-resnet4-n2")]
    assert len(folder) == 1
    cfg = json.loads((folder[0] / "config.json").read_text())
    assert (cfg["arch"], cfg["width"], cfg["steps"], cfg["lr"]) == ("resnet", 4, 2, 1e-3)
    assert cfg["positives"] == int((brute_force(train, cache, N)[1] == 1).sum())
    assert ag.net.stem[0].weight.shape == (4, 7, 7, 7) and ag.net.last[0].c1.weight.shape == (32, 16, 3, 3)
    batch = PhysicsBatch([get_task(TIER, k, cache) for k in test[:2]], TIER)
    ag.reset(batch.info(), batch.reset())
    assert all(sorted(r.tolist()) == list(range(N)) for r in ag.rank)
    again = DqnAgent(seed=0, steps=2, n_actions=N, arch="resnet", width=4)
    again.train(TIER, train, "within", cache)
    for k, v in ag.net.state_dict().items():
        assert torch.equal(v, again.net.state_dict()[k])


@pytest.mark.parametrize("kw, message", [
    ({"arch": "resnet18"}, r"arch must be one of \['cnn', 'resnet'\].*got 'resnet18'"),
    ({"arch": "resnet", "width": 0}, r"width must be an integer >= 1.*got 0"),
    ({"width": 8}, r"width=8 sets the ResNet's channels; it needs arch='resnet'"),
    ({"steps": 0}, r"steps must be an integer >= 1.*got 0"),
    ({"updates": -1}, "updates must be an integer >= 0"),
    ({"updates": 1.5}, "got 1.5"),
    ({"updates": True}, "got True"),
    ({"lr_online": 0}, "lr_online must be a number > 0"),
    ({"lr_online": "x"}, "got 'x'"),
    ({"lr_online": float("nan")}, "got nan"),
])
def test_bad_dqn_networks_are_refused_by_name(kw, message):
    with pytest.raises(ValueError, match=message):
        DqnAgent(**kw)


def test_dqn_o_with_no_updates_leaves_its_network_as_trained(cache):
    """updates=0 (the offline point of PHYRE's tuning grid): finishing a task with attempts changes no weight, so
    DQN-O plays as DQN (bad updates and lr_online: test_bad_dqn_networks_are_refused_by_name)."""
    import torch

    from causalplay.agents.physics_dqn import DqnOAgent

    train, test = fold_tasks(TIER, 0, "within", **UNIVERSE)
    ag = DqnOAgent(seed=0, steps=2, n_actions=N, updates=0, replay=4)
    ag.train(TIER, train, "within", cache)
    batch = PhysicsBatch([get_task(TIER, test[0], cache)], TIER)
    ag.reset(batch.info(), batch.reset())
    ag.done_idx = [[(3, False), (7, True)]]
    before = {k: v.clone() for k, v in ag.net.state_dict().items()}
    ag.finish()
    assert all(torch.equal(before[k], v) for k, v in ag.net.state_dict().items())

