"""``causalplay render``: a contact sheet of one pixel episode -- every panel it shows, labelled with its number,
phase and outcome."""

from __future__ import annotations

from typing import Any

import numpy as np
import typer

from .config import usage_errors


def episode_frames(env_id: str, seed: int = 0, engine: str = "workbench") -> tuple[list[np.ndarray], list[dict], list]:
    """Run one episode of a pixel env with seeded random actions.

    Returns
    -------
    frames : list of uint8 ``(120, 160, 3)``
        The observation before each action, then the final one.
    panels : list of dict
        The symbolic panel behind each frame (``on``, ``lit``, ``step``, ``phase``).
    objects : list of dict
        The episode's objects.
    """
    import gymnasium

    import causalplay.envs  # noqa: F401  (registers the ids)
    from causalplay.envs.pixels import PIXEL_IDS

    if env_id not in PIXEL_IDS:
        raise ValueError(f"env = {env_id!r}; expected one of {tuple(PIXEL_IDS)}")
    env = gymnasium.make(env_id, engine=engine, disable_env_checker=True)
    obs, info = env.reset(seed=seed)
    env.action_space.seed(seed)
    frames, panels = [obs], [env.unwrapped.symbolic.unwrapped.panel()]
    done = False
    while not done:
        obs, _, term, trunc, info = env.step(env.action_space.sample())
        done = term or trunc
        p = env.unwrapped.symbolic.unwrapped.panel()
        if p["step"] != panels[-1]["step"]:  # the last step may show the same panel again
            frames.append(obs)
            panels.append(p)
    objects = env.unwrapped.objects
    env.close()
    return frames, panels, objects


def contact_sheet(frames: list[np.ndarray], panels: list[dict[str, Any]], objects: list[dict], title: str = "",
                  scale: int = 2, cols: int = 5):
    """Lay frames out in a grid with a caption under each (``panel k · phase · LIT/unlit · on: 0 3``).

    Returns a ``PIL.Image``.
    """
    from PIL import Image, ImageDraw

    if not frames:
        raise ValueError("frames: expected at least one frame")
    if scale < 1 or cols < 1:
        raise ValueError(f"scale = {scale!r} and cols = {cols!r}; expected integers >= 1")
    h, w = frames[0].shape[0] * scale, frames[0].shape[1] * scale
    cap, head, pad = 16, 34, 6
    rows = -(-len(frames) // cols)
    sheet = Image.new("RGB", (cols * (w + pad) + pad, head + rows * (h + cap + pad) + pad), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    legend = "  ".join(f"{i}:{o['color']} {o['material']} {o['shape']}" for i, o in enumerate(objects))
    draw.text((pad, 3), title, fill=(0, 0, 0))
    draw.text((pad, 17), legend[: 6 * cols * w // 36], fill=(60, 60, 60))
    for k, (img, p) in enumerate(zip(frames, panels, strict=True)):
        r, c = divmod(k, cols)
        x, y = pad + c * (w + pad), head + r * (h + cap + pad)
        sheet.paste(Image.fromarray(np.asarray(img)).resize((w, h), Image.NEAREST), (x, y))
        on = " ".join(str(i) for i in np.flatnonzero(np.asarray(p["on"])))
        text = f"{p['step']} {p['phase']} {'LIT' if p['lit'] else 'unlit'} on: {on or '-'}"
        draw.text((x, y + h + 2), text, fill=(200, 90, 0) if p["lit"] else (0, 0, 0))
    return sheet


def render(
    env: str = typer.Option("causalplay/IVRE-Pixels-v0", help="Pixel env id."),
    seed: int = typer.Option(0, help="Episode seed (the same seed gives the same symbolic episode)."),
    out: str = typer.Option("sheet.png", help="Output PNG."),
    engine: str = typer.Option("workbench", help="workbench (fast) or cycles (path traced, slow)."),
    scale: int = typer.Option(2, help="Upscaling of each 160x120 frame."),
    cols: int = typer.Option(5, help="Frames per row."),
) -> None:
    """Write a contact sheet of one episode: every panel, labelled with its phase and whether it lit."""
    with usage_errors():
        frames, panels, objects = episode_frames(env, seed=seed, engine=engine)
    sheet = contact_sheet(frames, panels, objects, title=f"{env}  seed={seed}  engine={engine}",
                          scale=scale, cols=cols)
    sheet.save(out)
    typer.echo(f"wrote {out} ({len(frames)} panels)")
