"""Helpers of the serve tests and the load benchmark: a `causalplay serve` subprocess on 127.0.0.1 and a free port,
a throw-away PostgreSQL server, and the crafted inputs every route must refuse."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "admin-token-for-tests-0123456789"
# (path, form) pairs that must be refused with 4xx and store nothing, on a session in the task stage at test 1
# with 4 objects: digits str.isdigit() accepts but int() does not ('¹', '²', '①'), one int() reads as 1 ('١',
# Arabic-Indic), and a number too long for int() (Python refuses more than 4,300 digits).
CRAFTED = [("/test", {"seq": "¹", "objects": ["0"]}), ("/test", {"seq": "1", "objects": ["²"]}),
           ("/test", {"seq": "1", "objects": ["①"]}), ("/test", {"seq": "1", "objects": ["١"]}),
           ("/test", {"seq": "9" * 4301, "objects": ["0"]}), ("/test", {"seq": "1", "objects": ["1" * 5000]}),
           ("/test", {"seq": "1", "objects": ["0 "]}), ("/test", {"seq": "+1", "objects": ["0"]}),
           ("/judge", {"blickets": ["²"], "rule": "disjunctive"}),
           ("/judge", {"blickets": ["١"], "rule": "disjunctive"})]
# and on a session at the comprehension check
CRAFTED_CHECK = [("/check", {"how": "test", "count": c, "when": "ready"}) for c in ("²", "١", "2" * 5000, "-2")]


def write_study(path: Path, **fields) -> Path:
    """A study file with ``fields`` (TOML written by hand: strings, numbers, booleans, lists of tables)."""
    def val(v):
        return ("true" if v else "false") if isinstance(v, bool) else repr(v) if isinstance(v, int | float) \
            else f'"""{v}"""' if isinstance(v, str) else "[" + ", ".join(map(val, v)) + "]"
    lines = [f"{k} = {val(v)}" for k, v in fields.items() if k != "conditions"]
    for c in fields.get("conditions", ()):
        lines += ["[[conditions]]", *(f"{k} = {val(v)}" for k, v in c.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


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
             "--port", str(self.port), *(["--task", self.task] if self.task else []), "--seed", str(self.seed),
             *self.args],
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
        # `with Server(...).start(timeout) as srv:` must not start a second server (the first would be left running)
        return self if self.proc is not None and self.proc.poll() is None else self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@contextlib.contextmanager
def postgres():
    """A PostgreSQL server of the system's binaries in a temporary folder (127.0.0.1, a free port), as
    ``(url, None)``, or ``(None, reason)`` where none can start. As root it runs as the unprivileged 'nobody'."""
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    bindir = next((d for d in dirs if os.path.exists(f"{d}/initdb") and os.path.exists(f"{d}/pg_ctl")), None)
    if bindir is None and shutil.which("initdb") and shutil.which("pg_ctl"):
        bindir = os.path.dirname(shutil.which("initdb"))
    if bindir is None:
        yield None, "no PostgreSQL server binaries (initdb, pg_ctl) found; install Debian's postgresql"
        return
    root = Path(tempfile.mkdtemp(prefix="causalplay-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        # PostgreSQL refuses to run as root: run it as the unprivileged 'nobody' in a folder it owns.
        try:
            uid = pwd.getpwnam("nobody").pw_uid
        except KeyError:
            uid = None
        if uid is None or shutil.which("runuser") is None:
            shutil.rmtree(root, ignore_errors=True)
            yield None, "running as root without a 'nobody' user and runuser to run PostgreSQL as"
            return
        prefix = ["runuser", "-u", "nobody", "--"]
        os.chown(root, uid, -1)
    data, port = root / "data", free_port()
    try:
        init = subprocess.run([*prefix, f"{bindir}/initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E",
                               "UTF8"], capture_output=True, text=True, timeout=120)
        if init.returncode != 0:
            yield None, f"initdb failed: {init.stderr.strip()[-500:]}"
            return
        start = subprocess.run([*prefix, f"{bindir}/pg_ctl", "-D", str(data), "-l", str(root / "log"), "-w", "-t",
                                "60", "-o", f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=200",
                                "start"], capture_output=True, text=True, timeout=120)
        if start.returncode != 0:
            yield None, f"PostgreSQL did not start: {start.stderr.strip()[-500:]}"
            return
        try:
            yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres", None
        finally:
            subprocess.run([*prefix, f"{bindir}/pg_ctl", "-D", str(data), "-m", "immediate", "stop"],
                           capture_output=True, timeout=60)
    finally:
        shutil.rmtree(root, ignore_errors=True)
