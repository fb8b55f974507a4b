"""Pixel versions of the symbolic Blicket envs: the observation is the current panel rendered by Blender.

Registered ids: ``causalplay/IVRE-Pixels-v0`` (wraps ``causalplay/IVRE-v0``) and ``causalplay/EST-Pixels-v0``
(wraps ``causalplay/EST-v0``). Importing this module does not import Blender; the renderer's worker process
starts on the first ``reset``.
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from causalplay.render.renderer import Renderer
from causalplay.render.scene import HEIGHT, WIDTH, make_frame

__all__ = ["PIXEL_IDS", "PixelBlicketEnv", "shared_renderer"]

#: pixel id -> the symbolic id it wraps
PIXEL_IDS = {
    "causalplay/IVRE-Pixels-v0": "causalplay/IVRE-v0",
    "causalplay/EST-Pixels-v0": "causalplay/EST-v0",
}

_RENDERERS: dict[tuple, Renderer] = {}


def shared_renderer(engine: str = "workbench", samples: int = 16, cache_size: int = 4096,
                    cache_dir: str | os.PathLike | None = None) -> Renderer:
    """One renderer (one Blender worker, one cache) per setting, shared by every pixel env in this process."""
    key = (engine, samples, cache_size, None if cache_dir is None else str(cache_dir))
    r = _RENDERERS.get(key)
    if r is None:
        r = _RENDERERS[key] = Renderer(engine=engine, samples=samples, cache_size=cache_size, cache_dir=cache_dir)
    return r


class PixelBlicketEnv(gymnasium.Env):
    """A symbolic Blicket env whose observation is the rendered current panel.

    ## Description
    The symbolic env (``causalplay/IVRE-v0`` or ``causalplay/EST-v0``) seen through a camera: a CLEVR-style
    scene rendered by Blender (:mod:`causalplay.render`), the objects in the trial on the machine, the others
    on the table in front of it, the machine lit (orange body, yellow lamp) or dark. Dynamics, actions,
    rewards, termination and seeding are the symbolic env's: the same seed gives the same episode.

    ## Action Space
    The symbolic env's: ``Box(0, 1, (2N,), float32)``, trial then belief probabilities.

    ## Observation Space
    ``Box(0, 255, (120, 160, 3), uint8)``: the panel the symbolic env currently shows. History panels are
    **not** included -- like the symbolic observation, one observation is one panel; an agent remembers
    earlier panels itself (or stacks frames with a wrapper). The announced blicket count, panel number and
    phase are not drawn; they are in ``info`` (``n_blickets`` from ``reset``, ``panel = {"step", "phase"}``).

    ## Rewards
    The symbolic env's (``+20`` solved, else ``-1 - JSD(oracle, belief)``).

    ## Starting State
    The symbolic env's ``reset`` (objects, blickets, context panels from ``self.np_random``).

    ## Episode End
    The symbolic env's: ``terminated`` when solved, ``truncated`` after ``T`` actions.

    ## Arguments
    * ``symbolic_id`` (str): registered symbolic id, e.g. ``"causalplay/IVRE-v0"``.
    * ``renderer`` (Renderer, optional): default the process-wide :func:`shared_renderer` for
      ``engine``/``cache_dir``.
    * ``engine`` (``"workbench"`` default, or ``"cycles"``).
    * ``cache_dir`` (path, optional): persistent frame store (one PNG per frame) shared across runs.
    * ``render_mode`` (``"rgb_array"`` or None); ``**symbolic_kwargs`` go to the symbolic env.

    ## Version History
    * v0: initial release (Blender 5.0 Workbench, 160x120).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}

    def __init__(self, symbolic_id: str, renderer: Renderer | None = None, engine: str = "workbench",
                 cache_dir: str | os.PathLike | None = None, render_mode: str | None = None, **symbolic_kwargs: Any):
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode = {render_mode!r}; expected None or 'rgb_array'")
        if renderer is not None and not isinstance(renderer, Renderer):
            raise TypeError(f"renderer: expected a causalplay.render.Renderer, got {type(renderer).__name__}")
        self.symbolic_id = symbolic_id
        self.symbolic = gymnasium.make(symbolic_id, disable_env_checker=True, **symbolic_kwargs)
        if not hasattr(self.symbolic.unwrapped, "panel"):
            raise TypeError(f"{symbolic_id!r} has no panel() method; it cannot be rendered")
        self.renderer = renderer if renderer is not None else shared_renderer(engine=engine, cache_dir=cache_dir)
        self.render_mode = render_mode
        self.action_space = self.symbolic.action_space
        self.observation_space = spaces.Box(0, 255, (HEIGHT, WIDTH, 3), np.uint8)
        self.objects: list[dict] | None = None
        self._frame: np.ndarray | None = None

    def _observe(self) -> tuple[np.ndarray, dict]:
        p = self.symbolic.unwrapped.panel()
        self._frame = self.renderer.render_frames([make_frame(self.objects, p["on"], p["lit"])])[0]
        # a fresh copy per call: users keep observations, cached frames are shared and read-only
        return self._frame.copy(), {"step": int(p["step"]), "phase": p["phase"]}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        _, info = self.symbolic.reset(seed=seed, options=options)
        if "objects" not in info:
            raise RuntimeError(f"{self.symbolic_id!r}.reset() returned no info['objects'] to render")
        self.objects = [dict(o) for o in info["objects"]]
        obs, panel = self._observe()
        return obs, {**info, "panel": panel}

    def step(self, action):
        _, reward, terminated, truncated, info = self.symbolic.step(action)
        obs, panel = self._observe()
        return obs, reward, terminated, truncated, {**info, "panel": panel}

    def render(self) -> np.ndarray | None:
        """The current frame (``render_mode="rgb_array"``)."""
        if self.render_mode is None:
            gymnasium.logger.warn("render() called with render_mode=None; pass render_mode='rgb_array'")
            return None
        if self._frame is None:
            raise RuntimeError("call reset() before render()")
        return np.array(self._frame)

    def close(self) -> None:
        # the renderer is shared; it is stopped with the process (or by whoever passed it in)
        self.symbolic.close()


for _pid, _sid in PIXEL_IDS.items():
    gymnasium.register(id=_pid, entry_point="causalplay.envs.pixels:PixelBlicketEnv", kwargs={"symbolic_id": _sid})
