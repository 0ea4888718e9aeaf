"""What the causal-masking lesson says: its prose and formulas, apart from the widgets that show them."""

WHY_MASK = r"""
A decoder such as GPT writes text one token at a time, each new token chosen from the ones already
written. It learns this from whole sentences: at every position it is asked to predict the token that
comes *next*. If the token at position *t* could attend to position *t* + 1, that answer would be sitting
in its own input. The model would learn to copy it instead of learning language, and at generation time,
when the future does not exist yet, it would have nothing to copy.

The **causal mask** closes that door. Each query may attend to its own position and to the ones before
it, never to the ones after. The mask works inside the softmax: just before each row of scores is
normalised, the forbidden entries are replaced by −∞. Since $e^{-\infty} = 0$, those keys get a weight of
exactly zero, and the allowed weights still add up to 1. Because the whole matrix is masked at once, one forward
pass trains all *T* next-token predictions in parallel, each one seeing exactly what it would see when
generating.
"""

MASK_FORMULA = (  # two lines: side by side they run past the right edge of a tablet (768 px)
    r"\begin{gathered} "
    r"\operatorname{weights} = \operatorname{softmax}\!\left(\frac{QK^{\top}}{\sqrt{d_k}} + M\right) \\ "
    r"M_{ts} = \begin{cases} 0 & s \le t \ \text{(the past and the token itself)}\\"
    r" -\infty & s > t \ \text{(the future)} \end{cases} \end{gathered}"
)

ENCODER_HONESTY = (
    "The model here (by default all-MiniLM-L6-v2, a BERT-style **encoder**) was trained **without** a causal "
    "mask: its heads learned to read the whole sentence in both directions. This part applies the mask to "
    "the scores one of its heads computes, to show what the mask does to them. It is not how a trained "
    "decoder attends: a decoder's heads learned their scores knowing that the future was hidden (the letter "
    "sorter further down is one)."
)

PADDING_TEXT = (
    "Sentences in a batch must have the same length, so the shorter ones are filled with [PAD] tokens. "
    "A **padding mask** hides those keys from every query: the same −∞ trick, applied to whole columns "
    "instead of a triangle. An encoder like BERT uses only this one; a decoder uses the causal mask, plus "
    "padding when it batches. Below: the same head on the same text under each mask, on one colour scale."
)

THREE_MASKS_NEED_AN_ENCODER = (
    "This comparison lifts the mask from a head, then pads the text: it needs an encoder, whose heads were "
    "trained to read the whole sentence. The model in the sidebar is a decoder trained under the causal mask, "
    "so without it its heads would compute weights they never learned to use. Clear the **Model** box in the "
    "sidebar to see the comparison on the embedded all-MiniLM-L6-v2."
)

SORTER_INTRO = """
The encoder above was never trained with a mask. This one was. It is a GPT-2-shaped decoder (2 layers ×
2 heads, width 64) trained by this app to sort the letters of a word: it reads `<bos>`, the word and `=`,
then writes the letters in alphabetical order and a closing `<eos>`, **one token at a time**. At every step
it runs on everything it has read so far, takes the most probable next token (greedy decoding), appends it,
and runs again. Type any word of 3 to 8 letters.
"""

HEADS_TEXT = """
Each panel is one head of the last step's forward pass, on everything the model had read by then. Every
cell right of the orange edge is a key in the query's future, and every one of them is exactly 0: the mask
at work. What is left is the algorithm. In **layer 1**, both heads look back into the scrambled word, and at
most answer steps their strongest weight sits on a copy of the very letter the model writes next: the
smallest letter it has not written yet (on 200 held-out words, at 93 % of the steps for head 0 and 82 % for
head 1; the table counts your word). **Layer 0** spreads its weight more widely, over the word and the
markers `<bos>` and `=`; what it computes for layer 1 is harder to read from the weights alone.
"""

CHEATER_INTRO = """
The **cheater** is the same network, trained on the same words from the same seeds, with one line changed:
no causal mask. In training, the whole true sequence sits in its input (*teacher forcing*), so position *t*
can simply read the token at *t* + 1, the one it is asked to predict. It learned to do exactly that, and
never learned to sort. Below, on your word: what it writes on its own, and where it looks when it is handed
the true answer.
"""

END_OF_WORD_TEXT = (
    "In training it rarely had to guess there: words were padded to the longest of their batch, so a shorter "
    "word's `<eos>` sat in the input too, one position ahead, where the cheater could read it (on whole "
    "batches its loss is thousands of times below the sorter's). Only the longest words, 8 letters, end "
    "where nothing follows, and their `<eos>` it learned from the position alone. Wherever there is no future "
    "to copy, as in every step of generation, the cheater is lost."
)

LESSON_TEXT = """
**The mask is why training matches generation.** Training scores every position of a true sequence in one
pass; generation produces one position at a time, and the positions after it do not exist yet. With the
mask, each position in training sees exactly what it will see when generating, so a low training loss
means good answers. Without it, the loss measures how well the model copies from the future, a skill that
is worthless when the future has not been written.
"""

LANGUAGE_MODEL_TEXT = """
The model in the sidebar is a decoder (GPT-2-style, or Llama-style such as SmolLM2), trained with the causal
mask, so its heads are causal by construction: each token attends only to itself and to the tokens before it.
It reads at most {cap:,} tokens here. Its tokenizer is
**byte-level BPE**: the text is taken as bytes, and each of the 256 byte values is written as a printable
character so that the vocabulary stays readable. The space byte is written **Ġ** (and a newline **Ċ**):
`Ġflies` is " flies" with its leading space, so most words carry the space in front of them. A character
of several bytes (an emoji, most non-Latin letters) may be split over tokens that each stand for part of
it; alone, such a token shows as �.
"""


WORKED_EXAMPLE = (
    "Four queries and four keys with made-up scores, so that every step can be followed by hand. Its rows are "
    "labelled with the words of *I love Apple iPhones*, the sentence of the attention lesson, to make the figures "
    "easier to read: row *t* is the token at position *t* asking which tokens it may read."
)


def worked_example_rows(weights) -> str:
    """What to notice in the softmax rows of the worked example, with its own numbers."""
    last_row = ", ".join(f"{value:.3f}" for value in weights[3])
    return (
        "Every row sums to 1 and every cell above the diagonal is exactly 0. The first row is [1, 0, 0, 0]: the "
        "first token has nothing but itself to look at, whatever its score. The second row keeps two scores, 0.1 "
        f"and 0.3, and the softmax makes them {weights[1, 0]:.3f} and {weights[1, 1]:.3f}: scores this close give "
        "almost equal weights. The last row keeps all four scores, 0.4, 0.1, 0.2 and 0.3, and the softmax "
        f"flattens them to {last_row}."
    )
