"""The decoder lesson's exercises: the source letter cross-attention reads at one step of the reverser's
answer, held against the attention of the decoder's full pass, and the parameters cross-attention adds to a
decoder block, held against the modules built from the configuration; the page asks first and shows the
answer only after Check."""

from __future__ import annotations

import pytest

from anatomy.checkpoints.pretrained import load_pretrained
from anatomy.training.recipes import RECIPES
from harness.apptest import (
    HOSTILE_TEXTS,
    all_markdown,
    answer_exercise,
    assert_clean,
    chart,
    chart_keys,
    open_exercise,
    payload,
)
from lessons.decoder import families, links
from lessons.decoder.exercises import (
    letter_read_at_a_step,
    parameters_cross_attention_adds,
    reverser_config,
    step_asked,
)
from lessons.decoder.reversal import reverse_word

PAGE = "lesson_pages/decoder.py"

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def reverser():
    return load_pretrained(str(RECIPES["reverser"].folder), device="cpu")


def lesson_on(reverser, word: str):
    return reverse_word(reverser.model, reverser.task, word)


def exercise_chart(app) -> dict:
    """The reveal's figure: the chart drawn with the exercise's key (the lesson's own charts have theirs)."""
    (key,) = [key for key in chart_keys(app) if key.startswith("exercise_")]
    return chart(app, key)


# ----- the letter a step reads -------------------------------------------------------------------------------


def test_at_step_1_of_decoder_head_0_reads_the_second_e_as_the_full_decoder_pass_does(reverser):
    lesson = lesson_on(reverser, "decoder")
    exercise = letter_read_at_a_step(lesson)
    assert step_asked(lesson) == 1  # its mirrored letter, "e", is in "decoder" twice
    assert "At step 1" in exercise.question and "“decoder”" in exercise.question
    assert int(lesson.cross_attention[0, 1].argmax()) == 5  # row 1 of the last pass, not the step's own record
    assert exercise.answer == "5: e"
    assert exercise.options == ("0: d", "1: e", "2: c", "3: o", "4: d", "5: e", "6: r")  # every position, in order
    assert exercise.is_right("5: e") and not exercise.is_right("1: e")
    assert "here 7 − 1 − 1 = 5" in exercise.explanation and "positions 1, 5" in exercise.explanation


def test_the_step_and_the_letter_follow_the_word(reverser):
    banana, hello, abc = (letter_read_at_a_step(lesson_on(reverser, word)) for word in ("banana", "hello", "abc"))
    assert "At step 0" in banana.question and banana.answer == "5: a"  # the last "a" of three
    assert "At step 1" in hello.question and hello.answer == "3: l"  # the second "l"
    assert "At step 1" in abc.question and abc.answer == "1: b"  # no letter twice: step 1
    assert "positions" not in abc.explanation


def test_no_word_to_reverse_offers_no_letter_exercise():
    assert letter_read_at_a_step(None) is None


def test_the_reveal_frames_the_step_asked_in_every_head(reverser):
    figure = letter_read_at_a_step(lesson_on(reverser, "decoder")).figure()
    frames = figure.layout.shapes
    assert len(frames) == 2 and {(shape.y0, shape.y1) for shape in frames} == {(0.5, 1.5)}  # row 1, both heads


# ----- what cross-attention costs ----------------------------------------------------------------------------


def test_a_decoder_block_holds_exactly_its_cross_attention_and_norm_more_than_an_encoder_block(reverser):
    config = reverser_config()
    assert config == reverser.config  # the configuration the shipped weights were loaded with
    model = families.build_on_meta(config)
    decoder_block, encoder_block = model.decoder.layers[0], model.encoder.layers[0]

    def count(module):
        return sum(parameter.numel() for parameter in module.parameters())

    cross = count(decoder_block.cross_attention) + count(decoder_block.cross_attention_norm)
    exercise = parameters_cross_attention_adds(None)
    assert exercise.answer == count(decoder_block) - count(encoder_block) == cross == 16_768  # 4(64² + 64) + 2·64
    assert exercise.tolerance == 0 and "exact count" in exercise.question
    assert exercise.is_right(16_768) and not exercise.is_right(16_767) and not exercise.is_right(16_640)


def test_the_reveal_stacks_the_parts_of_both_blocks():
    figure = parameters_cross_attention_adds(None).figure()
    parts = {trace.name: list(trace.x) for trace in figure.data}
    assert parts == {
        "attention": [16_640, 16_640],
        "feed-forward": [16_576, 16_576],
        "layer norms": [256, 256],
        "cross-attention": [0, 16_768],
    }


# ----- on the page -------------------------------------------------------------------------------------------


def test_the_page_holds_back_the_attention_maps_until_check_then_reveals_the_answer():
    app = open_exercise(PAGE, "letter")
    assert_clean(app)
    assert "head 0 puts" not in payload(app) and "here 7 − 1 − 1" not in payload(app)
    assert not app.get("plotly_chart") and not app.dataframe, "the cross-attention map would show the answer"
    answer_exercise(app, "5: e")
    assert_clean(app)
    assert [item.value for item in app.success] == ["Right: 5\\: e."]  # the colon escaped for markdown
    assert "here 7 − 1 − 1 = 5" in all_markdown(app)
    assert len(exercise_chart(app)["layout"]["shapes"]) == 2
    assert "dec_cross_chart" in chart_keys(app), "once answered, the lesson's own tab comes back"


def test_a_wrong_letter_is_told_the_right_one_and_a_word_from_the_link_is_asked_about():
    app = answer_exercise(open_exercise(PAGE, "letter", query={links.WORD: "banana"}), "1: a")
    assert "At step 0" in all_markdown(app) and "“banana”" in all_markdown(app)
    assert [item.value for item in app.error] == ["You answered 1\\: a; the answer is 5\\: a."]


def test_the_cost_of_cross_attention_is_hidden_until_check():
    app = open_exercise(PAGE, "cross")
    assert_clean(app)
    assert "16,768" not in payload(app) and "16768" not in payload(app)
    assert not app.get("plotly_chart")
    answer_exercise(app, 16_640)
    assert [item.value for item in app.error] == ["You answered 16,640; the answer is 16,768."]
    assert "all of them in cross-attention" in all_markdown(app) and exercise_chart(app)


def test_a_word_the_reverser_cannot_read_leaves_nothing_to_ask_about_it():
    app = open_exercise(PAGE, "letter")
    app.text_input(key=links.WORD).set_value("12345").run()
    assert_clean(app)
    assert not app.radio or all(not (radio.key or "").startswith("exercise_") for radio in app.radio)
    assert any("nothing to ask" in item.value for item in app.info)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTILE_TEXTS))
def test_a_hostile_word_gives_a_clean_page_with_the_exercise_open(name):
    app = open_exercise(PAGE, "letter")
    app.text_input(key=links.WORD).set_value(HOSTILE_TEXTS[name]).run()
    assert_clean(app)
    for raw in ("<b>", "<script", "<img", "![", "](http", "$x"):
        assert raw not in all_markdown(app)
