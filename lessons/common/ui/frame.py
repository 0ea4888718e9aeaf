"""The frame around every lesson: the table of lessons, the navigation built from it, previous and next.

The lesson files live in `lesson_pages/`, not in a folder named `pages/`: beside the entrypoint, that name starts
Streamlit's older multipage mode, which runs a page file on its own (no app.py, so no navigation and no sidebar)
until some session calls `st.navigation`. With the files anywhere else every run starts at app.py, as in
Streamlit's own `hello` demo, and `st.navigation` serves the page the link asked for in that same run.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st


@dataclass(frozen=True)
class LessonEntry:
    """One lesson in the app's table of contents."""

    number: int  # the order in which to take them; 0 for the welcome page
    file: str  # the page file, relative to app.py (its stem is the lesson's URL path)
    title: str
    icon: str  # a Material symbol, drawn from the app's own font (no request leaves the server)
    section: str  # the navigation heading it sits under
    summary: str  # one sentence for the welcome page

    @property
    def name(self) -> str:
        """The lesson's one name: its page file, its folder under lessons/, its tests and its URL path."""
        return self.file.removeprefix("lesson_pages/").removesuffix(".py")

    @property
    def numbered_title(self) -> str:
        return f"{self.number}. {self.title}" if self.number else self.title


LESSONS: tuple[LessonEntry, ...] = (
    LessonEntry(
        0, "lesson_pages/home.py", "Welcome", ":material/school:", "Start", "What this app is and where to start."
    ),
    LessonEntry(
        1,
        "lesson_pages/tokenization.py",
        "Tokenization",
        ":material/text_fields:",
        "Inputs",
        "How text becomes token ids, and ids become vectors.",
    ),
    LessonEntry(
        2,
        "lesson_pages/positional.py",
        "Positional encodings",
        ":material/waves:",
        "Inputs",
        "How a model that sees a bag of vectors learns their order.",
    ),
    LessonEntry(
        3,
        "lesson_pages/attention.py",
        "Scaled dot-product attention",
        ":material/calculate:",
        "Attention",
        "softmax(QKᵀ/√dₖ)·V, step by step, on numbers you can edit.",
    ),
    LessonEntry(
        4,
        "lesson_pages/multihead.py",
        "Multi-head comparison",
        ":material/view_module:",
        "Attention",
        "Twelve heads, twelve different ways of reading the sentence.",
    ),
    LessonEntry(
        5,
        "lesson_pages/causal.py",
        "Causal masking",
        ":material/block:",
        "Attention",
        "Why a decoder must not see the future, and how −∞ stops it.",
    ),
    LessonEntry(
        6,
        "lesson_pages/encoder.py",
        "Encoder stack",
        ":material/stacks:",
        "The model",
        "Six layers of attention and feed-forward, from embeddings to meaning.",
    ),
    LessonEntry(
        7,
        "lesson_pages/decoder.py",
        "Decoder & cross-attention",
        ":material/swap_horiz:",
        "The model",
        "How a decoder reads its source: attention between two sequences.",
    ),
    LessonEntry(
        8,
        "lesson_pages/training.py",
        "Train it yourself",
        ":material/model_training:",
        "The model",
        "Retrain a small model live and watch its loss fall and its attention take shape.",
    ),
    LessonEntry(
        9,
        "lesson_pages/language_model.py",
        "A real language model",
        ":material/chat:",
        "The model",
        "SmolLM2-135M: what changed since 2017, its next-token guesses, its attention, its chat template.",
    ),
)


# Not a lesson: the lecturer's page, where a class is started and its answers watched (lessons/common/ui/classroom.py).
CLASS_PAGE = LessonEntry(
    0,
    "lesson_pages/class.py",
    "Run a class",
    ":material/groups:",
    "Teach",
    "Ask the room, see how it answered, reveal.",
)


def lesson_named(name: str) -> LessonEntry:
    return next(lesson for lesson in LESSONS if lesson.name == name)


def navigation_pages() -> dict[str, list]:
    """The pages of the app under their section headings, for `st.navigation`."""
    sections: dict[str, list] = {}
    for lesson in LESSONS:
        sections.setdefault(lesson.section, []).append(
            st.Page(lesson.file, title=lesson.numbered_title, icon=lesson.icon, default=lesson.number == 0)
        )
    sections[CLASS_PAGE.section] = [st.Page(CLASS_PAGE.file, title=CLASS_PAGE.title, icon=CLASS_PAGE.icon)]
    return sections


def start_navigation():
    """`st.navigation` over every lesson (app.py calls this): the page to run for this session."""
    return st.navigation(navigation_pages())


def add_browser_scripts(*scripts: str) -> None:
    """Once per run (app.py): the app's own scripts for the browser, in one element. Each takes a line of the
    page's layout (an element and the gap after it), however little it shows, so they share one."""
    st.html("".join(scripts), unsafe_allow_javascript=True, width="content")


def previous_and_next(name: str) -> None:
    """Links to the lessons before and after `name`, at the end of a lesson."""
    index = next(position for position, lesson in enumerate(LESSONS) if lesson.name == name)
    st.divider()
    before, after = st.columns(2)  # the arrows say which way: "Previous:" cut the names short at 150 % zoom
    if index > 0:
        previous = LESSONS[index - 1]
        before.page_link(
            previous.file, label=previous.numbered_title, icon=":material/arrow_back:", help="The previous lesson"
        )
    if index + 1 < len(LESSONS):
        following = LESSONS[index + 1]
        after.page_link(
            following.file, label=following.numbered_title, icon=":material/arrow_forward:", help="The next lesson"
        )
