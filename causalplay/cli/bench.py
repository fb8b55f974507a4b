"""``causalplay bench``: run agents on envs and print the Table-2-style comparison.

Every option is checked before any work (typer callbacks, then the checks that combine options); bad input ends
in a usage error (exit 2) that names the option.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["bench", "check_agent_spec"]

DEFAULT_AGENTS = "random,bayes,naive,search-random,search-naive,notears,eig,planner"


def _merge(option: str, items: list[str]) -> list[str]:
    """Items in order, each once; a repeat is reported on stderr (``--agents eig,eig`` runs eig once)."""
    seen: list[str] = []
    for x in items:
        if x in seen:
            print(f"note: {option} lists {x!r} more than once; running it once", file=sys.stderr)
        else:
            seen.append(x)
    return seen


def check_agent_spec(spec: str) -> None:
    """Raise ``ValueError`` unless ``spec`` names a known agent with options it accepts and values it takes.

    Unknown options are listed with the accepted ones (from the agent's constructor); values are checked by
    building the agent once.
    """
    from causalplay.agents import AGENTS, make_agent, parse_agent_spec

    name, kwargs = parse_agent_spec(spec)
    params = inspect.signature(AGENTS[name].__init__).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        accepted = [k for k in params if k not in ("self", "seed")]
        unknown = [k for k in kwargs if k not in accepted]
        if unknown:
            raise ValueError(f"agent {name!r} has no option {', '.join(map(repr, unknown))}; it accepts "
                             f"{', '.join(accepted) if accepted else 'no options'}")
    try:
        make_agent(spec, seed=0)
    except (TypeError, ValueError, ImportError) as err:
        raise ValueError(f"{spec!r}: {err}") from None


def _envs_cb(value: str) -> str:
    from causalplay.bench.runner import check_env

    ids = [e.strip() for e in value.split(",") if e.strip()]
    if not ids:
        raise typer.BadParameter("give at least one environment id")
    for e in ids:
        if e.startswith("causalplay/CausalDAG"):  # scored by its own loop (causalplay.dag.bench), which checks it
            continue
        try:
            check_env(e)
        except ValueError as err:
            raise typer.BadParameter(str(err)) from None
    return value


def _agents_cb(value: str) -> str:
    # The list's syntax here; the specs themselves in the command body (before any work), since which agents
    # exist depends on --env (CausalDAG worlds have their own).
    from causalplay.agents import split_agent_specs

    try:
        names = split_agent_specs(value)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    if not names:
        raise typer.BadParameter("give at least one agent name or spec, e.g. eig,planner:depth=2")
    return value


def _executor_cb(value: str) -> str:
    from causalplay.bench.executors import check_executor

    try:
        check_executor(value)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    return value


def _out_cb(value: str) -> str:
    if not value.strip():
        raise typer.BadParameter("must be a folder path")
    p = Path(value)
    if p.exists() and not p.is_dir():
        raise typer.BadParameter(f"{value} exists and is not a folder")
    anc = p.absolute()
    while not anc.exists():
        anc = anc.parent
    if not anc.is_dir():
        raise typer.BadParameter(f"{anc} is a file, so {value} cannot be created as a folder")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise typer.BadParameter(f"{anc} is not writable")
    return value


def _compare_cb(value: str) -> str:
    from causalplay.agents import split_agent_specs

    try:
        n = len(split_agent_specs(value))
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    if value.strip() and n != 2:
        raise typer.BadParameter(f"give two agents separated by a comma (or ''), got {value!r}")
    return value


def bench(
    env: str = typer.Option("causalplay/IVRE-v0", help="Comma-separated environment ids.", callback=_envs_cb),
    agents: str = typer.Option(
        DEFAULT_AGENTS, help="Comma-separated agent names or specs with options, e.g. planner:depth=2.",
        callback=_agents_cb),
    episodes: int = typer.Option(10000, min=1, help="Episodes per env x agent x seed."),
    seeds: int = typer.Option(5, min=1, help="Number of seeds (0..seeds-1)."),
    out: str = typer.Option("runs/bench", help="Output folder (results.json, episodes.csv, shards/, PNGs).",
                            callback=_out_cb),
    shard_size: int = typer.Option(2000, min=1,
                                   help="Episodes per shard (the unit of resuming and of parallel work)."),
    executor: str = typer.Option("process", help="serial, process (local pool), ray or dask (extras).",
                                 callback=_executor_cb),
    workers: int = typer.Option(0, min=0, help="Processes of the local pool or cluster (0: one per CPU)."),
    notears_episodes: int = typer.Option(
        200, min=1, help="Cap on episodes per seed of notears and notears-exact (one fit per episode per step)."),
    compare: str = typer.Option("eig,planner", help="Two agents to compare with a Wilcoxon test over seeds.",
                                callback=_compare_cb),
    # Annotated, so that a call from Python (causalplay demo) without them gets the plain defaults.
    show_dialogue: Annotated[int, typer.Option(
        help="Print the dialogue of the first N episodes (seed 0) of every language-model agent.")] = 0,
    address: Annotated[str, typer.Option(
        help="Cluster to run on (ray: host:port of `ray start --head`, or 'auto'; dask: tcp://host:8786). "
             "Empty: start a local one.")] = "",
) -> None:
    """Run the benchmark and print context / episode accuracy and reward (mean +- 95% CI over seeds)."""
    from rich.console import Console
    from rich.table import Table

    from causalplay.bench.executors import check_executor
    from causalplay.bench.metrics import wilcoxon
    from causalplay.bench.plots import plot_rewards, plot_success
    from causalplay.bench.runner import check_env, check_pairing, run_benchmark, summarise, table, write_results
    from causalplay.bench.shards import RunLocked, atomic_write

    env_ids = _merge("--env", [e.strip() for e in env.split(",") if e.strip()])
    if any(e.startswith("causalplay/CausalDAG") for e in env_ids):  # its own loop and scores (issue 14)
        from causalplay.dag.bench import dag_cli

        return dag_cli(env_ids, [a.strip() for a in agents.split(",") if a.strip()], episodes, seeds, out,
                       notears_episodes)
    from causalplay.agents import agent_label, split_agent_specs

    try:
        agent_names = _merge("--agents", split_agent_specs(agents))  # commas inside quoted values do not split
        rows: dict[str, str] = {}
        for a in agent_names:
            check_agent_spec(a)
            label = agent_label(a)
            if label in rows:
                raise ValueError(f"agents {rows[label]!r} and {a!r} would share the table row {label!r}; "
                                 "give each a name=..., e.g. rl:path=DIR:name=ppo-ff-s1")
            rows[label] = a
    except (ValueError, FileNotFoundError) as err:
        raise typer.BadParameter(str(err), param_hint="'--agents'") from None
    try:
        check_executor(executor, workers or None, address or None)
    except ValueError as err:
        hint = "'--address'" if "address" in str(err) else "'--workers'" if "workers" in str(err) else None
        raise typer.BadParameter(str(err), param_hint=hint or "'--executor'") from None
    horizons = {}
    for e in env_ids:
        try:
            horizons[e] = check_env(e)
        except ValueError as err:
            raise typer.BadParameter(str(err), param_hint="'--env'") from None
    from causalplay.envs.pixels import PIXEL_IDS

    for a in agent_names:  # a symbolic agent on a pixel env (or the reverse) fails here, not in a worker
        for e in env_ids:
            try:
                check_pairing(e, a, e in PIXEL_IDS)
            except ValueError as err:
                raise typer.BadParameter(str(err), param_hint="'--agents'") from None
    t0 = time.perf_counter()
    try:
        df = run_benchmark(env_ids, agent_names, episodes, range(seeds), out, shard_size=shard_size,
                           executor=executor, workers=workers or None, address=address or None,
                           episodes_per_agent={"notears": notears_episodes, "notears-exact": notears_episodes})
    except RunLocked as err:
        raise typer.BadParameter(str(err), param_hint="'--out'") from None
    except KeyboardInterrupt:
        print(f"\ninterrupted: the shards finished so far are in {out}/shards and verify; run the same command "
              "again to resume", file=sys.stderr)
        raise typer.Exit(130) from None
    wall = time.perf_counter() - t0
    rows = summarise(df, horizons)
    write_results(rows, out)
    tab = table(rows)
    atomic_write(Path(out, "table.csv"), tab.to_csv(index=False).encode())
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
    if "parse_failure_rate" in tab:  # language-model agents: answers that did not parse, tokens per episode
        for _, r in tab.dropna(subset=["parse_failure_rate"]).iterrows():
            console.print(f"{r['env']} {r['agent']}: parse failures {100 * r['parse_failure_rate']:.2f}% of "
                          f"answers; tokens per episode {r['prompt_tokens_per_episode']:.0f} prompt + "
                          f"{r['completion_tokens_per_episode']:.0f} completion")
    if show_dialogue > 0:
        from causalplay.bench.dialogues import print_dialogues

        print_dialogues(Path(out), df, show_dialogue, console)
    pair = split_agent_specs(compare)
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
