"""The language-model lesson's exercises on the learner's text: which token SmolLM2 writes next, and how much of
one head's attention rests on the first token (the "attention sink"). Both read the page's own cached runs of
SmolLM2 (`PageRuns`), and only the open exercise asks for one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import Tensor

from lessons.common.exercises import Exercise, Offer
from lessons.common.llm import readable
from lessons.common.llm.readable import ModelTokens
from lessons.common.llm.smollm2 import ChatModel
from lessons.common.safe_text import code_span, visible
from lessons.common.windows import crop, focus_window
from lessons.language_model import figures, reading
from lessons.language_model.reading import Candidates

NEXT_TOKEN_OPTIONS = 5  # the model's five best guesses: enough to make the learner think, few enough to read
ENDING_TOKENS = 8  # the question quotes the text's last tokens, the ones the guess follows
SINK_LAYER, SINK_HEAD = 18, 0  # a head whose share of the first token moves with the text (about 0.5 to 0.9)
SINK_TOLERANCE = 0.05


@dataclass(frozen=True)
class PageRuns:
    """The page's cached runs of SmolLM2 on the current text; an exercise calls only the one it needs."""

    candidates: Callable[[], Candidates]  # the most probable next tokens, best first
    attention: Callable[[int], Tensor]  # layer -> (H, T, T) that layer's attention maps


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
    maps = runs.attention(SINK_LAYER)  # (H, T, T)
    share = reading.first_token_share(maps, SINK_HEAD)
    even = reading.even_first_token_share(len(tokens))
    weights = maps[SINK_HEAD, 1:, 0]  # (T − 1,) what each query after the first gives the first token
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
            crop(maps[SINK_HEAD], window, window),
            [tokens.pieces[position] for position in window],
            window,
            f"Layer {SINK_LAYER}, head {SINK_HEAD}: the first token's column, framed, averages {share:.2f}"
            + (f" (the first {len(window)} of {len(tokens)} tokens shown)" if len(window) < len(tokens) else ""),
        ),
    )


OFFERS = {
    "next-token": Offer("The next token", next_token),
    "first-token": Offer("Attention to the first token", first_token_share),
}
