"""Small UI pieces every page uses: literal text, the code behind a page, CSV downloads, notices,
choices that live in the URL, and figures built once."""

from __future__ import annotations

import inspect
from typing import Callable, Iterable

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from anatomy.ui import state


_MARKDOWN_SPECIALS = set("\\`*_{}[]()#+-.!|<>~$:=^\"'&")


def escape_markdown(text: str) -> str:
    """Text that Streamlit's markdown shows character for character: no links, images, HTML or LaTeX."""
    return "".join("\\" + char if char in _MARKDOWN_SPECIALS else char for char in text)


def show_literal(text: str, label: str | None = None) -> None:
    """User text exactly as typed: never interpreted as markdown or HTML."""
    if label:
        st.caption(label)
    st.code(text if text else " ", language=None, wrap_lines=True)


NO_BREAK_SPACE = "\u00a0"


def aligned_lines_markdown(lines: Iterable[str]) -> str:
    """Markdown for lines in a fixed-width font, every space kept, so that columns line up, and shown
    literally: each line is one code span (its fence longer than any run of backticks inside it, so nothing
    ends it early), spaces become no-break spaces (markdown would fold them), and lines break hard."""
    spans = []
    for line in lines:
        backtick_runs = "".join(char if char == "`" else " " for char in line).split()
        fence = "`" * (max(map(len, backtick_runs), default=0) + 1)
        spans.append(f"{fence} {line.replace(' ', NO_BREAK_SPACE) or NO_BREAK_SPACE} {fence}")
    return "  \n".join(spans)


def show_aligned_lines(lines: Iterable[str]) -> None:
    """Lines whose columns must line up (a prompt above what the model wrote after it). Lighter than
    st.code, whose syntax highlighter costs the browser 1.5 MB of JavaScript even for plain text."""
    st.markdown(aligned_lines_markdown(lines))


def expander_if_open(label: str, key: str, expanded: bool = False, icon: str | None = None):
    """An expander whose content is sent only while it is open: the expander to fill, or None while it is
    closed. Opening or closing it reruns the page (from the caches). Content in a closed plain expander is
    still sent, and the browser loads the code to draw it (1.2 MB for a table) before the page counts as
    painted."""
    expander = st.expander(label, expanded=expanded, key=key, icon=icon, on_change="rerun")
    return expander if expander.open else None


def show_open_tab(sections: dict[str, Callable[..., None]], key: str, *arguments) -> None:
    """Tabs named after `sections`, bound to the URL under `key` (a link names the open one), where only the
    open tab runs: `sections[its name](*arguments)`. A chart in a hidden tab would still be sent and drawn
    before the page counts as painted, and a rerun on a long text would compute every tab."""
    for tab, show in zip(st.tabs(list(sections), key=key, bind="query-params"), sections.values()):
        if tab.open:
            with tab:
                show(*arguments)


SOURCE_TITLE = "The code this page runs"


def _qualified_names(objects) -> list[str]:
    return [f"{inspect.getmodule(obj).__name__}.{obj.__qualname__}" for obj in objects]


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


# ---------------------------------------------------------------------------------------------------------
# Choices that live in the URL (a shared link restores them; a value that does not fit falls back)


def restore_number(key: str, default: int, low: int, high: int) -> int:
    """Seed a numeric widget from the URL; drop a session value outside `low..high` (another text or model)."""
    if key in st.session_state and not low <= st.session_state[key] <= high:
        st.session_state[key] = default
    return state.restore(key, default, parse=int, valid=lambda value: low <= value <= high)


def shared_slider(label: str, key: str, low: int, high: int, default: int, help: str | None = None) -> int:
    """A slider for `low..high` whose value lives in the URL under `key` (no slider when there is one value)."""
    restore_number(key, default, low, high)
    if high > low:
        st.slider(label, low, high, key=key, help=help)
    state.publish(**{key: st.session_state[key]})
    return st.session_state[key]


def shared_number_input(label: str, key: str, low: int, high: int, default: int) -> int:
    """A whole-number field for `low..high` whose value lives in the URL under `key`."""
    restore_number(key, default, low, high)
    value = int(st.number_input(label, low, high, step=1, key=key))
    state.publish(**{key: value})
    return value


def shared_text_input(label: str, key: str, default: str, max_chars: int) -> str:
    """A text field whose value lives in the URL under `key`; a longer value in a link falls back to `default`."""
    state.restore(key, default, valid=lambda value: len(value) <= max_chars)
    st.text_input(label, key=key, max_chars=max_chars)
    state.publish(**{key: st.session_state[key]})
    return st.session_state[key]


def shared_choice(label: str, key: str, options: dict[str, str], default: str) -> str:
    """A segmented control over `options` (value -> shown name) whose choice lives in the URL under `key`."""
    state.restore(key, default, valid=lambda value: value in options)
    choice = st.segmented_control(label, tuple(options), key=key, required=True, format_func=options.get)
    state.publish(**{key: choice})
    return choice


# ---------------------------------------------------------------------------------------------------------
# Figures built once


@st.cache_resource(max_entries=48, show_spinner=False)
def _cached_figure(chart_key: str, inputs: tuple, _build: Callable[[], go.Figure]) -> go.Figure:
    return _build()


def show_figure(chart_key: str, inputs: tuple, build: Callable[[], go.Figure]) -> None:
    """Draw `build()`, built once per `inputs` (everything `build` reads): a styled figure costs tens of ms."""
    st.plotly_chart(_cached_figure(chart_key, inputs, build), key=chart_key)
