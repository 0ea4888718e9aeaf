"""The guided tour: a bar at the top of every page while a tour runs, and the sidebar's way to start one.

The link carries the tour and its stop (`?tour=default&stop=4`, beside the stop's own parameters), so a link
opens a tour at any stop. Previous and Next (or the left and right arrow keys) open the neighbouring stop's
link. The learner's text stays from stop to stop, except at a stop with a sentence of its own, which the bar
announces. Tours come from the app's `tours/` folder, from a folder the operator names in ANATOMY_TOURS (the way to
offer a class its own tours on a hosted server), and, for one browser session, from a file the teacher
uploads or, when the app runs on their own computer, names by its path, and from the sidebar's tour builder
(`tour_builder`). What a file says is shown as written.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path

import streamlit as st

from lessons.common import hosting, tours
from lessons.common.safe_text import escape_markdown, visible
from lessons.common.tours import Tour, TourError
from lessons.common.ui import frame, linked, widgets
from lessons.common.words import counted

TOUR, STOP = tours.RESERVED_KEYS  # link keys and session state
NO_TOUR = ""
YOURS = "yours"  # the name of the tour a teacher gave in this session (a file)
BUILT = "built"  # the name of the tour a teacher built in this session's sidebar (tour_builder)
OPERATOR_VARIABLE = "ANATOMY_TOURS"  # a folder of tour files the operator offers besides the shipped ones
KEPT_ACROSS_STOPS = (tours.TEXT_KEY, "model", "present")  # the sidebar's choices, kept from stop to stop
# Session state: the tours of this session only, by their names in links: the Tour uploaded (or read from a
# path), and the one built in the sidebar. Two names, so that a file left in the uploader, read again on every
# run, never takes the place of the tour the teacher built.
SESSION_TOURS = {YOURS: "_tour_yours", BUILT: "_tour_built"}
_GO_TO = "_tour_go_to"  # session state: the stop a Previous or Next button asked for


@st.cache_resource(show_spinner=False)
def pages() -> dict[str, tours.Page]:
    """Every page a stop can open, by its name in links, with the exercises its lesson offers."""
    return {lesson.name: tours.Page(lesson.title, _exercises_of(lesson.name)) for lesson in frame.LESSONS}


def _exercises_of(lesson: str) -> tuple[str, ...]:
    if importlib.util.find_spec(f"lessons.{lesson}") is None:
        return ()  # the welcome page has no lesson folder, and asks nothing
    return tuple(importlib.import_module(f"lessons.{lesson}.exercises").OFFERS)


@st.cache_resource(show_spinner=False)
def shipped() -> dict[str, Tour]:
    """The tours of the app's `tours/` folder, read once per server process."""
    return tours.shipped_tours(pages())


@st.cache_resource(show_spinner=False)
def operator_tours(folder: str) -> tuple[dict[str, Tour], tuple[str, ...]]:
    """The tours of the operator's folder, and what is wrong with the files that cannot be used."""
    offered, problems = {}, []
    for path in sorted(Path(folder).glob("*.toml")):
        try:
            offered[path.stem] = tours.read_tour_file(path, pages())
        except TourError as error:
            problems.append(f"{path.name}: {error}")
    if not Path(folder).is_dir():
        problems.append(f"{OPERATOR_VARIABLE} names {folder}, which is not a folder.")
    return offered, tuple(problems)


def available() -> dict[str, Tour]:
    """Every tour this session can take, by the name its link uses."""
    offered = dict(shipped())
    folder = os.environ.get(OPERATOR_VARIABLE)
    if folder:
        offered.update({name: tour for name, tour in operator_tours(folder)[0].items() if name not in offered})
    for name, key in SESSION_TOURS.items():
        if st.session_state.get(key) is not None:
            offered[name] = st.session_state[key]
    return offered


def offer_in_this_session(name: str, tour: Tour) -> None:
    """Offer `tour` under `name` (one of SESSION_TOURS) to this browser session only."""
    st.session_state[SESSION_TOURS[name]] = tour


# ----- the bar ----------------------------------------------------------------------------------------


def show_bar(page: str) -> None:
    """While a tour runs: where in it we are, the stop's notes, and the way to the stops around it.
    app.py calls this before the lesson, so the bar is the first thing on the page."""
    offered = available()
    pasted = linked.is_news(TOUR) or linked.is_news(STOP)  # binding them marks them as read
    name = linked.bind(
        TOUR,
        NO_TOUR,
        fits=lambda value: value == NO_TOUR or value in offered,
        requirement=f"no such tour; the tours here are {', '.join(offered)}",
    )
    if name == NO_TOUR:
        linked.unpublish(TOUR)
        linked.unpublish(STOP)
        return
    tour = offered[name]
    number = linked.bind(
        STOP, 1, parse=int, fits=lambda value: 1 <= value <= len(tour.stops), requirement=f"1 to {len(tour.stops)}"
    )
    # A stop number the tour lacks was just reported, above the bar: opening stop 1's view would start another
    # page and take the report with it, so the page the link named stays, and the bar starts at stop 1.
    refused = linked.in_link(STOP) not in (None, str(number))
    going_to = st.session_state.pop(_GO_TO, None)
    if going_to is not None:
        open_stop(name, tour, going_to)
    stop = tour.stops[number - 1]
    # A link that names only the tour and the stop (the welcome page's address) opens the stop's own view; a
    # lesson's address with a tour's stop shows that lesson, as it was on screen when the link was copied. A stop
    # number the link could not use leaves the page the link named in place, with the report above the bar.
    if (
        pasted
        and not refused
        and (page == "home" or stop.page == page)
        and any(linked.in_link(key) is None for key, _ in stop.parameters)
    ):
        open_stop(name, tour, number)
    linked.publish(TOUR, name)
    linked.publish(STOP, number)
    with st.container(border=True, key="tour_bar"):
        st.progress(number / len(tour.stops), text=f"Tour: {visible(tour.title)} · stop {number} of {len(tour.stops)}")
        st.markdown(f"**{visible(stop.title)}**" + (f"  \n{visible(stop.notes)}" if stop.notes else ""))
        if stop.text:
            st.caption(f"This stop uses its own sentence, now in the sidebar: “{visible(stop.text)}”.")
        if stop.page != page:
            st.caption(f"This page is not the stop's own: Previous and Next go on from stop {number}.")
        if name in SESSION_TOURS:
            st.caption("Your own tour lives in this browser session only: its links open it nowhere else.")
        back, forward, leave = st.columns([1, 1, 1])
        back.button(
            "Previous",
            key="tour_previous",
            icon=":material/arrow_back:",
            disabled=number == 1,
            on_click=_go_to,
            args=(number - 1,),
            shortcut="left",
            width="stretch",
        )
        forward.button(
            "Next",
            key="tour_next",
            icon=":material/arrow_forward:",
            disabled=number == len(tour.stops),
            on_click=_go_to,
            args=(number + 1,),
            shortcut="right",
            type="primary",
            width="stretch",
        )
        leave.button("End the tour", key="tour_end", icon=":material/close:", on_click=_end, width="stretch")


def _go_to(number: int) -> None:
    st.session_state[_GO_TO] = number


def _end() -> None:
    linked.set_value(TOUR, NO_TOUR)


def open_stop(name: str, tour: Tour, number: int) -> None:
    """Open stop `number` of `tour`: its page, with its link's parameters and the tour's."""
    stop = tour.stops[number - 1]
    linked.set_value(STOP, number)
    # The stop shows what its link says and defaults for the rest, as the link opened anew would: the view's
    # other choices are forgotten (the text, the model and presentation style stay the session's own, unless
    # the stop has a sentence of its own).
    linked.forget_all_but({key for key, _ in stop.parameters} | {*KEPT_ACROSS_STOPS, TOUR, STOP})
    lesson = next(lesson for lesson in frame.LESSONS if lesson.name == stop.page)
    params = list(stop.query)
    if stop.text:  # before the lesson's pickers read it: token positions in the link count in this text
        params.append((tours.TEXT_KEY, _in_link(stop.text)))
    st.switch_page(lesson.file, query_params=[*params, (TOUR, name), (STOP, str(number))])


def _in_link(text: str) -> str:
    encoded = linked.encode_text(text)
    assert encoded is not None, "a stop's text is short enough to fit in a link (tours.MAX_TEXT_CHARACTERS)"
    return encoded


# ----- starting one, in the sidebar ------------------------------------------------------------------------


PICKER_KEY = "tour_picker"  # session state: True while the sidebar's "Guided tour" section is open
# What the section's widgets hold, kept while it is closed: a widget that is not drawn loses its state.
_KEPT = {"tour_choice": "_tour_choice_kept", "tour_path": "_tour_path_kept"}


def show_picker() -> None:
    """The sidebar's guided-tour section: choose a tour and start it, or give your own.

    Its content is sent only while it is open (opening it reruns the page, from the caches): closed, its file
    uploader, choice and buttons would still make a first visit's browser load and draw them, 0.05 to 0.09 s of
    a lesson's cold paint on a 2-core machine. What was chosen or typed in it is kept while it is closed."""
    with st.sidebar:
        section = widgets.expander_if_open("Guided tour", PICKER_KEY, icon=":material/tour:")
    if section is None:
        return
    offered = available()
    _restore_kept(offered)
    with section:
        names = list(offered)
        chosen = st.selectbox(
            "Tour",
            names,
            format_func=lambda name: offered[name].title,
            key="tour_choice",
            help="Tours to take a class through the lessons",
        )
        if chosen is not None:
            tour = offered[chosen]
            if tour.description:
                st.caption(visible(tour.description))
            st.button("Start the tour", key="tour_start", icon=":material/play_arrow:", on_click=start, args=(chosen,))
        _your_own()
        folder = os.environ.get(OPERATOR_VARIABLE)
        for problem in operator_tours(folder)[1] if folder else ():
            st.caption(escape_markdown(problem))
    for key, kept in _KEPT.items():
        if key in st.session_state:
            st.session_state[kept] = st.session_state[key]


def _restore_kept(offered: dict[str, Tour]) -> None:
    """Give the section's widgets back what they held when it was last closed."""
    for key, kept in _KEPT.items():
        value = st.session_state.get(kept)
        if key not in st.session_state and value is not None and (key != "tour_choice" or value in offered):
            st.session_state[key] = value


def start(name: str) -> None:
    """Start the tour `name` at its first stop (a button's callback: the bar opens the stop as the page runs)."""
    linked.set_value(TOUR, name)
    st.session_state[_GO_TO] = 1


def _your_own() -> None:
    """Your own tour file: uploaded, or (on your own computer) named by its path; kept for this session."""
    upload = st.file_uploader(
        "Your own tour (a TOML file)", type=["toml"], key="tour_upload", help="See docs/teaching.md for the format"
    )
    path = (
        ""
        if hosting.current().hosted
        else st.text_input("…or its path on this computer", key="tour_path", max_chars=4096)
    )
    if upload is None and not path.strip():
        return
    try:
        if upload is not None:
            if upload.size > tours.MAX_FILE_BYTES:  # said before decoding what may be a large binary file
                raise TourError(tours.TOO_LARGE)
            try:
                text = upload.getvalue().decode("utf-8")
            except UnicodeDecodeError:
                raise TourError("The file is not text in UTF-8.") from None
            yours = tours.read_tour(text, pages())
        else:
            yours = tours.read_tour_file(Path(path.strip()).expanduser(), pages())
    except TourError as error:
        st.error(visible(str(error)), icon=":material/error:")
        return
    offer_in_this_session(YOURS, yours)
    st.caption(f"Read “{visible(yours.title)}”: {counted(len(yours.stops), 'stop')}.")
    st.button("Start your tour", key="tour_start_yours", icon=":material/play_arrow:", on_click=start, args=(YOURS,))
