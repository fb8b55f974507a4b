"""Agents and people on the same task: the exact EIG learner plays ``causalplay/Nexiom-v0``.

People (``causalplay/data/nexiom/participants.csv``) chose when to stop testing and then judged the blickets
and the rule; :func:`run_nexiom` scores the EIG learner by the same criteria (``blickets_correct``,
``rule_correct``, tests used), per rule, so :func:`compare_nexiom` can put both side by side.
"""

from __future__ import annotations

from importlib import resources

import pandas as pd
import torch

from causalplay.agents.base import TaskInfo, task_beliefs
from causalplay.core.eig import eig_bits
from causalplay.core.history import all_trials

__all__ = ["run_nexiom", "human_nexiom", "compare_nexiom"]


def run_nexiom(episodes: int = 1000, seed: int = 0, budget: int = 16, min_eig: float = 1e-9) -> pd.DataFrame:
    """Play Nexiom with the exact EIG learner; one row per episode.

    The learner knows the count (2) and both candidate rules (uniform prior). Each step it tests the trial of
    maximal EIG about (blicket set, rule) -- the people judged both -- and answers with the MAP set and the
    rule's posterior once no trial carries more than ``min_eig`` bits (nothing left to learn) or the budget
    is used up.
    """
    from causalplay.envs import make_batch

    env = make_batch("causalplay/Nexiom-v0", episodes, seed=seed, budget=budget)
    obs = env.reset()
    N = env.n_objects
    post = task_beliefs(TaskInfo.from_env(env), episodes, dtype=torch.float64)
    post.condition_count_(env.n_blickets)
    post.log_w = post.log_w - torch.logsumexp(post.log_w, -1, keepdim=True)  # the count mask only masks
    cand = torch.as_tensor(all_trials(N)).double()
    while not bool(env.done.all()):
        active = ~env.done
        eig = eig_bits(post.space, post.log_w, cand, "joint")
        best = eig.max(-1)
        stop = (best.values <= min_eig) | (env.tests >= budget)
        guess = post.code_to_set(post.map_code()).double()
        p_conj = post.log_w.exp().reshape(-1, post.space.n_rules, post.space.n_sets).sum(-1)[:, 1]
        action = torch.cat([cand[best.indices], 0.25 + 0.5 * guess, stop.double()[:, None],
                            p_conj.clamp(0, 1)[:, None]], 1)
        obs, _, _, _ = env.step(action)
        ran = active & ~stop
        lay = env.layout
        post.observe_(lay.get(obs, "on") > 0.5, lay.get(obs, "lit")[:, 0] > 0.5, ran)
    rec = env.record()
    return pd.DataFrame({"rule": rec["rule"], "blickets_correct": rec["blickets_correct"],
                         "rule_correct": rec["rule_correct"], "n_tests": rec["n_tests"]})


def human_nexiom() -> pd.DataFrame:
    """The participants' table (``causalplay/data/nexiom/participants.csv``)."""
    path = resources.files("causalplay.data").joinpath("nexiom/participants.csv")
    with resources.as_file(path) as p:
        return pd.read_csv(p)


def compare_nexiom(episodes: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Mean ``blickets_correct``, ``rule_correct`` and ``n_tests`` per rule for people and the EIG learner."""
    cols = ["blickets_correct", "rule_correct", "n_tests"]
    people = human_nexiom().groupby("rule")[cols].mean().assign(who="people", n=human_nexiom().groupby("rule")
                                                                  .size())
    agent = run_nexiom(episodes, seed)
    eig = agent.groupby("rule")[cols].mean().assign(who="eig", n=agent.groupby("rule").size())
    return pd.concat([people, eig]).reset_index()
