"""Decoder & cross-attention: a small encoder-decoder trained here reverses a word, and its three kinds of
attention show how. Then the three families of transformer side by side, with their masks and sizes.

The word's results (the traced run, the figures, the tables) are built once per word by a cached function;
the family figure and table are built once per server.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable

import pandas as pd
import streamlit as st

from anatomy import families, seq2seq_lesson
from anatomy.blocks import DecoderLayer
from anatomy.config import parameter_breakdown, parameter_count
from anatomy.pretrained import ModelLoadError
from anatomy.recipes import RECIPES
from anatomy.seq2seq import EncoderDecoder
from anatomy.tasks import EOS, SPECIAL_TOKENS
from anatomy.ui import loaders, state, widgets
from anatomy.ui.frame import ensure_entrypoint
from anatomy.viz import cross_attention as figures

WORD_KEY = "dec_word"
DEFAULT_WORD = "decoder"
MAX_ENTRY = 100      # characters the field takes: room for a pasted sentence, to say why it is refused
CACHED_WORDS = 16

INTRO = """
The original Transformer of *Attention Is All You Need* was built for translation, and it has two halves.
An **encoder** reads the whole source sentence at once. A **decoder** then writes the target sentence one
token at a time, and at every step it may look back at the source through a third kind of attention,
**cross-attention**.

This page runs a small encoder-decoder that was trained in this project on one job: write a word backwards
(*hello* → *olleh*). The job is simple, but the only way to do it is to fetch the right source letter at
every step, so the cross-attention weights show the algorithm the model learned.
"""

CROSS_TEXT = r"""
In cross-attention the **queries come from the decoder**: each target position asks "what do I need
now?". The **keys and values come from the encoder's output**: one per source letter, computed once,
before the first output token. That is why the matrix is **rectangular**: T target rows against S source
columns. It needs **no causal mask**: the mask exists to hide tokens that have not been written yet, and the
source is complete before decoding starts, so every step may read all of it. (When sentences of different
lengths share a batch, a padding mask still hides the source's [PAD] columns.)
"""

CROSS_FORMULA = (
    r"Q = H_{\text{dec}}\,W_Q \in \mathbb{R}^{T\times d},\quad K = H_{\text{enc}}\,W_K,\ "
    r"V = H_{\text{enc}}\,W_V \in \mathbb{R}^{S\times d},\quad "
    r"\operatorname{softmax}\!\Big(\frac{QK^{\top}}{\sqrt{d}}\Big) \in \mathbb{R}^{T\times S}"
)

FAMILY_TEXT = {
    families.ENCODER_ONLY: (
        "**Encoder-only** (BERT, the embedded all-MiniLM-L6-v2). Every token reads every token, left and right: "
        "no mask. It produces one vector per token that depends on the whole text, which is what "
        "*understanding* tasks need: classifying a sentence, tagging its words, embedding it for search. "
        "It does not write text."
    ),
    families.DECODER_ONLY: (
        "**Decoder-only** (GPT-2, the sorter trained here). Each token reads itself and the tokens before it: "
        "the causal mask. Trained to predict the next token, it *generates*: feed its output back in, and it "
        "continues. A task's input is simply the start of the sequence it goes on to write (for the sorter, "
        "`<bos> hello =`)."
    ),
    families.ENCODER_DECODER: (
        "**Encoder-decoder** (the original Transformer, T5, BART, the reverser above). A bidirectional encoder "
        "reads a source; a causal decoder writes a different target and reads the source through "
        "cross-attention. Made for turning one sequence into another: translation, summarisation."
    ),
}


@dataclass(frozen=True)
class WordView:
    """Everything the page shows about one word, built once (never mutated after)."""

    lesson: seq2seq_lesson.ReversalLesson
    figures: dict = field(default_factory=dict)
    steps: pd.DataFrame | None = None


def reverser():
    return loaders.get_model(str(RECIPES["reverser"].folder))


def position_name(tokens, position: int) -> str:
    return f"{position} {tokens[position]}"


def steps_table(lesson: seq2seq_lesson.ReversalLesson) -> pd.DataFrame:
    source, mirrored = lesson.source_tokens, lesson.mirrored_positions.tolist()
    rows = []
    for step in lesson.steps:
        row = {"step": step.index, "decoder input": " ".join(step.inputs), "writes": step.token,
               "probability": step.probability, "runner-up": step.runner_up,
               "runner-up probability": step.runner_up_probability}
        for head, position in enumerate(step.most_read):
            row[f"head {head} reads most"] = position_name(source, position)
        row["mirrored position S−1−t"] = (position_name(source, mirrored[step.index])
                                          if step.index < len(mirrored) else "— (no letter left)")
        rows.append(row)
    return pd.DataFrame(rows)


@st.cache_resource(max_entries=CACHED_WORDS, show_spinner="Running the reverser…")
def word_view(word: str) -> WordView:
    pretrained = reverser()
    lesson = seq2seq_lesson.reverse_word(pretrained.model, pretrained.task, word)
    source, target = lesson.source_tokens, lesson.target_tokens
    step_rows = [f"{step.inputs[-1]} → {step.token}" for step in lesson.steps]
    return WordView(lesson, {
        "encoder": figures.heads_figure(lesson.encoder_attention, source, source,
                                        "Encoder self-attention (S × S, no mask)", "source", "source"),
        "decoder": figures.heads_figure(lesson.decoder_attention, target, target,
                                        "Decoder masked self-attention (T × T, causal)", "target", "target"),
        "cross": figures.heads_figure(lesson.cross_attention, step_rows, source,
                                      "Cross-attention (T × S): each step's row over the source letters",
                                      "step: input → written", "source", marks=lesson.alignment,
                                      mark_name="the source letter this step reads most"),
        "distribution": figures.distribution_figure(
            lesson.probabilities, step_rows, pretrained.task.tokenizer.tokens,
            [step.token_id for step in lesson.steps],
            "Every step's next-token probabilities"),
    }, steps_table(lesson))


def blocks(count: int, kind: str) -> str:
    return f"{count} {kind} block{'' if count == 1 else 's'}"


def describe_reverser(pretrained) -> None:
    config, vocabulary = pretrained.config, pretrained.task.tokenizer.tokens
    st.markdown(
        f"The reverser has {blocks(config.num_layers, 'encoder')} and {blocks(config.num_decoder_layers, 'decoder')}, "
        f"{config.num_heads} heads of width {config.head_width} in every attention, model width {config.width}, "
        f"{parameter_count(config):,} parameters. Its vocabulary has {len(vocabulary)} tokens: the letters "
        f"{pretrained.task.alphabet[0]}–{pretrained.task.alphabet[-1]} and the special tokens "
        + ", ".join(f"`{token}`" for token in SPECIAL_TOKENS) + " (`=` is used only by the sorter)."
    )


# --- The word ---------------------------------------------------------------------------------------

def choose_word(task) -> seq2seq_lesson.WordCheck:
    """The word field (its value lives in the URL); a link whose word the reverser cannot read falls back."""
    linked = None if WORD_KEY in st.session_state else st.query_params.get(WORD_KEY)
    state.restore(WORD_KEY, DEFAULT_WORD, valid=lambda value: seq2seq_lesson.check_word(task, value).problem is None)
    entry = widgets.shared_text_input(
        f"A word to reverse ({task.min_length} to {task.max_length} letters a–z)", WORD_KEY, DEFAULT_WORD, MAX_ENTRY)
    if linked is not None and entry != linked:
        st.caption(f"The word in the link is not one the reverser can read, so the page opened with "
                   f"*{DEFAULT_WORD}*.")
    checked = seq2seq_lesson.check_word(task, entry)
    if checked.problem:
        st.warning(widgets.escape_markdown(checked.problem), icon=":material/spellcheck:")
        widgets.show_literal(entry, "You typed:")
    elif checked.lowercased:
        st.caption(f"The reverser knows only small letters, so it reads *{widgets.escape_markdown(checked.word)}*.")
    return checked


# --- The three attentions ---------------------------------------------------------------------------

def show_attentions(view: WordView) -> None:
    lesson = view.lesson
    size, steps = len(lesson.source_tokens), len(lesson.steps)
    st.subheader("Three attentions in one model")
    st.markdown(
        f"The source has S = {size} letters. The decoder's input has T = {steps} positions: the start token "
        "`<bos>` and every token it wrote except the last. Rows read, columns are read; hover over a cell "
        "for its exact weight."
    )
    st.markdown(
        "**1 · Encoder self-attention.** The source letters read each other in both directions, with no mask "
        "(nothing in the source is hidden from anything else). The task does not dictate what these weights "
        "should be: the model learned whatever mixing of the letters helped the decoder. Compare how spread "
        "out they are with the sharp cells of the cross-attention below."
    )
    st.plotly_chart(view.figures["encoder"], key="dec_encoder_chart")
    self_weight = lesson.decoder_self_weight.tolist()
    st.markdown(
        "**2 · Decoder masked self-attention.** Position t reads positions 0 … t of what the decoder has "
        "written; every cell above the diagonal is exactly 0, the work of the causal mask. The share of its "
        "weight a position keeps on itself (the diagonal), averaged over positions: "
        + ", ".join(f"{weight:.2f} in head {head}" for head, weight in enumerate(self_weight)) + "."
    )
    st.plotly_chart(view.figures["decoder"], key="dec_decoder_chart")
    st.markdown("**3 · Cross-attention.**" + CROSS_TEXT)
    st.latex(CROSS_FORMULA)
    st.plotly_chart(view.figures["cross"], key="dec_cross_chart")
    show_alignment(lesson)


def show_alignment(lesson: seq2seq_lesson.ReversalLesson) -> None:
    size = len(lesson.source_tokens)
    mirror = lesson.weight_on_mirror.mean(dim=-1).tolist()
    hits = ", ".join(f"{count} of {min(size, len(lesson.steps))} in head {head}"
                     for head, count in enumerate(lesson.mirrored_hits))
    st.markdown(
        "The outlined cells are each step's most-read source letter. To reverse a word, letter step t must "
        f"copy source position S − 1 − t: the anti-diagonal. Letter steps whose most-read letter is exactly that "
        f"mirrored one: {hits}. The average weight a letter step puts on its mirrored letter: "
        + ", ".join(f"{weight:.3f} in head {head}" for head, weight in enumerate(mirror)) + "."
    )
    if lesson.has_repeated_letters:
        st.markdown(
            "This word repeats a letter. Cross-attention does not search for a matching letter: each step reads "
            "one position, so every copy of a repeated letter is read at a step of its own."
        )
    last = lesson.steps[-1]
    if last.token == EOS and len(lesson.steps) > size:
        st.caption(f"The last step writes `<eos>`: no letter is left to copy, and its row is not part of the "
                   f"alignment. Its heads read positions {', '.join(map(str, last.most_read))} most.")


# --- Generation ------------------------------------------------------------------------------------

def show_generation(view: WordView) -> None:
    lesson = view.lesson
    st.subheader("Writing the answer, one token at a time")
    st.markdown(
        "This is how the model really produces its answer. The encoder reads the word once. Then the decoder "
        "starts from `<bos>`, computes a probability for every token of its vocabulary, writes the most "
        "probable one (greedy decoding), appends it to its own input and runs again, until it writes `<eos>`. "
        "During training all steps ran in parallel on the true answer (teacher forcing); here each step sees "
        "only what the model itself wrote."
    )
    st.dataframe(view.steps, hide_index=True, key="dec_steps_table",
                 column_config={name: st.column_config.NumberColumn(format="%.6f")
                                for name in ("probability", "runner-up probability")})
    answer, expected = widgets.escape_markdown(lesson.answer), widgets.escape_markdown(lesson.expected)
    if lesson.correct:
        st.success(f"The model wrote *{answer}*, which is the true reversal of "
                   f"*{widgets.escape_markdown(lesson.word)}*.", icon=":material/check_circle:")
    else:
        st.warning(f"The model wrote *{answer}*, but the true reversal is *{expected}*.", icon=":material/cancel:")
    st.plotly_chart(view.figures["distribution"], key="dec_distribution_chart")
    widgets.download_csv(view.steps.set_index("step"), f"reverser_{lesson.word}_steps.csv", key="dec_steps_csv")


# --- The three families ------------------------------------------------------------------------------

@st.cache_resource(show_spinner="Counting parameters…")
def families_view():
    rows = families.model_table()
    table = pd.DataFrame(map(asdict, rows)).rename(columns={
        "name": "model", "encoder_layers": "encoder blocks", "decoder_layers": "decoder blocks",
        "width": "width D", "num_heads": "heads", "ff_width": "FF width", "vocab_size": "vocabulary",
        "parameters": "parameters (from the config)"})
    figure = figures.family_masks_figure(families.family_masks(), "Who may read whom (✓ allowed, ✗ masked)")
    return figure, table


def show_families() -> None:
    st.subheader("Three families of transformer")
    columns = st.columns(3)
    for column, text in zip(columns, FAMILY_TEXT.values()):
        column.markdown(text)
    figure, table = families_view()
    st.plotly_chart(figure, key="dec_family_masks_chart")
    st.caption("x: source (input) positions, y: target positions. In the encoder-decoder panel the dotted lines "
               "split it into its three attentions: x reads x (encoder, no mask), y reads x (cross-attention, "
               "no mask), y reads y (decoder, causal). The source never reads the target.")
    st.dataframe(table, hide_index=True, key="dec_family_table",
                 column_config={name: st.column_config.NumberColumn(format="localized")
                                for name in ("parameters (from the config)",)})
    st.caption("Parameter counts are computed from each configuration's shape numbers (the code is below). The "
               "project's tests check every one against the tensors of the module built from that configuration. "
               "GPT-2 and the models trained here reuse the token embeddings as their output layer, so that layer "
               "adds nothing.")


# --- The page ---------------------------------------------------------------------------------------

NEEDS_A_WORD = "This part runs the reverser on a word it can read: see the message above."


def on_the_word(show: Callable[[WordView], None]) -> Callable[[WordView | None], None]:
    """`show(view)`, or a note that the word above could not be read (view is None)."""
    def show_or_explain(view: WordView | None) -> None:
        if view is None:
            st.info(NEEDS_A_WORD, icon=":material/keyboard:")
        else:
            show(view)
    return show_or_explain


SECTIONS = {
    "Three attentions": on_the_word(show_attentions),
    "Writing the answer": on_the_word(show_generation),
    "Three families": lambda view: show_families(),
}


def page() -> None:
    ensure_entrypoint()  # a first deep link on a fresh server must still get the navigation and the sidebar
    st.title("Decoder & cross-attention")
    st.markdown(INTRO)
    try:
        pretrained = reverser()
    except ModelLoadError as error:
        st.error(f"The reverser could not be loaded: {widgets.escape_markdown(str(error))}", icon=":material/error:")
        pretrained = None
    view = None
    if pretrained is not None:
        describe_reverser(pretrained)
        checked = choose_word(pretrained.task)
        if checked.problem is None:
            view = word_view(checked.word)
    widgets.show_open_tab(SECTIONS, "dec_tab", view)
    widgets.show_source(
        seq2seq_lesson.reverse_word, EncoderDecoder.generate_greedy, DecoderLayer, families.family_masks,
        parameter_breakdown,
    )


page()
