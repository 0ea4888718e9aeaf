"""The frame around every lesson: navigation, the shared sidebar, shareable links, layering."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
import torch

from anatomy.devices import describe_device
from harness.apptest import HOSTILE_TEXTS, all_markdown, assert_clean, drawn_children, new_app, open_page
from lessons.common.ui import frame, loaders
from lessons.common.ui.widgets import aligned_lines_markdown

ROOT = Path(__file__).resolve().parents[2]
# Every numbered lesson of the table of contents, in its order (the welcome page, number 0, is not one).
NUMBERED = [lesson for lesson in frame.LESSONS if lesson.number]
LESSONS = [lesson.name for lesson in NUMBERED]
LESSON_TITLES = [lesson.title for lesson in NUMBERED]


def test_welcome_page_shows_the_model_in_use_and_the_device():
    app = open_page("lesson_pages/home.py")
    assert_clean(app)
    assert any("6 layers, 12 attention heads of width 32" in item.value for item in app.markdown)
    badge = describe_device(torch.device(loaders.usable_device()))  # "CPU", or "CUDA (NVIDIA H100 80GB HBM3)"
    assert any(badge in item.value for item in app.sidebar.markdown)


def test_welcome_page_numbers_the_lessons_and_reads_across_its_rows_in_that_order():
    app = open_page("lesson_pages/home.py")
    columns = [[link.proto.label for link in column.get("page_link")] for column in app.main.columns]
    # Rows of three columns, one lesson each: across the first row 1, 2, 3 (not down a column: 1, 4, 7).
    assert columns[: len(LESSON_TITLES)] == [
        [f"{number}. {title}"] for number, title in enumerate(LESSON_TITLES, start=1)
    ]


def test_sidebar_text_comes_from_the_link():
    app = open_page("lesson_pages/home.py", query={"text": "a shared sentence"})
    assert app.sidebar.text_area(key="text").value == "a shared sentence"


def test_typed_text_is_written_into_the_link_so_it_can_be_shared():
    app = open_page("lesson_pages/home.py", text="typed, not linked")
    assert app.query_params["text"] == "typed, not linked"


def test_a_model_folder_that_does_not_exist_gets_a_clear_message_and_the_embedded_model():
    app = open_page("lesson_pages/home.py", query={"model": "/no/such/folder"})
    assert_clean(app)
    errors = [item.value for item in app.sidebar.error]
    assert len(errors) == 1 and "No folder at" in errors[0] and "folder" in errors[0]
    assert any("Showing the embedded model instead" in item.value for item in app.sidebar.caption)
    assert app.sidebar.text_input(key="model").value == "/no/such/folder"  # what the user typed is kept


def test_a_hostile_model_reference_is_shown_escaped_never_as_a_link_or_image():
    hostile = "![x](http://127.0.0.1:9/pixel.png) <b>x</b>"
    app = open_page("lesson_pages/home.py", query={"model": hostile})
    assert_clean(app)
    (error,) = [item.value for item in app.sidebar.error]
    assert "![x](" not in error and "<b>" not in error
    assert "\\!\\[x\\]" in error and "\\<b\\>" in error


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS)
def test_every_lesson_renders_the_default_text_without_an_exception(lesson):
    app = open_page(f"lesson_pages/{lesson}.py")
    assert_clean(app)
    assert app.title, f"{lesson} shows no title"
    # It ends with links to the lessons before and after it, in the welcome page's order ("": the welcome page).
    index = LESSONS.index(lesson)
    neighbours = [([""] + LESSONS)[index]] + LESSONS[index + 1 : index + 2]
    links = {link.proto.page: link.proto.label for link in app.get("page_link")}
    assert list(links) == neighbours
    assert all(label.startswith(f"{LESSONS.index(page) + 1}. ") for page, label in links.items() if page)


def test_a_pages_code_is_sent_only_once_its_expander_is_opened_and_is_the_packages_own_source():
    import inspect
    import textwrap

    from anatomy.attention import MultiHeadAttention, merge_heads, split_heads
    from lessons.common import pooling
    from lessons.common.ui import widgets
    from lessons.multihead import ablation
    from lessons.multihead import statistics as head_stats

    objects = (
        MultiHeadAttention.forward,
        split_heads,
        merge_heads,
        head_stats.head_statistics,
        head_stats.row_entropy,
        head_stats.attention_distance,
        pooling.average_pool,
        ablation.recombine_heads,
        ablation.ablate_heads,
        ablation.layer_with_heads_scaled,
    )  # what lesson_pages/multihead.py shows
    app = open_page("lesson_pages/multihead.py")
    assert [expander.label for expander in app.main.expander] == [widgets.SOURCE_TITLE]
    assert len(app.code) == 0  # closed: no code sent, no highlighter to load
    app.session_state[widgets.source_key(*objects)] = True
    app.run()
    assert_clean(app)
    assert [block.value for block in app.code] == [
        textwrap.dedent(inspect.getsource(obj)).rstrip("\n") for obj in objects
    ]
    assert app.code[0].value.startswith("def forward(")  # a method, shown from the left margin


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS)
def test_every_lesson_survives_empty_and_hostile_text(lesson):
    for name in ("whitespace", "markdown", "script"):
        app = open_page(f"lesson_pages/{lesson}.py", text=HOSTILE_TEXTS[name])
        assert_clean(app)
        if HOSTILE_TEXTS[name].strip():
            assert HOSTILE_TEXTS[name] not in all_markdown(app), f"{lesson} rendered {name} text as markdown"


def test_no_folder_named_pages_sits_beside_the_entrypoint_and_every_page_file_is_in_the_navigation():
    """A `pages/` folder beside app.py starts Streamlit's older multipage mode: on a fresh server a deep link would
    run the page file alone, without app.py's navigation and sidebar. The lessons live in lesson_pages/ instead."""
    assert not (ROOT / "pages").exists()
    listed = {entry.file for entry in (*frame.LESSONS, frame.CLASS_PAGE)}
    assert listed == {f"lesson_pages/{path.name}" for path in (ROOT / "lesson_pages").glob("*.py")}


def test_a_deep_link_as_a_sessions_first_run_paints_its_lesson_and_the_sidebar_without_a_rerun(monkeypatch):
    """The link's own run starts at app.py and shows the lesson: no hidden navigation and rerun to get there."""
    reruns = []
    real_rerun = st.rerun

    def counted_rerun(*args, **kwargs):
        reruns.append(kwargs)
        real_rerun(*args, **kwargs)

    monkeypatch.setattr(st, "rerun", counted_rerun)
    app = new_app()
    app.query_params["text"] = "a shared sentence"
    app.switch_page("lesson_pages/multihead.py").run()  # the first run of the session: the link /multihead?text=…
    assert_clean(app)
    assert reruns == []
    assert [title.value for title in app.title] == ["Multi-head comparison"]
    assert app.sidebar.text_area(key="text").value == "a shared sentence"


@pytest.fixture(scope="module")
def tiny_gpt2_folder(tmp_path_factory):
    """A loadable checkpoint the encoder lessons cannot use: a decoder, with no tokenizer files."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny-gpt2")
    GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=32, n_embd=16, n_layer=1, n_head=2)).save_pretrained(folder)
    return str(folder)


# The lessons that study the sidebar's encoder: a deliberate subset of frame.LESSONS, since the others either
# need no model (positional encodings) or bring their own (the decoder, training and language-model lessons).
# The attention lesson's own toy examples need no model; its real-model source does.
ENCODER_VIEWS = {
    "tokenization": {},
    "attention": {"att_source": "model"},
    "multihead": {},
    "causal": {"cm_tab": "No mask, padding, causal"},
    "encoder": {},
}


@pytest.mark.parametrize("lesson", list(ENCODER_VIEWS))
def test_a_decoder_checkpoint_in_the_sidebar_gets_an_explanation_on_every_encoder_lesson(lesson, tiny_gpt2_folder):
    app = open_page(f"lesson_pages/{lesson}.py", query={"model": tiny_gpt2_folder, **ENCODER_VIEWS[lesson]})
    assert_clean(app)
    assert not app.sidebar.error, "the checkpoint itself loads"
    assert app.info or app.warning, f"{lesson} should say why it cannot use this model"


@pytest.mark.parametrize("lesson", list(ENCODER_VIEWS))
def test_smollm2_in_the_sidebar_loads_and_every_encoder_lesson_says_why_it_cannot_use_it(lesson):
    app = open_page(f"lesson_pages/{lesson}.py", query={"model": "SmolLM2-135M-Instruct", **ENCODER_VIEWS[lesson]})
    assert_clean(app)
    assert not app.sidebar.error and any("30 layers" in item.value for item in app.sidebar.caption)
    assert app.info or app.warning, f"{lesson} should say why it cannot use this model"


def test_aligned_lines_keep_every_space_and_their_fences_outrun_any_backticks_inside():
    plain, with_backticks = aligned_lines_markdown(["reads   a  b", "x ``y`` <b>$z$</b>"]).split("  \n")
    assert plain == "` reads\u00a0\u00a0\u00a0a\u00a0\u00a0b `"  # markdown would fold plain spaces into one
    assert with_backticks.startswith("``` ") and with_backticks.endswith(" ```")  # the line's run is two long
    assert "<b>$z$</b>" in with_backticks  # inside a code span: shown as typed, never rendered


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_model_that_cannot_be_used_is_named_at_the_top_of_the_lesson_not_only_in_the_sidebar(lesson):
    app = open_page(f"lesson_pages/{lesson}.py", query={"model": "/no/such/folder"})
    assert_clean(app)
    (notice,) = [item.value for item in app.main.error if "No folder at" in item.value]
    assert "runs on the embedded all-MiniLM-L6-v2" in notice
    first = drawn_children(app.main)[0]
    assert first.type == "alert" or "No folder at" in str(first.value), "the notice comes first"
