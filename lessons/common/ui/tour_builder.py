"""The tour builder: a lecturer makes a tour from the screen, in the sidebar, and plays or downloads it.

"Add this view as a stop" records the view on screen: its page, and its link's parameters less the sidebar's
own (the text, presentation style) and the tour's; the stop follows the learner's sentence, or keeps the one
in the sidebar now as its own. The stops are listed in order below, each with its title, notes, own sentence
and exercise to edit, to move up or down, or to remove. "Play this tour" hands the tour to the tour bar
(`tour`), as an uploaded file is; "Download as TOML" writes the file format of the shipped tours
(`tours.write_tour`). What is played and downloaded is the draft written as a file and read back by
`tours.read_tour`, so the builder's tour is exactly the file's, checked as an upload is.

The draft lives in session state under a key no widget has: Streamlit forgets a widget's value after a run
that does not draw it (the section closed), but not that key, so nothing typed here is lost on the way from
lesson to lesson. Each field is drawn from the draft and writes back into it.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field, replace
from typing import Any

import streamlit as st

from lessons.common import classroom, tours
from lessons.common.exercises import LINK_KEY as EXERCISE_KEY
from lessons.common.exercises import NONE_OPEN
from lessons.common.safe_text import visible
from lessons.common.tours import Tour, TourError
from lessons.common.ui import presentation, tour, widgets

SECTION_KEY = "tour_builder"  # session state: True while the sidebar's "Build a tour" section is open
DRAFT_KEY = "_tour_draft"  # session state: the Draft (a key no widget has: it outlives page changes)
DEFAULT_TITLE = "My tour"
# Not part of a stop's view: the tour's own keys, the sidebar's text (a stop names its sentence in `text`, never
# in its link), presentation style, which the address always carries (`present=False` too) and a stop
# must not switch off in a lecture hall, and a class's code and lecturer key: a tour file is shared, a class's
# secrets are not.
LEFT_OUT_OF_STOPS = frozenset(
    {*tours.RESERVED_KEYS, tours.TEXT_KEY, presentation.KEY, classroom.CODE_LINK_KEY, classroom.LECTURER_LINK_KEY}
)
SHOWN_LINK_CHARACTERS = 60


@dataclass(frozen=True)
class DraftStop:
    number: int  # names the stop's fields, which move with it when it moves; never reused
    stop: tours.Stop


@dataclass
class Draft:
    """The tour being built in this session."""

    title: str = DEFAULT_TITLE
    stops: list[DraftStop] = field(default_factory=list)
    fix_sentence: bool = False  # the next stop keeps the sidebar's sentence as its own
    made: int = 0  # stops made so far: the next one's number

    def as_tour(self) -> Tour:
        return Tour(title=self.title, description="", stops=tuple(entry.stop for entry in self.stops))


def draft() -> Draft:
    """This session's draft (an empty one at first)."""
    return st.session_state.setdefault(DRAFT_KEY, Draft())


def checked(built: Draft) -> Tour:
    """The tour `built` describes, as its file reads back (TourError names the first problem)."""
    return tours.read_tour(tours.write_tour(built.as_tour()), tour.pages())


def show(page: str) -> None:
    """The sidebar's "Build a tour" section (below the tour picker), on the page `page` ("home" for the welcome
    page). Like the picker, its content is sent only while it is open."""
    with st.sidebar:
        # Open from lesson to lesson: the lecturer walks through them, adding views.
        section = widgets.expander_if_open(
            "Build a tour", SECTION_KEY, icon=":material/edit_location_alt:", across_pages=True
        )
    if section is None:
        return
    built = draft()
    with section:
        built.title = _field(st.text_input, "Tour title", "tour_build_title", built.title, tours.MAX_TITLE_CHARACTERS)
        _adding(built, page)
        for position, entry in enumerate(built.stops):
            _edit(built, position, entry)
        if built.stops:
            _play_and_download(built)


def _field(draw: Any, label: str, key: str, value: str, max_chars: int | None = None, **widget: Any) -> str:
    """A text field showing the draft's `value` (given back to it when Streamlit forgot the field's state)."""
    if key not in st.session_state:
        st.session_state[key] = value
    return draw(label, key=key, max_chars=max_chars, **widget)


# ----- adding the view on screen ------------------------------------------------------------------------


def _adding(built: Draft, page: str) -> None:
    """The next stop's sentence (the learner's, or the sidebar's now), and the button that adds the view."""
    if "tour_build_sentence" not in st.session_state:
        st.session_state["tour_build_sentence"] = built.fix_sentence
    built.fix_sentence = st.radio(
        "The new stop's sentence",
        (False, True),
        format_func=lambda fixed: "the sidebar's, now" if fixed else "the learner's",
        key="tour_build_sentence",
        horizontal=True,
        help="A stop follows the text each learner studies, or has a sentence of its own (its link picks a token "
        "by its position, its notes name a word): it is put in the sidebar when the stop opens.",
    )
    full = len(built.stops) >= tours.MAX_STOPS
    a_lesson = page in tour.pages()  # the Class page is the lecturer's own, not a view to show
    st.button(
        "Add this view as a stop",
        key="tour_build_add",
        icon=":material/add_location_alt:",
        on_click=_add,
        args=(page,),
        disabled=full or not a_lesson,
        type="primary",
        help="This page with everything its address says (the exercise open on it too)",
    )
    if not a_lesson:
        st.caption("This page is not a lesson: open one of the lessons to add its view.")
    elif full:
        st.caption(f"This tour has {tours.MAX_STOPS} stops, as many as a tour may have: remove one to add another.")
    elif not built.stops:
        st.caption("No stops yet: set up a view on any page, then add it here.")


def _add(page: str) -> None:
    """Record the view on screen as the tour's last stop (the button's callback: this run has not redrawn the
    view yet, so the address the browser sent is the view's)."""
    built = draft()
    if len(built.stops) >= tours.MAX_STOPS or page not in tour.pages():
        return
    query = tuple((key, value) for key, value in st.query_params.items() if key not in LEFT_OUT_OF_STOPS)
    fixed = st.session_state.get("tour_build_sentence", built.fix_sentence)
    text = st.session_state.get(tours.TEXT_KEY, "").strip() if fixed else ""
    stop = tours.Stop(page=page, query=query, title=tour.pages()[page].title, notes="", text=text)
    built.stops.append(DraftStop(built.made, stop))
    built.made += 1


# ----- the stops ---------------------------------------------------------------------------------------


def _prefix(entry: DraftStop) -> str:
    return f"tour_build_{entry.number}"


def _edit(built: Draft, position: int, entry: DraftStop) -> None:
    """The stop's fields, its link, and the buttons that move or remove it; what the fields hold goes into the
    draft (first thing: the link shown is the one the stop has now, its exercise just changed included)."""
    entry = built.stops[position] = _from_fields(entry)
    stop, prefix = entry.stop, _prefix(entry)
    with st.container(border=True, key=f"{prefix}_box"):
        link = stop.file_link
        shown = link if len(link) <= SHOWN_LINK_CHARACTERS else link[:SHOWN_LINK_CHARACTERS] + "…"
        st.caption(f"**Stop {position + 1}** · {visible(shown)}")
        _field(st.text_input, "Title", f"{prefix}_title", stop.title, tours.MAX_TITLE_CHARACTERS)
        _field(st.text_area, "Notes", f"{prefix}_notes", stop.notes, tours.MAX_NOTES_CHARACTERS, height=68)
        # No max_chars: Streamlit would cut a longer sentence from the sidebar short in silence; the check says so.
        _field(
            st.text_area,
            "Its own sentence",
            f"{prefix}_text",
            stop.text,
            height=68,
            placeholder="None: the learner's sentence",
        )
        _exercise(stop, prefix)
        # One row of small buttons, each as wide as its label: in three columns of the sidebar's width the
        # labels had no room and showed as bare icons.
        last = len(built.stops) - 1
        with st.container(horizontal=True, gap="small", key=f"{prefix}_moves"):
            st.button(
                "Up",
                key=f"{prefix}_up",
                icon=":material/arrow_upward:",
                disabled=position == 0,
                on_click=_move,
                args=(entry.number, -1),
                type="tertiary",
            )
            st.button(
                "Down",
                key=f"{prefix}_down",
                icon=":material/arrow_downward:",
                disabled=position == last,
                on_click=_move,
                args=(entry.number, 1),
                type="tertiary",
            )
            st.button(
                "Remove",
                key=f"{prefix}_remove",
                icon=":material/delete:",
                on_click=_remove,
                args=(entry.number,),
                type="tertiary",
            )


def _exercise(stop: tours.Stop, prefix: str) -> None:
    """The exercise the stop opens: one its lesson offers, or none (at first, the one open on screen)."""
    offered = tour.pages()[stop.page].exercises
    if not offered:
        return
    opened = dict(stop.query).get(EXERCISE_KEY, NONE_OPEN)
    key = f"{prefix}_exercise"
    if key not in st.session_state:
        st.session_state[key] = opened if opened in offered else NONE_OPEN
    titles = _exercise_titles(stop.page)
    st.selectbox(
        "Exercise",
        (NONE_OPEN, *offered),
        format_func=lambda name: "none" if name == NONE_OPEN else titles.get(name, name),
        key=key,
    )


def _from_fields(entry: DraftStop) -> DraftStop:
    """The stop as its fields hold it now (its draft's values where Streamlit holds no state for a field)."""
    stop, prefix, state = entry.stop, _prefix(entry), st.session_state
    query = stop.query
    chosen = state.get(f"{prefix}_exercise")
    if chosen is not None and chosen != dict(query).get(EXERCISE_KEY, NONE_OPEN):
        query = (*((key, value) for key, value in query if key != EXERCISE_KEY), (EXERCISE_KEY, chosen))
    edited = replace(
        stop,
        query=query,
        title=state.get(f"{prefix}_title", stop.title),
        notes=state.get(f"{prefix}_notes", stop.notes),
        text=state.get(f"{prefix}_text", stop.text),
    )
    return replace(entry, stop=edited)


def _exercise_titles(page: str) -> dict[str, str]:
    """The titles the lesson's picker gives its exercises, by their names in links."""
    offers = importlib.import_module(f"lessons.{page}.exercises").OFFERS
    return {name: offer.title for name, offer in offers.items()}


def _position(built: Draft, number: int) -> int | None:
    """Where the stop `number` is now (None once removed: a second click on Remove, sent before the first ran)."""
    return next((position for position, entry in enumerate(built.stops) if entry.number == number), None)


def _move(number: int, step: int) -> None:
    built = draft()
    here = _position(built, number)
    if here is not None and 0 <= here + step < len(built.stops):
        built.stops[here], built.stops[here + step] = built.stops[here + step], built.stops[here]


def _remove(number: int) -> None:
    built = draft()
    here = _position(built, number)
    if here is not None:
        del built.stops[here]


# ----- playing and downloading -------------------------------------------------------------------------


def _play_and_download(built: Draft) -> None:
    try:
        playable = checked(built)
    except TourError as error:
        st.error(f"Not yet a tour to play or download: {visible(str(error))}", icon=":material/error:")
        return
    st.button("Play this tour", key="tour_build_play", icon=":material/play_arrow:", on_click=_play, width="stretch")
    st.download_button(
        "Download as TOML",
        tours.write_tour(playable),
        file_name=file_name(playable.title),
        mime="application/toml",
        key="tour_build_download",
        icon=":material/download:",
        on_click="ignore",
        width="stretch",
    )


def _play() -> None:
    """Hand the tour to the tour bar, as an uploaded file is, and start it at its first stop. (A callback runs
    before the fields are drawn again: what was typed in them last is read from their state.)"""
    built = draft()
    built.title = st.session_state.get("tour_build_title", built.title)
    built.stops = [_from_fields(entry) for entry in built.stops]
    try:
        playable = checked(built)
    except TourError:  # the section says why as it is drawn again
        return
    tour.offer_in_this_session(tour.BUILT, playable)
    tour.start(tour.BUILT)


def file_name(title: str) -> str:
    """A file name made from the tour's title: "Attention, day 1" -> "attention-day-1.toml"."""
    stem = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60].strip("-")
    return f"{stem or 'tour'}.toml"
