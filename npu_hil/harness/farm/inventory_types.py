"""The inventory's field types: pydantic's, each with the check YAML text needs. YAML 1.1 reads
``yes``, ``022``, ``1:30`` and ``.inf`` as other than text, so such values arrive as written
(:class:`~npu_hil.harness.yaml_reader.Written`) and each type says what it takes of them.
"""

from __future__ import annotations

import errno
import os
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, PlainValidator, StringConstraints
from pydantic import ValidationInfo as Info
from pydantic_core import PydanticCustomError

from npu_hil.harness.codec import known_targets
from npu_hil.harness.farm.inventory_reader import expected, problem
from npu_hil.harness.transport.defaults import BAUDRATE, BAUDRATES
from npu_hil.harness.yaml_reader import Written, plain_integer, plain_number

MAX_SECONDS = 24 * 3600.0
"""No step waits longer than a day: a larger timeout is a typo (and 1e300 overflows a timer)."""
MAX_TEXT = 4096
"""Longer than any path, host, name or command argument."""
# What no path, host, name or argument may hold: C0 controls, DEL, bidi overrides, lone surrogates.
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_INT = "tag:yaml.org,2002:int"
_NUMBERS = (_INT, "tag:yaml.org,2002:float")
PASSWORD_ENV_RE = re.compile(r"[A-Z_][A-Z0-9_]{0,127}\Z")
"""``password_env``: a variable's name as environment variables are named (capitals, digits,
underscores), so a password written there by mistake (``hunter2``, ``S3cret!``) is refused."""


def checked_text(value: str) -> str:
    """Text a board, a subprocess and a report can take: printable, at most MAX_TEXT long."""
    bad = _UNPRINTABLE.search(value)
    if bad:
        why = f"U+{ord(bad.group()):04X} at character {bad.start() + 1}"
        raise expected("printable text", why=why)
    if len(value) > MAX_TEXT:
        raise expected(f"at most {MAX_TEXT} characters")
    return value


Text = Annotated[
    str,
    StringConstraints(min_length=1),
    # Before pydantic's own check, which refuses a lone surrogate without saying where it is.
    BeforeValidator(lambda value: checked_text(value) if isinstance(value, str) else value),
]


def matching(regex: re.Pattern[str], what: str) -> AfterValidator:
    """Text that ``regex`` matches, described as ``what`` when it does not."""

    def check(value: str) -> str:
        if not regex.match(value):
            raise expected(what)
        return value

    return AfterValidator(check)


def _target(value: Any) -> str:
    """One of the codec's targets (asked when read: the vendor units register them)."""
    targets = known_targets()
    if not isinstance(value, str) or value not in targets:
        raise expected(f"one of {', '.join(targets)}", choices=targets)
    return value


Target = Annotated[str, PlainValidator(_target)]


Word = Annotated[Text, BeforeValidator(lambda v: v.text if isinstance(v, Written) else v)]
"""A command-line argument or a tag's value: a number or ``on`` as written."""


def _argv(value: Any) -> Any:
    """A command as a string (split as a shell would, never run by one) or as a list of words
    (``[pdu-ctl, on, 4]`` is three words, not a word, a boolean and a number)."""
    if isinstance(value, str):
        try:
            value = shlex.split(checked_text(value))
        except ValueError as exc:
            raise problem(f"cannot split the command: {exc}") from None
    if value == []:
        raise expected("a command")
    return value


Command = Annotated[tuple[Word, ...], BeforeValidator(_argv)]


def number(what: str, inside: Callable[[float], bool], *, integer: bool = False) -> PlainValidator:
    """A number ``inside`` accepts (no timeout is zero, ``wait: 0`` refuses at once, ``prio``
    may be negative), described as ``what``: from YAML a plain decimal (an integer only, if
    ``integer``), from code a number."""

    def check(value: Any) -> float:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not integer:
            number = float(value)
        elif isinstance(value, Written) and value.tag in ((_INT,) if integer else _NUMBERS):
            try:
                number = plain_integer(value.text) if integer else plain_number(value.text)
            except ValueError as exc:
                raise expected(what, why=str(exc)) from None
        else:
            raise expected("an integer" if integer else what)
        if not inside(number):
            raise expected(what)
        return number

    return PlainValidator(check)


Seconds = Annotated[
    float,
    number(
        f"a number of seconds in (0, {MAX_SECONDS:.0f}] (at most 24 h)",
        lambda n: 0 < n <= MAX_SECONDS,
    ),
]
Port = Annotated[int, number("an integer in [1, 65535]", lambda n: 1 <= n <= 65535, integer=True)]
Baudrate = Annotated[
    int,
    number(
        f"a baud rate a serial port can be set to (e.g. 9600, {BAUDRATE}, 1500000)",
        lambda n: n in BAUDRATES,
        integer=True,
    ),
]


def _variable(value: str) -> str:
    """``password_env`` names the variable that holds the password, never holds it: a value that
    is not such a name is refused without being shown (it may be the secret)."""
    if not PASSWORD_ENV_RE.match(value):
        raise problem(
            "expected the name of an environment variable in capitals, digits and _ "
            "(e.g. FARM_CONSOLE_PASSWORD), got a value that is not one (not shown: it may be "
            "the password itself; put the password in a variable and name the variable here)"
        )
    return value


PasswordEnv = Annotated[str, AfterValidator(_variable)]


def _resolved(file: Path) -> str:
    """``file`` resolved; a file still to come (a key written later) is fine, a loop of
    symbolic links is not."""
    # Strict first: from Python 3.13 a non-strict resolve walks past a loop of symbolic links
    # silently, so only the strict walk finds one everywhere (before 3.13: a RuntimeError).
    try:
        return str(file.resolve(strict=True))
    except (OSError, RuntimeError) as exc:
        if isinstance(exc, RuntimeError) or exc.errno == errno.ELOOP:
            raise problem(f"{file}: a loop of symbolic links") from None
    return os.path.realpath(file)


def _local(value: str, info: Info) -> str:
    """``~`` expanded, then relative to the inventory's folder (it travels with its keys)."""
    path = os.path.expanduser(value)
    if path.startswith("~"):  # left as it is: it names no user
        head = value.partition("/")[0]
        hint = f" (did you mean ~/{value[1:]}?)" if head.startswith("~.") else ""
        raise problem(f"{value}: {head} names no user of this machine{hint}")
    return _resolved(Path(info.context or ".") / path)


LocalPath = Annotated[Text, AfterValidator(_local)]
"""A file on this machine (a key, a known_hosts file): ``~`` expanded, relative to the
inventory's folder, whatever folder the harness is started from."""

FilePath = Annotated[
    Text, AfterValidator(lambda value, info: _resolved(Path(info.context or ".") / value))
]
"""A file relative to the inventory's folder (the model manifest)."""

OPTION_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
RUNTIME_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}\Z")
"""A runtime's name: a version (``1.6.0``, ``2.3.2+dev``) or a word (``stable``)."""
MAX_DEPTH = 4
MAX_RUNTIMES = 16
_KEY = re.compile(r"[^\x00-\x1f\x7f]{1,128}\Z")


def _plain(value: Any, depth: int = 2) -> Any:
    """A value as a job's JSON carries it: YAML 1.1's booleans as booleans, its numbers when
    they are plain decimals and as written when not (``0_1_2``, ``022``, ``1:30``: an adapter's
    option is text there, a core mask)."""
    if depth > MAX_DEPTH:
        raise expected(f"a value at most {MAX_DEPTH} levels deep")
    if isinstance(value, dict):
        for key in value:
            if not _KEY.match(key):
                raise expected("a key", at=(key, "[key]"))
        return {key: _below(key, item, depth) for key, item in value.items()}
    if isinstance(value, list):
        return [_below(index, item, depth) for index, item in enumerate(value)]
    if isinstance(value, str):
        return checked_text(value)
    if isinstance(value, Written) and value.tag.endswith(":bool"):
        return value.text.lower() in ("true", "yes", "on", "y")  # YAML 1.1's spellings
    if isinstance(value, Written):
        try:
            return (
                plain_integer(value.text)
                if value.tag.endswith(":int")
                else plain_number(value.text)
            )
        except ValueError:
            return value.text
    raise expected("text, a number, a boolean, a list or a mapping")


def _below(step: str | int, value: Any, depth: int) -> Any:
    """``value`` one level down; its error placed at ``step``."""
    try:
        return _plain(value, depth + 1)
    except PydanticCustomError as exc:
        context = exc.context or {}
        at = (step, *context.get("at", ()))
        raise PydanticCustomError(exc.type, exc.message_template, {**context, "at": at}) from None


OptionName = Annotated[str, matching(OPTION_KEY_RE, "an option name (letters, digits, _)")]
Options = dict[OptionName, Annotated[Any, PlainValidator(_plain)]]
"""Option names (identifiers) to plain values."""
RuntimeName = Annotated[str, matching(RUNTIME_NAME_RE, "a runtime name ([A-Za-z0-9._+-])")]
Runtimes = Annotated[
    dict[RuntimeName, Annotated[Options, BeforeValidator(lambda v: {} if v is None else v)]],
    Field(max_length=MAX_RUNTIMES, description="a mapping of runtime names to adapter options"),
]
"""Runtime name → the adapter options that select it (``stable:`` with none: the board's)."""
