"""Ray (local head, 2-node cluster) and Dask (LocalCluster) give serial's table.csv; Ctrl-C stops them.

Cluster traffic must stay on loopback: the runs happen in ``tests/bench_cluster_run.py`` inside a network
namespace of their own (``unshare -n``), with ``HOME`` pointed at an empty folder that must stay empty.
"""

import importlib.util

import pytest
from bench_cluster_run import AGENTS, DAG, ENVS, EPISODES, SEEDS, SHARD, small_table
from netns import HERE, netns_problem, run_in_netns

HAVE = {m: importlib.util.find_spec(m) is not None for m in ("ray", "distributed")}


@pytest.fixture(scope="module")
def cluster_runs(tmp_path_factory):
    why = netns_problem()
    if why:
        pytest.skip(why)
    parts = [p for p, m in (("ray-local", "ray"), ("ray-cluster", "ray"), ("dask", "distributed")) if HAVE[m]]
    if not parts:
        pytest.skip("neither the ray nor the dask extra is installed (pip install 'causalplay[ray,dask]')")
    root = tmp_path_factory.mktemp("cluster")
    home = root / "home"
    home.mkdir()
    recs, r = run_in_netns(HERE / "bench_cluster_run.py", str(root), *parts, home=home)
    serial = small_table(root / "serial", "serial")
    serial_dag = small_table(root / "serial" / "dag", "serial", **DAG)
    return {"root": root, "home": home, "results": {rec["part"]: rec for rec in recs}, "serial": serial,
            "serial_dag": serial_dag, "log": r.stderr[-3000:]}


def _check(runs, part, module):
    if not HAVE[module]:
        pytest.skip(f"the {module} extra is not installed")
    rec = runs["results"].get(part)
    assert rec is not None, runs["log"]
    assert rec["ok"], rec.get("error")
    assert (runs["root"] / part / "table.csv").read_text() == runs["serial"]  # byte for byte
    assert list(runs["home"].iterdir()) == []  # nothing left in the user's home
    return rec


def test_ray_local_head_same_table(cluster_runs):
    rec = _check(cluster_runs, "ray-local", "ray")
    assert not rec["ray_still_up"] and rec["temp_left"] == []  # own cluster stopped, its temp dir removed
    # the causal-DAG table too, byte for byte (every family goes through the same runner)
    dag = (cluster_runs["root"] / "ray-local" / "dag" / "table.csv").read_text()
    assert dag == cluster_runs["serial_dag"] and dag.count("\n") == 1 + 4 * 2


def test_ray_two_node_cluster_same_table_and_ctrl_c(cluster_runs):
    rec = _check(cluster_runs, "ray-cluster", "ray")
    assert rec["nodes"] == 2 and rec["slots"] == 2
    ab = rec["abort"]
    assert ab["raised"] and not ab["ray_still_up"]  # Ctrl-C in the driver tears the executor down
    n_shards = len(ENVS) * len(AGENTS) * len(SEEDS) * (EPISODES // SHARD)
    assert len(ab["verified"]) == 1 < n_shards  # the one shard written before Ctrl-C verifies


def test_dask_local_cluster_same_table_and_ctrl_c(cluster_runs):
    rec = _check(cluster_runs, "dask", "distributed")
    assert rec["abort"]["raised"] and len(rec["abort"]["verified"]) == 1
    assert rec["temp_left"] == []  # scratch folders of both LocalClusters removed
