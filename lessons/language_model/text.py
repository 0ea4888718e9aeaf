"""The words of the language-model lesson: what a 2024 model keeps of the 2017 transformer, and what changed.

Sources a reader can find: Vaswani et al., "Attention Is All You Need" (2017); Zhang & Sennrich, "Root Mean
Square Layer Normalization" (2019); Su et al., "RoFormer" (2021, rotary positions); Ainslie et al., "GQA" (2023);
Shazeer, "GLU Variants Improve Transformer" (2020); Holtzman et al., "The Curious Case of Neural Text
Degeneration" (2019, top-p); Allal et al., "SmolLM2" (2025); Gu et al., "When Attention Sink Emerges in Language
Models" (2024); Olsson et al., "In-context Learning and Induction Heads" (2022); nostalgebraist, "interpreting
GPT: the logit lens" (2020).
"""

from __future__ import annotations

from lessons.common.attention_sinks import SINK_THRESHOLD
from lessons.common.llm.readable import SHOWN_SPACE, readable_piece
from lessons.language_model.heads import COPY_LENGTH, RANDOM_TOKENS
from lessons.language_model.logit_lens import POSITIONS
from lessons.language_model.writing import MAX_NEW_TOKENS

INTRO = """
Every lesson so far took the transformer of *Attention Is All You Need* apart. This one runs a real, recent
language model built from the same parts: **SmolLM2-135M-Instruct** (Hugging Face, 2024), here loaded into this
app's own `anatomy` code. It is a decoder only, like GPT: 30 blocks of causal self-attention and feed-forward,
trained to predict the next token of trillions of tokens of text, then tuned to answer in a chat.
"""

WHAT_CHANGED = """
**What changed since 2017.** A block is still attention, then a feed-forward network, each with a residual
connection, but where the norm sits moved and each part got simpler or cheaper:

- **Pre-norm** instead of post-norm: the paper normalised each residual sum, `x = norm(x + attention(x))`
  (lesson 6 compares the two). SmolLM2, like GPT-2 and most models since, normalises what enters each sublayer
  and leaves the residual path alone: `x = x + attention(norm(x))`, then `x = x + feed_forward(norm(x))`, and
  one last norm after the 30th block.
- **RMSNorm** instead of LayerNorm: each vector is divided by its root mean square and scaled; no mean is
  subtracted and there is no bias. Fewer operations, and it trains as well.
- **Rotary positions** instead of a table of sine waves added to the embeddings: inside attention, each pair
  of coordinates of a query and a key is turned by an angle proportional to its position, so that their dot
  product depends on how far apart the two tokens are.
- **Grouped-query attention**: 9 query heads, but only 3 key heads and 3 value heads; each key/value head is
  shared by 3 query heads. The attention maps are still one per query head (9 per layer); what shrinks is the
  memory for keys and values kept while writing (the KV cache), to a third.
- **SwiGLU** feed-forward: `down(silu(gate(x)) · up(x))`, a gate that decides, coordinate by coordinate, how
  much of `up(x)` passes, instead of one ReLU. (The checkpoint's names; in the code below `up` is `expand` and
  `down` is `contract`, as in every other model here.)
- **No biases** on any projection, and **tied embeddings**: the one table that turns token ids into vectors
  also scores every vocabulary token as the next one.
- **4-bit weights**: the file stores every matrix of the blocks quantized to 4 bits (llama.cpp's Q4_1: groups
  of 32 numbers sharing one scale and one offset), the embedding table in 8 bits and the norms' weights as
  they are: 98 MB instead of 540 MB. They are dequantized to 32-bit floats when loaded, so the numbers here
  are those of the quantized model, a little off from the original's.
"""

MODEL_FACTS = (
    "{layers} layers · {heads} query heads sharing {kv_heads} key/value heads · width {width} · "
    "feed-forward width {ff_width} · vocabulary {vocabulary:,} · trained for a window of {window:,} tokens · "
    "{parameters:,} parameters"
)

TOKENS = f"""
#### Your text as SmolLM2's tokens
SmolLM2 cuts text with **byte-level BPE**: the text's UTF-8 bytes are merged, pair by pair, into pieces seen
often in training. A piece that starts with a space keeps the space (shown as `{SHOWN_SPACE}`; the vocabulary itself
writes it `Ġ`), so `{readable_piece("ĠFrance")}` and `France` are two different tokens. A character the vocabulary
lacks is split into its bytes (shown as `<F0>`), so no text is ever unknown.
"""

NEXT_TOKEN = """
The last position's output vector, scored against every one of the 49,152 vocabulary rows and put through a
softmax, is the model's guess at the **next token**. Try *The capital of France is* in the sidebar.
"""

WRITING = f"""
To write, the model takes one token, appends it, and guesses again. **Greedy** decoding always takes the most
probable token. **Sampling** draws one at random instead: the *temperature* divides the scores first (below 1
sharpens the distribution, above 1 flattens it), *top-k* keeps only the k best tokens and *top-p* the fewest best
tokens whose probabilities reach p. A seed makes the draws repeatable. At most {MAX_NEW_TOKENS} tokens are written,
and writing stops early where the model ends its turn, as its chat answers do.

The text is read once; after that each step feeds only the newest token, whose query attends to the keys and
values of all earlier tokens, kept from earlier steps in the **KV cache** instead of computed again.
"""

PAST_END_OF_TURN = "Keep writing past the end of its turn"
PAST_END_OF_TURN_HELP = (
    "SmolLM2 was tuned on chats in which every message ends with the special token <|im_end|>. When it writes "
    "that token it has finished its turn, so writing stops there, as a chat would. Turn this on to see what the "
    "model writes if it is made to go on."
)


def end_of_turn(step: int, end_token: str, went_on: bool) -> str:
    """Where the model closed its turn: what that token is, and whether writing stopped there."""
    what = (
        f"At step {step} SmolLM2 wrote `{end_token}` (row {step} of the table below, marked as special). It is "
        "not a word: it is the token that closes a turn in the chat format SmolLM2 was tuned on, where every "
        "message ends with it."
    )
    if went_on:
        return (
            f"{what} A chat would have stopped there; everything after it is the model made to go on, and it "
            "starts a new turn of its own."
        )
    return f"{what} Its turn is over, so writing stopped there, as a chat does. *{PAST_END_OF_TURN}* shows the rest."


ATTENTION = """
Each query head's causal attention over your text: row *t* is how the token at position *t* spreads its
attention over itself and the tokens before it (the softmax of one row of QKᵀ/√d_head). Everything right of the
diagonal is zero: the mask. Query heads 0–2 share key head 0, heads 3–5 key head 1, heads 6–8 key head 2.
From about layer 3 on, most heads put a third or more of their weight, often nearly all of it, on the very
first token: a resting place when nothing in the text matters to them (an "attention sink"). Compare layer 0
with layer 18 on a sentence of twenty words.
"""


def whole_map_caption(num_tokens: int, block: int, window: range) -> str:
    return (
        f"The whole map of {num_tokens:,} tokens, shrunk to fit: each cell is the mean weight inside a block of "
        f"{block} queries × {block} keys. The frame is the window below, positions {window.start}–"
        f"{window.stop - 1}, drawn there at full resolution, one token per cell. Move it to any place that "
        "stands out here."
    )


CHAT = """
A chat model reads a conversation as one text, laid out by its **chat template** (stored in the model's file):
each message between the special tokens `<|im_start|>` and `<|im_end|>`, after its role. The template adds a
system message of its own, and ends with `<|im_start|>assistant`, so the most likely next text is an answer.
The special tokens are single tokens that no typed text produces... unless it spells them out exactly.
"""

SINKS = f"""
**Attention sinks.** Many heads of a trained model give most of their attention to the very first token,
whatever it is. Gu et al. (2024, *When Attention Sink Emerges in Language Models*) measure it so that models can
be compared: the **importance** of position *k* to a head is the weight A[i, k] averaged over every query
*i ≥ k* that can see it, and a head counts as a **sink** when the first token's importance exceeds
ε = {SINK_THRESHOLD}; the **sink rate** is the share of the model's query heads that do. Below, every head of
SmolLM2 on your text, and on {RANDOM_TOKENS} random tokens (drawn with a fixed seed), which mean nothing: a sink
is not about the words. On a short text the number runs high: the first query can read only the first token,
so it alone gives it 1/T of the average.
"""

SINK_EXPERIMENT = """
**Take a layer's sink away.** Run your text again with one layer's attention changed: every row (but the
first, which has nothing else to read) gives the first token nothing and is renormalised over the other
tokens. The rest of the model runs as always. If the sink were idle weight, nothing would change; the loss
(the mean of −log p over every token the model could have predicted) says how much the model relied on it.
"""

INDUCTION = f"""
**Induction heads** (Olsson et al. 2022, *In-context Learning and Induction Heads*) complete patterns seen
earlier in the context: after *… A B … A*, they look at the *B* that followed *A* last time, and the model
says *B*. The standard test: {COPY_LENGTH} random tokens (a fixed seed), then the same {COPY_LENGTH} again. On
the first copy nothing can be predicted; on the second, everything can, by copying. A head's **induction
score** is its mean weight from each token of the second copy to the token right after that token's first
occurrence: the diagonal of its map {COPY_LENGTH} − 1 places left of the main one (as TransformerLens computes it).
**Previous-token heads** (the diagonal just left of the main one) and **duplicate-token heads** (the earlier copy
of the token itself) are scored on their own diagonals of the same maps: induction is built from a
previous-token head in an earlier layer.
"""

INDUCTION_ABLATION = """
**Switch them off.** The same sequence again, with the five best induction heads contributing nothing (their
outputs zeroed before W_O). The first copy barely notices; the second copy becomes nearly as surprising as
the first.
"""

LOGIT_LENS = f"""
**The logit lens** (nostalgebraist 2020, *interpreting GPT: the logit lens*): the model only guesses at the end,
but every layer's output lives in the same residual stream, so the model's own ending (the final RMSNorm and
the tied output matrix) can read a guess out of each of them. The table shows, for the last {POSITIONS}
positions of your text (or those before the position you pick), the best next token after every layer with
its probability; the chart how far each layer's guess is from the final one (the KL divergence, in nats: 0
once they agree, and exactly 0 at the last layer, whose output is what the model's head reads). Depth 0 is
the embeddings themselves: with tied embeddings, the token's own row scores best against itself, so the
lens there mostly "predicts" the token already read.
"""

SIDEBAR_MODEL = (
    "This page always runs SmolLM2 on the sidebar's **Text to study**; the sidebar's **Model** is the one the "
    "other lessons use. Name SmolLM2-135M-Instruct there to see its heads in the causal-masking lesson too."
)

EMPTY_TEXT = "Type a text in the sidebar's **Text to study** box to see how SmolLM2 reads it."
EMPTY_MESSAGE = "Type a message to see it laid out by the chat template."


def cut_notice(untruncated: int, kept: int, positions: int) -> str:
    """Why a long text was cut: the model's own limit (`positions`), or this server's lower one."""
    if kept >= positions:
        return (
            f"The text makes {untruncated:,} tokens; SmolLM2 reads at most {positions:,}, so this page reads the "
            f"first {kept:,}."
        )
    return (
        f"The text makes {untruncated:,} tokens; this page reads the first {kept:,}. SmolLM2 could read "
        f"{positions:,}, but this server stops at {kept:,} so that every view answers in seconds (on a CUDA GPU "
        "the lessons read all the model can, unless the host sets a lower cap)."
    )


def head_group(head: int, heads: int, kv_heads: int) -> str:
    group = heads // kv_heads
    first = (head // group) * group
    return (
        f"Query head {head} shares its keys and values with query heads {first}–{first + group - 1} "
        f"(key/value head {head // group})."
    )
