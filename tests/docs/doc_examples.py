"""The examples of README.md and docs/: every fenced block, what kind it is, how it is run.

A block's language says what it is:

- ``python``: run. A block that defines a pytest test (``def test_``) or opens a farm
  (``Farm(``) needs boards and runs in the end-to-end tier; any other runs in the unit tier.
- ``sh``: each command (a line, ``\\`` continuing it) is an ``npu-hil`` command, run in-process;
  a comment ``# exits N`` on it gives the exit status it must have (0 otherwise).
- ``yaml`` and ``json``: parsed; a YAML mapping with ``boards`` or ``labgrid`` is an inventory
  and is read by the inventory's own reader.
- ``text``: what a command or a report shows; nothing to run.

A block that cannot run here (a board, a compiler, a benchmark, an install) has the comment
``<!-- not-run: why -->`` on the line before it, visible in the page's source; it is counted and
skipped. Every block of a page runs in one scratch folder, in the page's order, so a block can
use the files an earlier one wrote.

``python tests/docs/doc_examples.py`` prints the census: how many blocks of each kind, and how
many are run.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import shlex
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
LANGUAGES = ("python", "sh", "yaml", "json", "text")
FENCE = re.compile(r"^(?P<indent>[ ]*)(?P<fence>```+)(?P<lang>[^`\s]*)\s*$")
NOT_RUN = re.compile(r"^\s*<!-- not-run: (?P<why>.+?) -->\s*$")
EXITS = re.compile(r"#\s*exits (\d+)\s*$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    text: str
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def kind(self) -> str:
        """not-run, python, python-board, pytest, sh, yaml, json or text."""
        if self.not_run is not None:
            return "not-run"
        if self.lang == "python":
            if re.search(r"^def test_", self.text, re.MULTILINE):
                return "pytest"
            return "python-board" if "Farm(" in self.text else "python"
        return self.lang


def load_gen_pages() -> ModuleType:
    """docs/gen_pages.py, the script that writes the generated pages, as a module."""
    spec = importlib.util.spec_from_file_location("gen_pages", REPO / "docs" / "gen_pages.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_pages"] = module
    spec.loader.exec_module(module)
    return module


def pages() -> list[Path]:
    """README.md and every page of docs/ (the generated pages are written at build time)."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    page = str(path.relative_to(REPO))
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        start = FENCE.match(lines[index])
        if not start:
            index += 1
            continue
        indent, fence = start["indent"], start["fence"]
        body: list[str] = []
        end = index + 1
        while end < len(lines) and lines[end].strip() != fence:
            body.append(lines[end][len(indent) :] if lines[end].startswith(indent) else lines[end])
            end += 1
        if end == len(lines):
            raise AssertionError(f"{page}:{index + 1}: a code block that is never closed")
        before = lines[index - 1] if index else ""
        marked = NOT_RUN.match(before)
        found.append(
            Block(page, index + 1, start["lang"], "\n".join(body) + "\n", marked and marked["why"])
        )
        index = end + 1
    return found


def all_blocks() -> list[Block]:
    return [block for path in pages() for block in blocks(path)]


def commands(block: Block) -> list[tuple[str, int]]:
    """The block's commands with the exit status each must have."""
    found: list[tuple[str, int]] = []
    pending = ""
    for raw in block.text.splitlines():
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if not line or line.startswith("#"):
            continue
        exits = EXITS.search(line)
        command = " ".join(line.split(" #", 1)[0].split())
        found.append((command, int(exits.group(1)) if exits else 0))
    return found


def run_command(command: str) -> tuple[int, str]:
    """An ``npu-hil`` command, in-process: its exit status and what it printed."""
    from npu_hil.harness.cli.main import main

    words = shlex.split(command)
    if words[:1] != ["npu-hil"]:
        raise AssertionError(
            f"{command!r} is not an npu-hil command: mark its block <!-- not-run: why -->"
        )
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            code = main(words[1:])
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
    return code, out.getvalue()


def run_python(block: Block) -> str:
    """Run a Python block in a namespace of its own; what it printed."""
    out = io.StringIO()
    code = compile(block.text, block.where, "exec")
    with contextlib.redirect_stdout(out):
        exec(code, {"__name__": "__doc_example__"})
    return out.getvalue()


def check_data(block: Block, folder: Path) -> None:
    """Parse a YAML or JSON block; read an inventory with the inventory's reader."""
    if block.lang == "json":
        json.loads(block.text)
        return
    import yaml

    from npu_hil.harness.farm.inventory import parse_inventory

    data = yaml.safe_load(block.text)
    if isinstance(data, dict) and ({"boards", "labgrid"} & set(data)):
        parse_inventory(block.text, source=block.where, base=folder)


def run_block(block: Block, folder: Path) -> None:
    """Run one block in ``folder`` (the current directory): a failure says where and why."""
    if block.kind in ("python", "python-board"):
        run_python(block)
    elif block.kind == "sh":
        for command, expected in commands(block):
            code, output = run_command(command)
            assert code == expected, (
                f"{block.where}: `{command}` exited {code}, not {expected}:\n{output}"
            )
    elif block.kind in ("yaml", "json"):
        check_data(block, folder)


def census() -> Counter[str]:
    return Counter(block.kind for block in all_blocks())


def main() -> None:
    counts = census()
    run_here = counts["python"] + counts["sh"] + counts["yaml"] + counts["json"]
    run_boards = counts["python-board"] + counts["pytest"]
    sh_commands = sum(len(commands(b)) for b in all_blocks() if b.kind == "sh")
    print(f"pages: {len(pages())}, code blocks: {sum(counts.values())}")
    for kind in ("python", "sh", "yaml", "json", "python-board", "pytest", "text", "not-run"):
        print(f"  {kind:13} {counts[kind]}")
    print(f"run in the unit tier: {run_here} blocks ({sh_commands} npu-hil commands)")
    print(f"run in the e2e tier, on simulated boards: {run_boards} blocks")
    print(f"shown only (output): {counts['text']}; marked not-run: {counts['not-run']}")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
