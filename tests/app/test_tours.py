"""Guided tours: the files a teacher writes (lessons.common.tours) and the bar that walks a class through
them (lessons.common.ui.tour). Clicking and keying through a tour in a real browser: tests/browser/test_tours.py."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from harness import hostile
from harness.apptest import assert_clean, new_app, open_expander, open_page
from lessons.attention import links as attention_links
from lessons.common import tours
from lessons.common.safe_text import escape_markdown
from lessons.common.tours import Stop, Tour, TourError, read_tour
from lessons.common.ui import tour as tour_ui

PAGES = tour_ui.pages()
GOOD = """
title = "A short tour"

[[stop]]
link = "attention?att_source=toy"
notes = "Scores first."

[[stop]]
title = "Heads"
link = "/multihead?mh_layer=2&exercise=previous"
text = "time flies"
"""


def test_a_tour_file_reads_into_stops_with_their_pages_parameters_and_titles():
    tour = read_tour(GOOD, PAGES)
    assert tour.title == "A short tour"
    first, second = tour.stops
    assert (first.page, first.query, first.title, first.notes) == (
        "attention",
        (("att_source", "toy"),),
        "Scaled dot-product attention",  # the lesson's own title when the stop has none
        "Scores first.",
    )
    assert (second.page, second.query, second.title, second.text) == (
        "multihead",
        (("mh_layer", "2"), ("exercise", "previous")),
        "Heads",
        "time flies",
    )
    assert first.text == "", "a stop without a sentence of its own keeps the learner's text"
    assert second.link == "multihead?mh_layer=2&exercise=previous&text=time+flies"


def test_a_link_to_the_welcome_page_is_a_bare_query_or_home():
    tour = read_tour('title = "t"\n[[stop]]\nlink = "?present=True"\n[[stop]]\nlink = "home"', PAGES)
    assert [stop.page for stop in tour.stops] == ["home", "home"]
    assert tour.stops[0].link == "?present=True"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('title = "t"\n[[stop]\nlink = "attention"', "not valid TOML"),
        ('title = "t"', "no stops"),
        ('[[stop]]\nlink = "attention"', 'needs a title = "…"'),
        ('title = "  "\n[[stop]]\nlink = "attention"', "its title is empty"),
        ('title = "t"\n[[stop]]\nnotes = "no link"', "Stop 1 needs a link"),
        ('title = "t"\n[[stop]]\nlink = "https://example.com/attention"', "is a web address"),
        ('title = "t"\n[[stop]]\nlink = "javascript:alert(1)"', "is a web address"),
        (
            'title = "t"\n[[stop]]\nlink = "attention"\n[[stop]]\nlink = "nowhere?x=1"',
            "Stop 2: “nowhere” is not a page",
        ),
        ('title = "t"\n[[stop]]\nlink = "attention?stop=3"', "sets “stop”, which the tour itself uses"),
        ('title = "t"\n[[stop]]\nlink = "causal?text=one+two"', 'keeps the learner\'s text; .* text = "…"'),
        (
            'title = "t"\n[[stop]]\nlink = "multihead?exercise=previous_token"',
            "Stop 1: its link opens the exercise “previous_token”, which Multi-head comparison \\(multihead\\) "
            "does not offer \\(its exercises are previous, split, resting\\)",
        ),
        ('title = "t"\n[[stop]]\nlink = "home?exercise=count"', "Welcome \\(home\\) does not offer .*no exercises"),
        ('title = "t"\n[[stop]]\nlink = "attention"\ntext = 42', "its text must be text in quotes"),
        ('title = "t"\n[[stop]]\nlink = "attention"\ntext = "' + "x" * 2001 + '"', "its text has 2,001 characters"),
        ('title = "t"\n[[stop]]\nlink = "attention"\nnote = "typo"', "a key “note” that tours do not use"),
        ('title = 3\n[[stop]]\nlink = "attention"', "must be text in quotes, not int"),
        ('title = "t"\nstop = "attention"', "no stops"),
        ('title = "t"\nstop = ["attention"]', "Stop 1 is not a table"),
        ('title = "t"\n[[stop]]\nlink = "attention"\nnotes = "' + "x" * 5000 + '"', "at most 4,000 are read"),
        ("x" * 200_000, "larger than 100 kB"),
    ],
)
def test_a_malformed_tour_file_is_refused_with_what_and_where(text, message):
    with pytest.raises(TourError, match=message):
        read_tour(text, PAGES)


def test_every_shipped_tour_reads_and_the_default_one_visits_every_lesson_in_order():
    shipped = tours.shipped_tours(PAGES)
    assert list(shipped)[0] == "default"
    default = shipped["default"]
    assert list(dict.fromkeys(stop.page for stop in default.stops)) == list(PAGES)


LEARNERS_TEXT = "the cat sat on the mat"  # what a learner typed in the sidebar before following a tour link
SHIPPED_STOPS = [
    (name, number) for name, tour in tours.shipped_tours(PAGES).items() for number in range(1, len(tour.stops) + 1)
]


def elements(node) -> Iterator:
    yield node
    for child in getattr(node, "children", {}).values():
        yield from elements(child)


def shown(app: AppTest, key: str) -> str:
    """What the widget (or the tabs) bound to the link key `key` shows, written as a link writes it."""
    drawn = [*elements(app.main), *elements(app.sidebar)]
    bound = [element for element in drawn if getattr(element, "key", None) == key]
    assert bound, f"nothing on the page is bound to “{key}”"
    element = bound[0]
    if element.type == "tab_container":  # only the open tab runs, so only it has content
        (open_tab,) = [tab.label for tab in element.children.values() if tab.children]
        return open_tab
    value = element.value
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def opened_stop(name: str, number: int) -> AppTest:
    """A learner with their own text in the sidebar opens a link to a stop, as a tour's link reads."""
    app = new_app()
    app.session_state["text"] = LEARNERS_TEXT
    app.query_params["tour"], app.query_params["stop"] = name, str(number)
    return app.run()


@pytest.mark.parametrize(("name", "number"), SHIPPED_STOPS)
def test_every_stop_of_a_shipped_tour_opens_on_the_widgets_its_link_names_and_the_text_it_says(name, number):
    stop = tours.shipped_tours(PAGES)[name].stops[number - 1]
    app = opened_stop(name, number)
    assert_clean(app)
    assert not [item.value for item in app.warning if "cannot be used" in item.value], "a parameter the page refused"
    for key, value in stop.query:
        assert shown(app, key) == value, f"“{key}” shows {shown(app, key)!r}, the stop's link says {value!r}"
    (progress,) = app.get("progress")
    assert f"stop {number} of" in progress.proto.text
    announced = [item.value for item in app.caption if "This stop uses its own sentence" in item.value]
    if stop.text:
        assert app.session_state["text"] == stop.text
        assert announced and escape_markdown(stop.text) in announced[0]
    else:
        assert app.session_state["text"] == LEARNERS_TEXT, "a stop with no sentence of its own keeps the learner's"
        assert not announced


def test_the_lecture_stop_that_asks_what_it_attends_to_follows_the_query_of_it():
    app = opened_stop("attention-in-one-lecture", 3)
    assert "Which word does “it” attend to?" in "\n".join(item.value for item in app.main.markdown)
    picker = app.selectbox(key=attention_links.QUERY)
    assert picker.options[picker.index] == "10: it"


def test_the_sidebar_text_a_learner_typed_stays_through_next_and_previous():
    app = opened_stop("default", 2)
    app.button(key="tour_next").click().run()
    assert app.query_params["stop"] == "3" and app.session_state["text"] == LEARNERS_TEXT
    app.button(key="tour_previous").click().run()
    assert app.query_params["stop"] == "2" and app.session_state["text"] == LEARNERS_TEXT


def test_the_bar_moves_to_the_next_stop_with_its_parameters_and_back():
    app = open_page("lesson_pages/tokenization.py", query={"tour": "default", "stop": "2"})
    assert app.button(key="tour_previous").proto.disabled is False
    app.button(key="tour_next").click().run()
    assert_clean(app)
    assert app.query_params["stop"] == "3" and app.query_params["tok_tab"] == "Tokens → vectors"
    app.button(key="tour_previous").click().run()
    assert app.query_params["stop"] == "2"
    # The previous stop's link names no tab: the default one opens, and the address says so.
    assert app.query_params["tok_tab"] == "Text → tokens" and app.session_state["tok_tab"] == "Text → tokens"


def test_the_first_stop_has_no_previous_and_the_last_no_next():
    first = open_page("lesson_pages/home.py", query={"tour": "default", "stop": "1"})
    assert first.button(key="tour_previous").proto.disabled and not first.button(key="tour_next").proto.disabled
    last_number = len(tours.shipped_tours(PAGES)["default"].stops)
    last = open_page("lesson_pages/language_model.py", query={"tour": "default", "stop": str(last_number)})
    assert last.button(key="tour_next").proto.disabled


def opened_link(query: dict[str, str]) -> AppTest:
    """The app's first run on a link (the welcome page): a link's notices are shown in the run that reads it."""
    app = new_app()
    for key, value in query.items():
        app.query_params[key] = value
    return app.run()


def test_a_link_to_a_tour_or_stop_that_does_not_exist_says_so_and_shows_no_bar():
    app = opened_link({"tour": "<b>nope</b>", "stop": "2"})
    assert_clean(app)
    (warning,) = [item.value for item in app.warning if "no such tour" in item.value]
    assert "\\<b\\>nope" in warning
    assert escape_markdown("(no such tour; the tours here are default, attention-in-one-lecture)") in warning
    assert warning.endswith(escape_markdown("starts from the default, none.")), "the sentence names the default"
    assert not app.get("progress")
    app = opened_link({"tour": "default", "stop": "99"})
    assert any("1 to 12" in item.value for item in app.warning)
    assert "stop 1 of 12" in app.get("progress")[0].proto.text


@pytest.mark.parametrize("number", ["99", "abc"])
def test_a_link_to_a_stop_the_tour_lacks_says_so_on_the_page_it_names(number):
    app = new_app()
    app.query_params["tour"], app.query_params["stop"] = "default", number
    app.switch_page("lesson_pages/attention.py")  # the link's page: …/attention?tour=default&stop=99
    app.run()
    assert_clean(app)
    assert any(f"“stop” value “{number}”" in item.value and "1 to 12" in item.value for item in app.warning)
    assert [title.value for title in app.title] == ["Scaled dot-product attention, step by step"]
    assert "stop 1 of 12" in app.get("progress")[0].proto.text


def open_tour_section(app: AppTest) -> AppTest:
    """Open the sidebar's "Guided tour" section, as a click on it does (its content is sent only while open)."""
    return open_expander(app, tour_ui.PICKER_KEY)


def sidebar_widget_keys(app: AppTest) -> set[str]:
    return {element.key for kind in ("selectbox", "text_input", "button") for element in app.sidebar.get(kind)}


def test_the_closed_tour_section_sends_none_of_its_widgets_and_opening_it_shows_them():
    app = open_page("lesson_pages/home.py")
    assert_clean(app)
    assert not {"tour_choice", "tour_start", "tour_path"} & sidebar_widget_keys(app)
    assert not app.get("file_uploader"), "a closed section would still make the browser load the uploader"
    app = open_tour_section(app)
    assert_clean(app)
    assert {"tour_choice", "tour_start", "tour_path"} <= sidebar_widget_keys(app)
    assert len(app.get("file_uploader")) == 1


def test_the_tour_chosen_and_the_path_typed_are_kept_while_the_section_is_closed(tmp_path):
    missing = str(tmp_path / "not-there.toml")
    app = open_tour_section(open_page("lesson_pages/home.py"))
    app.sidebar.selectbox(key="tour_choice").select_index(1).run()
    app.sidebar.text_input(key="tour_path").input(missing).run()
    app.session_state[tour_ui.PICKER_KEY] = False  # closed, as a click on its header does
    app.run()
    assert "tour_choice" not in sidebar_widget_keys(app)
    app = open_tour_section(app)
    assert_clean(app)
    assert app.sidebar.selectbox(key="tour_choice").index == 1
    assert app.sidebar.text_input(key="tour_path").value == missing
    assert any("There is no tour file at" in item.value for item in app.sidebar.error), "the path is read again"


def test_a_hostile_tour_file_given_by_path_is_shown_literally(tmp_path):
    path = tmp_path / "hostile.toml"
    path.write_text(
        'title = "<img src=x onerror=alert(1)> **bold**"\n[[stop]]\nlink = "attention"\n'
        'notes = "[click](http://127.0.0.1:9/) <script>alert(1)</script> $x^2$"\n',
        encoding="utf-8",
    )
    app = open_tour_section(open_page("lesson_pages/home.py"))
    app.sidebar.text_input(key="tour_path").input(str(path)).run()
    assert_clean(app)
    assert any(item.value.endswith(": 1 stop.") for item in app.sidebar.caption)  # one stop, not "1 stops"
    app.sidebar.button(key="tour_start_yours").click().run()
    assert_clean(app)
    bar = "\n".join(item.value for item in app.main.markdown)
    assert "\\[click\\]\\(http" in bar and "\\<script\\>" in bar and "\\$x^2\\$" in bar.replace("\\^", "^")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("title = [", "not valid TOML"),
        (None, "There is no tour file at"),
        ('title = "t"\n[[stop]]\nlink = "multihead?exercise=previous_token"', "its exercises are previous, split"),
    ],
)
def test_a_tour_path_that_cannot_be_used_gets_a_clear_message(tmp_path, content, message):
    path = tmp_path / "tour.toml"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    app = open_tour_section(open_page("lesson_pages/home.py"))
    app.sidebar.text_input(key="tour_path").input(str(path)).run()
    assert_clean(app)
    assert any(message in item.value for item in app.sidebar.error)


def test_the_operator_offers_a_folder_of_tours_and_names_the_files_it_cannot_use(tmp_path, monkeypatch):
    (tmp_path / "week-1.toml").write_text('title = "Week one"\n[[stop]]\nlink = "causal"\n', encoding="utf-8")
    (tmp_path / "broken.toml").write_text('title = "Broken"\n', encoding="utf-8")
    monkeypatch.setenv(tour_ui.OPERATOR_VARIABLE, str(tmp_path))
    app = open_tour_section(open_page("lesson_pages/home.py", query={"tour": "week-1"}))
    assert_clean(app)
    assert "Week one" in app.get("progress")[0].proto.text
    problem = escape_markdown("broken.toml: The file has no stops")
    assert any(problem in item.value for item in app.sidebar.caption)


def test_a_link_naming_only_the_tour_and_a_stop_opens_that_stops_own_view():
    app = opened_link({"tour": "attention-in-one-lecture", "stop": "4"})  # the welcome page's address
    assert_clean(app)
    stop = tours.shipped_tours(PAGES)["attention-in-one-lecture"].stops[3]
    for key, value in stop.query:
        assert app.query_params[key] == value
    assert [title.value for title in app.title] == ["Multi-head comparison"]
    assert "stop 4 of 6" in app.get("progress")[0].proto.text


# ----- writing a tour file (what the sidebar's tour builder downloads) ----------------------------------------

# Beside the hostile corpus: what would end a TOML string or table early if pasted between quotes as it is.
TOML_BREAKERS = {
    "quotes": "He said \"stop\" and 'go'",
    "triple_quotes": '""" and \'\'\' and """\nnotes = "injected"',
    "brackets": ']]\n[[stop]]\nlink = "https://example.com"',
    "backslash_at_the_end": "C:\\new\\table\\",
    "escape_lookalikes": '\\u0041 \\n \\t \\" \\\\',
    "comment": "# not a comment = true",
}


def stop_written_with(text: str) -> Stop:
    """A stop whose every field holds `text` (cut to each field's limit, and stripped, as a file is read)."""
    return Stop(
        page="multihead",
        query=(("mh_layer", text[:500]), ("exercise", "previous"), ("blank", "")),
        title=text[: tours.MAX_TITLE_CHARACTERS].strip() or "t",
        notes=text[: tours.MAX_NOTES_CHARACTERS].strip(),
        text=text[: tours.MAX_TEXT_CHARACTERS].strip(),
    )


@pytest.mark.parametrize("name", [*TOML_BREAKERS, *hostile.TEXTS])
def test_a_written_tour_reads_back_as_the_same_tour_whatever_its_text_holds(name):
    text = TOML_BREAKERS.get(name) or hostile.TEXTS[name]
    tour = Tour(
        title=text[: tours.MAX_TITLE_CHARACTERS].strip() or "t",
        description=text[: tours.MAX_NOTES_CHARACTERS].strip(),
        stops=(stop_written_with(text), Stop(page="home", query=(), title="Welcome", notes="")),
    )
    assert read_tour(tours.write_tour(tour), PAGES) == tour


def test_every_shipped_tour_written_again_reads_back_the_same():
    for name, tour in tours.shipped_tours(PAGES).items():
        assert read_tour(tours.write_tour(tour), PAGES) == tour, name


def test_a_written_tour_is_the_format_a_teacher_writes_by_hand():
    tour = Tour(
        title="Two stops",
        description="",
        stops=(
            Stop(page="attention", query=(("att_source", "toy"),), title="Scores", notes='Ask "why"?', text="a\tb"),
            Stop(page="home", query=(), title="Welcome", notes=""),
        ),
    )
    assert tours.write_tour(tour) == (
        f"{tours.FILE_HEADER}\n"
        'title = "Two stops"\n'
        "\n"
        "[[stop]]\n"
        'title = "Scores"\n'
        'link = "attention?att_source=toy"\n'
        'text = "a\\tb"\n'
        'notes = "Ask \\"why\\"?"\n'
        "\n"
        "[[stop]]\n"
        'title = "Welcome"\n'
        'link = "home"\n'
    )


def test_a_toml_string_reads_back_as_every_character_it_was_written_from():
    characters = [chr(code) for code in range(0x3000) if not 0xD800 <= code <= 0xDFFF] + ["😍", "\U0010ffff"]
    text = "".join(characters)
    assert tomllib.loads(f"value = {tours.toml_string(text)}")["value"] == text
    assert tours.toml_string('a"b\\c\nd\x7f') == '"a\\"b\\\\c\\nd\\u007F"'
