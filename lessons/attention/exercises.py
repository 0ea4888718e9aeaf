"""The attention lesson's exercises, on the head the page shows: the toy example as the learner edited it, the
Apple example, the text's embeddings, or one head of the model on the learner's text. Both ask about the query
the learner follows: the softmax weight it gives one key, and the key it gives the most weight. Both read the
steps the page computed, so they follow every edit, text, layer and head."""

from __future__ import annotations

import math

import torch

from lessons.attention.figures import score_matrix
from lessons.attention.steps import HeadLesson
from lessons.common.exercises import Exercise, Offer
from lessons.common.safe_text import visible

MAX_KEYS_BY_HAND = 8  # a row of scores short enough to write out and put through the softmax by hand
MAX_OPTIONS = 8  # keys offered as answers; a longer text offers those with the most weight
TIED = 1e-9  # weights this close are the same weight (the Apple example splits one evenly between two keys)


TOO_MANY_KEYS = (
    "The followed query has {keys} keys here: too many for a softmax worked by hand (this exercise asks about "
    "rows of at most {most}). Choose the toy example, the Apple example, or a text of at most {most} tokens."
)


def _quoted(label: str) -> str:
    return f"“{visible(label)}”"


def _score(value: float) -> str:
    """A scaled score as the question writes it: two decimals at most, −∞ for a masked one."""
    if value == -math.inf:
        return "−∞"
    return f"{value:.2f}".rstrip("0").rstrip(".")


def softmax_weight(lesson: HeadLesson, query_index: int, key_index: int) -> Exercise | str | None:
    """The softmax weight the followed query gives the followed key, from its row of scaled scores."""
    steps, labels = lesson.steps, lesson.labels
    scores = steps.masked_scores[query_index]  # (S,) the scaled scores, −∞ where a mask forbids
    if scores.numel() > MAX_KEYS_BY_HAND:
        return TOO_MANY_KEYS.format(keys=scores.numel(), most=MAX_KEYS_BY_HAND)
    if not torch.isfinite(scores.max()):
        return None
    largest = float(scores.max())
    # Subtracting the largest score changes no weight (it divides top and bottom by the same e^max) and
    # keeps every exponential at most 1: how a softmax is computed by hand, and by torch.
    exponentials = torch.exp(scores - largest)  # (S,)
    total = float(exponentials.sum())
    weight = float(steps.weights[query_index, key_index])
    row = "; ".join(f"{_quoted(label)}: {_score(float(score))}" for label, score in zip(labels, scores))
    terms = ", ".join(
        f"e^({_score(float(score))} − {_score(largest)}) = {float(term):.3g}"
        for score, term in zip(scores, exponentials)
    )
    return Exercise(
        question=(
            f"In {lesson.about}, the query of {_quoted(labels[query_index])} has these scaled scores "
            f"$QK^\\top/\\sqrt{{d_k}}$ against the keys: {row}. What weight does the softmax give to the key "
            f"of {_quoted(labels[key_index])}? Answer to two decimals (answers within ±0.01 count)."
        ),
        answer=weight,
        explanation=(
            "The softmax raises e to each score and divides by the sum of them all. Subtracting the row's "
            f"largest score, {_score(largest)}, first changes no weight and keeps the numbers small: {terms}. "
            f"They sum to {total:.4f}, so the key of {_quoted(labels[key_index])} gets "
            f"{float(exponentials[key_index]):.3g} / {total:.4f} = **{weight:.4f}**. A score a few units below "
            "the largest is left with almost nothing: the exponential turns differences into ratios."
        ),
        tolerance=0.01,
        decimals=2,
        figure=lambda: score_matrix(
            steps.raw_scores,
            steps.scaled_scores,
            steps.weights,
            labels,
            labels,
            "weights",
            title=f"Softmax weights: query {query_index}, key {key_index} outlined",
            highlight=(query_index, key_index),
        ),
    )


def strongest_key(lesson: HeadLesson, query_index: int, key_index: int) -> Exercise | None:
    """The key the followed query gives the most weight, among the text's keys (those with the most weight
    when there are too many to offer). A key tied with it for the most weight is not offered. The followed
    key (`key_index`) plays no part: every exercise of the lesson is built from the same arguments."""
    steps, labels = lesson.steps, lesson.labels
    weights = steps.weights[query_index]  # (S,)
    most = float(weights.max())
    tied = [key for key in range(weights.numel()) if most - float(weights[key]) <= TIED]
    answer = tied[0]
    by_weight = torch.argsort(weights, descending=True, stable=True).tolist()
    offered = [key for key in by_weight if key == answer or key not in tied][:MAX_OPTIONS]
    if len(offered) < 2:
        return None  # every key is tied (a row of equal scores): no one key gets the most
    runner_up = next(key for key in by_weight if key not in tied)
    shared = ""
    if len(tied) > 1:
        others = ", ".join(_quoted(labels[key]) for key in tied[1:])
        shared = f", and exactly as much to {others}, so {'it was' if len(tied) == 2 else 'they were'} not offered"
    notes = []
    if answer == query_index:
        notes.append("Here that is the token's own key.")
    if len(offered) < weights.numel() - len(tied) + 1:
        notes.append(f"The text has {weights.numel()} keys: the options were the {len(offered)} with the most weight.")
    return Exercise(
        question=(
            f"In {lesson.about}, which key does the query of {_quoted(labels[query_index])} give the most weight?"
        ),
        answer=labels[answer],
        options=tuple(labels[key] for key in sorted(offered)),  # in text order, which says nothing of the answer
        explanation=(
            f"The query of {_quoted(labels[query_index])} gives **{most:.2f}** of its weight to the key of "
            f"{_quoted(labels[answer])}{shared}; the next most, {float(weights[runner_up]):.2f}, goes to "
            f"{_quoted(labels[runner_up])}. The weights are the softmax of the row's scaled scores, so the key "
            f"whose score is highest, here {_score(float(steps.scaled_scores[query_index, answer]))}, takes the most "
            f"weight, and the further it stands above the rest, the more it takes. {' '.join(notes)}"
        ),
        figure=lambda: score_matrix(
            steps.raw_scores[query_index : query_index + 1],
            steps.scaled_scores[query_index : query_index + 1],
            weights[None],
            [labels[query_index]],
            labels,
            "weights",
            title=f"The weights of query {query_index} over every key, the largest outlined",
            highlight=(0, answer),
        ),
    )


OFFERS = {
    "softmax": Offer("A softmax weight", softmax_weight),
    "strongest": Offer("The key it attends to most", strongest_key),
}
