"""The import rules of DESIGN.md, read from the source with ``ast``.

- The code is imported as ``npu_hil.harness`` / ``npu_hil.targets`` only: an installed npu-hil
  must leave a user's own ``harness`` or ``targets`` module alone, so no module imports (or names
  in a string, for ``importlib`` / ``-m`` / ``-p``) the bare packages.
- The board agent and its vendor adapters import nothing of the host harness: a board has only
  the files it was sent.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("harness", "targets", "tests", "benchmarks", "npu_hil")
BARE = ("harness", "targets")
MODULE_STRING = re.compile(r"(harness|targets)(\.[a-z_]\w*)+\Z")
CODE_STRING = re.compile(r"(?:^|[\n;])\s*(?:from|import)\s+(?:harness|targets)\b")
FILE_SUFFIXES = (".py", ".yaml", ".json", ".txt")  # a user's targets.py is a file, not our module
AGENT = REPO / "harness" / "agent"
# The simulated runtime's adapter runs the host's simulator by design (it exists only where the
# harness is installed); every other adapter is what a real board runs.
HOST_BOUND_ADAPTERS = ("sim.py",)


# A user's own project, written by the new-user test: its `targets` and `harness` are the user's.
USER_PROJECT_FILES = ("tests/newuser/test_first_day.py",)
# Package labels ("harness.codec") in the structure ratchet name folders, not modules to import.
LABEL_FILES = ("tests/test_structure.py",)


def python_files() -> Iterator[Path]:
    yield REPO / "conftest.py"
    yield REPO / "setup.py"
    for top in SOURCES:
        for path in sorted((REPO / top).rglob("*.py")):
            if top != "npu_hil" and "npu_hil" in path.relative_to(REPO).parts:
                continue
            yield path


def imported_modules(
    tree: ast.AST, *, run_time_only: bool = False
) -> Iterator[tuple[int, str]]:
    """Every absolute import; with ``run_time_only``, not those under ``if TYPE_CHECKING:``."""
    skipped: set[int] = set()
    if run_time_only:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def module_string(node: ast.AST) -> bool:
    """A string naming a bare-folder module (``"targets.kl730"``) or importing one in code run
    by a subprocess (``"from harness.codec import x"``); not a file name."""
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return False
    if CODE_STRING.search(node.value):
        return True
    return bool(MODULE_STRING.match(node.value)) and not node.value.endswith(FILE_SUFFIXES)


def parsed(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_no_module_imports_the_bare_folders() -> None:
    found = []
    for path in python_files():
        tree = parsed(path)
        for line, module in imported_modules(tree):
            if module.split(".")[0] in BARE:
                found.append(f"{path.relative_to(REPO)}:{line}: import {module}")
        name = path.relative_to(REPO).as_posix()
        if path == Path(__file__).resolve() or name in USER_PROJECT_FILES + LABEL_FILES:
            continue  # its own samples; a user's project
        for node in ast.walk(tree):
            if module_string(node):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value!r}")
    assert not found, "use npu_hil.harness / npu_hil.targets:\n" + "\n".join(found)


def test_the_rule_sees_a_bare_import(tmp_path: Path) -> None:
    """The walk above would pass vacuously if it read nothing: it must see each kind."""
    sample = "import targets\nfrom harness.codec import x\nm = 'harness.cli.main'\n"
    tree = ast.parse(sample)
    assert [m for _, m in imported_modules(tree)] == ["targets", "harness.codec"]
    strings = [n for n in ast.walk(ast.parse(repr(sample))) if isinstance(n, ast.Constant)]
    assert [module_string(n) for n in strings] == [True]
    assert module_string(ast.Constant("harness.cli.main"))
    assert not module_string(ast.Constant("targets.py"))
    assert sum(1 for _ in python_files()) > 200


@pytest.mark.parametrize(
    "path",
    [AGENT / "agent.py", AGENT / "relay.py"]
    + [p for p in sorted((AGENT / "adapters").glob("*.py")) if p.name not in HOST_BOUND_ADAPTERS],
    ids=lambda p: p.relative_to(AGENT).as_posix(),
)
def test_board_code_imports_nothing_of_the_host(path: Path) -> None:
    host = [
        f"{line}: {module}"
        for line, module in imported_modules(parsed(path), run_time_only=True)
        if module.split(".")[0] in ("npu_hil", *BARE)
    ]
    assert not host, f"{path.name} runs on a board and must not import the harness: {host}"
