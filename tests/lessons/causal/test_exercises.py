"""The causal-masking lesson's exercises: computed by the lesson's masking code on one head of the learner's
text (or on the worked example), checked here against a direct computation from transformers' own queries
and keys, and revealed only once the learner has committed to an answer."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

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
from lessons.causal import links, masking
from lessons.causal.exercises import MaskedHead, allowed_pairs, weight_on_itself, worked_example
from lessons.common.runs import run_encoder
from lessons.common.safe_text import escape_markdown
from lessons.common.ui.check_yourself import NOTHING_TO_ASK

PAGE = "lesson_pages/causal.py"
TEXT = "time flies like an arrow"  # [CLS] time flies like an arrow [SEP]: 7 tokens
REVEALED = "shares the whole row among the 3 tokens"  # in the weight exercise's explanation only


def on_text(model, text: str, layer: int = 0, head: int = 0):
    """The exercises' subject as the page builds it: one head of the text under the causal mask."""
    run = run_encoder(model.model, model.tokenizer, text)
    attention = masking.causal(masking.head_inputs(run.trace.layers[layer].attention, head))
    return lambda: MaskedHead(run.tokenized.tokens, attention, f"layer {layer}, head {head}")


def transformers_scores(hf_bert, tokenizer, text: str, layer: int, head: int) -> np.ndarray:
    """(T, T) QKᵀ/√dₖ of one head, from transformers' own BERT: its layer input and query and key projections."""
    with torch.no_grad():
        output = hf_bert(**tokenizer(text, return_tensors="pt"), output_hidden_states=True)
        attention = hf_bert.encoder.layer[layer].attention.self
        width = attention.attention_head_size
        columns = slice(head * width, (head + 1) * width)
        hidden = output.hidden_states[layer][0]  # (T, D), what the layer reads
        query, key = attention.query(hidden)[:, columns], attention.key(hidden)[:, columns]  # (T, d_head)
    return (query @ key.T).double().numpy() / math.sqrt(width)


def softmax(values: np.ndarray) -> np.ndarray:
    exponentials = np.exp(values - values.max())
    return exponentials / exponentials.sum()


def test_the_mask_allows_the_pairs_on_and_below_the_diagonal_of_the_whole_text(embedded):
    for text, tokens in ((TEXT, 7), ("a cat", 4)):
        assert len(embedded.tokenizer(text)["input_ids"]) == tokens
        exercise = allowed_pairs(on_text(embedded, text))
        assert exercise.answer == np.tril(np.ones((tokens, tokens))).sum() == tokens * (tokens + 1) // 2
        assert f"T = {tokens} tokens" in exercise.question
    assert allowed_pairs(on_text(embedded, TEXT)).answer == 28
    assert "`` [CLS] `` is" not in allowed_pairs(on_text(embedded, TEXT)).question  # tokens in code spans
    assert allowed_pairs(worked_example).answer == 10  # 4 tokens: 1 + 2 + 3 + 4


def test_a_long_text_is_counted_whole_and_its_tokens_are_not_written_out(embedded):
    exercise = allowed_pairs(on_text(embedded, "word " * 600))  # cut at the model's 512 positions
    assert exercise.answer == 512 * 513 // 2 == 131_328
    assert "`word`" not in exercise.question and "` word `" not in exercise.question


def test_the_weight_on_itself_is_the_softmax_over_the_keys_up_to_it_of_transformers_scores(embedded, hf_bert):
    for layer, head in ((0, 0), (3, 5)):
        scores = transformers_scores(hf_bert, embedded.tokenizer, TEXT, layer, head)
        expected = softmax(scores[2, :3])[2]  # token 2 ("flies") reads [CLS], "time" and itself
        exercise = weight_on_itself(on_text(embedded, TEXT, layer, head))
        assert exercise.answer == pytest.approx(expected, abs=1e-5)
        assert exercise.question.startswith(f"In layer {layer}, head {head}, token 2 (` flies `)")
        # The five scores the question lists, two of them after the token, are transformers' to two decimals;
        # a learner who takes the softmax of the three it may use is within the tolerance.
        listed = [float(score.replace("−", "-")) for score in re.findall(r"`: (−?\d+\.\d\d)", exercise.question)]
        np.testing.assert_allclose(listed, scores[2, :5], atol=0.005 + 1e-6)
        assert exercise.is_right(round(float(softmax(np.array(listed[:3]))[2]), 2))
    assert weight_on_itself(on_text(embedded, TEXT, 0, 0)).answer != pytest.approx(
        weight_on_itself(on_text(embedded, "a cat", 0, 0)).answer, abs=0.01
    )


def test_the_worked_example_weight_is_the_softmax_of_its_three_allowed_scores():
    exercise = weight_on_itself(worked_example)
    assert exercise.answer == pytest.approx(math.exp(0.1) / (math.exp(0.1) + math.exp(0.6) + math.exp(0.1)))
    assert exercise.question.startswith("In the worked example, token 2 (` Apple `) has these made-up scores")
    assert exercise.tolerance == 0.01 and exercise.decimals == 2
    assert exercise.is_right(exercise.answer + 0.009) and not exercise.is_right(exercise.answer + 0.02)


def test_a_text_with_no_token_after_the_third_has_no_weight_to_ask_about(embedded):
    assert len(embedded.tokenizer("x")["input_ids"]) == 3  # [CLS] x [SEP]
    assert weight_on_itself(on_text(embedded, "x")) is None
    app = open_exercise(PAGE, "weight", text="x")
    assert_clean(app)
    assert [item.value for item in app.info] == [NOTHING_TO_ASK]


def test_the_page_sends_nothing_of_the_weight_until_check_then_frames_it_and_brings_the_tabs_back(served):
    exercise = weight_on_itself(on_text(served, TEXT))
    app = open_exercise(PAGE, "weight", text=TEXT)
    assert_clean(app)
    assert "In layer 0, head 0, token 2" in payload(app)
    assert REVEALED not in payload(app) and f"**{exercise.answer:.2f}**" not in payload(app)
    assert not app.get("plotly_chart"), "the worked example's tab and the real head's would show weights"
    answer_exercise(app, round(exercise.answer, 2))
    assert_clean(app)
    assert [item.value for item in app.success] == [f"Right: {escape_markdown(exercise.shown_answer())}."]
    assert REVEALED in payload(app)
    keys = chart_keys(app)
    assert keys[-1] == "cm_toy_steps", "the tabs are back, on the worked example"
    (revealed,) = [key for key in keys if key.startswith("exercise_")]
    (frame,) = chart(app, revealed)["layout"]["shapes"]
    assert (frame["x0"], frame["x1"], frame["y0"], frame["y1"]) == (1.5, 2.5, 1.5, 2.5)  # row 2, column 2


def test_a_wrong_weight_is_told_the_right_one(served):
    exercise = weight_on_itself(on_text(served, TEXT))
    app = answer_exercise(open_exercise(PAGE, "weight", text=TEXT), round(exercise.answer + 0.3, 2))
    said, answer = (escape_markdown(shown) for shown in (f"{exercise.answer + 0.3:.2f}", exercise.shown_answer()))
    assert [item.value for item in app.error] == [f"You answered {said}; the answer is {answer}."]
    assert "(answers within ±0.01 count)" in exercise.shown_answer()


def test_the_head_in_the_link_is_the_one_asked_about(served):
    query = {links.LAYER: "3", links.HEAD: "5"}
    app = open_exercise(PAGE, "weight", text=TEXT, query=query)
    assert_clean(app)
    assert "In layer 3, head 5, token 2" in payload(app)
    exercise = weight_on_itself(on_text(served, TEXT, 3, 5))
    app = answer_exercise(app, round(exercise.answer, 2))
    assert app.success and app.query_params[links.LAYER] == "3"


def test_without_text_the_exercises_ask_about_the_worked_example():
    app = open_exercise(PAGE, "allowed", text="")
    assert_clean(app)
    assert "The worked example is read as T = 4 tokens" in payload(app)
    assert "= **10** pairs" not in payload(app) and not app.get("plotly_chart")
    app = answer_exercise(app, 10)
    assert [item.value for item in app.success] == ["Right: 10."]
    assert "= **10** pairs" in payload(app)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTILE_TEXTS))
def test_hostile_text_gives_a_clean_page_with_an_exercise_open(name):
    hostile = HOSTILE_TEXTS[name]
    app = open_exercise(PAGE, "weight", text=hostile)
    assert_clean(app)
    assert not hostile.strip() or hostile.strip() not in all_markdown(app)
    app = answer_exercise(app, 0.5)
    assert_clean(app)
    assert (app.success or app.error) and (not hostile.strip() or hostile.strip() not in all_markdown(app))
