"""The layers of this codebase only point one way, and this file keeps them so.

    anatomy       the transformer itself: torch (and the libraries that read checkpoint files), nothing of the app
    lessons       what each lesson computes (torch only), draws (figures: plotly only) and lays out (ui: streamlit);
                  a lesson imports only anatomy, lessons.common and itself
    lesson_pages  one thin file per lesson; with app.py the only other place streamlit is imported
    harness       serves and drives the app for tests and benchmarks; the app never imports it, tests never
                  import benchmarks

Most of it is declared as import-linter contracts in pyproject.toml ([tool.importlinter]), which `make lint` checks
and `test_the_layering_contracts_hold` runs here; `test_each_contract_catches_the_import_it_forbids` shows each
contract failing on a scratch copy of the layout with one forbidden import added. What the contracts cannot say is
checked below by reading the source: lesson_pages/ and app.py are not a package, and which lesson modules may import
plotly is a matter of the module's role, read from its path: `figures.py`, `*_figures.py`, and in lessons/common
`plots.py`, `figure_text.py` and `cell_numbers.py` build or read figures; a lesson's `exercises.py` asks questions of
its computation and marks the answers in its figures (plotly, no streamlit); `ui.py`, `*_ui.py` and everything under
`lessons/common/ui/` are streamlit helpers; any other module under `lessons/` is a computation, which draws nothing.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
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
        if stem in ("figures", "plots", "figure_text", "cell_numbers") or stem.endswith("_figures"):
            return "figures"
        if stem == "exercises" and parts[1] != "common":
            return "exercises"
        if stem == "ui" or stem.endswith("_ui") or parts[:3] == ("lessons", "common", "ui"):
            return "ui"
        return "computation"
    return parts[0]  # lesson_pages, harness, tests, benchmarks, scripts


APP_CODE = python_files("anatomy", "lessons", "lesson_pages") + [ROOT / "app.py"]
# Only what the import-linter contracts cannot express: lesson_pages/, app.py and benchmarks/ are not packages, and a
# computation's "no plotly" depends on the module's role (the contracts cover streamlit and the app's packages).
NOT_PACKAGES = {"lesson_pages", "benchmarks"}
FORBIDDEN = {
    "core": NOT_PACKAGES,
    "computation": {"plotly"} | NOT_PACKAGES,
    "figures": NOT_PACKAGES,
    "exercises": NOT_PACKAGES,
    "ui": NOT_PACKAGES,
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


def apps_made_outside_the_harness(path: Path) -> list[str]:
    """Every `AppTest.from_file/from_string/from_function(...)` written in `path`, as "file:line". Made so, an
    app reads every installed distribution's metadata on its first run; harness/apptest.py makes each app with
    the registry found once per test process."""
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
    assert [made for path in python_files("tests") for made in apps_made_outside_the_harness(path)] == []

    elsewhere = tmp_path / "test_elsewhere.py"  # the check itself finds one
    elsewhere.write_text('from streamlit.testing.v1 import AppTest\n\napp = AppTest.from_string("x = 1")\n')
    assert apps_made_outside_the_harness(elsewhere) == ["test_elsewhere.py:3"]


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


# --- The import-linter contracts (pyproject.toml) ----------------------------------------------------------

LINT_IMPORTS = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def lint_imports(folder: Path) -> subprocess.CompletedProcess:
    """`lint-imports` on the project in `folder`, with the contracts of its pyproject.toml."""
    return subprocess.run(
        [sys.executable, "-c", LINT_IMPORTS, "--no-cache", "--no-logo"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=folder,
    )


def importlinter_settings() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def test_the_layering_contracts_hold():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_independence_contract_names_every_lesson():
    """A new lesson joins the contract that keeps the lessons apart (import-linter cannot say "every package of
    lessons but common")."""
    lessons = {f"lessons.{path.parent.name}" for path in (ROOT / "lessons").glob("*/__init__.py")} - {"lessons.common"}
    assert set(lesson_packages()) == lessons


def contracts_section() -> str:
    """The [tool.importlinter] tables of pyproject.toml, as written there."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    start = text.index("[tool.importlinter]")
    end = text.index("[tool.pytest.ini_options]", start)
    return text[start:end]


def write_module(root: Path, module: str, source: str = "") -> None:
    """`module` ("lessons.causal.ui") as a file under `root`, each folder on its way a package."""
    *packages, name = module.split(".")
    folder = root
    for package in packages:
        folder = folder / package
        folder.mkdir(exist_ok=True)
        (folder / "__init__.py").touch()
    (folder / f"{name}.py").write_text(source, encoding="utf-8")


def lesson_packages() -> list[str]:
    """The lessons the independence contract keeps apart."""
    (contract,) = [contract for contract in importlinter_settings()["contracts"] if contract["type"] == "independence"]
    return contract["modules"]


def scratch_layout(root: Path) -> None:
    """The app's layout in miniature, every import the contracts allow (or ignore) present once."""
    (root / "pyproject.toml").write_text(contracts_section(), encoding="utf-8")
    write_module(root, "anatomy.masks", "import torch\n")
    write_module(
        root, "anatomy.checkpoints.pretrained", "def tokenizer():\n    from transformers import AutoTokenizer\n"
    )
    write_module(root, "lessons.common.plots", "import plotly\nfrom anatomy import masks\n")
    write_module(root, "lessons.common.ui.theme", "import streamlit\n")
    write_module(root, "lessons.common.ui.widgets", "import streamlit\nfrom lessons.common.ui import theme\n")
    for lesson in lesson_packages():
        write_module(root, f"{lesson}.figures", "import plotly\nfrom lessons.common import plots\n")
        ui = f"import streamlit\nfrom lessons.common.ui import widgets\nfrom {lesson} import figures\n"
        write_module(root, f"{lesson}.ui", ui)
    decoders = "import streamlit\nfrom lessons.common.ui import widgets\n"
    write_module(root, "lessons.causal.decoders_ui", decoders)
    write_module(root, "lessons.causal.ui", "import streamlit\nfrom lessons.causal import decoders_ui\n")
    write_module(root, "harness.apptest", "from lessons.causal import ui\n")
    write_module(root, "tests.test_causal", "from harness import apptest\n")


def test_the_scratch_layout_keeps_every_contract(tmp_path):
    scratch_layout(tmp_path)
    result = lint_imports(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "module, forbidden_import, reported",
    [
        ("anatomy.masks", "import streamlit", "anatomy.masks -> streamlit"),
        ("anatomy.masks", "from lessons.common import plots", "anatomy.masks -> lessons.common.plots"),
        ("lessons.causal.figures", "from lessons.attention import figures", "-> lessons.attention.figures"),
        ("lessons.common.plots", "from lessons.causal import figures", "lessons.common.plots -> lessons.causal"),
        ("lessons.causal.figures", "import streamlit", "lessons.causal.figures -> streamlit"),
        ("lessons.common.plots", "from lessons.common.ui import widgets", "plots -> lessons.common.ui.widgets"),
        ("lessons.decoder.figures", "from lessons.decoder import ui", "lessons.decoder.figures -> lessons.decoder.ui"),
        ("lessons.attention.figures", "import harness", "lessons.attention.figures -> harness"),
    ],
)
def test_each_contract_catches_the_import_it_forbids(tmp_path, module, forbidden_import, reported):
    scratch_layout(tmp_path)
    path = tmp_path.joinpath(*module.split(".")).with_suffix(".py")
    path.write_text(path.read_text(encoding="utf-8") + forbidden_import + "\n", encoding="utf-8")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert reported in result.stdout, result.stdout + result.stderr
