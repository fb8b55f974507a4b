"""Beliefs.plot and OverhypothesisPosterior.plot: the bars and curves hold the posterior's numbers (derived by hand
below), they draw on the caller's Axes or a new Figure, and they leave pyplot and the backend alone."""

import subprocess
import sys

import numpy as np
import pytest

import causalplay

pytest.importorskip("matplotlib")

from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


def test_beliefs_plot_bars_are_the_marginals():
    # A+ B- on a noiseless machine: a single object lit it, so it is disjunctive (a conjunctive machine needs two
    # blickets on it); A is a blicket, B is not
    b = causalplay.infer([([0], True), ([1], False)], n_objects=2)
    ax = b.plot(labels=["A", "B"], title="A+ B-")
    assert isinstance(ax, Axes) and isinstance(ax.figure, Figure) and ax.figure.axes == [ax]
    assert [p.get_height() for p in ax.patches] == pytest.approx([1.0, 0.0, 1.0, 0.0], abs=1e-12)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["A", "B", "disjunctive", "conjunctive"]
    assert ax.get_title() == "A+ B-" and ax.get_ylim() == (0.0, 1.0)
    # backwards blocking, prior 1/3, disjunctive: AB+ AB+ gives P = (1/3) / (1 - (2/3)^2) = 0.6 each; then A+
    # returns B to its prior 1/3
    ab = causalplay.infer([([0, 1], True)] * 2, n_objects=2, rules="disjunctive", blicket_prior=1 / 3)
    h = [p.get_height() for p in ab.plot().patches]
    assert h == pytest.approx([0.6, 0.6, 1.0], abs=1e-12)
    h = [p.get_height() for p in ab.update([0], True).plot().patches]
    assert h == pytest.approx([1.0, 1 / 3, 1.0], abs=1e-12)


def test_beliefs_plot_draws_on_the_given_axes():
    fig = Figure()
    ax0, ax1 = fig.subplots(1, 2)
    b = causalplay.infer([([0], True)], n_objects=3, rules="disjunctive")
    assert b.plot(ax=ax1) is ax1
    assert len(ax1.patches) == 4 and len(ax0.patches) == 0
    with pytest.raises(ValueError, match=r"labels must name the 3 objects, got 2: \['A', 'B'\]"):
        b.plot(labels=["A", "B"])
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes or None, got Figure"):
        b.plot(ax=fig)


def test_overhypothesis_plot_is_the_beta_posterior():
    # one machine, A+ (noiseless): it was disjunctive, so the rule counts are (1, 0) and with the Dirichlet(1, 1)
    # prior theta[conjunctive] ~ Beta(1, 2): density 2 (1 - x), mean 1/3
    post = causalplay.infer_overhypothesis([[([0], True)]], n_objects=2)
    ax = post.plot(title="one machine")
    assert ax.get_title() == "one machine"
    (line,) = [ln for ln in ax.lines if len(ln.get_xdata()) > 2]
    x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    assert y[np.searchsorted(x, 0.25)] == pytest.approx(1.5, abs=1e-9)
    assert y == pytest.approx(2 * (1 - x), abs=1e-9)
    (mean,) = [ln for ln in ax.lines if len(ln.get_xdata()) == 2]
    assert mean.get_xdata()[0] == pytest.approx(1 / 3, abs=1e-12)
    assert line.get_label() == "theta[conjunctive]"
    with pytest.raises(ValueError, match="sequences"):
        post.plot(sequences=[1])


def test_plots_leave_pyplot_and_the_backend_alone():
    code = ("import sys, matplotlib; before = matplotlib.rcParams._get_backend_or_none(); import causalplay; "
            "b = causalplay.infer([([0], True)], n_objects=2); fig = b.plot().figure; "
            "causalplay.infer_overhypothesis([[([0], True)]], n_objects=2).plot(); fig.savefig(sys.argv[1]); "
            "print('matplotlib.pyplot' in sys.modules, matplotlib.rcParams._get_backend_or_none() == before)")
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([sys.executable, "-c", code, f"{d}/b.png"], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["False", "True"]
    # where the caller uses pyplot, the new figure is one of pyplot's (so a notebook shows it like the others)
    code = ("import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as plt, causalplay; "
            "fig = causalplay.infer([([0], True)], n_objects=2).plot().figure; print(plt.get_fignums(), fig.number)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.split() == ["[1]", "1"], out.stderr
