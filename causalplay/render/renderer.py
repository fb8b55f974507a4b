"""Parent side of the renderer: a long-lived Blender worker process behind a frame cache."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from .cache import FrameCache
from .scene import ENGINES, HEIGHT, WIDTH, make_frame, signature

EGL_PACKAGES = "libegl1 libegl-mesa0 libgl1-mesa-dri"


class RendererUnavailable(RuntimeError):
    """Blender (``bpy``) cannot be imported, or its worker cannot start."""


class RenderError(RuntimeError):
    """The worker failed to render a frame (after one restart)."""


def bpy_available() -> bool:
    """Whether ``bpy`` is installed (checked without importing it: importing Blender costs seconds)."""
    return importlib.util.find_spec("bpy") is not None


class Renderer:
    """Render Blicket panels to uint8 ``(120, 160, 3)`` arrays with a long-lived Blender worker.

    The worker builds the scene once; each frame only moves object slots, swaps meshes and materials and switches
    the machine's light. Frames are cached by their scene signature (memory LRU, optional disk store). If the
    worker dies it is restarted and the request retried once.

    Parameters
    ----------
    engine : {"workbench", "cycles"}
        Workbench (fast, default; needs EGL) or Cycles on CPU (path traced, ~0.5 s/frame). If Workbench cannot
        start because EGL is missing, the renderer warns and falls back to Cycles (``fallback=True``).
    samples : int
        Cycles samples per pixel.
    cache_size : int
        Frames kept in the in-memory LRU (0 disables it).
    cache_dir : str, optional
        Persistent PNG frame store shared across processes.
    timeout : float
        Seconds to wait for the worker to start or answer one request.
    fallback : bool
        Fall back to Cycles when Workbench cannot get an EGL context.

    Examples
    --------
    >>> with Renderer() as r:  # doctest: +SKIP
    ...     img = r.render([{"shape": "cube", "material": "metal", "color": "red"}], on=[1], lit=True)
    >>> img.shape, img.dtype  # doctest: +SKIP
    ((120, 160, 3), dtype('uint8'))
    """

    def __init__(self, engine: str = "workbench", samples: int = 16, cache_size: int = 4096,
                 cache_dir: str | os.PathLike | None = None, timeout: float = 120.0, fallback: bool = True):
        if engine not in ENGINES:
            raise ValueError(f"engine = {engine!r}; expected one of {ENGINES}")
        if not isinstance(samples, int) or samples < 1:
            raise ValueError(f"samples = {samples!r}; expected an int >= 1")
        if not bpy_available():
            raise RendererUnavailable("Blender's Python module `bpy` is not installed; install the extra: "
                                      "pip install 'causalplay[render]' (bpy==5.0.1 needs Python 3.11)")
        self.requested_engine = self.engine = engine
        self.samples, self.timeout, self.fallback = samples, float(timeout), fallback
        self.cache = FrameCache(cache_size, cache_dir)
        self.renders = self.restarts = 0
        self._proc: subprocess.Popen | None = None
        self._conn: Connection | None = None
        self._log_path = ""
        self.info: dict[str, Any] = {}

    # --- worker lifecycle -----------------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        """Whether a worker process is running."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The worker's process id (None before the first frame)."""
        return self._proc.pid if self.alive else None

    def _log_tail(self, n: int = 2000) -> str:
        try:
            with open(self._log_path, errors="replace") as f:
                text = f.read()
        except OSError:
            return ""
        lines = [ln for ln in text.splitlines() if "EGL Error" not in ln or "EGL" in text[-n:]]
        return "\n".join(lines)[-n:]

    def _spawn(self, engine: str) -> None:
        parent_sock, child_sock = socket.socketpair()
        fd, self._log_path = tempfile.mkstemp(prefix="causalplay_render_", suffix=".log")
        with os.fdopen(fd, "w") as log:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "causalplay.render.worker", str(child_sock.fileno()), engine, str(self.samples)],
                pass_fds=(child_sock.fileno(),), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # Blender prints a line per frame; keep it out of the way
                stderr=log, env={"PYTHONUNBUFFERED": "1", **os.environ})
        child_sock.close()
        self._conn = Connection(parent_sock.detach())

    def _expect(self, what: str) -> Any:
        """Receive one message of kind ``what`` (or raise with the worker's own words)."""
        assert self._conn is not None and self._proc is not None
        if not self._conn.poll(self.timeout):
            raise RenderError(f"renderer worker did not answer within {self.timeout:.0f} s (waiting for {what!r})")
        try:
            kind, payload = self._conn.recv()
        except (EOFError, OSError) as e:
            self._proc.wait(timeout=10)
            raise _WorkerDied(self._proc.returncode) from e
        if kind == "error":
            raise RenderError(f"renderer worker error:\n{payload}")
        if kind != what:
            raise RenderError(f"renderer protocol: expected {what!r}, got {kind!r}")
        return payload

    def start(self) -> Renderer:
        """Start the worker (done lazily by the first render); returns self."""
        if self.alive:
            return self
        if self._proc is not None:  # there was a worker and it died
            self.restarts += 1
        self.close()
        self._spawn(self.engine)
        try:
            self._expect("imported")
        except _WorkerDied as e:
            raise RendererUnavailable(f"the renderer worker could not import bpy (exit code {e.code}); install "
                                      f"'causalplay[render]'.\nworker log:\n{self._log_tail()}") from None
        try:
            self.info = self._expect("ready")
        except _WorkerDied as e:
            tail = self._log_tail()
            if self.engine == "workbench":
                msg = (f"Blender's Workbench engine could not start (worker exit code {e.code}): it needs EGL for "
                       f"headless OpenGL. Install the Debian packages: apt-get install {EGL_PACKAGES}.")
                if not self.fallback:
                    raise RendererUnavailable(msg + f"\nworker log:\n{tail}") from None
                warnings.warn(msg + " Falling back to Cycles on CPU (about 20x slower).", RuntimeWarning, stacklevel=3)
                self.engine = "cycles"
                return self.start()
            raise RendererUnavailable(f"the renderer worker died while building the scene:\n{tail}") from None
        return self

    def close(self) -> None:
        """Stop the worker. The renderer restarts it if used again."""
        if self._conn is not None:
            try:
                if self.alive:
                    self._conn.send(("quit", None))
            except OSError:
                pass
            self._conn.close()
            self._conn = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        if self._log_path and os.path.exists(self._log_path):
            os.remove(self._log_path)
            self._log_path = ""

    def __deepcopy__(self, memo: dict) -> Renderer:
        # a handle on one worker process and its cache: copies (e.g. of an env spec's kwargs) share it
        return self

    def __enter__(self) -> Renderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _request(self, cmd: str, arg: Any) -> Any:
        """Send one request; if the worker died, restart it and retry once."""
        for _attempt in (0, 1):
            self.start()
            assert self._conn is not None
            try:
                self._conn.send((cmd, arg))
                return self._expect("ok")
            except (_WorkerDied, BrokenPipeError, ConnectionResetError) as e:
                died = e
        raise RenderError(f"renderer worker died twice in a row:\n{self._log_tail()}") from died

    def worker_rss(self) -> int:
        """Resident memory of the worker process, bytes."""
        return int(self._request("rss", None))

    def _crash_worker(self) -> None:
        """Kill the worker from inside (tests of the restart path)."""
        self.start()
        assert self._conn is not None
        self._conn.send(("crash", None))
        self._proc.wait(timeout=self.timeout)  # type: ignore[union-attr]  (a loaded machine may still be importing bpy)

    # --- rendering ---------------------------------------------------------------------------------------------------
    def key(self, frame: Mapping[str, Any]) -> str:
        """Cache key (scene signature) of a canonical frame under this renderer's engine."""
        return signature(frame, self.engine, self.samples)

    def render(self, objects: Sequence[Mapping[str, str]], on: Sequence[Any], lit: bool) -> np.ndarray:
        """Render one panel.

        Parameters
        ----------
        objects : sequence of dict
            ``{"shape": "cube"|"sphere"|"cylinder", "material": "metal"|"rubber", "color": ...}`` per object.
        on : sequence of bool
            Which objects are on the machine.
        lit : bool
            Whether the machine is lit.

        Returns
        -------
        np.ndarray
            uint8 ``(120, 160, 3)``, read-only (cached frames are shared).
        """
        return self.render_frames([make_frame(objects, on, lit)])[0]

    def render_frames(self, frames: Sequence[Mapping[str, Any]], chunk: int = 64) -> list[np.ndarray]:
        """Render canonical frames (from :func:`make_frame`), serving cached ones and batching the rest."""
        keys = [self.key(f) for f in frames]
        out: list[np.ndarray | None] = [self.cache.get(k) for k in keys]
        if any(img is None for img in out) and not self.info:
            # First render: start the worker, which settles the engine (Workbench may fall back to Cycles).
            # Fully cached requests never need Blender at all.
            self.start()
            if self.engine != self.requested_engine:
                keys = [self.key(f) for f in frames]
                out = [self.cache.get(k) for k in keys]
        todo = list(dict.fromkeys(k for k, img in zip(keys, out, strict=True) if img is None))  # each key once
        frame_of = dict(zip(keys, frames, strict=True))  # equal keys: equal frames (the key hashes the frame)
        fresh: dict[str, np.ndarray] = {}
        for s in range(0, len(todo), chunk):
            part = todo[s : s + chunk]
            raws = self._request("render", [frame_of[k] for k in part])
            for k, raw in zip(part, raws, strict=True):
                img = np.frombuffer(raw, np.uint8).reshape(HEIGHT, WIDTH, 3).copy()
                fresh[k] = self.cache.put(k, img)
                self.renders += 1
        return [img if img is not None else fresh[k] for img, k in zip(out, keys, strict=True)]


class _WorkerDied(Exception):
    def __init__(self, code: int | None):
        super().__init__(f"worker exited with code {code}")
        self.code = code
