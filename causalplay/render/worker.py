"""The renderer's worker process: imports Blender, builds the scene once, then renders frames on request.

Started by :class:`causalplay.render.Renderer` as ``python -m causalplay.render.worker FD ENGINE SAMPLES``; it
talks over the inherited socket ``FD`` (a :class:`multiprocessing.connection.Connection`, so Blender's own
stdout chatter cannot corrupt the protocol). Messages, parent -> worker: ``("render", [frame, ...])``,
``("rss", None)``, ``("quit", None)``; worker -> parent: ``("imported", version)``, ``("ready", info)``,
``("ok", payload)``, ``("error", traceback_text)``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from multiprocessing.connection import Connection


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main(argv: list[str]) -> int:
    fd, engine, samples = int(argv[0]), argv[1], int(argv[2])
    conn = Connection(fd)
    try:
        import bpy  # the import that fails where Blender is not installed
    except Exception:
        conn.send(("error", "import bpy failed:\n" + traceback.format_exc()))
        return 2
    conn.send(("imported", bpy.app.version_string))

    from .scene import BlenderScene, make_frame

    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
    out_path = os.path.join(shm, f"causalplay_render_{os.getpid()}.bmp")
    try:
        scene = BlenderScene(engine, samples=samples, out_path=out_path)
        # The probe frame: without EGL, Workbench aborts the whole process right here (the parent sees EOF).
        scene.render(make_frame([{"shape": "cube", "material": "rubber", "color": "gray"}], [True], True))
    except Exception:
        conn.send(("error", "scene construction failed:\n" + traceback.format_exc()))
        return 3
    conn.send(("ready", {"engine": engine, "pid": os.getpid(), "blender": bpy.app.version_string}))
    try:
        while True:
            try:
                cmd, arg = conn.recv()
            except EOFError:
                break
            if cmd == "quit":
                break
            try:
                if cmd == "render":
                    conn.send(("ok", [scene.render(f) for f in arg]))
                elif cmd == "rss":
                    conn.send(("ok", _rss_bytes()))
                elif cmd == "crash":  # tests: simulate a dying worker
                    os._exit(9)
                else:
                    conn.send(("error", f"unknown command {cmd!r}"))
            except Exception:
                conn.send(("error", traceback.format_exc()))
    finally:
        if os.path.exists(out_path):
            os.remove(out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
