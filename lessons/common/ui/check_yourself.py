"""Check yourself: a row above each lesson's views offers its exercises, one open at a time.

While an exercise waits for an answer, only its question and answer field are sent to the browser: the page
holds back its own figures too, which would give the answer away. The answer, why it is so, and a figure
with it marked are drawn in the run that Check starts, never before. The link carries
the open exercise (`?exercise=pieces`), so a teacher can send an exercise on a given text. The session keeps
a tally: how many exercises were answered and how many of them right (an answer can be changed only in a
class, before the lecturer's reveal: the last one counts). Until that reveal the tally counts the answer as
waiting, neither right nor wrong: telling it sooner would give the answer away.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import streamlit as st

from lessons.common.exercises import LINK_KEY, NONE_OPEN, Exercise, Offer
from lessons.common.safe_text import escape_markdown
from lessons.common.ui import charts, classroom, linked
from lessons.common.words import counted

KEY = LINK_KEY  # link key and session state: the open exercise, by its name in the lesson's offers
NOT_NOW = NONE_OPEN
_COMMITTED = "_exercise_committed"  # session state: identity -> (the response, whether it was right)
_EMPTY_CHECK = "_exercise_empty_check"  # session state: the field whose Check was pressed without an answer
_SHOWN = "_exercise_verdict_shown"  # session state: the committed answers whose verdict the page has shown
TITLE = "Check yourself"
TALLY = "{right} of {exercises} answered right"
# In a class an answer's verdict waits for the lecturer's reveal, and the tally must not tell it sooner.
WAITING = "{answers} waiting for your lecturer's reveal"
NOTHING_TO_ASK = (
    "This exercise has nothing to ask about what the page shows now: try another text (or word), or another exercise."
)
HELD_BACK = "The lesson's figures come back once you have answered: they would give the answer away."
HELD_UNTIL_REVEAL = "The lesson's figures come back with the answer, when your lecturer reveals it."
INTRO = (
    "Predict first, then check: each question is computed from the text you study, so it changes with it. "
    "The answer, and the lesson's figures, appear once you have committed to yours."
)


def offer(offers: Mapping[str, Offer], *arguments: Any) -> bool:
    """The picker over the lesson's exercises (none open at first) and the open one; True while it waits for
    an answer, when the page holds back its own figures, which would give the answer away.

    An exercise is built only while it is open: `offers[name].build(*arguments)`."""
    names = {NOT_NOW: "Not now"} | {
        name: f"{number}. {item.title}" for number, (name, item) in enumerate(offers.items(), 1)
    }
    chosen = linked.segmented(TITLE, KEY, names, NOT_NOW, help=INTRO)
    waiting = False
    if chosen != NOT_NOW:
        exercise = offers[chosen].build(*arguments)
        if exercise is None or isinstance(exercise, str):
            st.info(exercise or NOTHING_TO_ASK, icon=":material/info:")
        else:
            waiting = ask(exercise, chosen, offers[chosen].title)
    show_tally()
    return waiting


def ask(exercise: Exercise, name: str, title: str = "") -> bool:
    """The question; then either the answer field and Check (True: still waiting), or, once committed, the
    reveal (False). In a class the reveal waits for the lecturer's, and the answer may be changed until then."""
    committed: dict[str, tuple[Any, bool]] = st.session_state.setdefault(_COMMITTED, {})
    asked = asked_here(exercise, name)
    widget_key = f"exercise_{name}_{asked}"
    st.markdown(exercise.question)
    if asked in committed:
        response, _ = committed[asked]
        if not classroom.waiting_for_reveal(asked, response, exercise):
            reveal(exercise, *committed[asked], widget_key)
            st.session_state.setdefault(_SHOWN, set()).add(asked)
            classroom.show_class_spread(asked)
            return False
    with st.form(f"{widget_key}_form", border=False, enter_to_submit=True):
        answer_field(exercise, widget_key)
        st.form_submit_button(
            "Change my answer" if asked in committed else "Check",
            icon=":material/task_alt:",
            key=f"{widget_key}_check",
            on_click=_commit,
            args=(exercise, asked, widget_key, title or name),
        )
    if st.session_state.pop(_EMPTY_CHECK, None) == widget_key:
        st.warning("Choose or type an answer first, then press Check.")
    st.caption(HELD_UNTIL_REVEAL if asked in committed else HELD_BACK)
    return True


def asked_here(exercise: Exercise, name: str) -> str:
    """Names the question asked on this page, about this model and text: a question that does not quote the
    text ("How many tokens…?") is another question on another text. Nothing of the answer is in it."""
    context = st.session_state.get("_context")
    about = (context.reference, context.text) if context is not None else ("", "")
    asked = "\n".join((name, exercise.identity, *about)).encode("utf-8")
    return hashlib.sha1(asked, usedforsecurity=False).hexdigest()[:12]


def _commit(exercise: Exercise, asked: str, widget_key: str, title: str) -> None:
    """Check's callback, run before the page: record the answer and whether it is right (in a class, for the
    class too; the answer given last before the lecturer's reveal counts)."""
    response = st.session_state.get(widget_key)
    if response is None:
        st.session_state[_EMPTY_CHECK] = widget_key
        return
    right = exercise.is_right(response)
    st.session_state.setdefault(_COMMITTED, {})[asked] = (response, right)
    classroom.record(exercise, asked, title, response, right)


def answer_field(exercise: Exercise, widget_key: str) -> Any:
    if exercise.asks_for_a_number:
        step = 10.0**-exercise.decimals
        return st.number_input(
            "Your answer",
            value=None,
            step=step if exercise.decimals else 1.0,
            format=f"%.{exercise.decimals}f",
            placeholder="a number",
            key=widget_key,
        )
    return st.radio(
        "Your answer", exercise.options, index=None, format_func=escape_markdown, key=widget_key, horizontal=True
    )


def reveal(exercise: Exercise, response: Any, right: bool, widget_key: str) -> None:
    """Whether the committed answer was right, the answer, why, and the figure with the answer marked."""
    answer = escape_markdown(exercise.shown_answer())
    if right:
        st.success(f"Right: {answer}.", icon=":material/check_circle:")
    else:
        said = escape_markdown(str(response) if exercise.options else f"{response:,.{exercise.decimals}f}")
        st.error(f"You answered {said}; the answer is {answer}.", icon=":material/cancel:")
    st.markdown(exercise.explanation)
    if exercise.figure is not None:
        charts.show(exercise.figure(), key=f"{widget_key}_figure")


def tally() -> tuple[int, int, int]:
    """(answered right, answered, waiting) in this session. It tells no more than the page has shown: an answer
    counts as right or wrong once its verdict has been drawn, and until then (in a class, before the lecturer's
    reveal) as waiting, neither. It asks no database."""
    committed = st.session_state.get(_COMMITTED, {})
    shown = st.session_state.get(_SHOWN, set())
    verdicts = [right for asked, (_, right) in committed.items() if asked in shown]
    return sum(verdicts), len(verdicts), len(committed) - len(verdicts)


def show_tally() -> None:
    """The tally under the exercises: "This session: 2 of 3 exercises answered right; 1 answer waiting for your
    lecturer's reveal." """
    right, answered, waiting = tally()
    said = [TALLY.format(right=right, exercises=counted(answered, "exercise"))] if answered else []
    if waiting:
        said.append(WAITING.format(answers=counted(waiting, "answer")))
    if said:
        st.caption(f"This session: {'; '.join(said)}.")
