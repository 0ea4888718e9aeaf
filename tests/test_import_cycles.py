"""The app's modules import one another without a cycle, so that many sessions can import them at once.

Streamlit runs each session's script in a thread of its own, so on a freshly started server a class opening
its first pages imports the lessons from several threads at the same moment. Python guards each module with a
lock of its own while the module runs. When two threads import modules that import each other in a cycle, each
holds a lock the other is waiting for; the import system breaks that deadlock by handing one of them a module
that has not finished running ("cannot import name 'DEFAULT_MODEL_NAME' from partially initialized module").
Without a cycle no thread can wait, through a chain of imports, on a module it is importing itself, so
concurrent imports only ever wait for one another to finish.

What counts as an import here is what runs when a module is imported: the import statements outside functions
(those under `if TYPE_CHECKING:` never run). Each names its module and every package above it, and every module
imports the packages it lives in, because Python imports `anatomy` before `anatomy.blocks`. That last rule is
why no `__init__.py` of the app imports a module of its own package.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APP_FOLDERS = ("anatomy", "lessons", "lesson_pages")


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_run_on_import(statements: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """The import statements among `statements` that run when the module does: inside ifs, trys, withs and
    class bodies, but not inside functions, and not under `if TYPE_CHECKING:`."""
    found: list[ast.Import | ast.ImportFrom] = []
    for statement in statements:
        if isinstance(statement, ast.Import | ast.ImportFrom):
            found.append(statement)
        elif isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
            found += imports_run_on_import(statement.orelse)
        elif not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            for block in ("body", "orelse", "finalbody"):
                found += imports_run_on_import(getattr(statement, block, []))
            for clause in [*getattr(statement, "handlers", []), *getattr(statement, "cases", [])]:
                found += imports_run_on_import(clause.body)  # except ...: and case ...:
    return found


def with_its_packages(module: str) -> list[str]:
    """`a.b.c` -> [a, a.b, a.b.c]: importing a module imports every package above it first."""
    parts = module.split(".")
    return [".".join(parts[: end + 1]) for end in range(len(parts))]


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of the app that importing `name` (from `path`) imports directly."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    imported = set(with_its_packages(package)) if package else set()
    for statement in imports_run_on_import(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                imported.update(with_its_packages(alias.name))
            continue
        if statement.level:  # a relative import: `from . import x` inside `package`
            base = package.split(".")[: len(package.split(".")) - statement.level + 1]
            source = ".".join(base + ([statement.module] if statement.module else []))
        else:
            source = statement.module or ""
        imported.update(with_its_packages(source))
        imported.update(f"{source}.{alias.name}" for alias in statement.names)  # a module, where it is one
    return (imported & known) - {name}


def import_graph(root: Path, folders: tuple[str, ...], scripts: tuple[str, ...] = ()) -> dict[str, set[str]]:
    """Every module under `folders` (and each of `scripts`), mapped to the app's modules it imports."""
    paths = [path for folder in folders for path in sorted((root / folder).rglob("*.py"))]
    paths += [root / script for script in scripts]
    names = {module_name(path, root): path for path in paths}
    return {name: imported_modules(name, path, set(names)) for name, path in names.items()}


def reachable_from(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module that importing `start` imports, directly or through others (`start` too, if it is on a
    cycle)."""
    seen: set[str] = set()
    waiting = list(graph[start])
    while waiting:
        module = waiting.pop()
        if module not in seen:
            seen.add(module)
            waiting += graph[module]
    return seen


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import one another, directly or not (the graph's strongly connected
    components of more than one module)."""
    reachable = {module: reachable_from(graph, module) for module in graph}
    groups = {frozenset(other for other in reachable[module] if module in reachable[other]) for module in graph}
    return sorted(sorted(group) for group in groups if len(group) > 1)


def describe(graph: dict[str, set[str]], cycle: list[str]) -> str:
    return "\n".join(f"  {module} imports {sorted(graph[module] & set(cycle))}" for module in cycle)


def test_the_apps_modules_import_one_another_without_a_cycle():
    graph = import_graph(ROOT, APP_FOLDERS, scripts=("app.py",))
    cycles = import_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n\n".join(describe(graph, cycle) for cycle in cycles)


def test_the_cycle_check_finds_a_package_that_imports_its_own_module_and_nothing_else(tmp_path):
    sources = {
        "shop/__init__.py": "from shop.prices import PRICE\n",  # shop.prices imports shop first: a cycle
        "shop/prices.py": "PRICE = 1\n",
        "tools/__init__.py": "",
        "tools/saw.py": "from . import hammer\n",
        "tools/hammer.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from tools import saw\n"  # never runs
            "def later():\n    from tools import saw\n"  # runs after every import is done
        ),
    }
    for relative, source in sources.items():
        (tmp_path / relative).parent.mkdir(exist_ok=True)
        (tmp_path / relative).write_text(source)
    graph = import_graph(tmp_path, ("shop", "tools"))
    assert graph["tools.saw"] == {"tools", "tools.hammer"} and graph["tools.hammer"] == {"tools"}
    assert import_cycles(graph) == [["shop", "shop.prices"]]


# Each round forgets the app's modules, then imports every one of them, each in its own thread, all released
# at the same moment: a cold server's first page views, as many as there are modules. The libraries stay
# imported (as in a server, where Streamlit is running before any session), so only the app's imports race.
CONCURRENT_IMPORTS = textwrap.dedent(
    """
    import importlib, sys, threading

    names = sys.argv[1:]
    for name in names:  # once, alone: the libraries they use are imported for good
        importlib.import_module(name)
    failures = []
    for round in range(5):
        for name in names:
            sys.modules.pop(name, None)  # a module that failed to import is gone already
        start = threading.Barrier(len(names))

        def open_page(name):
            start.wait()
            try:
                importlib.import_module(name)
            except Exception as error:
                failures.append(f"round {round}, {name}: {type(error).__name__}: {error}")

        threads = [threading.Thread(target=open_page, args=(name,)) for name in names]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    print("\\n".join(failures))
    """
)


@pytest.mark.slow
def test_every_module_imported_from_its_own_thread_at_the_same_moment_imports_completely():
    names = sorted(import_graph(ROOT, ("anatomy", "lessons")))
    result = subprocess.run(
        [sys.executable, "-c", CONCURRENT_IMPORTS, *names], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == ""
