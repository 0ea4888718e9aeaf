"""Making sure every run goes through the entrypoint (app.py), even the very first deep link.

Streamlit still supports an older multipage mode that runs `pages/*.py` directly, and a server process
uses it until `st.navigation` is first called. So on a freshly started server, the first visit to
`/attention?...` would run the page without app.py: no navigation, no sidebar. Pages call
`ensure_entrypoint()` first: in that situation it switches the process to `st.navigation` mode and reruns,
and the entrypoint then serves the requested page.
"""

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager


def ensure_entrypoint() -> None:
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
