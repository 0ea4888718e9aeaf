"""The language-model lesson's exercises: which token SmolLM2 writes next after the learner's text, and how much of
one head's attention rests on the first token. Answers are checked against SmolLM2 run another way (greedy
generation, a fully traced forward), and the page shows none of them before Check."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from anatomy.generation import generate
from harness.apptest import (
    HOSTILE_TEXTS,
    all_markdown,
    answer_exercise,
    assert_clean,
    chart_keys,
    exercise_field,
    numbers,
    open_exercise,
    plotly_figures,
)
from harness.apptest import payload as sent
from harness.hostile import problems_after
from lessons.common import decoder_attention
from lessons.common.llm import readable
from lessons.language_model import exercises, heads, logit_lens, reading

pytestmark = pytest.mark.slow  # every test runs SmolLM2 (seconds each)

PAGE = "lesson_pages/language_model.py"
PROMPT = "The capital of France is"  # SmolLM2: " Paris" 0.773
PROVERB = "time flies like an arrow"  # SmolLM2: "," 0.243


def runs_on(chat, text: str) -> tuple[readable.ModelTokens, exercises.PageRuns]:
    """The text's tokens and the runs the page would hand the exercises, computed here without its caches."""
    tokens = readable.text_tokens(chat, text)
    model = reading.decoder_of(chat)
    return tokens, exercises.PageRuns(
        candidates=lambda: reading.top_candidates(reading.next_token_probabilities(model, tokens.ids), 20),
        attention=lambda layer: decoder_attention.layer_attention(model, tokens.ids, layer),
        lens=lambda: logit_lens.logit_lens(model, tokens.ids),
        induction=lambda: heads.induction_test(model, chat.tokenizer.get_added_tokens_decoder()),
        sinks=lambda: heads.first_token_importance(model, tokens.ids),
        sinks_on_random_tokens=lambda: heads.first_token_importance(model, random_ids(chat)),
    )


def random_ids(chat) -> tuple[int, ...]:
    vocabulary = reading.decoder_of(chat).config.vocab_size
    return heads.random_token_ids(heads.RANDOM_TOKENS, vocabulary, chat.tokenizer.get_added_tokens_decoder())


def as_typed(option: str) -> str:
    """A radio option as the learner picks it: AppTest reads options as shown, markdown escapes included."""
    return re.sub(r"\\(.)", r"\1", option)


def greedy_next_piece(chat, text: str) -> str:
    model, ids = reading.decoder_of(chat), chat.encode(text)
    written = generate(model, decoder_attention.as_batch(ids, model), 1)[0, len(ids)]
    return readable.piece_of(chat, int(written))


def traced_first_token_share(chat, text: str) -> float:
    """Layer 18, head 0 of a fully traced forward: the first token's weight, averaged over queries 1 … T − 1."""
    model, ids = reading.decoder_of(chat), chat.encode(text)
    with torch.no_grad():
        trace = model(decoder_attention.as_batch(ids, model), trace=True).recorded_trace
    weights = trace.layers[exercises.SINK_LAYER].attention.weights[0, exercises.SINK_HEAD].double()  # (T, T)
    return float(weights[1:, 0].sum() / (len(ids) - 1))


def sink_heads_by_a_loop(chat, ids) -> int:
    """Every head of a fully traced forward, one at a time: a sink head gives the first token more than 0.3 of
    its weight on average over all T queries, the first (which reads only it) included (Gu et al. 2024)."""
    model = reading.decoder_of(chat)
    with torch.no_grad():
        trace = model(decoder_attention.as_batch(ids, model), trace=True).recorded_trace
    count = 0
    for layer in trace.layers:
        weights = layer.attention.weights[0].double()  # (H, T, T)
        for head in range(weights.size(0)):
            first_token_weights = [float(weights[head, query, 0]) for query in range(len(ids))]
            count += sum(first_token_weights) / len(ids) > 0.3
    return count


def test_an_even_spread_gives_query_t_one_over_t_plus_one_of_the_first_token():
    assert reading.even_first_token_share(5) == pytest.approx((1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 4)
    assert reading.even_first_token_share(2) == 0.5


def test_the_next_token_is_the_one_greedy_generation_writes_among_five_options_in_alphabetical_order(chat):
    exercise = exercises.next_token(chat, *runs_on(chat, PROMPT))
    assert exercise.answer == greedy_next_piece(chat, PROMPT) == "·Paris"
    assert exercise.options == ("·Le", "·London", "·New", "·Paris", "·the")  # not by probability: no hint
    assert "“The capital of France is”" in exercise.question
    assert "a probability of 0.773" in exercise.explanation and "` ·the ` 0.065" in exercise.explanation
    other = exercises.next_token(chat, *runs_on(chat, PROVERB))
    assert other.answer == greedy_next_piece(chat, PROVERB) == ","
    assert other.options != exercise.options and other.question != exercise.question
    (bars,) = exercise.figure().data
    assert bars.y[0] == "1. ·Paris" and bars.marker.color[0] != bars.marker.color[1]  # the answer drawn darker


def test_the_first_tokens_share_is_the_traced_models_and_follows_the_text(chat):
    exercise = exercises.first_token_share(chat, *runs_on(chat, PROMPT))
    expected = traced_first_token_share(chat, PROMPT)
    assert exercise.answer == pytest.approx(expected, abs=1e-5) and exercise.answer == pytest.approx(0.87, abs=0.01)
    assert exercise.is_right(round(expected, 2)) and exercise.is_right(expected + 0.049)
    assert not exercise.is_right(expected + 0.051) and not exercise.is_right(expected - 0.051)
    assert "Averaged over those 4 tokens" in exercise.question and "` The `" in exercise.question
    assert "0.32 on average over your text" in exercise.explanation  # (1/2 + 1/3 + 1/4 + 1/5) / 4
    other = exercises.first_token_share(chat, *runs_on(chat, PROVERB))
    assert other.answer == pytest.approx(traced_first_token_share(chat, PROVERB), abs=1e-5)
    assert abs(other.answer - exercise.answer) > 0.1  # 0.67 on the proverb
    figure = exercise.figure()
    (frame,) = figure.layout.shapes
    assert (frame.x0, frame.x1, frame.yref) == (-0.5, 0.5, "y domain")  # around the first column, top to bottom
    assert "averages 0.87" in figure.layout.title.subtitle.text  # a long title goes on in the subtitle


def test_the_sink_rate_is_the_share_of_the_270_heads_a_loop_over_every_head_counts_as_sinks(chat):
    exercise = exercises.sink_rate(chat, *runs_on(chat, PROVERB))
    assert sink_heads_by_a_loop(chat, tuple(chat.encode(PROVERB))) == 261
    assert exercise.answer == pytest.approx(100 * 261 / 270)  # 96.7 %
    assert exercise.shown_answer() == "97 (answers within ±10 count)"
    assert exercise.is_right(90) and exercise.is_right(100) and not exercise.is_right(86) and not exercise.is_right(50)
    assert "30 layers of 9 query heads: 270 heads" in exercise.question and "all 5 queries" in exercise.question
    assert "**261** of the 270 heads" in exercise.explanation and "a sink rate of 96.7%" in exercise.explanation
    random_count = sink_heads_by_a_loop(chat, random_ids(chat))
    assert random_count == 203 and f"{random_count} do (75.2%)" in exercise.explanation
    assert "would give it 0.46 already, above ε" in exercise.explanation  # (1 + 1/2 + … + 1/5) / 5
    other = exercises.sink_rate(chat, *runs_on(chat, PROMPT))
    assert other.answer == pytest.approx(100 * sink_heads_by_a_loop(chat, tuple(chat.encode(PROMPT))) / 270)
    assert "**268** of the 270 heads" in other.explanation  # 99.3 %
    figure = exercise.figure()
    (heatmap,) = figure.data
    assert np.array(heatmap.z).shape == (30, 9)
    assert figure.layout.title.subtitle.text.startswith("261 of 270 heads")  # a long title goes on in the subtitle


def test_a_text_of_one_token_has_no_query_to_average_and_no_text_nothing_to_ask(chat):
    tokens, runs = runs_on(chat, "Hello")
    assert len(tokens) == 1 and exercises.first_token_share(chat, tokens, runs) is None
    assert exercises.sink_rate(chat, tokens, runs) is None  # every head gives its one token all: 100 %, no question
    assert exercises.next_token(chat, None, runs) is None and exercises.sink_rate(chat, None, runs) is None


def test_the_page_holds_back_its_tabs_until_check_then_reveals_the_next_token_with_its_figure():
    app = open_exercise(PAGE, "next-token", text=PROMPT)
    assert_clean(app)
    assert exercise_field(app).options == ["·Le", "·London", "·New", "·Paris", "·the"]
    assert not app.tabs and chart_keys(app) == [], "the next-token bars would give the answer away"
    assert "0.773" not in sent(app) and "greedy decoding always writes" not in sent(app)
    app = answer_exercise(app, "·the")
    assert_clean(app)
    assert [item.value for item in app.error] == ["You answered ·the; the answer is ·Paris."]
    assert "greedy decoding always writes" in sent(app)
    assert len(chart_keys(app)) == 2 and chart_keys(app)[-1] == "lm_next"  # the reveal's bars, then the tab's


def test_the_right_share_of_the_first_token_is_marked_right_on_the_page(chat):
    app = open_exercise(PAGE, "first-token", text=PROMPT)
    assert_clean(app)
    assert not app.tabs and "attention sink" not in sent(app)
    expected = traced_first_token_share(chat, PROMPT)
    app = answer_exercise(app, round(expected, 2))
    assert_clean(app)
    assert len(app.success) == 1 and app.success[0].value.startswith(f"Right: {expected:.2f}".replace(".", "\\."))
    assert "attention sink" in sent(app) and app.tabs


def test_the_sink_rate_is_held_back_then_marked_right_with_every_heads_first_token_importance(chat):
    app = open_exercise(PAGE, "sink-rate", text=PROVERB)
    assert_clean(app)
    # \b: the payload carries the elements' ids too, hexadecimal digests that may hold the digits "261"
    assert not app.tabs and chart_keys(app) == [] and not re.search(r"\b261\b", sent(app)) and "96.7" not in sent(app)
    app = answer_exercise(app, 95)
    assert_clean(app)
    assert len(app.success) == 1 and app.success[0].value.startswith("Right: 97")
    assert "**261** of the 270 heads" in all_markdown(app) and app.tabs
    (revealed,) = plotly_figures(app)[0]["data"]  # the reveal's map, then the open tab's bars
    expected = heads.first_token_importance(reading.decoder_of(chat), tuple(chat.encode(PROVERB)))
    assert np.allclose(numbers(revealed["z"]), expected.numpy(), atol=1e-9)


@pytest.mark.parametrize("name", HOSTILE_TEXTS)
def test_hostile_text_is_quoted_literally_in_the_question_and_the_reveal(name):
    hostile = HOSTILE_TEXTS[name]
    app = open_exercise(PAGE, "next-token", text=hostile)
    assert problems_after(app, hostile) == []
    app = answer_exercise(app, as_typed(exercise_field(app).options[0]))
    assert problems_after(app, hostile) == []
    assert app.success or app.error


def test_the_lens_exercise_asks_from_which_layer_the_final_guess_stays_on_top(chat):
    exercise = exercises.lens_layer(chat, *runs_on(chat, PROMPT))
    assert exercise.answer == "layer 29"  # "·capital" after layer 28, "·Paris" only after the last
    assert exercise.options == ("layer 26", "layer 27", "layer 28", "layer 29")
    assert "` ·Paris `" in exercise.question
    (line,) = exercise.figure().data
    assert list(line.y)[-1] == 0.0  # the last layer's guess is the final one


def test_the_second_copy_exercise_is_the_induction_tests_loss_and_names_the_best_head(chat):
    exercise = exercises.second_copy_loss(chat, *runs_on(chat, PROMPT))
    assert exercise.answer == pytest.approx(2.6) and "14.5 nats per token" in exercise.question
    assert exercise.is_right(3.5) and not exercise.is_right(14.5)
    assert "layer 18, head 6" in exercise.explanation and "costs 11.5" in exercise.explanation


def test_the_lens_exercise_holds_back_the_tabs_and_reveals_its_chart_once_answered():
    app = open_exercise(PAGE, "lens-layer", text=PROMPT)
    assert_clean(app)
    assert exercise_field(app).options == ["layer 26", "layer 27", "layer 28", "layer 29"]
    assert not app.tabs and chart_keys(app) == []
    app = answer_exercise(app, "layer 29")
    assert_clean(app)
    assert len(app.success) == 1 and app.tabs
