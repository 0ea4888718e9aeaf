"""The causal-masking lesson's exercises: how many (query, key) pairs a causal mask allows over the text, and
what weight one token puts on itself once the mask has hidden the tokens after it. Both are read from one
head masked by the lesson's own code (`masking.causal`), on the learner's text through the sidebar's encoder,
or on the worked example's made-up scores when the sidebar gives no encoder and text to mask."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from anatomy.masks import causal_mask
from lessons.causal import figures, masking
from lessons.common import examples, matrix_figures, windows
from lessons.common.exercises import Exercise, Offer
from lessons.common.safe_text import code_span

QUERY = 2  # the token whose row the weight exercise asks about: the third, with two tokens before it
LATER_SCORES = 2  # scores of tokens after it that the question lists too: the mask must hide them
SHOWN_ROWS = 8  # tokens the weight exercise's figure draws
LISTED_TOKENS = 12  # a text of at most this many tokens is written out in the question


@dataclass(frozen=True)
class MaskedHead:
    """One head's attention over a sequence under the causal mask, and the words that say where it is from."""

    tokens: tuple[str, ...]
    attention: masking.MaskedAttention  # (T, T) each stage: mask, scores, masked scores, weights
    where: str  # "layer 0, head 0", or "" for the worked example
    on_your_text: bool = True

    @property
    def sequence(self) -> str:
        return "your text" if self.on_your_text else "the worked example"


def worked_example() -> MaskedHead:
    """The worked example's four tokens and made-up scores, under the causal mask (as its tab draws them)."""
    tokens = examples.APPLE_IPHONES_TOKENS
    attention = masking.mask_scores(examples.CAUSAL_EXAMPLE_SCORES, causal_mask(len(tokens)))
    return MaskedHead(tuple(tokens), attention, "", on_your_text=False)


def _tokens(tokens: Sequence[str]) -> str:
    return " ".join(code_span(token) for token in tokens)


def _number(value: float) -> str:
    """Two decimals with a true minus sign (a leading "-" could start a markdown list)."""
    return f"{value:.2f}".replace("-", "−")


def allowed_pairs(read: Callable[[], MaskedHead]) -> Exercise:
    """How many (query, key) pairs the causal mask over the whole sequence allows: T(T + 1) / 2."""
    head = read()
    mask = head.attention.mask  # (T, T) True where query t may attend to key s
    count, allowed = mask.size(0), int(mask.sum())
    listed = f": {_tokens(head.tokens)}" if count <= LISTED_TOKENS else ""
    window = range(min(count, windows.FOCUS_WINDOW))
    cut = f" (its first {len(window)} tokens)" if len(window) < count else ""
    return Exercise(
        question=(
            f"{head.sequence.capitalize()} is read as T = {count:,} tokens{listed}. A decoder reads them under a "
            f"causal mask. Of the {count:,} × {count:,} = {count * count:,} (query, key) pairs, how many does "
            "the mask allow, that is, how many scores does it leave as they are?"
        ),
        answer=allowed,
        explanation=(
            f"Query t may attend to keys 0 … t: the tokens before it and itself, t + 1 keys. Over the {count:,} "
            f"queries that is 1 + 2 + … + {count:,} = {count:,} × {count + 1:,} / 2 = **{allowed:,}** pairs, on "
            f"and below the diagonal. The other {count * count - allowed:,}, above it, are the future: their "
            "scores become −∞ before the softmax, and their weights exactly 0."
        ),
        figure=lambda: figures.mask_figure(
            windows.crop(mask, window, window),
            [head.tokens[position] for position in window],
            f"The causal mask over {head.sequence}{cut}: {allowed:,} of {count * count:,} pairs allowed",
        ),
    )


def _scores_listed(head: MaskedHead, listed: range) -> str:
    """The question's first sentence: the scores token QUERY gives the `listed` tokens, before any mask."""
    row = head.attention.scores[QUERY]  # (S,)
    scores = "; ".join(f"token {key} {code_span(head.tokens[key])}: {_number(float(row[key]))}" for key in listed)
    query = code_span(head.tokens[QUERY])
    some = f"the first {len(listed)}" if len(listed) < len(head.tokens) else f"all {len(listed)}"
    if head.on_your_text:
        scored = f"In {head.where}, token {QUERY} ({query}) scores {some} tokens of your text as follows"
    else:
        scored = f"In the worked example, token {QUERY} ({query}) has these made-up scores for {some} of its tokens"
    return f"{scored} (QKᵀ/√dₖ, before any mask): {scores}."


def weight_on_itself(read: Callable[[], MaskedHead]) -> Exercise | None:
    """The weight token QUERY puts on itself under the causal mask, from its scores (later ones listed too)."""
    head = read()
    attention, tokens = head.attention, head.tokens
    if len(tokens) <= QUERY + 1:  # no token after it: the mask would take nothing away
        return None
    listed = range(min(len(tokens), QUERY + 1 + LATER_SCORES))
    answer = float(attention.weights[QUERY, QUERY])
    unmasked = float(masking.mask_scores(attention.scores, torch.ones_like(attention.mask)).weights[QUERY, QUERY])
    query = code_span(tokens[QUERY])
    later = ", ".join(code_span(tokens[key]) for key in listed[QUERY + 1 :]) + (
        ", …" if len(tokens) > len(listed) else ""
    )
    terms = [f"exp({_number(float(attention.scores[QUERY, key]))})" for key in range(QUERY + 1)]
    window = range(min(len(tokens), SHOWN_ROWS))
    return Exercise(
        question=(
            f"{_scores_listed(head, listed)} Under the causal mask, what weight does token {QUERY} put on itself? "
            "Two decimals; answers within ±0.01 count."
        ),
        answer=answer,
        tolerance=0.01,
        decimals=2,
        explanation=(
            f"The mask turns the score of every token after {query} ({later}) into −∞: their weights are "
            f"exactly 0, and the softmax shares the whole row among the {QUERY + 1} tokens up to {query} itself: "
            f"{terms[QUERY]} / ({' + '.join(terms)}) = **{answer:.2f}**. Without the mask, {query} would share "
            f"its row with all {len(tokens):,} tokens and put {unmasked:.2f} on itself."
        ),
        figure=lambda: matrix_figures.weights_figure(
            windows.crop(attention.weights, window, window),
            [tokens[position] for position in window],
            f"{(head.where or 'the worked example').capitalize()} under the causal mask: row {QUERY}",
            marked=(QUERY, QUERY),
        ),
    )


OFFERS = {
    "allowed": Offer("Pairs the mask allows", allowed_pairs),
    "weight": Offer("A weight under the mask", weight_on_itself),
}
