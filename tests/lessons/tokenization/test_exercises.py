"""The tokenization lesson's exercises: counted by the model's own tokenizer on the learner's text, and
revealed only once the learner has committed to an answer."""

from __future__ import annotations

from harness.apptest import answer_exercise, assert_clean, open_exercise, payload
from lessons.tokenization.exercises import pieces_of_a_word, tokens_read

PAGE = "lesson_pages/tokenization.py"
TEXT = "Tokenizers meet antidisestablishmentarianism."


def test_the_word_cut_into_most_pieces_is_asked_about_and_its_pieces_are_counted_by_the_tokenizer(served):
    exercise = pieces_of_a_word(served.tokenizer, TEXT, 512)
    assert "antidisestablishmentarianism" in exercise.question
    assert exercise.answer == len(served.tokenizer.tokenize("antidisestablishmentarianism")) == 8
    assert exercise.is_right(8) and not exercise.is_right(7)


def test_the_token_count_includes_the_special_tokens_and_follows_the_text(served):
    short, longer = (tokens_read(served.tokenizer, text, 512) for text in ("a cat", "a cat sat on the mat"))
    assert short.answer == len(served.tokenizer("a cat")["input_ids"]) == 4  # [CLS] a cat [SEP]
    assert longer.answer == 8
    assert short.question != longer.question


def test_a_text_the_model_reads_only_in_part_counts_the_tokens_it_reads(served):
    exercise = tokens_read(served.tokenizer, "word " * 600, 512)
    assert exercise.answer == 512
    assert "only its first 512" in exercise.explanation


def test_a_text_without_tokens_offers_no_exercise(served):
    assert pieces_of_a_word(served.tokenizer, "\u200b\u200b", 512) is None
    assert tokens_read(served.tokenizer, "\u200b", 512) is None


def test_the_page_sends_no_piece_of_the_answer_until_check_then_marks_it_right_with_a_figure():
    app = open_exercise(PAGE, "pieces", text=TEXT)
    assert_clean(app)
    assert "##dis" not in payload(app) and "becomes 8 tokens" not in payload(app)
    assert not app.get("plotly_chart"), "the lesson's figures would show the pieces"
    answer_exercise(app, 8)
    assert_clean(app)
    assert [item.value for item in app.success] == ["Right: 8."]
    assert "becomes 8 tokens" in payload(app)
    assert app.get("plotly_chart"), "the reveal marks the word in the text, and the lesson comes back"


def test_a_wrong_count_is_told_the_right_one():
    app = answer_exercise(open_exercise(PAGE, "count", text="a cat"), 3)
    assert [item.value for item in app.error] == ["You answered 3; the answer is 4."]
