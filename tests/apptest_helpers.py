"""Driving the app headlessly with Streamlit's AppTest, and reading back what a page showed."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

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


def open_page(page: str, text: str | None = None, query: dict[str, str] | None = None) -> AppTest:
    """Run the app on `page` (e.g. "pages/attention.py"), optionally with sidebar text and URL parameters.

    To test other text, open the page again with it: after `switch_page`, AppTest does not expose the
    sidebar's widgets when the pages live in a folder named pages/ (the entrypoint still runs).
    """
    app = AppTest.from_file(APP, default_timeout=TIMEOUT_SECONDS)
    for key, value in (query or {}).items():
        app.query_params[key] = value
    if text is not None:
        app.session_state["text"] = text
    app.run()  # the entrypoint first: it builds the navigation and the shared sidebar
    app.switch_page(page)
    return app.run()


def plotly_figures(app: AppTest) -> list[dict]:
    """Every plotly chart on the page as its figure JSON (data and layout)."""
    return [json.loads(element.proto.spec) for element in app.get("plotly_chart")]


def assert_clean(app: AppTest) -> None:
    """No exception box on the page."""
    assert not app.exception, [item.value for item in app.exception]


def all_markdown(app: AppTest) -> str:
    """Everything the page passed to markdown-rendering elements (to prove user text never went there)."""
    parts = [element.value for element in app.markdown]
    for kind in ("caption", "title", "header", "subheader", "info", "warning", "error", "success"):
        parts.extend(str(element.value) for element in getattr(app, kind))
    return "\n".join(parts)
