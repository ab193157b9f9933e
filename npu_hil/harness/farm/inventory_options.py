"""A board's ``adapter_options`` and ``runtimes`` in the inventory: free-form values for the
board's runtime adapter, checked at their positions like every other entry.

``adapter_options`` go to every job of the board (``library: /opt/rknpu2/librknnrt.so``,
``core_mask: 0_1_2``, ``abi: s100``...; each adapter documents its own and ignores the rest).
``runtimes`` names the runtime versions installed side by side on the board, each as the
options that select it (``{"1.6.0": {library: /opt/rknpu2-1.6.0/librknnrt.so}}``); a run with
``--runtime NAME`` uses the board's ``adapter_options`` overlaid with that entry, and the
nightly's ``--runtime-matrix`` runs the suite once per name (:mod:`npu_hil.harness.report.matrix`).
A simulated board takes the ``sim`` adapter's options there, e.g. ``runtime_versions``: the
versions its simulated runtime reports, held to the vendor's compatibility table like a real
board's.

Values are plain data: text, integers, decimals, booleans, lists and mappings of them (what a
job's JSON carries), at most :data:`MAX_DEPTH` deep.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PlainValidator
from pydantic_core import PydanticCustomError

from npu_hil.harness.farm.inventory_reader import expected
from npu_hil.harness.farm.inventory_types import checked_text, matching
from npu_hil.harness.yaml_reader import Written, plain_integer, plain_number

__all__ = ["OPTION_KEY_RE", "RUNTIME_NAME_RE", "Options", "Runtimes"]

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
