"""What the encoder lesson says: its prose and formulas, kept apart from the widgets that show them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lessons.encoder.tables import Comparison, GrowthSummary


def intro(num_layers: int) -> str:
    return (
        "An encoder is one block repeated: every token's vector goes through self-attention (tokens read each "
        "other), then through a small feed-forward network (each token on its own), each step wrapped in a "
        "residual connection and a layer norm. This page follows the text in the sidebar through all "
        f"{num_layers} blocks of the loaded model. In BERT and MiniLM, block $l$ computes"
    )


BLOCK_FORMULA = (  # one line each: side by side they run past a phone's width
    r"\begin{gathered} h = \mathrm{LayerNorm}\big(x + \mathrm{MultiHead}(x)\big) \\ "
    r"x_{l+1} = \mathrm{LayerNorm}\big(h + \mathrm{FFN}(h)\big) \end{gathered}"
)
NEEDS_ENCODER = (
    "This lesson needs a BERT-family encoder that comes with its tokenizer. Leave the model field in "
    "the sidebar empty to use the embedded all-MiniLM-L6-v2."
)
NEEDS_TEXT = "Type a sentence in the sidebar (for example *time flies like an arrow*) to send it through the stack."
SOURCE_TITLE = "The code of the stack and of one block"

# ----- attention of every layer and head -------------------------------------------------------------------

LAYER_HELP = "Which of the stacked blocks to look inside, counted from 0."
HEAD_HELP = "Which head of the chosen layer, counted from 0."


def attention_intro(num_layers: int, num_heads: int) -> str:
    return (
        f"Every block has {num_heads} heads, each with its own attention map, so the model computes "
        f"{num_layers} × {num_heads} = {num_layers * num_heads} maps for this text. "
        "Row *t* of a map is how token *t* spreads its attention over all tokens. Pick a layer and a head to "
        "see that map in full below; it is framed in red in the overview."
    )


def pooled_caption(num_tokens: int, num_blocks: int, block_sizes: list[int]) -> str:
    sizes = " or ".join(map(str, block_sizes))
    return (
        f"The text has {num_tokens} tokens, so each small map is average-pooled to {num_blocks} × "
        f"{num_blocks}: a cell is the mean weight over a block of {sizes} query tokens × as many "
        "key tokens. The map below is not pooled."
    )


def window_help(num_tokens: int, window: int) -> str:
    return f"The text has {num_tokens} tokens; {window} rows are shown at a time."


# ----- hidden states ---------------------------------------------------------------------------------------

HIDDEN_STATES_INTRO = (
    "Two numbers summarise what the blocks do to one token's vector $h$: its length $\\lVert h\\rVert$, and "
    "how far it turns from one depth to the next, measured by the cosine of the angle between the two "
    "vectors (1: same direction, 0: unrelated)."
)
COSINE_FORMULA = r"\cos(h_l, h_m) = \frac{h_l \cdot h_m}{\lVert h_l\rVert\,\lVert h_m\rVert}"
COMPARISONS: dict[Comparison, str] = {"previous": "the depth before", "embeddings": "the embeddings"}


def least_similar(row: str, mean: float) -> str:
    return f"On this text the lowest mean over tokens is in the row “{row}”: {mean:.3f}."


# ----- one word in two contexts ----------------------------------------------------------------------------

WORD_INTRO = (
    "An embedding table gives a word the same vector wherever it appears; only attention can make it depend "
    "on its neighbours. In the two default sentences *flies* is first a verb, then a noun. Below is the "
    "cosine similarity of the word's vector in the two sentences at every depth: at the embeddings the two "
    "differ only if the word sits at different positions, and each block can pull them further apart."
)
SENTENCE_A, SENTENCE_B, WORD = "time flies like an arrow", "fruit flies like a banana", "flies"
NEEDS_WORD = "Type the word to follow (it must occur in both sentences)."
SEVERAL_PIECES = "The word splits into several word pieces: its vector is the mean of its pieces' vectors."
INSIDE_A_LONGER_WORD = "The word was found only inside a longer word; that word's pieces are compared."
SEVERAL_OCCURRENCES = "The word occurs more than once in a sentence; the first occurrence is used."


def empty_sentence(name: str) -> str:
    return f"Sentence {name} is empty: type a sentence that uses the word."


def word_not_in(name: str) -> str:
    return f"The word does not occur in sentence {name}. Check the spelling, or type a sentence that uses it."


def word_cut_from(name: str) -> str:
    return (
        f"The word occurs in sentence {name}, but none of its tokens reached the model "
        "(cut off by truncation, or nothing the tokenizer keeps)."
    )


# ----- where the layer norm sits ---------------------------------------------------------------------------

LAYER_NORM_INTRO = (
    "LayerNorm rescales a vector to mean 0 and variance 1 over its D numbers, then applies a learned "
    "scale γ and shift β. The original Transformer and BERT put it *after* each residual sum (post-LN); "
    "GPT-2 and most later models put it *before* each sublayer (pre-LN) and add one final LayerNorm."
)
POST_LN_FORMULA = r"h = \mathrm{LN}\big(x + \mathrm{Attn}(x)\big)\\ y = \mathrm{LN}\big(h + \mathrm{FFN}(h)\big)"
PRE_LN_FORMULA = r"h = x + \mathrm{Attn}\big(\mathrm{LN}(x)\big)\\ y = h + \mathrm{FFN}\big(\mathrm{LN}(h)\big)"
TRAINED_NORMS = (
    "The residual sums swing widely (the spikes), and every LayerNorm brings the vectors back to a "
    "similar length, block after block. That length is not √D: the learned γ and β set it."
)


def placement_heading(name: str, is_this_model: bool) -> str:
    return f"**{name}** (this model)" if is_this_model else f"**{name}**"


def unit_length(unit_norm: float) -> str:
    return (
        f"Without γ and β a LayerNorm output has length exactly $\\sqrt{{D}} = {unit_norm:.1f}$. So in post-LN "
        "the main path is pulled back to a fixed scale twice per block, while in pre-LN nothing ever "
        "normalises the main path: each block only adds to it."
    )


def layer_norms_caption(layer: int) -> str:
    return f"Layer {layer}: ‖h‖ of every token at each point of the block (from the trace)."


def demonstration_intro(num_layers: int, seed: int, num_tokens: int) -> str:
    return (
        f"The same freshly initialised stack of {num_layers} blocks (seed "
        f"{seed}, identical weights) is built twice, once pre-LN and once post-LN, and fed "
        f"this text's embeddings ({num_tokens} tokens)."
    )


def measured_growth(growth: GrowthSummary, num_layers: int) -> str:
    post_low, post_high = growth.post_range
    return (
        f"Measured: pre-LN grows from {growth.pre_start:.2f} to {growth.pre_end:.2f} "
        f"(×{growth.pre_ratio:.2f}) over {num_layers} blocks; post-LN sits at "
        f"{post_low:.2f}–{post_high:.2f} after every block. This is why a pre-LN stack "
        "ends with one LayerNorm of its own (the diamond), which brings the sum back to the √D scale."
    )


# ----- the feed-forward network ----------------------------------------------------------------------------

FEED_FORWARD_FORMULA = (  # one line each: side by side they run past a phone's width
    r"\begin{gathered} \mathrm{FFN}(x) = \mathrm{GELU}(xW_1 + b_1)\,W_2 + b_2 \\ "
    r"\mathrm{GELU}(z) = z\,\Phi(z) \end{gathered}"
)
NEURONS_HELP = "The neurons with the highest mean activation over this text's tokens."


def feed_forward_intro(width: int, ff_width: int) -> str:
    return (
        f"The feed-forward network widens every token's vector from {width} to {ff_width} "
        "numbers, applies GELU, and projects back. GELU lets positive inputs through almost unchanged and "
        "squashes negative ones towards 0 (never below −0.17), so an activation above 0 means the neuron fired."
    )


# ----- a classification head -------------------------------------------------------------------------------

CLASSIFIER_INTRO = (
    "A pretrained encoder is a *body*: it turns text into vectors. A task adds a *head*. To classify a whole "
    "text, BERT-style models read one vector: the last block's output at position 0, the [CLS] token, "
    "which attention lets gather from every other token. BERT first passes it through a *pooler*, a dense "
    "layer with tanh trained on next-sentence prediction. DistilBERT has no pooler (its classifier adds a dense "
    "layer and ReLU of its own, trained with the task); on a checkpoint without one, the head here reads "
    "[CLS] as it is. A linear layer then maps it to one score (logit) per label, and softmax turns the scores into "
    "probabilities."
)
CLASSIFIER_FORMULA = (  # three lines: on one they run past a phone's width
    r"\begin{gathered} s = \tanh(W_p\,h_{[\mathrm{CLS}]} + b_p) \\ "
    r"\mathrm{logits} = W s + b,\quad W\in\mathbb{R}^{K\times D} \\ "
    r"p = \mathrm{softmax}(\mathrm{logits}) \end{gathered}"
)
UNTRAINED_HEAD = (
    "This head is **untrained**: W and b are random (seed 0), so its probabilities say nothing about "
    "the text. Fine-tuning would train W and b (and usually the body) on labelled examples. What "
    "matters here are the shapes."
)
CLASSIFIER_CAPTION = (
    "The pooler's weights come from the checkpoint, and dropout before the head is off outside "
    "training. The function below computes what `SequenceClassifier.forward` does after its body, "
    "without changing the model."
)


def head_shapes(has_pooler: bool, width: int, num_labels: int, probability_sum: float) -> str:
    reads = "the pooler output s" if has_pooler else "h[CLS] itself (this checkpoint has no pooler)"
    return (
        f"The head reads {reads}. Shapes: h[CLS] ({width},) → s ({width},) → W ({num_labels}, "
        f"{width}) and b ({num_labels},) → logits ({num_labels},) → probabilities ({num_labels},), "
        f"summing to {probability_sum:.3f}."
    )


# ----- filling [MASK] --------------------------------------------------------------------------------------

FILL_MASK_INTRO = (
    "BERT learned its weights by filling gaps: in pre-training, 15 % of the tokens of each text were chosen, "
    "most of them (80 %) hidden behind a `[MASK]` token (the rest swapped for a random token or left as they "
    "were), and the model was scored on guessing them (Devlin et al., 2019, §3.1). Because "
    "the encoder reads the whole text at once, the guess uses the words on both sides of the gap. A small "
    "head does the guessing: one more dense layer on the masked position's final vector h, the activation, "
    "a LayerNorm, then a score for every word w of the vocabulary, by the token embedding table E itself "
    "(the table that turned words into vectors turns a vector back into words) plus a bias per word:"
)
FILL_MASK_FORMULA = (
    r"\begin{gathered} u = \mathrm{LayerNorm}\big(\mathrm{GELU}(W h_{[\mathrm{MASK}]} + b)\big) \\ "
    r"p(w) = \mathrm{softmax}\big(E\,u + b_{\mathrm{vocab}}\big)_w \end{gathered}"
)
FILL_TOP_K_HELP = "How many of the most probable words to show for each mask."
FILLED_TEXT_LABEL = "Your text with each mask replaced by its most probable word:"
FILL_MASK_TABLE_CAPTION = (
    "The probabilities are over the whole vocabulary, so the k shown need not add up to 1. A token that "
    "starts with ## continues a word (WordPiece); in RoBERTa's vocabulary, Ġ marks a space before the word."
)


def no_masked_lm_head(is_embedded: bool) -> str:
    which = (
        "The embedded all-MiniLM-L6-v2 was saved without its masked-language-model head (sentence-transformers "
        "keeps only the encoder body)"
        if is_embedded
        else "The sidebar's model was saved without its masked-language-model head"
    )
    return (
        f"{which}, so it cannot fill a mask. Checkpoints that keep the head: **bert-base-uncased** and "
        "**distilbert-base-uncased** (write `[MASK]` in the text), **roberta-base** (write `<mask>`). To load "
        "one, type its hub id (`bert-base-uncased`) or the path of a folder that holds it into the sidebar's "
        "model field. It must be on this machine already (`huggingface-cli download bert-base-uncased` on a "
        "machine with internet fills the Hugging Face cache), or the machine must reach the hub."
    )


def no_mask_in_text(mask_token: str) -> str:
    return (
        f"Your text has no `{mask_token}`. Write `{mask_token}` in the sidebar's text where a word should go, "
        f"for example: *The capital of France is* `{mask_token}`*.*"
    )


def masks_left_out(num_masks: int, shown: int) -> str:
    return (
        f"Your text has {num_masks} masks; the first {shown} are filled here, each guessed with all the others hidden."
    )


def mask_chart_title(number: int, position: int) -> str:
    return f"mask {number} (token {position}): the most probable words"


# ----- what the stack is made of ---------------------------------------------------------------------------

PARAMETERS_INTRO = (
    "Every parameter count follows from a handful of shape numbers: the vocabulary V, the positions P, the "
    "width D, the feed-forward width F and the number of blocks L. Per block, four D × D projections with "
    "biases (Q, K, V and the output), the two feed-forward layers, and two LayerNorms of γ and β:"
)
PARAMETERS_FORMULA = (
    r"\underbrace{4(D^2 + D)}_{\text{attention}} + \underbrace{2DF + F + D}_{\text{feed-forward}}"
    r" + \underbrace{4D}_{\text{layer norms}}"
)
ZOO_CAPTION = (
    "BERT-large computes to 335M, while it is often quoted as 340M; the same formula gives 109.5M for "
    "BERT-base (quoted as 110M). GPT-2's counts include no separate output layer: its LM head reuses "
    "the token embedding table."
)


def parameter_sum(total: int, in_millions: str) -> str:
    return f"Σ p.numel() over the loaded model's parameters: **{total:,}** ({in_millions})."


def mismatched_rows(components: list[str]) -> str:
    return (
        f"Rows that differ ({', '.join(components)}): the configuration cannot know these parts, "
        "which depend on the checkpoint (a fine-tuned classifier's head, for example)."
    )
