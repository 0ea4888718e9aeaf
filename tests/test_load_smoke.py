"""A small lecture room in CI (benchmarks/load_test.py runs the full room of 40): four students speaking
Streamlit's websocket protocol, then two in real Chromium, each on one hosted server for twenty seconds.
Every view must be the student's own, nothing may fail, and the shared model's weights must hash the same
before, after, and as freshly loaded from the checkpoint."""

from __future__ import annotations

import importlib.util
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")


def _load_test_module():
    spec = importlib.util.spec_from_file_location("load_test", ROOT / "benchmarks" / "load_test.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("load_test", module)
    spec.loader.exec_module(module)
    return module


load_test = _load_test_module()


def run_room(**settings) -> dict:
    """The load test in a thread of its own: it starts its own asyncio loop, which cannot nest inside the
    loop pytest-playwright keeps running in the main thread when browser tests share this session."""
    with ThreadPoolExecutor(max_workers=1) as executor:
        return executor.submit(load_test.run_load_test, **settings).result()


def test_a_view_with_another_students_tokens_is_reported_as_a_leak():
    text = load_test.student_text(0, 0)
    own = {"the", "red", "penguin"}
    assert load_test.view_problems(0, 0, text, text, own) == []
    assert any("other students" in problem for problem in load_test.view_problems(0, 0, text, text, own | {"kangaroo"}))
    assert any("own tokens" in problem for problem in load_test.view_problems(0, 0, text, text, {"the", "red"}))
    assert any("earlier round" in problem for problem in load_test.view_problems(0, 1, text, text, own | {"blue"}))
    assert any("sidebar" in problem for problem in load_test.view_problems(0, 0, text, "someone else's", None))


def test_every_student_writes_a_different_text_with_a_single_token_marker(embedded):
    texts = {load_test.student_text(session, 0) for session in range(len(load_test.MARKERS))}
    assert len(texts) == len(load_test.MARKERS)
    for word in (*load_test.MARKERS, *load_test.ROUNDS):
        assert embedded.tokenizer.tokenize(word) == [word], word


def assert_a_clean_room(figures: dict) -> None:
    assert figures["errors"] == 0, figures["error_samples"]
    assert figures["requests_off_loopback"] == 0, figures["off_loopback_samples"]
    assert min(figures["views_per_session_min_max"]) >= 1, figures
    assert figures["weights_unchanged"], figures
    assert figures["rss_mb_during_load_min_max_end"][1] < 3_000, figures  # caches are capped


def test_four_websocket_students_for_twenty_seconds_see_only_their_own_results(tmp_path):
    figures = run_room(sessions=4, duration=20, client="websocket", log_path=tmp_path / "server.log")
    assert_a_clean_room(figures)
    assert figures["typed_view_p50_p95_s"], "students typed new text into the sidebar too"


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's Chromium at /usr/bin/chromium")
def test_two_browser_students_for_twenty_seconds_see_only_their_own_painted_results(tmp_path):
    figures = run_room(sessions=2, duration=20, client="browser", log_path=tmp_path / "server.log")
    assert_a_clean_room(figures)
