"""PNG plots of a benchmark run: success percentage vs step, and reward distributions."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .metrics import success_curve

__all__ = ["plot_success", "plot_rewards", "figure_axes", "save_png"]


def figure_axes(nrows: int = 1, ncols: int = 1, **kw):
    """A figure and its axes, made without pyplot: no backend switched and no figure left open in the caller's
    session (plain ``Figure`` objects are freed with their last reference)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=kw.pop("figsize", None))
    return fig, fig.subplots(nrows, ncols, **kw)


def save_png(fig, out: str | Path, kind: str, env: str) -> Path:
    """``fig`` laid out and written to ``out/<kind>_<env with / as _>.png`` (110 dpi); the path."""
    fig.tight_layout()
    path = Path(out) / f"{kind}_{env.replace('/', '_')}.png"
    fig.savefig(path, dpi=110)
    return path


def plot_success(df: pd.DataFrame, horizons: dict[str, tuple[int, int]], out: str | Path) -> list[Path]:
    """One PNG per env: % of episodes solved by each action, one line per agent (all seeds pooled)."""
    paths = []
    for env, g in df.groupby("env", sort=False):
        C, T = horizons[env]
        fig, ax = figure_axes(figsize=(6, 4))
        for agent, ga in g.groupby("agent", sort=False):
            ax.plot(range(1, T + 1), 100 * success_curve(ga["solved_step"].to_numpy(), T), marker="o", label=agent)
        ax.axvline(C + 0.5, color="gray", ls="--", lw=1)
        ax.set(xlabel="step (action)", ylabel="% episodes solved", title=f"{env}: success vs step", ylim=(0, 101))
        ax.legend(fontsize=7)
        paths.append(save_png(fig, out, "success", env))
    return paths


def plot_rewards(df: pd.DataFrame, out: str | Path) -> list[Path]:
    """One PNG per env: box plots of episode reward per agent."""
    paths = []
    for env, g in df.groupby("env", sort=False):
        agents = list(dict.fromkeys(g["agent"]))
        fig, ax = figure_axes(figsize=(max(6, len(agents)), 4))
        ax.boxplot([g.loc[g["agent"] == a, "episode_reward"].to_numpy() for a in agents], showfliers=False)
        ax.set_xticks(range(1, len(agents) + 1), agents, rotation=30, fontsize=8)
        ax.set(ylabel="episode reward R", title=f"{env}: reward distribution")
        paths.append(save_png(fig, out, "rewards", env))
    return paths
