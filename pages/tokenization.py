"""Tokenization: how the model cuts text into WordPiece tokens, how each token id picks one row of the
embedding table, and how two other tokenizer families, trained here on a small corpus, cut the same text."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from tokenizers import Tokenizer

from anatomy import tokenizer_zoo
from anatomy.analysis import tokenize
from anatomy.embeddings import Embeddings
from anatomy.ui import loaders, sidebar, state, widgets
from anatomy.viz.tokenization import embedding_rows, highlight_rows, token_highlight

LINE_WIDTH = 64        # characters per line in the highlighted text
HIGHLIGHT_LINES = 12   # lines of it drawn at once: each character is a text element the browser lays out
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
WHOLE_TEXT = 10**6     # a token budget no text reaches: the three-way split compares the same characters


@st.cache_resource(show_spinner="Training BPE and Unigram on the lesson's corpus…")
def trained_tokenizers(vocab_size: int) -> dict[str, Tokenizer]:
    """The two tokenizers trained here, once per vocabulary size and server process."""
    return {"BPE": tokenizer_zoo.train_bpe(vocab_size), "Unigram": tokenizer_zoo.train_unigram(vocab_size)}


def read_pair() -> str | None:
    """The optional second sentence, from its own text field (kept in the URL when short enough)."""
    raw = st.session_state["tok_pair"]
    if raw and len(raw) <= state.MAX_URL_TEXT:
        state.publish(tok_pair=raw)
    else:
        st.query_params.pop("tok_pair", None)
    if raw and not raw.strip():
        st.caption("The second sentence is only blank space, so the input stays a single sentence.")
    return raw if raw.strip() else None


def show_tokens(rows, texts: tuple[str, ...], notes: str, vocab_size: int) -> None:
    """The token table, its counts, the text with each token's characters coloured, unknowns, the pair."""
    table = pd.DataFrame({
        "token": [row.token for row in rows],
        "id": [row.id for row in rows],
        "type id": [row.token_type_id for row in rows],
        "characters": [row.covered_text for row in rows],
        "span": [f"{row.start}–{row.end}" if not row.special else "" for row in rows],
        "## piece": [row.continuation for row in rows],
        "special": [row.special for row in rows],
        "unknown": [row.unknown for row in rows],
    })
    counts = st.columns(4)
    counts[0].metric("Tokens", len(rows))
    counts[1].metric("## pieces", int(table["## piece"].sum()))
    counts[2].metric("Unknown", int(table["unknown"].sum()))
    counts[3].metric("Special", int(table["special"].sum()))
    if not rows:
        st.info("This text makes no tokens at all: the tokenizer dropped every character (control or blank "
                "characters). Type some words in the sidebar.")
        return
    every_token = widgets.expander_if_open("Every token: its id, type and the characters it covers", "tok_table",
                                           expanded=len(rows) <= OPEN_TABLE_TOKENS)
    if every_token:
        with every_token:
            st.dataframe(table, height=min(35 * (len(rows) + 1) + 3, 420))
            widgets.download_csv(table, "tokens.csv", key="tok-download-tokens")
    st.markdown(
        f"A **`##`** piece continues the word before it: the tokenizer found no single vocabulary entry for "
        f"the whole word, so it took the longest piece it knew from the start, then the longest `##` piece "
        f"for the rest, and so on. {notes}"
    )
    spans = [(row.sentence, row.start, row.end) for row in rows]
    kinds = ["unknown" if row.unknown else "continuation" if row.continuation else "word" for row in rows]
    first_line = choose_lines(len(highlight_rows(texts, LINE_WIDTH)))
    figure = token_highlight(texts, [row.token for row in rows], spans, kinds, LINE_WIDTH,
                             title="Where each token comes from (hover a character)",
                             first_row=first_line, max_rows=HIGHLIGHT_LINES)
    st.plotly_chart(figure, key="tok-highlight")
    st.caption("Each cell is one character of the text as typed; rows start with their character offset. "
               "Grey cells belong to no token: the tokenizer drops spaces after using them to cut words. "
               "When the text is cut at the token limit, only the part the model reads is drawn.")
    show_unknowns(rows, vocab_size)
    if len(texts) == 2:
        show_pair(rows)


def show_unknowns(rows, vocab_size: int) -> None:
    """Why [UNK] appears, and which characters each one replaced."""
    unknowns = [row for row in rows if row.unknown]
    st.subheader("Unknown tokens")
    st.markdown(
        f"WordPiece can only output pieces that are in its vocabulary. This model's {vocab_size:,} pieces were "
        f"learned from its pre-training text (English books and Wikipedia for BERT and the embedded MiniLM), "
        f"so a character that never occurred there (most emoji, rare symbols and scripts) has no piece. "
        f"WordPiece then gives up on the **whole word** it sits in and writes a single `[UNK]`: `hello🤖` "
        f"becomes one `[UNK]`, not `hello` plus `[UNK]`. Every `[UNK]` has the same id and so the same "
        f"vector: the model cannot tell one unknown word from another."
    )
    if not unknowns:
        st.caption("This text has no unknown token. Add an emoji such as 🤖 to the sidebar text to see one.")
        return
    st.dataframe(pd.DataFrame({
        "position": [row.position for row in unknowns],
        "token": [row.token for row in unknowns],
        "id": [row.id for row in unknowns],
        "characters it replaced": [row.covered_text for row in unknowns],
    }), hide_index=True)


def show_pair(rows) -> None:
    """How two sentences share one input, told with this pair's token type counts."""
    types = [row.token_type_id for row in rows]
    st.subheader("A sentence pair")
    st.markdown(
        f"Two sentences are packed into one input as `[CLS] A [SEP] B [SEP]`. The **token type id** says "
        f"which sentence a token belongs to: {types.count(0)} tokens have type 0 (sentence A, with `[CLS]` "
        f"and the first `[SEP]`) and {types.count(1)} have type 1 (sentence B and the final `[SEP]`). "
        f"The model adds row 0 or row 1 of a small segment table to each token's vector. BERT learned those "
        f"two rows in pre-training, where it had to tell whether sentence B really followed sentence A."
    )


def show_lookup(context, pair: str | None) -> None:
    """From ids to vectors: the embedding tensors' shapes and a heatmap of the rows the ids select."""
    pretrained = context.pretrained
    config = pretrained.config
    run = loaders.get_encoder_run(context.reference, context.text, pair)
    tokenized = run.tokenized
    embeddings = run.output.trace.embeddings
    st.markdown(
        f"The tokenizer's work ends with a list of integers. The model's first layer is a table "
        f"$W_E$ of **{config.vocab_size:,} rows** (one per vocabulary entry) and **{config.width} columns** "
        f"(the model width $D$). Token $i$ becomes row $\\mathrm{{id}}_i$ of that table: no arithmetic, just "
        f"indexing. (It is the same as multiplying a one-hot vector by $W_E$, only far cheaper.) The rows "
        f"were learned in pre-training like every other weight. Then vectors for the position and the "
        f"sentence are added and the sum is normalised:"
    )
    st.latex(r"x_i = \mathrm{LayerNorm}\big(W_E[\mathrm{id}_i] + W_P[i] + W_S[\mathrm{type}_i]\big)"
             r"\in \mathbb{R}^{D}")
    st.caption("The model always reads its special tokens, so the rows below include [CLS] and [SEP] even "
               "when the table above hides them.")
    shapes = pd.DataFrame({
        "tensor": list(EMBEDDING_VIEWS),
        "shape [batch, tokens, width]": [
            str(list(getattr(embeddings, name).shape)) if getattr(embeddings, name) is not None else "not used"
            for name in EMBEDDING_VIEWS
        ],
        "what it holds": list(EMBEDDING_VIEWS.values()),
    })
    st.dataframe(shapes, hide_index=True)

    available = [name for name in EMBEDDING_VIEWS if getattr(embeddings, name) is not None]
    state.restore("tok_view", "token", valid=lambda value: value in available)
    step = 8 if config.width % 8 == 0 else 1
    state.restore("tok_dims", min(64, config.width), parse=int, valid=lambda value: step <= value <= config.width)
    controls = st.columns(2)
    view = controls[0].selectbox("Vectors to show", available, key="tok_view",
                                 format_func=lambda name: EMBEDDING_VIEWS[name])
    dims = controls[1].slider("Dimensions shown", step, config.width, step=step, key="tok_dims",
                              help=f"The first columns of the {config.width}-wide vectors.")
    first = choose_window(len(tokenized))
    state.publish(tok_view=view, tok_dims=dims)

    vectors = getattr(embeddings, view)[0]  # (T, D): batch of one
    labels = [f"{token} ({token_id})" for token, token_id in zip(tokenized.tokens, tokenized.input_ids)]
    figure = embedding_rows(vectors, labels, first, EMBEDDING_WINDOW, dims,
                            title=f"{EMBEDDING_VIEWS[view].capitalize()}, first {dims} dimensions")
    st.plotly_chart(figure, key="tok-embedding")
    offer_window_csv(vectors, labels, range(first, min(first + EMBEDDING_WINDOW, len(tokenized))), dims, view)
    st.caption("Row names give the token and its id. The same id always gives the same token vector, "
               "wherever it stands; only the position and type vectors tell two copies apart.")
    widgets.show_source(tokenize, Embeddings)


def offer_window_csv(vectors, labels: list[str], shown: range, dims: int, view: str) -> None:
    """A download of the block in the heatmap. The CSV is written only when the button is clicked:
    formatting 64 × 384 numbers takes about a tenth of a second, too long to pay on every rerun."""
    def csv() -> bytes:
        block = vectors[shown.start:shown.stop, :dims].tolist()
        frame = widgets.matrix_frame(block, [labels[i] for i in shown], [str(dim) for dim in range(dims)])
        return frame.to_csv(index=True).encode("utf-8")

    st.download_button("Download the numbers (CSV)", csv, file_name=f"embedding_{view}.csv", mime="text/csv",
                       icon=":material/download:", key="tok-download-embedding")


def choose_first(key: str, total: int, shown: int, label: str) -> int:
    """The first of `shown` consecutive rows (of `total`) to draw: a slider, its value in the link, only when
    they do not all fit."""
    last_start = max(total - shown, 0)
    state.restore(key, 0, parse=int, valid=lambda value: 0 <= value <= last_start)
    if last_start == 0:
        return 0
    if st.session_state[key] > last_start:  # the text got shorter since the value was chosen
        st.session_state[key] = last_start
    first = st.slider(label, 0, last_start, key=key)
    state.publish(**{key: first})
    return first


def choose_lines(num_lines: int) -> int:
    """The first line of the highlighted text to draw."""
    return choose_first("tok_line", num_lines, HIGHLIGHT_LINES,
                        f"First line drawn (showing {HIGHLIGHT_LINES} of {num_lines} lines)")


def choose_window(num_tokens: int) -> int:
    """The first token row of the embedding heatmap."""
    return choose_first("tok_first", num_tokens, EMBEDDING_WINDOW,
                        f"First token row (showing {EMBEDDING_WINDOW} of {num_tokens})")


def show_zoo(context, text: str) -> None:
    """The same text cut by the model's WordPiece and by a BPE and a Unigram tokenizer trained here."""
    st.markdown(
        """
Every modern tokenizer cuts text into **subwords**: frequent words stay whole, rare words are spelled
from smaller pieces, so a fixed vocabulary covers any word. Three recipes dominate, and they differ in how
they *learn* the vocabulary and how they *apply* it.

* **BPE** (byte-pair encoding, used by GPT-2) learns **bottom-up**: it starts from single symbols (here
  the 256 byte values) and repeatedly merges the most frequent pair of neighbours into a new token, until
  the vocabulary is full. To tokenize, it replays those merges in the order it learned them. Working on
  bytes means nothing is ever unknown: an emoji becomes its four UTF-8 bytes. `Ġ` is how it writes a
  space that belongs to the next word.
* **WordPiece** (BERT, this model) also grows its vocabulary by merging, but ranks a pair *ab* by
  count(*ab*) / (count(*a*) · count(*b*)): it prefers pairs whose parts are seldom seen apart, not simply
  the most frequent pair. To tokenize, it takes the **longest vocabulary entry** that starts the word,
  then the longest `##` entry for what is left, and so on; if that fails anywhere the whole word
  becomes `[UNK]`.
* **Unigram** (SentencePiece: T5, ALBERT, XLNet) learns **top-down**: it starts with a large set of
  candidate substrings, gives each a probability, and repeatedly drops the pieces whose loss hurts the
  likelihood of the corpus least. To tokenize, it considers every way of spelling the word from its
  pieces and keeps the **most probable** one. `▁` marks a space.

Below, the model's own WordPiece (trained on billions of words) is set against a BPE and a Unigram
tokenizer trained just now, on the few dozen sentences of this app's corpus, with a tiny vocabulary.
Expect the small ones to cut far more often; look at *where* each one cuts.
"""
    )
    state.restore("tok_vocab", 400, parse=int, valid=lambda value: value in tokenizer_zoo.ZOO_VOCAB_SIZES)
    vocab_size = st.select_slider("Vocabulary size of the two trained tokenizers",
                                  tokenizer_zoo.ZOO_VOCAB_SIZES, key="tok_vocab")
    state.publish(tok_vocab=vocab_size)
    pretrained = context.pretrained
    wordpiece = tokenize(pretrained.tokenizer, text, max_tokens=WHOLE_TEXT, add_special_tokens=False)
    splits = [tokenizer_zoo.wordpiece_split(wordpiece, pretrained.config.vocab_size)] + [
        tokenizer_zoo.split_with(tokenizer, text, name)
        for name, tokenizer in trained_tokenizers(vocab_size).items()
    ]
    for column, split in zip(st.columns(len(splits)), splits):
        column.metric(f"{split.algorithm}, {split.vocab_size:,} pieces", f"{len(split)} tokens")
    side_by_side = pd.DataFrame({split.algorithm: pd.Series(split.tokens, dtype=object) for split in splits})
    st.dataframe(side_by_side, height=min(35 * (len(side_by_side) + 1) + 3, 420))
    widgets.download_csv(side_by_side, "three_tokenizers.csv", key="tok-download-zoo")
    st.caption("The trained Unigram may stop short of the size asked for: a small corpus offers only so many "
               "useful substrings. `<unk>` marks characters its corpus never contained.")
    with st.expander("The training corpus", icon=":material/menu_book:"):
        st.code("\n".join(tokenizer_zoo.read_corpus()), language=None, wrap_lines=True)
    widgets.show_source(tokenizer_zoo.train_bpe, tokenizer_zoo.train_unigram, tokenizer_zoo.split_with)


context = sidebar.current()
st.title("Tokenization")
st.markdown(
    "A transformer never sees letters. A **tokenizer** first cuts the text into pieces from a fixed "
    "vocabulary and replaces each piece by its number, its **id**; the model then looks each id up in a "
    "table of vectors. This page follows the text in the sidebar through both steps."
)
if not context.has_text:
    st.info("Type a sentence in the sidebar (the box *Text to study*) to see how it is tokenized.")
    st.stop()
if context.pretrained.family != "encoder" or context.pretrained.tokenizer is None:
    st.warning("This lesson needs a BERT-style encoder that ships its WordPiece tokenizer. Clear the *Model* "
               "field in the sidebar to use the embedded all-MiniLM-L6-v2.")
    st.stop()

state.restore("tok_pair", "")
state.restore("tok_special", True, parse=state.parse_bool)
inputs = st.columns([3, 1], vertical_alignment="bottom")
inputs[0].text_input("Second sentence (optional)", key="tok_pair", placeholder="e.g. Where does it fly?",
                     help="Give a second sentence to see how BERT packs a pair into one input.")
show_special = inputs[1].toggle("Special tokens", key="tok_special",
                                help="Show [CLS] and [SEP], the tokens the tokenizer adds around the text.")
state.publish(tok_special=show_special)
pair = read_pair()
texts = (context.text, pair) if pair else (context.text,)

tokenized = tokenize(context.pretrained.tokenizer, context.text, pair,
                     max_tokens=context.pretrained.config.max_positions, add_special_tokens=show_special)
widgets.truncation_notice(tokenized)
rows = tokenizer_zoo.describe_tokens(tokenized, texts, context.pretrained.tokenizer.unk_token)
read = tokenizer_zoo.texts_read(rows, texts, tokenized.truncated)
notes = (
    "`[CLS]` opens the input (its final vector often stands for the whole text) and `[SEP]` closes each "
    "sentence; they cover no characters." if show_special else
    "The special tokens are hidden now; switch them back on to see where the tokenizer adds them."
)
if getattr(context.pretrained.tokenizer, "do_lower_case", False):
    notes += (" This tokenizer is *uncased*: it lowercases the text and strips accents before cutting, so "
              "`Token` and `token` get the same id.")

widgets.show_open_tab({
    "Text → tokens": lambda: show_tokens(rows, read, notes, context.pretrained.config.vocab_size),
    "Tokens → vectors": lambda: show_lookup(context, pair),
    "Three tokenizers": lambda: show_zoo(context, read[0]),
}, "tok_tab")
