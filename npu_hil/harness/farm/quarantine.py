"""The quarantine list: tests the farm knows to be failing, still run but not failing the run
(docs/farm/quarantine.md); errors are ``file:line:column: key.path: ...`` like the inventory's.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timezone
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, PlainValidator

from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.farm.inventory_reader import Entry, InventoryError, expected, validate
from npu_hil.harness.farm.inventory_types import Text, matching
from npu_hil.harness.yaml_reader import ALLOWED_TAGS, MAX_CHARS, Written, YamlProblem, compose

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
_URL = re.compile(r"https?://[^\s]+\Z")
# A bare YAML date (expires: 2027-01-31) is resolved as a timestamp: taken for ``expires`` only,
# and read from its text (nothing is constructed).
_TAGS = ALLOWED_TAGS | {"tag:yaml.org,2002:timestamp"}
_HOLDS = "the quarantine file holds plain strings, dates, lists and mappings"
_EVERY = "(every entry has test, reason, expires)"


class QuarantineError(NpuHilError):
    """A quarantine file that cannot be used: ``file:line:column: key.path: ...``."""


def _date(value: Any) -> date:
    """A date as ``YYYY-MM-DD``, bare (YAML's timestamp, as written) or quoted."""
    text = value.text if isinstance(value, Written) else value
    if not isinstance(text, str) or not _DATE.match(text):
        raise expected("a date YYYY-MM-DD")
    try:
        return date.fromisoformat(text)
    except ValueError as exc:
        raise expected("a date YYYY-MM-DD", why=str(exc)) from None


class _Entry(Entry):
    test: Text = Field(description=f"a test {_EVERY}")
    target: Text | None = None
    board: Text | None = None
    reason: Text = Field(description=f"a reason {_EVERY}")
    link: Annotated[Text, matching(_URL, "an http(s) URL")] | None = None
    expires: Annotated[date, PlainValidator(_date)] = Field(
        description=f"expires, a date YYYY-MM-DD {_EVERY}"
    )


class QuarantineEntry(_Entry):
    """One entry of the list; ``where`` is ``file:line:column`` of the entry, ``index`` its
    position in the list."""

    where: str
    index: int

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
        optional = {"target": self.target, "board": self.board, "link": self.link}
        return {
            "test": self.test,
            "reason": self.reason,
            "expires": self.expires.isoformat(),
            "entry": f"quarantine[{self.index}] ({self.where})",
            **{key: value for key, value in optional.items() if value is not None},
        }


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


class _File(Entry):
    quarantine: list[_Entry] = Field(description="a list of entries")


def parse_quarantine(text: str, *, source: str = "<quarantine>") -> tuple[QuarantineEntry, ...]:
    """Check quarantine YAML ``text``; ``source`` names the file in errors."""
    try:
        root = compose(text)
        if root is None:
            raise YamlProblem(1, 1, "expected a mapping with a quarantine list, got an empty file")
        file, located = validate(_File, root, source, tags=_TAGS, holds=_HOLDS)
    except YamlProblem as problem:
        raise QuarantineError(
            f"{source}:{problem.line}:{problem.column}: {problem.message}"
        ) from None
    except InventoryError as exc:
        raise QuarantineError(exc.message) from None
    return tuple(
        QuarantineEntry.model_construct(  # checked already, as a file's entry
            **entry.model_dump(),
            where=located.where(("quarantine", index), path=False),
            index=index,
        )
        for index, entry in enumerate(file.quarantine)
    )
