"""The headless harness (harness/apptest.py) opens apps the way a server serves sessions."""

from __future__ import annotations

import ast
from pathlib import Path

from streamlit.components.v2.component_manager import BidiComponentManager

from harness.apptest import installed_components, open_page, page_from_function, page_from_string


def _page_with_a_text(text: str) -> None:
    import streamlit as st

    st.text(text)


def test_apps_the_tests_open_look_for_installed_components_once_as_a_server_does(monkeypatch):
    installed_components()  # found once for the whole test process, before this test
    searches = []
    search = BidiComponentManager.discover_and_register_components

    def counted(self, *args, **kwargs):
        searches.append(self)
        return search(self, *args, **kwargs)

    monkeypatch.setattr(BidiComponentManager, "discover_and_register_components", counted)
    for page in ("lesson_pages/tokenization.py", "lesson_pages/class.py"):
        open_page(page, text="a cat")
    page_from_string("import streamlit as st\nst.text('a cat')").run()
    page_from_function(_page_with_a_text, "a cat").run()

    assert searches == []  # each new AppTest would otherwise read every installed distribution's metadata again


def apps_made_outside_the_harness(path: Path) -> list[str]:
    """Every `AppTest.from_file/from_string/from_function(...)` written in `path`, as "file:line"."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.name}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "AppTest"
        and node.attr.startswith("from_")
    ]


def test_the_tests_make_every_app_through_the_harness(tmp_path):
    tests = Path(__file__).resolve().parents[1]
    assert [made for path in sorted(tests.rglob("*.py")) for made in apps_made_outside_the_harness(path)] == []

    elsewhere = tmp_path / "test_elsewhere.py"  # the check itself finds one
    elsewhere.write_text('from streamlit.testing.v1 import AppTest\n\napp = AppTest.from_string("x = 1")\n')
    assert apps_made_outside_the_harness(elsewhere) == ["test_elsewhere.py:3"]
