"""The language-model lesson's exercises on the learner's text: which token SmolLM2 writes next, how much of
one head's attention rests on the first token (the "attention sink"), how many of its heads are sink heads, from
which layer on the logit lens shows the final guess, and how well a repeated copy of random tokens is predicted.
All read the page's own cached runs of SmolLM2 (`PageRuns`), and only the open exercise asks for one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import Tensor

from anatomy.attention import AttentionTrace
from lessons.common import attention_sinks
from lessons.common.exercises import Exercise, Offer, options_around
from lessons.common.llm import readable
from lessons.common.llm.readable import ModelTokens
from lessons.common.llm.smollm2 import ChatModel
from lessons.common.safe_text import code_span, visible
from lessons.common.windows import crop, focus_window
from lessons.language_model import figures, heads, logit_lens, reading
from lessons.language_model.reading import Candidates

NEXT_TOKEN_OPTIONS = 5  # the model's five best guesses: enough to make the learner think, few enough to read
ENDING_TOKENS = 8  # the question quotes the text's last tokens, the ones the guess follows
SINK_LAYER, SINK_HEAD = 18, 0  # a head whose share of the first token moves with the text (about 0.5 to 0.9)
SINK_TOLERANCE = 0.05
SINK_RATE_TOLERANCE = 10.0  # percentage points: the question is whether most heads are sinks, not how many
COPY_LOSS_TOLERANCE = 1.0  # nats per token: the question is whether the second copy is easy, not the decimals


@dataclass(frozen=True)
class PageRuns:
    """The page's cached runs of SmolLM2 on the current text; an exercise calls only the one it needs."""

    candidates: Callable[[], Candidates]  # the most probable next tokens, best first
    attention: Callable[[int], AttentionTrace]  # layer -> that layer's attention (any head's map on demand)
    lens: Callable[[], logit_lens.LogitLens]  # the logit lens at the text's last positions
    induction: Callable[[], heads.InductionTest]  # random tokens repeated twice (the same for every text)
    sinks: Callable[[], Tensor]  # (L, H) every head's first-token importance on the text (the sinks tab's scan)
    sinks_on_random_tokens: Callable[[], Tensor]  # (L, H) the same on heads.RANDOM_TOKENS random tokens


def _ending(chat: ChatModel, tokens: ModelTokens) -> str:
    """The last tokens the model reads, as text, escaped for the question ("…" when there are more before)."""
    ending = chat.tokenizer.decode(list(tokens.ids[-ENDING_TOKENS:]), skip_special_tokens=False)
    # Newlines and tabs as the token table shows them (written as U+000A, they would read as code).
    ending = ending.replace("\n", readable.SHOWN_NEWLINE).replace("\t", readable.SHOWN_TAB)
    return ("…" if len(tokens) > ENDING_TOKENS else "") + visible(ending)


def _best_distinct(chat: ChatModel, found: Candidates) -> list[tuple[str, float]]:
    """The best candidates as (readable piece, probability), best first, no piece twice (two ids could read the
    same once their bytes are shown as text)."""
    best: dict[str, float] = {}
    for token_id, probability in zip(found.ids, found.probabilities):
        best.setdefault(readable.piece_of(chat, token_id), probability)
    return list(best.items())[:NEXT_TOKEN_OPTIONS]


def _alphabetical(piece: str) -> tuple[str, str]:
    """Options in a neutral order: alphabetical, ignoring case and the space mark `·`."""
    return piece.lstrip(readable.SHOWN_SPACE).casefold(), piece


def next_token(chat: ChatModel, tokens: ModelTokens | None, runs: PageRuns) -> Exercise | None:
    """Which of its five best guesses SmolLM2 writes next, greedy: the most probable one."""
    if tokens is None:
        return None
    best = _best_distinct(chat, runs.candidates())
    pieces, probabilities = [piece for piece, _ in best], [probability for _, probability in best]
    answer = pieces[0]
    others = ", ".join(f"{code_span(piece)} {probability:.3f}" for piece, probability in best[1:])
    vocabulary = reading.decoder_of(chat).config.vocab_size
    return Exercise(
        question=(
            f"SmolLM2 has read your text up to “{_ending(chat, tokens)}”. Writing greedily, which token does it "
            f"write next? These are its {len(pieces)} best guesses, in alphabetical order (`·` is a space at the "
            "start of a token)."
        ),
        answer=answer,
        options=tuple(sorted(pieces, key=_alphabetical)),
        explanation=(
            f"SmolLM2 gives {code_span(answer)} a probability of {probabilities[0]:.3f}, more than any other of its "
            f"{vocabulary:,} tokens, and greedy decoding always writes the most probable token. The others: "
            f"{others or 'none'}. Together these {len(pieces)} take {sum(probabilities):.1%} of the probability. "
            "The guess comes from the last position alone: its output vector, scored against every row of the "
            "token table and put through a softmax."
        ),
        figure=lambda: figures.next_token_figure(
            pieces, probabilities, f"SmolLM2's {len(pieces)} best guesses, the one it writes marked", marked=0
        ),
    )


def _sink_or_not(share: float, even: float) -> str:
    if share >= 2 * even:
        return f"This head gives it {share / even:.1f} times that."
    return "On this text this head gives it less than twice that: it reads the other tokens more."


def first_token_share(chat: ChatModel, tokens: ModelTokens | None, runs: PageRuns) -> Exercise | None:
    """The share of its attention the average query of one head gives the first token of the text."""
    if tokens is None or len(tokens) < 2:
        return None
    head_map = runs.attention(SINK_LAYER).head_weights(SINK_HEAD)[0]  # (T, T) on the model's device
    share = reading.first_token_share(head_map)
    even = reading.even_first_token_share(len(tokens))
    weights = head_map[1:, 0]  # (T − 1,) what each query after the first gives the first token
    most, least = int(weights.argmax()) + 1, int(weights.argmin()) + 1
    first = code_span(tokens.pieces[0])
    window = focus_window(len(tokens), 0)
    return Exercise(
        question=(
            f"In layer {SINK_LAYER}, query head {SINK_HEAD}, each token of your text after the first spreads its "
            f"attention over itself and the tokens before it. Averaged over those {len(tokens) - 1} tokens, what "
            f"share of its attention goes to the very first token, {first}? Two decimals; answers within "
            f"±{SINK_TOLERANCE:g} count."
        ),
        answer=share,
        decimals=2,
        tolerance=SINK_TOLERANCE,
        explanation=(
            f"On average **{share:.2f}** of each query's attention goes to {first}, from {float(weights.min()):.2f} "
            f"(position {least}) to {float(weights.max()):.2f} (position {most}). Spread evenly, a query at "
            f"position t would give it 1/(t + 1), {even:.2f} on average over your text. {_sink_or_not(share, even)} "
            "Many heads of SmolLM2 park their weight on the first token whatever it says: an **attention sink**, "
            "a resting place for a head that finds nothing in the text worth reading. The softmax must give out a "
            "whole 1, and the first token, seen by every query, is where the model learned to put what it does "
            "not need."
        ),
        figure=lambda: figures.first_token_figure(
            crop(head_map, window, window).cpu(),
            [tokens.pieces[position] for position in window],
            window,
            f"Layer {SINK_LAYER}, head {SINK_HEAD}: the first token's column, framed, averages {share:.2f}"
            + (f" (the first {len(window)} of {len(tokens)} tokens shown)" if len(window) < len(tokens) else ""),
        ),
    )


def _how_short(num_tokens: int) -> str:
    """Why a short text's rate says little: an even spread alone would clear ε there."""
    even = heads.even_importance(num_tokens)
    if even <= attention_sinks.SINK_THRESHOLD:
        return f"A head spreading its weight evenly would give it {even:.2f}, well under ε: these heads chose it."
    return (
        f"Careful on a text this short: a head spreading its weight evenly would give it {even:.2f} already, above "
        "ε (the first query can read nothing else), so the random tokens are the fairer measure."
    )


def sink_rate(chat: ChatModel, tokens: ModelTokens | None, runs: PageRuns) -> Exercise | None:
    """The share of SmolLM2's query heads that are sink heads on the learner's text (Gu et al. 2024)."""
    if tokens is None or len(tokens) < 2:
        return None  # one token: every query reads only it, every head is a sink, and there is nothing to predict
    on_text, on_random = runs.sinks(), runs.sinks_on_random_tokens()  # (L, H) each
    num_layers, num_heads = on_text.shape
    total = on_text.numel()
    count, random_count = attention_sinks.sink_count(on_text), attention_sinks.sink_count(on_random)
    rate, random_rate = attention_sinks.sink_rate(on_text), attention_sinks.sink_rate(on_random)
    first = code_span(tokens.pieces[0])
    epsilon = attention_sinks.SINK_THRESHOLD
    return Exercise(
        question=(
            f"SmolLM2 has {num_layers} layers of {num_heads} query heads: {total} heads. A head's *importance* of "
            f"the first token, {first}, is the weight its queries give it, averaged over all {len(tokens)} queries "
            f"of your text; Gu et al. (2024) call the head a **sink head** when that exceeds ε = "
            f"{epsilon}. What percentage of the {total} heads are sink heads on your text? Answers "
            f"within ±{SINK_RATE_TOLERANCE:g} count."
        ),
        answer=100 * rate,
        tolerance=SINK_RATE_TOLERANCE,
        explanation=(
            f"**{count}** of the {total} heads give {first} an importance above {epsilon}: a sink rate "
            f"of {rate:.1%}. On {heads.RANDOM_TOKENS} random tokens, where nothing is worth reading, {random_count} "
            f"do ({random_rate:.1%}). {_how_short(len(tokens))} A sink head parks its weight on the first token "
            "whatever it says: the softmax must give out a whole 1, and a head that finds nothing in the text to "
            "read puts it where every query can see it. The tab's experiment takes one layer's sink away and shows "
            "what that costs."
        ),
        figure=lambda: figures.layer_head_figure(
            on_text,
            f"Your text: {count} of {total} heads give the first token more than {epsilon}",
            "first-token importance",
        ),
    )


def _layer_named(depth: int) -> str:
    return "the embeddings" if depth == 0 else f"layer {depth - 1}"


def lens_layer(chat: ChatModel, tokens: ModelTokens | None, runs: PageRuns) -> Exercise | None:
    """From which layer on the logit lens's best token after the text is the model's final guess."""
    if tokens is None:
        return None
    lens = runs.lens()
    last = len(lens.positions) - 1
    settled = logit_lens.settled_depth(lens, last)
    final = code_span(readable.piece_of(chat, int(lens.top_ids[-1, last, 0])))
    depths = options_around(settled, list(range(lens.top_ids.size(0))), count=4)
    options = tuple(_layer_named(depth) for depth in depths)
    answer = _layer_named(settled)
    return Exercise(
        question=(
            f"After “{_ending(chat, tokens)}” SmolLM2's guess is {final}. Read through the logit lens (the final "
            "norm and the output matrix applied to each layer's output), from which layer on is it the best token "
            "and stays so?"
        ),
        answer=answer,
        options=options,
        explanation=(
            f"The lens puts {final} on top from **{answer}** on. Before, the layers' outputs read as other "
            "tokens, often punctuation or a frequent word: the answer is assembled late, and the KL divergence "
            "from the final guess falls to 0 only in the last layers (nostalgebraist 2020)."
        ),
        figure=lambda: figures.divergence_figure(
            lens.divergence[:, last:],
            lens.positions[last:],
            [tokens.pieces[lens.positions[last]]],
            f"The last position's distance from the final guess: {final.strip('` ')} from {answer} on",
        ),
    )


def second_copy_loss(chat: ChatModel, tokens: ModelTokens | None, runs: PageRuns) -> Exercise:
    """The loss on a repeated copy of random tokens: in-context learning, in numbers."""
    test = runs.induction()
    layer, head, score = heads.ranked(test.induction, 1)[0]
    return Exercise(
        question=(
            f"SmolLM2 reads {test.copy_length} random tokens, then the same {test.copy_length} again. On the first "
            f"copy its loss is {test.losses.first:.1f} nats per token (it guesses badly: nothing can be predicted). "
            f"What is its loss on the second copy? One decimal; answers within ±{COPY_LOSS_TOLERANCE:g} count."
        ),
        answer=round(test.losses.second, 1),
        decimals=1,
        tolerance=COPY_LOSS_TOLERANCE,
        explanation=(
            f"**{test.losses.second:.1f}** nats per token: the second copy can be read off the first. Induction "
            f"heads do it: from each token they look at the token that followed it last time. The best, layer "
            f"{layer}, head {head}, puts {score:.2f} of its attention exactly there. With the five best switched "
            f"off, the second copy costs {test.losses_without_them.second:.1f} (Olsson et al. 2022)."
        ),
        figure=lambda: figures.layer_head_figure(
            test.induction, f"Induction scores: layer {layer}, head {head} is best ({score:.2f})", "induction score"
        ),
    )


OFFERS = {
    "next-token": Offer("The next token", next_token),
    "first-token": Offer("Attention to the first token", first_token_share),
    "sink-rate": Offer("How many heads are sinks", sink_rate),
    "lens-layer": Offer("Where the guess appears", lens_layer),
    "second-copy": Offer("A copy read twice", second_copy_loss),
}
