"""Presentation style, for a lecture hall: everything on the page drawn larger, the sidebar out of the way.

One switch in the sidebar turns it on, and the link carries it (`?present=True`), so a lecturer can prepare
the links of a class in advance. Streamlit sizes its text in rem, so a larger root font size enlarges all
text, formulas, widgets and tables; figures get their text enlarged as much by `charts.show` (scaling the
page as a whole with CSS `zoom` was tried and cuts plotly's charts off, since plotly measures its box
unscaled). With the sidebar hidden, a
button at the top of the page (or the Escape key) leaves presentation style.

The browser remembers the choice too (a cookie, `COOKIE`), as it remembers the theme: a lesson opened in a new
tab, or a bare link to it, opens in the style the learner chose last; a link that says `present=False` or
`present=True` is followed as ever.

Larger text is for a projector's width. A student may open on a phone a link the lecturer copied while
presenting; drawn 1.35 times larger on a screen 390 px wide, titles were cut off and formulas spilled out of
their boxes (31 of the 39 views of `harness/views.py`). So a phone keeps the usual sizes, and presentation style
there only keeps the sidebar out of the way. The server learns it is a phone the one way a browser tells it
before the page is drawn, its user agent (the figures' text is enlarged on the server, which does not know the
screen's width).
"""

from __future__ import annotations

import streamlit as st

from lessons.common.ui import linked

KEY = "present"  # link key and session state
ZOOM = 1.35  # 16 px text becomes 21.6 px: readable from the back of a room of two hundred
ROOT_FONT_PX = 16 * ZOOM
NO_SIDEBAR = (
    "<style>"
    '[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], '
    '[data-testid="stExpandSidebarButton"] { display: none !important; }'
    "</style>"
)
LARGER_TEXT = f"<style>html {{ font-size: {ROOT_FONT_PX:g}px; }}</style>"


COOKIE = "anatomy_present"  # "1" while the learner's last choice was presentation style
_YEAR_S = 365 * 24 * 3600
REMEMBER = {
    True: f"<script>document.cookie = '{COOKIE}=1; path=/; max-age={_YEAR_S}; SameSite=Lax';</script>",
    False: f"<script>document.cookie = '{COOKIE}=; path=/; max-age=0; SameSite=Lax';</script>",
}


def is_a_phone(user_agent: str) -> bool:
    """Whether a browser's user agent names a phone: "Mobi" anywhere in it (as in "Mobile"), the sign that
    MDN's guide to browser detection advises. Tablets are not phones (an iPad's Safari presents itself as a
    desktop's, an Android tablet's Chrome leaves "Mobile" out): 768 px wide, every view holds the larger text."""
    return "Mobi" in user_agent


def on_a_phone() -> bool:
    """Whether this session's browser is a phone's."""
    return is_a_phone(st.context.headers.get("User-Agent") or "")


def enlarges() -> bool:
    """Whether this run draws the page's text and figures larger: presentation style, but not on a phone."""
    return bool(st.session_state.get(KEY)) and not on_a_phone()


def remembered() -> bool:
    """Whether the browser's last choice, as it stood when this session started, was presentation style."""
    return st.context.cookies.get(COOKIE) == "1"


def switch() -> bool:
    """The sidebar's switch (bound to the link; without it, the browser's last choice): True while
    presentation style is on."""
    return linked.toggle(
        "Presentation style",
        KEY,
        remembered(),
        container=st.sidebar,
        help="Larger text and figures for a projector, without the sidebar (a phone keeps the usual sizes). "
        "The link carries it.",
    )


def _leave() -> None:
    st.session_state[KEY] = False


def apply(on: bool) -> None:
    """Restyle the page when presentation style is on, with a way back at its top; have the browser remember
    a choice that differs from the one it held."""
    if on != remembered():  # drawn in the sidebar, where a script's empty box is out of the way
        st.sidebar.html(REMEMBER[on], unsafe_allow_javascript=True, width="content")
    if not on:
        return
    st.html(NO_SIDEBAR)
    if enlarges():
        st.html(LARGER_TEXT)
    st.button(
        "Leave presentation style",
        key="leave_presentation",
        icon=":material/close_fullscreen:",
        on_click=_leave,
        shortcut="Escape",
        help="Back to the usual layout, with the sidebar",
    )
