"""Model recovery on a Ray cluster: ``analyses/nexiom_fit.py --stages models --executor ray --address HOST:PORT`` on a
two-node cluster writes the table a serial run writes.

Cluster traffic must stay on loopback: the cluster run happens in this file run as a script
(``python tests/test_fit_cluster.py OUT``) inside a network namespace of its own (``unshare -n``), with ``HOME``
pointed at an empty folder that must stay empty (as ``tests/test_bench_cluster.py`` does for the benchmark).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

HERE = Path(__file__).resolve().parent
SMOKE_MODELS = ["--smoke", "--stages", "models", "--model-recovery-datasets", "2"]


def _netns_problem() -> str | None:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "needs unshare and ip (util-linux, iproute2) to keep cluster traffic in a network namespace"
    r = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True, text=True)
    return None if r.returncode == 0 else f"unshare -n is not permitted here ({r.stderr.strip()[:100]})"


@pytest.mark.slow
def test_model_recovery_on_a_two_node_ray_cluster_gives_the_serial_table(tmp_path):
    if importlib.util.find_spec("ray") is None:
        pytest.skip("the ray extra is not installed (pip install 'causalplay[ray]')")
    why = _netns_problem()
    if why:
        pytest.skip(why)
    from analysis import load_analysis

    load_analysis("nexiom_fit").main(SMOKE_MODELS + ["--out", str(tmp_path), "--name", "serial"])
    home = tmp_path / "home"
    home.mkdir()
    # matplotlib (the script's figures) keeps its font cache in MPLCONFIGDIR, else under HOME
    env = {**os.environ, "HOME": str(home), "RAY_USAGE_STATS_ENABLED": "0", "MPLCONFIGDIR": str(tmp_path / "mpl"),
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    env.pop("RAY_ADDRESS", None)
    r = subprocess.run(["unshare", "-n", "sh", "-c", 'ip link set lo up; exec "$@"', "sh", sys.executable,
                        str(Path(__file__)), str(tmp_path)], capture_output=True, text=True, env=env, timeout=540)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, r.stderr[-3000:]
    rec = json.loads(lines[-1][len("RESULT "):])
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
    """Inside the namespace: a 2-node ``ray.cluster_utils.Cluster`` (1 CPU each), the script pointed at it."""
    import ray
    from analysis import load_analysis
    from ray.cluster_utils import Cluster

    from causalplay.bench.executors import _ray_token_without_home

    _ray_token_without_home()  # as make_executor does for a local cluster: no token file in the home folder
    tmp = tempfile.mkdtemp(prefix="causalplay-raycl-")
    os.environ["RAY_TMPDIR"] = tmp  # Cluster writes its address file under $RAY_TMPDIR/ray, not /tmp/ray
    os.makedirs(os.path.join(tmp, "ray"))
    try:
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False,
                                                                "temp_dir": tmp})
        try:
            cluster.add_node(num_cpus=1, temp_dir=tmp)
            cluster.wait_for_nodes()
            load_analysis("nexiom_fit").main(SMOKE_MODELS + ["--out", str(root), "--name", "ray", "--executor", "ray",
                                                             "--address", cluster.address])
            ray.init(address=cluster.address, log_to_driver=False)
            nodes = len([n for n in ray.nodes() if n["Alive"]])
            ray.shutdown()
        finally:
            cluster.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"nodes": nodes}


if __name__ == "__main__":
    import traceback

    out = {"ok": False}
    try:
        out.update(_cluster_run(Path(sys.argv[1])))
        out["ok"] = True
    except BaseException:  # noqa: BLE001 - reported to the test
        out["error"] = traceback.format_exc()[-3000:]
    print("RESULT " + json.dumps(out), flush=True)
