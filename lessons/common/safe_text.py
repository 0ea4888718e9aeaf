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
    shown = spell_invisible(text)
    return escape_markdown(shown)


def code_span(text: str) -> str:
    """A token in a code span, shown literally: its fence is longer than any run of backticks inside it (so
    nothing ends it early), and invisible characters are written as U+XXXX. Inside a code span markdown's
    escapes would show, so nothing else is escaped."""
    shown = spell_invisible(text)
    fence = code_fence(shown)
    return f"{fence} {shown} {fence}" if shown.strip() else f"{fence}{shown or ' '}{fence}"


def code_fence(text: str) -> str:
    """The backticks that open and close a code span around `text`: one more than its longest run of them."""
    backtick_runs = "".join(char if char == "`" else " " for char in text).split()
    return "`" * (max(map(len, backtick_runs), default=0) + 1)


def spell_invisible(text: str) -> str:
    """Invisible characters (controls, zero widths, bidi overrides) written as U+XXXX, the rest as it is."""
    return "".join(f"U+{ord(char):04X}" if unicodedata.category(char).startswith("C") else char for char in text)
