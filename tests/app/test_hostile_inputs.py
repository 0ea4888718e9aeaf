"""Whatever a student types, anywhere: no exception, no rendered markup, no request off the machine, and a
clear message where the input is refused.

Every entry of harness/hostile.py goes through the sidebar on three lessons; a representative selection
goes through each lesson's own text fields and the toy matrix editor, and the number strings through every
numeric link parameter. benchmarks/hostile_sweep.py runs the full cross product (every entry, every field,
every tab).
"""

from __future__ import annotations

import socket
import time

import pytest

from harness.apptest import assert_clean, open_page, page_from_function, page_from_string
from harness.hostile import (
    NUMBER_PARAMETERS,
    NUMBER_TEXTS,
    PAGE_FIELDS,
    REPRESENTATIVE,
    TEXTS,
    OutboundConnections,
    problems_after,
)
from lessons.common import hosting

SIDEBAR_VIEWS = {
    "tokenization": ("lesson_pages/tokenization.py", {}),
    "attention": ("lesson_pages/attention.py", {"att_source": "model"}),
    "encoder": ("lesson_pages/encoder.py", {}),
}
NUMBER_SELECTION = ("word", "empty", "overflow", "nan", "huge", "script", "nul")
SEED_X = [["2", "0", "1", "1"], ["0", "1", "1", "1"], ["1", "1", "0", "1"]]


@pytest.fixture(scope="module")
def apps():
    """One session per view, reused: a student who keeps typing new things into the same page."""
    opened = {}

    def app_for(name, page, query):
        if name not in opened:
            opened[name] = open_page(page, query=query)
        return opened[name]

    return app_for


def run_guarded(app) -> tuple[list[str], float]:
    with OutboundConnections() as outbound:
        start = time.perf_counter()
        app.run()
        seconds = time.perf_counter() - start
    return outbound.attempts, seconds


# ---------------------------------------------------------------------------------------------------------
# The corpus and the checks themselves


def test_the_corpus_holds_at_least_forty_inputs_of_every_kind_the_issue_names():
    assert len(TEXTS) >= 40
    assert TEXTS["empty"] == "" and len(TEXTS["long_100k_words"]) == len(TEXTS["long_100k_one_word"]) == 100_000
    for name in (
        "emoji",
        "combining_accents",
        "zero_width_inside",
        "right_to_left_arabic",
        "control_characters",
        "nul_inside",
        "html_bold_img",
        "markdown_image",
        "markdown_link",
        "script_tag",
        "long_word_1000",
        "number_only",
    ):
        assert TEXTS[name].strip(), name
    assert "\x00" in TEXTS["nul_inside"] and "\u200b" in TEXTS["zero_width_inside"]


def test_the_checks_catch_markup_that_reached_markdown_and_pass_text_shown_literally():
    rendered = page_from_string("import streamlit as st\nst.markdown(st.session_state['t'])")
    rendered.session_state["t"] = TEXTS["markdown_image"]
    assert problems_after(rendered.run(), TEXTS["markdown_image"])
    literal = page_from_string("import streamlit as st\nst.text(st.session_state['t'])")
    literal.session_state["t"] = TEXTS["markdown_image"]
    assert problems_after(literal.run(), TEXTS["markdown_image"]) == []


def test_the_outbound_guard_refuses_and_records_a_connection_off_the_machine():
    with OutboundConnections() as outbound:
        with pytest.raises(OSError):
            socket.create_connection(("192.0.2.1", 80), timeout=1)  # TEST-NET-1: never routable
    assert outbound.attempts == ["192.0.2.1"]


# ---------------------------------------------------------------------------------------------------------
# The sidebar's text, every entry, on three lessons


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TEXTS))
@pytest.mark.parametrize("view", list(SIDEBAR_VIEWS))
def test_every_hostile_text_in_the_sidebar_is_survived_and_shown_literally(apps, view, name):
    app = apps(view, *SIDEBAR_VIEWS[view])
    app.session_state["text"] = TEXTS[name]
    outbound, _ = run_guarded(app)
    assert problems_after(app, TEXTS[name]) == []
    assert not outbound
    assert app.session_state["text"] == TEXTS[name], "the text is never altered or lost"


def test_100000_characters_get_a_truncation_notice_and_an_answer_within_seconds():
    app = open_page("lesson_pages/multihead.py", text="warm")
    app.session_state["text"] = TEXTS["long_100k_words"]
    outbound, seconds = run_guarded(app)
    assert_clean(app)
    assert any("the model reads at most 512" in item.value for item in app.warning)
    assert seconds < 30, f"{seconds:.1f} s"  # about 2 s on a quiet 2-core machine; generous for shared CI


def test_in_hosted_mode_100000_characters_are_refused_at_once_and_kept_in_the_box(monkeypatch):
    monkeypatch.setenv(hosting.HOSTED_VARIABLE, "1")
    app = open_page("lesson_pages/tokenization.py", text="warm")
    app.session_state["text"] = TEXTS["long_100k_words"]
    _, seconds = run_guarded(app)
    assert_clean(app)
    assert any("100,000 characters" in item.value for item in app.main.error)
    assert app.session_state["text"] == TEXTS["long_100k_words"]
    assert seconds < 10, f"{seconds:.1f} s"


# ---------------------------------------------------------------------------------------------------------
# The lessons' own fields, a representative selection (the sweep runs every entry)


@pytest.mark.slow
@pytest.mark.parametrize("name", REPRESENTATIVE)
@pytest.mark.parametrize("field", list(PAGE_FIELDS))
def test_hostile_text_in_a_lessons_own_field_is_survived(apps, field, name):
    page, query, key = PAGE_FIELDS[field]
    app = apps(field, page, query)
    app.session_state[key] = TEXTS[name]
    outbound, _ = run_guarded(app)
    assert problems_after(app, TEXTS[name]) == []
    assert not outbound


@pytest.mark.parametrize("name", REPRESENTATIVE)
def test_hostile_text_in_a_toy_matrix_cell_is_refused_with_a_message_naming_the_cell(apps, name):
    app = apps("toy", "lesson_pages/attention.py", {"att_source": "toy"})
    cells = [row[:] for row in SEED_X]
    cells[1][2] = TEXTS[name]  # row 1, column 2, counting from 0 as the page does
    app.session_state["att_toy_cells"] = {"X": cells}
    outbound, _ = run_guarded(app)
    assert problems_after(app, TEXTS[name]) == []
    assert not outbound
    if name != "number_only":  # "42" is a number: it is used
        (error,) = [item.value for item in app.error]
        assert "X, row 1, column 2" in error and "nothing below is recomputed" in error


# ---------------------------------------------------------------------------------------------------------
# Text where numbers are expected: every numeric link parameter of every lesson


@pytest.mark.slow
@pytest.mark.parametrize("name", NUMBER_SELECTION)
@pytest.mark.parametrize("view", list(NUMBER_PARAMETERS))
def test_text_where_a_link_expects_numbers_falls_back_to_the_defaults(view, name):
    raw = NUMBER_TEXTS[name]
    page, opening, parameters = NUMBER_PARAMETERS[view]
    with OutboundConnections() as outbound:
        app = open_page(page, query={**opening, **dict.fromkeys(parameters, raw)})
    assert problems_after(app, raw) == []
    assert not outbound.attempts
    assert app.title


def test_the_positional_lesson_says_which_link_value_it_could_not_use():
    app = open_page("lesson_pages/positional.py", query={"pos_d": "abc", "pos_base": "NaN"})
    assert_clean(app)
    warnings = " ".join(item.value for item in app.warning)
    assert "width d must be an even whole number" in warnings and "base must be a number greater than 1" in warnings


def _page_with_html(body: str) -> None:
    import streamlit as st

    st.html(body)


@pytest.mark.parametrize(
    ("body", "refused"),
    [("<style>.st-key-a { color: red; }</style>", False), ("<b>bold</b>", True), ("<style></style><b>x</b>", True)],
)
def test_the_only_raw_html_a_page_may_draw_is_a_style_sheet(body, refused):
    app = page_from_function(_page_with_html, body).run()
    assert bool(problems_after(app, "")) is refused


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_literal_text_is_shown_exactly_whichever_element_draws_it(name):
    app = page_from_string(
        "import streamlit as st\nfrom lessons.common.ui import widgets\nwidgets.show_literal(st.session_state['t'])"
    )
    app.session_state["t"] = TEXTS[name]
    app.run()
    (shown,) = [*app.text, *app.code]
    if app.text:
        assert shown.value == TEXTS[name]
    else:  # st.code, which leaves out line breaks at the very start and end, and draws an empty text as a space
        assert shown.value.strip("\n") == (TEXTS[name] or " ").strip("\n")
    assert problems_after(app, TEXTS[name]) == []
