"""Students who open the same text and view share one computation: the second session's run is served from
the server's caches (one traced forward pass, one figure), not computed again."""

from __future__ import annotations

from harness.apptest import assert_clean, open_page, plotly_figures
from lessons.common.ui import loaders, widgets
from lessons.multihead import figures

PAGE = "lesson_pages/multihead.py"


def test_two_sessions_on_the_default_view_run_the_model_and_build_the_head_grid_once(monkeypatch):
    calls = {"forward": 0, "grid": 0}
    run_encoder, head_grid = loaders.run_encoder, figures.head_grid

    def counted_forward(*args, **kwargs):
        calls["forward"] += 1
        return run_encoder(*args, **kwargs)

    def counted_grid(*args, **kwargs):
        calls["grid"] += 1
        return head_grid(*args, **kwargs)

    monkeypatch.setattr(loaders, "run_encoder", counted_forward)
    monkeypatch.setattr(figures, "head_grid", counted_grid)
    loaders._traced_run.clear()
    widgets._cached_figure.clear()
    try:
        first, second = open_page(PAGE), open_page(PAGE)  # two students, the sidebar's default text
    finally:
        loaders._traced_run.clear()
        widgets._cached_figure.clear()
    assert_clean(first)
    assert_clean(second)
    assert plotly_figures(first) == plotly_figures(second)  # every chart of the view, in both
    assert calls == {"forward": 1, "grid": 1}
