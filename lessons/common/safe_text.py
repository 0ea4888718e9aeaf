"""User text shown literally: never interpreted as markdown, HTML or LaTeX, never hiding or reordering a message."""

from __future__ import annotations

import unicodedata

_MARKDOWN_SPECIALS = set("\\`*_{}[]()#+-.!|<>~$:=^\"'&")


def escape_markdown(text: str) -> str:
    """Text that Streamlit's markdown shows character for character: no links, images, HTML or LaTeX."""
    return "".join("\\" + char if char in _MARKDOWN_SPECIALS else char for char in text)


def visible(text: str) -> str:
    """Text safe for a markdown message: invisible characters (controls, zero widths, bidi overrides) are
    written as U+XXXX, so they can neither hide nor reorder the message, and markdown is escaped."""
    shown = "".join(f"U+{ord(char):04X}" if unicodedata.category(char).startswith("C") else char for char in text)
    return escape_markdown(shown)
