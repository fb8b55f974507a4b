"""Placeholder package; filled by its issue."""
