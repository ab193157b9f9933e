"""The quarantine list: tests the farm knows to be failing, still run but not failing the run.

A quarantine file is YAML (read by :mod:`npu_hil.harness.yaml_reader`, checked by
:class:`~npu_hil.harness.farm.inventory_reader.NodeReader`, so every error is ``file:line:column:
key.path: ...`` like the inventory's)::

    quarantine:
      - test: "tests/regression/test_layouts.py::test_detector_head*"
        target: <a target name>          # optional: only on boards of this target
        board: <a board name>            # optional: only on this board
        reason: output 3 off by one row since runtime 2.3
        link: https://tracker.example/issues/123   # optional
        expires: 2027-01-31                         # YYYY-MM-DD, UTC

``test`` is an :mod:`fnmatch` pattern over pytest's node id, matched against the whole id and
against the id without its parameters (``test_x[board-01]`` is also ``test_x``); an id written
out in full, brackets included, matches itself. An entry past its expiry date is an error, and so
is one that matches no collected test: a quarantine that outlived its test or its date is never
silently ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timezone
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.farm.inventory_reader import InventoryError, NodeReader, optional
from npu_hil.harness.yaml_reader import (
    ALLOWED_TAGS,
    MAX_CHARS,
    ScalarNode,
    SequenceNode,
    YamlProblem,
    compose,
)

__all__ = [
    "QuarantineEntry",
    "QuarantineError",
    "expired_entries",
    "parse_quarantine",
    "read_quarantine",
    "today_utc",
]

TOP_KEYS = ("quarantine",)
ENTRY_KEYS = ("test", "target", "board", "reason", "link", "expires")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
_URL = re.compile(r"https?://[^\s]+\Z")
# A bare YAML date (expires: 2027-01-31) is resolved as a timestamp: taken for ``expires`` only,
# and read from its text (nothing is constructed).
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class QuarantineError(NpuHilError):
    """A quarantine file that cannot be used: ``file:line:column: key.path: ...``."""


@dataclass(frozen=True)
class QuarantineEntry:
    """One entry of the list; ``where`` is ``file:line:column`` of the entry, ``index`` its
    position in the list."""

    test: str
    reason: str
    expires: date
    where: str
    index: int
    target: str | None = None
    board: str | None = None
    link: str | None = None

    @property
    def label(self) -> str:
        """``quarantine[2] (file:3:5), test 'x'``: how errors and reports name the entry."""
        return f"quarantine[{self.index}] ({self.where}), test {self.test!r}"

    def matches(self, nodeid: str, *, board: str | None, target: str | None) -> bool:
        """Whether this entry covers the test ``nodeid`` on ``board`` (of ``target``)."""
        if self.board is not None and self.board != board:
            return False
        if self.target is not None and self.target != target:
            return False
        bare = nodeid.split("[", 1)[0]
        return self.test == nodeid or fnmatchcase(nodeid, self.test) or fnmatchcase(bare, self.test)

    def to_dict(self) -> dict[str, str]:
        """What a record keeps of the entry (plain strings)."""
        out = {
            "test": self.test,
            "reason": self.reason,
            "expires": self.expires.isoformat(),
            "entry": f"quarantine[{self.index}] ({self.where})",
        }
        for key in ("target", "board", "link"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


def today_utc() -> date:
    return datetime.now(timezone.utc).date()


def expired_entries(entries: tuple[QuarantineEntry, ...], today: date) -> list[QuarantineEntry]:
    """The entries whose date is before ``today`` (an entry is good through its expiry day)."""
    return [e for e in entries if e.expires < today]


def read_quarantine(path: str | Path) -> tuple[QuarantineEntry, ...]:
    """The entries of the quarantine file at ``path``."""
    from npu_hil.harness.files import InputFileError, read_regular

    file = Path(path)
    try:
        # A regular file of at most the YAML reader's bound: a FIFO is refused, not waited on,
        # and /dev/zero is not read forever.
        data = read_regular(file, "a quarantine file (YAML)", MAX_CHARS)
        text = bytes(data).decode("utf-8")
    except InputFileError as exc:
        raise QuarantineError(f"cannot read the quarantine file: {exc.message}") from None
    except UnicodeDecodeError as exc:
        raise QuarantineError(f"{file}: cannot read the quarantine file: {exc}") from None
    return parse_quarantine(text, source=str(path))


def parse_quarantine(text: str, *, source: str = "<quarantine>") -> tuple[QuarantineEntry, ...]:
    """Check quarantine YAML ``text``; ``source`` names the file in errors."""
    try:
        root = compose(text)
        if root is None:
            raise YamlProblem(1, 1, "expected a mapping with a quarantine list, got an empty file")
        _check_tags(root)
        return _entries(NodeReader(source), root)
    except YamlProblem as problem:
        raise QuarantineError(
            f"{source}:{problem.line}:{problem.column}: {problem.message}"
        ) from None
    except InventoryError as exc:
        raise QuarantineError(exc.message) from None


def _check_tags(root: Any) -> None:
    """Only plain nodes (and a bare date): no tag reaches anything here."""
    pending = [root]
    while pending:
        node = pending.pop()
        if node.tag not in ALLOWED_TAGS and node.tag != _TIMESTAMP:
            mark = node.start_mark
            raise YamlProblem(
                mark.line + 1,
                mark.column + 1,
                f"the YAML tag {node.tag[:60]!r} is not taken: the quarantine file holds plain "
                "strings, dates, lists and mappings",
            )
        if isinstance(node.value, list):
            for item in node.value:
                pending.extend(item if isinstance(item, tuple) else (item,))


def _entries(r: NodeReader, root: Any) -> tuple[QuarantineEntry, ...]:
    top = r.mapping(root, "", TOP_KEYS)
    if "quarantine" not in top:
        raise r.error(root, "quarantine", "expected a list of entries")
    items = top["quarantine"][1]
    if not isinstance(items, SequenceNode):
        raise r.expected(items, "quarantine", "a list of entries")
    return tuple(_entry(r, node, index) for index, node in enumerate(items.value))


def _entry(r: NodeReader, node: Any, index: int) -> QuarantineEntry:
    path = f"quarantine[{index}]"
    fields = r.mapping(node, path, ENTRY_KEYS)
    for key in ("test", "reason", "expires"):
        if key not in fields:
            raise r.error(node, f"{path}.{key}", "missing (every entry has test, reason, expires)")
    mark = node.start_mark
    return QuarantineEntry(
        test=r.text(fields["test"][1], f"{path}.test"),
        reason=r.text(fields["reason"][1], f"{path}.reason"),
        expires=_date(r, fields["expires"][1], f"{path}.expires"),
        where=f"{r.source}:{mark.line + 1}:{mark.column + 1}",
        index=index,
        target=optional(fields, "target", r.text, path),
        board=optional(fields, "board", r.text, path),
        link=optional(fields, "link", lambda n, p: r.pattern(n, p, _URL, "an http(s) URL"), path),
    )


def _date(r: NodeReader, node: Any, path: str) -> date:
    what = "a date YYYY-MM-DD"
    if not isinstance(node, ScalarNode) or not _DATE.match(str(node.value)):
        raise r.expected(node, path, what)
    try:
        return date.fromisoformat(str(node.value))
    except ValueError as exc:
        raise r.error(node, path, f"expected {what}, got {r.describe(node)}: {exc}") from None
