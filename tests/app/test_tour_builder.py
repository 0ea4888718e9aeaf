"""The tour builder (lessons.common.ui.tour_builder): a lecturer adds the views on screen as stops, edits,
moves and removes them in the sidebar, plays the tour with the tour bar, and downloads it as a tour file."""

from __future__ import annotations

import pytest
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest

from harness.apptest import assert_clean, open_expander, open_page
from lessons.attention import links as attention_links
from lessons.common import tours
from lessons.common.safe_text import visible
from lessons.common.tours import Stop, Tour
from lessons.common.ui import classroom as classroom_ui
from lessons.common.ui import tour as tour_ui
from lessons.common.ui import tour_builder

PAGES = tour_ui.pages()
ATTENTION_VIEW = {attention_links.SOURCE: "model", attention_links.LAYER: "2", attention_links.HEAD: "3"}
LECTURERS_TEXT = "The animal didn't cross the street because it was too tired"


def open_builder(page: str = "lesson_pages/attention.py", query: dict[str, str] | None = None) -> AppTest:
    """The page, with the sidebar's "Build a tour" section open, as a click on its header opens it."""
    app = open_page(page, text=LECTURERS_TEXT, query=query)
    return open_expander(app, tour_builder.SECTION_KEY)


def add_this_view(app: AppTest) -> AppTest:
    app.sidebar.button(key="tour_build_add").click().run()
    assert_clean(app)
    return app


def go_to(app: AppTest, page: str, query: dict[str, str] | None = None) -> AppTest:
    """Another lesson, as the navigation opens it (with the link's parameters `query`). Like a browser, AppTest
    sends no widget's state with a page change: the builder stays open all the same."""
    app.query_params.clear()
    app.query_params.update(query or {})
    app.switch_page(page).run()
    assert_clean(app)
    assert app.session_state[tour_builder.SECTION_KEY], "the builder closed on the way to another lesson"
    return app


def built(app: AppTest) -> list[Stop]:
    return [entry.stop for entry in app.session_state[tour_builder.DRAFT_KEY].stops]


def numbers(app: AppTest) -> list[int]:
    """The stops' numbers in the draft, in order: their fields are keyed by them."""
    return [entry.number for entry in app.session_state[tour_builder.DRAFT_KEY].stops]


def three_stops() -> AppTest:
    app = add_this_view(open_builder(query=ATTENTION_VIEW))
    add_this_view(go_to(app, "lesson_pages/multihead.py", {"mh_layer": "4"}))
    return add_this_view(go_to(app, "lesson_pages/home.py"))


def test_the_closed_section_sends_nothing_and_the_open_one_offers_to_add_the_view():
    app = open_page("lesson_pages/home.py")
    assert "tour_build_add" not in {button.key for button in app.sidebar.button}
    app = open_expander(app, tour_builder.SECTION_KEY)
    assert_clean(app)
    assert app.sidebar.button(key="tour_build_add").label == "Add this view as a stop"


def test_adding_a_view_records_its_page_and_its_link_less_the_sidebars_text_and_the_tours_keys():
    app = open_builder(query=ATTENTION_VIEW)
    address = dict(app.query_params)
    assert address["text"] == LECTURERS_TEXT and "present" in address, "the address holds the sidebar's too"
    (stop,) = built(add_this_view(app))
    assert stop.page == "attention"
    assert dict(stop.query) == {key: value for key, value in address.items() if key not in ("text", "present")}
    assert dict(stop.query).items() >= ATTENTION_VIEW.items()
    assert stop.title == "Scaled dot-product attention" and stop.notes == "" and stop.text == ""


def test_a_view_added_while_a_tour_plays_leaves_the_tours_own_keys_out():
    app = open_builder("lesson_pages/tokenization.py", query={"tour": "default", "stop": "2"})
    assert app.query_params["tour"] == "default"
    (stop,) = built(add_this_view(app))
    assert stop.page == "tokenization" and not {"tour", "stop", "text"} & {key for key, _ in stop.query}


def test_a_stop_that_fixes_its_sentence_keeps_the_sidebars_text_and_one_that_follows_keeps_none():
    app = open_builder()
    app.sidebar.radio(key="tour_build_sentence").set_value(True).run()
    add_this_view(app)
    app.sidebar.radio(key="tour_build_sentence").set_value(False).run()
    fixed, following = built(add_this_view(app))
    assert fixed.text == LECTURERS_TEXT and following.text == ""


def test_the_exercise_open_on_screen_is_recorded_and_another_one_or_none_can_be_picked():
    app = open_builder("lesson_pages/multihead.py", query={"exercise": "previous"})
    add_this_view(app)
    (stop,) = built(app)
    assert dict(stop.query)["exercise"] == "previous"
    field = app.sidebar.selectbox(key="tour_build_0_exercise")
    assert field.options == ["none", "A previous-token head", "Numbers in one head", "Heads that rest"]
    field.select("Numbers in one head").run()
    assert dict(built(app)[0].query)["exercise"] == "split"
    app.sidebar.selectbox(key="tour_build_0_exercise").select("none").run()
    assert dict(built(app)[0].query)["exercise"] == "none"


def test_stops_are_edited_moved_and_removed_and_their_fields_move_with_them():
    app = three_stops()
    assert [stop.page for stop in built(app)] == ["attention", "multihead", "home"]
    app.sidebar.text_input(key="tour_build_1_title").input("All the heads").run()
    app.sidebar.text_area(key="tour_build_1_notes").input("Find the head that looks back.").run()
    app.sidebar.text_area(key="tour_build_1_text").input("time flies").run()
    heads = built(app)[1]
    assert (heads.title, heads.notes, heads.text) == ("All the heads", "Find the head that looks back.", "time flies")
    assert app.sidebar.button(key="tour_build_0_up").proto.disabled
    assert app.sidebar.button(key="tour_build_2_down").proto.disabled
    app.sidebar.button(key="tour_build_1_up").click().run()
    assert [stop.page for stop in built(app)] == ["multihead", "attention", "home"] and numbers(app) == [1, 0, 2]
    assert app.sidebar.text_input(key="tour_build_1_title").value == "All the heads", "the field moved with its stop"
    app.sidebar.button(key="tour_build_1_down").click().run()
    app.sidebar.button(key="tour_build_1_down").click().run()
    assert [stop.page for stop in built(app)] == ["attention", "home", "multihead"]
    app.sidebar.button(key="tour_build_2_remove").click().run()
    assert_clean(app)
    assert [stop.page for stop in built(app)] == ["attention", "multihead"]
    assert "tour_build_2_title" not in {field.key for field in app.sidebar.text_input}
    captions = [caption.value for caption in app.sidebar.caption if caption.value.startswith("**Stop")]
    assert [caption.split(" · ")[0] for caption in captions] == ["**Stop 1**", "**Stop 2**"]


def test_nothing_typed_in_the_builder_is_lost_from_lesson_to_lesson_or_while_the_section_is_closed():
    app = add_this_view(open_builder())
    app.sidebar.text_input(key="tour_build_title").input("Monday's lecture").run()
    app.sidebar.text_area(key="tour_build_0_notes").input("Ask before step 4.").run()
    go_to(app, "lesson_pages/causal.py")
    assert app.sidebar.text_area(key="tour_build_0_notes").value == "Ask before step 4."
    app.session_state[tour_builder.SECTION_KEY] = False  # closed, as a click on its header closes it
    app.run()
    app.switch_page("lesson_pages/encoder.py").run()
    assert "tour_build_0_notes" not in {field.key for field in app.sidebar.text_area}
    assert "tour_build_0_notes" not in app.session_state, "Streamlit forgot the field's state"
    app = open_expander(app, tour_builder.SECTION_KEY)
    assert_clean(app)
    assert app.sidebar.text_input(key="tour_build_title").value == "Monday's lecture"
    assert app.sidebar.text_area(key="tour_build_0_notes").value == "Ask before step 4."
    assert built(app)[0].notes == "Ask before step 4."


def test_playing_the_built_tour_opens_its_first_stop_under_the_tour_bar_and_next_goes_on():
    app = three_stops()
    title = "Monday's lecture"
    app.sidebar.text_input(key="tour_build_title").input(title).run()
    app.sidebar.button(key="tour_build_play").click().run()
    assert_clean(app)
    (progress,) = app.get("progress")
    assert progress.proto.text == f"Tour: {visible(title)} · stop 1 of 3"
    assert [title.value for title in app.title] == ["Scaled dot-product attention, step by step"]
    assert app.query_params["tour"] == tour_ui.BUILT and app.query_params["stop"] == "1"
    assert {key: app.query_params[key] for key in ATTENTION_VIEW} == ATTENTION_VIEW
    app.button(key="tour_next").click().run()
    assert_clean(app)
    assert "stop 2 of 3" in app.get("progress")[0].proto.text
    assert [title.value for title in app.title] == ["Multi-head comparison"]


def test_playing_a_built_tour_leaves_a_file_in_the_uploader_alone(tmp_path):
    path = tmp_path / "other.toml"
    path.write_text('title = "Another tour"\n[[stop]]\nlink = "encoder"\n', encoding="utf-8")
    app = open_expander(add_this_view(open_builder()), tour_ui.PICKER_KEY)
    app.sidebar.text_input(key="tour_path").input(str(path)).run()  # read again on every run
    app.sidebar.button(key="tour_build_play").click().run()
    assert_clean(app)
    assert "Tour: My tour · stop 1 of 1" in app.get("progress")[0].proto.text


class Downloads:
    """What the app handed Streamlit to download, as (file name, bytes), in order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.files: list[tuple[str | None, bytes]] = []
        store = MemoryMediaFileStorage.load_and_get_id

        def recording(storage, path_or_data, mimetype, kind, filename=None):
            self.files.append((filename, path_or_data))
            return store(storage, path_or_data, mimetype, kind, filename)

        monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", recording)

    def last_toml(self) -> tuple[str | None, str]:
        name, data = [file for file in self.files if (file[0] or "").endswith(".toml")][-1]
        return name, data.decode("utf-8") if isinstance(data, bytes) else data


# Typed into the builder's fields: each must come back from the downloaded file exactly (the file writer itself
# meets the whole hostile corpus in tests/app/test_tours.py).
HOSTILE_TITLE = 'He said "stop" ]]\n[[stop]]\nlink = "https://example.com" \'\'\' """'
HOSTILE_NOTES = "first line\nsecond\r\nthird \\u0041 C:\\new\\ bell \x07 delete \x7f tab\tend \\"
HOSTILE_TEXT = "I 😍 transformers 🤖 الانتباه هو كل ما تحتاجه <b>bold</b> **bold** [link](http://127.0.0.1:9/) $x^2$"


def test_the_download_reads_back_as_the_built_tour_whatever_was_typed_in_it(monkeypatch):
    downloads = Downloads(monkeypatch)
    app = add_this_view(open_builder(query=ATTENTION_VIEW))
    add_this_view(go_to(app, "lesson_pages/home.py"))
    app.sidebar.text_input(key="tour_build_title").input(HOSTILE_TITLE).run()
    app.sidebar.text_input(key="tour_build_0_title").input(HOSTILE_TITLE).run()
    app.sidebar.text_area(key="tour_build_0_notes").input(HOSTILE_NOTES).run()
    app.sidebar.text_area(key="tour_build_0_text").input(HOSTILE_TEXT).run()
    app.sidebar.text_area(key="tour_build_1_notes").input(HOSTILE_TEXT).run()
    assert_clean(app)
    first, second = built(app)
    assert (first.title, first.notes, first.text, second.notes) == (
        HOSTILE_TITLE,
        HOSTILE_NOTES,
        HOSTILE_TEXT,
        HOSTILE_TEXT,
    )
    file_name, text = downloads.last_toml()
    assert file_name == "he-said-stop-stop-link-https-example-com.toml"
    assert text.startswith(tours.FILE_HEADER)
    assert tours.read_tour(text, PAGES) == Tour(HOSTILE_TITLE, "", (first, second))
    app.sidebar.button(key="tour_build_play").click().run()
    assert_clean(app)
    bar = "\n".join(item.value for item in app.main.markdown)
    assert visible(HOSTILE_TITLE) in bar and visible(HOSTILE_NOTES) in bar, "shown as written, never as markup"


def test_the_download_is_the_shipped_format(monkeypatch):
    downloads = Downloads(monkeypatch)
    app = open_builder(query={attention_links.SOURCE: "toy"})
    add_this_view(app)
    app.sidebar.text_input(key="tour_build_title").input("Attention, day 1").run()
    app.sidebar.text_area(key="tour_build_0_notes").input('Scores first: "QKᵀ".').run()
    file_name, text = downloads.last_toml()
    assert file_name == "attention-day-1.toml"
    link = built(app)[0].file_link
    assert link.startswith("attention?att_source=toy&")
    assert text == (
        f"{tours.FILE_HEADER}\n"
        'title = "Attention, day 1"\n'
        "\n"
        "[[stop]]\n"
        'title = "Scaled dot-product attention"\n'
        f'link = "{link}"\n'
        'notes = "Scores first: \\"QKᵀ\\"."\n'
    )


def test_a_tour_at_the_stop_limit_says_so_and_adds_no_more(monkeypatch):
    monkeypatch.setattr(tours, "MAX_STOPS", 2)
    app = add_this_view(add_this_view(open_builder()))
    button = app.sidebar.button(key="tour_build_add")
    assert button.proto.disabled
    assert any("This tour has 2 stops, as many as a tour may have" in item.value for item in app.sidebar.caption)
    assert len(built(app)) == 2


def test_a_draft_the_checks_refuse_says_why_and_offers_neither_play_nor_download():
    app = add_this_view(open_builder())
    app.sidebar.text_input(key="tour_build_title").input("   ").run()
    assert any(
        "Not yet a tour to play or download" in item.value and "its title is empty" in item.value
        for item in app.sidebar.error
    )
    assert "tour_build_play" not in {button.key for button in app.sidebar.button}
    app.sidebar.text_input(key="tour_build_title").input("Back").run()
    app.sidebar.text_area(key="tour_build_0_text").input("x" * (tours.MAX_TEXT_CHARACTERS + 1)).run()
    assert any(visible("Stop 1: its text has 2,001 characters") in item.value for item in app.sidebar.error)


@pytest.mark.parametrize(
    ("title", "name"),
    [("Attention, day 1", "attention-day-1.toml"), ("😍", "tour.toml"), ("../../etc/passwd", "etc-passwd.toml")],
)
def test_the_downloaded_file_is_named_after_the_tour(title, name):
    assert tour_builder.file_name(title) == name


def test_a_view_added_in_a_class_keeps_its_code_out_and_the_class_page_cannot_be_added(tmp_path, monkeypatch):
    monkeypatch.setenv("ANATOMY_CLASS_DATABASE_URL", f"sqlite:///{tmp_path / 'classes.sqlite'}")
    classroom_ui.store.clear()
    classroom_ui._class_info.clear()
    started = classroom_ui.ready_store().start_class("Lecture", 90)
    app = open_builder("lesson_pages/tokenization.py", query={"class": started.code})
    assert started.code in str(app.query_params["class"]), "the address holds the class code"
    (stop,) = built(add_this_view(app))
    assert "class" not in {key for key, _ in stop.query} and started.code not in str(stop.query)
    lecturer = open_builder("lesson_pages/class.py", query={"class": started.code, "key": started.lecturer_key})
    assert lecturer.sidebar.button(key="tour_build_add").disabled  # the lecturer's page is no lesson view
    assert any("not a lesson" in caption.value for caption in lecturer.sidebar.caption)
    classroom_ui.store.clear()
