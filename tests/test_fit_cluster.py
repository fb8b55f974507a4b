"""Model recovery on a Ray cluster: ``analyses/nexiom_fit.py --stages models --executor ray --address HOST:PORT`` on a
two-node cluster writes the table a serial run writes.

Cluster traffic must stay on loopback: the cluster run happens in this file run as a script
(``python tests/test_fit_cluster.py OUT``) inside a network namespace of its own (``unshare -n``), with ``HOME``
pointed at an empty folder that must stay empty (as ``tests/test_bench_cluster.py`` does for the benchmark).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from netns import netns_problem, report, run_in_netns, two_node_ray_cluster

SMOKE_MODELS = ["--smoke", "--stages", "models", "--model-recovery-datasets", "2"]


@pytest.mark.slow
def test_model_recovery_on_a_two_node_ray_cluster_gives_the_serial_table(tmp_path):
    if importlib.util.find_spec("ray") is None:
        pytest.skip("the ray extra is not installed (pip install 'causalplay[ray]')")
    why = netns_problem()
    if why:
        pytest.skip(why)
    from analysis import load_analysis

    load_analysis("nexiom_fit").main(SMOKE_MODELS + ["--out", str(tmp_path), "--name", "serial"])
    home = tmp_path / "home"
    home.mkdir()
    # matplotlib (the script's figures) keeps its font cache in MPLCONFIGDIR, else under HOME
    recs, r = run_in_netns(Path(__file__), str(tmp_path), home=home, MPLCONFIGDIR=str(tmp_path / "mpl"))
    assert recs, r.stderr[-3000:]
    rec = recs[-1]
    assert rec["ok"], rec.get("error")
    assert rec["nodes"] == 2
    serial = pd.read_csv(tmp_path / "serial" / "model_recovery.csv")
    ray = pd.read_csv(tmp_path / "ray" / "model_recovery.csv")
    assert len(serial) == 4  # smoke: 2 generating models x 2 data sets
    assert (serial[["true", "dataset", "picked", "picked_1se"]] == ray[["true", "dataset", "picked", "picked_1se"]]
            ).all().all()
    # every fit is seeded: the same scores wherever it ran (tolerance for summation order; measured equal)
    np.testing.assert_allclose(ray.filter(like="nats_"), serial.filter(like="nats_"), rtol=1e-9)
    assert list(home.iterdir()) == []  # Ray and the fits leave nothing in the user's home


def _cluster_run(root: Path) -> dict:
    """Inside the namespace: the script pointed at a two-node cluster."""
    import ray
    from analysis import load_analysis

    with two_node_ray_cluster() as address:
        load_analysis("nexiom_fit").main(SMOKE_MODELS + ["--out", str(root), "--name", "ray", "--executor", "ray",
                                                         "--address", address])
        ray.init(address=address, log_to_driver=False)
        nodes = len([n for n in ray.nodes() if n["Alive"]])
        ray.shutdown()
    return {"nodes": nodes}


if __name__ == "__main__":
    import sys

    report(lambda: _cluster_run(Path(sys.argv[1])))
