"""The tokenization page, driven headlessly: what it shows must be what the tokenizer and the model compute."""

from __future__ import annotations

import numpy as np
import pytest

from harness.apptest import (
    HOSTILE_TEXTS,
    all_markdown,
    assert_clean,
    chart_keys,
    numbers,
    open_expander,
    open_page,
    plotly_figures,
)
from lessons.common.runs import run_encoder
from lessons.tokenization import links
from lessons.tokenization.zoo import split_with, train_bpe, train_unigram

PAGE = "lesson_pages/tokenization.py"
TEXT = "Tokenization isn't magic 🤖"
TOKENS_TAB, LOOKUP_TAB, ZOO_TAB = links.TABS


def table_with(app, column: str):
    """The first table on the page that has `column`."""
    return next(frame.value for frame in app.dataframe if column in frame.value.columns)


def tokens_table(app):
    return table_with(app, "## piece")


def embedding_figure(app) -> dict:
    return next(
        figure
        for figure in plotly_figures(app)
        if figure["data"][0].get("colorscale") and figure["layout"]["xaxis"].get("title", {}).get("text") == "dimension"
    )


def metric(app, label: str) -> str:
    return next(item.value for item in app.metric if item.label == label)


def filled(column) -> list[str]:
    """A column of the side-by-side table without the blanks after a tokenizer's last token."""
    return [token for token in column if token != ""]


def open_tab(tab: str, text: str, query: dict[str, str] | None = None):
    return open_page(PAGE, text=text, query={links.TAB: tab, **(query or {})})


@pytest.fixture(scope="module")
def opened():
    """The page on TEXT with every choice at its default (read only: tests must not change widgets)."""
    app = open_page(PAGE, text=TEXT)
    assert_clean(app)
    return app


@pytest.fixture(scope="module")
def looked_up():
    """The second tab, the embedding lookup, on TEXT (read only)."""
    app = open_tab(LOOKUP_TAB, TEXT)
    assert_clean(app)
    return app


@pytest.fixture(scope="module")
def compared():
    """The third tab, three tokenizers side by side, on TEXT (read only)."""
    app = open_tab(ZOO_TAB, TEXT)
    assert_clean(app)
    return app


@pytest.mark.slow
def test_only_the_open_tab_is_drawn_and_the_link_names_it(opened, looked_up, compared):
    assert chart_keys(opened) == ["tok-highlight"]
    assert chart_keys(looked_up) == ["tok-embedding"]
    assert chart_keys(compared) == []
    assert any(frame.value.columns[0] == "WordPiece" for frame in compared.dataframe)
    assert not any("tensor" in frame.value.columns for frame in [*opened.dataframe, *compared.dataframe])
    assert open_tab("Not a tab", TEXT).session_state[links.TAB] == TOKENS_TAB


def test_the_table_shows_the_tokenizers_own_tokens_and_ids(opened, embedded):
    table = tokens_table(opened)
    encoded = embedded.tokenizer(TEXT)
    assert list(table["id"]) == encoded["input_ids"]
    assert list(table["token"]) == ["[CLS]", "token", "##ization", "isn", "'", "t", "magic", "[UNK]", "[SEP]"]
    assert list(table["## piece"]) == [token.startswith("##") for token in table["token"]]
    assert list(table["characters"]) == ["", "Token", "ization", "isn", "'", "t", "magic", "🤖", ""]
    assert list(table["special"]) == [True] + [False] * 7 + [True]
    assert (metric(opened, "Tokens"), metric(opened, "Unknown"), metric(opened, "Special")) == ("9", "1", "2")


def test_the_unknown_table_names_the_characters_each_unk_replaced(opened):
    unknowns = table_with(opened, "characters it replaced")
    assert list(unknowns["position"]) == [7]
    assert list(unknowns["characters it replaced"]) == ["🤖"]


def test_the_highlight_colours_the_emoji_as_unknown(opened):
    highlight = plotly_figures(opened)[0]
    codes = numbers(highlight["data"][0]["z"])
    assert codes.shape == (1, 32)  # one line of 32 characters
    # "Tokenization" is a word start (token 1, odd shade 2) and a ## piece (token 2, even shade 3);
    # the emoji at offset 25 is [UNK] (5).
    assert list(codes[0, :13]) == [2] * 5 + [3] * 7 + [0]
    assert codes[0, TEXT.index("🤖")] == 5


def test_the_heatmap_rows_are_the_rows_of_the_embedding_table_for_the_ids(looked_up, embedded):
    figure = embedding_figure(looked_up)
    run = run_encoder(embedded.model, embedded.tokenizer, TEXT)
    shown = numbers(figure["data"][0]["z"])
    ids = list(run.tokenized.input_ids)
    assert shown.shape == (9, 64)
    np.testing.assert_allclose(shown, run.output.trace.embeddings.token[0, :, :64].numpy(), rtol=1e-6)
    np.testing.assert_allclose(shown, embedded.model.embeddings.token.weight[ids, :64].numpy(), rtol=1e-6)
    assert figure["data"][0]["y"][7] == "7: [UNK] (100)"


def test_the_shapes_are_batch_tokens_width_from_the_trace(looked_up):
    shapes = table_with(looked_up, "tensor")
    assert list(shapes["tensor"]) == ["token", "position", "token_type", "summed", "output"]
    assert set(shapes["shape [batch, tokens, width]"]) == {"[1, 9, 384]"}


def test_three_tokenizers_split_the_same_text_side_by_side(compared, embedded):
    side_by_side = table_with(compared, "Unigram")
    bpe, unigram = split_with(train_bpe(400), TEXT, "BPE"), split_with(train_unigram(400), TEXT, "Unigram")
    assert list(side_by_side.columns) == ["WordPiece", "BPE", "Unigram"]
    assert filled(side_by_side["WordPiece"]) == embedded.tokenizer.tokenize(TEXT)
    assert tuple(filled(side_by_side["BPE"])) == bpe.tokens
    assert tuple(filled(side_by_side["Unigram"])) == unigram.tokens
    assert metric(compared, "WordPiece, 30,522 pieces") == "7 tokens"
    assert metric(compared, "BPE, 400 pieces") == f"{len(bpe)} tokens"


def test_where_a_tokenizer_made_fewer_tokens_its_cells_are_empty_not_none(compared):
    side_by_side = table_with(compared, "Unigram")
    shortest = min(side_by_side, key=lambda name: len(filled(side_by_side[name])))
    assert len(filled(side_by_side[shortest])) < len(side_by_side)  # this text needs blanks
    assert not side_by_side.isna().any().any()  # a missing cell would read "None"
    assert side_by_side[shortest].tolist()[-1] == ""


@pytest.mark.parametrize("rows, shown", [(1, 1), (12, 12), (25, 25), (26, 25), (512, 25)])
def test_token_tables_show_every_row_up_to_25_without_a_scroll_bar_inside(rows, shown):
    # Streamlit draws the header and every row 35 px tall inside a 3 px border; the old cap of 420 px
    # showed 11 rows and hid the 12th behind a scroll bar.
    from lessons.tokenization.ui import table_height

    assert table_height(rows) == 35 * (shown + 1) + 3


def test_the_special_tokens_toggle_gets_a_third_of_its_row_so_its_label_fits_a_desktop_zoomed_to_150_percent(opened):
    (column,) = [column for column in opened.columns if column.toggle]
    assert column.weight == pytest.approx(1 / 3)  # a quarter (about 125 px there) cut "Special tokens" short


def test_switching_special_tokens_off_removes_cls_and_sep(embedded):
    app = open_page(PAGE, text="time flies")
    app.toggle(key=links.SPECIAL_TOKENS).set_value(False).run()
    assert_clean(app)
    table = tokens_table(app)
    assert list(table["token"]) == ["time", "flies"]
    assert list(table["id"]) == embedded.tokenizer("time flies", add_special_tokens=False)["input_ids"]
    assert app.query_params[links.SPECIAL_TOKENS] == "False"


def test_a_second_sentence_gets_token_type_one(embedded):
    app = open_page(PAGE, text="time flies")
    app.text_input(key=links.PAIR).input("Does it?").run()
    assert_clean(app)
    table = tokens_table(app)
    assert list(table["token"]) == ["[CLS]", "time", "flies", "[SEP]", "does", "it", "?", "[SEP]"]
    assert list(table["type id"]) == [0, 0, 0, 0, 1, 1, 1, 1]
    assert list(table["id"]) == embedded.tokenizer("time flies", "Does it?")["input_ids"]
    assert list(table["characters"])[4:7] == ["Does", "it", "?"]
    assert plotly_figures(app)[0]["layout"]["yaxis"]["ticktext"] == ["A 0", "", "B 0"]
    assert app.query_params[links.PAIR] == "Does it?"
    app.session_state[links.TAB] = LOOKUP_TAB
    shapes = table_with(app.run(), "tensor")
    assert set(shapes["shape [batch, tokens, width]"]) == {"[1, 8, 384]"}


@pytest.mark.slow
def test_the_link_restores_tab_pair_toggle_view_dims_and_vocabulary(embedded):
    query = {
        links.PAIR: "Why?",
        links.SPECIAL_TOKENS: "off",
        links.VIEW: "position",
        links.DIMENSIONS: "24",
        links.VOCAB_SIZE: "300",
    }
    app = open_page(PAGE, text="time flies", query=query)
    assert_clean(app)
    assert app.text_input(key=links.PAIR).value == "Why?"
    assert app.toggle(key=links.SPECIAL_TOKENS).value is False
    assert list(tokens_table(app)["type id"]) == [0, 0, 1, 1]
    app = open_tab(LOOKUP_TAB, "time flies", query)
    assert (app.selectbox(key=links.VIEW).value, app.slider(key=links.DIMENSIONS).value) == ("position", 24)
    run = run_encoder(embedded.model, embedded.tokenizer, "time flies", "Why?")
    shown = numbers(embedding_figure(app)["data"][0]["z"])
    np.testing.assert_allclose(shown, run.output.trace.embeddings.position[0, :, :24].numpy(), rtol=1e-6)
    app = open_tab(ZOO_TAB, "time flies", query)
    assert app.select_slider(key=links.VOCAB_SIZE).value == 300
    assert metric(app, "BPE, 300 pieces") == f"{len(split_with(train_bpe(300), 'time flies', 'BPE'))} tokens"


def test_invalid_link_values_fall_back_to_the_defaults():
    query = {
        links.SPECIAL_TOKENS: "maybe",
        links.VIEW: "bogus",
        links.DIMENSIONS: "99999",
        links.VOCAB_SIZE: "abc",
        links.FIRST_ROW: "-3",
    }
    app = open_page(PAGE, text="time flies", query=query)
    assert_clean(app)
    assert app.toggle(key=links.SPECIAL_TOKENS).value is True
    app = open_tab(LOOKUP_TAB, "time flies", query)
    assert_clean(app)
    assert (app.selectbox(key=links.VIEW).value, app.slider(key=links.DIMENSIONS).value) == ("token", 64)
    app = open_tab(ZOO_TAB, "time flies", query)
    assert_clean(app)
    assert app.select_slider(key=links.VOCAB_SIZE).value == 400


def test_changing_view_dims_and_vocabulary_redraws(embedded):
    app = open_tab(LOOKUP_TAB, "time flies")
    app.selectbox(key=links.VIEW).set_value("output").run()
    app.slider(key=links.DIMENSIONS).set_value(16).run()
    assert_clean(app)
    run = run_encoder(embedded.model, embedded.tokenizer, "time flies")
    shown = numbers(embedding_figure(app)["data"][0]["z"])
    np.testing.assert_allclose(shown, run.output.trace.embeddings.output[0, :, :16].numpy(), rtol=1e-5, atol=1e-6)
    assert (app.query_params[links.VIEW], app.query_params[links.DIMENSIONS]) == ("output", "16")
    app = open_tab(ZOO_TAB, "time flies")
    app.select_slider(key=links.VOCAB_SIZE).set_value(450).run()
    assert_clean(app)
    unigram = split_with(train_unigram(450), "time flies", "Unigram")
    assert metric(app, f"Unigram, {unigram.vocab_size} pieces") == f"{len(unigram)} tokens"


def test_a_long_text_shows_a_window_of_64_rows_that_the_link_can_move():
    text = "attention " * 100  # 102 tokens with [CLS] and [SEP]
    app = open_tab(LOOKUP_TAB, text, {links.FIRST_ROW: "30"})
    assert_clean(app)
    assert app.slider(key=links.FIRST_ROW).value == 30
    rows = embedding_figure(app)["data"][0]["y"]
    assert (len(rows), rows[0], rows[-1]) == (64, "30: attention (3086)", "93: attention (3086)")
    app.slider(key=links.FIRST_ROW).set_value(38).run()
    assert embedding_figure(app)["data"][0]["y"][-1] == "101: [SEP] (102)"


def test_a_text_past_512_tokens_is_drawn_and_compared_only_as_far_as_the_model_reads():
    app = open_page(PAGE, text="word " * 600)  # 602 tokens: [CLS], 510 words and [SEP] are kept
    assert_clean(app)
    assert "602 tokens" in app.warning[0].value
    assert not app.dataframe  # 512 rows wait in a closed expander
    assert len(tokens_table(open_expander(app, "tok_table"))) == 512
    # The 510 words kept span "word " * 509 + "word": 2,549 characters, 80 lines of 32, drawn 24 at a time.
    assert app.slider(key=links.FIRST_LINE).max == 56
    assert numbers(plotly_figures(app)[0]["data"][0]["z"]).shape == (24, 32)
    assert metric(open_tab(ZOO_TAB, "word " * 600), "WordPiece, 30,522 pieces") == "510 tokens"


def test_a_long_text_is_highlighted_twenty_four_lines_at_a_time_from_the_line_the_link_names():
    text = "attention " * 100  # 999 characters: 32 lines of 32
    app = open_page(PAGE, text=text, query={links.FIRST_LINE: "3"})
    assert_clean(app)
    highlight = plotly_figures(app)[0]
    assert app.slider(key=links.FIRST_LINE).value == 3 and app.slider(key=links.FIRST_LINE).max == 8
    assert highlight["layout"]["yaxis"]["ticktext"] == [str(32 * line) for line in range(3, 27)]
    app.slider(key=links.FIRST_LINE).set_value(8).run()
    assert plotly_figures(app)[0]["layout"]["yaxis"]["ticktext"][-1] == "992"  # the last line
    assert app.query_params[links.FIRST_LINE] == "8"
    short = open_page(PAGE, text="time flies", query={links.FIRST_LINE: "3"})
    assert_clean(short)
    assert not [slider for slider in short.slider if slider.key == links.FIRST_LINE]  # one line: no slider
    assert plotly_figures(short)[0]["layout"]["yaxis"]["ticktext"] == ["0"]


def test_text_that_makes_no_tokens_gets_a_message_and_a_blank_pair_is_ignored():
    app = open_page(PAGE, text="\u200b\u200b", query={links.SPECIAL_TOKENS: "off", links.PAIR: "   "})
    assert_clean(app)
    assert "makes no tokens" in app.info[0].value
    assert "only blank space" in " ".join(caption.value for caption in app.caption)
    assert app.text_input(key=links.PAIR).value == "   "


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HOSTILE_TEXTS))
def test_hostile_text_in_the_sidebar_and_the_pair_field_is_shown_never_rendered(name):
    text = HOSTILE_TEXTS[name]
    app = open_page(PAGE, text=text, query={links.PAIR: text})
    assert_clean(app)
    if text.strip():
        assert text not in all_markdown(app)
        assert app.text_input(key=links.PAIR).value == text
        assert len(tokens_table(open_expander(app, "tok_table"))) > 0
