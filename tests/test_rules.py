import math

import pytest
import torch

from causalplay.core.rules import Sigmoid, Threshold, conjunctive, disjunctive, make_rule, make_rules


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


# ---- closed forms for every method and the exact error texts (mutation-testing survivors of rules) ----


def test_log_tables_by_hand_including_tiny_and_full_noise():
    """log_table rows are log P(unlit | k) and log P(lit | k), k = 0..N, written out here in closed form; with
    noise 1e-17 the "off" counts keep log(1e-17) (1 - noise would round to 1), noise 1 always flips."""
    def lt(rule, n=3):
        return rule.log_table(n).tolist()

    inf = math.inf
    assert lt(disjunctive()) == [[0.0, -inf, -inf, -inf], [-inf, 0.0, 0.0, 0.0]]
    assert lt(Threshold(m=3), 4) == [[0.0, 0.0, 0.0, -inf, -inf], [-inf, -inf, -inf, 0.0, 0.0]]
    e = 0.1
    for got, want in zip(lt(conjunctive(e)), [[math.log(1 - e)] * 2 + [math.log(e)] * 2,
                                              [math.log(e)] * 2 + [math.log(1 - e)] * 2], strict=True):
        assert got == pytest.approx(want, abs=1e-15)
    tiny = lt(disjunctive(1e-17))
    assert tiny[1][0] == pytest.approx(math.log(1e-17), abs=1e-12) and tiny[0][1] == pytest.approx(math.log(1e-17))
    assert tiny[1][1] == pytest.approx(-1e-17, abs=1e-30) and tiny[1][1] < 0.0  # log1p(-1e-17), not log(1) = 0
    assert lt(disjunctive(1.0)) == [[-inf, 0.0, 0.0, 0.0], [0.0, -inf, -inf, -inf]]
    # a sigmoid: log f = -log1p(exp(-x)), log(1 - f) = -log1p(exp(x)), x = gain (k - bias); both tails exact
    s = Sigmoid(gain=60.0, bias=0.5)
    x = [60.0 * (k - 0.5) for k in range(4)]
    lo, li = s.log_table(3).tolist()
    assert li == pytest.approx([-math.log1p(math.exp(-v)) for v in x], rel=1e-12, abs=1e-300)
    assert lo == pytest.approx([-v - math.log1p(math.exp(-v)) if v > 0 else -math.log1p(math.exp(v)) for v in x],
                               rel=1e-12)
    assert lo[3] == pytest.approx(-150.0, rel=1e-12)  # 1 - f rounds to 0 in float64; its log does not
    lf, lg = s.log_base(torch.tensor([3.0], dtype=torch.float64))
    assert lg.item() == pytest.approx(-150.0, rel=1e-12) and lf.item() == pytest.approx(-math.exp(-150.0), abs=1e-70)
    sn = Sigmoid(gain=2.0, bias=1.3, noise=0.2)
    f = [1 / (1 + math.exp(-2.0 * (k - 1.3))) for k in range(3)]
    assert sn.log_table(2).exp().tolist()[1] == pytest.approx([0.8 * v + 0.2 * (1 - v) for v in f], abs=1e-15)
    assert sn.log_table(2).exp().tolist()[0] == pytest.approx([0.8 * (1 - v) + 0.2 * v for v in f], abs=1e-15)
    # the base class's log_base: log f and log(1 - f) of the noiseless response
    lf, lg = conjunctive(0.3).log_base(torch.tensor([1.0, 2.0], dtype=torch.float64))
    assert lf.tolist() == [-inf, 0.0] and lg.tolist() == [0.0, -inf]
    t32 = disjunctive(0.1).log_table(2, dtype=torch.float32)
    assert t32.dtype == torch.float32 and t32.shape == (2, 3)


def test_tables_dtypes_integer_counts_and_determinism():
    t = conjunctive(0.25).table(3)
    assert t.dtype == torch.float64 and t.tolist() == [0.25, 0.25, 0.75, 0.75]
    assert disjunctive().table(1, dtype=torch.float32).dtype == torch.float32
    s = Sigmoid(gain=2.0, bias=1.3)
    assert s.table(2).tolist() == pytest.approx([1 / (1 + math.exp(-2.0 * (k - 1.3))) for k in range(3)], abs=1e-15)
    # integer counts are converted to the default floating dtype
    out = disjunctive().p_lit(torch.tensor([0, 1, 2]))
    assert out.dtype == torch.get_default_dtype() and out.tolist() == [0.0, 1.0, 1.0]
    assert conjunctive(0.1).p_lit(torch.tensor([1, 2])).tolist() == pytest.approx([0.1, 0.9])
    assert [disjunctive().deterministic, disjunctive(0.01).deterministic, Sigmoid().deterministic] == [True, False,
                                                                                                      False]
    assert Sigmoid().gain == 10.0 and Sigmoid().bias == 0.5 and Sigmoid().noise == 0.0 and Threshold().m == 1
    # the tables are made on the device asked for ("meta": shapes only, so this runs without a GPU)
    for rule in (conjunctive(0.1), disjunctive(), Sigmoid(gain=2.0, bias=1.3)):
        t, lt = rule.table(3, device="meta"), rule.log_table(3, device="meta")
        assert (t.device.type, t.shape, lt.device.type, lt.shape) == ("meta", (4,), "meta", (2, 4))


def test_constructors_store_plain_numbers_and_name_their_errors():
    import numpy as np

    r = Threshold(m=np.int64(2), noise=np.float32(0.5))
    assert type(r.m) is int and r.m == 2 and type(r.noise) is float and r.name == "conjunctive"
    s = Sigmoid(gain=2, bias=np.float64(1.3))
    assert type(s.gain) is float and type(s.bias) is float and s.name == "sigmoid(gain=2,bias=1.3)"
    assert Sigmoid(gain=1e-9).gain == 1e-9
    assert make_rule("threshold12").m == 12 and make_rule("threshold12").name == "threshold12"
    cases = [
        (lambda: Threshold(m=0), ValueError, "threshold m must be an integer >= 1, got 0"),
        (lambda: Threshold(m=1.5), ValueError, "threshold m must be an integer (Python, numpy or 0-d torch), got "
                                               "1.5 (float)"),
        (lambda: Sigmoid(gain="a"), ValueError, "sigmoid gain must be a real number (Python, numpy or 0-d torch "
                                                "scalar), got 'a' (str)"),
        (lambda: Sigmoid(bias="b"), ValueError, "sigmoid bias must be a real number (Python, numpy or 0-d torch "
                                                "scalar), got 'b' (str)"),
        (lambda: Sigmoid(gain=0.0), ValueError, "sigmoid gain must be > 0, got 0.0"),
        (lambda: Threshold(noise=2), ValueError, "noise must be a probability in [0, 1], got 2.0"),
        (lambda: make_rule("disjunctive", "x"), TypeError, "noise must be a probability in [0, 1] (a Python, numpy "
                                                           "or 0-d torch number), got 'x' (str)"),
        (lambda: make_rule(3), TypeError, "a rule must be a rule name or a causalplay.core.rules.Rule, got 3"),
        (lambda: make_rules(5), TypeError, "rules must be a rule or an iterable of rules, got 5"),
        (lambda: make_rules(["disjunctive", 3]), TypeError,
         "a rule must be a rule name or a causalplay.core.rules.Rule, got 3"),
        (lambda: make_rules([]), ValueError, "rules must name at least one rule"),
        (lambda: make_rules(["disjunctive", disjunctive(0.1)]), ValueError, "rules must have distinct names, got "
                                                                            "['disjunctive', 'disjunctive']"),
    ]
    for make, exc, msg in cases:
        with pytest.raises(exc) as e:
            make()
        assert str(e.value) == msg
    for name in ("threshold", "thresholdx", "Disjunctive", "threshold-1"):
        with pytest.raises(ValueError) as e:
            make_rule(name)
        assert str(e.value) == (f"unknown rule {name!r}; expected one of ('disjunctive', 'conjunctive', "
                                "'threshold<m>') or a causalplay.core.rules.Rule")
    assert make_rule("disjunctive") == disjunctive() and make_rule("conjunctive").noise == 0.0  # default noise 0
    # noise 1 flips every response: P(lit | k) = 1 - f(k)
    assert disjunctive(1.0).p_lit(torch.arange(3.0)).tolist() == [1.0, 0.0, 0.0]
    # noise applies to named rules; a Rule keeps its own
    assert make_rule("disjunctive", 0.2) == disjunctive(0.2) and make_rule("threshold3", 0.2).noise == 0.2
    sig = Sigmoid(noise=0.05)
    assert make_rule(sig, 0.2) is sig
    assert make_rules("conjunctive", 0.1) == (conjunctive(0.1),) and make_rules(sig) == (sig,)
    assert make_rules(r for r in ("disjunctive", "conjunctive")) == (disjunctive(), conjunctive())
