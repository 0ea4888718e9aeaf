"""Driving the app headlessly with Streamlit's AppTest, and reading back what a page showed."""

from __future__ import annotations

import base64
import functools
import json
from pathlib import Path

import numpy as np
from streamlit.components.v2.component_manager import BidiComponentManager
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Code, Text

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TIMEOUT_SECONDS = 120

# Inputs every text field must survive: shown literally, never rendered, never a crash.
HOSTILE_TEXTS = {
    "whitespace": "   \n\t ",
    "emoji": "I 😍 transformers 🤖🚀",
    "cjk": "注意力就是你所需要的一切",
    "right_to_left": "الانتباه هو كل ما تحتاجه",
    "html": "<b>bold</b> <img src=x onerror=alert(1)>",
    "markdown": "# Title **bold** ![pic](http://127.0.0.1:9/pixel.png) [link](http://127.0.0.1:9/)",
    "script": "<script>alert('x')</script>",
    "latex": "$x^2$ and $$\\int$$",
}


@functools.cache
def installed_components() -> BidiComponentManager:
    """Streamlit's registry of the custom components installed beside it, found once per test process.

    A server looks for them once, when it starts, and every session shares what it found. A new AppTest looks
    again on its first run, reading the metadata of every installed distribution: about half a second, for
    each of the 575 apps `make test-fast` opens, and it finds the same nothing each time (the app uses no
    custom component)."""
    components = BidiComponentManager()
    components.discover_and_register_components(start_file_watching=False)
    return components


def sharing_components(app: AppTest) -> AppTest:
    """`app`, not yet run, sharing this process's component registry as a server's sessions do."""
    app._bidi_component_manager = installed_components()  # AppTest's own slot; it looks only when it is empty
    return app


def new_app(timeout: float = TIMEOUT_SECONDS) -> AppTest:
    """The app, not yet run."""
    return sharing_components(AppTest.from_file(APP, default_timeout=timeout))


def page_from_string(script: str) -> AppTest:
    """A page of its own written as a string (a few lines that call one helper), not yet run."""
    return sharing_components(AppTest.from_string(script))


def page_from_function(function, *args) -> AppTest:
    """A page of its own written as a function (`args` passed to it), not yet run."""
    return sharing_components(AppTest.from_function(function, args=args))


def open_page(page: str, text: str | None = None, query: dict[str, str] | None = None) -> AppTest:
    """Run the app on `page` (e.g. "lesson_pages/attention.py"), optionally with sidebar text and URL parameters."""
    app = new_app()
    for key, value in (query or {}).items():
        app.query_params[key] = value
    if text is not None:
        app.session_state["text"] = text
    app.run()  # the entrypoint first: it builds the navigation and the shared sidebar
    # That run showed the welcome page, and its address kept only the welcome page's keys; a browser opens the
    # link on the lesson itself, with all of them.
    app.query_params.update(query or {})
    app.switch_page(page)
    return app.run()


def show_tab(app: AppTest, key: str, label: str) -> AppTest:
    """Open the tab `label` of the tabs bound to the URL under `key`, as a click would: the state and the
    link both change, then the page reruns (only the open tab runs)."""
    app.query_params[key] = label
    app.session_state[key] = label
    return app.run()


def open_expander(app: AppTest, key: str) -> AppTest:
    """Open the expander drawn with `key` (one whose content is sent only while open), as a click would."""
    app.session_state[key] = True
    return app.run()


def plotly_figures(app: AppTest) -> list[dict]:
    """Every plotly chart on the page as its figure JSON (data and layout)."""
    return [json.loads(element.proto.spec) for element in app.get("plotly_chart")]


def chart_keys(app: AppTest) -> list[str]:
    """The key each plotly chart on the page was drawn with, in page order. An element's id is
    "$$ID-<digest>-<key>": the key is all after the second dash (a key may hold dashes of its own, as an
    exercise's does, `exercise_fill-mask_…`)."""
    return [element.proto.id.split("-", 2)[-1] for element in app.get("plotly_chart")]


def chart(app: AppTest, key: str) -> dict:
    """The figure JSON of the chart drawn with `key`."""
    for element, spec in zip(app.get("plotly_chart"), plotly_figures(app)):
        if element.proto.id.endswith(f"-{key}"):
            return spec
    raise AssertionError(f"no chart with key {key}; charts: {chart_keys(app)}")


def decoded(value):
    """A value of a figure's JSON with plotly's typed arrays read back: plotly sends a numpy array as
    {"dtype", "bdata" (base64, little-endian), "shape"}, which comes back as an array of that dtype and shape;
    anything else (a list, a string, a number) comes back as it is."""
    if not (isinstance(value, dict) and "bdata" in value):
        return value
    flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]).newbyteorder("<"))
    shape = value.get("shape")
    return flat.reshape([int(size) for size in str(shape).split(",")]) if shape else flat


def numbers(values) -> np.ndarray:
    """A trace's z, x or y as numbers: plotly sends numpy arrays as base64 typed arrays, lists as JSON."""
    return np.asarray(decoded(values), dtype=float)


def table_with(app: AppTest, column: str):
    """The first table that has `column` (AppTest gives tables no key to find them by)."""
    for frame in app.dataframe:
        if column in frame.value.columns:
            return frame.value
    raise AssertionError(f"no table with a column {column!r}")


def drawn_children(container) -> list:
    """The container's elements a reader sees: page-wide <style> and <script> blocks draw nothing."""
    return [
        child
        for _, child in sorted(container.children.items())
        if not (child.type == "html" and str(child.value).lstrip().startswith(("<style", "<script")))
    ]


def assert_clean(app: AppTest) -> None:
    """No exception box on the page."""
    assert not app.exception, [item.value for item in app.exception]


def source_shown(app: AppTest) -> list[str]:
    """Open the page's "code this page runs" expander (`widgets.show_source`, closed until then: nothing of it
    is sent) and give the qualified names of what it shows, each checked to come with its code from the left
    margin."""
    (key,) = [key for key in app.session_state.keys() if str(key).startswith("source:")]
    assert not [block for block in app.code if block.language == "python"], "code sent while its expander is closed"
    app = open_expander(app, key)
    assert_clean(app)
    names = [caption.value.strip("`") for caption in app.caption if caption.value.startswith("`")]
    code = [block.value for block in app.code if block.language == "python"]
    assert len(code) == len(names) and all(block.startswith(("def ", "class ", "@")) for block in code)
    return names


def all_markdown(app: AppTest) -> str:
    """Everything the page passed to markdown-rendering elements (to prove user text never went there)."""
    parts = [element.value for element in app.markdown]
    for kind in ("caption", "title", "header", "subheader", "info", "warning", "error", "success"):
        parts.extend(str(element.value) for element in getattr(app, kind))
    return "\n".join(parts)


def literal_texts(app: AppTest) -> list[str]:
    """Every text the page showed literally (`widgets.show_literal`: st.text, or st.code when st.text would
    change it), in the order drawn."""
    return [node.value for node in app.main if isinstance(node, (Text, Code))]


def aligned_lines(app: AppTest) -> list[list[str]]:
    """Each block of lines the page aligned in a fixed-width font (`widgets.show_aligned_lines`), as the lines
    it reads: one code span a line, no-break spaces read as spaces. Other markdown is left out."""
    blocks = []
    for element in app.markdown:
        spans = element.value.split("  \n")
        if all(span.startswith("`") and span.endswith("`") for span in spans):
            fences = [len(span) - len(span.lstrip("`")) for span in spans]
            blocks.append([span[fence + 1 : -fence - 1].replace("\u00a0", " ") for span, fence in zip(spans, fences)])
    return blocks


# ----- exercises (lessons.common.ui.check_yourself) ---------------------------------------------------------


def open_exercise(page: str, name: str, text: str | None = None, query: dict[str, str] | None = None) -> AppTest:
    """The page with its exercise `name` open, as a link that names it opens it."""
    return open_page(page, text=text, query={"exercise": name, **(query or {})})


def exercise_field(app: AppTest):
    """The open exercise's answer field: a radio (a choice) or a number input."""
    (field,) = [
        widget for widget in [*app.radio, *app.number_input] if widget.key and widget.key.startswith("exercise_")
    ]
    return field


def answer_exercise(app: AppTest, response) -> AppTest:
    """Give `response` to the open exercise and press Check."""
    field = exercise_field(app)
    field.set_value(response)
    app.button(key=f"{field.key}_check").click()
    return app.run()


def payload(app: AppTest) -> str:
    """Everything the page sent to the browser, as text: every element's message, sidebar included."""
    return "\n".join(str(element.proto) for block in (app.main, app.sidebar) for element in block)
