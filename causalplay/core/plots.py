"""Plots of beliefs and overhypothesis posteriors (matplotlib, imported on first use).

Both draw on the ``ax=`` the caller gives, or on a new figure, and return the Axes (as pandas' and ArviZ's plots
do; the figure is ``ax.figure``). They never import
:mod:`matplotlib.pyplot` and never change the backend or any global setting: the new figure is a plain
:class:`matplotlib.figure.Figure` (``fig.savefig(...)``), or, where the caller has already imported pyplot (a
notebook, an interactive session), one made by ``pyplot.figure`` so that it shows (once) as the caller's other
figures do.
``Beliefs.plot`` and ``OverhypothesisPosterior.plot`` call them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .checks import integer

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_beliefs", "plot_overhypothesis"]


def _axes(ax, figsize: tuple[float, float]) -> Axes:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    if ax is None:
        plt = sys.modules.get("matplotlib.pyplot")  # the caller's pyplot, with whatever backend they chose
        fig = (plt.figure if plt is not None else Figure)(figsize=figsize, layout="constrained")
        return fig.add_subplot()
    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
    return ax


def plot_beliefs(beliefs, ax: Axes | None = None, *, labels: Sequence[str] | None = None,
                 title: str | None = None) -> Axes:
    """Bars of P(object i is a blicket) for every object, then of the posterior probability of every rule.

    Parameters
    ----------
    beliefs : Beliefs
        From :func:`causalplay.infer`.
    ax : matplotlib Axes, optional
        Where to draw (default: a new Figure, 1 + 0.45 inch per bar wide).
    labels : sequence of str, optional
        Object names (default ``0 .. N-1``).
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``, or the Axes of the new figure (``ax.figure``); its bars are ``ax.patches`` (objects first, then
        rules, in the order of ``beliefs.rule_prob``).
    """
    p_obj = np.asarray(beliefs.blicket_prob, dtype=float)
    rules = beliefs.rule_prob
    n = len(p_obj)
    names = [str(i) for i in range(n)] if labels is None else [str(x) for x in labels]
    if len(names) != n:
        raise ValueError(f"labels must name the {n} objects, got {len(names)}: {list(names)}")
    ax = _axes(ax, (1.0 + 0.45 * (n + len(rules)), 2.8))
    x_obj = np.arange(n, dtype=float)
    x_rule = n + 0.6 + np.arange(len(rules), dtype=float)  # a gap between the two groups
    ax.bar(x_obj, p_obj, 0.7, color="C0", label="P(blicket)")
    ax.bar(x_rule, list(rules.values()), 0.7, color="C1", label="P(rule)")
    ax.axvline(n - 0.2, color="0.6", lw=0.8, ls=":")
    ax.set_xticks(np.concatenate([x_obj, x_rule]), names + list(rules), rotation=30 if len(rules) > 2 else 0)
    ax.set_ylim(0, 1)
    ax.set_ylabel("posterior probability")
    ax.legend(fontsize=8, loc="upper right", framealpha=0.8)
    if title is not None:
        ax.set_title(title)
    return ax


def plot_overhypothesis(post, ax: Axes | None = None, *, sequences: Sequence[int] | None = None,
                        title: str | None = None, n_draws: int = 2000, seed: int = 0) -> Axes:
    """The posterior over what the machines share, one curve (or cloud) per sequence.

    Rules form: the density of the weight ``theta[rule]`` a new machine's rule has (exact posteriors: the Beta
    mixture itself, :meth:`~causalplay.OverhypothesisPosterior.theta_density`; NUTS/SVI: a histogram of the
    draws), one line per rule, with its posterior mean dashed. With two rules only the second is drawn
    (``theta[first] = 1 - theta[second]``). Sigmoid form: ``n_draws`` posterior draws of (bias, log gain).

    Parameters
    ----------
    post : OverhypothesisPosterior
        From :func:`causalplay.infer_overhypothesis`.
    ax : matplotlib Axes, optional
    sequences : sequence of int, optional
        Which sequences to draw (default: all); labelled by ``post.keys`` when it has them.
    title : str, optional
    n_draws, seed : int
        Draws for sampled plots (:meth:`~causalplay.OverhypothesisPosterior.sample`).

    Returns
    -------
    matplotlib.axes.Axes
    """
    idx = list(range(post.batch_size)) if sequences is None else [
        integer(i, "sequences[]", low=0, high=post.batch_size - 1) for i in sequences]
    keys = list(post.keys) if post.keys is not None else list(range(post.batch_size))
    ax = _axes(ax, (6.0, 3.0))
    if post.form == "rules":
        names = post.rule_names
        shown = [len(names) - 1] if len(names) == 2 else list(range(len(names)))
        x = np.linspace(0.0, 1.0, 401)
        mean = post.mean().to_numpy()
        draws = None if post.method == "exact" else post.sample(n_draws, seed=seed)["rule_weights"]
        k = 0
        for b in idx:
            for r in shown:
                label = f"{keys[b]}: theta[{names[r]}]" if len(idx) > 1 else f"theta[{names[r]}]"
                color = f"C{k % 10}"
                if draws is None:
                    ax.plot(x, post.theta_density(x, r)[b], color=color, label=label)
                else:
                    ax.hist(draws[b, :, r], bins=40, range=(0, 1), density=True, histtype="step", color=color,
                            label=label)
                ax.axvline(mean[b, r], color=color, ls="--", lw=0.9)
                k += 1
        ax.set_xlim(0, 1)
        ax.set_xlabel("weight of the rule on a new machine (dashed: posterior mean)")
        ax.set_ylabel("posterior density")
    else:
        s = post.sample(n_draws, seed=seed)
        for k, b in enumerate(idx):
            ax.scatter(s["bias"][b], np.log(s["gain"][b]), s=4, alpha=0.3, color=f"C{k % 10}",
                       label=str(keys[b]) if len(idx) > 1 else None)
        ax.set_xlabel("bias")
        ax.set_ylabel("log gain")
    if len(idx) > 1 or post.form == "rules":
        ax.legend(fontsize=8)
    if title is not None:
        ax.set_title(title)
    return ax
