"""The frame around every lesson: the table of lessons, the navigation built from it, and the guarantee that
every run goes through the entrypoint (app.py), even the very first deep link on a fresh server.

Why the guarantee is needed: Streamlit still supports an older multipage mode that runs `pages/*.py` on their
own, and a server uses it until some session calls `st.navigation`; from then on, as Streamlit's documentation
of `st.navigation` says, "your app will ignore the pages/ directory (across all sessions)". So on a freshly
started server, the first visit to `/attention?...` runs the page file without app.py: no navigation, no
sidebar. So app.py marks every run it starts (`mark_entrypoint`), and every page starts with
`ensure_entrypoint()`, which takes the mark away again. A run without the mark did not start at app.py: the page
then calls `st.navigation` with the same pages (the documented switch) and reruns, and the rerun starts at app.py,
which serves the page the link asked for. Only public API is used.
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
        return self.file.removeprefix("pages/").removesuffix(".py")

    @property
    def numbered_title(self) -> str:
        return f"{self.number}. {self.title}" if self.number else self.title


LESSONS: tuple[LessonEntry, ...] = (
    LessonEntry(0, "pages/home.py", "Welcome", ":material/school:", "Start", "What this app is and where to start."),
    LessonEntry(
        1,
        "pages/tokenization.py",
        "Tokenization",
        ":material/text_fields:",
        "Inputs",
        "How text becomes token ids, and ids become vectors.",
    ),
    LessonEntry(
        2,
        "pages/positional.py",
        "Positional encodings",
        ":material/waves:",
        "Inputs",
        "How a model that sees a bag of vectors learns their order.",
    ),
    LessonEntry(
        3,
        "pages/attention.py",
        "Scaled dot-product attention",
        ":material/calculate:",
        "Attention",
        "softmax(QKᵀ/√d)·V, step by step, on numbers you can edit.",
    ),
    LessonEntry(
        4,
        "pages/multihead.py",
        "Multi-head comparison",
        ":material/view_module:",
        "Attention",
        "Twelve heads, twelve different ways of reading the sentence.",
    ),
    LessonEntry(
        5,
        "pages/causal.py",
        "Causal masking",
        ":material/block:",
        "Attention",
        "Why a decoder must not see the future, and how −∞ stops it.",
    ),
    LessonEntry(
        6,
        "pages/encoder.py",
        "Encoder stack",
        ":material/stacks:",
        "The model",
        "Six layers of attention and feed-forward, from embeddings to meaning.",
    ),
    LessonEntry(
        7,
        "pages/decoder.py",
        "Decoder & cross-attention",
        ":material/swap_horiz:",
        "The model",
        "How a decoder reads its source: attention between two sequences.",
    ),
    LessonEntry(
        8,
        "pages/training.py",
        "Train it yourself",
        ":material/model_training:",
        "The model",
        "Retrain a small model live and watch its loss fall and its attention take shape.",
    ),
    LessonEntry(
        9,
        "pages/language_model.py",
        "A real language model",
        ":material/chat:",
        "The model",
        "SmolLM2-135M: what changed since 2017, its next-token guesses, its attention, its chat template.",
    ),
)


# Not a lesson: the lecturer's page, where a class is started and its answers watched (lessons/common/ui/classroom.py).
CLASS_PAGE = LessonEntry(
    0, "pages/class.py", "Run a class", ":material/groups:", "Teach", "Ask the room, see how it answered, reveal."
)


def lesson_named(name: str) -> LessonEntry:
    return next(lesson for lesson in LESSONS if lesson.name == name)


def navigation_pages(with_icons: bool = True) -> dict[str, list]:
    """The pages of the app under their section headings, for `st.navigation`."""
    sections: dict[str, list] = {}
    for lesson in LESSONS:
        icon = lesson.icon if with_icons else None
        sections.setdefault(lesson.section, []).append(
            st.Page(lesson.file, title=lesson.numbered_title, icon=icon, default=lesson.number == 0)
        )
    sections[CLASS_PAGE.section] = [
        st.Page(CLASS_PAGE.file, title=CLASS_PAGE.title, icon=CLASS_PAGE.icon if with_icons else None)
    ]
    return sections


_ENTRYPOINT_RAN = "_entrypoint_ran"  # session state: app.py started this run


def start_navigation():
    """`st.navigation` over every lesson (app.py calls this): the page to run for this session."""
    return st.navigation(navigation_pages())


def add_browser_scripts(*scripts: str) -> None:
    """Once per run (app.py): the app's own scripts for the browser, in one element. Each takes a line of the
    page's layout (an element and the gap after it), however little it shows, so they share one."""
    st.html("".join(scripts), unsafe_allow_javascript=True, width="content")


def mark_entrypoint() -> None:
    """Called by app.py just before it runs the page: this run started at the entrypoint."""
    st.session_state[_ENTRYPOINT_RAN] = True


def ensure_entrypoint() -> None:
    """Send this run through app.py if Streamlit ran a page file on its own (see the module's docstring).
    Called once per run, first thing, by every page (through `sidebar.current`)."""
    if not st.session_state.pop(_ENTRYPOINT_RAN, False):
        # No icons: before app.py has set the app's own page icon, a page's Material icon would become the tab's
        # icon, and the browser would fetch it from Google's font servers.
        st.navigation(navigation_pages(with_icons=False), position="hidden")
        st.rerun()


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
