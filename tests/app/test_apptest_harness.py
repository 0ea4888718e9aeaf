"""The headless harness (harness/apptest.py) opens apps the way a server serves sessions."""

from __future__ import annotations

from streamlit.components.v2.component_manager import BidiComponentManager

from harness.apptest import installed_components, open_page, page_from_function, page_from_string


def _page_with_a_text(text: str) -> None:
    import streamlit as st

    st.text(text)


def test_apps_the_tests_open_look_for_installed_components_once_as_a_server_does(monkeypatch):
    installed_components()  # found once for the whole test process, before this test
    searches = []
    search = BidiComponentManager.discover_and_register_components

    def counted(self, *args, **kwargs):
        searches.append(self)
        return search(self, *args, **kwargs)

    monkeypatch.setattr(BidiComponentManager, "discover_and_register_components", counted)
    for page in ("lesson_pages/tokenization.py", "lesson_pages/class.py"):
        open_page(page, text="a cat")
    page_from_string("import streamlit as st\nst.text('a cat')").run()
    page_from_function(_page_with_a_text, "a cat").run()

    assert searches == []  # each new AppTest would otherwise read every installed distribution's metadata again
