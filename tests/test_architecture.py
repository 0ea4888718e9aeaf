"""The layers of this codebase only point one way, and this file keeps them so.

    anatomy       the transformer itself: torch (and the libraries that read checkpoint files), nothing of the app
    lessons       what each lesson computes (torch only), draws (figures: plotly only) and lays out (ui: streamlit)
    lesson_pages  one thin file per lesson; with app.py the only other place streamlit is imported
    harness       serves and drives the app for tests and benchmarks; the app never imports it, tests never
                  import benchmarks

A module's role is read from its path: `figures.py`, `*_figures.py`, `lessons/common/plots.py` and
`lessons/common/figure_text.py` build or read figures; a lesson's `exercises.py` asks questions of its computation
and marks the answers in its figures (plotly, no streamlit); `ui.py`, `*_ui.py` and everything under
`lessons/common/ui/` are streamlit helpers; any other module under `lessons/` is a computation.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def python_files(*folders: str) -> list[Path]:
    return sorted(path for folder in folders for path in (ROOT / folder).rglob("*.py"))


def imported_top_level_names(path: Path) -> set[str]:
    """The first component of every module `path` imports (lazy imports inside functions included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def role(path: Path) -> str:
    relative = path.relative_to(ROOT)
    parts, stem = relative.parts, path.stem
    if parts[0] == "anatomy":
        return "core"
    if parts[0] == "lessons":
        if stem in ("figures", "plots", "figure_text") or stem.endswith("_figures"):
            return "figures"
        if stem == "exercises" and parts[1] != "common":
            return "exercises"
        if stem == "ui" or stem.endswith("_ui") or parts[:3] == ("lessons", "common", "ui"):
            return "ui"
        return "computation"
    return parts[0]  # lesson_pages, harness, tests, benchmarks, scripts


APP_CODE = python_files("anatomy", "lessons", "lesson_pages") + [ROOT / "app.py"]
FORBIDDEN = {
    "core": {"streamlit", "plotly", "pandas", "lessons", "lesson_pages", "harness", "tests", "benchmarks"},
    "computation": {"streamlit", "plotly", "lesson_pages", "harness", "tests", "benchmarks"},
    "figures": {"streamlit", "lesson_pages", "harness", "tests", "benchmarks"},
    "exercises": {"streamlit", "lesson_pages", "harness", "tests", "benchmarks"},
    "ui": {"lesson_pages", "harness", "tests", "benchmarks"},
    "lesson_pages": {"plotly", "harness", "tests", "benchmarks"},
    "app.py": {"plotly", "harness", "tests", "benchmarks"},
}


def test_every_app_module_has_a_role_and_the_roles_are_all_in_use():
    roles = {role(path) for path in APP_CODE}
    assert roles == {"core", "computation", "figures", "exercises", "ui", "lesson_pages", "app.py"}


@pytest.mark.parametrize("path", APP_CODE, ids=lambda path: str(path.relative_to(ROOT)))
def test_each_module_imports_only_what_its_layer_allows(path):
    offending = imported_top_level_names(path) & FORBIDDEN[role(path)]
    assert not offending, f"{path.relative_to(ROOT)} ({role(path)}) imports {sorted(offending)}"


def test_the_import_check_catches_what_it_should(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import torch\ndef later():\n    import streamlit as st\nfrom plotly import graph_objects\n")
    assert imported_top_level_names(sample) == {"torch", "streamlit", "plotly"}


def test_tests_never_import_benchmarks_and_benchmarks_share_the_harness():
    for path in python_files("tests"):
        assert "benchmarks" not in imported_top_level_names(path), path.relative_to(ROOT)
    uses_harness = [path for path in python_files("benchmarks") if "harness" in imported_top_level_names(path)]
    assert uses_harness, "the benchmarks drive the app through the same harness as the tests"


def test_no_file_edits_the_import_path():
    """The project is installed (`pip install -e .`, done by `make setup`), so nothing needs sys.path."""
    for path in python_files("anatomy", "lessons", "lesson_pages", "harness", "tests", "benchmarks", "scripts"):
        if path != Path(__file__):
            assert "sys.path" not in path.read_text(encoding="utf-8"), path.relative_to(ROOT)


@pytest.mark.slow
def test_importing_the_transformer_loads_no_ui_library():
    """Not only the source: importing every module of `anatomy` (and the lesson computations) really leaves
    streamlit and plotly unloaded."""
    modules = [
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in APP_CODE
        if role(path) in ("core", "computation")
    ]
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(sorted({name.split('.')[0] for name in sys.modules} & {'streamlit', 'plotly'}))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_no_page_or_helper_renders_raw_html():
    for path in APP_CODE:
        assert "unsafe_allow_html" not in path.read_text(encoding="utf-8"), path.relative_to(ROOT)
