"""The batch-task interface, the native vector envs, the observation modes, EST-v1 and the official reward."""

import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch
from causalplay.envs import DAG_ENV_IDS, ENV_IDS, make_batch
from causalplay.envs.blicket import EST, EST_ACRE
from causalplay.envs.reward import ivre_jsd
from causalplay.envs.task import Task
from causalplay.envs.vector import TaskVectorEnv
from gymnasium.utils.env_checker import check_env
from scipy.stats import entropy
from vector_check import assert_vector_equals_singles

import causalplay  # noqa: F401  (registers the ids)

BLICKET_IDS = [i for i in ENV_IDS if "Nexiom" not in i]
CURRENT_IDS = [i for i in ENV_IDS if not (i.startswith("causalplay/EST") and i.endswith("-v0") and "ACRE" not in i)]


def official_jsd(oracle, belief, eps=1e-7, slots=48):
    """The public IVRE formula written out on 48-slot numpy vectors (float64), as an independent reference."""
    p = np.zeros(slots)
    q = np.zeros(slots)
    p[: len(oracle)] = oracle
    q[: len(belief)] = belief
    p, q = p + eps, q + eps
    p, q = p / p.sum(), q / q.sum()
    m = (p + q) / 2
    return np.sqrt(np.clip((entropy(p, m) + entropy(q, m)) / 2, 0.0, 1.0))


def test_ivre_jsd_matches_the_official_formula_on_every_belief():
    rng = np.random.default_rng(0)
    oracles = np.concatenate([rng.random((200, 9)), rng.integers(0, 2, (50, 9)).astype(float),
                              np.full((1, 9), 0.5), np.zeros((1, 9)), np.ones((1, 9))])
    beliefs = np.concatenate([rng.random((200, 9)), rng.integers(0, 2, (50, 9)).astype(float),
                              np.full((1, 9), 0.5), np.zeros((1, 9)), np.ones((1, 9))])
    for o in oracles[::7]:
        for b in beliefs:
            got = float(ivre_jsd(torch.tensor(o), torch.tensor(b)))
            assert abs(got - official_jsd(o, b)) < 1e-9


def test_ivre_jsd_numpy_batches_mixed_inputs_and_errors():
    """The numpy path (the env calls it with [B, N] batches), float32 inputs computed in float64, a torch input
    on either side giving a tensor back, N == slots allowed, and errors that name the sizes."""
    rng = np.random.default_rng(1)
    o = rng.random((6, 9)).astype(np.float32)
    b = rng.random((6, 9)).astype(np.float32)
    b[0] = 0.0
    want = np.array([official_jsd(x.astype(np.float64), y.astype(np.float64)) for x, y in zip(o, b, strict=True)])
    got = ivre_jsd(o, b)  # one batched call, float32 in
    assert isinstance(got, np.ndarray) and got.dtype == np.float64 and got.shape == (6,)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ivre_jsd(o.tolist(), b.tolist()), want, rtol=0, atol=1e-12)
    for p, q in ((torch.from_numpy(o), b), (o, torch.from_numpy(b)), (torch.from_numpy(o), torch.from_numpy(b))):
        t = ivre_jsd(p, q)
        assert isinstance(t, torch.Tensor) and t.dtype == torch.float64
        np.testing.assert_allclose(t.numpy(), want, rtol=0, atol=1e-12)
    # a bfloat16 tensor on either side is converted too (numpy has no bfloat16)
    o16 = torch.from_numpy(o).to(torch.bfloat16)
    o16_64 = o16.double().numpy()
    np.testing.assert_allclose(ivre_jsd(o16, b).numpy(), [official_jsd(x, y.astype(np.float64))
                                                          for x, y in zip(o16_64, b, strict=True)], atol=1e-12)
    np.testing.assert_allclose(ivre_jsd(b, o16).numpy(), [official_jsd(y.astype(np.float64), x)
                                                          for x, y in zip(o16_64, b, strict=True)], atol=1e-12)
    # a belief equal to the oracle up to rounding: the divergence rounds to -2e-16 here; clipped, not NaN
    near_p = [0.9335828777714443, 0.5426720391197397, 0.8772348928121381, 0.8924769129110319, 0.2633914912573959,
              0.9626565188959999, 0.5553855327836544, 0.804660982081142, 0.6592340160323437]
    near_q = [0.9335828777714458, 0.5426720391197398, 0.8772348928121378, 0.8924769129110333, 0.26339149125739575,
              0.9626565188959999, 0.5553855327836543, 0.8046609820811426, 0.6592340160323438]
    assert float(ivre_jsd(np.array(near_p), np.array(near_q))) == 0.0
    full = np.full(48, 1 / 48)
    assert float(ivre_jsd(full, full, slots=48)) == 0.0  # N == slots: no empty slot
    one_hot = np.eye(48)[0]
    assert float(ivre_jsd(one_hot, full, slots=48)) == pytest.approx(official_jsd(one_hot, full), abs=1e-12)
    with pytest.raises(ValueError, match=r"same last size N <= slots, got 49, 49 and slots=48"):
        ivre_jsd(np.zeros(49), np.zeros(49))
    with pytest.raises(ValueError, match=r"got 5, 4 and slots=48"):
        ivre_jsd(np.zeros((2, 5)), np.zeros((2, 4)))


def test_all_zero_belief_is_scored_as_the_official_reward_not_as_uniform():
    # Oracle: object 0 is a blicket for sure, the rest unknown. The old plain JSD scored an all-zero belief as
    # the uniform vector; the official one pads with EPS over 48 slots.
    o = np.array([1.0] + [0.5] * 8)
    got = float(ivre_jsd(torch.tensor(o), torch.zeros(9)))
    assert got == pytest.approx(official_jsd(o, np.zeros(9)), abs=1e-12)
    # By hand (EPS negligible): p = (.2, .1 x 8, 0 x 39), q = 1/48 everywhere, m = (p + q) / 2;
    # KL(p||m) = .2 ln(.2/.110417) + .8 ln(.1/.0604167) = .52193, KL(q||m) = (1/48)(ln(.020833/.110417)
    # + 8 ln(.020833/.0604167) + 39 ln 2) = .35099; sqrt((.52193 + .35099) / 2) = .66065.
    assert got == pytest.approx(0.66065, abs=1e-4)
    from causalplay.envs.reward import jsd

    assert float(jsd(torch.tensor(o), torch.zeros(9))) < got - 0.2  # the old all-zero-as-uniform was kinder


def test_env_reward_is_minus_one_minus_official_jsd():
    env = gym.make("causalplay/IVRE-v0")
    env.reset(seed=3)
    belief = np.zeros(9)
    _, r, term, _, info = env.step(np.concatenate([np.zeros(9), belief]).astype(np.float32))
    assert not term
    assert r == pytest.approx(-1.0 - official_jsd(info["oracle"], belief), abs=1e-9)


@pytest.mark.parametrize("env_id", ENV_IDS + DAG_ENV_IDS)
def test_every_batch_is_a_task(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        task = make_batch(env_id, 3, seed=0)
    assert isinstance(task, Task)
    obs = task.reset()
    assert obs.shape == (3, task.obs_size) == (3, task.layout.size)
    if "count" in task.layout:
        assert task.layout.get(obs, "count")[:, 0].round().long().tolist() == task.n_blickets.tolist()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_make_vec_is_native_and_equals_single_envs_with_the_same_seeds(env_id):
    B, seed, steps = 4, 11, 40
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (FutureWarning, DeprecationWarning))
        venv = gym.make_vec(env_id, num_envs=B)
        singles = [gym.make(env_id) for _ in range(B)]
    assert isinstance(venv.unwrapped, TaskVectorEnv)
    assert_vector_equals_singles(venv, singles, seed, steps)


@pytest.mark.parametrize("obs_mode", ["history", "dict"])
@pytest.mark.parametrize("env_id", ["causalplay/IVRE-v0", "causalplay/EST-v1"])
def test_observation_modes_pass_check_env(env_id, obs_mode):
    check_env(gym.make(env_id, obs_mode=obs_mode).unwrapped, skip_render_check=True)


def test_history_observation_holds_every_panel_so_far_and_the_last_belief():
    N, T = 9, 10
    env = gym.make("causalplay/IVRE-v0", obs_mode="history")
    obs, info = env.reset(seed=5)
    base = env.unwrapped
    assert obs.shape == (2 + T * (N + 1) + N,) == (111,)
    assert obs[0] == pytest.approx(info["n_blickets"] / N)
    rng = np.random.default_rng(1)
    seen = [np.append(base.panel()["on"], base.panel()["lit"])]
    for t in range(1, 6):
        hist = obs[2:2 + T * (N + 1)].reshape(T, N + 1)
        np.testing.assert_array_equal(hist[:t], np.stack(seen))
        assert not hist[t:].any()
        assert obs[1] == pytest.approx(t / T)
        a = np.concatenate([rng.random(N) < 0.5, np.full(N, 0.45) + 0.01 * t]).astype(np.float32)
        obs, _, term, trunc, _ = env.step(a)
        assert not (term or trunc)
        np.testing.assert_allclose(obs[-N:], a[N:])
        p = base.panel()
        seen.append(np.append(p["on"], p["lit"]))
    d = gym.make("causalplay/IVRE-v0", obs_mode="dict")
    dobs, _ = d.reset(seed=5)
    np.testing.assert_array_equal(dobs["history"][0], seen[0])
    np.testing.assert_array_equal(dobs["last_belief"], np.full(N, 0.5, np.float32))


def test_est_v1_samples_the_papers_context():
    b = make_batch("causalplay/EST-v1", 20000, seed=0)
    b.reset()
    assert b.config is EST or b.config == EST
    sizes = b.panels[:, :4].sum(-1).flatten().numpy()
    freq = np.bincount(sizes, minlength=7)[2:] / sizes.size
    # sizes 2..6 uniform: each 1/5, binomial SE sqrt(.2*.8/80000) = 0.0014; 5 SE tolerance
    np.testing.assert_allclose(freq, 0.2, atol=0.007)
    assert np.bincount(sizes, minlength=7)[:2].sum() == 0 and sizes.max() == 6
    counts = np.bincount(b.n_blickets.numpy(), minlength=9)[3:9] / 20000  # 3..8 uniform, SE 0.0026
    np.testing.assert_allclose(counts, 1 / 6, atol=0.013)
    # objects enter a panel uniformly: P(on) = E[size] / 9 = 4 / 9 for every object
    np.testing.assert_allclose(b.panels[:, :4].double().mean((0, 1)).numpy(), 4 / 9, atol=0.01)


def test_est_acre_is_the_old_designed_context_and_v0_warns():
    with pytest.warns(FutureWarning, match="EST-v1"):
        env = gym.make("causalplay/EST-v0")
    assert env.unwrapped.config == EST_ACRE
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        acre = gym.make("causalplay/EST-ACRE-v0")
    assert acre.unwrapped.config == EST_ACRE
    o0, _ = env.reset(seed=9)
    o1, _ = acre.reset(seed=9)
    np.testing.assert_array_equal(o0, o1)


def test_reset_rows_leaves_other_rows_alone():
    b = make_batch("causalplay/IVRE-v0", 6, seed=0)
    b.reset()
    a = torch.full((6, 18), 0.3, dtype=torch.float64)
    b.step(a)
    before = (b.panels.clone(), b.t.clone(), b.oracle().clone())
    b.reset([1, 4])
    keep = torch.tensor([0, 2, 3, 5])
    assert torch.equal(b.panels[keep], before[0][keep]) and torch.equal(b.oracle()[keep], before[2][keep])
    assert b.t.tolist() == [1, 0, 1, 1, 0, 1]
    with pytest.raises(ValueError, match="row indices must lie in"):
        b.reset([6])
    with pytest.raises(ValueError, match="distinct"):
        b.reset([1, 1])


def test_nexiom_reset_pins_worlds():
    task = make_batch("causalplay/Nexiom-v0", 2, seed=0)
    task.reset(rule_idx=[1, 0], blickets=[[True, True, False, False], [False, False, True, True]])
    assert task.rule_idx.tolist() == [1, 0]
    # conjunctive row 0: one blicket does not light; disjunctive row 1: one blicket lights
    a = torch.tensor([[1, 0, 0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0, 0, 0, 0, 0]], dtype=torch.float64)
    obs, r, term, _ = task.step(a)
    assert task.layout.get(obs, "lit")[:, 0].tolist() == [0.0, 1.0]
    assert r.tolist() == [-1.0, -1.0] and not term.any()
    with pytest.raises(ValueError, match="rule_idx must be 0"):
        task.reset(rule_idx=[2, 0])


@pytest.mark.parametrize("env_id, obs_mode", [("causalplay/IVRE-v0", "history"), ("causalplay/EST-v1", "panel"),
                                              ("causalplay/Nexiom-v0", None)])
def test_sb3_vec_env_equals_dummy_vec_env(env_id, obs_mode):
    pytest.importorskip("stable_baselines3")
    from causalplay.envs.sb3 import make_sb3_vec
    from stable_baselines3.common.vec_env import DummyVecEnv

    kw = {} if obs_mode is None else {"obs_mode": obs_mode}
    B = 3
    ours = make_sb3_vec(env_id, B, seed=7, **kw)
    ref = DummyVecEnv([lambda: gym.make(env_id, **kw) for _ in range(B)])
    ref.seed(7)
    np.testing.assert_array_equal(ours.reset(), ref.reset())
    rng = np.random.default_rng(2)
    n_done = 0
    for _ in range(30):
        a = rng.random((B, ours.action_space.shape[0])).astype(np.float32)
        o1, r1, d1, i1 = ours.step(a)
        o2, r2, d2, i2 = ref.step(a)
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_allclose(r1, r2, atol=1e-6)
        np.testing.assert_array_equal(d1, d2)
        for x, y in zip(i1, i2, strict=True):
            if "terminal_observation" in y:
                n_done += 1
                np.testing.assert_array_equal(x["terminal_observation"], y["terminal_observation"])
                assert x["TimeLimit.truncated"] == y.get("TimeLimit.truncated", False)
    assert n_done >= B


def test_two_rule_oracle_is_uniform_over_rules_and_does_not_leak_the_rule():
    import itertools

    from causalplay.envs.core import BlicketBatch
    from causalplay.envs.sampling import TaskConfig

    from causalplay.core.rules import conjunctive, disjunctive

    rules = (disjunctive(), conjunctive())
    cfg = TaskConfig(name="two", n_objects=4, n_blickets=(1, 2, 3), n_context=2, context_size=(1, 3), horizon=4,
                     rules=rules)
    b = BlicketBatch(cfg, 64, np.random.default_rng(0))
    b.reset()
    b.step(torch.full((64, 8), 0.3, dtype=torch.float64))  # shows the second context panel
    got = b.oracle().numpy()
    for row in range(64):
        post = np.zeros(4)
        total = 0.0
        for bits in itertools.product([0, 1], repeat=4):
            s = np.array(bits, dtype=bool)
            for rule in rules:  # uniform over rules and sets: the true rule is never used
                like = 1.0
                for k in range(2):
                    n = int((b.panels[row, k].numpy() & s).sum())
                    p = float(rule.p_lit(torch.tensor(float(n))))
                    like *= p if bool(b.lit[row, k]) else 1.0 - p
                post += like * s
                total += like
        np.testing.assert_allclose(got[row], post / total, atol=1e-12)


def test_vector_envs_take_one_action_row_per_env():
    """A single action row is not spread over the envs (SB3VecEnv crashed deep in the task on one before)."""
    pytest.importorskip("stable_baselines3")
    from causalplay.envs.sb3 import make_sb3_vec

    for venv in (make_sb3_vec("causalplay/IVRE-v0", 3, seed=0), gym.make_vec("causalplay/IVRE-v0", num_envs=3)):
        venv.reset()
        for bad in (np.full(18, 0.2), np.full((2, 18), 0.2)):
            with pytest.raises(ValueError, match=r"actions must have shape \(3, 18\) \(one row per env\)"):
                venv.step(bad)


def test_bad_env_arguments_get_clear_errors():
    env = gym.make("causalplay/IVRE-v0", n_blickets=3)  # one allowed count, as an int
    _, info = env.reset(seed=0)
    assert info["n_blickets"] == 3
    with pytest.raises(ValueError, match="n_blickets must be an int or a tuple of ints"):
        gym.make("causalplay/IVRE-v0", n_blickets="three")
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got 0"):
        make_batch("causalplay/IVRE-v0", 0)
    with pytest.raises(ValueError, match="num_envs must be a positive integer, got -2"):
        gym.make_vec("causalplay/IVRE-v0", num_envs=-2)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        make_batch("causalplay/EST-v1", 2).step(np.zeros((2, 18)))
    with pytest.raises(ValueError, match="obs_mode must be one of"):
        gym.make("causalplay/IVRE-v0", obs_mode="pixels")
