"""The encoder lesson's exercises: one block's parameters, counted from the configuration and held against the
modules themselves, and the token whose final vector is nearest to the text's longest token, held against
the Hugging Face model's own hidden states; the page asks first and shows the answer only after Check."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from anatomy.config import PRESETS
from harness.apptest import (
    HOSTILE_TEXTS,
    all_markdown,
    answer_exercise,
    assert_clean,
    chart,
    chart_keys,
    exercise_field,
    open_exercise,
    payload,
)
from lessons.common.runs import run_encoder
from lessons.common.safe_text import escape_markdown
from lessons.encoder import text
from lessons.encoder.exercises import first_word_in_the_mask, nearest_after_the_stack, parameters_of_a_block

PAGE = "lesson_pages/encoder.py"
TEXT = "time flies like an arrow"  # [CLS] time flies like an arrow [SEP]: "flies" (position 2) is asked about
BANK = "The bank raised interest rates, so we sat on the river bank."  # "interest" (position 4) is asked about
MINILM_BLOCK = 1_774_464  # D = 384, F = 1536
MASKED = "The capital of France is [MASK]. It has [MASK] bridges."  # the masks are tokens 6 and 10


@pytest.fixture(scope="module")
def traced(served):
    return run_encoder(served.model, served.tokenizer, TEXT)


def exercise_chart(app) -> dict:
    """The reveal's figure: the chart drawn with the exercise's key (the lesson's own charts have theirs)."""
    (key,) = [key for key in chart_keys(app) if key.startswith("exercise_")]
    return chart(app, key)


# ----- one block's parameters --------------------------------------------------------------------------------


def test_one_block_holds_as_many_parameters_as_the_loaded_block_and_the_hugging_face_layer(served, traced, hf_bert):
    exercise = parameters_of_a_block(traced, served.config, served)
    assert exercise.answer == MINILM_BLOCK
    assert exercise.answer == sum(parameter.numel() for parameter in served.model.layers[0].parameters())
    assert exercise.answer == sum(parameter.numel() for parameter in hf_bert.encoder.layer[0].parameters())
    assert "D = 384" in exercise.question and "F = 1,536" in exercise.question and "within 1%" in exercise.question


def test_the_block_count_follows_the_model_bert_base_holds_four_times_as_many(served, traced):
    from transformers import BertConfig
    from transformers.models.bert.modeling_bert import BertLayer

    with torch.device("meta"):  # shapes without memory
        layer = BertLayer(BertConfig(hidden_size=768, intermediate_size=3072, num_attention_heads=12))
    exercise = parameters_of_a_block(traced, PRESETS["bert-base-uncased"], served)
    assert exercise.answer == sum(parameter.numel() for parameter in layer.parameters()) == 7_087_872


def test_an_answer_within_one_percent_counts_and_one_just_outside_does_not(served, traced):
    exercise = parameters_of_a_block(traced, served.config, served)
    assert exercise.tolerance == 17_745  # 1% of 1,774,464
    assert exercise.is_right(4 * 384 * 384 + 2 * 384 * 1536)  # the weight matrices alone: 1,769,472
    assert exercise.is_right(MINILM_BLOCK + 17_745) and exercise.is_right(MINILM_BLOCK - 17_745)
    assert not exercise.is_right(MINILM_BLOCK + 17_746) and not exercise.is_right(4 * 384 * 384)


# ----- the nearest token after the stack ---------------------------------------------------------------------


def nearest_by_hugging_face(hf_bert, tokenizer, text: str, position: int) -> int:
    """The token whose last hidden state has the largest cosine with the one at `position`, by transformers."""
    encoded = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        last = hf_bert(**encoded).last_hidden_state[0]  # (T, D)
    cosines = F.cosine_similarity(last, last[position : position + 1], dim=-1)
    cosines[position] = -2.0
    return int(cosines.argmax())


def test_the_nearest_token_is_the_one_hugging_face_finds_and_the_options_are_in_text_order(served, traced, hf_bert):
    exercise = nearest_after_the_stack(traced, served.config, served)
    assert "` flies ` at position 2" in exercise.question
    assert nearest_by_hugging_face(hf_bert, served.tokenizer, TEXT, 2) == 4
    assert exercise.answer == "4: an"
    assert exercise.options == ("1: time", "3: like", "4: an", "5: arrow")  # by position, not by cosine
    assert "a cosine of 0.499, the highest of the 6 other tokens" in exercise.explanation


def test_the_nearest_token_follows_the_text(served, hf_bert):
    exercise = nearest_after_the_stack(run_encoder(served.model, served.tokenizer, BANK), served.config, served)
    assert "` interest ` at position 4" in exercise.question
    assert exercise.answer == "5: rates" == f"{nearest_by_hugging_face(hf_bert, served.tokenizer, BANK, 4)}: rates"
    # the nearest, the runner-up "bank", one from the middle and the farthest, "sat", in the text's order
    assert exercise.options == ("2: bank", "3: raised", "5: rates", "9: sat")


def test_a_short_text_offers_every_other_token_and_a_text_without_tokens_offers_nothing(served):
    short = nearest_after_the_stack(run_encoder(served.model, served.tokenizer, "a b"), served.config, served)
    assert short.options == ("0: [CLS]", "2: b", "3: [SEP]") and short.answer == "2: b"
    assert nearest_after_the_stack(run_encoder(served.model, served.tokenizer, "\u200b"), served.config, served) is None


def test_the_reveal_frames_the_nearest_token_after_the_last_layer(served, traced):
    figure = nearest_after_the_stack(traced, served.config, served).figure()
    (frame,) = figure.layout.shapes
    assert (frame.x0, frame.x1, frame.y0, frame.y1) == (3.5, 4.5, 5.5, 6.5)  # token 4, row 6: after layer 5
    assert figure.data[0].z.shape == (7, 7)  # the embeddings and six layers, by seven tokens


# ----- the word behind the mask -------------------------------------------------------------------------------


def five_best_by_transformers(folder, tokenizer, text: str) -> list[tuple[str, float]]:
    """transformers' BertForMaskedLM's five best words at the text's first [MASK], best first."""
    from transformers import BertForMaskedLM

    encoded = tokenizer(text, return_tensors="pt")
    model = BertForMaskedLM.from_pretrained(str(folder), attn_implementation="eager").eval()
    with torch.no_grad():
        logits = model(**encoded).logits[0]  # (T, V)
    first_mask = encoded["input_ids"][0].tolist().index(tokenizer.mask_token_id)
    best = logits[first_mask].softmax(dim=-1).topk(5)
    return list(zip(tokenizer.convert_ids_to_tokens(best.indices.tolist()), best.values.tolist()))


def test_the_word_first_in_the_mask_is_transformers_best_among_its_five_best_in_alphabetical_order(tiny, tiny_folder):
    exercise = first_word_in_the_mask(run_encoder(tiny.model, tiny.tokenizer, MASKED), tiny.config, tiny)
    best = five_best_by_transformers(tiny_folder, tiny.tokenizer, MASKED)
    words = [word for word, _ in best]
    assert exercise.answer == words[0] == "crimean"  # random weights: the words mean nothing, the ranking does
    assert exercise.options == tuple(sorted(words)) == ("1704", "betty", "cites", "crimean", "fuzzy")
    assert exercise.question.startswith("Your text has 2 masks. Around the first") and "token 6" in exercise.question
    assert "capital of france is ▢ \\. it has \\[MASK\\]" in exercise.question  # markdown escaped
    assert f"a probability of {best[0][1]:.3f}" in exercise.explanation
    assert f"` {words[1]} ` {best[1][1]:.3f}" in exercise.explanation
    (bars,) = exercise.figure().data
    assert list(bars.y) == [f"{rank}. {word}" for rank, word in enumerate(words, 1)]
    assert bars.marker.color[0] != bars.marker.color[1]  # the answer drawn darker


def test_the_mask_exercise_says_what_would_make_it_askable_a_head_or_a_mask(served, traced, tiny):
    without_head = first_word_in_the_mask(traced, served.config, served)
    assert without_head == text.no_masked_lm_head(is_embedded=True) and "bert-base-uncased" in without_head
    without_mask = first_word_in_the_mask(run_encoder(tiny.model, tiny.tokenizer, TEXT), tiny.config, tiny)
    assert without_mask == text.no_mask_in_text("[MASK]")


# ----- on the page -------------------------------------------------------------------------------------------


def test_the_page_holds_back_the_masks_words_until_check_then_reveals_them(tiny_folder):
    app = open_exercise(PAGE, "fill-mask", text=MASKED, query={"model": str(tiny_folder)})
    assert_clean(app)
    assert exercise_field(app).options == ["1704", "betty", "cites", "crimean", "fuzzy"]
    assert not app.get("plotly_chart") and "a probability of" not in payload(app)
    app = answer_exercise(app, "fuzzy")
    assert_clean(app)
    assert [item.value for item in app.error] == ["You answered fuzzy; the answer is crimean."]
    assert "a probability of 0.760" in all_markdown(app)
    assert exercise_chart(app)["layout"]["title"]["text"] == text.mask_chart_title(1, 6)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTILE_TEXTS))
def test_hostile_text_around_a_mask_is_quoted_literally_in_the_question_and_the_reveal(name, tiny_folder):
    app = open_exercise(PAGE, "fill-mask", text=f"{HOSTILE_TEXTS[name]} [MASK]", query={"model": str(tiny_folder)})
    assert_clean(app)
    app = answer_exercise(app, exercise_field(app).options[0])
    assert_clean(app)
    for raw in ("<b>", "<script", "<img", "![", "](http", "$x"):
        assert raw not in all_markdown(app)


def test_the_embedded_minilm_offers_the_mask_exercise_with_what_it_needs_instead():
    app = open_exercise(PAGE, "fill-mask", text=MASKED)
    assert_clean(app)
    assert not app.radio and not app.number_input
    assert [item.value for item in app.info] == [text.no_masked_lm_head(is_embedded=True)]


def test_the_page_holds_back_the_answer_and_the_tabs_until_check_then_reveals_both():
    app = open_exercise(PAGE, "nearest", text=TEXT)
    assert_clean(app)
    assert "the highest of the 6 other tokens" not in payload(app)
    assert not app.get("plotly_chart"), "the lesson's figures would show the cosines"
    answer_exercise(app, "4: an")
    assert_clean(app)
    assert [item.value for item in app.success] == [f"Right: {escape_markdown('4: an')}."]
    assert "the highest of the 6 other tokens" in all_markdown(app)
    assert len(exercise_chart(app)["layout"]["shapes"]) == 1
    assert len(chart_keys(app)) > 1, "once answered, the lesson's own tab comes back"


def test_a_wrong_token_is_told_the_right_one():
    app = answer_exercise(open_exercise(PAGE, "nearest", text=TEXT), "5: arrow")
    assert [item.value for item in app.error] == [
        f"You answered {escape_markdown('5: arrow')}; the answer is {escape_markdown('4: an')}."
    ]


def test_the_block_count_is_hidden_until_check_and_an_estimate_within_one_percent_is_right():
    app = open_exercise(PAGE, "block", text=TEXT)
    assert_clean(app)
    assert "1,774,464" not in payload(app) and "1774464" not in payload(app)
    assert not app.get("plotly_chart") and not app.dataframe, "the Parameters tab would give it away"
    answer_exercise(app, 1_769_472)
    assert [item.value for item in app.success] == [
        f"Right: {escape_markdown('1,774,464 (answers within ±17,745 count)')}."
    ]
    assert "99.7% of it" in all_markdown(app)
    chart_data = exercise_chart(app)["data"]
    assert [trace["name"] for trace in chart_data] == ["attention", "feed-forward", "layer norms"]


def test_a_count_outside_the_tolerance_is_wrong():
    app = answer_exercise(open_exercise(PAGE, "block", text=TEXT), 1_700_000)
    assert app.error and escape_markdown("1,700,000") in app.error[0].value


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTILE_TEXTS))
def test_hostile_text_gives_a_clean_page_with_the_exercise_open(name):
    app = open_exercise(PAGE, "nearest", text=HOSTILE_TEXTS[name])
    assert_clean(app)
    assert HOSTILE_TEXTS[name].strip() not in all_markdown(app) or not HOSTILE_TEXTS[name].strip()
    for raw in ("<b>", "<script", "<img", "![", "](http", "$x"):
        assert raw not in all_markdown(app)
