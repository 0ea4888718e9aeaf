"""Filling [MASK]: the computation gives transformers' BertForMaskedLM's top words and probabilities, and
the encoder lesson's "Fill the mask" tab shows them, or says plainly which checkpoints would."""

from __future__ import annotations

import pytest
import torch

from anatomy.checkpoints.pretrained import load_pretrained
from anatomy.models import Encoder
from harness.apptest import all_markdown, assert_clean, literal_texts, open_page, plotly_figures, table_with
from lessons.common.runs import run_encoder
from lessons.encoder import fill_mask, links, text
from lessons.encoder.ui import DEFAULT_FILL_TOP_K
from tests.tiny_models import save_tiny_bert_for_masked_lm, save_tiny_roberta_for_masked_lm

PAGE = "lesson_pages/encoder.py"
MASKED = "The capital of France is [MASK]. It has [MASK] bridges."
CHECKPOINTS_THAT_WOULD = ("bert-base-uncased", "distilbert-base-uncased", "roberta-base", "`<mask>`")


def fill_tab(model: str | None, studied: str, query: dict[str, str] | None = None):
    model_query = {} if model is None else {"model": model}
    return open_page(PAGE, text=studied, query={links.TAB: links.FILL_MASK, **model_query, **(query or {})})


# ----- the computation ---------------------------------------------------------------------------------------


def test_the_words_and_probabilities_are_those_of_transformers_bert_for_masked_lm(tiny, tiny_folder):
    from transformers import BertForMaskedLM

    run = run_encoder(tiny.model, tiny.tokenizer, MASKED)
    filled = fill_mask.fill_masks(tiny.model_as(Encoder), run, tiny.tokenizer, top_k=5)
    reference = BertForMaskedLM.from_pretrained(str(tiny_folder), attn_implementation="eager").eval()
    with torch.no_grad():
        probabilities = reference(torch.tensor([run.tokenized.input_ids])).logits[0].softmax(dim=-1)
    positions = [index for index, token in enumerate(run.tokenized.tokens) if token == "[MASK]"]
    assert [fill.position for fill in filled.fills] == positions == [6, 10]
    for fill in filled.fills:
        expected = probabilities[fill.position].topk(5)
        assert list(fill.token_ids) == expected.indices.tolist()
        assert fill.tokens == tuple(tiny.tokenizer.convert_ids_to_tokens(expected.indices.tolist()))
        assert torch.allclose(torch.tensor(fill.probabilities), expected.values, atol=1e-6)
    assert filled.fills[0].probabilities[0] > 0.1  # far from uniform (1 / 30,522): a wrong ranking would show


@pytest.fixture(scope="module")
def roberta_folder(tmp_path_factory):
    return save_tiny_roberta_for_masked_lm(tmp_path_factory.mktemp("tiny-roberta-for-masked-lm"))


def test_roberta_fills_its_own_mask_token_with_transformers_words(roberta_folder):
    from transformers import RobertaForMaskedLM

    roberta = load_pretrained(str(roberta_folder), device="cpu")
    run = run_encoder(roberta.model, roberta.tokenizer, "the cat <mask> on the mat")
    filled = fill_mask.fill_masks(roberta.model_as(Encoder), run, roberta.tokenizer, top_k=3)
    assert filled.mask_token == "<mask>" and run.tokenized.tokens[filled.fills[0].position] == "<mask>"
    reference = RobertaForMaskedLM.from_pretrained(str(roberta_folder), attn_implementation="eager").eval()
    with torch.no_grad():
        probabilities = reference(torch.tensor([run.tokenized.input_ids])).logits[0].softmax(dim=-1)
    expected = probabilities[filled.fills[0].position].topk(3)
    assert list(filled.fills[0].token_ids) == expected.indices.tolist()
    assert torch.allclose(torch.tensor(filled.fills[0].probabilities), expected.values, atol=1e-6)


def test_only_the_first_masks_are_filled_and_the_rest_are_counted(tiny):
    run = run_encoder(tiny.model, tiny.tokenizer, " ".join(["[MASK]"] * 40))
    filled = fill_mask.fill_masks(tiny.model_as(Encoder), run, tiny.tokenizer, top_k=3)
    assert (filled.num_masks, len(filled.fills), filled.left_out) == (40, fill_mask.MAX_MASKS_SHOWN, 34)


def test_a_text_without_a_mask_has_nothing_to_fill(tiny):
    run = run_encoder(tiny.model, tiny.tokenizer, "time flies like an arrow")
    filled = fill_mask.fill_masks(tiny.model_as(Encoder), run, tiny.tokenizer, top_k=3)
    assert (filled.num_masks, filled.fills, filled.mask_token) == (0, (), "[MASK]")


def test_the_filled_text_puts_the_best_word_in_each_gap(tiny):
    run = run_encoder(tiny.model, tiny.tokenizer, MASKED)
    filled = fill_mask.fill_masks(tiny.model_as(Encoder), run, tiny.tokenizer, top_k=2)
    first, second = (fill.tokens[0] for fill in filled.fills)
    sentence = fill_mask.filled_in(run, filled, tiny.tokenizer)
    assert "[MASK]" not in sentence and sentence.startswith("the capital of france is ")
    assert first.removeprefix("##") in sentence and second.removeprefix("##") in sentence


# ----- the page ----------------------------------------------------------------------------------------------


def test_a_masked_lm_checkpoint_shows_each_masks_top_words_as_a_table_and_bars(tiny, tiny_folder):
    app = fill_tab(str(tiny_folder), MASKED, {links.FILL_TOP_K: "4"})
    assert_clean(app)
    run = run_encoder(tiny.model, tiny.tokenizer, MASKED)
    filled = fill_mask.fill_masks(tiny.model_as(Encoder), run, tiny.tokenizer, top_k=4)
    table = table_with(app, "probability")
    assert table["mask"].tolist() == [1] * 4 + [2] * 4 and table["rank"].tolist() == [1, 2, 3, 4] * 2
    assert table["token"].tolist() == [*filled.fills[0].tokens, *filled.fills[1].tokens]
    expected = [round(value, 4) for fill in filled.fills for value in fill.probabilities]
    assert table["probability"].tolist() == pytest.approx(expected, abs=1e-4)
    bars = [figure for figure in plotly_figures(app) if figure["layout"]["title"]["text"].startswith("mask ")]
    assert [figure["layout"]["title"]["text"] for figure in bars] == [
        text.mask_chart_title(1, 6),
        text.mask_chart_title(2, 10),
    ]
    assert fill_mask.filled_in(run, filled, tiny.tokenizer) in literal_texts(app)


@pytest.mark.parametrize("raw", ["abc", "0", "99999", "nan", "<script>alert(1)</script>"])
def test_a_link_with_an_unusable_number_of_words_shows_the_default_number_with_a_note(tiny_folder, raw):
    app = fill_tab(str(tiny_folder), MASKED, {links.FILL_TOP_K: raw})
    assert_clean(app)
    assert [warning.value for warning in app.warning if "default" in warning.value]
    assert table_with(app, "probability")["rank"].tolist() == list(range(1, DEFAULT_FILL_TOP_K + 1)) * 2


def test_the_embedded_minilm_says_which_checkpoints_would_fill_the_mask_and_how_to_load_one():
    app = fill_tab(None, MASKED)
    assert_clean(app)
    message = " ".join(str(box.value) for box in app.info)
    assert "The embedded all-MiniLM-L6-v2 was saved without its masked-language-model head" in message
    assert all(name in message for name in CHECKPOINTS_THAT_WOULD)
    assert "hub id" in message and "path of a folder" in message
    assert not app.dataframe and not plotly_figures(app)


def test_another_model_without_the_head_is_told_the_same_without_blaming_sentence_transformers(tmp_path):
    app = fill_tab(str(save_tiny_bert_for_masked_lm(tmp_path, with_head=False)), MASKED)
    assert_clean(app)
    message = " ".join(str(box.value) for box in app.info)
    assert message.startswith("The sidebar's model was saved without its masked-language-model head, so")
    assert "sentence-transformers" not in message and all(name in message for name in CHECKPOINTS_THAT_WOULD)


def test_a_text_without_a_mask_is_told_where_to_write_one(tiny_folder):
    app = fill_tab(str(tiny_folder), "time flies like an arrow")
    assert_clean(app)
    assert "Your text has no `[MASK]`" in " ".join(str(box.value) for box in app.info)
    assert not app.dataframe


def test_a_roberta_text_without_a_mask_is_told_to_write_roberta_s_mask_token(roberta_folder):
    app = fill_tab(str(roberta_folder), "the cat [MASK] on the mat")  # BERT's token is plain text to RoBERTa
    assert_clean(app)
    assert "Your text has no `<mask>`" in " ".join(str(box.value) for box in app.info)


def test_many_masks_fill_the_first_six_and_say_how_many_were_left(tiny_folder):
    app = fill_tab(str(tiny_folder), " ".join(["[MASK]"] * 40))
    assert_clean(app)
    assert text.masks_left_out(40, fill_mask.MAX_MASKS_SHOWN) in all_markdown(app)
    assert table_with(app, "mask")["mask"].max() == fill_mask.MAX_MASKS_SHOWN


def test_html_around_a_mask_is_shown_as_written_never_rendered(tiny_folder):
    hostile = "<b>bold</b> <img src=x onerror=alert(1)> [MASK] <script>alert('x')</script>"
    app = fill_tab(str(tiny_folder), hostile)
    assert_clean(app)
    markdown = all_markdown(app)
    assert "<script>" not in markdown and "<img" not in markdown and "<b>" not in markdown
    around = table_with(app, "around it")["around it"].tolist()
    assert any("<" in context for context in around)  # the tokens around the mask reach the table as written


def test_the_lessons_words_and_formulas_hold_no_control_characters():
    """A backslash lost on the way into a string turns LaTeX's `\\big` into a backspace and `\\begin` into
    one: KaTeX then shows the formula as red source text."""
    import re

    written = {name: value for name, value in vars(text).items() if isinstance(value, str)}
    assert "FILL_MASK_FORMULA" in written
    for name, value in written.items():
        assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", value), f"{name} holds a control character"
