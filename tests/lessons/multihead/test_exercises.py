"""The multi-head lesson's exercises: read from the traced run of the learner's text, checked here against
transformers' own attention and config, and revealed only once the learner has committed to an answer."""

from __future__ import annotations

import pytest
import torch

from harness.apptest import (
    HOSTILE_TEXTS,
    all_markdown,
    answer_exercise,
    assert_clean,
    open_exercise,
    payload,
    plotly_figures,
)
from lessons.common.runs import run_encoder
from lessons.multihead import links
from lessons.multihead.exercises import (
    heads_that_rest,
    numbers_in_one_head,
    strongest_previous_token_head,
    which_head_looks_back,
)
from tests.lessons.multihead.resting_by_loop import resting_counts_by_loop

PAGE = "lesson_pages/multihead.py"
TEXT = "time flies like an arrow"  # [CLS] time flies like an arrow [SEP]: 7 tokens
PLAIN_TEXT = "The quick brown fox jumps over the lazy dog while the farmer sleeps."
REVEALED = "of its attention on the token just before it"  # in the explanation only


def previous_token_shares(hf_bert, tokenizer, text: str, layer: int) -> torch.Tensor:
    """(H,) transformers' own attention: the mean weight each head's queries give the token before them."""
    with torch.no_grad():
        output = hf_bert(**tokenizer(text, return_tensors="pt"), output_attentions=True)
    return output.attentions[layer][0].diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=-1)


def test_the_previous_token_head_gives_the_token_before_each_query_the_most_weight(embedded, hf_bert):
    exercise = which_head_looks_back(run_encoder(embedded.model, embedded.tokenizer, TEXT), 0)
    shares = previous_token_shares(hf_bert, embedded.tokenizer, TEXT, 0)
    assert int(shares.argmax()) == 2 and float(shares[2]) > 0.99  # every token reads its left neighbour
    assert exercise.answer == "head 2"
    assert exercise.options == tuple(f"head {head}" for head in range(12))  # in head order: nothing leaks
    assert "layer 0" in exercise.question and "**1.00**" in exercise.explanation
    assert exercise.is_right("head 2") and not exercise.is_right("head 9")


def test_a_layer_where_no_head_stands_out_is_left_for_the_layer_where_one_does(embedded, hf_bert):
    """Layer 1 has a previous-token head on one text (head 9: 0.59, the runner-up 0.34) and none on the
    other (at most 0.29): there the question moves to layer 0, whose head 2 stands out on every text."""
    on_text, on_plain_text = (
        which_head_looks_back(run_encoder(embedded.model, embedded.tokenizer, text), 1) for text in (TEXT, PLAIN_TEXT)
    )
    shares = previous_token_shares(hf_bert, embedded.tokenizer, TEXT, 1)
    assert int(shares.argmax()) == 9 and float(shares.max()) == pytest.approx(0.59, abs=0.01)
    assert on_text.answer == "head 9" and "heads of layer 1" in on_text.question
    assert float(previous_token_shares(hf_bert, embedded.tokenizer, PLAIN_TEXT, 1).max()) < 0.5
    assert on_plain_text.answer == "head 2"
    assert on_plain_text.question.startswith("In layer 1, the one you chose, no head stands out")
    assert "heads of layer 0" in on_plain_text.question


def test_a_head_stands_out_only_with_half_its_attention_on_the_previous_token_and_a_lead_of_a_fifth():
    def stands_out(*shares: float) -> bool:
        return strongest_previous_token_head(torch.tensor(shares), layer=0).stands_out

    assert stands_out(0.1, 0.75, 0.5)  # 0.75, a quarter ahead
    assert not stands_out(0.1, 0.7, 0.55)  # only 0.15 ahead
    assert not stands_out(0.45, 0.05, 0.0)  # far ahead, but less than half its attention
    found = strongest_previous_token_head(torch.tensor([0.2, 0.9, 0.3]), layer=4)
    assert (found.layer, found.head, found.runner_up) == (4, 1, 2)


def test_a_text_of_special_tokens_alone_asks_nothing(embedded):
    run = run_encoder(embedded.model, embedded.tokenizer, "\u200b")
    assert run.tokenized.tokens == ("[CLS]", "[SEP]")
    assert which_head_looks_back(run, 0) is None


def test_one_heads_output_holds_d_head_numbers_for_each_token_of_the_text(embedded, hf_bert):
    config = hf_bert.config
    head_width = config.hidden_size // config.num_attention_heads  # 384 / 12 = 32
    for text, tokens in ((TEXT, 7), ("a cat", 4)):
        assert len(embedded.tokenizer(text)["input_ids"]) == tokens
        exercise = numbers_in_one_head(run_encoder(embedded.model, embedded.tokenizer, text), 3)
        assert exercise.answer == tokens * head_width
        assert f"T = {tokens} tokens" in exercise.question and "D = 384" in exercise.question
    exercise = numbers_in_one_head(run_encoder(embedded.model, embedded.tokenizer, TEXT), 3)
    assert exercise.tolerance == 0 and exercise.is_right(224) and not exercise.is_right(225)


def test_the_page_sends_nothing_of_the_answer_until_check_then_frames_the_head_in_the_layers_grid():
    app = open_exercise(PAGE, "previous", text=TEXT)
    assert_clean(app)
    assert "Which of the 12 heads of layer 0" in payload(app)
    assert REVEALED not in payload(app) and "**1.00**" not in payload(app)
    assert not app.get("plotly_chart"), "the grid of every head would show the stripe"
    answer_exercise(app, "head 2")
    assert_clean(app)
    assert [item.value for item in app.success] == ["Right: head 2."]
    assert REVEALED in payload(app)
    grid, lesson_grid = plotly_figures(app)  # the reveal's grid, then the All heads tab, back again
    (frame,) = grid["layout"]["shapes"]
    assert (frame["xref"], frame["yref"]) == ("x3 domain", "y3 domain")  # the third panel: head 2
    assert [annotation["text"] for annotation in grid["layout"]["annotations"]][2] == "head 2: previous token"
    assert "shapes" not in lesson_grid["layout"]


def test_the_layer_picked_above_the_exercise_is_the_one_asked_about():
    app = open_exercise(PAGE, "previous", text=TEXT, query={links.LAYER: "1"})
    assert "heads of layer 1" in payload(app)
    app = answer_exercise(app, "head 0")
    assert [item.value for item in app.error] == ["You answered head 0; the answer is head 9."]


def test_a_wrong_count_is_told_the_right_one_and_the_split_of_a_token_is_drawn():
    app = open_exercise(PAGE, "split", text=TEXT)
    assert "= 224" not in payload(app) and not app.get("plotly_chart")
    app = answer_exercise(app, 225)
    assert_clean(app)
    assert [item.value for item in app.error] == ["You answered 225; the answer is 224."]
    split = plotly_figures(app)[0]
    title = split["layout"]["title"]  # too long for a phone: broken after its heading
    assert (title["text"], title["subtitle"]["text"]) == ("Layer 0, token 1", "one block of 32 numbers per head")
    frames = [shape for shape in split["layout"]["shapes"] if shape["type"] == "rect"]
    assert [(shape["x0"], shape["x1"]) for shape in frames] == [(-0.5, 31.5), (-0.5, 31.5)]  # head 0's block


LONG_TEXT = (  # 95 tokens with [CLS] and [SEP]
    "The history of the transformer began with a paper on machine translation. Its authors replaced recurrence "
    "with attention, so that every word could look at every other word at once. Within a year, encoders such as "
    "BERT were trained to fill in hidden words, and decoders such as GPT learned to write the next word. Today the "
    "same blocks read images, sound and code, and small models like the one on this page fit on a laptop."
)


def test_the_heads_that_rest_are_those_a_plain_loop_counts_on_a_short_and_a_long_text(embedded, hf_bert):
    for text, tokens, resting in ((TEXT, 7, 66), (LONG_TEXT, 95, 25)):
        exercise = heads_that_rest(run_encoder(embedded.model, embedded.tokenizer, text), 0)
        counted = resting_counts_by_loop(hf_bert, embedded.tokenizer, text)
        assert exercise.answer == sum(row["either"] for row in counted) == resting
        assert f"your text ({tokens} tokens)" in exercise.question and "72 in all" in exercise.question
    # Half a layer's heads either way count: 66 ± 6.
    assert exercise.tolerance == 6 and exercise.is_right(31) and not exercise.is_right(32)


def test_a_text_too_short_to_tell_a_resting_head_from_an_even_one_asks_nothing(embedded):
    for text in ("arrow", "\u200b"):  # [CLS] arrow [SEP]: an even head gives each token 1/3 > 0.3; then no word
        assert heads_that_rest(run_encoder(embedded.model, embedded.tokenizer, text), 0) is None
    assert heads_that_rest(run_encoder(embedded.model, embedded.tokenizer, "an arrow"), 0) is not None


@pytest.mark.parametrize("name", sorted(set(HOSTILE_TEXTS) - {"whitespace"}))
def test_hostile_text_asks_how_many_heads_rest_without_quoting_it(embedded, name):
    exercise = heads_that_rest(run_encoder(embedded.model, embedded.tokenizer, HOSTILE_TEXTS[name]), 0)
    assert 0 <= exercise.answer <= 72
    assert HOSTILE_TEXTS[name] not in exercise.question + exercise.explanation


def test_the_page_keeps_the_count_until_check_then_draws_each_heads_larger_share():
    app = open_exercise(PAGE, "resting", text=TEXT)
    assert_clean(app)
    assert "how many of them give [CLS] or [SEP] more than 0.3" in payload(app)
    assert "**66**" not in payload(app) and not app.get("plotly_chart")
    app = answer_exercise(app, 40)
    assert_clean(app)
    answer = "the answer is 66 \\(answers within ±6 count\\)."  # the brackets escaped for markdown
    assert [item.value for item in app.error] == [f"You answered 40; {answer}"]
    assert "**66** of 72: 65 rest on [CLS] and 2 on [SEP]" in payload(app)
    larger_share = plotly_figures(app)[0]
    assert larger_share["layout"]["title"]["text"] == "Each head's larger share: [CLS] or [SEP]"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTILE_TEXTS))
def test_hostile_text_gives_a_clean_page_with_an_exercise_open(name):
    hostile = HOSTILE_TEXTS[name]
    app = open_exercise(PAGE, "previous", text=hostile)
    assert_clean(app)
    if not hostile.strip():  # nothing to study: the page asks for text, and offers no exercise
        assert "Type some text" in all_markdown(app)
        return
    assert hostile not in all_markdown(app)
    app = answer_exercise(app, "head 2")
    assert_clean(app)
    assert app.success and hostile not in all_markdown(app)
