import math

import pytest
import torch

from causalplay.rules import Sigmoid, Threshold, conjunctive, disjunctive, make_rule, make_rules


def test_tables_by_hand():
    k = torch.arange(4.0)
    assert disjunctive().p_lit(k).tolist() == [0, 1, 1, 1]
    assert conjunctive().p_lit(k).tolist() == [0, 0, 1, 1]
    assert Threshold(m=3).p_lit(k).tolist() == [0, 0, 0, 1]
    assert disjunctive(0.1).p_lit(k).tolist() == pytest.approx([0.1, 0.9, 0.9, 0.9])


def test_sigmoid_closed_form_and_limits():
    s = Sigmoid(gain=2.0, bias=1.5)
    assert s.p_lit(torch.tensor([1.0])).item() == pytest.approx(1 / (1 + math.exp(1.0)))
    k = torch.arange(4.0)
    # Large gain: bias 0.5 is disjunctive, bias 1.5 conjunctive (Lucas & Griffiths 2010).
    assert torch.allclose(Sigmoid(gain=60, bias=0.5).p_lit(k), disjunctive().p_lit(k), atol=1e-12)
    assert torch.allclose(Sigmoid(gain=60, bias=1.5).p_lit(k), conjunctive().p_lit(k), atol=1e-12)


def test_names_and_errors():
    assert make_rule("conjunctive", 0.05).name == "conjunctive"
    assert make_rule("conjunctive", 0.05).noise == 0.05
    assert make_rule("threshold3").m == 3
    with pytest.raises(ValueError, match="unknown rule 'sometimes'"):
        make_rule("sometimes")
    with pytest.raises(ValueError, match=r"noise must be a probability in \[0, 1\], got 1.5"):
        make_rule("disjunctive", 1.5)
    with pytest.raises(ValueError, match="distinct names"):
        make_rules(["disjunctive", "disjunctive"])
    with pytest.raises(ValueError, match="gain must be > 0"):
        Sigmoid(gain=-1.0)
    with pytest.raises(TypeError):
        make_rule(3)
