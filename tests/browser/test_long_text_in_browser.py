"""A 512-token text, the most the model reads, on every page: the page stays usable (it paints, with no
exception, well within the limit below on two shared cores) and sends views a browser can draw: all 144
heads at 512 × 512 would be 38 million cells, so large views are pooled or windowed, while one head at full
resolution stays one click away. benchmarks/browser_vs_bertviz.py measures the paint times themselves."""

from __future__ import annotations

import time

import pytest

from harness.browser import SCREENS, AppPage
from harness.views import VIEWS

LONG = 512
USABLE_SECONDS = 30  # a generous bound for a loaded CI machine; the benchmark's goal is 3 s
MAX_CELLS_PER_PAGE = 600_000  # every heatmap cell and curve point the page draws, added up


def drawn_cells(figures: list[dict]) -> int:
    total = 0
    for figure in figures:
        for trace in figure["traces"]:
            sizes = [trace[axis]["count"] for axis in ("z", "y") if isinstance(trace[axis], dict)]
            total += max(sizes, default=0)
    return total


@pytest.fixture(scope="module")
def long_text(texts_of_length):
    return texts_of_length(LONG)


@pytest.mark.parametrize("name", VIEWS)
def test_every_page_and_tab_stays_usable_on_a_512_token_text(app: AppPage, long_text, name):
    lesson = VIEWS[name]
    start = time.perf_counter()
    app.open(lesson.path, min_plots=min(lesson.charts, 1), text=long_text, **lesson.query)
    seconds = time.perf_counter() - start
    app.screenshot(f"{name.replace('/', '-')}-{LONG}-tokens")

    assert app.exceptions() == []
    assert seconds < USABLE_SECONDS, f"{name} took {seconds:.1f} s to paint {LONG} tokens"
    assert drawn_cells(app.figures()) <= MAX_CELLS_PER_PAGE
    # Still responsive: the sidebar takes new text and the page redraws.
    if lesson.charts and lesson.follows_text:
        app.type_text_and_wait_for_new_figures("a short text again", min_plots=1)
        assert app.exceptions() == []


def test_multihead_shrinks_every_head_at_512_tokens_and_keeps_one_head_exact_one_click_away(app: AppPage, long_text):
    app.open("multihead", min_plots=1, text=long_text)
    (grid,) = app.figures()
    heads = [trace for trace in grid["traces"] if trace["type"] == "heatmap"]
    assert len(heads) == 12
    assert all(head["z"]["rows"] < LONG and head["z"]["columns"] < LONG for head in heads)  # pooled
    assert app.page.get_by_text("shrunk by average pooling").is_visible()

    app.page.get_by_text("Show head 2 alone at full resolution").click()
    app.wait_until_painted(min_plots=2)

    exact = app.figures()[1]
    assert exact["title"] == "Layer 0, head 2, every token"
    (head,) = exact["traces"]
    assert (head["z"]["rows"], head["z"]["columns"]) == (LONG, LONG)
    assert all(abs(sum(row) - 1) < 1e-3 for row in app.heatmap_rows(1)[0])
    assert app.query()["mh_full"] == "True"
    app.screenshot(f"multihead-{LONG}-tokens-full-head")


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_lesson_9_draws_a_long_texts_whole_map_above_its_window_with_no_label_over_another(
    app: AppPage, long_text, size
):
    app.page.set_viewport_size(SCREENS[size])
    app.open("language_model", min_plots=2, text=long_text, lm_tab="Attention", lm_window_start="100")
    whole, window = app.figures()
    assert whole["title"].endswith("the whole text") and whole["traces"][0]["z"]["rows"] == 64
    assert (window["traces"][0]["z"]["rows"], window["traces"][0]["z"]["columns"]) == (48, 48)
    assert app.exceptions() == []
    assert app.layout_problems() == []
    app.page.locator(".st-key-lm_attention_whole").scroll_into_view_if_needed()
    app.screenshot(f"language_model-{LONG}-tokens-whole-map-{size}")
