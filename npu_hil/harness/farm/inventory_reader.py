"""Typed access to an inventory's composed YAML nodes: every value read is checked and every
failure carries the node's position, ``file:line:column: key.path: what was expected, what
came``.

:class:`NodeReader` is the one reader of the inventory and of its ``labgrid:`` section; what
the schema is lives with them (:mod:`npu_hil.harness.farm.inventory`,
:mod:`npu_hil.harness.farm.inventory_entries`, :mod:`npu_hil.harness.farm.labgrid_inventory`). The
YAML text itself is read by :mod:`npu_hil.harness.yaml_reader`.
"""

from __future__ import annotations

import difflib
import errno
import json
import os
import pwd
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.redact import secret_key_name
from npu_hil.harness.transport.defaults import BAUDRATE, BAUDRATES
from npu_hil.harness.yaml_reader import (
    MappingNode,
    Node,
    ScalarNode,
    SequenceNode,
    plain_integer,
    plain_number,
)

__all__ = [
    "MAX_SECONDS",
    "MAX_TEXT",
    "InventoryError",
    "MappingNode",
    "Node",
    "NodeReader",
    "ScalarNode",
    "SequenceNode",
    "optional",
    "secret_use",
    "shown",
]

SECRETS = {"password": "password_env (the name of an environment variable)", "key": "key_file"}
MAX_SECONDS = 24 * 3600.0
"""No connect, load, run, power or health step waits longer than a day: a larger timeout is a
typo (and ``.inf`` or 1e300 overflow the transports' timers)."""
MAX_TEXT = 4096
"""Longer than any path, host, name or command argument."""
# What no path, host, name or argument may hold: C0 controls, DEL, bidi overrides, lone surrogates.
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_BOOL = "tag:yaml.org,2002:bool"
_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_NULL = "tag:yaml.org,2002:null"

T = TypeVar("T")


class InventoryError(NpuHilError):
    """An inventory that cannot be used: the message is ``file:line:column: key.path: ...``."""


class NodeReader:
    """Typed access to composed YAML nodes; every failure carries the node's position."""

    def __init__(self, source: str, base: Path | None = None) -> None:
        self.source = source
        self.base = base if base is not None else Path(".")

    def error(self, node: Node, path: str, message: str) -> InventoryError:
        mark = node.start_mark
        return InventoryError(f"{self.source}:{mark.line + 1}:{mark.column + 1}: {path}: {message}")

    def not_number(self, node: Node, path: str, what: str, why: str) -> InventoryError:
        return self.error(node, path, f"expected {what}, got {self.describe(node)}: {why}")

    def expected(self, node: Node, path: str, what: str) -> InventoryError:
        return self.error(node, path, f"expected {what}, got {self.describe(node)}")

    def describe(self, node: Node) -> str:
        """What came, shown short and escaped (the message goes to records and reports)."""
        if isinstance(node, MappingNode):
            return "a mapping"
        if isinstance(node, SequenceNode):
            return "a list"
        if node.tag == _NULL:
            return "nothing (null)"
        value = str(node.value)
        return shown(value, quoted=node.tag == _STR or not value)

    def mapping(
        self, node: Node, path: str, allowed: tuple[str, ...]
    ) -> dict[str, tuple[Node, Node]]:
        """Keys → (key node, value node); unknown and duplicate keys and secrets refused."""
        if not isinstance(node, MappingNode):
            raise self.expected(node, path, "a mapping")
        out: dict[str, tuple[Node, Node]] = {}
        for key_node, value_node in node.value:
            # Keys are read as written: YAML 1.1 would make ``on:``/``off:`` booleans.
            if not isinstance(key_node, ScalarNode) or key_node.tag == _NULL:
                raise self.expected(key_node, path, "a key (text)")
            key = str(key_node.value)
            if len(key) > 64 or _UNPRINTABLE.search(key):
                raise self.expected(key_node, path, f"a key (one of {', '.join(allowed)})")
            where = f"{path}.{key}" if path else key
            if secret_use(key) is not None:
                raise self.error(
                    key_node,
                    where,
                    f"secrets do not belong in the inventory; use {secret_use(key)} instead",
                )
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise self.error(
                    key_node, where, f"unknown key (expected one of {', '.join(allowed)}){hint}"
                )
            if key in out:
                raise self.error(key_node, where, "duplicate key")
            out[key] = (key_node, value_node)
        return out

    def text(self, node: Node, path: str) -> str:
        if not isinstance(node, ScalarNode) or node.tag != _STR or not node.value:
            error = self.expected(node, path, "a non-empty string")
            if isinstance(node, ScalarNode) and node.tag in (_BOOL, _INT, _FLOAT) and node.value:
                # YAML 1.1 turns yes/no/on/off, 022 or 1:30 into something else than text.
                kind = {_BOOL: "a boolean", _INT: "an integer", _FLOAT: "a number"}[node.tag]
                raise InventoryError(f"{error.message} (YAML reads it as {kind}: quote it)")
            raise error
        value = str(node.value)
        bad = _UNPRINTABLE.search(value)
        if bad:
            code = ord(bad.group())
            raise self.error(
                node,
                path,
                f"expected printable text, got {self.describe(node)}: "
                f"U+{code:04X} at character {bad.start() + 1}",
            )
        if len(value) > MAX_TEXT:
            raise self.expected(node, path, f"at most {MAX_TEXT} characters")
        return value

    def local_path(self, node: Node, path: str) -> str:
        """A file on this machine: ``~`` expanded, relative to the inventory's folder (a farm's
        inventory travels with its keys, whatever folder the harness is started from)."""
        text = self.text(node, path)
        if text.startswith("~"):
            head, _, rest = text.partition("/")
            if head == "~":
                home = os.environ.get("HOME") or _home_of_uid()
                if not home:
                    raise self.error(node, path, f"{text}: no home folder (HOME is not set)")
            else:
                try:
                    home = pwd.getpwnam(head[1:]).pw_dir
                except (KeyError, ValueError):
                    hint = f" (did you mean ~/{text[1:]}?)" if head.startswith("~.") else ""
                    raise self.error(
                        node, path, f"{text}: {head} names no user of this machine{hint}"
                    ) from None
            text = os.path.join(home, rest) if rest else home
        return self.resolved(node, path, self.base / text)

    def resolved(self, node: Node, path: str, file: Path) -> str:
        # Strict first: from Python 3.13 a non-strict resolve walks past a loop of
        # symbolic links silently, so only the strict walk finds one everywhere.
        try:
            return str(file.resolve(strict=True))
        except FileNotFoundError:
            pass  # a file still to come (a key written later) is fine
        except RuntimeError:  # Python < 3.13 reports a loop this way
            raise self.error(node, path, f"{file}: a loop of symbolic links") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise self.error(node, path, f"{file}: a loop of symbolic links") from None
        except ValueError:
            pass
        try:
            return str(file.resolve())
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise self.error(node, path, f"{file}: {reason}") from None

    def integer(self, node: Node, path: str, *, low: int = 0, high: int | None = None) -> int:
        bounds = f"in [{low}, {high}]" if high is not None else f">= {low}"
        if not isinstance(node, ScalarNode) or node.tag != _INT:
            raise self.expected(node, path, "an integer")
        try:
            number = plain_integer(str(node.value))
        except ValueError as exc:
            raise self.not_number(node, path, f"an integer {bounds}", str(exc)) from None
        if number < low or (high is not None and number > high):
            raise self.expected(node, path, f"an integer {bounds}")
        return number

    def number(self, node: Node, path: str, what: str) -> float:
        """A finite plain number (an integer or a decimal), for ``what`` in the errors."""
        if not isinstance(node, ScalarNode) or node.tag not in (_INT, _FLOAT):
            raise self.expected(node, path, what)
        try:
            return plain_number(str(node.value))
        except ValueError as exc:
            raise self.not_number(node, path, what, str(exc)) from None

    def seconds(self, node: Node, path: str) -> float:
        what = f"a number of seconds in (0, {MAX_SECONDS:.0f}] (at most 24 h)"
        number = self.number(node, path, what)
        if not 0 < number <= MAX_SECONDS:
            raise self.expected(node, path, what)
        return number

    def baudrate(self, node: Node, path: str) -> int:
        rate = self.integer(node, path, low=0)
        if rate not in BAUDRATES:
            close = min(BAUDRATES, key=lambda b: abs(b - rate))
            raise self.expected(
                node, path, f"a baud rate a serial port can be set to (e.g. {close}, {BAUDRATE})"
            )
        return rate

    def choice(self, node: Node, path: str, choices: tuple[str, ...]) -> str:
        if isinstance(node, ScalarNode) and node.tag == _STR and node.value in choices:
            return str(node.value)
        close: list[str] = []
        if isinstance(node, ScalarNode):
            close = difflib.get_close_matches(str(node.value), choices, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        error = self.expected(node, path, f"one of {', '.join(choices)}")
        raise InventoryError(f"{error.message}{hint}")

    def pattern(self, node: Node, path: str, regex: re.Pattern[str], what: str) -> str:
        text = self.text(node, path)
        if not regex.match(text):
            raise self.expected(node, path, what)
        return text

    def strings(self, node: Node, path: str) -> tuple[str, ...]:
        if not isinstance(node, SequenceNode):
            raise self.expected(node, path, "a list of strings")
        return tuple(self.text(item, f"{path}[{i}]") for i, item in enumerate(node.value))

    def word(self, node: Node, path: str) -> str:
        if not isinstance(node, ScalarNode) or node.tag == _NULL or not node.value:
            raise self.expected(node, path, "a command-line argument")
        value = str(node.value)
        if _UNPRINTABLE.search(value) or len(value) > MAX_TEXT:
            raise self.expected(node, path, "a command-line argument of printable text")
        return value

    def command(self, node: Node, path: str) -> tuple[str, ...]:
        """A command as a string (split like a shell would, but never run by one) or a list."""
        if isinstance(node, SequenceNode):
            # Arguments as written: ``[pdu-ctl, on, 4]`` means the words, not a bool and an int.
            argv = tuple(self.word(item, f"{path}[{i}]") for i, item in enumerate(node.value))
        else:
            try:
                argv = tuple(shlex.split(self.text(node, path)))
            except ValueError as exc:
                raise self.error(node, path, f"cannot split the command: {exc}") from None
        if not argv:
            raise self.expected(node, path, "a command")
        return argv

    def checked(self, node: Node, path: str, problem: Callable[[str], str | None]) -> str:
        """A text the function ``problem`` accepts (it says what is wrong, or None): the check
        lives with the setting it is about, the position is added here."""
        text = self.text(node, path)
        what = problem(text)
        if what is not None:
            raise self.error(node, path, what)
        return text


def optional(
    fields: dict[str, tuple[Node, Node]], key: str, read: Callable[[Node, str], T], path: str
) -> T | None:
    """``read`` of the field ``key`` when the mapping has it, else None."""
    if key not in fields:
        return None
    return read(fields[key][1], f"{path}.{key}" if path else key)


def shown(value: str, *, quoted: bool = True, limit: int = 60) -> str:
    """``value`` for an error message: JSON-escaped (no control character, no lone surrogate
    reaches a report) and cut to about ``limit`` characters."""
    cut = value if len(value) <= limit else value[:limit]
    text = json.dumps(cut)
    if not quoted and text[1:-1] == cut:
        text = cut
    elif not quoted:
        text = text[1:-1]
    if len(value) > limit:
        text += f"... ({len(value)} characters)"
    return text


def secret_use(key: str) -> str | None:
    """What to write instead of the secret a key names (``password``, ``Key``, ``api_token``),
    or None when it names none."""
    name = key.strip().lower()
    if name in SECRETS:
        return SECRETS[name]
    if secret_key_name(name):
        return "key_file (the key's path) and password_env (the name of an environment variable)"
    return None


def _home_of_uid() -> str | None:
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return None
