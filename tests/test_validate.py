"""Table-driven bad and unusual input across the public engine surface (issue 11): every case is either a clear
error naming the argument and the value, or the right answer -- never a raw torch/numpy/pandas traceback."""

import random

import numpy as np
import pandas as pd
import pyro
import pytest
import torch

import causalplay
from causalplay.core.beliefs import BeliefsLike, single_thread
from causalplay.core.codes import codes_to_vectors, vectors_to_codes
from causalplay.core.resources import max_memory
from causalplay.learners.svi import SVIOptions

H = [([0], True)]


def _beliefs():
    return causalplay.infer([([0, 1], True)], 3, noise=0.1)


BAD = [
    # (call, exception, message regex)
    (lambda: causalplay.infer(H, 3, noise="0.1"), TypeError, r"noise must be a probability in \[0, 1\].*'0.1' \(str\)"),
    (lambda: causalplay.infer(H, 3, noise=float("nan")), ValueError,
     r"noise must be a probability in \[0, 1\], got nan"),
    (lambda: causalplay.infer(H, 3, noise=True), TypeError, r"noise must be a probability .* got True \(bool\)"),
    (lambda: causalplay.infer(H, 3, noise=np.array([0.1, 0.2])), TypeError, r"noise must be a probability"),
    (lambda: causalplay.infer(H, 3, blicket_prior=torch.tensor(1.5)), ValueError,
     r"blicket_prior must be a probability in \[0, 1\], got 1.5"),
    (lambda: causalplay.infer(H, 3.0), ValueError, r"n_objects must be a positive integer, got 3.0"),
    (lambda: causalplay.infer(H, 0), ValueError, r"n_objects must be an integer >= 1, got 0"),
    (lambda: causalplay.infer(H, 3, n_blickets=2.5), TypeError, r"n_blickets must be an int, .* got 2.5"),
    (lambda: causalplay.infer(H, 3, n_blickets=[2.5]), ValueError,
     r"count 2.5 is not an integer in \[0, n_objects=3\]"),
    (lambda: causalplay.infer(H, 3, n_blickets={1: -1.0}), ValueError, r"weight -1.0 of count 1"),
    (lambda: causalplay.infer(H, 3, n_blickets=[1, 1]), ValueError, r"count 1 is given twice"),
    (lambda: causalplay.infer(H, 3, rule_prior="disjunctive"), TypeError, r"rule_prior must be a dict"),
    (lambda: causalplay.infer(H, 3, rule_prior=[1.0, float("nan")]), ValueError,
     r"rule_prior\['conjunctive'\] must be a finite weight >= 0, got nan"),
    (lambda: causalplay.infer(H, 3, method=None), ValueError,
     r"method must be one of 'auto', 'exact', 'svi', got None"),
    (lambda: causalplay.infer(H, 3, dtype=torch.float16), ValueError, r"dtype must be torch.float32 or torch.float64"),
    (lambda: causalplay.infer_batch([H], 3, dtype=torch.int64), ValueError,
     r"dtype must be torch.float32 or torch.float64, got torch.int64"),
    (lambda: causalplay.infer_overhypothesis([[H]], 3, dtype=torch.bfloat16), ValueError,
     r"dtype must be torch.float32 or torch.float64, got torch.bfloat16"),
    (lambda: causalplay.HypothesisSpace.build(causalplay.WorldSpec(3), dtype="float64"), ValueError,
     r"dtype must be torch.float32 or torch.float64, got 'float64'"),
    (lambda: causalplay.infer(H, 3, device="gpu7"), ValueError, r"device 'gpu7' is not a torch device"),
    (lambda: causalplay.infer(H, 3, max_memory=-5), ValueError, r"max_memory must be in \(0, inf\], got -5"),
    (lambda: causalplay.infer(H, 3, max_memory="lots"), ValueError, r"max_memory must be a positive number of bytes"),
    (lambda: causalplay.infer(H, 3, threads=0), ValueError, r"threads must be an integer >= 1, got 0"),
    (lambda: causalplay.infer(H, 3, svi_options=[1]), TypeError, r"svi_options must be a dict"),
    (lambda: causalplay.infer(H, 3, method="svi", svi_options=dict(steps=0)), ValueError,
     r"SVIOptions.steps must be an integer >= 1, got 0"),
    (lambda: causalplay.infer(H, 3, method="svi", svi_options=dict(particles=0)), ValueError,
     r"SVIOptions.particles must be an integer >= 1, got 0"),
    (lambda: causalplay.infer(H, 3, method="svi", svi_options=dict(lr=-1.0)), ValueError,
     r"lr must be in \(0, inf\], got -1.0"),
    (lambda: causalplay.infer(H, 3, method="svi", svi_options=dict(lr=float("inf"))), ValueError,
     r"lr must be a finite"),
    (lambda: causalplay.infer(H, 3, method="svi", svi_options=dict(steps=2.0)), TypeError,
     r"SVIOptions.steps must be an integer .* got 2.0 \(float\)"),
    (lambda: causalplay.infer(H, 3, method="svi", blicket_prior=0.0), ValueError,
     r"SVI needs an independent blicket prior strictly between 0 and 1, got blicket_prior=0"),
    (lambda: causalplay.infer(H, 3, method="svi", blicket_prior=1.0), ValueError, r"use method='exact' or 'auto'"),
    (lambda: causalplay.infer(H, 40, n_blickets=20), ValueError, r"allows 275,683,473,959,... hypotheses|more than"),
    (lambda: causalplay.infer(H, 30, method="exact"), ValueError, r"too many to enumerate; use method='svi'"),
    (lambda: causalplay.infer(H, 3, rules=("disjunctive", "disjunctive")), ValueError, r"distinct names"),
    (lambda: causalplay.infer(H, 3, rules="threshold0"), ValueError, r"threshold m must be an integer >= 1, got 0"),
    (lambda: causalplay.Sigmoid(gain="x"), ValueError, r"sigmoid gain must be a real number"),
    (lambda: _beliefs().hypotheses(top=-1), ValueError, r"top must be an integer >= 1, got -1"),
    (lambda: _beliefs().hypotheses(top=0), ValueError, r"top must be an integer >= 1, got 0"),
    (lambda: _beliefs().hypotheses(top=1.5), TypeError, r"top must be an integer .* got 1.5"),
    (lambda: _beliefs().eig(target=None), ValueError, r"unknown EIG target None"),
    (lambda: _beliefs().update([0], 2), ValueError, r"lit must be booleans or 0/1"),
    (lambda: _beliefs().update([0], float("nan")), ValueError, r"lit must be booleans or 0/1"),
    (lambda: causalplay.eig_bits(_beliefs().space, _beliefs().log_w[None], None, method="fast"), ValueError,
     r"method must be 'auto', 'matmul' or 'transform'"),
    (lambda: causalplay.eig_bits(_beliefs().space, _beliefs().log_w[None], None, "blickets", method="transform"),
     ValueError, r"method='transform' covers the joint and rule targets"),
    (lambda: causalplay.infer_batch("abc", 2), TypeError, r"histories must be a DataFrame, a HistoryBatch"),
    (lambda: causalplay.infer_batch([], 2), ValueError, r"histories is empty"),
    (lambda: causalplay.infer_batch([[]]), ValueError, r"no observations; pass n_objects"),
    (lambda: causalplay.infer_batch([H, [(np.array([True, False, True]), True)], [(np.array([True, False]), True)]]),
     ValueError, r"histories\[2\]: history item 0: 0/1 vector \[1, 0\] has length 2, expected n_objects=3"),
    (lambda: causalplay.infer_batch(pd.DataFrame({"episode": [], "objects": [], "lit": []}), 2), ValueError,
     r"no rows"),
    (lambda: causalplay.infer_batch(pd.DataFrame({"episode": ["a", None], "objects": [[0], [1]], "lit": [1, 0]}), 2),
     ValueError, r"column 'episode' has a missing label \(NaN/None\) in row 1"),
    (lambda: causalplay.infer_batch(pd.DataFrame({"episode": ["a", np.nan], "objects": [[0], [1]], "lit": [1, 0]}), 2),
     ValueError, r"missing label"),
    (lambda: causalplay.infer_batch(pd.DataFrame({"episode": ["a", "a"], "objects": [np.array([True, False]),
                                                                                      np.array([True, False, True])],
                                                  "lit": [1, 0]})),
     ValueError, r"row 0 \('objects'\): 0/1 vector has length 2 but other rows have 3 objects"),
    (lambda: causalplay.infer_batch(pd.DataFrame({"episode": ["a"], "objects": [[0]], "lit": ["yes"]}), 2),
     ValueError, r"row 0: 'lit' must be True/False \(or 1/0\), got 'yes'"),
    (lambda: causalplay.infer_batch(pd.DataFrame({"episode": ["a"], "objects": [[0]], "lit": [np.nan]}), 2),
     ValueError, r"'lit' must be True/False"),
    (lambda: causalplay.infer_batch(pd.DataFrame({"episode": ["a"], "trial": [np.nan], "objects": [[0]], "lit": [1]}),
                                    2), ValueError, r"column 'trial' has a missing value in row 0"),
    (lambda: SVIOptions(seed=-1), ValueError, r"seed must be an integer >= 0, got -1"),
    (lambda: causalplay.infer(H, 3, method="svi", svi_options={"noise_floor": 0.0}), ValueError,
     r"noise_floor must be in \(0, 0.5\], got 0.0"),
    (lambda: causalplay.WorldSpec.from_options(3, noise=2), ValueError,
     r"noise must be a probability in \[0, 1\], got 2"),
    (lambda: causalplay.HypothesisSpace.build("spec"), TypeError, r"spec must be a causalplay.WorldSpec"),
]


@pytest.mark.parametrize("call,exc,match", BAD, ids=[f"case{i}" for i in range(len(BAD))])
def test_bad_input_is_a_clear_error(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


GOOD_SCALARS = [
    dict(noise=np.float32(0.25)),
    dict(noise=torch.tensor(0.25)),
    dict(blicket_prior=np.float64(0.25)),
    dict(n_blickets=np.int64(2)),
    dict(n_blickets=torch.tensor(2)),
    dict(n_blickets={np.int32(1): np.float32(0.5), 2: 0.5}),
    dict(rule_prior=np.array([0.25, 0.75])),
    dict(rule_prior={"disjunctive": np.float32(1.0)}),
]


@pytest.mark.parametrize("kw", GOOD_SCALARS, ids=[str(i) for i in range(len(GOOD_SCALARS))])
def test_numpy_and_torch_scalars_are_numbers(kw):
    def plain(x):
        if isinstance(x, dict):
            return {plain(k): plain(val) for k, val in x.items()}
        if isinstance(x, np.ndarray):
            return x.tolist()
        return x.item() if isinstance(x, (np.generic, torch.Tensor)) else x

    got = causalplay.infer([([0, 1], True)], 3, **kw)
    want = causalplay.infer([([0, 1], True)], 3, **{k: plain(val) for k, val in kw.items()})
    np.testing.assert_array_equal(got.blicket_prob, want.blicket_prob)
    # np.float32(0.25) is exactly 0.25, so the answer equals the Python-float one to the last digit
    assert got.rule_prob == want.rule_prob


def test_infer_batch_keeps_first_appearance_order_and_sorts_within_episode():
    df = pd.DataFrame({"episode": ["z", "a", "z", "m"], "trial": [2, 1, 1, 1],
                       "objects": [[0], [1], [0, 1], [0]], "lit": [True, False, True, True]})
    bb = causalplay.infer_batch(df, 2, rules="disjunctive", blicket_prior=1 / 3)
    assert bb.episodes == ["z", "a", "m"]
    # z (sorted by trial): AB+, A+ -> backward blocking; a: B- ; m: A+
    np.testing.assert_allclose(bb.blicket_probs, [[1, 1 / 3], [1 / 3, 0], [1, 1 / 3]], atol=1e-12)
    # Without an order column rows keep their order within an episode.
    bb2 = causalplay.infer_batch(df.drop(columns="trial"), 2, rules="disjunctive", blicket_prior=1 / 3)
    assert bb2.episodes == ["z", "a", "m"]
    np.testing.assert_allclose(bb2.blicket_probs, bb.blicket_probs, atol=1e-12)


def test_hypotheses_top_is_the_head_of_the_full_table():
    b = causalplay.infer([([0, 1], True)], 4, noise=0.1)
    full = b.hypotheses()
    for top in (1, 3, 7, len(full), len(full) + 5):
        pd.testing.assert_frame_equal(b.hypotheses(top=top), full.head(top))
    assert np.isclose(full["prob"].sum(), 1.0)


def test_auto_says_which_method_and_both_follow_the_protocol():
    exact = causalplay.infer(H, 3)
    assert exact.method == "exact" and isinstance(exact, BeliefsLike)
    assert causalplay.choose_method("auto", causalplay.WorldSpec.from_options(30)) == "svi"
    assert causalplay.choose_method("auto", causalplay.WorldSpec.from_options(30, n_blickets=2)) == "exact"
    svi = causalplay.infer([([0, 1], True), ([0], True)], 3, rules="disjunctive", method="svi",
                           svi_options=dict(steps=50, particles=8, lr=0.1))
    assert svi.method == "svi" and isinstance(svi, BeliefsLike)
    assert "SVIBeliefs" in causalplay.__all__ and causalplay.SVIBeliefs is type(svi)
    # entropy of the guide in closed form: H(rule) + sum_r q(r) sum_i H_b(q_ri); one rule here
    q = 1 / (1 + np.exp(-svi.result.blicket_logits[0, 0].astype(np.float64)))
    hb = -(q * np.log2(q) + (1 - q) * np.log2(1 - q))
    assert svi.entropy == pytest.approx(hb.sum(), rel=1e-9)
    more = svi.update([1], False)
    assert more.method == "svi" and len(more.history) == 3 and more.blicket_prob[1] < svi.blicket_prob[1]
    with pytest.raises(NotImplementedError, match="do not enumerate hypotheses"):
        svi.hypotheses(top=3)


def test_svi_leaves_global_state_alone():
    pyro.get_param_store().clear()
    pyro.param("mine", torch.tensor(1.0))
    torch.manual_seed(123)
    random.seed(5)
    before = (torch.get_rng_state().clone(), random.getstate())
    causalplay.infer(H, 3, rules="disjunctive", method="svi", svi_options=dict(steps=5, particles=4))
    assert torch.equal(torch.get_rng_state(), before[0]) and random.getstate() == before[1]
    assert list(pyro.get_param_store().keys()) == ["mine"]
    pyro.get_param_store().clear()


def test_threads_are_restored():
    old = torch.get_num_threads()
    with single_thread(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == old
    b = causalplay.infer(H, 3)
    b.eig()
    assert torch.get_num_threads() == old


def test_set_code_helpers_round_trip():
    assert causalplay.set_to_code([0, 2]) == 5 and causalplay.code_to_set(5) == (0, 2)
    assert causalplay.code_to_set(0) == () and causalplay.set_to_code([]) == 0
    rng = np.random.default_rng(0)
    x = rng.random((50, 13)) < 0.5
    codes = vectors_to_codes(x)
    assert codes.tolist() == [causalplay.set_to_code(np.flatnonzero(r).tolist()) for r in x]
    np.testing.assert_array_equal(codes_to_vectors(codes, 13), x)
    t = torch.as_tensor(x)
    assert torch.equal(codes_to_vectors(vectors_to_codes(t), 13), t)
    with pytest.raises(ValueError, match="object index must be an integer >= 0, got -1"):
        causalplay.set_to_code([-1])


def test_max_memory_parsing():
    assert max_memory("2GiB") == 2 * 1024**3 and max_memory("500MB") == 500 * 1000**2
    assert max_memory(1e6) == 1_000_000
    assert 256 << 20 <= max_memory(None) <= 2 << 30
