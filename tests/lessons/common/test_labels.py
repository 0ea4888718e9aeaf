"""One name for a token among others, everywhere in the app: "3: flies", from `lessons.common.labels`."""

from __future__ import annotations

import numpy as np
import pytest

from lessons.attention import figures as attention_figures
from lessons.causal import figures as causal_figures
from lessons.causal.ui import labelled_frame
from lessons.common.labels import token_label, token_labels
from lessons.common.plots import safe_label
from lessons.common.ui.widgets import matrix_frame
from lessons.decoder import figures as decoder_figures
from lessons.encoder import figures as encoder_figures
from lessons.language_model import figures as language_model_figures
from lessons.multihead import figures as multihead_figures
from lessons.tokenization import figures as tokenization_figures

# A repeated word, a whitespace marker, a token that is a number and one that looks like HTML.
TOKENS = ["[CLS]", "time", "Ġflies", "time", "1996", "<b>x</b>", "[SEP]"]
COUNT = len(TOKENS)


def test_a_token_is_named_by_its_position_then_the_token_as_the_tokenizer_wrote_it():
    assert token_label(3, "flies") == "3: flies"
    assert token_labels(["the", "Ġcat", "the"]) == ["0: the", "1: Ġcat", "2: the"]  # a repeated word stays apart
    assert token_labels(["a", "[PAD]"], positions=[40, 47]) == ["40: a", "47: [PAD]"]  # a window keeps its numbers


def _weights(rows: int = COUNT, columns: int = COUNT) -> np.ndarray:
    return np.full((rows, columns), 1.0 / columns)


# Each lesson's chart of the whole text, and the tokens it names (along x unless said otherwise).
CHARTS = {
    "attention: the full pattern": lambda: attention_figures.full_pattern(_weights(), token_labels(TOKENS)).data[0].x,
    "masking: the mask": lambda: causal_figures.mask_figure(np.tril(_weights()), TOKENS).data[0].x,
    "encoder: one head's map": lambda: encoder_figures.attention_map(_weights(), TOKENS, TOKENS).data[0].x,
    "multi-head: every head": lambda: (
        multihead_figures.head_grid(_weights()[None], token_labels(TOKENS), ["head 0"]).data[0].x
    ),
    "multi-head: one token's row": lambda: multihead_figures.focus_rows([_weights()[0]], [TOKENS], ["a"]).data[0].x,
    "decoder: cross-attention": lambda: decoder_figures.heads_figure(_weights()[None], TOKENS, TOKENS).data[0].x,
    "language model: what it wrote": lambda: (
        language_model_figures.writing_figure(TOKENS, [0.5] * COUNT, [0.5] * COUNT, "").data[0].x
    ),
    "tokenization: embedding rows (y)": lambda: (
        tokenization_figures.embedding_rows(np.zeros((COUNT, 4)), TOKENS).data[0].y
    ),
}


@pytest.mark.parametrize("chart", CHARTS.values(), ids=CHARTS.keys())
def test_every_lessons_chart_names_the_tokens_with_the_one_helper(chart):
    assert list(chart()) == [safe_label(name) for name in token_labels(TOKENS)]


def test_every_table_of_tokens_names_them_with_the_one_helper():
    assert list(matrix_frame(_weights(), TOKENS, TOKENS).index) == token_labels(TOKENS)
    window = range(2, 5)
    assert list(labelled_frame(_weights(3, 3), window, window, TOKENS).columns) == token_labels(TOKENS[2:5], window)
