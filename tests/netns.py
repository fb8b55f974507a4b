"""Cluster tests' shared set-up: a network namespace that keeps cluster traffic on loopback, and a two-node Ray
cluster inside it. Imported by ``test_bench_cluster.py``, ``bench_cluster_run.py`` and ``test_fit_cluster.py``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent


def netns_problem() -> str | None:
    """``None`` if ``unshare -n`` works here, else why not (the reason a test skips)."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "needs unshare and ip (util-linux, iproute2) to keep cluster traffic in a network namespace"
    r = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True, text=True)
    return None if r.returncode == 0 else f"unshare -n is not permitted here ({r.stderr.strip()[:100]})"


def run_in_netns(script: Path, *args: str, home: Path, timeout: int = 540,
                 **env: str) -> tuple[list[dict], subprocess.CompletedProcess]:
    """Run ``python script args...`` in a network namespace of its own with loopback up, ``HOME`` at ``home``
    (which the test then checks is still empty) and Ray's usage reporting off; returns the ``RESULT {json}``
    lines it printed, parsed, and the process."""
    env = {**os.environ, "HOME": str(home), "RAY_USAGE_STATS_ENABLED": "0",
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]), **env}
    env.pop("RAY_ADDRESS", None)
    r = subprocess.run(["unshare", "-n", "sh", "-c", 'ip link set lo up; exec "$@"', "sh", sys.executable,
                        str(script), *args], capture_output=True, text=True, env=env, timeout=timeout)
    return [json.loads(ln[len("RESULT "):]) for ln in r.stdout.splitlines() if ln.startswith("RESULT ")], r


@contextmanager
def two_node_ray_cluster() -> Iterator[str]:
    """A ``ray.cluster_utils.Cluster`` of two nodes with 1 CPU each, all its files in a temporary folder removed
    afterwards; yields its address."""
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
            yield cluster.address
        finally:
            cluster.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def report(run, **fields) -> None:
    """The ``__main__`` of a script run by :func:`run_in_netns`: print ``fields`` and ``run()``'s dict (or the
    error) as one ``RESULT`` line, with ``ok``."""
    import traceback

    out = {**fields, "ok": False}
    try:
        out.update(run())
        out["ok"] = True
    except BaseException:  # noqa: BLE001 - reported to the test
        out["error"] = traceback.format_exc()[-3000:]
    print("RESULT " + json.dumps(out), flush=True)
