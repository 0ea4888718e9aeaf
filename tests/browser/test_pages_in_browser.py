"""Every page in a real browser: it paints without an exception box, its charts are drawn and hold the
numbers of the text, typing new text redraws them, and the address bar reproduces the view in another
browser. Nothing is fetched from outside loopback (the `app` fixture checks that after every test)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.browser import AppPage
from harness.views import DEFAULT_TOKENS, LESSONS, labels_of, mentions

NEW_TEXT = "the cat sat on the mat"


# ---- painting, then typing ------------------------------------------------------------------------------


def check_multihead_default(app: AppPage) -> None:
    """Every head of layer 0 is drawn, and each row of each head is a distribution over the keys."""
    (grid,) = app.figures()
    assert grid["title"] == "Layer 0: every head"
    heads = [trace for trace in grid["traces"] if trace["type"] == "heatmap"]
    assert len(heads) == 12
    assert {(head["z"]["rows"], head["z"]["columns"]) for head in heads} == {(7, 7)}
    for head in app.heatmap_rows(0):
        assert all(abs(sum(row) - 1) < 1e-3 for row in head)


def check_positional_default(app: AppPage) -> None:
    """The curves shade the positions the sidebar's text uses: 0 to 6, half a step beyond each end."""
    curves = app.figures()[0]
    assert curves["title"] == "Sinusoidal encoding, d = 384, base = 10000"
    assert "your text" in curves["annotations"]
    (shade,) = curves["shapes"]
    assert shade[1] - shade[0] == pytest.approx(len(DEFAULT_TOKENS))


def check_tokenization_default(app: AppPage) -> None:
    """Every character of the sidebar's text is drawn in its own cell, spaces as visible dots."""
    assert app.heatmap_cell_text(0) == "time·flies·like·an·arrow"


DEFAULT_VIEW_CHECKS = {
    "multihead": check_multihead_default,
    "positional": check_positional_default,
    "tokenization": check_tokenization_default,
}


@pytest.mark.parametrize("name", LESSONS)
def test_every_page_paints_its_charts_and_redraws_them_for_typed_text(app: AppPage, name):
    lesson = LESSONS[name]
    app.open(lesson.path, min_plots=lesson.charts, **lesson.query)
    app.screenshot(name)

    assert app.exceptions() == []
    assert app.title() == lesson.title
    figures = app.figures()
    assert len(figures) == lesson.charts
    assert all(figure["traces"] for figure in figures), "a chart without data"
    if lesson.shows_tokens:
        labels = labels_of(figures)
        assert all(mentions(labels, token) for token in DEFAULT_TOKENS), sorted(labels)[:40]
    if name in DEFAULT_VIEW_CHECKS:
        DEFAULT_VIEW_CHECKS[name](app)
    if lesson.charts:
        app.page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
        app.screenshot(f"{name}-first-chart")
    if not (lesson.charts and lesson.follows_text):  # nothing drawn from the text; the link still carries it
        app.type_text(NEW_TEXT)
        app.page.wait_for_function("(text) => new URL(location.href).searchParams.get('text') === text", arg=NEW_TEXT)
        return

    after = app.type_text_and_wait_for_new_figures(NEW_TEXT, min_plots=1)

    assert after != figures
    assert app.exceptions() == []
    assert app.query()["text"] == NEW_TEXT  # the link now carries the new text
    if lesson.shows_tokens:
        assert mentions(labels_of(after), "cat") and not mentions(labels_of(after), "flies")
    if name == "positional":
        assert after[0]["shapes"][0][1] - after[0]["shapes"][0][0] == pytest.approx(8)  # 8 tokens now
    if name == "tokenization":
        assert app.heatmap_cell_text(0) == NEW_TEXT.replace(" ", "·")
    assert app.requests_off_loopback() == []


# ---- shared links -----------------------------------------------------------------------------------------


def _selected(app: AppPage, kind: str, label: str) -> str:
    """The value shown by the widget of `kind` (a data-testid) whose label reads `label`."""
    widget = (
        app.page.locator(f'[data-testid="{kind}"]')
        .filter(has=app.page.locator('[data-testid="stWidgetLabel"]', has_text=label))
        .first
    )
    field_ = widget.locator("input").first
    return str(field_.is_checked()) if field_.get_attribute("type") == "checkbox" else field_.input_value()


def check_home(app: AppPage) -> None:
    assert app.text_box().input_value() == "a shared sentence"


def check_tokenization(app: AppPage) -> None:
    assert _selected(app, "stCheckbox", "Special tokens") == "False"
    special = app.page.locator('[data-testid="stMetric"]').filter(has_text="Special")
    assert special.locator('[data-testid="stMetricValue"]').inner_text() == "0"  # [CLS] and [SEP] hidden
    assert app.heatmap_cell_text(0) == "a·shared·sentence"  # every character, spaces as visible dots


def _open_tab(app: AppPage) -> str:
    return app.page.locator('[role="tab"][aria-selected="true"]').first.inner_text().strip()


def check_positional(app: AppPage) -> None:
    assert _selected(app, "stNumberInput", "Model width d") == "64"
    assert _selected(app, "stSlider", "Positions shown") == "40"
    assert _open_tab(app) == "The whole table"
    figures = app.figures()
    assert [figure["title"] for figure in figures] == ["Sinusoidal", "Learned"]
    assert figures[0]["subtitle"].startswith("40 positions × 64 dimensions")


def check_attention(app: AppPage) -> None:
    assert (_selected(app, "stSlider", "Layer"), _selected(app, "stSlider", "Head")) == ("2", "3")
    assert app.page.get_by_text("The numbers the model computed in layer 2, head 3").is_visible()
    weights = app.figures()[0]
    assert weights["title"] == "softmax weight"
    assert mentions(labels_of([weights]), "shared")
    for rows in app.heatmap_rows(0):
        assert all(abs(sum(row) - 1) < 1e-3 for row in rows)


def check_multihead(app: AppPage) -> None:
    assert _selected(app, "stSelectbox", "Layer") == "layer 3"
    assert _selected(app, "stSelectbox", "Head to study closely") == "head 5"
    assert [figure["title"] for figure in app.figures()] == ["Layer 3: who looks at whom"]


def check_causal(app: AppPage) -> None:
    assert _open_tab(app) == "One head on your text"
    assert _selected(app, "stSelectbox", "Layer") == "layer 4"
    assert _selected(app, "stSelectbox", "Head") == "head 7"
    assert "4 · softmax rows, layer 4, head 7" in [figure["title"] for figure in app.figures()]


def check_encoder(app: AppPage) -> None:
    assert (_selected(app, "stSlider", "Layer"), _selected(app, "stSlider", "Head")) == ("3", "5")
    assert mentions(labels_of(app.figures()), "shared")


SHARED = "a shared sentence"
LINKS: dict[str, tuple[dict, Callable[[AppPage], None]]] = {
    "home": ({"text": SHARED}, check_home),
    "tokenization": ({"text": SHARED, "tok_special": "False"}, check_tokenization),
    "positional": ({"pos_d": 64, "pos_n": 40, "pos_tab": "The whole table"}, check_positional),
    "attention": (
        {"text": SHARED, "att_source": "model", "att_layer": 2, "att_head": 3, "att_step": 4},
        check_attention,
    ),
    "multihead": ({"text": SHARED, "mh_layer": 3, "mh_head": 5, "mh_tab": "Head view"}, check_multihead),
    "causal": ({"text": SHARED, "cm_tab": "One head on your text", "cm_layer": 4, "cm_head": 7}, check_causal),
    "encoder": ({"text": SHARED, "enc_layer": 3, "enc_head": 5}, check_encoder),
}


@pytest.mark.parametrize("name", LINKS)
def test_a_shared_link_restores_the_same_view_in_another_browser(app: AppPage, open_app, name):
    query, check = LINKS[name]
    lesson = LESSONS[name]
    app.open(lesson.path, min_plots=1 if lesson.charts else 0, **query)
    assert app.exceptions() == []
    check(app)
    for key, value in query.items():
        assert app.query()[key] == str(value), f"the page dropped {key} from its link"

    # A second person opens the address bar's link in their own browser: same widgets, same figures.
    other = open_app()
    other.page.goto(app.page.url, wait_until="domcontentloaded")
    other.wait_until_painted(len(app.figures()))
    check(other)
    assert other.figures() == app.figures()
    assert other.query() == app.query()
