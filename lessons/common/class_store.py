"""The class tables and the store behind one connection URL (SQLAlchemy; SQLite or PostgreSQL): what a class is,
its limits and secrets, is `lessons.common.classroom`; this module keeps it. The tables are those the Alembic
migrations in `lessons/common/class_migrations/` leave; the app runs them on first use (`ClassStore.upgrade`).

Imported only where a class is run (a student link, the Class page, the lecture hall): SQLAlchemy costs a
server a third of a second and about 12 MB to import.
"""

from __future__ import annotations

import csv
import hmac
import io
import json
import math
import secrets
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from lessons.common import classroom
from lessons.common.classroom import (
    ClassClosed,
    ClassError,
    ClassInfo,
    ClassStoreUnavailable,
    LimitReached,
    NewClass,
    Question,
    Spread,
    UnknownClass,
    digest,
    looks_like_a_code,
    storable,
)

MIGRATIONS = Path(__file__).resolve().parent / "class_migrations"

metadata = sa.MetaData()

# The tables as the migrations leave them (class_migrations/versions): queries are written against these.
classes = sa.Table(
    "classes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("code_digest", sa.String(64), nullable=False, unique=True),
    sa.Column("key_digest", sa.String(64), nullable=False),
    sa.Column("title", sa.String(classroom.MAX_TITLE_CHARACTERS), nullable=False),
    sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("closes_at", sa.DateTime(timezone=True), nullable=False),
    sa.Index("classes_by_closing_time", "closes_at"),
)
questions = sa.Table(
    "questions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("class_id", sa.Integer, sa.ForeignKey("classes.id", ondelete="CASCADE"), nullable=False),
    sa.Column("asked", sa.String(64), nullable=False),
    sa.Column("page", sa.String(64), nullable=False),
    sa.Column("title", sa.String(200), nullable=False),
    sa.Column("question", sa.Text, nullable=False),
    sa.Column("options", sa.Text, nullable=False),
    sa.Column("decimals", sa.Integer, nullable=False),
    sa.Column("answer", sa.Text, nullable=False),
    sa.Column("first_asked_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("revealed_at", sa.DateTime(timezone=True), nullable=True),
    sa.UniqueConstraint("class_id", "asked", name="one_row_per_question"),
)
answers = sa.Table(
    "answers",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("question_id", sa.Integer, sa.ForeignKey("questions.id", ondelete="CASCADE"), nullable=False),
    sa.Column("class_id", sa.Integer, sa.ForeignKey("classes.id", ondelete="CASCADE"), nullable=False),
    sa.Column("student_digest", sa.String(64), nullable=False),
    sa.Column("response", sa.String(classroom.MAX_RESPONSE_CHARACTERS), nullable=False),
    sa.Column("right", sa.Boolean, nullable=False),
    sa.Column("answered_at", sa.DateTime(timezone=True), nullable=False),
    sa.UniqueConstraint("question_id", "student_digest", name="one_answer_per_student"),
    sa.Index("answers_by_class_and_student", "class_id", "student_digest"),
)


def describe(url: str) -> str:
    """The database named for a page or a log: its kind and place, never its password."""
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return f"SQLite ({Path(parsed.database or ':memory:').name})"
    return f"PostgreSQL ({parsed.host or 'local socket'}:{parsed.port or 5432}/{parsed.database})"


class ClassStore:
    """The class tables behind one connection URL. One store serves every session of a server (it keeps no
    per-call state: each method is one transaction)."""

    def __init__(self, url: str):
        self.url = url
        self.engine = _engine(url)
        self._upgraded = threading.Event()
        self._upgrading = threading.Lock()  # sessions arriving together: one runs the migrations

    # ------------------------------------------------------------------------------------------------------
    # Schema

    def upgrade(self) -> None:
        """Bring the tables to the newest migration (Alembic's `upgrade head`); a no-op when they are."""
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        # One transaction, committed at the end: on PostgreSQL the DDL is transactional, and a connection closed
        # without a commit would roll the new tables back (the advisory lock is held until that commit).
        with self._transaction() as connection:
            if connection.dialect.name == "postgresql":  # replicas starting together: one migrates, the others wait
                connection.execute(sa.text("SELECT pg_advisory_xact_lock(7402911)"))
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
        self._upgraded.set()

    def is_reachable(self) -> bool:
        """Whether the database answers now (its tables upgraded, if this is the first time it does)."""
        try:
            self.ensure_upgraded()
            with self._connection() as connection:
                connection.execute(sa.text("SELECT 1"))
        except ClassStoreUnavailable:
            return False
        return True

    def ensure_upgraded(self) -> None:
        if self._upgraded.is_set():
            return
        with self._upgrading:
            if not self._upgraded.is_set():
                self.upgrade()

    # ------------------------------------------------------------------------------------------------------
    # The lecturer's side

    def start_class(self, title: str, minutes: int, now: datetime | None = None) -> NewClass:
        """A new class, open for `minutes` from now, and its two secrets."""
        title = " ".join(storable(title).split())[: classroom.MAX_TITLE_CHARACTERS] or "Class"
        if not classroom.MIN_MINUTES <= minutes <= classroom.MAX_MINUTES:
            raise ClassError(f"A class stays open between {classroom.MIN_MINUTES} and {classroom.MAX_MINUTES} minutes.")
        now = now or classroom.current_time()
        code, key = secrets.token_urlsafe(classroom.CODE_BYTES), secrets.token_urlsafe(classroom.KEY_BYTES)
        info = ClassInfo(title=title, opened_at=now, closes_at=now + timedelta(minutes=minutes))
        with self._transaction() as connection:
            still_open = _count(
                connection, sa.select(sa.func.count()).select_from(classes).where(classes.c.closes_at > now)
            )
            if still_open >= classroom.MAX_OPEN_CLASSES:
                raise LimitReached(
                    f"{classroom.MAX_OPEN_CLASSES} classes are open on this server already; "
                    "try again when one has closed."
                )
            connection.execute(
                classes.insert().values(
                    code_digest=digest(code),
                    key_digest=digest(key),
                    title=info.title,
                    opened_at=info.opened_at,
                    closes_at=info.closes_at,
                )
            )
        return NewClass(code=code, lecturer_key=key, info=info)

    def lecturer_class(self, code: str, key: str) -> ClassInfo:
        """The class, when `key` is its lecturer key (compared in constant time); else UnknownClass."""
        with self._connection() as connection:
            return _info(self._lecturer_row(connection, code, key))

    def spread(self, code: str, key: str) -> list[Spread]:
        """Every question the class was asked, first asked first, with how the class answered it."""
        with self._connection() as connection:
            row = self._lecturer_row(connection, code, key)
            asked = connection.execute(
                sa.select(questions).where(questions.c.class_id == row.id).order_by(questions.c.id)
            ).all()
            given = connection.execute(
                sa.select(answers.c.question_id, answers.c.response, answers.c.right).where(
                    answers.c.class_id == row.id
                )
            ).all()
        by_question: dict[int, list[tuple[str, bool]]] = {}
        for question_id, response, right in given:
            by_question.setdefault(question_id, []).append((response, right))
        return [_spread(question, by_question.get(question.id, [])) for question in asked]

    def reveal(self, code: str, key: str, asked: str, revealed: bool = True) -> None:
        """Show (or hide again) the answer and the spread of one question to the class."""
        with self._transaction() as connection:
            row = self._lecturer_row(connection, code, key)
            connection.execute(
                questions.update()
                .where(questions.c.class_id == row.id, questions.c.asked == asked)
                .values(revealed_at=classroom.current_time() if revealed else None)
            )

    def spread_csv(self, code: str, key: str) -> str:
        """The spread as CSV: one row per question and answer given, with its count."""
        rows: list[tuple[str, ...]] = [
            ("page", "exercise", "question", "answer", "count", "right answer", "answered", "answered right")
        ]
        for spread in self.spread(code, key):
            question = spread.question
            for answer, count, _ in spread.counts:
                rows.append(
                    (
                        question.page,
                        question.title,
                        question.question,
                        answer,
                        str(count),
                        question.answer,
                        str(spread.answered),
                        str(spread.right),
                    )
                )
        return _csv(rows)

    def answers_csv(self, code: str, key: str) -> str:
        """Every answer, one row each, the student named only by a short prefix of their id's digest."""
        with self._connection() as connection:
            row = self._lecturer_row(connection, code, key)
            given = connection.execute(
                sa.select(
                    questions.c.page,
                    questions.c.title,
                    questions.c.question,
                    answers.c.student_digest,
                    answers.c.response,
                    answers.c.right,
                    answers.c.answered_at,
                )
                .join(questions, answers.c.question_id == questions.c.id)
                .where(answers.c.class_id == row.id)
                .order_by(answers.c.answered_at, answers.c.id)
            ).all()
        rows: list[tuple[str, ...]] = [
            ("page", "exercise", "question", "student", "answer", "right", "answered at (UTC)")
        ]
        for page, title, question, student, response, right, answered_at in given:
            when = _aware(answered_at).strftime("%Y-%m-%d %H:%M:%S")
            rows.append((page, title, question, student[:10], response, "yes" if right else "no", when))
        return _csv(rows)

    def delete_class(self, code: str, key: str) -> None:
        """The class and every answer it holds, gone."""
        with self._transaction() as connection:
            row = self._lecturer_row(connection, code, key)
            connection.execute(answers.delete().where(answers.c.class_id == row.id))
            connection.execute(questions.delete().where(questions.c.class_id == row.id))
            connection.execute(classes.delete().where(classes.c.id == row.id))

    # ------------------------------------------------------------------------------------------------------
    # The students' side

    def find_class(self, code: str) -> ClassInfo:
        """The class this code opens (open or closed); UnknownClass when there is none."""
        with self._connection() as connection:
            return _info(self._class_row(connection, code))

    def record_answer(
        self, code: str, student_id: str, question: Question, response: str, right: bool, now: datetime | None = None
    ) -> None:
        """Record a student's answer (replacing their earlier answer to the same question)."""
        now = now or classroom.current_time()
        response = storable(response)[: classroom.MAX_RESPONSE_CHARACTERS]
        question = Question(
            asked=question.asked,
            page=storable(question.page),
            title=storable(question.title),
            question=storable(question.question),
            options=tuple(storable(option) for option in question.options),
            decimals=question.decimals,
            answer=storable(question.answer),
        )
        student = digest(student_id)
        with self._transaction() as connection:
            row = self._class_row(connection, code)
            if now >= _aware(row.closes_at):
                raise ClassClosed(f"The class “{row.title}” has closed: answers are no longer recorded.")
            question_id = self._question_id(connection, row.id, question, now)
            earlier = connection.scalar(
                sa.select(answers.c.id).where(answers.c.question_id == question_id, answers.c.student_digest == student)
            )
            if earlier is not None:
                connection.execute(
                    answers.update()
                    .where(answers.c.id == earlier)
                    .values(response=response, right=right, answered_at=now)
                )
                return
            self._check_room_for_an_answer(connection, row.id, student)
            connection.execute(
                answers.insert().values(
                    question_id=question_id,
                    class_id=row.id,
                    student_digest=student,
                    response=response,
                    right=right,
                    answered_at=now,
                )
            )

    def revealed(self, code: str, asked: str) -> Spread | None:
        """The question's spread once the lecturer has revealed it (None before, or for a question not asked)."""
        with self._connection() as connection:
            row = self._class_row(connection, code)
            question = connection.execute(
                sa.select(questions).where(questions.c.class_id == row.id, questions.c.asked == asked)
            ).first()
            if question is None or question.revealed_at is None:
                return None
            given = connection.execute(
                sa.select(answers.c.response, answers.c.right).where(answers.c.question_id == question.id)
            ).all()
        return _spread(question, [(response, right) for response, right in given])

    # ------------------------------------------------------------------------------------------------------

    def _class_row(self, connection: sa.Connection, code: str):
        row = None
        if looks_like_a_code(code):
            row = connection.execute(sa.select(classes).where(classes.c.code_digest == digest(code))).first()
        if row is None:
            raise UnknownClass(
                "This link's class code names no class here: it may have been mistyped, or the class deleted."
            )
        return row

    def _lecturer_row(self, connection: sa.Connection, code: str, key: str):
        try:
            row = self._class_row(connection, code)
        except UnknownClass:
            row = None
        # Compared in constant time, and a digest is compared even when there is no class, so that neither the
        # time taken nor the message tells a guess at the key from a guess at the code.
        given = digest(key if looks_like_a_code(key) else "")
        matches = hmac.compare_digest(given, row.key_digest if row is not None else digest("no class"))
        if row is None or not matches:
            raise UnknownClass(
                "This lecturer link's class code or key is not right: open the lecturer link you were given."
            )
        return row

    def _question_id(self, connection: sa.Connection, class_id: int, question: Question, now: datetime) -> int:
        found = connection.scalar(
            sa.select(questions.c.id).where(questions.c.class_id == class_id, questions.c.asked == question.asked)
        )
        if found is not None:
            return found
        count = _count(
            connection, sa.select(sa.func.count()).select_from(questions).where(questions.c.class_id == class_id)
        )
        if count >= classroom.MAX_QUESTIONS_PER_CLASS:
            raise LimitReached(
                f"This class holds {classroom.MAX_QUESTIONS_PER_CLASS:,} questions already: no more are kept."
            )
        values = dict(
            class_id=class_id,
            asked=question.asked[:64],
            page=question.page[:64],
            title=question.title[:200],
            question=question.question[: classroom.MAX_QUESTION_CHARACTERS],
            options=json.dumps(list(question.options)),
            decimals=question.decimals,
            answer=question.answer[: classroom.MAX_RESPONSE_CHARACTERS],
            first_asked_at=now,
        )
        try:
            with connection.begin_nested():  # two students asked the same new question at once: one row wins
                connection.execute(questions.insert().values(**values))
        except sa_exc.IntegrityError:
            pass
        return connection.execute(
            sa.select(questions.c.id).where(questions.c.class_id == class_id, questions.c.asked == question.asked)
        ).scalar_one()

    def _check_room_for_an_answer(self, connection: sa.Connection, class_id: int, student: str) -> None:
        mine = _count(
            connection,
            sa.select(sa.func.count())
            .select_from(answers)
            .where(answers.c.class_id == class_id, answers.c.student_digest == student),
        )
        if mine >= classroom.MAX_QUESTIONS_PER_STUDENT:
            raise LimitReached(
                f"You have answered {classroom.MAX_QUESTIONS_PER_STUDENT} questions in this class: "
                "later ones are not recorded."
            )
        everyone = _count(
            connection, sa.select(sa.func.count()).select_from(answers).where(answers.c.class_id == class_id)
        )
        if everyone >= classroom.MAX_ANSWERS_PER_CLASS:
            raise LimitReached(
                f"This class holds {classroom.MAX_ANSWERS_PER_CLASS:,} answers already: no more are kept."
            )

    @contextmanager
    def _connection(self) -> Iterator[sa.Connection]:
        """A connection, with every way of failing to reach the database named as one error."""
        try:
            with self.engine.connect() as connection:
                yield connection
        except (sa_exc.OperationalError, sa_exc.InterfaceError) as error:
            raise ClassStoreUnavailable(
                "The class's database cannot be reached just now, so answers are not being recorded."
            ) from error
        except sa_exc.DataError as error:  # a value this database will not hold, whatever `storable` missed
            raise ClassError("This could not be stored for the class.") from error

    @contextmanager
    def _transaction(self) -> Iterator[sa.Connection]:
        with self._connection() as connection, connection.begin():
            yield connection


def _engine(url: str) -> sa.Engine:
    if sa.engine.make_url(url).get_backend_name() == "sqlite":
        database = sa.engine.make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, connect_args={"timeout": 15})

        @sa.event.listens_for(engine, "connect")
        def _pragmas(connection, _record) -> None:  # several processes may share the file: write-ahead logging
            cursor = connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        return engine
    # pool_pre_ping: a connection left from before a database restart is replaced, not handed out broken.
    return sa.create_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": 3})


def _count(connection: sa.Connection, statement) -> int:
    return int(connection.scalar(statement) or 0)


def _aware(moment: datetime) -> datetime:
    """SQLite gives back naive datetimes: every time stored here is UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _info(row) -> ClassInfo:
    return ClassInfo(title=row.title, opened_at=_aware(row.opened_at), closes_at=_aware(row.closes_at))


def _spread(question_row, given: list[tuple[str, bool]]) -> Spread:
    question = Question(
        asked=question_row.asked,
        page=question_row.page,
        title=question_row.title,
        question=question_row.question,
        options=tuple(json.loads(question_row.options)),
        decimals=question_row.decimals,
        answer=question_row.answer,
    )
    tally = Counter(response for response, _ in given)
    right_answers = {response for response, right in given if right}
    counts: tuple[tuple[str, int, bool], ...]
    if question.options:
        counts = tuple((option, tally.get(option, 0), option == question.answer) for option in question.options)
    else:
        common = tally.most_common()
        shown = sorted(common[: classroom.MAX_SHOWN_VALUES], key=lambda pair: _as_number(pair[0]))
        rest = sum(count for _, count in common[classroom.MAX_SHOWN_VALUES :])
        counts = tuple((value, count, value in right_answers) for value, count in shown)
        if rest:
            counts = (*counts, (classroom.OTHER, rest, False))
    return Spread(
        question=question,
        counts=counts,
        answered=len(given),
        right=sum(right for _, right in given),
        revealed=question_row.revealed_at is not None,
    )


def _as_number(text: str) -> float:
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return math.inf
    return value if math.isfinite(value) else math.inf


def _read_as_a_formula(cell: str) -> bool:
    """Whether a spreadsheet would run this cell (it starts with =, +, -, @, a tab or a return), unless it is
    plainly a number such as -0.5."""
    if cell[:1] not in ("=", "+", "-", "@", "\t", "\r"):
        return False
    try:
        float(cell.replace(",", ""))
    except ValueError:
        return True
    return False


def _csv(rows: list[tuple[str, ...]]) -> str:
    """CSV, with every cell a spreadsheet would take for a formula (=, +, -, @ first) quoted as text."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for row in rows:
        writer.writerow([f"'{cell}" if _read_as_a_formula(cell) else cell for cell in row])
    return buffer.getvalue()
