"""The tests' own tabs share one browser profile that keeps only its HTTP cache from one test to the next
(tests/browser/conftest.py): what a test stores must not reach the next, and the cache must stay warm."""

from __future__ import annotations

from harness.browser import AppPage
from tests.browser.conftest import forget_all_but_the_http_cache

STORED = "[localStorage.getItem('left by a test'), document.cookie.includes('left_by_a_test')]"
SCRIPTS_FROM_THE_NETWORK = (
    "performance.getEntriesByType('resource').filter(entry => entry.name.endsWith('.js') && entry.transferSize > 0)"
    ".map(entry => entry.name)"
)


def test_a_test_leaves_no_cookie_or_stored_item_behind_but_the_scripts_stay_cached(returning_visitor, app_server):
    first = AppPage(returning_visitor.new_page(), app_server.url).open("tokenization")
    first.page.evaluate("localStorage.setItem('left by a test', 'yes'); document.cookie = 'left_by_a_test=yes'")
    assert first.page.evaluate(STORED) == ["yes", True]
    first.page.close()

    forget_all_but_the_http_cache(returning_visitor, app_server.url)

    second = AppPage(returning_visitor.new_page(), app_server.url).open("tokenization")
    assert second.page.evaluate(STORED) == [None, False]
    assert second.page.evaluate(SCRIPTS_FROM_THE_NETWORK) == []  # every script came from the cache
    second.page.close()
