"""The examples of README.md and docs/ run, so the pages cannot drift from the code
(``doc_examples`` says how each kind of block is run; ``python tests/docs/doc_examples.py``
counts them). The unit tier runs every example that needs no board; the ones that open a farm
or are pytest tests run in ``test_doc_board_examples.py``."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest
from doc_examples import (
    LANGUAGES,
    REPO,
    Block,
    all_blocks,
    blocks,
    commands,
    load_gen_pages,
    pages,
    run_block,
)

BOARD_KINDS = ("python-board", "pytest")


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_the_page_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for block in blocks(page):
        if block.kind not in BOARD_KINDS:
            run_block(block, tmp_path)


def test_every_block_says_what_it_is() -> None:
    """A language every block has and the runner knows; a not-run reason on each skipped one;
    every command of a block that runs is an npu-hil command."""
    found = all_blocks()
    assert len(found) > 50
    unknown = [f"{b.where}: ```{b.lang}" for b in found if b.lang not in LANGUAGES]
    assert not unknown, (
        "a code block needs a language of " + ", ".join(LANGUAGES) + ":\n" + ("\n".join(unknown))
    )
    not_npu_hil = [
        f"{b.where}: {command}"
        for b in found
        if b.kind == "sh"
        for command, _ in commands(b)
        if not command.startswith("npu-hil ")
    ]
    assert not not_npu_hil, "mark these blocks <!-- not-run: why -->:\n" + "\n".join(not_npu_hil)
    assert all(b.not_run.strip() for b in found if b.not_run is not None)


def test_the_page_source_has_no_indented_code() -> None:
    """Code is fenced (so it is run or marked): no tab-indented or 4-space block outside a list."""
    for page in pages():
        previous = ""
        fenced = False
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            indented = line.startswith("    ") and not previous.strip()
            in_list = re.match(r"\s*([-*]|\d+\.)\s", previous) is not None
            assert fenced or not indented or in_list or previous.startswith("    "), (
                f"{page.relative_to(REPO)}:{number}: indented code; fence it"
            )
            previous = line if line.strip() or fenced else previous if in_list else line


def test_the_runner_sees_each_kind() -> None:
    sample = Block(
        "x.md", 1, "sh", "npu-hil a \\\n  --b c   # exits 1\n# a comment\nnpu-hil d\n", None
    )
    assert commands(sample) == [("npu-hil a --b c", 1), ("npu-hil d", 0)]
    assert Block("x.md", 1, "python", "def test_x(run_model):\n    pass\n", None).kind == "pytest"
    assert Block("x.md", 1, "python", "with Farm('i.yaml') as f:\n    pass\n", None).kind == (
        "python-board"
    )
    assert Block("x.md", 1, "sh", "tox\n", "needs a board").kind == "not-run"


# Dotted names under npu_hil that are not modules.
NOT_MODULES = {
    "npu_hil.vendors",  # the entry-point group vendors are named in
    "npu_hil.version",  # JUnit property names in pytest's own --junitxml ...
    "npu_hil.unstable",
    "npu_hil.accuracy",
}
DOTTED = re.compile(r"(?<![\w.])npu_hil(?:\.[A-Za-z_]\w*)+")
SLASHED = re.compile(r"(?<![\w./])npu_hil(?:/[\w.<>-]+)+")


def _defined_in(module: str, name: str) -> bool:
    """``name`` is bound at the top of ``module``'s source (read, not imported)."""
    base = REPO.joinpath(*module.split("."))
    source = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
    if not source.is_file():
        return False
    tree = ast.parse(source.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return True
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((alias.asname or alias.name).split(".")[0] == name for alias in node.names):
                return True
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name:
            return True
    return (base / name).is_dir() or (base / f"{name}.py").is_file()


def resolves(dotted: str) -> bool:
    """A module, or a name inside the longest module prefix that imports. A module whose
    import needs an optional extra (labgrid) is read instead."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            target: object = importlib.import_module(module)
        except ImportError:
            continue
        except Exception:
            return cut == len(parts) or _defined_in(module, parts[cut])
        for name in parts[cut:]:
            if not hasattr(target, name):
                return False
            target = getattr(target, name)
        return True
    return False


def test_every_module_named_in_the_pages_exists() -> None:
    """Each ``npu_hil.x.y`` of README.md and docs/ imports (or is a name in a module that does),
    and each ``npu_hil/x/y`` path is in the tree (a ``<vendor>`` stands for any vendor)."""
    missing = []
    for page in [*pages(), REPO / "DESIGN.md"]:
        text = page.read_text(encoding="utf-8")
        for name in sorted(set(DOTTED.findall(text))):
            if ".".join(name.split(".")[:2]) in NOT_MODULES:
                continue
            if not resolves(name.rstrip(".")):
                missing.append(f"{page.relative_to(REPO)}: {name}")
        for path in sorted(set(SLASHED.findall(text))):
            if "<" in path:
                pattern = re.sub(r"<[^>]+>", "*", path.rstrip("/."))
                if not list(REPO.glob(pattern)):
                    missing.append(f"{page.relative_to(REPO)}: {path}")
            elif not (REPO / path.rstrip("/.")).exists():
                missing.append(f"{page.relative_to(REPO)}: {path}")
    assert not missing, "\n".join(missing)


def test_the_readme_is_short() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250


def test_every_page_is_in_the_site() -> None:
    """Each page of docs/ is in mkdocs.yml's nav (mkdocs --strict refuses the others too, in
    tox -e docs; this says it in the unit tier) and each nav entry is a page or generated."""
    import yaml

    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    nav = yaml.safe_load(config.split("\nnav:", 1)[1].join(["nav:", ""]))["nav"]

    def entries(node: object) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, list):
            return [e for item in node for e in entries(item)]
        if isinstance(node, dict):
            return [e for value in node.values() for e in entries(value)]
        return []

    listed = set(entries(nav))
    generated = set(load_gen_pages().GENERATED)
    written = {str(p.relative_to(REPO / "docs")) for p in (REPO / "docs").rglob("*.md")}
    assert written | generated == listed
    assert not written & generated
