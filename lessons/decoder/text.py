"""What the decoder lesson says: its prose and formulas, kept apart from the widgets that show them.

Whatever came from the user or the model (a word, an answer) is escaped here, where it meets markdown.
"""

from __future__ import annotations

from collections.abc import Sequence

from anatomy.config import Seq2SeqConfig
from lessons.common.safe_text import escape_markdown
from lessons.common.words import counted
from lessons.decoder import families

INTRO = """
The original Transformer of *Attention Is All You Need* was built for translation, and it has two halves.
An **encoder** reads the whole source sentence at once. A **decoder** then writes the target sentence one
token at a time, and at every step it may look back at the source through a third kind of attention,
**cross-attention**.

This page runs a small encoder-decoder that was trained in this project on one job: write a word backwards
(*hello* → *olleh*). The job is simple, but the only way to do it is to fetch the right source letter at
every step, so the cross-attention weights show the algorithm the model learned.
"""


def reverser_failed(error: str) -> str:
    return f"The reverser could not be loaded: {escape_markdown(error)}"


def reverser_description(
    config: Seq2SeqConfig, parameters: int, vocabulary_size: int, alphabet: str, special_tokens: Sequence[str]
) -> str:
    return (
        f"The reverser has {counted(config.num_layers, 'encoder block')} and "
        f"{counted(config.num_decoder_layers, 'decoder block')}, {config.num_heads} heads of width {config.head_width} "
        f"in every attention, model width {config.width}, {parameters:,} parameters. Its vocabulary has "
        f"{vocabulary_size} tokens: the letters {alphabet[0]}–{alphabet[-1]} and the special tokens "
        + ", ".join(f"`{token}`" for token in special_tokens)
        + " (`=` is used only by the sorter)."
    )


# ----- the word -----------------------------------------------------------------------------------------

DEFAULT_WORD = "decoder"


def word_label(min_length: int, max_length: int) -> str:
    return f"A word to reverse ({min_length} to {max_length} letters a–z)"


def word_requirement(min_length: int, max_length: int) -> str:
    """Why a link's word was not used, in the words of `linked`'s note: "cannot be used here (…)"."""
    return f"the reverser reads words of {min_length} to {max_length} letters a–z"


def lowercased(word: str) -> str:
    return f"The reverser knows only small letters, so it reads *{escape_markdown(word)}*."


NEEDS_A_WORD = "This part runs the reverser on a word it can read: see the message above."


# ----- the three attentions -----------------------------------------------------------------------------


def attentions_intro(source_letters: int, decoder_positions: int) -> str:
    return (
        f"The source has S = {source_letters} letters. The decoder's input has T = {decoder_positions} positions: "
        "the start token `<bos>` and every token it wrote except the last. Rows read, columns are read; hover "
        "over a cell for its exact weight."
    )


ENCODER_SELF_ATTENTION = (
    "**1 · Encoder self-attention.** The source letters read each other in both directions, with no mask "
    "(nothing in the source is hidden from anything else). The task does not dictate what these weights "
    "should be: the model learned whatever mixing of the letters helped the decoder. Compare how spread "
    "out they are with the sharp cells of the cross-attention below."
)


def decoder_self_attention(weight_on_self: Sequence[float]) -> str:
    return (
        "**2 · Decoder masked self-attention.** Position t reads positions 0 … t of what the decoder has "
        "written; every cell above the diagonal is exactly 0, the work of the causal mask. The share of its "
        "weight a position keeps on itself (the diagonal), averaged over positions: "
        + ", ".join(f"{weight:.2f} in head {head}" for head, weight in enumerate(weight_on_self))
        + "."
    )


CROSS_TEXT = r"""
In cross-attention the **queries come from the decoder**: each target position asks "what do I need
now?". The **keys and values come from the encoder's output**: one per source letter, computed once,
before the first output token. That is why the matrix is **rectangular**: T target rows against S source
columns. It needs **no causal mask**: the mask exists to hide tokens that have not been written yet, and the
source is complete before decoding starts, so every step may read all of it. (When sentences of different
lengths share a batch, a padding mask still hides the source's [PAD] columns.)
"""
CROSS_ATTENTION = "**3 · Cross-attention.**" + CROSS_TEXT

CROSS_FORMULA = (  # three lines: on one they run past a tablet's width
    r"\begin{gathered} Q = H_{\text{dec}}\,W_Q \in \mathbb{R}^{T\times d_k} \\ "
    r"K = H_{\text{enc}}\,W_K,\ V = H_{\text{enc}}\,W_V \in \mathbb{R}^{S\times d_k} \\ "
    r"\operatorname{softmax}\!\Big(\frac{QK^{\top}}{\sqrt{d_k}}\Big) \in \mathbb{R}^{T\times S} \end{gathered}"
)


def alignment(mirrored_hits: Sequence[int], letter_steps: int, weight_on_mirror: Sequence[float]) -> str:
    hits = ", ".join(f"{count} of {letter_steps} in head {head}" for head, count in enumerate(mirrored_hits))
    return (
        "The outlined cells are each step's most-read source letter. To reverse a word, letter step t must "
        f"copy source position S − 1 − t: the anti-diagonal. Letter steps whose most-read letter is exactly that "
        f"mirrored one: {hits}. The average weight a letter step puts on its mirrored letter: "
        + ", ".join(f"{weight:.3f} in head {head}" for head, weight in enumerate(weight_on_mirror))
        + "."
    )


REPEATED_LETTERS = (
    "This word repeats a letter. Cross-attention does not search for a matching letter: each step reads "
    "one position, so every copy of a repeated letter is read at a step of its own."
)


def end_of_word_step(most_read: Sequence[int]) -> str:
    return (
        f"The last step writes `<eos>`: no letter is left to copy, and its row is not part of the "
        f"alignment. Its heads read positions {', '.join(map(str, most_read))} most."
    )


# ----- generation ---------------------------------------------------------------------------------------

GENERATION = (
    "This is how the model really produces its answer. The encoder reads the word once. Then the decoder "
    "starts from `<bos>`, computes a probability for every token of its vocabulary, writes the most "
    "probable one (greedy decoding), appends it to its own input and runs again, until it writes `<eos>`. "
    "During training all steps ran in parallel on the true answer (teacher forcing); here each step sees "
    "only what the model itself wrote."
)


def right_answer(answer: str, word: str) -> str:
    return f"The model wrote *{escape_markdown(answer)}*, which is the true reversal of *{escape_markdown(word)}*."


def wrong_answer(answer: str, expected: str) -> str:
    return f"The model wrote *{escape_markdown(answer)}*, but the true reversal is *{escape_markdown(expected)}*."


# ----- the three families -------------------------------------------------------------------------------

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
FAMILY_MASKS_TITLE = "Who may read whom (purple ✓ allowed, grey ✗ masked)"
FAMILY_MASKS = (
    "x: source (input) positions, y: target positions. In the encoder-decoder panel the dotted lines split it "
    "into its three attentions: x reads x (encoder, no mask), y reads x (cross-attention, no mask), y reads y "
    "(decoder, causal). The source never reads the target."
)
PARAMETER_COUNTS = (
    "Parameter counts are computed from each configuration's shape numbers (the code is below). The project's "
    "tests check every one against the tensors of the module built from that configuration. GPT-2 and the "
    "models trained here reuse the token embeddings as their output layer, so that layer adds nothing."
)
