"""Pixel rendering of Blicket panels with Blender (``bpy``): a CLEVR-style scene in a long-lived worker process.

Importing this package does not import Blender; the worker process does, on the first frame.
"""

from .cache import FrameCache
from .renderer import Renderer, RenderError, RendererUnavailable, bpy_available
from .scene import COLORS, HEIGHT, MATERIALS, SHAPES, WIDTH, make_frame, signature

__all__ = ["COLORS", "FrameCache", "HEIGHT", "MATERIALS", "RenderError", "Renderer", "RendererUnavailable", "SHAPES",
           "WIDTH", "bpy_available", "make_frame", "signature"]
