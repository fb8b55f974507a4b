"""``causalplay bench``: run agents on envs and print the Table-2-style comparison."""

from __future__ import annotations

import time
from pathlib import Path

import typer

__all__ = ["register", "bench"]

DEFAULT_AGENTS = "random,bayes,naive,search-random,search-naive,notears,eig,planner"


def bench(
    env: str = typer.Option("causalplay/IVRE-v0", help="Comma-separated environment ids."),
    agents: str = typer.Option(
        DEFAULT_AGENTS, help="Comma-separated agent names or specs with options, e.g. planner:depth=2."),
    episodes: int = typer.Option(10000, help="Episodes per env x agent x seed."),
    seeds: int = typer.Option(5, help="Number of seeds (0..seeds-1)."),
    out: str = typer.Option("runs/bench", help="Output folder (results.json, episodes.csv, shards/, PNGs)."),
    shard_size: int = typer.Option(2000, help="Episodes per shard (the unit of resuming and of parallel work)."),
    executor: str = typer.Option("process", help="'process' (pool) or 'serial'."),
    workers: int = typer.Option(0, help="Processes in the pool (0: one per CPU)."),
    notears_episodes: int = typer.Option(
        200, help="Cap on episodes per seed of notears and notears-exact (one fit per episode per step)."),
    compare: str = typer.Option("eig,planner", help="Two agents to compare with a Wilcoxon test over seeds."),
) -> None:
    """Run the benchmark and print context / episode accuracy and reward (mean +- 95% CI over seeds)."""
    from rich.console import Console
    from rich.table import Table

    from causalplay.envs import make_batch

    from .metrics import wilcoxon
    from .plots import plot_rewards, plot_success
    from .runner import make_executor, run_benchmark, summarise, table, write_results

    env_ids = [e.strip() for e in env.split(",") if e.strip()]
    agent_names = [a.strip() for a in agents.split(",") if a.strip()]
    from causalplay.agents import parse_agent_spec

    rows: dict[str, str] = {}
    for a in agent_names:
        try:
            base, opts = parse_agent_spec(a)
            label = a
            if base == "rl":  # its row is named from the run's config (or name=)
                from causalplay.rl.train import read_config

                if "path" not in opts:
                    raise ValueError(f"{a!r}: the rl agent needs path=DIR (a `causalplay train` output folder)")
                label = opts.get("name") or read_config(opts["path"]).name
        except (ValueError, FileNotFoundError) as err:
            raise typer.BadParameter(str(err)) from None
        if label in rows:
            raise typer.BadParameter(f"agents {rows[label]!r} and {a!r} would share the table row {label!r}; "
                                     "give each a name=..., e.g. rl:path=DIR:name=ppo-ff-s1")
        rows[label] = a
    horizons = {}
    for e in env_ids:
        try:
            b = make_batch(e, 1, seed=0)
        except ValueError as err:
            raise typer.BadParameter(str(err)) from None
        horizons[e] = (b.n_context, b.horizon)
    t0 = time.perf_counter()
    df = run_benchmark(env_ids, agent_names, episodes, range(seeds), out, shard_size=shard_size,
                       executor=make_executor(executor, workers or None),
                       episodes_per_agent={"notears": notears_episodes,
                                                           "notears-exact": notears_episodes})
    wall = time.perf_counter() - t0
    rows = summarise(df, horizons)
    write_results(rows, out)
    tab = table(rows)
    Path(out, "table.csv").write_text(tab.to_csv(index=False))
    plot_success(df, horizons, out)
    plot_rewards(df, out)
    console = Console()
    for e, g in tab.groupby("env", sort=False):
        t = Table(title=f"{e} ({seeds} seed(s); mean ± 95% CI over seeds)")
        for col in ("agent", "episodes", "context Acc %", "context R", "episode Acc %", "episode R", "AUCCESS %"):
            t.add_column(col, justify="right", no_wrap=col == "agent")
        for _, r in g.iterrows():
            t.add_row(r["agent"], str(r["episodes"]),
                      *(f"{r[c]:.2f} ± {r[c + '_ci']:.2f}" for c in ("context_acc", "context_reward", "episode_acc",
                                                                     "episode_reward", "auccess")))
        console.print(t)
    pair = [c.strip() for c in compare.split(",") if c.strip()]
    if len(pair) == 2 and all(p in agent_names for p in pair) and seeds > 1:
        import pandas as pd

        res = pd.DataFrame(rows)
        for e in env_ids:
            x = res[(res.env == e) & (res.agent == pair[0])].sort_values("seed")["episode_reward"]
            y = res[(res.env == e) & (res.agent == pair[1])].sort_values("seed")["episode_reward"]
            if len(x) == len(y) and len(x) > 0:
                stat, p = wilcoxon(x.to_numpy(), y.to_numpy())
                console.print(f"{e}: Wilcoxon {pair[0]} vs {pair[1]} on episode R over seeds: W={stat:g}, p={p:.4g}")
    console.print(f"wall time {wall:.1f} s; results in {out}/results.json, episodes.csv, table.csv, *.png")


def register(app: typer.Typer) -> None:
    """Add the ``bench`` command to the ``causalplay`` CLI."""
    app.command("bench")(bench)
