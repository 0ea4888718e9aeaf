"""Class mode on screen: the student's banner and recorded answers, and the lecturer's live spread.

A student link carries the class code (`?class=…`); every view a student opens keeps it in the address, so a
reload or a link copied from the address bar stays in the class. The lecturer link opens the Class page with
the lecturer key too (`&key=…`), which no other view ever writes into an address.

An answer is recorded the moment Check is pressed. In a class the answer is not shown at once: the student
may change theirs until the lecturer reveals it, and the lesson's figures stay held back until then. If the
database cannot be reached, the student keeps working: the answer waits in the session and is sent once the
database is back, by the page's own check every few seconds or the next thing the student does (the page says
so meanwhile); if the session itself ends
first (the tab closed, the replica lost) an answer not yet sent is lost, and the page had said it was not
recorded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from operator import methodcaller
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import streamlit as st

from lessons.common import classroom, exercises
from lessons.common.class_figures import spread_figure
from lessons.common.classroom import ClassError, ClassInfo, ClassStoreUnavailable, Question, Spread
from lessons.common.safe_text import escape_markdown
from lessons.common.ui import charts, linked
from lessons.common.ui.frame import LESSONS

if TYPE_CHECKING:  # the store's module imports SQLAlchemy: a server imports it only once a class is in play
    from lessons.common.class_store import ClassStore

CLASS_KEY = classroom.CODE_LINK_KEY  # link key: the class code, on every view of a student in a class
LECTURER_KEY = classroom.LECTURER_LINK_KEY  # link key: the lecturer key, on the Class page only
STUDENT_COOKIE = "anatomy_student"  # the browser's anonymous id: a changed answer replaces the earlier one
# How often the lecturer's live spread, and a page that waits (a student's for the reveal, the lecturer's for a
# database that is down), look again. A room of students polls far more than one lecturer, so their pages look
# less often, and a replica asks the database about a reveal at most once per REVEAL_CACHE_SECONDS for all of them.
LECTURER_POLL_SECONDS = 2
STUDENT_POLL_SECONDS = 5
REVEAL_CACHE_SECONDS = 2
_JOINED = "_class_joined"  # session state: the Membership (code and class) of the class this session is in
_STUDENT = "_class_student"  # session state: this browser's anonymous id
_PENDING = "_class_pending"  # session state: answers not yet recorded, asked -> (Question, response, right)
_PAGE = "_class_page"  # session state: the URL path of the page this run shows
_PROBLEM = "_class_problem"  # session state: why the last answer could not be recorded (None: it was)
_REFUSED = "_class_refused"  # session state: answers the class will never record (closed, a limit), by `asked`
_YEAR_S = 365 * 24 * 3600
INFO_CACHE_SECONDS = 15


@dataclass(frozen=True)
class Membership:
    code: str
    info: ClassInfo


@st.cache_resource(show_spinner=False)
def store() -> ClassStore:
    """The class database of this server, shared by every session (its tables upgraded on first use)."""
    from lessons.common.class_store import ClassStore

    return ClassStore(classroom.database_url())


def ready_store() -> ClassStore:
    """The store, its tables at the newest migration (ClassStoreUnavailable when the database is down)."""
    shared = store()
    shared.ensure_upgraded()
    return shared


@st.cache_data(ttl=INFO_CACHE_SECONDS, show_spinner=False, max_entries=1000)
def _class_info(code: str) -> ClassInfo:
    """A class's title and times, read at most every few seconds per code however many students ask."""
    return ready_store().find_class(code)


# ----------------------------------------------------------------------------------------------------------
# The student's side


def join(page: str) -> Membership | None:
    """Every run (app.py, with the page's URL path): the class this session is in, from the link or from
    earlier in the session; its code goes into this view's address and a banner names the class. Unsent
    answers are sent again. The Class page itself is the lecturer's: it draws its own heading."""
    st.session_state[_PAGE] = page
    if page == PAGE:
        return None
    raw = linked.in_link(CLASS_KEY)
    joined: Membership | None = st.session_state.get(_JOINED)
    code = raw if raw is not None else (joined.code if joined else None)
    if code is None:
        return None
    if joined is None or joined.code != code:
        membership = _look_up(code)
        if membership is None:
            return None
        st.session_state[_JOINED] = joined = membership
        st.session_state.pop(_PENDING, None)
    linked.publish(CLASS_KEY, code)
    _remember_student()
    _send_pending(joined)
    _show_banner(joined)
    return joined


def _look_up(code: str) -> Membership | None:
    if not classroom.looks_like_a_code(code):
        st.warning("This link's class code is not one this app writes: the lessons work as usual, outside a class.")
        linked.unpublish(CLASS_KEY)
        return None
    try:
        return Membership(code, _class_info(code))
    except ClassStoreUnavailable:
        st.warning(
            "This class cannot be looked up just now (its database does not answer): the lessons work as usual; "
            "reload in a minute to join it.",
            icon=":material/cloud_off:",
        )
        linked.publish(CLASS_KEY, code)  # kept in the address: the reload joins
    except ClassError as error:
        st.warning(escape_markdown(str(error)) + " The lessons work as usual, outside a class.")
        linked.unpublish(CLASS_KEY)
    return None


def membership() -> Membership | None:
    return st.session_state.get(_JOINED)


def _remember_student() -> None:
    """This browser's anonymous id: its cookie when it has one, else one drawn now and given to the browser."""
    from_cookie = st.context.cookies.get(STUDENT_COOKIE)
    if from_cookie and classroom.looks_like_a_code(from_cookie):
        st.session_state[_STUDENT] = from_cookie
        return
    student = st.session_state.setdefault(_STUDENT, classroom.new_student_id())
    st.sidebar.html(student_script(student), unsafe_allow_javascript=True, width="content")


def student_script(student: str) -> str:
    """The browser keeps the anonymous id the server drew (unless it holds one already) for a year."""
    return (
        f"<script>if (!document.cookie.includes('{STUDENT_COOKIE}=')) "
        f"document.cookie = '{STUDENT_COOKIE}={student}; path=/; max-age={_YEAR_S}; SameSite=Lax';</script>"
    )


def is_student_script(body: str) -> bool:
    """Whether an element's body is `student_script` of some id this app draws (for the hostile-input checks)."""
    return any(body.strip() == student_script(found) for found in re.findall(rf"{STUDENT_COOKIE}=([\w-]+);", body))


def _show_banner(joined: Membership) -> None:
    closes = _clock(joined.info.closes_at)
    title = escape_markdown(joined.info.title)
    if joined.info.is_open():
        st.info(
            f"**Class: {title}.** Your answers to the exercises go to your lecturer, anonymously (no name is "
            f"recorded); the class is open until {closes}.",
            icon=":material/groups:",
        )
    else:
        st.info(f"**Class: {title}** closed at {closes}; answers are no longer recorded.", icon=":material/groups:")
    problem = st.session_state.get(_PROBLEM)
    if problem:
        st.warning(escape_markdown(problem), icon=":material/cloud_off:")


def record(exercise: exercises.Exercise, asked: str, title: str, response: Any, right: bool) -> None:
    """Check's callback, in a class: record the answer, or keep it to send later and say why."""
    joined = membership()
    if joined is None:
        return
    question = Question(
        asked=asked,
        page=st.session_state.get(_PAGE, "home"),
        title=title,
        question=exercise.question,
        options=exercise.options,
        decimals=exercise.decimals,
        answer=exercise.shown_answer(),
    )
    text = str(response) if exercise.options else f"{float(response):.{exercise.decimals}f}"
    st.session_state.setdefault(_PENDING, {})[asked] = (question, text, right)
    _send_pending(joined)


def _send_pending(joined: Membership) -> None:
    pending: dict[str, tuple[Question, str, bool]] = st.session_state.get(_PENDING, {})
    if not pending:
        return
    student = st.session_state.get(_STUDENT) or st.session_state.setdefault(_STUDENT, classroom.new_student_id())
    for asked, (question, text, right) in list(pending.items()):
        try:
            ready_store().record_answer(joined.code, student, question, text, right)
        except ClassStoreUnavailable as error:
            st.session_state[_PROBLEM] = (
                f"{error} Your answer is kept in this tab and sent by itself once the database is back (while this "
                "tab stays open)."
            )
            return
        except ClassError as error:  # closed, deleted, a limit: it will not be recorded, and saying so is all
            st.session_state[_PROBLEM] = f"{error}"
            st.session_state.setdefault(_REFUSED, set()).add(asked)
        else:
            st.session_state.pop(_PROBLEM, None)
        pending.pop(asked, None)


def is_recorded(asked: str) -> bool:
    return asked not in st.session_state.get(_PENDING, {}) and asked not in st.session_state.get(_REFUSED, set())


def waiting_for_reveal(asked: str, response: Any, exercise: exercises.Exercise) -> bool:
    """Below a committed answer: True, in a class, until the lecturer reveals the answer (the page holds its
    figures back and offers to change the answer meanwhile, and says whether the answer is recorded)."""
    joined = membership()
    if joined is None or asked in st.session_state.get(_REFUSED, set()) or not joined.info.is_open():
        return False  # not in a class, or one that will never record it: the answer is shown at once
    if _revealed(joined.code, asked) is not None:
        return False
    _wait_for_reveal(joined.code, asked, response, exercise)
    return True


def show_class_spread(asked: str) -> None:
    """After the reveal, in a class: how the class answered, under the student's own verdict."""
    joined = membership()
    spread = None if joined is None else _revealed(joined.code, asked)
    if spread is None:
        return
    st.markdown(f"**How the class answered** ({spread.answered} answered, {spread.right} of them right):")
    charts.show(spread_figure(spread), key=f"class_spread_{asked}")


def _revealed(code: str, asked: str) -> Spread | None:
    try:
        return _revealed_of_late(code, asked)
    except ClassError:
        return None


@st.cache_data(ttl=REVEAL_CACHE_SECONDS, show_spinner=False, max_entries=1000)
def _revealed_of_late(code: str, asked: str) -> Spread | None:
    """A question's revealed spread as the database gave it at most a few seconds ago, shared by the sessions."""
    return ready_store().revealed(code, asked)


@st.fragment(run_every=STUDENT_POLL_SECONDS)
def _wait_for_reveal(code: str, asked: str, response: Any, exercise: exercises.Exercise) -> None:
    """Every few seconds while the student waits: send an answer the database missed, and look for the reveal."""
    joined = membership()
    if not is_recorded(asked) and joined is not None:
        _send_pending(joined)  # the database may be back
        if is_recorded(asked):
            st.rerun(scope="app")  # the banner's warning goes too
    said = escape_markdown(str(response) if exercise.options else f"{float(response):,.{exercise.decimals}f}")
    if is_recorded(asked):
        st.success(
            f"Your answer, {said}, is recorded for the class. Your lecturer reveals the answer when the class is "
            "ready; until then you may change yours below.",
            icon=":material/how_to_vote:",
        )
    else:
        st.warning(f"Your answer, {said}, is not recorded yet.", icon=":material/cloud_off:")
    if _revealed(code, asked) is not None:
        st.rerun(scope="app")


def _clock(moment: datetime) -> str:
    """A time as the reader's browser tells it (its time zone), else in UTC, named."""
    try:
        return moment.astimezone(ZoneInfo(st.context.timezone or "")).strftime("%H:%M")
    except (ValueError, ZoneInfoNotFoundError):  # no zone, or one this machine does not know
        return moment.strftime("%H:%M UTC")


# ----------------------------------------------------------------------------------------------------------
# The lecturer's side: the Class page

_STARTED = "_class_started"  # session state: the NewClass this session started (its secrets shown once)
_CONFIRM_DELETE = "_class_confirm_delete"
_START_PROBLEM = "_class_start_problem"
_STARTED_COUNT = "_class_started_count"  # session state: classes this session started
MAX_CLASSES_PER_SESSION = 5  # a visitor cannot fill a hosted server's open classes from one tab
_DELETED = "_class_deleted"  # session state: the class on this page was just deleted
PAGE = classroom.CLASS_PAGE_PATH


def show_class_page() -> None:
    """Start a class, or (with the lecturer link) watch it answer, reveal, export and delete."""
    code, key = linked.in_link(CLASS_KEY), linked.in_link(LECTURER_KEY)
    if st.session_state.pop(_DELETED, False):
        st.success("The class and every answer in it are deleted.", icon=":material/delete_forever:")
        code = key = None  # the address written at the end of this run no longer holds them
    if code is not None and key is not None:
        _show_lecturer_view(code, key)
        return
    if key is not None:
        st.error("This lecturer link has no class code: open the whole lecturer link you were given.")
    started: classroom.NewClass | None = st.session_state.get(_STARTED)
    if started is not None:
        _show_links(started)
        st.divider()
    _show_start_form()


def _show_start_form() -> None:
    st.markdown(
        "Start a class, share its **student link** with the room, and open the **lecturer link** on your own "
        "screen or the projector: there you see how the class answers each exercise, live, and reveal the answer "
        "when the room has committed. Students stay anonymous: no name is asked or stored."
    )
    with st.form("start_class", border=True):
        st.text_input(
            "Class title",
            max_chars=classroom.MAX_TITLE_CHARACTERS,
            placeholder="Lecture 3: attention",
            key="class_title",
        )
        st.number_input(
            "Open for (minutes)",
            min_value=classroom.MIN_MINUTES,
            max_value=classroom.MAX_MINUTES,
            value=classroom.DEFAULT_MINUTES,
            step=5,
            key="class_minutes",
            help="After this, answers are no longer recorded; you can still download them, then delete the class.",
        )
        st.form_submit_button(
            "Start a class", icon=":material/play_arrow:", type="primary", key="class_start", on_click=_start
        )
    problem = st.session_state.pop(_START_PROBLEM, None)
    if problem:
        st.error(escape_markdown(problem), icon=":material/error:")


def _start() -> None:
    """The start button's callback, run before the page: the class, or why not."""
    started_here = st.session_state.get(_STARTED_COUNT, 0)
    if started_here >= MAX_CLASSES_PER_SESSION:
        st.session_state[_START_PROBLEM] = (
            f"This tab has started {MAX_CLASSES_PER_SESSION} classes already: use one of them, or open the app "
            "anew to start another."
        )
        return
    try:
        started = ready_store().start_class(
            st.session_state.get("class_title") or "", int(st.session_state["class_minutes"])
        )
    except ClassError as error:
        st.session_state[_START_PROBLEM] = str(error)
        return
    st.session_state[_STARTED] = started
    st.session_state[_STARTED_COUNT] = started_here + 1


def _links(code: str, key: str) -> tuple[str, str]:
    """The student and lecturer links, from the address this browser shows."""
    return classroom.class_links(st.context.url or "", (*(lesson.name for lesson in LESSONS), PAGE), code, key)


def _show_links(started: classroom.NewClass) -> None:
    student, lecturer = _links(started.code, started.lecturer_key)
    st.success(
        f"Class **{escape_markdown(started.info.title)}** started; open until {_clock(started.info.closes_at)}.",
        icon=":material/groups:",
    )
    st.markdown("**Student link**: share it with the class (on a slide, in the chat).")
    st.code(student, language=None, wrap_lines=True)
    st.markdown(
        "**Lecturer link**: keep it to yourself. It shows the spread of answers before the reveal, and it is "
        "shown only here, once: bookmark it now."
    )
    st.code(lecturer, language=None, wrap_lines=True)
    st.link_button("Open the lecturer view", lecturer, icon=":material/monitoring:", type="primary")


def _show_lecturer_view(code: str, key: str) -> None:
    # The address keeps both whatever happens next: a lecturer whose page reloads during an outage, or who
    # mistyped a character, still has the link they opened.
    linked.publish(CLASS_KEY, code)
    linked.publish(LECTURER_KEY, key)
    try:
        info = ready_store().lecturer_class(code, key)
    except ClassStoreUnavailable as error:
        st.error(
            f"{error} Students can go on working; their answers wait in their tabs. This page comes back by itself "
            "when the database does.",
            icon=":material/cloud_off:",
        )
        _await_the_database()
        return
    except ClassError as error:
        st.error(escape_markdown(str(error)), icon=":material/lock:")
        return
    state = f"open until {_clock(info.closes_at)}" if info.is_open() else f"closed at {_clock(info.closes_at)}"
    st.subheader(f"{escape_markdown(info.title)} · {state}")
    st.caption(
        "Each exercise a student answered appears here with the answers so far, refreshed every few seconds. "
        "Reveal one when the room has answered: every student on it then sees the answer and this spread. "
        "The newest question comes first."
    )
    with st.expander("Student link", icon=":material/link:"):
        st.code(_links(code, key)[0], language=None, wrap_lines=True)
    _live_spread(code, key)
    _exports_and_delete(code, key)


@st.fragment(run_every=LECTURER_POLL_SECONDS)
def _live_spread(code: str, key: str) -> None:
    try:
        spreads = ready_store().spread(code, key)
    except ClassStoreUnavailable as error:
        st.error(
            f"{error} Students can go on working; their answers wait in their tabs. This view refreshes by itself.",
            icon=":material/cloud_off:",
        )
        return
    except ClassError as error:
        st.error(escape_markdown(str(error)), icon=":material/lock:")
        return
    if not spreads:
        st.info("No answers yet. Students answer an exercise (a lesson's “Check yourself” row) and it appears here.")
        return
    for number, spread in reversed(list(enumerate(spreads, 1))):  # the question being asked now, first
        question = spread.question
        with st.container(border=True):
            st.markdown(f"**{number}. {escape_markdown(question.title)}** · lesson “{escape_markdown(question.page)}”")
            st.markdown(question.question)
            st.caption(f"{spread.answered} answered" + (f", {spread.right} right" if spread.revealed else ""))
            charts.show(spread_figure(spread, mark_the_answer=spread.revealed), key=f"lecturer_spread_{question.asked}")
            if spread.revealed:
                st.success(f"Revealed: the answer is {escape_markdown(question.answer)}.", icon=":material/visibility:")
            st.button(
                "Hide the answer again" if spread.revealed else "Reveal to the class",
                key=f"reveal_{question.asked}",
                icon=":material/visibility_off:" if spread.revealed else ":material/visibility:",
                on_click=_reveal,
                args=(code, key, question.asked, not spread.revealed),
            )


@st.fragment(run_every=LECTURER_POLL_SECONDS)
def _await_the_database() -> None:
    if store().is_reachable():
        st.rerun(scope="app")


def _reveal(code: str, key: str, asked: str, revealed: bool) -> None:
    try:
        ready_store().reveal(code, key, asked, revealed)
    except ClassError as error:
        st.session_state[_PROBLEM] = str(error)


def _exports_and_delete(code: str, key: str) -> None:
    st.divider()
    st.markdown("**The class's answers**")
    *downloads, delete = st.columns(3)
    exports = (("Spread (CSV)", "spread", "spread_csv"), ("Every answer (CSV)", "answers", "answers_csv"))
    for column, (label, name, method) in zip(downloads, exports, strict=True):
        # Written when pressed, from the database as it is then (the page around them is not redrawn every poll).
        column.download_button(
            label,
            partial(_written, methodcaller(method, code, key)),
            file_name=f"class-{name}.csv",
            mime="text/csv",
            icon=":material/download:",
            key=f"class_{name}_csv",
        )
    delete.button(
        "Delete the class…",
        icon=":material/delete:",
        key="class_delete",
        on_click=lambda: st.session_state.update({_CONFIRM_DELETE: True}),
    )
    if st.session_state.get(_CONFIRM_DELETE):
        st.warning("Delete the class and every answer in it? This cannot be undone: download them first.")
        st.button(
            "Delete it now",
            type="primary",
            icon=":material/delete_forever:",
            key="class_delete_now",
            on_click=_delete,
            args=(code, key),
        )


def _written(export: Callable[[ClassStore], str]) -> str:
    """An export of the store (`ClassStore.spread_csv` or `answers_csv`), written when its button is pressed."""
    return export(ready_store())


def _delete(code: str, key: str) -> None:
    """The confirmation's callback, run before the page: the class and its answers go, and so does its link."""
    st.session_state.pop(_CONFIRM_DELETE, None)
    try:
        ready_store().delete_class(code, key)
    except ClassError as error:
        st.session_state[_START_PROBLEM] = str(error)
        return
    st.session_state[_DELETED] = True
    st.session_state.pop(_STARTED, None)
