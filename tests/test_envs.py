"""Symbolic Blicket environments: gymnasium conformance, determinism, timing, oracle, reward, errors."""

import itertools

import gymnasium as gym
import numpy as np
import pytest
import torch
from causalplay.envs import ENV_IDS, make_batch
from causalplay.envs.reward import jsd
from causalplay.envs.sampling import COLORS, MATERIALS, SHAPES, acre_types
from gymnasium.utils.env_checker import check_env
from scipy.spatial.distance import jensenshannon

import causalplay  # noqa: F401  (registers the ids)
from causalplay.core.rules import conjunctive, disjunctive

BLICKET_IDS = [i for i in ENV_IDS if "Nexiom" not in i]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env(env_id):
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)


def _rollout(env_id, seed, n_steps=20):
    env = gym.make(env_id)
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(123)  # the same action sequence for both instances
    out = [(obs.copy(), repr(info))]
    for _ in range(n_steps):
        a = rng.random(env.action_space.shape).astype(np.float32)
        obs, r, term, trunc, info = env.step(a)
        out.append((obs.copy(), r, term, trunc, repr(info)))
        if term or trunc:
            break
    return out


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_same_rollout(env_id):
    a, b = _rollout(env_id, 7), _rollout(env_id, 7)
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        for u, v in zip(x, y, strict=True):
            np.testing.assert_array_equal(u, v) if isinstance(u, np.ndarray) else (u == v or pytest.fail(f"{u}!={v}"))


@pytest.mark.parametrize("env_id", BLICKET_IDS)
def test_single_env_is_batch_of_one(env_id):
    # gymnasium seeds np_random as default_rng(seed): the batched env with that generator draws the same episode.
    env = gym.make(env_id).unwrapped
    env.reset(seed=11)
    batch = make_batch(env_id, 1, seed=11)
    batch.reset()
    assert torch.equal(env._batch.blickets, batch.blickets)
    assert torch.equal(env._batch.panels, batch.panels)
    assert torch.equal(env._batch.lit, batch.lit)


def test_objects_and_panel_contract():
    env = gym.make("causalplay/IVRE-v0").unwrapped
    obs, info = env.reset(seed=0)
    objs = info["objects"]
    assert len(objs) == 9
    assert len({(o["shape"], o["material"], o["color"]) for o in objs}) == 9
    for o in objs:
        assert o["shape"] in SHAPES and o["material"] in MATERIALS and o["color"] in COLORS
    p = env.panel()
    assert p["phase"] == "context" and p["step"] == 1
    np.testing.assert_array_equal(p["on"], obs[:9] > 0.5)
    assert p["lit"] == bool(obs[9] > 0.5)
    assert "blickets" not in info and "rule" not in info


def test_timing_context_then_trials():
    env = gym.make("causalplay/IVRE-v0").unwrapped
    env.reset(seed=3)
    ctx = env._batch.panels[0, :4].numpy().copy()
    zero_belief = np.full(9, 0.5, dtype=np.float32)  # 0.5 never solves (strict < 0.5)
    trial = np.zeros(9, dtype=np.float32)
    trial[[0, 1]] = 1.0
    for t in range(1, 4):  # trials of actions 1..3 are ignored: the next context panel is shown
        obs, r, term, trunc, info = env.step(np.concatenate([trial, zero_belief]))
        np.testing.assert_array_equal(obs[:9] > 0.5, ctx[t])
        assert obs[12] == 0.0 and env.panel()["phase"] == "context" and env.panel()["step"] == t + 1
        assert "blickets" not in info
    obs, r, term, trunc, info = env.step(np.concatenate([trial, zero_belief]))  # action 4's trial runs
    np.testing.assert_array_equal(obs[:9] > 0.5, trial > 0.5)
    assert obs[12] == 1.0 and env.panel()["phase"] == "trial" and env.panel()["step"] == 5
    for _ in range(6):  # actions 5..10
        obs, r, term, trunc, info = env.step(np.concatenate([trial, zero_belief]))
    assert trunc and not term
    blickets = info["blickets"]
    assert info["rule"] == "disjunctive"
    # The machine is the disjunctive rule applied to the true blickets.
    assert env.panel()["lit"] == bool((blickets & (trial > 0.5)).any())
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.concatenate([trial, zero_belief]))


def _brute_oracle(panels, lits, rule_m=1):
    sets = np.array(list(itertools.product([0, 1], repeat=9)), dtype=bool)
    ok = np.ones(len(sets), dtype=bool)
    for p, lit in zip(panels, lits, strict=True):
        ok &= ((sets & p).sum(1) >= rule_m) == lit
    return sets[ok].mean(0)


@pytest.mark.parametrize("env_id,m", [("causalplay/IVRE-v0", 1), ("causalplay/IVRE-Conjunctive-v0", 2)])
def test_oracle_and_reward_against_brute_force(env_id, m):
    env = gym.make(env_id).unwrapped
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    for t in range(1, 11):
        shown = env._batch.panels[0, :t].numpy(), env._batch.lit[0, :t].numpy()
        belief = rng.random(9) * 0.4 + 0.3  # never within 0.5 of both 0 and 1 for all objects -> unsolved
        belief[0] = 0.5
        a = np.concatenate([rng.random(9), belief]).astype(np.float64)
        _, r, term, trunc, info = env.step(a)
        oracle = _brute_oracle(*shown, rule_m=m)
        np.testing.assert_allclose(info["oracle"], oracle, atol=1e-5)  # float32 oracle: a few ulps per step
        np.testing.assert_allclose(r, -1.0 - jensenshannon(oracle, belief), atol=1e-5)
        if trunc:
            break


def test_solving_gives_20_and_ends():
    env = gym.make("causalplay/IVRE-v0").unwrapped
    env.reset(seed=1)
    truth = env._batch.blickets[0].numpy().astype(np.float64)
    a = np.concatenate([np.zeros(9), 0.2 + 0.6 * truth])  # within 0.5 (0.2 / 0.8)
    _, r, term, trunc, info = env.step(a)
    assert (r, term, trunc) == (20.0, True, False)
    np.testing.assert_array_equal(info["blickets"], truth > 0.5)


@pytest.mark.parametrize("bad,err", [
    (np.full(18, np.nan), "NaN"), (np.zeros(17), "shape"), (np.full(18, 1.5), r"\[0, 1\]"),
    (np.full(18, -0.1), r"\[0, 1\]"), (np.zeros((2, 18)), "shape"),
])
def test_bad_actions_raise(bad, err):
    env = gym.make("causalplay/IVRE-v0").unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match=err):
        env.step(bad)


def test_jsd_matches_scipy_and_handles_zero_vectors():
    rng = np.random.default_rng(0)
    p, q = rng.random((5, 9)), rng.random((5, 9))
    q[0, :4] = 0
    got = jsd(torch.as_tensor(p), torch.as_tensor(q)).numpy()
    want = [jensenshannon(a, b) for a, b in zip(p, q, strict=True)]
    np.testing.assert_allclose(got, want, atol=1e-12)
    # all-zero belief counts as uniform
    np.testing.assert_allclose(jsd(torch.ones(1, 9), torch.zeros(1, 9)).numpy(), [0.0], atol=1e-12)
    # rows summing to less than 1 are normalised too, and float32 rows are computed in float64
    small_p, small_q = p / 20, q / 30
    np.testing.assert_allclose(jsd(torch.as_tensor(small_p), torch.as_tensor(small_q)).numpy(), want, atol=1e-12)
    p32, q32 = p.astype(np.float32), q.astype(np.float32)
    got32 = jsd(torch.from_numpy(p32), torch.from_numpy(q32))
    assert got32.dtype == torch.float64
    np.testing.assert_allclose(got32.numpy(), [jensenshannon(a, b) for a, b in
                                               zip(p32.astype(np.float64), q32.astype(np.float64), strict=True)],
                               rtol=0, atol=1e-12)


def test_acre_types_hand_examples():
    def panels(*sets):
        out = np.zeros((1, len(sets), 9), dtype=bool)
        for i, s in enumerate(sets):
            out[0, i, list(s)] = True
        return out

    # {0,1} unlit, {0,1,2} lit: direct for 2 and screening-off for 0,1; {1,3} lit: 3 indirect;
    # {2,4} lit: 4 backward-blocked by the known blicket 2.
    p = panels({0, 1}, {0, 1, 2}, {1, 3}, {2, 4})
    np.testing.assert_array_equal(acre_types(p, np.array([[0, 1, 1, 1]], dtype=bool), disjunctive()),
                                  [[True, True, True, True]])
    # Two lit panels with nothing settled: none of the types.
    p = panels({0, 1}, {2, 3})
    np.testing.assert_array_equal(acre_types(p, np.array([[1, 1]], dtype=bool), disjunctive()),
                                  [[False, False, False, False]])
    # Conjunctive: {0,1} lit, {0} unlit... singletons never light; {0,1} lit makes 0 and 1 sure blickets.
    p = panels({0, 1}, {0, 2})
    assert acre_types(p, np.array([[1, 0]], dtype=bool), conjunctive())[0, 1]


def test_est_context_shows_all_acre_types_when_feasible():
    b = make_batch("causalplay/EST-v0", 300, seed=0)
    b.reset()
    types = acre_types(b.panels[:, :4].numpy(), b.lit[:, :4].numpy(), b.rules[0])
    feasible = b.n_blickets.numpy() <= 7  # 8 of 9 blickets: every panel of >= 2 objects lights, nothing is settled
    assert types[feasible].all()
    sizes = b.panels[:, :4].sum(-1)
    assert int(sizes.min()) >= 2 and int(sizes.max()) <= 6
    assert set(b.n_blickets.tolist()) == {3, 4, 5, 6, 7, 8}


def test_ivre_episode_distribution():
    b = make_batch("causalplay/IVRE-v0", 2000, seed=0)
    b.reset()
    counts = b.n_blickets.numpy()
    np.testing.assert_array_equal(b.blickets.sum(-1).numpy(), counts)
    assert set(counts.tolist()) == {1, 2, 3, 4}
    sizes = b.panels[:, :4].sum(-1)
    assert int(sizes.min()) == 1 and int(sizes.max()) == 4
    # deterministic disjunctive machine on the context panels
    np.testing.assert_array_equal(b.lit[:, :4].numpy(), (b.panels[:, :4] & b.blickets[:, None]).any(-1).numpy())


def test_noisy_variant_flips_some_outcomes():
    b = make_batch("causalplay/IVRE-Noisy-v0", 4000, seed=0)
    b.reset()
    clean = (b.panels[:, :4] & b.blickets[:, None]).any(-1)
    flip = (clean != b.lit[:, :4]).double().mean().item()
    assert abs(flip - 0.1) < 0.015  # 16000 draws of p=0.1: sd 0.0024, so 6 sd


def _noisy_rollout(seed: int, B: int = 4000):
    """IVRE-Noisy (flip probability 0.1) run to the horizon with seeded random trials and every belief at 0.5
    (never solved: solving needs every belief strictly within 0.5 of the truth), so all 6 trial panels run."""
    b = make_batch("causalplay/IVRE-Noisy-v0", B, seed=seed)
    b.reset()
    rng = np.random.default_rng(seed + 1000)
    for _ in range(10):
        b.step(torch.as_tensor(np.concatenate([rng.random((B, 9)) < 0.4, np.full((B, 9), 0.5)], 1)))
    assert bool(b.done.all()) and not bool((b.solved_at > 0).any())
    return b


def test_noisy_machine_on_trial_panels():
    """The noisy machine on the agent's trial panels too (not only the context): same seed -> same flips; the
    flip rate is 0.1 on both panel types; each panel's outcome uses that panel's own draw."""
    b = _noisy_rollout(0)
    C, T = 4, 10
    lit, panels, blickets = b.lit.numpy(), b.panels.numpy(), b.blickets.numpy()
    clean = (panels & blickets[:, None]).any(-1)
    flip = clean != lit
    # 4000 x 4 context draws (sd 0.0024) and 4000 x 6 trial draws (sd 0.0019) of p = 0.1: within 5 sd
    assert abs(flip[:, :C].mean() - 0.1) < 0.012
    assert abs(flip[:, C:].mean() - 0.1) < 0.01
    # by hand: panel k lights iff its own uniform < P(lit) = 0.9 with a blicket on, 0.1 without
    u = b.uniforms.numpy()
    np.testing.assert_array_equal(lit, u < np.where(clean, 0.9, 0.1))
    # Flips of neighbouring panels are independent: both flip with probability 0.01 (4000 pairs: sd 0.0016).
    # A trial answered with the previous panel's draw would make the last context panel and the first trial
    # flip together about 10 x as often.
    for k in range(1, T):
        assert (flip[:, k - 1] & flip[:, k]).mean() < 0.018, k
    again = _noisy_rollout(0)
    np.testing.assert_array_equal(again.lit.numpy(), lit)
    np.testing.assert_array_equal(again.panels.numpy(), panels)
    other = _noisy_rollout(1)
    assert (other.lit.numpy() != lit).any()


def test_machine_p_lit_machine_lit_and_oracle_space_by_hand():
    from causalplay.envs.machine import machine_lit, oracle_space, p_lit

    rules = (disjunctive(), conjunctive())
    k = torch.tensor([0, 1, 2, 1, 3])
    got = p_lit(rules, torch.tensor([0, 0, 1, 1, 0]), k)  # each entry under its own rule
    assert got.dtype == torch.float64
    np.testing.assert_array_equal(got.numpy(), [0, 1, 1, 0, 1])
    np.testing.assert_allclose(p_lit((disjunctive(noise=0.1),), torch.zeros(3, dtype=torch.long),
                                     torch.tensor([0, 1, 2])).numpy(), [0.1, 0.9, 0.9], rtol=0, atol=1e-15)
    # machine_lit lights iff the panel's uniform (in [0, 1)) is strictly below P(lit)
    blickets = np.array([[True, False, False]] * 3)
    off, on = np.array([[False, True, True]] * 3), np.array([[True, True, False]] * 3)
    assert not machine_lit(rules, np.zeros(3, dtype=np.int64), blickets, off, np.array([0.0, 0.5, 0.99])).any()
    assert machine_lit(rules, np.zeros(3, dtype=np.int64), blickets, on, np.array([0.0, 0.5, 0.99])).all()
    noisy = (disjunctive(noise=0.1),)
    np.testing.assert_array_equal(machine_lit(noisy, np.zeros(3, dtype=np.int64), blickets, on,
                                              np.array([0.8999, 0.9, 0.95])), [True, False, False])
    np.testing.assert_array_equal(machine_lit(noisy, np.zeros(3, dtype=np.int64), blickets, off,
                                              np.array([0.0999, 0.1, 0.5])), [True, False, False])
    # the oracle's space: all 2^N sets, a uniform prior over them, the one rule given, float32 by default
    sp = oracle_space(conjunctive(), 3)
    assert sp.sets.shape == (8, 3) and sp.sets.dtype == torch.float32 and sp.rules == (conjunctive(),)
    np.testing.assert_allclose(sp.set_log_prior.numpy(), np.full(8, -3 * np.log(2)), rtol=1e-6)


def test_oracle_without_table_partial_updates_and_resets_match_brute_force():
    """N = 11 runs the untabulated update; two noisy rules; updates of some rows only; fresh and reset rows are
    uniform (marginal 0.5). Reference: pure-Python enumeration of the 2 x 2^11 (rule, set) hypotheses."""
    from causalplay.envs.machine import Oracle

    N, noise = 11, 0.1
    rules = (disjunctive(noise=noise), conjunctive(noise=noise))
    o = Oracle(rules, N, 3)
    np.testing.assert_allclose(o.marginals(), 0.5, rtol=0, atol=1e-15)
    rng = np.random.default_rng(0)
    seen = [[], [], []]
    for step in range(4):
        rows = None if step % 2 == 0 else np.array([0, 2])
        idx = [0, 1, 2] if rows is None else [0, 2]
        trial = rng.random((len(idx), N)) < 0.3
        lit = rng.random(len(idx)) < 0.5
        o.update(rows, trial, lit)
        for j, r in enumerate(idx):
            seen[r].append((np.flatnonzero(trial[j]).tolist(), bool(lit[j])))
    for r in range(3):
        w = np.zeros(N)
        z = 0.0
        for code in range(2**N):
            bits = [(code >> i) & 1 for i in range(N)]
            for need in (1, 2):  # disjunctive, conjunctive
                x = 1.0
                for objs, lit in seen[r]:
                    on = sum(bits[i] for i in objs) >= need
                    q = 1 - noise if on else noise
                    x *= q if lit else 1 - q
                z += x
                w += x * np.array(bits)
        np.testing.assert_allclose(o.marginals()[r], w / z, rtol=0, atol=1e-12)
    o.reset(np.array([1]))
    np.testing.assert_allclose(o.marginals()[1], 0.5, rtol=0, atol=1e-15)
    assert np.abs(o.marginals()[0] - 0.5).max() > 0.01  # the other rows keep their evidence


def test_nexiom_budget_and_scoring():
    env = gym.make("causalplay/Nexiom-v0").unwrapped
    env.reset(seed=2)
    truth = env._batch.blickets[0].numpy()
    test = np.concatenate([np.ones(4), np.zeros(4), [0.0, 0.0]])
    total = 0.0
    for _ in range(16):
        _, r, term, _, info = env.step(test)
        total += r
        assert not term
    assert total == -16.0 and info["tests"] == 16 and env.panel()["phase"] == "trial"
    # Budget used up: this step answers whatever 'stop' says.
    _, r, term, _, info = env.step(np.concatenate([np.zeros(4), truth.astype(float), [0.0, 1.0]]))
    assert term and r == 20.0 and info["solved"]
    assert info["rule_correct"] == (info["rule"] == "conjunctive")


def test_unknown_id_errors():
    with pytest.raises(ValueError, match="unknown environment id"):
        make_batch("causalplay/Nope-v0", 1)
