"""``causalplay bench``: run agents on envs and print the Table-2-style comparison.

Every option is checked before any work (typer callbacks, then the checks that combine options); bad input ends
in a usage error (exit 2) that names the option.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Annotated

import typer

from .config import usage_errors

__all__ = ["bench", "check_agent_spec", "list_agents"]


def _merge(option: str, items: list[str]) -> list[str]:
    """Items in order, each once; a repeat is reported on stderr (``--agents eig,eig`` runs eig once)."""
    seen: list[str] = []
    for x in items:
        if x in seen:
            print(f"note: {option} lists {x!r} more than once; running it once", file=sys.stderr)
        else:
            seen.append(x)
    return seen


def check_agent_spec(spec: str, family: str = "blicket") -> None:
    """Raise ``ValueError`` unless ``spec`` names a known agent of ``family`` with options it accepts and values it
    takes.

    Unknown options are listed with the accepted ones (from the agent's constructor); values are checked by
    building the agent once.
    """
    from causalplay.agents import agent_class, make_agent, parse_agent_spec

    name, kwargs = parse_agent_spec(spec, family)
    params = inspect.signature(agent_class(name, family).__init__).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        accepted = [k for k in params if k not in ("self", "seed")]
        unknown = [k for k in kwargs if k not in accepted]
        if unknown:
            raise ValueError(f"agent {name!r} has no option {', '.join(map(repr, unknown))}; it accepts "
                             f"{', '.join(accepted) if accepted else 'no options'}")
    try:
        make_agent(spec, seed=0, family=family)
    except (TypeError, ValueError, ImportError) as err:
        raise ValueError(f"{spec!r}: {err}") from None


def list_agents() -> str:
    """Every task family with its env ids and agents, and the plug-in agents, each with where it comes from (the
    text of ``causalplay bench --list-agents``). Plug-ins are listed from their distributions' metadata; a plug-in
    family is imported to read its ids and agents."""
    from causalplay.agents import agent_plugins, agent_registry
    from causalplay.core.plugins import PluginError
    from causalplay.envs.families import families, family_plugins, get_family

    def where(ref) -> str:
        if isinstance(ref, str):
            return ref
        return f"{ref.__module__}:{ref.__qualname__}"

    lines, fams = [], list(families(load_plugins=False))
    for name, p in family_plugins().items():
        if name not in {f.name for f in fams}:
            try:
                fams.append(get_family(name))
            except PluginError as err:  # listed with the reason; the other plug-ins still work
                lines.append(f"family {name} ({p.source}): {err}")
    for fam in fams:
        lines.append(f"family {fam.name} ({fam.source}): {', '.join(fam.ids)}")
        own = agent_registry(fam.name)
        for name, ref in own.items():
            default = " [default]" if name in {d.split(":")[0] for d in fam.default_agents} else ""
            lines.append(f"  {name:<22} {where(ref)}{default}")
    plugs = agent_plugins()
    lines.append("plug-in agents (entry-point group causalplay.agents; every family unless the class names its "
                 "families):" if plugs else "plug-in agents (entry-point group causalplay.agents): none installed")
    for p in plugs.values():
        lines.append(f"  {p.name:<22} {p.source}")
    return "\n".join(lines)


def _list_cb(value: bool) -> bool:
    if value:
        with usage_errors("'--list-agents'", (ValueError, ImportError)):
            text = list_agents()
        typer.echo(text)
        raise typer.Exit()
    return value


def _envs_cb(value: str) -> str:
    from causalplay.bench.runner import check_env

    ids = [e.strip() for e in value.split(",") if e.strip()]
    if not ids:
        raise typer.BadParameter("give at least one environment id")
    with usage_errors(errors=(ValueError, ImportError)):  # ImportError: a plug-in family that fails to import
        for e in ids:
            check_env(e)
    return value


def _agents_cb(value: str | None) -> str | None:
    # The list's syntax here; the specs themselves in the command body (before any work), since which agents
    # exist depends on --env (CausalDAG worlds have their own).
    from causalplay.agents import split_agent_specs

    if value is None:  # not given: each family's usual agents
        return value
    with usage_errors():
        names = split_agent_specs(value)
    if not names:
        raise typer.BadParameter("give at least one agent name or spec, e.g. eig,planner:depth=2")
    return value


def _executor_cb(value: str) -> str:
    from causalplay.bench.executors import check_executor

    with usage_errors():
        check_executor(value)
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


def _fold_list(value: str) -> list[int] | None:
    """``"0-9"`` or ``"0,3,5"`` -> the fold numbers (``""``: None, every variant); ``typer.BadParameter`` else."""
    if not value.strip():
        return None
    try:
        lo, dash, hi = value.partition("-")
        folds = list(range(int(lo), int(hi) + 1)) if dash else [int(x) for x in value.split(",")]
    except ValueError:
        raise typer.BadParameter(f"give folds as a range (0-9) or a list (0,3,5), got {value!r}") from None
    if not folds:
        raise typer.BadParameter(f"{value!r} names no fold")
    return folds


def _folds_cb(value: str) -> str:
    _fold_list(value)
    return value


def _compare_cb(value: str) -> str:
    from causalplay.agents import split_agent_specs

    with usage_errors():
        n = len(split_agent_specs(value))
    if value.strip() and n != 2:
        raise typer.BadParameter(f"give two agents separated by a comma (or ''), got {value!r}")
    return value


def _cell(m: float, h: float) -> str:
    return f"{m:.2f} ± {h:.2f}" if h == h else f"{m:.2f} ± n/a"  # NaN: one seed of a per-seed score


def _print_tables(tab, fam, console, title: str) -> None:
    """One rich table per env (and variant): the family's columns as ``mean ± CI``; long cells fold, never cut."""
    from rich.table import Table

    keys = [c for c in ("rule_per", "linear", "split", "rule", "setting") if c in tab]
    for key, g in tab.groupby(["env", *keys], sort=False):
        key = key if isinstance(key, tuple) else (key,)
        t = Table(title=" ".join([key[0]] + [f"{k}={v}" for k, v in zip(keys, key[1:], strict=True)]) + title)
        lead = [c for c in ("agent", "machine", "episodes") if c in g]
        for col in lead + list(fam.display.values()):
            t.add_column(col, justify="right", overflow="fold", no_wrap=col == "agent")
        for _, r in g.iterrows():
            spread = [r.get(c + "_ci", r.get(c + "_sd")) for c in fam.display]  # a CI, or the physics table's SD
            t.add_row(*(str(r[c]) for c in lead), *(_cell(r[c], h) for c, h in zip(fam.display, spread, strict=True)))
        console.print(t)


def _agents_per_env(fams: dict, agents: str | None) -> dict[str, list[str]]:
    """Each env's agent specs: the ones given (former names as their new ones, said once) or the family's
    defaults; checked, and no two sharing a table row."""
    from causalplay.agents import agent_label, canonical_agent_spec, split_agent_specs

    with usage_errors("'--agents'", (ValueError, FileNotFoundError, ImportError)):  # ImportError: a plug-in's
        given = _merge("--agents", split_agent_specs(agents)) if agents is not None else []
        with warnings.catch_warnings(record=True) as renamed:  # a former agent name runs as its new one, said once
            warnings.simplefilter("always", DeprecationWarning)
            per_env = {e: [canonical_agent_spec(a, fam.name) for a in given or fam.family.default_agents]
                       for e, fam in fams.items()}
        for msg in dict.fromkeys(str(w.message) for w in renamed if w.category is DeprecationWarning):
            typer.echo(f"warning: {msg}", err=True)
        rows: dict[tuple, str] = {}
        for e, fam in fams.items():
            for a in per_env[e]:
                check_agent_spec(a, fam.name)
                label = agent_label(a, fam.name)
                if (e, label) in rows:
                    raise ValueError(f"agents {rows[e, label]!r} and {a!r} would share the table row {label!r}; "
                                     "give each a name=..., e.g. rl:path=DIR:name=ppo-ff-s1")
                rows[e, label] = a
    return per_env


def _fold_variants(fams: dict, folds: str) -> list | None:
    """The variants of the folds ``--folds`` names (None: all of every env's)."""
    fold_ids = _fold_list(folds)
    if fold_ids is None:
        return None
    variants = []
    for e, fam in fams.items():
        have = {dict(v).get("fold") for v in fam.variants(e)} - {None}
        if not set(fold_ids) <= have:
            raise typer.BadParameter(f"{e} has folds {sorted(have) or 'none'}, not {fold_ids}", param_hint="'--folds'")
        variants += [v for v in fam.variants(e) if dict(v)["fold"] in fold_ids]
    return variants


def _report(df, results: list[dict], fams: dict, out: str, seeds: int, *, wide: bool, show_dialogue: int,
            compare: str):
    """Print each family's table, the language models' parse and token counts, the dialogues asked for and the
    paired comparison; write table.csv and the plots. Returns the console (for the last line)."""
    import pandas as pd
    from rich.console import Console

    from causalplay.agents import agent_label, split_agent_specs
    from causalplay.bench.runner import summarise
    from causalplay.bench.shards import atomic_write
    from causalplay.core.metrics import mean_ci

    console = Console(width=10_000 if wide else None)
    tables = []
    for fam in dict.fromkeys(fams.values()):
        g = df[df["env"].map(lambda e, f=fam: fams[e] is f)]
        tab = fam.table(summarise(g))
        tables.append(tab)
        fam.plots(g, out)
        _print_tables(tab, fam, console, f" (mean ± {fam.family.spread_label(seeds)}; {seeds} seed(s))")
    atomic_write(Path(out, "table.csv"), pd.concat(tables, ignore_index=True).to_csv(index=False).encode())
    for r in results:  # language-model agents: unparsed answers, tokens
        if "parse_failure_rate" in r and r["parse_failure_rate"] == r["parse_failure_rate"]:  # (not NaN)
            console.print(f"{r['env']} {r['agent']} seed {r['seed']}: parse failures "
                          f"{100 * r['parse_failure_rate']:.2f}% of answers; tokens per episode "
                          f"{r['prompt_tokens_per_episode']:.0f} prompt + {r['completion_tokens_per_episode']:.0f}"
                          " completion")
    if show_dialogue > 0:
        from causalplay.bench.dialogues import print_dialogues

        print_dialogues(Path(out), df, show_dialogue, console)
    for e, g in df.groupby("env", sort=False):  # every agent met the same episodes: a paired comparison
        col = fams[e].paired_column
        pair = [agent_label(a, fams[e].name) for a in split_agent_specs(compare)] if col else []
        if len(pair) != 2 or not all(p in set(g["agent"]) for p in pair):
            continue
        x, y = (g[g["agent"] == p].sort_values(["seed", "episode"])[col].to_numpy() for p in pair)
        if len(x) == len(y) and len(x) > 1:
            m, h = mean_ci((x - y).tolist())
            console.print(f"{e}: {fams[e].display.get(col, col)} of {pair[0]} minus {pair[1]} on the same {len(x)} "
                          f"episodes: {m:+.3f} ± {h:.3f} (95% CI)")
    return console


def bench(
    env: str = typer.Option("causalplay/IVRE-v0", callback=_envs_cb, help="Comma-separated environment ids (any "
                            "family: Blicket, Overhypothesis, Nexiom, CausalDAG, Physics)."),
    agents: str | None = typer.Option(
        None, help="Comma-separated agent names or specs with options, e.g. planner:depth=2 (default: the family's "
                 "usual set; NOTEARS only when named).", callback=_agents_cb),
    episodes: int | None = typer.Option(None, min=1, help="Episodes per env x variant x agent x seed (default: the "
                                                         "family's, 1000; physics: 8 test tasks per fold)."),
    seeds: int = typer.Option(3, min=1, help="Number of seeds (0..seeds-1)."),
    out: str = typer.Option("runs/bench", help="Output folder (results.json, episodes.csv, table.csv, shards/, "
                                               "PNGs).", callback=_out_cb),
    shard_size: int = typer.Option(0, min=0, help="Episodes per shard (the unit of resuming and of parallel work; "
                                                  "0: the family's default)."),
    executor: str = typer.Option("process", help="serial, process (local pool), ray or dask (extras).",
                                 callback=_executor_cb),
    workers: int = typer.Option(0, min=0, help="Processes of the local pool or cluster (0: one per CPU)."),
    notears_episodes: int = typer.Option(
        200, min=1, help="Cap on episodes per seed of notears and notears-exact (one fit per episode per step)."),
    compare: str = typer.Option("eig,planner", help="Two agents to compare on the same episodes (paired "
                                                    "difference of episode R with a 95% CI).", callback=_compare_cb),
    wide: bool = typer.Option(False, "--wide", help="Print tables at full width instead of the terminal's."),
    # Annotated, so that a call from Python (causalplay demo) without them gets the plain defaults.
    show_dialogue: Annotated[int, typer.Option(
        help="Print the dialogue of the first N episodes (seed 0) of every language-model agent.")] = 0,
    address: Annotated[str, typer.Option(
        help="Cluster to run on (ray: host:port of `ray start --head`, or 'auto'; dask: tcp://host:8786). "
             "Empty: start a local one.")] = "",
    folds: Annotated[str, typer.Option(
        help="Only these folds (0-9 or 0,3,5) of envs whose variants are folds (the physics ids); default all.",
        callback=_folds_cb)] = "",
    list_agents_: Annotated[bool, typer.Option(
        "--list-agents", is_eager=True, callback=_list_cb,
        help="List every task family's env ids and agents, and the installed plug-ins, then exit.")] = False,
) -> None:
    """Run the benchmark and print each family's scores (mean ± 95% CI over seeds, or over episodes; physics: ± SD
    over folds)."""

    from causalplay.bench.executors import check_executor
    from causalplay.bench.runner import family_of, run_benchmark, summarise, write_results
    from causalplay.bench.shards import RunLocked

    env_ids = _merge("--env", [e.strip() for e in env.split(",") if e.strip()])
    fams = {e: family_of(e) for e in env_ids}
    per_env = _agents_per_env(fams, agents)
    try:
        check_executor(executor, workers or None, address or None)
    except ValueError as err:
        hint = "'--address'" if "address" in str(err) else "'--workers'" if "workers" in str(err) else None
        raise typer.BadParameter(str(err), param_hint=hint or "'--executor'") from None
    with usage_errors("'--agents'"):  # e.g. a symbolic agent on a pixel env fails here, not in a worker
        for e, fam in fams.items():
            for a in per_env[e]:
                fam.check_agent(e, a)
    if episodes is None:  # each family's default; one number for the run
        defaults = {f.family.default_episodes for f in fams.values()}
        if len(defaults) > 1:
            raise typer.BadParameter(f"these envs' families play {sorted(defaults)} episodes by default; give one "
                                     "number for all", param_hint="'--episodes'")
        episodes = defaults.pop()
    variants = _fold_variants(fams, folds)
    t0 = time.perf_counter()
    try:
        df = run_benchmark(env_ids, per_env, episodes, range(seeds), out, shard_size=shard_size or None,
                           executor=executor, workers=workers or None, address=address or None,
                           episodes_per_agent={"notears": notears_episodes, "notears-exact": notears_episodes},
                           variants=variants)
    except RunLocked as err:
        raise typer.BadParameter(str(err), param_hint="'--out'") from None
    except KeyboardInterrupt:
        print(f"\ninterrupted: the shards finished so far are in {out}/shards and verify; run the same command "
              "again to resume", file=sys.stderr)
        raise typer.Exit(130) from None
    wall = time.perf_counter() - t0
    results = summarise(df)
    write_results(results, out)
    console = _report(df, results, fams, out, seeds, wide=wide, show_dialogue=show_dialogue, compare=compare)
    console.print(f"wall time {wall:.1f} s; results in {out}/results.json, episodes.csv, table.csv, *.png")
