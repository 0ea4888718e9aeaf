"""Guided tours: an ordered list of stops, each a view of this app (a link) with a few words to say there.

A tour is a small TOML file a teacher can write by hand:

    title = "Attention in one lecture"

    [[stop]]
    title = "Words become numbers"              # optional: the lesson's own title otherwise
    link = "tokenization?tok_tab=Tokens+%E2%86%92+vectors"
    text = "The bank raised rates"              # optional: the stop's own sentence
    notes = "What the class should look at here."

A stop's link is a page of this app followed by its parameters, exactly what the address bar shows after the
server's address, less the sidebar's text: a stop keeps the learner's text, unless it needs a sentence of its
own (token positions in its link, notes about a given word), which it names in `text` and the tour bar
announces. An exercise the link opens must be one its lesson offers. Files are read with the standard
library's `tomllib` and checked here, so that a mistake is named with its place in the file ("stop 3: …") and
nothing in a file (a web address, markup) does anything but be shown as written. The tours shipped with the
app are in the `tours/` folder. `write_tour` writes a tour in the same format (the sidebar's tour builder
downloads what it writes), and what it writes reads back as the same tour.

This module holds no Streamlit: `lessons.common.ui.tour` offers the tours and draws the tour bar.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

from lessons.common.exercises import LINK_KEY as EXERCISE_KEY
from lessons.common.exercises import NONE_OPEN

SHIPPED_FOLDER = Path(__file__).resolve().parents[2] / "tours"
RESERVED_KEYS = ("tour", "stop")  # link keys of the tour itself: a stop's link may not set them
TEXT_KEY = "text"  # the sidebar's text in a link: a stop sets it through its own `text`, never its link
MAX_FILE_BYTES = 100_000
MAX_STOPS = 200
MAX_TITLE_CHARACTERS = 120
MAX_NOTES_CHARACTERS = 4_000
MAX_LINK_CHARACTERS = 16_000
MAX_TEXT_CHARACTERS = 2_000  # a stop's own sentence travels in the link as it is (longer text is compressed)
TOO_LARGE = f"The file is larger than {MAX_FILE_BYTES // 1000} kB: a tour needs far less."
TOUR_KEYS = {"title", "description", "stop"}
STOP_KEYS = {"title", "link", "text", "notes"}
FILE_HEADER = "# A guided tour of Transformer Anatomy (docs/teaching.md describes the format)."
# What a TOML basic string must escape (TOML 1.0, "String"): the quotation mark, the backslash and the control
# characters; the short escapes where TOML has one, \uXXXX for the other controls, DEL (U+007F) included.
_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


class TourError(ValueError):
    """A tour file that cannot be used; the message says where and why, for the teacher who wrote it."""


@dataclass(frozen=True)
class Page:
    """What a tour file is checked against: a page of the app, by its name in links."""

    title: str  # a stop's title when it has none
    exercises: tuple[str, ...] = ()  # the exercises the page offers, by their names in links


@dataclass(frozen=True)
class Stop:
    page: str  # the lesson's name (its page file's stem): "attention"; "home" for the welcome page
    query: tuple[tuple[str, str], ...]  # the link's parameters, in order (never the sidebar's text)
    title: str
    notes: str
    text: str = ""  # the stop's own sentence; empty: the learner's text stays

    @property
    def parameters(self) -> tuple[tuple[str, str], ...]:
        """What opening the stop puts in the link: its link's parameters, and its own sentence if it has one."""
        return (*self.query, (TEXT_KEY, self.text)) if self.text else self.query

    @property
    def link(self) -> str:
        """The stop as a link relative to the app: "attention?att_source=model"."""
        path = "" if self.page == "home" else self.page
        return f"{path}?{urlencode(self.parameters)}" if self.parameters else path

    @property
    def file_link(self) -> str:
        """The stop's `link` as its file writes it: the page and the link's parameters, never the text."""
        return f"{self.page}?{urlencode(self.query)}" if self.query else self.page


@dataclass(frozen=True)
class Tour:
    title: str
    description: str
    stops: tuple[Stop, ...]


def read_tour(text: str, pages: Mapping[str, Page]) -> Tour:
    """The tour a TOML text describes, checked against the app's `pages` (by their names in links).
    Raises TourError naming the first problem found."""
    if len(text.encode("utf-8")) > MAX_FILE_BYTES:
        raise TourError(TOO_LARGE)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise TourError(f"The file is not valid TOML: {error}.") from None
    _only_known_keys(data, TOUR_KEYS, "The file")
    title = _text(data, "title", "The file", MAX_TITLE_CHARACTERS, required=True)
    description = _text(data, "description", "The file", MAX_NOTES_CHARACTERS)
    raw_stops = data.get("stop")
    if not isinstance(raw_stops, list) or not raw_stops:
        raise TourError("The file has no stops: add at least one [[stop]] table with a link.")
    if len(raw_stops) > MAX_STOPS:
        raise TourError(f"The file has {len(raw_stops)} stops; a tour may have at most {MAX_STOPS}.")
    stops = tuple(_read_stop(raw, number, pages) for number, raw in enumerate(raw_stops, 1))
    return Tour(title=title, description=description, stops=stops)


def read_tour_file(path: Path, pages: Mapping[str, Page]) -> Tour:
    """The tour in the file at `path` (TourError if it cannot be read or used)."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise TourError(TOO_LARGE)
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TourError(f"There is no tour file at {path}.") from None
    except IsADirectoryError:
        raise TourError(f"{path} is a folder, not a tour file.") from None
    except UnicodeDecodeError:
        raise TourError(f"{path} is not a text file in UTF-8.") from None
    except OSError as error:
        raise TourError(f"{path} cannot be read: {error.strerror}.") from None
    return read_tour(text, pages)


def shipped_tours(pages: Mapping[str, Page], folder: Path = SHIPPED_FOLDER) -> dict[str, Tour]:
    """The tours in `folder`, by file stem ("default" first). A shipped tour that does not read is a bug:
    the error is raised, and a test reads every one."""
    paths = sorted(folder.glob("*.toml"), key=lambda path: (path.stem != "default", path.stem))
    return {path.stem: read_tour_file(path, pages) for path in paths}


def write_tour(tour: Tour) -> str:
    """The tour as a TOML file in the format `read_tour` reads, which reads it back as the same tour. Every
    value is written as a TOML basic string, escaped character by character (a note may hold quotes,
    backslashes, line breaks, `]]`, three quotation marks in a row), never pasted between quotes as it is."""
    lines = [FILE_HEADER, f"title = {toml_string(tour.title)}"]
    if tour.description:
        lines.append(f"description = {toml_string(tour.description)}")
    for stop in tour.stops:
        lines += ["", "[[stop]]"]
        if stop.title:
            lines.append(f"title = {toml_string(stop.title)}")
        lines.append(f"link = {toml_string(stop.file_link)}")
        if stop.text:
            lines.append(f"text = {toml_string(stop.text)}")
        if stop.notes:
            lines.append(f"notes = {toml_string(stop.notes)}")
    return "\n".join(lines) + "\n"


def toml_string(text: str) -> str:
    """`text` as a TOML basic string, in double quotes: it reads back as exactly `text`."""
    escaped = (
        _TOML_ESCAPES.get(char) or (f"\\u{ord(char):04X}" if char < " " or char == "\x7f" else char) for char in text
    )
    return '"' + "".join(escaped) + '"'


def _read_stop(raw: object, number: int, pages: Mapping[str, Page]) -> Stop:
    where = f"Stop {number}"
    if not isinstance(raw, dict):
        raise TourError(f"{where} is not a table: write it as [[stop]] followed by its link and notes.")
    _only_known_keys(raw, STOP_KEYS, where)
    link = _text(raw, "link", where, MAX_LINK_CHARACTERS, required=True)
    page, query = _page_and_query(link, where, pages)
    _refuse_an_exercise_not_offered(query, where, page, pages[page])
    return Stop(
        page=page,
        query=query,
        title=_text(raw, "title", where, MAX_TITLE_CHARACTERS) or pages[page].title,
        notes=_text(raw, "notes", where, MAX_NOTES_CHARACTERS),
        text=_text(raw, "text", where, MAX_TEXT_CHARACTERS),
    )


def _page_and_query(link: str, where: str, pages: Mapping[str, Page]) -> tuple[str, tuple[tuple[str, str], ...]]:
    parts = urlsplit(link.strip())
    if parts.scheme or parts.netloc:
        raise TourError(
            f"{where}: its link “{link[:80]}” is a web address; a stop links to a page of this app, as the "
            "address bar shows it after the server's address, e.g. “attention?text=time+flies”."
        )
    page = parts.path.strip("/") or "home"
    if page not in pages:
        known = ", ".join(sorted(pages))
        raise TourError(f"{where}: “{page[:80]}” is not a page of this app (the pages are {known}).")
    query = tuple(parse_qsl(parts.query, keep_blank_values=True))
    reserved = sorted({key for key, _ in query} & set(RESERVED_KEYS))
    if reserved:
        raise TourError(f"{where}: its link sets “{reserved[0]}”, which the tour itself uses.")
    if any(key == TEXT_KEY for key, _ in query):
        raise TourError(
            f"{where}: its link sets the sidebar's “{TEXT_KEY}”. A stop keeps the learner's text; a stop that needs "
            f'a sentence of its own names it beside the link, as {TEXT_KEY} = "…", and the tour bar says so.'
        )
    return page, query


def _refuse_an_exercise_not_offered(query: tuple[tuple[str, str], ...], where: str, name: str, page: Page) -> None:
    """Refuses a link that opens an exercise its page does not offer (a page would say so only on the day)."""
    for key, value in query:
        if key == EXERCISE_KEY and value not in (NONE_OPEN, *page.exercises):
            offered = f"its exercises are {', '.join(page.exercises)}" if page.exercises else "it offers no exercises"
            raise TourError(
                f"{where}: its link opens the exercise “{value[:40]}”, which {page.title} ({name}) does not offer "
                f"({offered})."
            )


def _only_known_keys(table: dict, known: set[str], where: str) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        allowed = ", ".join(sorted(known))
        raise TourError(f"{where} has a key “{unknown[0][:40]}” that tours do not use (they use {allowed}).")


def _text(table: dict, key: str, where: str, max_characters: int, required: bool = False) -> str:
    value = table.get(key)
    if value is None:
        if required:
            raise TourError(f'{where} needs a {key} = "…".')
        return ""
    if not isinstance(value, str):
        raise TourError(f"{where}: its {key} must be text in quotes, not {type(value).__name__}.")
    if required and not value.strip():
        raise TourError(f"{where}: its {key} is empty.")
    if len(value) > max_characters:
        raise TourError(f"{where}: its {key} has {len(value):,} characters; at most {max_characters:,} are read.")
    return value.strip()
