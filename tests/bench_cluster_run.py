"""Run the small benchmark of ``test_bench_cluster.py`` on Ray and Dask clusters (called inside a network namespace).

``python tests/bench_cluster_run.py OUT PART...`` with parts ``ray-local``, ``ray-cluster``, ``ray-abort``,
``dask``; writes ``OUT/<part>/table.csv`` and prints one JSON line per part (``{"part", "ok", "error", ...}``).
Not collected by pytest (no ``test_`` prefix): the test starts it with ``unshare -n`` so that cluster traffic
stays on loopback.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from netns import report, two_node_ray_cluster

from causalplay.bench import run_benchmark, summarise, table
from causalplay.bench.executors import make_executor

ENVS, AGENTS, EPISODES, SEEDS, SHARD = ["causalplay/IVRE-v0"], ["random", "eig"], 40, [0, 1], 20
#: the causal-DAG family through the same runner: 4 variants (split x linearity) x 2 agents x 2 seeds x 2 shards
DAG = dict(envs=["causalplay/CausalDAG-v1"], agents=["random", "change"], episodes=20, seeds=[0, 1], shard=10)


def small_table(out: Path, executor, envs=ENVS, agents=AGENTS, episodes=EPISODES, seeds=SEEDS, shard=SHARD,
                **kw) -> str:
    """The test benchmark into ``out``; returns ``table.csv``'s text (also written there)."""
    df = run_benchmark(envs, agents, episodes, seeds, out, shard_size=shard, executor=executor, progress=False,
                       **kw)
    text = table(summarise(df)).to_csv(index=False)
    (out / "table.csv").write_text(text)
    return text


def ray_local(out: Path) -> dict:
    import ray

    before = set(Path(tempfile.gettempdir()).glob("causalplay-ray-*"))
    t0 = time.perf_counter()
    small_table(out, "ray", workers=2)
    small_table(out / "dag", "ray", workers=2, **DAG)
    left = set(Path(tempfile.gettempdir()).glob("causalplay-ray-*")) - before
    return {"seconds": time.perf_counter() - t0, "ray_still_up": ray.is_initialized(),
            "temp_left": [str(p) for p in left]}


def ray_cluster(out: Path) -> dict:
    """A two-node cluster: the table through ``address=``, then an interrupted run on the same cluster."""
    import ray

    with two_node_ray_cluster() as address:
        with make_executor("ray", address=address) as ex:
            nodes = len([n for n in ray.nodes() if n["Alive"]])
            slots = ex.slots
            small_table(out, ex)
        aborted = ray_abort(out.with_name("ray-abort"), address=address)
    return {"nodes": nodes, "slots": slots, "abort": aborted}


def interrupted(out: Path, executor: str, **kw) -> dict:
    """Ctrl-C in the driver (KeyboardInterrupt raised when the second shard is about to be written): the run must
    stop, tear its executor down, and leave only verifying shards."""
    from causalplay import __version__
    from causalplay.bench import runner
    from causalplay.bench.shards import check_shard

    real, n = runner.write_shard, [0]

    def interrupting(*a, **k):
        if n[0] == 1:
            raise KeyboardInterrupt
        n[0] += 1
        return real(*a, **k)

    runner.write_shard = interrupting
    try:
        small_table(out, executor, **kw)
        raised = False
    except KeyboardInterrupt:
        raised = True
    finally:
        runner.write_shard = real
    plan = runner.plan_shards(ENVS, AGENTS, EPISODES, SEEDS, SHARD)
    verified = [s.filename for s in plan if check_shard(out / "shards", s, None, __version__) is None]
    return {"raised": raised, "verified": verified}


def ray_abort(out: Path, address: str | None = None) -> dict:
    """:func:`interrupted` with the Ray executor; Ray must be disconnected afterwards."""
    import ray

    rec = interrupted(out, "ray", address=address, workers=None if address else 2)
    return {**rec, "ray_still_up": ray.is_initialized()}


def dask(out: Path) -> dict:
    """The table on a 2-worker LocalCluster, then an interrupted run (its own LocalCluster, aborted)."""
    before = set(Path(tempfile.gettempdir()).glob("causalplay-dask-*"))
    small_table(out, "dask", workers=2)
    rec = interrupted(out.with_name("dask-abort"), "dask", workers=2)
    left = set(Path(tempfile.gettempdir()).glob("causalplay-dask-*")) - before
    return {"abort": rec, "temp_left": [str(p) for p in left]}


PARTS = {"ray-local": ray_local, "ray-cluster": ray_cluster, "dask": dask}

if __name__ == "__main__":
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    root = Path(sys.argv[1])
    for part in sys.argv[2:]:
        report(lambda part=part: PARTS[part](root / part), part=part)
