"""The attention lesson's exercises: asked about the head the page shows (the toy as edited, the Apple example,
a head of the model on the learner's text), answered by the lesson's own steps, held to numbers computed here
with numpy and to the weights transformers computes, and revealed only once the learner has committed."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.apptest import HOSTILE_TEXTS, answer_exercise, assert_clean, exercise_field, open_exercise, payload
from lessons.attention import links, text
from lessons.attention.exercises import MAX_OPTIONS, TOO_MANY_KEYS, softmax_weight, strongest_key
from lessons.attention.steps import HeadLesson, feature_labels, traced_head_steps
from lessons.common import examples as toy
from lessons.common.labels import token_labels
from lessons.common.runs import run_encoder
from lessons.common.safe_text import escape_markdown

PAGE = "lesson_pages/attention.py"
TEXT = "time flies like an arrow"
EDITED_X = "X:5,2,0,1;1,1,2,1;1,0,2,0"  # the toy's X with X[0][0] = 5, as a link carries it


def lesson_of(steps, about: str = "the example") -> HeadLesson:
    return HeadLesson(
        steps, tuple(token_labels(steps.tokens)), feature_labels(steps.query.size(-1)), "", False, "", about
    )


def model_lesson(pretrained, words: str, layer: int, head: int) -> HeadLesson:
    """One head of the model on `words`, built as the page builds it."""
    run = run_encoder(pretrained.model, pretrained.tokenizer, words)
    traced = run.trace.layers[layer]
    steps = traced_head_steps(run.tokenized.tokens, traced.attention, head, traced.input)
    return lesson_of(steps, text.head_about(layer, head))


def softmax(scores) -> np.ndarray:
    exponentials = np.exp(np.asarray(scores, dtype=float) - np.max(scores))
    return exponentials / exponentials.sum()


def transformers_weights(hf_bert, tokenizer, words: str, layer: int, head: int) -> np.ndarray:
    """(T, T) the attention weights of one head, as transformers' BertModel computes them."""
    inputs = tokenizer(words, return_tensors="pt")
    with torch.no_grad():
        attentions = hf_bert(**inputs, output_attentions=True).attentions
    return attentions[layer][0, head].numpy()


# ----- a softmax weight --------------------------------------------------------------------------------------


def test_the_softmax_weight_is_computed_from_the_row_of_scaled_scores_the_question_gives():
    exercise = softmax_weight(lesson_of(toy.love_mathematics()), 1, 2)
    # Q Kᵀ of "love" is (6, 48, 42); ÷ √4 gives (3, 24, 21).
    assert "“0\\: I”: 3; “1\\: love”: 24; “2\\: mathematics”: 21" in exercise.question
    assert exercise.answer == pytest.approx(softmax([3, 24, 21])[2]) == pytest.approx(0.047426, abs=1e-6)
    assert "±0.01" in exercise.question and exercise.tolerance == 0.01 and exercise.decimals == 2
    assert exercise.is_right(0.05) and exercise.is_right(0.04) and not exercise.is_right(0.06)
    assert "e^(21 − 24) = 0.0498" in exercise.explanation and "= **0.0474**" in exercise.explanation


def test_the_softmax_question_follows_the_query_and_key_the_learner_follows():
    steps = toy.love_mathematics()
    other = softmax_weight(lesson_of(steps), 2, 1)
    assert "“2\\: mathematics”: 9" in other.question  # "mathematics" scores (1, 10, 9)
    assert other.answer == pytest.approx(softmax([1, 10, 9])[1]) == pytest.approx(0.7309926)


def test_a_softmax_weight_of_a_model_head_matches_transformers(embedded, hf_bert):
    exercise = softmax_weight(model_lesson(embedded, TEXT, 3, 5), 4, 2)
    expected = transformers_weights(hf_bert, embedded.tokenizer, TEXT, 3, 5)[4, 2]
    assert exercise.answer == pytest.approx(expected, abs=1e-6)
    assert exercise.question.startswith("In layer 3, head 5 of the model, the query of “4\\: an”")


def test_a_row_too_long_to_put_through_the_softmax_by_hand_is_not_asked_and_says_why(embedded):
    reason = softmax_weight(model_lesson(embedded, "one two three four five six seven", 0, 0), 1, 2)
    assert reason == TOO_MANY_KEYS.format(keys=9, most=8)  # [CLS], seven words, [SEP]


# ----- the key a query attends to most ---------------------------------------------------------------------


def test_the_key_a_model_head_attends_to_most_is_the_one_transformers_computes_and_follows_the_text(embedded, hf_bert):
    # Layer 0, head 2 looks at the previous token: "like" looks at "flies", "sat" at "cat".
    answers = {}
    for words in (TEXT, "the cat sat on the mat"):
        exercise = strongest_key(model_lesson(embedded, words, 0, 2), 3, 0)
        labels = tuple(token_labels(["[CLS]", *embedded.tokenizer.tokenize(words), "[SEP]"]))
        expected = int(np.argmax(transformers_weights(hf_bert, embedded.tokenizer, words, 0, 2)[3]))
        assert exercise.answer == labels[expected]
        assert exercise.options == labels  # a short text offers every token, in text order
        answers[words] = exercise.answer
    assert answers == {TEXT: "2: flies", "the cat sat on the mat": "2: cat"}


def test_the_key_question_names_the_head_and_the_query():
    exercise = strongest_key(lesson_of(toy.love_mathematics(), text.TOY_ABOUT), 1, 2)
    assert exercise.question == (
        "In the “I love mathematics” example, which key does the query of “1\\: love” give the most weight?"
    )
    assert exercise.answer == "1: love"  # scaled scores (3, 24, 21)
    assert "Here that is the token's own key." in exercise.explanation


def test_a_key_tied_for_the_most_weight_is_not_offered():
    exercise = strongest_key(lesson_of(toy.apple_iphones()), 2, 0)  # Apple: 0.5 on itself, 0.5 on iPhones
    assert exercise.options == ("0: I", "1: love", "2: Apple")
    assert exercise.answer == "2: Apple"
    assert "exactly as much to “3\\: iPhones”, so it was not offered" in exercise.explanation


def test_a_row_of_equal_weights_has_no_key_to_ask_about():
    same = torch.zeros(3, 3, dtype=torch.float64)
    steps = toy.single_head_steps(("a", "b", "c"), same, same, same, same)
    assert strongest_key(lesson_of(steps), 0, 0) is None


def test_a_long_text_offers_the_keys_with_the_most_weight_in_text_order(embedded):
    lesson = model_lesson(embedded, " ".join(["word"] * 20), 1, 0)
    exercise = strongest_key(lesson, 5, 0)
    offered = [lesson.labels.index(option) for option in exercise.options]
    assert len(offered) == MAX_OPTIONS and offered == sorted(offered)
    weights = lesson.steps.weights[5]
    assert weights[offered].min() >= max(weight for key, weight in enumerate(weights) if key not in offered)
    assert exercise.answer == lesson.labels[int(weights.argmax())]
    assert f"the options were the {MAX_OPTIONS} with the most weight" in exercise.explanation


# ----- on the page --------------------------------------------------------------------------------------------


def test_the_page_holds_back_the_steps_until_check_then_marks_a_weight_within_the_tolerance_right():
    app = open_exercise(PAGE, "softmax")
    assert_clean(app)
    assert exercise_field(app).type == "number_input"
    assert not app.get("plotly_chart"), "the steps would show every weight"
    assert "Subtracting the row" not in payload(app) and "0.0474" not in payload(app)
    answer_exercise(app, 0.04)
    assert_clean(app)
    assert app.success and not app.error
    assert "Subtracting the row" in payload(app) and "0.0474" in payload(app)
    assert app.get("plotly_chart"), "the reveal draws the weights, the asked one outlined, and the steps come back"


def test_a_weight_outside_the_tolerance_is_told_the_right_one():
    app = answer_exercise(open_exercise(PAGE, "softmax"), 0.06)
    assert [item.value for item in app.error] == [
        "You answered 0\\.06; the answer is 0\\.05 \\(answers within ±0\\.01 count\\)."
    ]


def test_the_softmax_question_is_asked_of_the_toy_as_the_learner_edited_it():
    app = open_exercise(PAGE, "softmax", query={links.TOY_MATRICES: EDITED_X})
    assert_clean(app)
    edited_x = toy.LOVE_MATHEMATICS_X.clone()
    edited_x[0, 0] = 5
    edited = toy.single_head_steps(
        toy.LOVE_MATHEMATICS_TOKENS,
        edited_x,
        toy.LOVE_MATHEMATICS_W_Q,
        toy.LOVE_MATHEMATICS_W_K,
        toy.LOVE_MATHEMATICS_W_V,
    )
    scores = edited.scaled_scores[1].tolist()
    assert scores != toy.love_mathematics().scaled_scores[1].tolist()
    assert "with your edits" in payload(app)
    answer_exercise(app, round(float(softmax(scores)[2]), 2))
    assert app.success and not app.error


def test_the_key_a_model_head_attends_to_most_is_offered_among_the_texts_tokens_and_checked_on_the_page():
    query = {links.SOURCE: "model", links.LAYER: "0", links.HEAD: "2", links.QUERY: "3"}
    app = open_exercise(PAGE, "strongest", text=TEXT, query=query)
    assert_clean(app)
    labels = ["0: [CLS]", "1: time", "2: flies", "3: like", "4: an", "5: arrow", "6: [SEP]"]
    assert exercise_field(app).options == [escape_markdown(label) for label in labels]  # shown escaped
    assert not app.get("plotly_chart")
    assert "of its weight to" not in payload(app)
    answer_exercise(app, "3: like")
    assert [item.value for item in app.error] == ["You answered 3\\: like; the answer is 2\\: flies."]
    assert "of its weight to" in payload(app)
    assert app.get("plotly_chart")


def test_a_text_too_long_for_a_softmax_by_hand_says_why_there_is_nothing_to_ask():
    app = open_exercise(PAGE, "softmax", text="one two three four five six seven", query={links.SOURCE: "model"})
    assert_clean(app)
    assert [item.value for item in app.info] == [TOO_MANY_KEYS.format(keys=9, most=8)]
    assert app.get("plotly_chart"), "with nothing to answer, nothing is held back"


@pytest.mark.slow
@pytest.mark.parametrize("name", HOSTILE_TEXTS)
@pytest.mark.parametrize("exercise", ["softmax", "strongest"])
def test_hostile_texts_give_a_clean_page_with_the_exercise_open(served, name, exercise):
    words = HOSTILE_TEXTS[name]
    app = open_exercise(PAGE, exercise, text=words, query={links.SOURCE: "model"})
    assert_clean(app)
    if words.strip() and exercise == "strongest":
        asked = strongest_key(model_lesson(served, words, 0, 0), 1, 2)  # the page's layer, head and query
        answer_exercise(app, asked.answer)
        assert_clean(app)
        assert app.success and not app.error
