"""Perception: a small CNN that reads a rendered Blicket panel (which objects are on the machine, is it lit).

The model maps one 120x160 RGB frame of :mod:`causalplay.render` (Workbench) to ``MAX_OBJECTS + 1`` logits: the
on-bit of every object slot (only the first ``N`` are read; object ``i`` always stands in column ``i``, on the
plate or on the table) and the machine's light. It is trained from scratch by ``analyses/train_perception.py``
on frames rendered by our renderer with the labels they were rendered from; the shipped weights
(:data:`DEFAULT_WEIGHTS`, < 1 MB) come from that script's default config.

Importing this module imports torch only; Blender is needed to render training frames, never to read them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from causalplay.render.scene import HEIGHT, MAX_OBJECTS, WIDTH, make_frame

__all__ = ["PerceptionNet", "Perception", "sample_panels", "render_panels", "DEFAULT_WEIGHTS", "FORMAT"]

#: the weights shipped with the package (``analyses/train_perception.py``'s default config)
DEFAULT_WEIGHTS = Path(__file__).parents[1] / "data" / "perception" / "workbench_n9.pt"
#: bumped when the saved file's layout changes
FORMAT = 1


class PerceptionNet(nn.Module):
    """``uint8 [B, 120, 160, 3]`` -> logits ``[B, MAX_OBJECTS + 1]`` (slot on-bits, then lit).

    Four 3x3 conv blocks (each conv, batch norm, ReLU, 2x2 max pool) on the frame average-pooled to 60x80, then
    a linear layer on the flattened ``[width * 4, 3, 5]`` map: flattening keeps *where* a feature is, which is
    what tells the slots apart (object ``i`` always stands in the same column).
    """

    def __init__(self, width: int = 16, hidden: int = 128):
        super().__init__()
        for name, v in (("width", width), ("hidden", hidden)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")
        self.width, self.hidden = width, hidden
        chans = [3, width, 2 * width, 4 * width, 4 * width]
        layers: list[nn.Module] = [nn.AvgPool2d(2)]
        for a, b in zip(chans[:-1], chans[1:], strict=True):
            layers += [nn.Conv2d(a, b, 3, padding=1, bias=False), nn.BatchNorm2d(b), nn.ReLU(), nn.MaxPool2d(2)]
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(chans[-1] * 3 * 5, hidden), nn.ReLU(),
                                  nn.Linear(hidden, MAX_OBJECTS + 1))

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        x = frames.permute(0, 3, 1, 2).float().div(255.0).sub(0.5)
        return self.head(self.features(x))


def _as_frames(frames) -> torch.Tensor:
    x = torch.as_tensor(np.asarray(frames) if not isinstance(frames, torch.Tensor) else frames)
    if x.ndim == 3:
        x = x[None]
    if x.ndim != 4 or tuple(x.shape[1:]) != (HEIGHT, WIDTH, 3):
        raise ValueError(f"frames: expected uint8 [B, {HEIGHT}, {WIDTH}, 3] (or one [{HEIGHT}, {WIDTH}, 3] frame), "
                         f"got shape {tuple(x.shape)}")
    if x.dtype != torch.uint8:
        raise ValueError(f"frames: expected dtype uint8 (0-255 pixels), got {x.dtype}")
    return x


class Perception:
    """A trained :class:`PerceptionNet` with what it was trained on; reads frames into probabilities.

    Parameters
    ----------
    net : PerceptionNet
    meta : dict
        What the weights were trained on (``n_objects``, ``engine``, ``scene_version``, the training config and
        validation accuracy); saved with them.
    """

    def __init__(self, net: PerceptionNet, meta: dict | None = None):
        if not isinstance(net, PerceptionNet):
            raise TypeError(f"net: expected a PerceptionNet, got {type(net).__name__}")
        self.net = net.eval()
        self.meta = dict(meta or {})

    @classmethod
    def load(cls, path: str | os.PathLike | None = None) -> Perception:
        """Load weights saved by :meth:`save` (default: the shipped :data:`DEFAULT_WEIGHTS`)."""
        p = Path(DEFAULT_WEIGHTS if path is None else path)
        if p.is_dir():
            p = p / "model.pt"
        if not p.is_file():
            raise FileNotFoundError(f"perception weights {str(p)!r} not found; train them with "
                                    "`python analyses/train_perception.py` or pass the path of its model.pt")
        blob = torch.load(p, map_location="cpu", weights_only=True)
        if not isinstance(blob, dict) or blob.get("format") != FORMAT or "state_dict" not in blob:
            raise ValueError(f"{str(p)!r} is not a causalplay perception file (format {FORMAT})")
        meta = json.loads(blob["meta"])
        net = PerceptionNet(**meta["arch"])
        net.load_state_dict(blob["state_dict"])
        return cls(net, meta)

    def save(self, path: str | os.PathLike) -> Path:
        """Write weights and meta to ``path`` (one ``.pt`` file; float16 halves it, readouts are unchanged)."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        meta = {**self.meta, "arch": {"width": self.net.width, "hidden": self.net.hidden}}
        state = {k: (v.half() if v.is_floating_point() else v) for k, v in self.net.state_dict().items()}
        tmp = p.with_suffix(p.suffix + ".tmp")
        torch.save({"format": FORMAT, "state_dict": state, "meta": json.dumps(meta)}, tmp)
        os.replace(tmp, p)
        return p

    @property
    def n_objects(self) -> tuple[int, ...]:
        """Object counts the model was trained on."""
        return tuple(self.meta.get("n_objects", ()))

    @torch.no_grad()
    def probs(self, frames, n_objects: int, batch: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
        """``(on [B, N], lit [B])`` probabilities (float64) for uint8 frames ``[B, 120, 160, 3]``.

        Raises ``ValueError`` for frames of another shape or dtype, or an ``n_objects`` the model was not
        trained on.
        """
        if isinstance(n_objects, bool) or not isinstance(n_objects, int) or not 1 <= n_objects <= MAX_OBJECTS:
            raise ValueError(f"n_objects must be an int in 1..{MAX_OBJECTS}, got {n_objects!r}")
        if self.n_objects and n_objects not in self.n_objects:
            raise ValueError(f"this perception model was trained on N in {self.n_objects}, not N = {n_objects}; "
                             "train one for it with analyses/train_perception.py --n-objects")
        x = _as_frames(frames)
        out = [self.net(x[i:i + batch]) for i in range(0, len(x), batch)] or [torch.zeros(0, MAX_OBJECTS + 1)]
        p = torch.sigmoid(torch.cat(out).double())
        return p[:, :n_objects], p[:, MAX_OBJECTS]


def sample_panels(n: int, rng: np.random.Generator, n_objects: Sequence[int] = (9,),
                  p_on: float = 0.5, p_lit: float = 0.5) -> tuple[list[dict], np.ndarray, np.ndarray]:
    """``n`` random panels to render: objects drawn as the envs draw them (distinct, from CLEVR's 48), on-bits
    and the light independent Bernoulli draws (so the model cannot read the light off the objects).

    Returns
    -------
    frames : list of dict
        Canonical frames (:func:`causalplay.render.scene.make_frame`).
    on : bool ``[n, MAX_OBJECTS]``
        On-bits, padded with False past each panel's ``N``.
    lit : bool ``[n]``
    """
    from causalplay.envs.sampling import OBJECT_POOL

    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    counts = list(n_objects)
    if not counts or any(isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_OBJECTS for k in counts):
        raise ValueError(f"n_objects must be a non-empty list of ints in 1..{MAX_OBJECTS}, got {n_objects!r}")
    frames, on, lit = [], np.zeros((n, MAX_OBJECTS), bool), np.zeros(n, bool)
    for i in range(n):
        N = counts[int(rng.integers(len(counts)))]
        objs = [dict(zip(("shape", "material", "color"), OBJECT_POOL[j], strict=True))
                for j in rng.permutation(len(OBJECT_POOL))[:N]]
        on[i, :N] = rng.random(N) < p_on
        lit[i] = rng.random() < p_lit
        frames.append(make_frame(objs, on[i, :N].tolist(), bool(lit[i])))
    return frames, on, lit


def render_panels(frames: Sequence[dict], renderer, progress: bool = False, chunk: int = 256,
                  request: int = 64) -> np.ndarray:
    """Render canonical frames with a :class:`causalplay.render.Renderer`: uint8 ``[n, 120, 160, 3]``.

    ``chunk`` frames per progress-bar update (``progress``), ``request`` frames per worker request (keep
    ``request * seconds per frame`` under the renderer's timeout: Cycles takes 1-2 s a frame on a loaded CPU)."""
    from tqdm.auto import tqdm

    out = np.zeros((len(frames), HEIGHT, WIDTH, 3), np.uint8)
    with tqdm(total=len(frames), desc="rendered", unit="frame", disable=not progress) as bar:
        for s in range(0, len(frames), chunk):
            out[s:s + chunk] = np.stack(renderer.render_frames(frames[s:s + chunk], chunk=request))
            bar.update(min(chunk, len(frames) - s))
    return out
