"""Fixtures for the real-browser tests: one `streamlit run` for the whole session, Debian's Chromium launched
by pytest-playwright (headless, no sandbox, no background networking), a tab per test that must never reach
past loopback, and a recorder that proves a page fetched nothing.

Every test here is marked `browser`. Where /usr/bin/chromium is missing they are skipped on a developer's
machine (say, a Mac), but fail in CI (CI set), where a missing browser is a broken install, never a pass.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.browser import ARTIFACTS, ROOT, VIEWPORT, AppPage
from harness.postgres import postgres_binaries
from harness.server import CHROMIUM, LoopbackRecorder, StreamlitServer, chromium_launch_options
from tests.postgresql import backends

# A class's database stopped and started again needs PostgreSQL: collected where it is installed, and in CI,
# which requires it (tests/postgresql.py).
collect_ignore = [] if "postgresql" in backends(postgres_binaries()) else ["test_class_outage_in_browser.py"]


def pytest_collection_modifyitems(config, items):
    here = ROOT / "tests" / "browser"
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.browser)
            if not CHROMIUM.exists() and not os.environ.get("CI"):
                item.add_marker(pytest.mark.skip(reason=f"no Chromium at {CHROMIUM} (apt-get install -y chromium)"))


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright's launch options, pointed at Debian's Chromium (playwright never downloads one)."""
    return {**browser_type_launch_args, **chromium_launch_options()}


@pytest.fixture(scope="session")
def app_server():
    """The app, served by `streamlit run app.py` on a free 127.0.0.1 port for the whole session."""
    # ANATOMY_TEST_APP names another checkout's app.py, to replay these tests against it (say, to see a
    # regression test fail on the code before its fix).
    script = Path(os.environ.get("ANATOMY_TEST_APP", ROOT / "app.py"))
    environment = {"PYTHONPATH": str(script.parent)} if "ANATOMY_TEST_APP" in os.environ else None
    with StreamlitServer(
        log_path=ARTIFACTS / "streamlit-browser-tests.log", script=script, environment=environment
    ) as server:
        yield server


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args, app_server):
    return {**browser_context_args, "viewport": VIEWPORT, "base_url": app_server.url}


@pytest.fixture(scope="session")
def returning_visitor(browser, browser_context_args):
    """One browser profile for every test's own tab, as a student's browser that has been here before: it keeps
    its HTTP cache (Streamlit's and plotly's scripts, and the code Chromium compiled from them), and nothing
    else from one test to the next. Opening a page so costs less than in a fresh profile (docs/development.md:
    the layout check's desktop tests took 8 % less time). A visitor who has never been here is `new_context()`,
    or a server of its own."""
    profile = browser.new_context(**browser_context_args)
    yield profile
    profile.close()


@pytest.fixture
def context(returning_visitor, app_server):
    """pytest-playwright's `context` (and so `page`), replaced by the returning visitor; after the test its tabs
    are closed and every cookie, permission and stored item of the app's origin is forgotten."""
    yield returning_visitor
    for tab in returning_visitor.pages:
        tab.close()
    forget_all_but_the_http_cache(returning_visitor, app_server.url)


def forget_all_but_the_http_cache(profile, origin: str) -> None:
    """Clear cookies and permissions, and the origin's local storage, IndexedDB, cache storage and service
    workers (Chromium's DevTools protocol: `Storage.clearDataForOrigin`). Session storage goes with its tab."""
    profile.clear_cookies()
    profile.clear_permissions()
    blank = profile.new_page()
    devtools = profile.new_cdp_session(blank)
    devtools.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": STORED_ITEMS})
    devtools.detach()
    blank.close()


STORED_ITEMS = "cookies,local_storage,indexeddb,cache_storage,service_workers"


@pytest.fixture
def app(page, app_server):
    """A tab on the app. After the test, it asserts that the tab requested nothing outside loopback."""
    tab = AppPage(page, app_server.url)
    yield tab
    assert tab.requests_off_loopback() == [], "the browser reached outside loopback"


@pytest.fixture
def open_app(new_context, app_server):
    """Opens more tabs, each in a fresh browser context (as a second person following a shared link)."""
    tabs = []

    def open_tab() -> AppPage:
        tab = AppPage(new_context().new_page(), app_server.url)
        tabs.append(tab)
        return tab

    yield open_tab
    for tab in tabs:
        assert tab.requests_off_loopback() == [], "the browser reached outside loopback"


@pytest.fixture
def loopback_recorder():
    """A tiny HTTP server on a free 127.0.0.1 port; `.hits` lists the paths it was asked for."""
    with LoopbackRecorder() as recorder:
        yield recorder


@pytest.fixture(scope="session")
def texts_of_length(embedded):
    """texts_of_length(n): a text the embedded tokenizer turns into exactly n tokens ([CLS] and [SEP] included)."""
    sentence = "The quick brown fox jumps over the lazy dog while attention heads watch every word. "
    tokenizer = embedded.tokenizer

    def text_of(num_tokens: int) -> str:
        ids = tokenizer(sentence * num_tokens, add_special_tokens=False, verbose=False)["input_ids"]
        text = tokenizer.decode(ids[: num_tokens - 2])
        assert len(tokenizer(text)["input_ids"]) == num_tokens
        return text

    return text_of
