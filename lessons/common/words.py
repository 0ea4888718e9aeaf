"""Counts written as a reader says them: "1 stop", "3 stops", "0 exercises"."""

from __future__ import annotations


def counted(count: int, noun: str) -> str:
    """The count and its noun, with an s unless the count is one: `counted(1, "row") == "1 row"`."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
