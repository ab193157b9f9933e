"""The import rules of DESIGN.md, read from the source with ``ast``.

- The code is imported as ``npu_hil.harness`` / ``npu_hil.targets`` only: an installed npu-hil
  must leave a user's own ``harness`` or ``targets`` module alone, so no module imports (or names
  in a string, for ``importlib`` / ``-m`` / ``-p``) the bare packages.
- The board package (``npu_hil/harness/board/``: the agent, its vendor adapters, the relay) imports
  nothing of the host harness and nothing but the standard library and numpy: a board has only
  the files it was sent and an old Python. Inside it, imports are relative (the package is
  ``npu_hil_board`` on a board) and never leave it.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("npu_hil", "testkit/npu_hil_testkit", "tests", "benchmarks")
BARE = ("harness", "targets")
MODULE_STRING = re.compile(r"(harness|targets)(\.[a-z_]\w*)+\Z")
CODE_STRING = re.compile(r"(?:^|[\n;])\s*(?:from|import)\s+(?:harness|targets)\b")
FILE_SUFFIXES = (".py", ".yaml", ".json", ".txt")  # a user's targets.py is a file, not our module
BOARD = REPO / "npu_hil" / "harness" / "board"
# What board code may import besides the standard library and its own package's modules.
BOARD_THIRD_PARTY = ("numpy",)


# A user's own project, written by the new-user test: its `targets` and `harness` are the user's.
USER_PROJECT_FILES = ("tests/newuser/test_first_day.py",)
# Package labels ("harness.codec") in the structure ratchet name folders, not modules to import.
LABEL_FILES = ("tests/test_structure.py",)


def python_files() -> Iterator[Path]:
    yield REPO / "conftest.py"
    yield REPO / "setup.py"
    for top in SOURCES:
        yield from sorted((REPO / top).rglob("*.py"))


def imported_modules(tree: ast.AST, *, run_time_only: bool = False) -> Iterator[tuple[int, str]]:
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


def board_import_problems(package: Path) -> list[str]:
    """Every import in ``package`` (a folder of board code) that a board could not satisfy: one
    of the host harness (``npu_hil``, the bare folders), a relative one leaving the package, or
    anything but the standard library, numpy and the package's own modules. Imports under
    ``if TYPE_CHECKING:`` count too: they name the same code."""
    own = {p.stem for p in package.rglob("*.py")}
    allowed = set(sys.stdlib_module_names) | set(BOARD_THIRD_PARTY) | own
    problems = []
    for path in sorted(package.rglob("*.py")):
        depth = len(path.relative_to(package).parts)  # 1 for a module at the package's top
        where = path.relative_to(package).as_posix()
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.ImportFrom) and node.level:
                if node.level > depth:
                    problems.append(
                        f"{where}:{node.lineno}: leaves the package ({node.level} dots)"
                    )
                continue
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            problems += [
                f"{where}:{node.lineno}: import {name}"
                for name in names
                if name.split(".")[0] not in allowed or name.split(".")[0] in ("npu_hil", *BARE)
            ]
    return problems


def test_the_board_package_imports_nothing_of_the_host() -> None:
    assert sum(1 for _ in BOARD.rglob("*.py")) > 15  # the walk reads the package, not nothing
    problems = board_import_problems(BOARD)
    assert not problems, "board code runs on a board without the harness:\n" + "\n".join(problems)


def test_the_board_rule_sees_what_a_board_lacks(tmp_path: Path) -> None:
    """The walk above must see each way board code could reach the host."""
    package = tmp_path / "board"
    (package / "adapters").mkdir(parents=True)
    (package / "wire.py").write_text("import json\nimport numpy\n")
    (package / "adapters" / "good.py").write_text("from ..wire import x\nfrom .base import y\n")
    assert board_import_problems(package) == []
    (package / "adapters" / "bad.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from npu_hil.harness.errors import LayoutError\n"
        "from ...errors import DeviceError\n"
        "import onnxruntime\n"
        "if TYPE_CHECKING:\n"
        "    from harness.sim import SimNpu\n"
    )
    assert board_import_problems(package) == [
        "adapters/bad.py:2: import npu_hil.harness.errors",
        "adapters/bad.py:3: leaves the package (3 dots)",
        "adapters/bad.py:4: import onnxruntime",
        "adapters/bad.py:6: import harness.sim",
    ]


# A module named in prose (a docstring, a comment, a document, CLI help) by a path no user can
# import: ``harness.codec`` or ``harness/codec/engine.py`` for ``npu_hil.harness.codec``.
STRAY_DOTTED = re.compile(r"(?<![\w.\-/])(harness|targets)((?:\.[A-Za-z_]\w*)+)")
STRAY_SLASHED = re.compile(r"(?<![\w.\-/])(harness|targets)/(\w+)")
PROSE_FILES = ("README.md", "DESIGN.md", "tox.ini", "pyproject.toml", ".ci/run")


def _is_our_module(top: str, dotted: str) -> bool:
    """``harness`` + ``.codec.engine.x`` names a module of ours when its first part does."""
    first = REPO / "npu_hil" / top / dotted.lstrip(".").split(".")[0]
    return first.with_suffix(".py").is_file() or (first / "__init__.py").is_file()


def stray_names(text: str) -> list[str]:
    found = [
        m.group(0) for m in STRAY_DOTTED.finditer(text) if _is_our_module(m.group(1), m.group(2))
    ]
    found += [
        m.group(0)
        for m in STRAY_SLASHED.finditer(text)
        if _is_our_module(m.group(1), m.group(2).removesuffix(".py"))
    ]
    return found


def _prose_of(path: Path) -> Iterator[tuple[int, str]]:
    """A Python file's comments and strings (docstrings, help, messages); another file whole."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        yield from enumerate(text.splitlines(), start=1)
        return
    prose = {tokenize.COMMENT, tokenize.STRING}
    prose.add(getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING))
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in prose:
            yield token.start[0], token.string


def test_no_prose_names_a_module_by_a_path_nobody_imports() -> None:
    skip = {Path(__file__).resolve(), *(REPO / name for name in USER_PROJECT_FILES + LABEL_FILES)}
    docs = [REPO / name for name in PROSE_FILES] + sorted((REPO / "docs").rglob("*.md"))
    found = [
        f"{path.relative_to(REPO)}:{line}: {name}"
        for path in [*python_files(), *docs]
        if path.is_file() and path not in skip
        for line, text in _prose_of(path)
        for name in stray_names(text)
    ]
    assert not found, "name modules as a user imports them (npu_hil.harness...):\n" + "\n".join(
        found
    )


def test_the_stray_name_check_sees_both_spellings() -> None:
    assert stray_names("see harness.codec.engine and targets/rockchip/layouts.py") == [
        "harness.codec.engine",
        "targets/rockchip",
    ]
    assert not stray_names("npu_hil.harness.codec, npu_hil/targets/unit.py, targets.py, harness.x")
