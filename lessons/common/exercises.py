"""Predict, then check: a question about the current text, answered before the lesson shows the answer.

Every exercise is built from the lesson's own computation on the learner's text, so its answer is computed,
never typed in, and changes when the text changes. It is one of two kinds: a choice among a few options, or a
number that counts as right within a stated tolerance. The learner commits an answer first; only then does
the page show the answer, why it is so, and a figure with the answer marked.

This module holds no Streamlit: `lessons.common.ui.exercises` asks the questions and keeps the tally.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

LINK_KEY = "exercise"  # the link names the open exercise by its name in the lesson's offers: ?exercise=pieces
NONE_OPEN = "none"  # the link's value while no exercise is open


@dataclass(frozen=True)
class Exercise:
    """One question on one text. `options` empty: the answer is a number, right within `tolerance`."""

    question: str  # markdown; anything taken from the learner's text is escaped already
    answer: str | float  # one of `options`, or the number
    explanation: str  # markdown: why the answer is what it is, shown once the learner has committed
    options: tuple[str, ...] = ()
    tolerance: float = 0.0  # for a number: |response - answer| <= tolerance counts as right
    decimals: int = 0  # for a number: how many decimals the answer is written with
    figure: Callable[[], Any] | None = None  # the reveal's figure, the answer marked (built only when shown)

    def __post_init__(self) -> None:
        if self.options and self.answer not in self.options:
            raise ValueError(f"the answer {self.answer!r} is not one of the options {self.options}")
        if not self.options and not isinstance(self.answer, int | float):
            raise ValueError(f"a number exercise needs a number as its answer, not {self.answer!r}")

    @property
    def asks_for_a_number(self) -> bool:
        return not self.options

    @property
    def identity(self) -> str:
        """Names this question on this text, and nothing of its answer: the question and the options only
        (a digest of the answer too would let a browser test each option against it)."""
        asked = "\n".join((self.question, *self.options)).encode("utf-8")
        return hashlib.sha1(asked, usedforsecurity=False).hexdigest()[:12]

    def is_right(self, response: str | float | None) -> bool:
        if response is None:
            return False
        if self.options:
            return response == self.answer
        if isinstance(response, str) or not math.isfinite(response):
            return False
        return abs(float(response) - float(self.answer)) <= self.tolerance + 1e-12

    def shown_answer(self) -> str:
        """The answer as the reveal writes it: a number with the exercise's decimals (and its tolerance)."""
        if self.options:
            return str(self.answer)
        written = f"{float(self.answer):,.{self.decimals}f}"
        if self.tolerance:
            return f"{written} (answers within ±{self.tolerance:,g} count)"
        return written


@dataclass(frozen=True)
class Offer:
    """An exercise a lesson offers: a short title for the picker, and how to build it from the page's data."""

    title: str
    # None, or a sentence saying why: the current view gives this exercise nothing to ask
    build: Callable[..., Exercise | str | None]


def options_around(answer: int, candidates: list[int], count: int = 4) -> tuple[int, ...]:
    """`count` distinct choices that include `answer`, the others the candidates nearest to it, in order."""
    others = sorted((value for value in set(candidates) if value != answer), key=lambda value: abs(value - answer))
    return tuple(sorted([answer, *others[: count - 1]]))
