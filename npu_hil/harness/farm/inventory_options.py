"""A board's ``adapter_options`` and ``runtimes`` in the inventory: free-form values for the
board's runtime adapter, read at their positions like every other entry.

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
from typing import Any

from npu_hil.harness.farm.inventory_reader import (
    MappingNode,
    Node,
    NodeReader,
    ScalarNode,
    SequenceNode,
)
from npu_hil.harness.yaml_reader import plain_integer, plain_number

__all__ = ["OPTION_KEY_RE", "RUNTIME_NAME_RE", "read_adapter_options", "read_runtimes"]

OPTION_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
RUNTIME_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}\Z")
"""A runtime's name: a version (``1.6.0``, ``2.3.2+dev``) or a word (``stable``)."""
MAX_DEPTH = 4
MAX_RUNTIMES = 16

_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_STR = "tag:yaml.org,2002:str"


def read_adapter_options(r: NodeReader, node: Node, path: str) -> dict[str, Any]:
    """The mapping of option names (identifiers) to plain values."""
    return _keyed(r, node, path, OPTION_KEY_RE, "an option name (letters, digits, _)", 1)


def read_runtimes(r: NodeReader, node: Node, path: str) -> dict[str, dict[str, Any]]:
    """Runtime name → the adapter options that select it (a mapping, possibly empty)."""
    if not isinstance(node, MappingNode):
        raise r.expected(node, path, "a mapping of runtime names to adapter options")
    if len(node.value) > MAX_RUNTIMES:
        raise r.error(node, path, f"expected at most {MAX_RUNTIMES} runtimes")
    out: dict[str, dict[str, Any]] = {}
    for key_node, value_node in node.value:
        name = _key(r, key_node, path, RUNTIME_NAME_RE, "a runtime name ([A-Za-z0-9._+-])")
        where = f"{path}.{name}"
        if name in out:
            raise r.error(key_node, where, "duplicate runtime")
        if isinstance(value_node, ScalarNode) and value_node.tag.endswith(":null"):
            out[name] = {}
            continue
        out[name] = read_adapter_options(r, value_node, where)
    return out


def _keyed(
    r: NodeReader, node: Node, path: str, regex: re.Pattern[str], what: str, depth: int
) -> dict[str, Any]:
    if not isinstance(node, MappingNode):
        raise r.expected(node, path, "a mapping")
    out: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = _key(r, key_node, path, regex, what)
        where = f"{path}.{key}"
        if key in out:
            raise r.error(key_node, where, "duplicate key")
        out[key] = _plain(r, value_node, where, depth + 1)
    return out


def _key(r: NodeReader, node: Node, path: str, regex: re.Pattern[str], what: str) -> str:
    if not isinstance(node, ScalarNode) or not regex.match(str(node.value)):
        raise r.expected(node, path, what)
    return str(node.value)


def _plain(r: NodeReader, node: Node, path: str, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise r.error(node, path, f"expected a value at most {MAX_DEPTH} levels deep")
    if isinstance(node, MappingNode):
        return _keyed(r, node, path, re.compile(r"[^\x00-\x1f\x7f]{1,128}\Z"), "a key", depth)
    if isinstance(node, SequenceNode):
        return [_plain(r, item, f"{path}[{i}]", depth + 1) for i, item in enumerate(node.value)]
    tag, value = node.tag, str(node.value)
    if tag == _STR:
        return r.text(node, path) if value else ""
    if tag == _BOOL:
        return value.lower() in ("true", "yes", "on", "y")  # YAML 1.1's spellings
    if tag in (_INT, _FLOAT):
        # What YAML 1.1 reads as a number but is not a plain decimal (``0_1_2``, ``022``,
        # ``1:30``) is kept as written: an adapter's option is text there (a core mask).
        try:
            return plain_integer(value) if tag == _INT else plain_number(value)
        except ValueError:
            return value
    raise r.expected(node, path, "text, a number, a boolean, a list or a mapping")
