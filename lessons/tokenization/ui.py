"""The tokenization lesson's sections: text to tokens, tokens to vectors, and three tokenizers side by side.

The numbers come from `lessons.common.runs` and `lessons.tokenization.zoo`, the figures from
`lessons.tokenization.figures`; this module chooses what to show and lays it out.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from tokenizers import Tokenizer

from anatomy.embeddings import Embeddings
from lessons.common.runs import TokenizedText, tokenize
from lessons.common.ui import charts, linked, loaders, widgets
from lessons.common.ui.sidebar import StudyContext
from lessons.tokenization import links, text, zoo
from lessons.tokenization.figures import embedding_rows, highlight_rows, token_highlight

HIGHLIGHT_LINES = 24  # lines of it drawn at once: each character is a text element the browser lays out
OPEN_TABLE_TOKENS = 64  # texts up to this many tokens open their token table by themselves
EMBEDDING_WINDOW = 64  # token rows of the embedding heatmap drawn at once
# Each name is the EmbeddingTrace field it shows, so the table and the heatmap read the same tensor.
EMBEDDING_VIEWS = {
    "token": "token vectors: row id of the token table",
    "position": "position vectors: row i of the position table",
    "token_type": "token type vectors: row 0 or 1 of the segment table",
    "summed": "their sum",
    "output": "after the embedding LayerNorm: what layer 0 reads",
}
WHOLE_TEXT = 10**6  # a token budget no text reaches: the three-way split compares the same characters
TABLE_ROWS = 25  # rows a token table shows whole; a longer one scrolls inside a frame this tall


@st.cache_resource(show_spinner="Training BPE and Unigram on the lesson's corpus…")
def trained_tokenizers(vocab_size: int) -> dict[str, Tokenizer]:
    """The two tokenizers trained here, once per vocabulary size and server process."""
    return {"BPE": zoo.train_bpe(vocab_size), "Unigram": zoo.train_unigram(vocab_size)}


def table_height(rows: int) -> int:
    """Pixels that show a table's header and its rows whole, without a scroll bar inside, up to TABLE_ROWS rows
    (Streamlit draws every row and the header 35 px tall, inside a 3 px border)."""
    return 35 * (min(rows, TABLE_ROWS) + 1) + 3


# ----- the inputs ----------------------------------------------------------------------------------------


def choose_inputs() -> tuple[str | None, bool]:
    """The optional second sentence (None when blank) and whether the special tokens are shown."""
    # A third of the row for the toggle: a quarter cut its label short on a desktop zoomed to 150 %.
    left, right = st.columns([2, 1], vertical_alignment="bottom")
    raw_pair = linked.text_input(
        "Second sentence (optional)",
        links.PAIR,
        "",
        max_chars=10**6,
        container=left,
        placeholder="e.g. Where does it fly?",
        help="Give a second sentence to see how BERT packs a pair into one input.",
    )
    show_special = linked.toggle(
        "Special tokens",
        links.SPECIAL_TOKENS,
        True,
        container=right,
        help="Show [CLS] and [SEP], the tokens the tokenizer adds around the text.",
    )
    if raw_pair and not raw_pair.strip():
        st.caption(text.BLANK_PAIR)
    return (raw_pair if raw_pair.strip() else None), show_special


def notes_on(tokenizer, show_special: bool) -> str:
    notes = text.SPECIAL_TOKENS_SHOWN if show_special else text.SPECIAL_TOKENS_HIDDEN
    if getattr(tokenizer, "do_lower_case", False):
        notes += text.UNCASED
    return notes


# ----- text → tokens ---------------------------------------------------------------------------------------


def show_tokens(rows, texts: tuple[str, ...], notes: str, vocab_size: int) -> None:
    """The token table, its counts, the text with each token's characters coloured, unknowns, the pair."""
    table = pd.DataFrame(
        {
            "token": [row.token for row in rows],
            "id": [row.id for row in rows],
            "type id": [row.token_type_id for row in rows],
            "characters": [row.covered_text for row in rows],
            "span": [f"{row.start}–{row.end}" if not row.special else "" for row in rows],
            "## piece": [row.continuation for row in rows],
            "special": [row.special for row in rows],
            "unknown": [row.unknown for row in rows],
        }
    )
    counts = st.columns(4)
    counts[0].metric("Tokens", len(rows))
    counts[1].metric("## pieces", int(table["## piece"].sum()))
    counts[2].metric("Unknown", int(table["unknown"].sum()))
    counts[3].metric("Special", int(table["special"].sum()))
    if not rows:
        st.info(text.NO_TOKENS)
        return
    every_token = widgets.expander_if_open(
        "Every token: its id, type and the characters it covers", "tok_table", expanded=len(rows) <= OPEN_TABLE_TOKENS
    )
    if every_token:
        with every_token:
            st.dataframe(table, height=table_height(len(table)))
            widgets.download_csv(table, "tokens.csv", key="tok-download-tokens")
    st.markdown(text.continuation_pieces(notes))
    spans = [(row.sentence, row.start, row.end) for row in rows]
    kinds = ["unknown" if row.unknown else "continuation" if row.continuation else "word" for row in rows]
    num_lines = len(highlight_rows(texts))
    first_line = linked.slider(
        f"First line drawn (showing {HIGHLIGHT_LINES} of {num_lines} lines)",
        links.FIRST_LINE,
        0,
        max(num_lines - HIGHLIGHT_LINES, 0),
        0,
    )
    figure = token_highlight(
        texts,
        [row.token for row in rows],
        spans,
        kinds,
        title="Where each token comes from (hover a character)",
        first_row=first_line,
        max_rows=HIGHLIGHT_LINES,
    )
    charts.show(figure, key="tok-highlight")
    st.caption(text.HIGHLIGHT_CAPTION)
    show_unknowns(rows, vocab_size)
    if len(texts) == 2:
        show_pair(rows)


def show_unknowns(rows, vocab_size: int) -> None:
    """Why [UNK] appears, and which characters each one replaced."""
    unknowns = [row for row in rows if row.unknown]
    st.subheader("Unknown tokens")
    st.markdown(text.unknown_tokens(vocab_size))
    if not unknowns:
        st.caption(text.NO_UNKNOWN)
        return
    st.dataframe(
        pd.DataFrame(
            {
                "position": [row.position for row in unknowns],
                "token": [row.token for row in unknowns],
                "id": [row.id for row in unknowns],
                "characters it replaced": [row.covered_text for row in unknowns],
            }
        ),
        hide_index=True,
    )


def show_pair(rows) -> None:
    """How two sentences share one input, told with this pair's token type counts."""
    types = [row.token_type_id for row in rows]
    st.subheader("A sentence pair")
    st.markdown(text.sentence_pair(types.count(0), types.count(1)))


# ----- tokens → vectors ------------------------------------------------------------------------------------


def show_lookup(context: StudyContext, pair: str | None) -> None:
    """From ids to vectors: the embedding tensors' shapes and a heatmap of the rows the ids select."""
    config = context.pretrained.config
    run = loaders.get_encoder_run(context.reference, context.text, pair)
    tokenized: TokenizedText = run.tokenized
    embeddings = run.trace.embeddings
    st.markdown(text.lookup(config.vocab_size, config.width))
    st.latex(text.LOOKUP_FORMULA)
    st.caption(text.LOOKUP_SPECIALS)
    shapes = pd.DataFrame(
        {
            "tensor": list(EMBEDDING_VIEWS),
            "shape [batch, tokens, width]": [
                str(list(getattr(embeddings, name).shape)) if getattr(embeddings, name) is not None else "not used"
                for name in EMBEDDING_VIEWS
            ],
            "what it holds": list(EMBEDDING_VIEWS.values()),
        }
    )
    st.dataframe(shapes, hide_index=True)

    available = [name for name in EMBEDDING_VIEWS if getattr(embeddings, name) is not None]
    step = 8 if config.width % 8 == 0 else 1
    controls = st.columns(2)
    view = linked.selectbox(
        "Vectors to show",
        links.VIEW,
        available,
        "token",
        container=controls[0],
        format_func=EMBEDDING_VIEWS.__getitem__,
    )
    dims = linked.slider(
        "Dimensions shown",
        links.DIMENSIONS,
        step,
        config.width,
        min(64, config.width),
        step=step,
        container=controls[1],
        help=f"The first columns of the {config.width}-wide vectors.",
    )
    first = linked.slider(
        f"First token row (showing {EMBEDDING_WINDOW} of {len(tokenized)})",
        links.FIRST_ROW,
        0,
        max(len(tokenized) - EMBEDDING_WINDOW, 0),
        0,
    )

    vectors = getattr(embeddings, view)[0]  # (T, D): batch of one
    labels = [f"{token} ({token_id})" for token, token_id in zip(tokenized.tokens, tokenized.input_ids, strict=True)]
    figure = embedding_rows(
        vectors,
        labels,
        first,
        EMBEDDING_WINDOW,
        dims,
        title=f"{EMBEDDING_VIEWS[view].capitalize()}, first {dims} dimensions",
    )
    charts.show(figure, key="tok-embedding")
    offer_window_csv(vectors, labels, range(first, min(first + EMBEDDING_WINDOW, len(tokenized))), dims, view)
    st.caption(text.LOOKUP_ROWS)
    widgets.show_source(tokenize, Embeddings)


def offer_window_csv(vectors, labels: list[str], shown: range, dims: int, view: str) -> None:
    """A download of the block in the heatmap. The CSV is written only when the button is clicked:
    formatting 64 × 384 numbers takes about a tenth of a second, too long to pay on every rerun."""

    def csv() -> bytes:
        block = vectors[shown.start : shown.stop, :dims].tolist()
        frame = widgets.matrix_frame(block, [labels[i] for i in shown], [str(dim) for dim in range(dims)])
        return frame.to_csv(index=True).encode("utf-8")

    st.download_button(
        "Download the numbers (CSV)",
        csv,
        file_name=f"embedding_{view}.csv",
        mime="text/csv",
        icon=":material/download:",
        key="tok-download-embedding",
    )


# ----- three tokenizers --------------------------------------------------------------------------------------


def show_zoo(context: StudyContext, read: str) -> None:
    """The same text cut by the model's WordPiece and by a BPE and a Unigram tokenizer trained here."""
    st.markdown(text.ZOO)
    vocab_size = linked.select_slider(
        "Vocabulary size of the two trained tokenizers", links.VOCAB_SIZE, zoo.ZOO_VOCAB_SIZES, 400, parse=int
    )
    pretrained = context.pretrained
    wordpiece = tokenize(pretrained.tokenizer, read, max_tokens=WHOLE_TEXT, add_special_tokens=False)
    splits = [zoo.wordpiece_split(wordpiece, pretrained.config.vocab_size)] + [
        zoo.split_with(tokenizer, read, name) for name, tokenizer in trained_tokenizers(vocab_size).items()
    ]
    for column, split in zip(st.columns(len(splits)), splits, strict=True):
        column.metric(f"{split.algorithm}, {split.vocab_size:,} pieces", f"{len(split)} tokens")
    side_by_side = zoo.side_by_side(splits)
    st.dataframe(side_by_side, height=table_height(len(side_by_side)))
    widgets.download_csv(side_by_side, "three_tokenizers.csv", key="tok-download-zoo")
    st.caption(text.ZOO_CAPTION)
    with st.expander("The training corpus", icon=":material/menu_book:"):
        st.code("\n".join(zoo.read_corpus()), language=None, wrap_lines=True)
    widgets.show_source(zoo.train_bpe, zoo.train_unigram, zoo.split_with)
