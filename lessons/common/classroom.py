"""A class that answers together: the class's answers kept in a database, outside any one server process.

A lecturer starts a class and gets two secrets: the class code, which the student link carries, and the
lecturer key, which only the lecturer link carries. A student's answer to an exercise is recorded under the
class and the question, with an anonymous id drawn at random in the student's browser, so that a changed
answer replaces the earlier one. The lecturer sees, per question, how many gave each answer, and reveals the
answer (and the spread) to the class when ready.

The same code runs on SQLite (the single-process default: a file, nothing to install or start) and on
PostgreSQL (behind several replicas: they must share the answers). One connection URL chooses
(`ANATOMY_CLASS_DATABASE_URL`, SQLAlchemy's form); the tables are created and upgraded by the Alembic
migrations in `lessons/common/class_migrations/`, never by hand.

What is stored, and what is not: codes, keys and student ids only as SHA-256 digests (a copy of the database
lets nobody join a class or read its spread); no name, no address; every value a link or a form gives reaches
the database as a bound parameter. Limits keep one student, or one class, from filling the tables.

This module holds what a class is (its secrets, limits, questions and spreads) and needs no database
library: the tables and the store are `lessons.common.class_store` (SQLAlchemy, imported only by a server that
runs a class). Neither holds Streamlit: `lessons.common.ui.classroom` shows the banner, records answers and
draws the lecturer's page.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

DATABASE_URL_VARIABLE = "ANATOMY_CLASS_DATABASE_URL"
DEFAULT_DATABASE_FILE = Path(__file__).resolve().parents[2] / "instance" / "classes.sqlite"
CLASS_PAGE_PATH = "class"  # the URL path of the lecturer's page
CODE_LINK_KEY, LECTURER_LINK_KEY = "class", "key"  # what the links call the class code and the lecturer key

CODE_BYTES = 16  # 128 random bits: the student link's class code
KEY_BYTES = 24  # 192 random bits: the lecturer link's key
MAX_TITLE_CHARACTERS = 120
MIN_MINUTES, MAX_MINUTES, DEFAULT_MINUTES = 5, 8 * 60, 90
MAX_OPEN_CLASSES = 200  # classes open at once on one database: a bound on what visitors can create
MAX_QUESTIONS_PER_STUDENT = 300  # distinct questions one student may answer in one class
MAX_ANSWERS_PER_CLASS = 100_000  # a class of 500 answering 200 questions
MAX_QUESTIONS_PER_CLASS = 2_000
MAX_RESPONSE_CHARACTERS = 200
MAX_QUESTION_CHARACTERS = 4_000
MAX_SHOWN_VALUES = 12  # a number question's spread: the most frequent answers, the rest as "other"
OTHER = "other answers"


class ClassError(Exception):
    """Something a visitor should read: the message says what happened and what to do."""


class ClassStoreUnavailable(ClassError):
    """The database cannot be reached now (stopped, restarting, the network): try again later."""


class UnknownClass(ClassError):
    """No class has this code (mistyped, deleted), or the lecturer key is not this class's."""


class ClassClosed(ClassError):
    """The class has closed: it takes no more answers."""


class LimitReached(ClassError):
    """A bound on what one student or one class may store was reached."""


@dataclass(frozen=True)
class ClassInfo:
    """A class as its students see it (no secret in it)."""

    title: str
    opened_at: datetime
    closes_at: datetime

    def is_open(self, now: datetime | None = None) -> bool:
        return (now or current_time()) < self.closes_at


@dataclass(frozen=True)
class NewClass:
    """What starting a class gives the lecturer, once: the two secrets (only their digests are stored)."""

    code: str
    lecturer_key: str
    info: ClassInfo


@dataclass(frozen=True)
class Question:
    """An exercise as one student was asked it: enough for the lecturer to read it and draw its spread."""

    asked: str  # names the question on its page and text, nothing of its answer (check_yourself.asked_here)
    page: str  # the lesson's URL path
    title: str  # the exercise's short title
    question: str  # markdown, anything from the learner's text already escaped
    options: tuple[str, ...]  # empty: the answer is a number
    decimals: int
    answer: str  # as the reveal writes it


@dataclass(frozen=True)
class Spread:
    """How the class answered one question: a count per answer with whether that answer is right (in the
    options' order; for a number, the values given, smallest first, the rarest past a dozen together as
    "other answers"), how many answered and how many of them right, and whether it is revealed."""

    question: Question
    counts: tuple[tuple[str, int, bool], ...]
    answered: int
    right: int
    revealed: bool


def digest(secret: str) -> str:
    """The stored form of a code, key or student id: its SHA-256 (a copy of the table reveals none of them)."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def storable(text: str) -> str:
    """Text any database keeps as it is: PostgreSQL refuses the NUL character in text (it becomes U+FFFD, the
    replacement character), and UTF-8 has no lone surrogates (each becomes "?")."""
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")


def new_student_id() -> str:
    """A student's anonymous id, drawn once per browser: it says nothing of who they are."""
    return secrets.token_urlsafe(16)


def looks_like_a_code(text: str | None) -> bool:
    """Whether a link's value could be a class code or key at all (URL-safe base64, a sane length): anything
    else is refused before it reaches the database."""
    if not text or not 16 <= len(text) <= 64:
        return False
    return all(character.isascii() and (character.isalnum() or character in "-_") for character in text)


def class_links(app_address: str, page_paths: tuple[str, ...], code: str, key: str) -> tuple[str, str]:
    """The student link (the welcome page, with the class code) and the lecturer link (the Class page, with the
    code and the key), from the address the lecturer's browser shows, less the path of any page of the app."""
    base = app_address.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    for path in page_paths:
        if path and base.endswith(f"/{path}"):
            base = base.removesuffix(f"/{path}")
            break
    return (
        f"{base}/?{CODE_LINK_KEY}={code}",
        f"{base}/{CLASS_PAGE_PATH}?{CODE_LINK_KEY}={code}&{LECTURER_LINK_KEY}={key}",
    )


def database_url(environment: dict[str, str] | None = None) -> str:
    """The connection URL in force: the environment's, else a SQLite file beside the app."""
    environment = dict(os.environ) if environment is None else environment
    url = environment.get(DATABASE_URL_VARIABLE, "").strip()
    if url:
        return url
    return f"sqlite:///{DEFAULT_DATABASE_FILE}"


def current_time() -> datetime:
    """Now, in UTC: every time a class stores or compares is UTC."""
    return datetime.now(UTC)
