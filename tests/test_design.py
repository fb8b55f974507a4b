"""causalplay.design.Design: validation, the machine, relabelling, round trips, the Nexiom study's designs, and the
simulator and fitting data path reading a design's demonstrations and told count."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

import causalplay
from causalplay.data import load_nexiom
from causalplay.design import Design, designs_of, nexiom_designs
from causalplay.fitting import SVIOptions, simulate, simulate_fit


def test_fields_normalised():
    d = Design(4, [3, 1], "conjunctive", demonstrations=[[3, 1], ((0,), False)], n_blickets_told=2, max_tests=5)
    assert d.blickets == (1, 3)
    assert d.demonstrations == (((1, 3), True), ((0,), False))  # lit filled in from the machine
    assert d.world == ("conjunctive", (1, 3))
    assert hash(d) == hash(Design.from_dict(d.to_dict())) and d == Design.from_dict(d.to_dict())
    with pytest.raises(AttributeError):
        d.rule = "disjunctive"  # frozen


def test_the_machine():
    d = Design(3, (0, 2), "conjunctive")
    # conjunctive: lights iff both blickets are on; sets by code sum 2**i
    want = [False, False, False, False, False, True, False, True]
    assert d.lit_table().tolist() == want
    assert [d.lights([j for j in range(3) if c >> j & 1]) for c in range(8)] == want
    assert Design(3, (), "disjunctive").lit_table().tolist() == [False] * 8
    from causalplay.design.predict import _lit_tables

    ds = [d, Design(3, (), "disjunctive"), Design(3, (1,), "disjunctive"), Design(3, (0, 1, 2), "threshold3")]
    assert _lit_tables(ds).tolist() == [x.lit_table().tolist() for x in ds]


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(n_objects=0, blickets=(), rule="disjunctive"), ValueError, "n_objects"),
    (dict(n_objects=4, blickets=(4,), rule="disjunctive"), ValueError,
     r"object index 4 is outside range\(n_objects=4\)"),
    (dict(n_objects=4, blickets=(1, 1), rule="disjunctive"), ValueError, "repeated"),
    (dict(n_objects=4, blickets=(1,), rule="sometimes"), ValueError, "unknown rule 'sometimes'"),
    (dict(n_objects=4, blickets=(1,), rule=2), TypeError, "rule must be a rule name"),
    (dict(n_objects=4, blickets="01", rule="disjunctive"), TypeError, "blickets must be a sequence"),
    (dict(n_objects=4, blickets=(0, 1), rule="conjunctive", demonstrations=[((0,), True)]), ValueError,
     r"demonstration 0 \(0,\) says lit=True, but a conjunctive machine with blickets \(0, 1\) stays dark"),
    (dict(n_objects=4, blickets=(0, 1), rule="conjunctive", demonstrations=[(5,)]), ValueError,
     "demonstration 0: object index 5"),
    (dict(n_objects=4, blickets=(0, 1), rule="conjunctive", n_blickets_told=3), ValueError,
     "n_blickets_told=3 differs from the design's 2 blicket"),
    (dict(n_objects=4, blickets=(0, 1), rule="conjunctive", n_blickets_told=5), ValueError, "n_blickets_told"),
    (dict(n_objects=4, blickets=(0, 1), rule="conjunctive", max_tests=0), ValueError, "max_tests"),
    (dict(n_objects=4, blickets=(0, 1), rule="conjunctive", max_tests=2.5), TypeError, "max_tests"),
])
def test_bad_values_named(kwargs, err, match):
    with pytest.raises(err, match=match):
        Design(**kwargs)


def test_relabel():
    d = Design(4, (0, 1), "disjunctive", demonstrations=[(0, 2), (3,)])
    r = d.relabel([1, 2, 3, 0])
    assert r.blickets == (1, 2) and r.demonstrations == (((1, 3), True), ((0,), False))
    assert d.relabel([0, 1, 2, 3]) == d
    with pytest.raises(ValueError, match="repeated"):
        d.relabel([0, 0, 1, 2])


def test_nexiom_designs_are_the_shipped_worlds():
    people = load_nexiom()
    ds = nexiom_designs()
    assert len(ds) == 12 and len(set(ds)) == 12
    assert all(d.n_objects == 4 and len(d.blickets) == 2 and not d.demonstrations and d.n_blickets_told is None
               and d.max_tests is None for d in ds)
    mine = designs_of(people)
    assert list(mine) == people.ids
    assert set(mine.values()) == set(ds)
    assert mine["P001"] == Design.nexiom("conjunctive", (1, 3))
    with pytest.raises(ValueError, match="2 blickets"):
        Design.nexiom("conjunctive", (1,))


def test_designs_of_the_example_folder():
    """The example folder's S04 watched {0, 3} light and {0, 1} stay dark and was told 2 blickets (tests.csv,
    participants.csv); S03 was told nothing."""
    from causalplay.data import example_folder, load_trials

    ds = designs_of(load_trials(example_folder()))
    assert ds["S04"] == Design(4, (0, 3), "conjunctive", demonstrations=[((0, 3), True), ((0, 1), False)],
                               n_blickets_told=2)
    assert ds["S03"] == Design(4, (1, 2), "disjunctive")
    with pytest.raises(TypeError, match="TrialData"):
        designs_of([1, 2])


def test_simulator_and_fit_read_the_design():
    """Simulated participants under designs with demonstrations, a told count and a budget: the data carry the
    demonstrations as source=demonstration rows and each one's budget (the design's, capped by simulate's
    max_tests=6), designs_of reads back the same designs, the budget holds, and causalplay.fit takes the data (the
    demonstrations are history, not choices)."""
    designs = [Design(4, (0, 1), "conjunctive", demonstrations=[(0, 1), (2,)], n_blickets_told=2, max_tests=3),
               Design(4, (2,), "disjunctive", demonstrations=[(0, 2)], max_tests=2),
               Design(4, (1, 3), "disjunctive")] * 3
    theta = {"beta": 2.0, "gamma": 0.0, "rho": 0.0, "stop_a": -3.0, "stop_h": 0.0, "stop_t": 0.0, "lapse": 0.1,
             "judge_lapse": 0.1}
    data = simulate("eig_size", theta, None, 4, designs=designs, seed=0, max_tests=6)
    back = designs_of(data, max_tests=None)
    for pid, d in zip(data.ids, designs, strict=True):
        assert back[pid] == replace(d, max_tests=min(d.max_tests or 6, 6))
    own = data.choice_indices()
    for pid, d in zip(data.ids, designs, strict=True):
        assert 1 <= len(own[pid]) <= (d.max_tests or 6)
    assert data.known_counts()[data.ids[0]] == 2 and data.known_counts()[data.ids[1]] is None
    f = causalplay.fit(data, "eig_size", method="svi", svi=SVIOptions(steps=20, draws=10, progress=False))
    assert f.feats.n_decisions == data.n_choices
    with pytest.raises(ValueError, match="worlds or designs"):
        simulate("eig_size", theta, [("conjunctive", (0, 1))], 4, designs=designs)
    with pytest.raises(ValueError, match="n_objects"):
        simulate("eig_size", theta, None, 3, designs=designs)


def test_simulate_fit_with_designs():
    people = load_nexiom()
    f = causalplay.fit(people.subset(people.ids[:10]), "positive", method="svi",
                       svi=SVIOptions(steps=20, draws=10, progress=False))
    d = Design(4, (0, 3), "conjunctive", demonstrations=[(0, 3)], n_blickets_told=2)
    sim = simulate_fit(f, 5, designs=[d] * 5, seed=1)
    assert set(designs_of(sim).values()) == {replace(d, max_tests=30)}  # simulate_fit's default cap: 30 tests
    assert torch.is_tensor(f.feats.ll)
