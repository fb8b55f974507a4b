import numpy as np
import pytest
import torch

import causalplay


@pytest.mark.parametrize("history,n,exc,match", [
    ([([0, 3], True)], 3, ValueError, r"object index 3 is outside range\(n_objects=3\)"),
    ([([-1], True)], None, ValueError, "object index -1 is negative"),
    ([([0, 0], True)], 2, ValueError, r"repeat an object"),
    ([([0.5], True)], 2, TypeError, "object index 0.5"),
    ([("01", True)], 2, TypeError, "objects must be an index list"),
    ([([0], "yes")], 2, TypeError, "lit must be True/False"),
    ([([0], True, 3)], 2, TypeError, r"history item 0 must be an \(objects, lit\) pair"),
    ([[0, 1]], 2, TypeError, "objects must be an index list such as"),
    (5, 2, TypeError, "history must be a list"),
    ([(np.array([True, False, True]), True)], 2, ValueError, "has length 3, expected n_objects=2"),
    ([(torch.tensor(2), True)], 3, ValueError, r"0-d Tensor tensor\(2\); a single object is a one-element list: \[2\]"),
    ([(np.array(1), True)], None, ValueError, r"0-d ndarray array\(1\); a single object is a one-element list: \[1\]"),
])
def test_malformed_history(history, n, exc, match):
    with pytest.raises(exc, match=match):
        causalplay.infer(history, n)


@pytest.mark.parametrize("kw,match", [
    (dict(blicket_prior=1.2), r"blicket_prior must be a probability in \[0, 1\], got 1.2"),
    (dict(noise=-0.1), r"noise must be a probability in \[0, 1\], got -0.1"),
    (dict(rules=("disjunctive", "sometimes")), "unknown rule 'sometimes'"),
    (dict(rule_prior={"disjunctive": 1, "sometimes": 1}), "rule_prior names unknown rule 'sometimes'"),
    (dict(rule_prior={"disjunctive": -1}), r"rule_prior\['disjunctive'\] must be a finite weight >= 0"),
    (dict(n_blickets=5), r"count 5 is not an integer in \[0, n_objects=3\]"),
    (dict(method="magic"), "method must be one of 'auto', 'exact', 'svi', got 'magic'"),
])
def test_bad_options(kw, match):
    with pytest.raises(ValueError, match=match):
        causalplay.infer([([0], True)], 3, **kw)


def test_unknown_eig_target_and_bad_trial():
    b = causalplay.infer([([0], True)], 3)
    with pytest.raises(ValueError, match="unknown EIG target 'colour'"):
        b.eig(target="colour")
    with pytest.raises(ValueError, match=r"object index 7 is outside range\(n_objects=3\)"):
        b.predict([7])
    with pytest.raises(ValueError, match="at least one trial"):
        b.eig([])
    with pytest.raises(ValueError, match="lit must be booleans or 0/1"):
        b.update([0], "yes")


def test_inconsistent_evidence_names_the_conflict():
    with pytest.raises(causalplay.InconsistentEvidenceError) as e:
        causalplay.infer([([0, 1], True), ([2], False), ([1, 0], False)], 3)
    msg = str(e.value)
    assert "observation 0 (0, 1) -> lit=True conflicts with observation 2 (0, 1) -> lit=False" in msg
    assert "noise > 0" in msg
    # With noise the same evidence is merely surprising.
    causalplay.infer([([0, 1], True), ([1, 0], False)], 3, noise=0.1)


def test_inconsistent_evidence_without_duplicate_trials():
    # Conjunctive only: a single object can never light the machine.
    with pytest.raises(causalplay.InconsistentEvidenceError, match=r"observations: \[\(\(0,\), True\)\]"):
        causalplay.infer([([0], True)], 2, rules="conjunctive")


def test_empty_history_needs_n_objects():
    with pytest.raises(ValueError, match="pass n_objects"):
        causalplay.infer([])
