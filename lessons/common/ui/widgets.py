"""Small UI pieces every page uses: literal text, the code behind a page, CSV downloads, notices, tabs and
expanders that run only while open, and figures built once. (Choices bound to the link: `linked`.)"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Iterable

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from lessons.common.labels import token_labels
from lessons.common.safe_text import code_fence
from lessons.common.ui import charts, linked


def shown_unchanged_by_st_text(text: str) -> bool:
    """Whether st.text shows `text` exactly: it removes the indentation all lines share and the whitespace at
    both ends (`textwrap.dedent(text).strip()`), so a text with either needs st.code."""
    return bool(text) and textwrap.dedent(text).strip() == text


def show_literal(text: str, label: str | None = None) -> None:
    """User text exactly as typed: never interpreted as markdown or HTML, every space and line break kept,
    long lines wrapped. st.text draws it in a box (`charts.LITERAL_TEXT_RULES`) whenever it can show it
    unchanged; otherwise st.code does, which is exact but makes the browser load and run a 1.5 MB syntax
    highlighter first (about half a second of a page's paint) for a text nobody needs coloured."""
    if label:
        st.caption(label)
    if shown_unchanged_by_st_text(text):
        st.text(text)
    else:
        st.code(text if text else " ", language=None, wrap_lines=True)


NO_BREAK_SPACE = "\u00a0"


def aligned_lines_markdown(lines: Iterable[str]) -> str:
    """Markdown for lines in a fixed-width font, every space kept, so that columns line up, and shown
    literally: each line is one code span (its fence longer than any run of backticks inside it, so nothing
    ends it early), spaces become no-break spaces (markdown would fold them), and lines break hard."""
    spans = []
    for line in lines:
        fence = code_fence(line)
        spans.append(f"{fence} {line.replace(' ', NO_BREAK_SPACE) or NO_BREAK_SPACE} {fence}")
    return "  \n".join(spans)


def show_aligned_lines(lines: Iterable[str]) -> None:
    """Lines whose columns must line up (a prompt above what the model wrote after it). Lighter than
    st.code, whose syntax highlighter costs the browser 1.5 MB of JavaScript even for plain text."""
    st.markdown(aligned_lines_markdown(lines))


def expander_if_open(label: str, key: str, expanded: bool = False, icon: str | None = None, across_pages: bool = False):
    """An expander whose content is sent only while it is open: the expander to fill, or None while it is
    closed. Opening or closing it reruns the page (from the caches). Content in a closed plain expander is
    still sent, and the browser loads the code to draw it (1.2 MB for a table) before the page counts as
    painted.

    `across_pages`: left open, it is open on the next page too. Streamlit forgets every widget's state on a
    page change, the expander's among them (it would close), so whether it was open is kept under a key no
    widget has, and given back when its own state is gone (a click that closes it leaves a state: False)."""
    kept = f"_{key}_was_open"
    if across_pages and key not in st.session_state and st.session_state.get(kept):
        st.session_state[key] = True
    expander = st.expander(label, expanded=expanded, key=key, icon=icon, on_change="rerun")
    if across_pages:
        st.session_state[kept] = expander.open
    return expander if expander.open else None


def open_tab_name(sections: dict[str, Callable[..., None]], key: str) -> str:
    """The name of the tab `show_open_tab(sections, key, ...)` keeps open: the first until another is chosen."""
    return st.session_state.get(key, next(iter(sections)))


def show_open_tab(
    sections: dict[str, Callable[..., None]], key: str, *arguments, renamed: dict[str, str] | None = None
) -> None:
    """Tabs named after `sections`, bound to the link under `key` (a link names the open one), where only the
    open tab runs: `sections[its name](*arguments)`. A chart in a hidden tab would still be sent and drawn
    before the page counts as painted, and a rerun on a long text would compute every tab. `renamed` maps the
    old name of a renamed tab to its new one, so that links made before the rename open the same tab.

    The tabs go through `linked` like every other choice, not through Streamlit's own `bind="query-params"`:
    a bound key cannot be written with the rest of the address in one message (see `linked`)."""
    names = list(sections)
    opened = linked.bind(
        key,
        names[0],
        parse=lambda raw: (renamed or {}).get(raw, raw),
        fits=lambda name: name in names,
        requirement="not one of the tabs here",
    )
    tabs = st.tabs(names, key=key, on_change="rerun")
    linked.publish(key, st.session_state.get(key, opened))
    for tab, show in zip(tabs, sections.values(), strict=True):
        if tab.open:
            with tab:
                show(*arguments)


SOURCE_TITLE = "The code this page runs"


def _qualified_names(objects) -> list[str]:
    return [f"{obj.__module__}.{obj.__qualname__}" for obj in objects]


def source_key(*objects, title: str = SOURCE_TITLE) -> str:
    """The state key of the expander that `show_source(*objects, title=title)` draws (True while open)."""
    return f"source:{title}:{','.join(_qualified_names(objects))}"


def show_source(*objects, title: str = SOURCE_TITLE) -> None:
    """The real source of the given anatomy functions and classes, read from the package itself.

    The code is sent only once the expander is opened (it reruns the page, from the caches): a closed
    expander would otherwise still make the browser load and run the syntax highlighter, a 1.5 MB script,
    before the page counts as painted.
    """
    expander = expander_if_open(title, source_key(*objects, title=title), icon=":material/code:")
    if expander is None:
        return
    with expander:
        for name, obj in zip(_qualified_names(objects), objects):
            st.caption(f"`{name}`")
            st.code(textwrap.dedent(inspect.getsource(obj)), language="python")  # a method as if at the left


def download_csv(frame, file_name: str, label: str = "Download the numbers (CSV)", key: str | None = None) -> None:
    """A CSV download of a table, or of a function returning one (built only when the button is clicked)."""

    def payload() -> bytes:
        table = frame() if callable(frame) else frame
        return table.to_csv(index=True).encode("utf-8")

    st.download_button(
        label,
        payload if callable(frame) else payload(),
        file_name=file_name,
        mime="text/csv",
        icon=":material/download:",
        key=key or f"download-{file_name}",
    )


# sprintf's %g as Streamlit's tables apply it: four significant digits, rounded, and scientific notation for
# a tiny value. Streamlit's own format keeps a tiny value's first digit and cuts the rest: 8.967e-9 read
# 0.000000008, where this reads 8.967e-9.
SIGNIFICANT_DIGITS = "%.4g"


def rounded_numbers(frame: pd.DataFrame) -> dict:
    """Column settings that show every float column of `frame` to four significant digits, rounded (pass them
    as st.dataframe's column_config): the numbers themselves stay numbers, to sort by and to copy in full."""
    return {name: st.column_config.NumberColumn(format=SIGNIFICANT_DIGITS) for name in frame.select_dtypes("float")}


def matrix_frame(matrix, row_labels: Iterable[str], column_labels: Iterable[str]) -> pd.DataFrame:
    """A labelled table of a 2-D array, rows and columns named by position as everywhere in the app
    ("3: flies", `labels.token_labels`), so a repeated label keeps its own row."""
    return pd.DataFrame(matrix, index=token_labels(row_labels), columns=token_labels(column_labels))


def truncation_notice(tokenized) -> None:
    if tokenized.truncated:
        st.warning(
            f"The text makes {tokenized.untruncated_length} tokens; the model reads at most "
            f"{len(tokenized)}, so only the first {len(tokenized)} are shown.",
            icon=":material/content_cut:",
        )


# ---------------------------------------------------------------------------------------------------------
# Figures built once


@st.cache_resource(max_entries=48, show_spinner=False)
def _cached_figure(chart_key: str, inputs: tuple, _build: Callable[[], go.Figure]) -> go.Figure:
    return _build()


def show_figure(chart_key: str, inputs: tuple, build: Callable[[], go.Figure], about: str | None = None) -> None:
    """Draw `build()`, built once per `inputs` (everything `build` reads): a styled figure costs tens of ms.
    `about`: what it is computed from, when not the sidebar's text (see `charts.show`)."""
    charts.show(_cached_figure(chart_key, inputs, build), key=chart_key, about=about)
