"""Ties never go to floating-point noise: causalplay.core.ties, and every site of the package that chooses by
argmax, argmin or a sort, each with a planted exact tie.

A planted tie is two values equal in exact arithmetic, one of them nudged by a few units in the last place (what
another CPU's kernels could compute) so that the *later* index is the larger; the right answer is derived by hand
from the documented rule (lowest index, or the documented tie-break key).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from causalplay.core import ties
from causalplay.core.ties import argmax_lex, argmax_tol, argmin_tol, pick_lowest, snap, stable_order, stable_topk

ULP64 = 4e-16  # a few units in the last place of values of order 1 in float64
ULP32 = 3e-7  # the same in float32


# -- the helpers -------------------------------------------------------------------------------------------------
def test_argmax_tol_sends_a_noisy_tie_to_the_lowest_index():
    x = torch.tensor([0.1, 0.7, 0.3, 0.7 + ULP64], dtype=torch.float64)
    assert int(x.argmax()) == 3  # what a plain argmax lets the noise decide
    assert int(argmax_tol(x)) == 1
    assert int(argmin_tol(-x)) == 1
    x32 = torch.tensor([[0.7 + ULP32, 0.7, 0.2]], dtype=torch.float32)
    assert argmax_tol(x32, 1).tolist() == [0]
    x32 = torch.tensor([[0.2, 0.7, 0.7 + 2 * ULP32]], dtype=torch.float32)
    assert argmax_tol(x32, 1).tolist() == [1]


def test_argmax_tol_keeps_real_differences():
    # 1e-6 apart in float64 (1000 x the tolerance): not a tie
    assert int(argmax_tol(torch.tensor([0.5, 0.5 + 1e-6], dtype=torch.float64))) == 1
    # the tolerance scales with |best| above 1 (rewards, log-probabilities): 20 + 5e-9 ties 20 at 1e-9 * 20
    assert int(argmax_tol(torch.tensor([20.0, 20.0 + 5e-9], dtype=torch.float64))) == 0
    assert int(argmax_tol(torch.tensor([20.0, 20.0 + 5e-8], dtype=torch.float64))) == 1
    # integers compare exactly
    assert int(argmax_tol(torch.tensor([3, 4, 4]))) == 1


def test_argmax_tol_key_and_inf():
    x = torch.tensor([0.5, 0.5 + ULP64, 0.1], dtype=torch.float64)
    assert int(argmax_tol(x, key=torch.tensor([0.0, 1.0, 9.0]))) == 1  # the key decides among the tied only
    assert int(argmax_tol(torch.full((3,), -torch.inf))) == 0
    assert int(argmax_tol(torch.tensor([-torch.inf, -3.0, -3.0 - ULP64 * 3]))) == 1


def test_argmax_lex_is_lexicographic_with_tolerance():
    primary = torch.tensor([1.0, 1.0 + ULP64, 1.0, 0.9], dtype=torch.float64)
    secondary = torch.tensor([0.2, 0.2, 0.3, 5.0], dtype=torch.float64)
    assert int(argmax_lex(primary, secondary)) == 2  # 0-2 tie on the first key, 2 wins the second
    assert int(argmax_lex(primary, torch.tensor([0.3, 0.3 + ULP64, 0.2, 9.0], dtype=torch.float64))) == 0
    with pytest.raises(ValueError, match="at least one key"):
        argmax_lex()


def test_stable_topk_and_order_keep_index_order_among_ties():
    x = torch.tensor([0.2, 0.5, 0.5 + ULP64, 0.5 - ULP64, 0.9], dtype=torch.float64)
    vals, idx = stable_topk(x, 3)
    assert idx.tolist() == [4, 1, 2]  # the cut-off tie keeps the two lowest indices
    assert vals.tolist() == [0.9, 0.5, 0.5 + ULP64]  # unrounded values come back
    assert stable_order(x).tolist() == [0, 1, 2, 3, 4]
    assert stable_order(x, descending=True).tolist() == [4, 1, 2, 3, 0]


def test_snap_groups_equal_values_and_leaves_integers():
    x = torch.tensor([1 / 3, 1 / 3 + ULP64, 0.25], dtype=torch.float64)
    s = snap(x)
    assert s[0] == s[1] and s[0] != s[2]
    ints = torch.tensor([1, 2])
    assert snap(ints) is ints


def test_pick_lowest_and_bad_tolerance():
    assert pick_lowest(np.array([0.4, 0.4 + ULP64, 0.1])) == 0
    assert pick_lowest(np.array([0.4, 0.4 + ULP64, 0.1]), key=np.array([3, 2, 1])) == 1
    with pytest.raises(ValueError, match="non-empty 1-D"):
        pick_lowest(np.array([]))
    with pytest.raises(ValueError, match=r"tol must be a finite number >= 0, got -1"):
        argmax_tol(torch.tensor([1.0]), tol=-1)
    assert ties.default_tol(torch.float64) == 1e-9 and ties.default_tol(torch.int64) == 0.0
    assert ties.default_tol(np.dtype(np.float32)) == 1e-5


# -- the package's sites ---------------------------------------------------------------------------------------
def _space(n=3):
    from causalplay.core.spec import HypothesisSpace
    from causalplay.learners.api import make_spec

    return HypothesisSpace.build(make_spec(n, "disjunctive"))


@pytest.mark.parametrize("dtype, ulp", [(torch.float64, ULP64), (torch.float32, ULP32)])
def test_map_code_ties_go_to_the_lowest_code(dtype, ulp):
    from causalplay.core.beliefs import BatchBeliefs

    space = _space()
    p = torch.zeros(space.n_sets, dtype=torch.float64)
    p[3], p[5] = 0.4, 0.4 * (1 + ulp)  # sets {0,1} and {0,2}: equal, the later one nudged up
    p[6] = 0.2 - 0.4 * ulp
    log_w = p.log().to(dtype)[None].repeat(2, 1)
    post = BatchBeliefs(space, log_w)
    assert post.map_code().tolist() == [3, 3]


def test_beliefs_map_and_hypotheses_order_ties_in_code_order():
    from causalplay.core.beliefs import Beliefs
    from causalplay.learners.api import infer

    b = infer([], n_objects=3)
    assert isinstance(b, Beliefs)
    lw = torch.full_like(b.log_w, -torch.inf)
    S = b.space.n_sets
    # disjunctive {0,1} (h = 3) and {1,2} (h = 6) tie; the later one is nudged up
    lw[3], lw[6] = np.log(0.5), np.log(0.5) + 2 * ULP64
    b.log_w = lw
    assert b.map() == ((0, 1), b.space.rule_names[3 // S])
    top = b.hypotheses()
    assert top["blickets"].tolist()[:2] == [(0, 1), (1, 2)]
    assert b.hypotheses(top=1)["blickets"].tolist() == [(0, 1)]


def test_best_trial_ties_go_to_fewest_objects_then_first():
    from causalplay.core.beliefs import pick_best

    eig = np.array([0.5, 0.5 + ULP64, 0.5 + 2 * ULP64, 0.1])
    assert pick_best(eig, np.array([2, 1, 1, 1])) == 1  # fewest objects, then the first of those
    assert pick_best(eig, np.array([1, 1, 1, 1])) == 0
    assert pick_best(np.array([0.5, 0.5 + 1e-6]), np.array([1, 1])) == 1  # a real difference wins


def test_svi_best_trial_uses_the_same_rule(monkeypatch):
    from causalplay.learners.svi import SVIBeliefs

    cand = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 0]], dtype=float)
    fake = type("F", (), {"_candidates": lambda self, t: cand,
                          "eig": lambda self, c, t: np.array([0.7, 0.7 + ULP64, 0.7 + 2 * ULP64])})()
    assert SVIBeliefs.best_trial(fake) == (0,)  # {0} and {1} and {0,1} tie: fewest objects, then first


def _blicket_agent(cls, **kw):
    from causalplay.envs import make_batch


    env = make_batch("causalplay/IVRE-v0", 2, seed=0)
    obs = env.reset()
    agent = cls(seed=0, **kw)
    agent.reset(env.info(), obs)
    agent.first_obs = obs
    return agent


def test_eig_agent_tie_goes_to_more_objects_then_lower_code(monkeypatch):
    from causalplay.agents import bayesian

    agent = _blicket_agent(bayesian.EIGAgent)
    codes = (agent.cand * 2 ** torch.arange(agent.cand.shape[1])).sum(-1).long()
    i3, i5 = int((codes == 3).nonzero()), int((codes == 5).nonzero())
    planted = torch.zeros(2, agent.cand.shape[0])
    planted[:, i3], planted[:, i5] = 0.8, 0.8 + ULP32  # {0,1} and {0,2}: same size, 5 nudged up
    monkeypatch.setattr(bayesian, "eig_bits", lambda *a, **k: planted)
    out = agent.choose(torch.ones(2, dtype=torch.bool), torch.zeros(2, dtype=torch.long))
    assert out.tolist() == [agent.cand[i3].tolist()] * 2


def test_planner_tie_goes_to_eig_then_lowest_index(monkeypatch):
    from causalplay.agents import bayesian

    agent = _blicket_agent(bayesian.PlannerAgent, depth=1)
    D = agent.cand.shape[0]
    value = torch.zeros(2, D)
    value[:, 2], value[:, 6] = 0.5, 0.5 + ULP32  # P(solve next) equal, the later nudged up
    eig = torch.zeros(2, D, dtype=torch.float64)
    eig[:, 2], eig[:, 6] = 0.3, 0.3 - ULP64  # and equal EIG, the later nudged down
    monkeypatch.setattr(agent, "solve_next_prob", lambda *a: value)
    monkeypatch.setattr(bayesian, "eig_bits", lambda *a, **k: eig)
    out = agent.choose(torch.ones(2, dtype=torch.bool), torch.zeros(2, dtype=torch.long))
    assert out.tolist() == [agent.cand[2].tolist()] * 2
    eig[:, 6] = 0.4  # a real EIG difference decides the tie in value
    out = agent.choose(torch.ones(2, dtype=torch.bool), torch.zeros(2, dtype=torch.long))
    assert out.tolist() == [agent.cand[6].tolist()] * 2


def test_paper_search_naive_ties_to_the_lowest_index(monkeypatch):
    from causalplay.agents.paper import PaperSearchNaiveAgent

    agent = _blicket_agent(PaperSearchNaiveAgent)
    f = torch.full((2, 9), 1.0, dtype=torch.float64)
    f[:, 4], f[:, 7] = 0.25, 0.75 - ULP64  # |f - 1/2| equal; 7 nudged nearer 1/2
    monkeypatch.setattr(agent, "frequency", lambda *a: f)
    out = agent.act(agent.first_obs, torch.ones(2, dtype=torch.bool))
    assert out[:, :9].argmax(1).tolist() == [4, 4] and out[:, :9].sum(1).tolist() == [1.0, 1.0]


def test_first_of_top_values_treats_equal_probabilities_as_equal():
    from causalplay.agents.paper import first_of_top_values

    v = torch.tensor([[0.7, 0.7 + ULP64, 0.2]], dtype=torch.float64)
    # the public code's quirk: object 1 ties object 0, so it is never marked; two marks asked, one given
    assert first_of_top_values(v, torch.tensor([2])).tolist() == [[True, False, False]]


def test_dag_posterior_top_and_goal_ties():
    from causalplay.core import dag_posterior

    logpost = torch.tensor([[-3.0, -1.0, -2.0, -2.0 + 4 * ULP64, -2.0 - ULP64]], dtype=torch.float64)
    _, idx = dag_posterior._top(logpost, 2)
    assert idx.tolist() == [[1, 2]]  # the cut-off tie among 2, 3, 4 keeps the lowest index


def test_causal_dag_optimal_action_ties_to_the_lowest_action(monkeypatch):
    from causalplay.envs import make_batch

    env = make_batch("causalplay/CausalDAG-v1", 4, seed=3)
    sample = env._sample

    def planted(m):
        d = sample(m)
        g = d["goal_values"]
        best = g.max(1).values
        top = best + 1.0  # actions 1 and the last are the best, tied; the last nudged up
        g[:, 1], g[:, -1] = top, top + 2 * ULP64 * top.abs().clamp_min(1)
        return d

    monkeypatch.setattr(env, "_sample", planted)
    env.reset()
    assert env.optimal_action.tolist() == [1] * 4


def test_nexiom_eig_agent_tie_goes_to_the_lowest_code(monkeypatch):
    from causalplay.envs import make_batch

    from causalplay.agents import bayesian

    env = make_batch("causalplay/Nexiom-v0", 2, seed=0)
    obs = env.reset()
    agent = bayesian.NexiomEIGAgent(seed=0)
    agent.reset(env.info(), obs)
    D = agent.cand.shape[0]
    planted = torch.zeros(2, D, dtype=torch.float64)
    planted[:, 1], planted[:, 4] = 0.6, 0.6 + ULP64  # two trials tie; the later is nudged up
    monkeypatch.setattr(bayesian, "eig_bits", lambda *a, **k: planted)
    out = agent.act(obs, torch.ones(2, dtype=torch.bool))
    assert out[:, :agent.task.n_objects].tolist() == [agent.cand[1].tolist()] * 2


def test_dag_regression_agents_tie_to_the_lowest_variable():
    from causalplay.agents.dag import TotalCorrAgent

    class Fake:
        def _candidates(self):
            return torch.ones(1, 4, dtype=torch.bool)

        def _intervention(self, var, positive):
            return var

    slope = torch.tensor([[0.1, -0.5, 0.5 + ULP64, 0.2]], dtype=torch.float64)
    assert TotalCorrAgent._choose(Fake(), slope).tolist() == [1]  # |slope| ties between 1 and 2
