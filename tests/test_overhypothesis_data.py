"""The multi-round schema addition (issue 15): ``learner`` + ``round`` columns, validated by the loader."""

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import causalplay
from causalplay.core.overhypothesis import SequenceBatch
from causalplay.data import DataValidationError, load_trials

SRC = Path(__file__).resolve().parents[1] / "causalplay" / "data" / "nexiom"


def _multi_round(tmp_path, edit=None, drop_learner=False):
    folder = tmp_path / "rounds"
    shutil.copytree(SRC, folder)
    p = pd.read_csv(folder / "participants.csv", dtype=str, keep_default_na=False)
    p["learner"] = [f"L{i // 2:02d}" for i in range(len(p))]  # two rounds per person
    p["round"] = [str(i % 2 + 1) for i in range(len(p))]
    if edit:
        row, col, value = edit
        p.loc[row, col] = value
    if drop_learner:
        p = p.drop(columns=["learner"])
    p.to_csv(folder / "participants.csv", index=False)
    return folder


def test_rounds_load_and_give_sequences(tmp_path):
    d = load_trials(_multi_round(tmp_path), n_objects=4)
    seqs = d.sequences()
    assert len(seqs) == 39 and all(len(s) == 2 for s in seqs.values())
    hs = d.histories()
    ids = d.participants["participant"].tolist()
    assert seqs["L00"][0].pairs() == hs[ids[0]].pairs() and seqs["L00"][1].pairs() == hs[ids[1]].pairs()
    # the hook: the rule prior each learner brings to round 2, learned from round 1
    batch = SequenceBatch.from_sequences([s[:1] for s in seqs.values()], 4)
    post = causalplay.infer_overhypothesis(batch, n_blickets=2, noise=0.05)
    rho = post.predictive_rule_probs()[:, 1]
    truth = d.participants.set_index("participant").loc[ids[::2], "rule"].to_numpy()
    assert rho[truth == "conjunctive"].mean() > rho[truth == "disjunctive"].mean()
    assert np.all((rho > 0) & (rho < 1))


@pytest.mark.parametrize("edit, words", [
    ((3, "round", "two"), "positive integer"),
    ((3, "round", "0"), "positive integer"),
    ((3, "round", "3"), "numbered 1..2"),
    ((3, "round", "1"), "numbered 1..2"),
    ((3, "learner", " "), "empty learner"),
])
def test_bad_rounds_are_reported(tmp_path, edit, words):
    with pytest.raises(DataValidationError) as e:
        load_trials(_multi_round(tmp_path, edit), n_objects=4)
    assert any(words in i.problem and i.column == edit[1] for i in e.value.issues), e.value.issues


def test_round_needs_learner_and_single_round_data_has_no_sequences(tmp_path):
    with pytest.raises(DataValidationError, match="needs a learner column"):
        load_trials(_multi_round(tmp_path, drop_learner=True), n_objects=4)
    with pytest.raises(ValueError, match="no round column"):
        load_trials(SRC, n_objects=4).sequences()
