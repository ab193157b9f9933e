"""Secrets never belong in an inventory: a key or a password anywhere in the file is refused,
before a field is read, and the message never repeats the secret.

The keys a field may not have (``password``, ``key``, ``api_token``) are refused by the reader
as it reads each mapping (:func:`npu_hil.harness.farm.inventory_reader.secret_use`); this module
walks the whole file for key material or a password in any value, tag keys and ``!!binary``
included, and looks into a file that is not even YAML. A ``password_env`` whose value cannot
be a variable's name (``123456``, ``true``, ``S3cret!``) is refused here too, its value never
shown: it is likely the password itself.
"""

from __future__ import annotations

import base64
import binascii
import re

from npu_hil.harness.farm.inventory_reader import (
    InventoryError,
    MappingNode,
    Node,
    NodeReader,
    ScalarNode,
    SequenceNode,
    secret_use,
    shown,
)
from npu_hil.harness.redact import find_secret

__all__ = ["refuse_secret_text", "refuse_secrets"]

_BINARY = "tag:yaml.org,2002:binary"
_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_KINDS = {
    "tag:yaml.org,2002:int": "a number",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:bool": "a boolean",
}


def _not_a_variable(node: Node) -> str | None:
    """What a ``password_env`` value is when it cannot name an environment variable (said
    without the value), or None. Lists, mappings and nothing are left to the field's reader:
    its message shows no value for them."""
    if not isinstance(node, ScalarNode) or node.tag == _NULL or node.value == "":
        return None
    if node.tag != _STR:
        return _KINDS.get(node.tag, "a tagged value")
    return None if _VARIABLE.match(str(node.value)) else "a value that is not one"


def _texts(node: Node) -> list[str]:
    """A scalar's text as written, and for ``!!binary`` also the decoded bytes as text: a key
    base64-encoded under a tag is still a key."""
    value = str(node.value)
    texts = [value]
    if node.tag == _BINARY:
        try:
            decoded = base64.b64decode("".join(value.split()), validate=True)
        except (binascii.Error, ValueError):
            return texts
        texts.append(decoded.decode("utf-8", "replace"))
    return texts


def refuse_secrets(r: NodeReader, root: Node) -> None:
    """Refuse key material or a password anywhere in the file (any field, tag keys included),
    before a field is read: a key pasted into ``key_file:`` would otherwise be taken as a path
    and quoted by the connect error in every report. The message never repeats the secret."""
    advice = "use key_file (the key's path) and password_env (the name of an environment variable)"
    pending: list[tuple[Node, str]] = [(root, "")]
    seen: set[int] = set()
    while pending:
        node, path = pending.pop()
        if id(node) in seen:  # an alias met again
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            for key_node, value_node in node.value:
                names = _texts(key_node) if isinstance(key_node, ScalarNode) else []
                shown_key = shown(names[0], quoted=False) if names else ""
                where = f"{path}.{shown_key}" if path else shown_key
                use = next((u for u in map(secret_use, names) if u is not None), None)
                if use is not None:
                    raise r.error(
                        key_node,
                        where,
                        f"secrets do not belong in the inventory; use {use} instead",
                    )
                kind = _not_a_variable(value_node) if names == ["password_env"] else None
                if kind is not None:
                    raise r.error(
                        value_node,
                        where,
                        f"expected the name of an environment variable, got {kind} (not shown: "
                        "it may be the password itself; put the password in a variable and "
                        "name the variable here)",
                    )
                pending.append((key_node, where))
                pending.append((value_node, where))
        elif isinstance(node, SequenceNode):
            pending.extend((item, f"{path}[{i}]") for i, item in enumerate(node.value))
        elif isinstance(node, ScalarNode) and isinstance(node.value, str):
            what = next(filter(None, map(find_secret, _texts(node))), None)
            if what is not None:
                raise r.error(
                    node,
                    path or "(top)",
                    f"holds {what}; secrets do not belong in the inventory: {advice}",
                )


def refuse_secret_text(source: str, text: str) -> None:
    """A file that is not even YAML may still hold a pasted key: say that rather than where the
    YAML broke (the user's next step is removing the key, not fixing the indentation)."""
    for index, line in enumerate(text.splitlines()):
        what = find_secret(line)
        if what is not None:
            raise InventoryError(
                f"{source}:{index + 1}:1: holds {what}; secrets do not belong in the inventory: "
                "use key_file (the key's path) and password_env (the name of an environment "
                "variable)"
            )
    if find_secret(text) is not None:
        raise InventoryError(f"{source}:1:1: holds key material; secrets do not belong there")
