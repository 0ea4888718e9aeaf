"""Presentation style, for a lecture hall: everything on the page drawn larger, the sidebar out of the way.

One switch in the sidebar turns it on, and the link carries it (`?present=True`), so a lecturer can prepare
the links of a class in advance. Streamlit sizes its text in rem, so a larger root font size enlarges all
text, formulas, widgets and tables; figures get their text enlarged as much by `charts.show` (scaling the
page as a whole with CSS `zoom` was tried and cuts plotly's charts off, since plotly measures its box
unscaled). With the sidebar hidden, a
button at the top of the page (or the Escape key) leaves presentation style.
"""

from __future__ import annotations

import streamlit as st

from lessons.common.ui import linked

KEY = "present"  # link key and session state
ZOOM = 1.35  # 16 px text becomes 21.6 px: readable from the back of a room of two hundred
ROOT_FONT_PX = 16 * ZOOM
STYLE = (
    "<style>"
    '[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], '
    '[data-testid="stExpandSidebarButton"] { display: none !important; }'
    f"html {{ font-size: {ROOT_FONT_PX:g}px; }}"
    "</style>"
)


def switch() -> bool:
    """The sidebar's switch (bound to the link): True while presentation style is on."""
    return linked.toggle(
        "Presentation style",
        KEY,
        container=st.sidebar,
        help="Larger text and figures for a projector, without the sidebar. The link carries it.",
    )


def _leave() -> None:
    st.session_state[KEY] = False


def apply(on: bool) -> None:
    """Restyle the page when presentation style is on, with a way back at its top."""
    if not on:
        return
    st.html(STYLE)
    st.button(
        "Leave presentation style",
        key="leave_presentation",
        icon=":material/close_fullscreen:",
        on_click=_leave,
        shortcut="Escape",
        help="Back to the usual layout, with the sidebar",
    )
