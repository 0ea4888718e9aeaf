"""Small UI pieces every page uses: literal text, the code behind a page, CSV downloads, notices."""

from __future__ import annotations

import inspect
from typing import Iterable

import pandas as pd
import streamlit as st


_MARKDOWN_SPECIALS = set("\\`*_{}[]()#+-.!|<>~$:=^\"'&")


def escape_markdown(text: str) -> str:
    """Text that Streamlit's markdown shows character for character: no links, images, HTML or LaTeX."""
    return "".join("\\" + char if char in _MARKDOWN_SPECIALS else char for char in text)


def show_literal(text: str, label: str | None = None) -> None:
    """User text exactly as typed: never interpreted as markdown or HTML."""
    if label:
        st.caption(label)
    st.code(text if text else " ", language=None, wrap_lines=True)


def show_source(*objects, title: str = "The code this page runs") -> None:
    """The real source of the given anatomy functions and classes, read from the package itself."""
    with st.expander(title, icon=":material/code:"):
        for obj in objects:
            module = inspect.getmodule(obj).__name__
            st.caption(f"`{module}.{obj.__qualname__}`")
            st.code(inspect.getsource(obj), language="python")


def download_csv(frame, file_name: str, label: str = "Download the numbers (CSV)", key: str | None = None) -> None:
    """A CSV download of a table, or of a function returning one (built only when the button is clicked)."""
    def payload() -> bytes:
        table = frame() if callable(frame) else frame
        return table.to_csv(index=True).encode("utf-8")

    st.download_button(
        label, payload if callable(frame) else payload(), file_name=file_name, mime="text/csv",
        icon=":material/download:", key=key or f"download-{file_name}",
    )


def matrix_frame(matrix, row_labels: Iterable[str], column_labels: Iterable[str]) -> pd.DataFrame:
    """A labelled table of a 2-D array (duplicate labels are numbered so every row stays addressable)."""
    return pd.DataFrame(matrix, index=_unique(row_labels), columns=_unique(column_labels))


def _unique(labels: Iterable[str]) -> list[str]:
    return [f"{index}: {label}" for index, label in enumerate(labels)]


def truncation_notice(tokenized) -> None:
    if tokenized.truncated:
        st.warning(
            f"The text makes {tokenized.untruncated_length} tokens; the model reads at most "
            f"{len(tokenized)}, so only the first {len(tokenized)} are shown.",
            icon=":material/content_cut:",
        )
