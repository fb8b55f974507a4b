"""A `causalplay serve` subprocess on 127.0.0.1 and a free port, for the browser, fault and load tests."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "admin-token-for-tests-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``causalplay serve`` as a child process (own process group, so it can be SIGKILLed alone)."""

    def __init__(self, db: str, task: str = "nexiom", seed: int = 0, port: int | None = None, *args: str):
        self.db, self.task, self.seed = db, task, seed
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = args
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> Server:
        env = {**os.environ, "CAUSALPLAY_ADMIN_TOKEN": TOKEN, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "causalplay", "serve", "--db", self.db, "--host", "127.0.0.1",
             "--port", str(self.port), "--task", self.task, "--seed", str(self.seed), *self.args],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"causalplay serve exited with {self.proc.returncode}: "
                                   f"{self.proc.stderr.read().decode()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/healthz", timeout=1.0).status_code == 200:
                    return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"causalplay serve did not answer on {self.url} within {timeout} s")

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
