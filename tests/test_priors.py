import math

import pytest
import torch

from causalplay.core.priors import BlicketSetPrior, all_subsets


@pytest.mark.parametrize("prior", [BlicketSetPrior(5, p=0.3), BlicketSetPrior(5, counts={1: 1, 3: 3}),
                                   BlicketSetPrior(4, p=0.0)])
def test_support_sums_to_one(prior, float64):
    sets = prior.enumerate_support(expand=False)
    assert torch.logsumexp(prior.log_prob(sets), 0).item() == pytest.approx(0.0, abs=1e-12)


def test_count_prior_by_hand(float64):
    prior = BlicketSetPrior(4, counts={2: 1.0})
    assert prior.enumerate_support(expand=False).shape == (6, 4)  # C(4, 2)
    x = torch.tensor([1.0, 0, 1, 0])
    assert prior.log_prob(x).exp().item() == pytest.approx(1 / 6)
    assert prior.log_prob(torch.tensor([1.0, 1, 1, 0])).item() == -math.inf


def test_sampling_frequencies():
    torch.manual_seed(0)
    prior = BlicketSetPrior(4, counts={1: 1.0, 2: 1.0})
    x = prior.sample((20000,))
    sizes = x.sum(-1)
    # Binomial sd of a 0.5 frequency over 20000 draws is 0.0035; 0.02 is > 5 sd.
    assert (sizes == 1).float().mean().item() == pytest.approx(0.5, abs=0.02)
    assert x[sizes == 2].mean(0).tolist() == pytest.approx([0.5] * 4, abs=0.02)


def test_subsets_order():
    assert all_subsets(2).tolist() == [[0, 0], [1, 0], [0, 1], [1, 1]]
