"""Pixel versions of the symbolic Blicket envs: the observation is the current panel rendered by Blender.

Registered ids: ``causalplay/IVRE-Pixels-v0`` (wraps ``causalplay/IVRE-v0``), ``causalplay/EST-Pixels-v1``
(wraps ``causalplay/EST-v1``) and the deprecated ``causalplay/EST-Pixels-v0`` (wraps ``causalplay/EST-v0``).
Importing this module does not import Blender; the renderer's worker process starts on the first ``reset``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from causalplay.render.renderer import Renderer
from causalplay.render.scene import HEIGHT, WIDTH, make_frame

__all__ = ["PIXEL_IDS", "PixelBlicketEnv", "PixelBatch", "make_pixel_batch", "pixel_batch",
           "shared_renderer"]

from .core import BlicketInfo
from .families import PIXEL_IDS  # pixel id -> the symbolic id it wraps (registered with the Blicket family)

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
    ``obs_mode="panel"`` (default): ``Box(0, 255, (120, 160, 3), uint8)``, the panel the symbolic env currently
    shows; the announced blicket count, panel number and phase are not drawn, they are in ``info``
    (``n_blickets`` from ``reset``, ``panel = {"step", "phase"}``). ``obs_mode="history"``: the symbolic
    history form with frames, ``Dict(frames=Box(0, 255, (T, 120, 160, 3), uint8), count=Box(0, 1, (1,)),
    shown=Box(0, 1, (1,)), last_belief=Box(0, 1, (N,)))``: every panel shown so far rendered in order, black
    frames after them; ``count`` = announced count / N, ``shown`` = panels shown / T.

    ## Rewards
    The symbolic env's (``+20`` solved, else ``-1 - JSD(oracle, belief)``).

    ## Starting State
    The symbolic env's ``reset`` (objects, blickets, context panels from ``self.np_random``).

    ## Episode End
    The symbolic env's: ``terminated`` when solved, ``truncated`` after ``T`` actions; stepping an ended
    episode raises the symbolic env's ``RuntimeError("the episode has ended; call reset()")``.

    ## Arguments
    * ``symbolic_id`` (str): registered symbolic id, e.g. ``"causalplay/IVRE-v0"``.
    * ``renderer`` (Renderer, optional): default the process-wide :func:`shared_renderer` for
      ``engine``/``cache_dir``.
    * ``engine`` (``"workbench"`` default, or ``"cycles"``).
    * ``cache_dir`` (path, optional): persistent frame store (one PNG per frame) shared across runs.
    * ``obs_mode`` (``"panel"`` or ``"history"``): see above.
    * ``render_mode`` (``"rgb_array"`` or None); ``**symbolic_kwargs`` go to the symbolic env.

    ## Version History
    * v0: initial release (Blender 5.0 Workbench, 160x120); ``obs_mode="history"`` added with EST-Pixels-v1.
    * EST-Pixels-v1: wraps EST-v1 (the paper's random context); EST-Pixels-v0 wraps the deprecated EST-v0.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}

    def __init__(self, symbolic_id: str, renderer: Renderer | None = None, engine: str = "workbench",
                 cache_dir: str | os.PathLike | None = None, render_mode: str | None = None, obs_mode: str = "panel",
                 **symbolic_kwargs: Any):
        if obs_mode not in ("panel", "history"):
            raise ValueError(f"obs_mode = {obs_mode!r}; expected 'panel' or 'history' for a pixel env")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode = {render_mode!r}; expected None or 'rgb_array'")
        if renderer is not None and not isinstance(renderer, Renderer):
            raise TypeError(f"renderer: expected a causalplay.render.Renderer, got {type(renderer).__name__}")
        self.symbolic_id = symbolic_id
        self.obs_mode = obs_mode
        self.symbolic = gymnasium.make(symbolic_id, disable_env_checker=True, obs_mode=obs_mode, **symbolic_kwargs)
        if not hasattr(self.symbolic.unwrapped, "panel"):
            raise TypeError(f"{symbolic_id!r} has no panel() method; it cannot be rendered")
        self.renderer = renderer if renderer is not None else shared_renderer(engine=engine, cache_dir=cache_dir)
        self.render_mode = render_mode
        self.action_space = self.symbolic.action_space
        frame = spaces.Box(0, 255, (HEIGHT, WIDTH, 3), np.uint8)
        if obs_mode == "panel":
            self.observation_space = frame
        else:
            cfg = self.symbolic.unwrapped.config
            T, N = cfg.horizon, cfg.n_objects
            unit = spaces.Box(0.0, 1.0, (1,), np.float32)
            self.observation_space = spaces.Dict({"frames": spaces.Box(0, 255, (T, HEIGHT, WIDTH, 3), np.uint8),
                                                  "count": unit, "shown": unit,
                                                  "last_belief": spaces.Box(0.0, 1.0, (N,), np.float32)})
        self.objects: list[dict] | None = None
        self._frame: np.ndarray | None = None
        self._frames: np.ndarray | None = None

    def _observe(self, symbolic_obs) -> tuple[Any, dict]:
        p = self.symbolic.unwrapped.panel()
        self._frame = self.renderer.render_frames([make_frame(self.objects, p["on"], p["lit"])])[0]
        panel = {"step": int(p["step"]), "phase": p["phase"]}
        if self.obs_mode == "panel":
            # a fresh copy per call: users keep observations, cached frames are shared and read-only
            return self._frame.copy(), panel
        self._frames[p["step"] - 1] = self._frame  # panel k sits at index k - 1, like the symbolic history
        N = len(self.objects)
        return {"frames": self._frames.copy(), "count": symbolic_obs[:1].copy(), "shown": symbolic_obs[1:2].copy(),
                "last_belief": symbolic_obs[-N:].copy()}, panel

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        sym, info = self.symbolic.reset(seed=seed, options=options)
        if "objects" not in info:
            raise RuntimeError(f"{self.symbolic_id!r}.reset() returned no info['objects'] to render")
        self.objects = [dict(o) for o in info["objects"]]
        if self.obs_mode == "history":
            self._frames = np.zeros(self.observation_space["frames"].shape, np.uint8)
        obs, panel = self._observe(sym)
        return obs, {**info, "panel": panel}

    def step(self, action):
        sym, reward, terminated, truncated, info = self.symbolic.step(action)
        obs, panel = self._observe(sym)
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


class PixelBatch:
    """``B`` episodes of a pixel id stepped together: the symbolic batch whose observation is the rendered panel.

    The benchmark's form of ``causalplay/IVRE-Pixels-v0`` and ``causalplay/EST-Pixels-v1`` (what
    :func:`causalplay.envs.make_batch` returns for a pixel id). Dynamics, rewards, the episode record and seeding
    are the symbolic batch's, so the same seed plays the same episodes as the symbolic id. The observation is a
    dict of tensors: ``frame`` uint8 ``[B, 120, 160, 3]`` (the current panel of every running episode; black for
    ended ones, which are not rendered) and ``count`` long ``[B]`` (the announced blicket count, told in the
    instructions and not drawn). Only agents that read pixels (``reads_pixels = True``) can play it.

    Parameters
    ----------
    symbolic : causalplay.envs.core.BlicketBatch
        A panel-mode symbolic batch.
    renderer : causalplay.render.Renderer
    """

    #: a pixel batch (the benchmark plays it only with agents whose ``reads_pixels`` is True)
    pixels = True
    layout = None

    def __init__(self, symbolic, renderer: Renderer):
        from causalplay.envs.sampling import OBJECT_POOL

        if getattr(symbolic, "obs_mode", None) != "panel":
            raise ValueError(f"PixelBatch wraps a panel-mode symbolic batch, got obs_mode = "
                             f"{getattr(symbolic, 'obs_mode', None)!r}")
        if not isinstance(renderer, Renderer):
            raise TypeError(f"renderer: expected a causalplay.render.Renderer, got {type(renderer).__name__}")
        self.symbolic, self.renderer = symbolic, renderer
        self._pool = [dict(zip(("shape", "material", "color"), o, strict=True)) for o in OBJECT_POOL]

    def __getattr__(self, name: str):
        # config, rules, n_objects, n_context, horizon, rewards, B, done, t, record, oracle, ... are the symbolic's
        if name == "symbolic":
            raise AttributeError(name)
        return getattr(self.symbolic, name)

    def observation(self) -> dict:
        s = self.symbolic
        frames = np.zeros((s.B, HEIGHT, WIDTH, 3), np.uint8)
        rows = np.flatnonzero(~s.done.numpy())
        if len(rows):
            k = s.current_panel().numpy()
            objs, panels, lit = s.objects.numpy(), s.panels.numpy(), s.lit.numpy()
            todo = [make_frame([self._pool[j] for j in objs[b]], panels[b, k[b]].tolist(), bool(lit[b, k[b]]))
                    for b in rows]
            frames[rows] = np.stack(self.renderer.render_frames(todo))
        import torch

        return {"frame": torch.from_numpy(frames), "count": s.n_blickets.clone()}

    def reset(self, rows=None) -> dict:
        self.symbolic.reset(rows)
        return self.observation()

    def step(self, action, *, check: bool = True):
        _, reward, solved, truncated = self.symbolic.step(action, check=check)
        return self.observation(), reward, solved, truncated

    def info(self) -> BlicketInfo:
        """The symbolic batch's :class:`~causalplay.envs.core.BlicketInfo` with ``layout=None``: the observation
        is the dict above, not the symbolic one's flat vector."""
        return dataclasses.replace(self.symbolic.info(), layout=None)


def make_pixel_batch(env_id: str, batch_size: int, seed=None, **kwargs) -> PixelBatch:
    """The batched form of a pixel id (:class:`PixelBatch`) over :func:`causalplay.envs.make_batch` of its symbolic
    id; ``engine`` and ``cache_dir`` pick the shared renderer, other keyword arguments go to the symbolic id."""
    if env_id not in PIXEL_IDS:
        raise ValueError(f"unknown pixel environment id {env_id!r}; expected one of {tuple(PIXEL_IDS)}")
    return pixel_batch(batch_size, np.random.default_rng(seed), PIXEL_IDS[env_id], **kwargs)


def pixel_batch(batch_size: int, rng, symbolic_id: str, engine: str = "workbench",
                cache_dir: str | os.PathLike | None = None, obs_mode: str = "panel", **kwargs) -> PixelBatch:
    """The batch entry point of the pixel ids (:class:`causalplay.envs.families.EnvEntry`): ``symbolic_id``'s
    batch drawn from ``rng``, seen through the shared renderer of ``engine`` / ``cache_dir``."""
    from causalplay.envs import make_batch

    if obs_mode != "panel":
        raise ValueError(f"obs_mode = {obs_mode!r}: the batched pixel task shows the current panel only "
                         "(obs_mode='panel'); agents keep their own memory")
    return PixelBatch(make_batch(symbolic_id, batch_size, seed=rng, **kwargs),
                      shared_renderer(engine=engine, cache_dir=cache_dir))
