"""Labels never sit on labels, and nothing is cut off, on any view, on a desktop, zoomed to 150 %, on a tablet,
on a phone, or in presentation style.

`harness.browser.LAYOUT_PROBLEMS` measures every label a chart draws (titles and subtitles, axis titles, tick
labels, annotations, legends, colour bars) as the shape its glyphs fill on screen, and reports labels that
overlap, labels drawn over a plot area, labels cut off by a chart's edge, a chart's toolbar over its labels (on a
phone it sat on the titles), Streamlit labels shortened with an ellipsis, and a page that scrolls sideways.
Every view a link can open (harness/views.py) is checked at every size.
"""

from __future__ import annotations

import pytest

from harness.browser import AppPage
from harness.views import VIEWS

SIZES = {
    "desktop": (1280, 800),
    "zoom150": (853, 533),
    "tablet": (768, 1024),
    "phone": (390, 844),
    "present": (1280, 800),  # presentation style: every text 1.35 times larger
}
STYLES = {"present": {"present": "True"}}


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", VIEWS)
def test_no_label_is_drawn_over_another_or_cut_off(page, app_server, name, size):
    width, height = SIZES[size]
    page.set_viewport_size({"width": width, "height": height})
    app = AppPage(page, app_server.url)
    view = VIEWS[name]
    app.open(view.path, min_plots=view.charts, **view.query, **STYLES.get(size, {}))
    assert app.exceptions() == []
    problems = app.layout_problems()
    if problems:
        app.screenshot(f"layout-{size}-{name.replace('/', '--').replace(' ', '_')}")
    assert problems == []
    assert app.requests_off_loopback() == []
