"""Charts of many tokens get margins that already hold their labels, so that plotly draws them once.

Past `UPRIGHT_KEYS` keys, an attention matrix turns its key labels upwards, and its margins are worked out on
the server from upper bounds of the labels' widths (`plots.label_width_px`). Here, in Chromium: those bounds
hold for every kind of text, and on the views that draw such matrices plotly keeps the margins it was given
(it widens them, and draws the chart a second time, only when a label needs more room) with no label on
another, on a desktop, on a phone and in presentation style.
"""

from __future__ import annotations

import pytest

from harness.browser import SCREENS, AppPage
from lessons.common.plots import LABEL_FONT_PX, label_width_px

LABELS = [
    "0: [CLS]",
    "27: attention",
    "511: WWWWMMMM",
    "12: mmmm@@%%",
    "3: ##ing",
    "4: Ġthe",
    "5: ▁arrow",
    "6: &lt;b&gt;bold&lt;/b&gt;",
    "7: &amp;&amp;",
    "8: <script>",
    "9: ||||iiii",
    "10: Straße",
    "11: æœ—ÆŒ",
    "12: Ωμέγα",
    "13: Жизнь",
    "14: 日本語のテキスト",
    "15: 한국어",
    "16: 😀👍🏽🚀",
    "17: שלום",
    "18: مرحبا",
    "19: ∞√∑∫",
    "20: \u200b\u200d",
    "21: Ⅻ﷽",
]

# Each label as plotly writes it (entities read as characters), measured at 12 px (Streamlit's chart text) and
# at 13 px (the app's own size, which presentation style scales).
MEASURE = """async ([labels, sizes]) => {
  await document.fonts.ready;
  const probe = document.createElement('div');
  const context = document.createElement('canvas').getContext('2d');
  return labels.map(label => {
    probe.innerHTML = label;
    return sizes.map(size => {
      context.font = `${size}px "Source Sans", sans-serif`;
      return context.measureText(probe.textContent).width;
    });
  });
}"""

# Every chart whose margins were set on the server: the margins it was given and those plotly drew it with.
MARGINS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(chart => ({
  title: chart._fullLayout.title.text,
  given: {l: chart.layout.margin.l, t: chart.layout.margin.t},
  drawn: {l: chart._fullLayout._size.l, t: chart._fullLayout._size.t},
  turned: Object.keys(chart._fullLayout)
    .some(key => /^xaxis\\d*$/.test(key) && chart._fullLayout[key].tickangle === -90),
}))"""

VIEWS = {
    "one head": ("causal", {"cm_tab": "One head on your text"}, 2),
    "three masks": ("causal", {"cm_tab": "No mask, padding, causal"}, 1),
}
SIZES = {
    "desktop": (SCREENS["desktop"], {}),
    "phone": (SCREENS["phone"], {}),
    "present": (SCREENS["desktop"], {"present": "True"}),
}


def test_the_width_bound_holds_for_every_kind_of_label_as_chromium_draws_it(app: AppPage):
    app.open("", min_plots=0)
    measured = app.page.evaluate(MEASURE, [LABELS, [12, LABEL_FONT_PX]])
    too_narrow = {
        label: (round(label_width_px(label), 1), round(max(widths), 1))
        for label, widths in zip(LABELS, measured)
        if label_width_px(label) < max(widths)
    }
    assert too_narrow == {}
    # An upper bound, not a wild one: the ordinary labels get at most a fifth more room than they take.
    ordinary = LABELS[:5]
    for label, widths in zip(ordinary, measured):
        assert label_width_px(label) <= 1.2 * widths[1] + 2


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("view", VIEWS)
def test_turned_labels_fit_the_margins_given_so_plotly_draws_the_chart_once(
    page, app_server, texts_of_length, view, size
):
    screen, style = SIZES[size]
    path, query, charts = VIEWS[view]
    page.set_viewport_size(screen)
    app = AppPage(page, app_server.url)
    app.open(path, min_plots=charts, text=texts_of_length(512), **query, **style)
    assert app.exceptions() == []

    margins = app.page.evaluate(MARGINS)
    assert len(margins) == charts
    for chart in margins:
        assert chart["turned"], chart["title"]
        assert chart["drawn"] == chart["given"], chart["title"]
    assert app.layout_problems() == []
