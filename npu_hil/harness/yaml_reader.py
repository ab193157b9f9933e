"""The one YAML reader of the harness (inventory, quarantine list, model manifest): PyYAML's
``SafeLoader`` composing only, bounded in size and depth, plain tags only, no ``<<`` merge key;
:func:`plain_integer` and :func:`plain_number` take decimal forms only (YAML 1.1 reads ``1:30``
as 90, ``022`` as 18). Every refusal is a :class:`YamlProblem` at the offending node.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ALLOWED_TAGS",
    "MAX_CHARS",
    "MAX_DEPTH",
    "MappingNode",
    "Node",
    "ScalarNode",
    "SequenceNode",
    "Written",
    "YamlProblem",
    "compose",
    "load",
    "plain_data",
    "plain_integer",
    "plain_number",
]

# PyYAML ships no type information; the project reads it, and its nodes, untyped.
yaml: Any = importlib.import_module("yaml")
MappingNode: Any = yaml.nodes.MappingNode
ScalarNode: Any = yaml.nodes.ScalarNode
SequenceNode: Any = yaml.nodes.SequenceNode
Node = Any

MAX_CHARS = 1 << 20
"""An inventory of a thousand boards is about 150 KiB."""
MAX_DEPTH = 32
"""The schema nests seven deep (boards[i].power.command.on[j]); 32 leaves room for flow style."""
MAX_DIGITS = 18
"""More digits than any port, baud rate or number of seconds has (and far from Python's
4,300-digit limit on converting text to int)."""

ALLOWED_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "seq", "map")
)
_MERGE = "tag:yaml.org,2002:merge"
_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_HOLDS = "the inventory holds plain strings, numbers, lists and mappings"

_DECIMAL = re.compile(r"[-+]?[0-9]+\Z")
_NUMBER = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\Z")
_SEXAGESIMAL = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?\Z")


class YamlProblem(Exception):
    """Text or a node that cannot be read: ``line`` and ``column`` count from 1, ``path`` is the
    keys and indices to the node (when known)."""

    def __init__(
        self, line: int, column: int, message: str, path: tuple[str | int, ...] = ()
    ) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.message = message
        self.path = path


def _position(text: str, index: int) -> tuple[int, int]:
    index = max(0, min(index, len(text)))
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _problem_of(text: str, exc: Exception) -> YamlProblem:
    """A PyYAML error as a problem at its position (a reader error has an index, not a mark)."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "cannot be read"
        if mark is not None:
            return YamlProblem(mark.line + 1, mark.column + 1, f"not valid YAML: {problem}")
        return YamlProblem(1, 1, f"not valid YAML: {problem}")
    if isinstance(exc, yaml.reader.ReaderError):
        line, column = _position(text, exc.position)
        code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1])
        return YamlProblem(
            line, column, f"not valid YAML: the character U+{code:04X} is not allowed in YAML text"
        )
    return YamlProblem(1, 1, f"not valid YAML: {type(exc).__name__}")


class _Loader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no type information
    """PyYAML's safe loader, composing only (nothing is constructed), with the nesting bounded:
    its composer recurses once per level, so a deeper document is refused at the node that
    goes too deep, before Python's recursion limit is near."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise YamlProblem(
                    mark.line + 1,
                    mark.column + 1,
                    f"nested more than {MAX_DEPTH} levels deep (an inventory needs fewer than 10)",
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def compose(text: str) -> Any:
    """The root node of ``text`` (None for an empty document), or a :class:`YamlProblem`."""
    if len(text) > MAX_CHARS:
        raise YamlProblem(
            1, 1, f"the inventory is {len(text)} characters long (at most {MAX_CHARS})"
        )
    return _read(text, "get_single_node")


def load(text: str) -> Any:
    """The Python value of a plain YAML document (a manifest): ``SafeLoader``'s construction,
    the nesting bounded like :func:`compose`'s, a syntax error as a :class:`YamlProblem`."""
    return _read(text, "get_single_data")


def _read(text: str, method: str) -> Any:
    """``text`` through the bounded loader's ``method``, a PyYAML error as a problem."""
    try:
        loader = _Loader(text)  # the reader checks every character here
        try:
            return getattr(loader, method)()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise _problem_of(text, exc) from None


@dataclass(frozen=True)
class Written:
    """A scalar YAML 1.1 resolves to other than text (``on``, ``0_1_2``, ``022``), as written:
    each field decides what it takes (a command a word, a port a plain integer or an error)."""

    tag: str
    text: str


def plain_data(
    root: Any,
    *,
    tags: frozenset[str] = ALLOWED_TAGS,
    holds: str = _HOLDS,
    check: Callable[[Any, tuple[str | int, ...], bool], None] | None = None,
) -> Any:
    """The document as plain data: dicts (keys as written: YAML 1.1 would make ``on:`` a
    boolean), lists, str, None and :class:`Written`. Refused: a tag not in ``tags`` (``holds``
    says why), a key that is not text or is written twice, aliases expanding past MAX_CHARS nodes
    or MAX_DEPTH levels (one inside itself never ends). ``check(node, path, is_key)`` sees every
    node first."""
    count = 0

    def data(node: Any, path: tuple[str | int, ...], key: bool = False) -> Any:
        nonlocal count
        count += 1
        mark = node.start_mark
        where = (mark.line + 1, mark.column + 1)
        if count > MAX_CHARS or len(path) >= MAX_DEPTH:
            what = f"more than {MAX_CHARS} nodes" if count > MAX_CHARS else f"{MAX_DEPTH} levels"
            raise YamlProblem(*where, f"aliases expand to {what}")
        if check is not None:
            check(node, path, key)
        if node.tag not in tags:
            raise YamlProblem(*where, _tag_problem(node.tag, holds))
        if isinstance(node, SequenceNode):
            return [data(item, (*path, i)) for i, item in enumerate(node.value)]
        if isinstance(node, ScalarNode):
            if node.tag in (_STR, _NULL):
                return None if node.tag == _NULL else str(node.value)
            return Written(node.tag, str(node.value))
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            at = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            name = str(key_node.value)
            came = {MappingNode: "a mapping", SequenceNode: "a list"}.get(type(key_node))
            if came is None and data(key_node, (*path, name), True) is None:
                came = "nothing"
            if came is None and not name.isprintable():
                came = "text that is not printable"
            if came is not None:
                raise YamlProblem(*at, f"expected a key (printable text), got {came}", path)
            if name in out:
                raise YamlProblem(*at, "written twice", (*path, name))
            out[name] = data(value_node, (*path, name))
        return out

    return data(root, ())


def _tag_problem(tag: str, holds: str) -> str:
    if tag == _MERGE:
        return "merge keys (<<) are not taken: write the keys out (or use an alias)"
    shown = tag if len(tag) <= 60 else tag[:57] + "..."
    return f"the YAML tag {shown!r} is not taken: {holds}"


def _sexagesimal_hint(value: str) -> str | None:
    if _SEXAGESIMAL.match(value):
        return (
            f"YAML 1.1 reads {value} as a base-60 number; write a plain integer, "
            "or quote it if it is text"
        )
    return None


def plain_integer(value: str) -> int:
    """A decimal integer of at most :data:`MAX_DIGITS` digits, or ValueError saying why not."""
    hint = _sexagesimal_hint(value)
    if hint:
        raise ValueError(hint)
    if not _DECIMAL.match(value):
        raise ValueError("write a plain decimal integer (no 0x, 0o, 0b or _)")
    digits = value.lstrip("+-")
    if len(digits) > MAX_DIGITS:
        raise ValueError(f"{len(digits)} digits is more than any setting here takes")
    if len(digits) > 1 and digits.startswith("0"):
        raise ValueError(f"YAML 1.1 reads {value} as an octal number; write it without the 0")
    return int(value)


def plain_number(value: str) -> float:
    """A finite decimal number (``30``, ``2.5``, ``1e3``), or ValueError saying why not."""
    hint = _sexagesimal_hint(value)
    if hint:
        raise ValueError(hint)
    if value.lower().lstrip("+-") in (".inf", ".nan"):
        raise ValueError("expected a finite number")
    if _DECIMAL.match(value):
        return float(plain_integer(value))
    if len(value) > 32 or not _NUMBER.match(value):
        raise ValueError("write a plain decimal number")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError("expected a finite number")
    return number
