"""Inline SVG for objects and the machine (used by the templates).

Simple SVG shapes, not the Blender frames of :mod:`causalplay.render`: a page needs a picture of any set of
objects on the machine for every test, instantly and on any server (Blender renders take seconds per frame and
need the ``render`` extra and EGL libraries); SVG is crisp at any zoom, carries its own accessible name
(``role="img"`` + ``aria-label``), and keeps what matters for the task -- which objects are on the machine
and whether it lit -- identical to the Task's observation. IVRE/EST objects keep their CLEVR identity (shape,
material, colour from :data:`causalplay.envs.sampling.OBJECT_POOL`) as an SVG shape, fill and outline.
"""

from __future__ import annotations

from markupsafe import Markup, escape

__all__ = ["object_label", "object_svg", "machine_svg"]

_FILL = {"gray": "#8a8a8a", "red": "#d33b3b", "blue": "#3b5bd3", "green": "#2f9a4a", "brown": "#8b5a2b",
         "cyan": "#2bb3c0", "purple": "#8b3bd3", "yellow": "#e0c020"}
# Nexiom objects have no looks in the study (a text game); distinct colours and numbers tell them apart.
_NEXIOM = ("#d33b3b", "#3b5bd3", "#2f9a4a", "#e0a020", "#8b3bd3", "#2bb3c0", "#8b5a2b", "#8a8a8a")


def object_label(i: int, objects=None) -> str:
    """The accessible name of object ``i`` (0-based index; people see 1-based numbers)."""
    if objects is None:
        return f"Object {i + 1}"
    shape, material, colour = objects[i]
    return f"Object {i + 1} ({colour} {material} {shape})"


def _shape(i: int, objects, cx: float, cy: float, r: float) -> str:
    if objects is None:
        fill, shape, stroke, sw = _NEXIOM[i % len(_NEXIOM)], "circle", "#222", 1.5
    else:
        shape, material, colour = objects[i]
        fill = _FILL[colour]
        stroke, sw = ("#111", 3.5) if material == "metal" else ("#555", 1.0)
    if shape == "cube":
        body = (f'<rect x="{cx - r:.1f}" y="{cy - r:.1f}" width="{2 * r:.1f}" height="{2 * r:.1f}" '
                f'fill="{fill}" stroke="{stroke}" stroke-width="{sw}"/>')
    elif shape == "cylinder":
        body = (f'<rect x="{cx - 0.8 * r:.1f}" y="{cy - r:.1f}" width="{1.6 * r:.1f}" height="{2 * r:.1f}" '
                f'rx="{0.8 * r:.1f}" ry="{0.35 * r:.1f}" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"/>')
    else:
        body = f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"/>'
    num = (f'<text x="{cx:.1f}" y="{cy + 0.35 * r:.1f}" font-size="{r:.0f}" text-anchor="middle" fill="#fff" '
           f'font-family="sans-serif" font-weight="bold">{i + 1}</text>')
    return body + num


def object_svg(i: int, objects=None, size: int = 44) -> Markup:
    """One object as a small inline SVG."""
    r = size * 0.36
    return Markup(f'<svg width="{size}" height="{size}" viewBox="0 0 {size} {size}" role="img" '
                  f'aria-label="{escape(object_label(i, objects))}">'
                  f'{_shape(i, objects, size / 2, size / 2, r)}</svg>')


def machine_svg(on, lit: bool, objects=None, n_objects: int = 4, title: str = "") -> Markup:
    """The machine with the objects ``on`` it, lit or not, as an inline SVG with a text alternative."""
    on = list(on)
    w = max(160, 20 + 40 * max(len(on), 1))
    glow = "#ffe14d" if lit else "#4a4a4a"
    names = ", ".join(object_label(i, objects) for i in on) or "nothing"
    state = "lit up" if lit else "did not light up"
    label = f"{title + ': ' if title else ''}{names} on the machine; it {state}"
    parts = [f'<svg width="{w}" height="110" viewBox="0 0 {w} 110" role="img" aria-label="{escape(label)}">',
             f'<rect x="4" y="62" width="{w - 8}" height="40" rx="6" fill="{glow}" stroke="#222" stroke-width="2"/>']
    if lit:
        parts.append(f'<rect x="1" y="59" width="{w - 2}" height="46" rx="8" fill="none" stroke="#ffb800" '
                     f'stroke-width="3" stroke-dasharray="6 4"/>')
    for k, i in enumerate(on):
        parts.append(_shape(i, objects, 30 + 40 * k, 40, 15))
    parts.append(f'<text x="{w / 2:.0f}" y="88" font-size="14" text-anchor="middle" font-family="sans-serif" '
                 f'fill="{"#222" if lit else "#eee"}">{"LIT" if lit else "off"}</text></svg>')
    return Markup("".join(parts))
