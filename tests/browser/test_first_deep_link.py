"""The very first visit to a freshly started server may be a deep link, and it must still get the whole app.

A folder named `pages/` beside app.py would put a fresh server in Streamlit's older multipage mode, which runs
the page file alone (no navigation, no sidebar) until some session has called `st.navigation`; the lessons live
in `lesson_pages/` so that every run starts at app.py. This test starts a server of its own, so that nothing has
visited it yet, and makes a lesson's deep link its first request."""

from __future__ import annotations

from harness.browser import ARTIFACTS, AppPage
from harness.server import StreamlitServer
from lessons.common.ui.frame import LESSONS


def test_a_deep_link_as_the_first_request_to_a_fresh_server_gets_navigation_sidebar_and_its_view(page):
    with StreamlitServer(log_path=ARTIFACTS / "streamlit-first-deep-link.log") as server:
        app = AppPage(page, server.url)
        app.open("attention", att_source="model", att_layer="2", att_head="5", text="a link to share")
        app.screenshot("first-deep-link-on-a-fresh-server")
        assert app.exceptions() == []
        assert app.title() == "Scaled dot-product attention, step by step"
        assert app.text_box().input_value() == "a link to share"  # the sidebar ran, from app.py
        navigation = page.locator('[data-testid="stSidebarNav"] a')
        assert navigation.count() == len(LESSONS) + 1  # so did st.navigation: every lesson, and the Class page
        assert app.query()["att_layer"] == "2" and app.query()["att_head"] == "5"
        layer = page.get_by_role("slider", name="Layer")
        assert layer.get_attribute("aria-valuetext") == "2"
        log = (ARTIFACTS / "streamlit-first-deep-link.log").read_text(encoding="utf-8")
        assert "Traceback" not in log
        assert app.requests_off_loopback() == []
