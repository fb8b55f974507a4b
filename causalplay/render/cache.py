"""Frame cache keyed by the scene signature: an in-memory LRU in front of an optional on-disk PNG store."""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path

import numpy as np


class FrameCache:
    """LRU cache of rendered frames with an optional disk layer.

    Parameters
    ----------
    max_frames : int
        Frames kept in memory (one 160x120 frame is 57.6 kB; 4096 frames are about 236 MB). 0 disables memory.
    cache_dir : str or Path, optional
        Folder for a persistent PNG copy of every frame (``<dir>/<key[:2]>/<key>.png``, a few kB each). Frames
        found there survive processes and are shared by workers and evaluations on the same machine.

    Notes
    -----
    Cached arrays are returned read-only and shared between hits: copy before writing into them.
    """

    def __init__(self, max_frames: int = 4096, cache_dir: str | os.PathLike | None = None):
        if not isinstance(max_frames, int) or max_frames < 0:
            raise ValueError(f"max_frames = {max_frames!r}; expected an int >= 0")
        self.max_frames = max_frames
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        if self.cache_dir is not None:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
        self._mem: OrderedDict[str, np.ndarray] = OrderedDict()
        self.hits = self.disk_hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._mem)

    def _path(self, key: str) -> Path:
        assert self.cache_dir is not None
        return self.cache_dir / key[:2] / f"{key}.png"

    def get(self, key: str) -> np.ndarray | None:
        """The cached frame for ``key`` (memory first, then disk), or None."""
        img = self._mem.get(key)
        if img is not None:
            self._mem.move_to_end(key)
            self.hits += 1
            return img
        if self.cache_dir is not None:
            path = self._path(key)
            if path.exists():
                from PIL import Image

                with Image.open(path) as im:
                    img = np.asarray(im.convert("RGB"))
                img.flags.writeable = False
                self._remember(key, img)
                self.disk_hits += 1
                return img
        self.misses += 1
        return None

    def put(self, key: str, img: np.ndarray) -> np.ndarray:
        """Store ``img`` (made read-only) under ``key`` and return it."""
        img.flags.writeable = False
        self._remember(key, img)
        if self.cache_dir is not None:
            path = self._path(key)
            if not path.exists():
                from PIL import Image

                path.parent.mkdir(exist_ok=True)
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                Image.fromarray(img).save(tmp, format="PNG", compress_level=1)
                os.replace(tmp, path)  # atomic: concurrent readers never see half a file
        return img

    def _remember(self, key: str, img: np.ndarray) -> None:
        if self.max_frames == 0:
            return
        self._mem[key] = img
        self._mem.move_to_end(key)
        while len(self._mem) > self.max_frames:
            self._mem.popitem(last=False)

    def clear(self) -> None:
        """Drop the in-memory frames (the disk store is left alone)."""
        self._mem.clear()
