"""BatchBeliefs.observe_soft_ (Bayes' rule with a likelihood per hypothesis) and reset_, against posteriors
worked by hand and against the exact update observe_."""

from __future__ import annotations

import pytest
import torch

from causalplay.core.beliefs import BatchBeliefs
from causalplay.core.exact import log_likelihood
from causalplay.core.spec import HypothesisSpace, WorldSpec


def _space(n: int, rules=("disjunctive",), noise: float = 0.0) -> HypothesisSpace:
    return HypothesisSpace.build(WorldSpec.from_options(n, rules, blicket_prior=0.5, noise=noise),
                                 dtype=torch.float64)


def test_soft_reading_of_the_light_by_hand():
    # 2 objects, disjunctive noiseless machine, uniform prior over the 4 sets {}, {0}, {1}, {0, 1} (codes 0..3).
    # Object 0 goes on; the reader says "lit" and is right with probability 0.8, so the likelihood of that reading
    # is 0.8 where the machine lights (0 is a blicket) and 0.2 where it stays dark. Bayes by hand:
    # weights 1/4 * (0.2, 0.8, 0.2, 0.8), sum 0.5 -> posterior (0.1, 0.4, 0.1, 0.4).
    space = _space(2)
    assert space.n_hypotheses == 4
    post = BatchBeliefs.prior(space, 3)
    lik = torch.tensor([[0.2, 0.8, 0.2, 0.8],
                        # row 2: object 1 was on with probability 0.9 (else nothing was), the light surely dark:
                        # P(dark | set) = 0.9 [1 not in set] + 0.1 -> (1, 1, 0.1, 0.1)
                        [1.0, 1.0, 0.1, 0.1]], dtype=torch.float64)
    post.observe_soft_(lik.log(), torch.tensor([True, False, True]))
    torch.testing.assert_close(post.log_w[0].exp(), torch.tensor([0.1, 0.4, 0.1, 0.4], dtype=torch.float64),
                               rtol=0, atol=1e-15)
    # row 1 was not updated: still the prior
    torch.testing.assert_close(post.log_w[1].exp(), torch.full((4,), 0.25, dtype=torch.float64), rtol=0, atol=0)
    # row 2: weights 1/4 * (1, 1, 0.1, 0.1), sum 0.55 -> (1/2.2, 1/2.2, 0.1/2.2, 0.1/2.2)
    torch.testing.assert_close(post.log_w[2].exp(), torch.tensor([1, 1, 0.1, 0.1], dtype=torch.float64) / 2.2,
                               rtol=0, atol=1e-15)


def test_two_soft_readings_accumulate_by_hand():
    # one object, rules disjunctive and conjunctive (at least two blickets on): hypotheses (rule-major) D{}, D{0},
    # C{}, C{0}, prior 1/4 each. Object 0 goes on twice; each time the light is read as lit with confidence 0.7
    # (likelihood 0.7 where the noiseless machine lights, only D{0}; 0.3 elsewhere).
    # Two readings: (0.09, 0.49, 0.09, 0.09) / 0.76; P(disjunctive) = 0.58 / 0.76.
    space = _space(1, ("disjunctive", "conjunctive"))
    post = BatchBeliefs.prior(space, 1)
    on = torch.ones(2, 1, 1, dtype=torch.float64)
    lit_ll = log_likelihood(space, on[:1], torch.ones(1, 1, dtype=torch.float64))  # 0 or -inf
    reading = torch.logaddexp(lit_ll + torch.log(torch.tensor(0.7, dtype=torch.float64)),
                              torch.log1p(-lit_ll.exp()) + torch.log(torch.tensor(0.3, dtype=torch.float64)))
    post.observe_soft_(reading)
    post.observe_soft_(reading, torch.tensor([0]))  # indices pick rows too
    want = torch.tensor([0.09, 0.49, 0.09, 0.09], dtype=torch.float64) / 0.76
    torch.testing.assert_close(post.log_w[0].exp(), want, rtol=0, atol=1e-15)
    assert float(post.rule_marginals()[0, 0]) == pytest.approx(0.58 / 0.76, abs=1e-15)


@pytest.mark.parametrize("active", [None, [True, False, True, True, False]])
def test_certain_evidence_is_the_exact_update(active):
    """observe_soft_ with the machine's own likelihood of a certain panel is observe_, row for row."""
    space = _space(3, ("disjunctive", "conjunctive"), noise=0.05)
    g = torch.Generator().manual_seed(0)
    a, b = BatchBeliefs.prior(space, 5), BatchBeliefs.prior(space, 5)
    mask = None if active is None else torch.tensor(active)
    for _ in range(4):
        on = torch.rand(5, 3, generator=g) < 0.5
        lit = torch.rand(5, generator=g) < 0.5
        a.observe_(on, lit, mask)
        ll = log_likelihood(space, on[:, None].double(), lit[:, None].double())
        b.observe_soft_(ll if mask is None else ll[mask], mask)
    torch.testing.assert_close(b.log_w, a.log_w, rtol=0, atol=1e-14)
    if mask is not None:
        torch.testing.assert_close(b.log_w[~mask], space.log_prior.expand(2, -1), rtol=0, atol=0)


def test_evidence_nothing_explains_is_nan_and_reset_restarts_the_rows():
    space = _space(2)
    post = BatchBeliefs.prior(space, 2)
    post.observe_soft_(torch.full((1, 4), -torch.inf, dtype=torch.float64), [0])
    assert bool(torch.isnan(post.log_w[0]).all()) and bool(torch.isfinite(post.log_w[1]).all())
    post.reset_(torch.tensor([True, False]))
    torch.testing.assert_close(post.log_w, space.log_prior.expand(2, -1), rtol=0, atol=0)


def test_bad_log_lik_shape_is_named():
    post = BatchBeliefs.prior(_space(2), 3)
    with pytest.raises(ValueError, match=r"log_lik must be a tensor \[2, 4\].*got \(3, 4\)"):
        post.observe_soft_(torch.zeros(3, 4, dtype=torch.float64), torch.tensor([0, 2]))
    with pytest.raises(ValueError, match=r"log_lik must be a tensor \[3, 4\].*got \(4,\)"):
        post.observe_soft_(torch.zeros(4, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"got list"):
        post.observe_soft_([[0.0] * 4] * 3)
