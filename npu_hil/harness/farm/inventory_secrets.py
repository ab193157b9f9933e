"""Secrets never belong in an inventory: a key or a password anywhere in the file (a key that
names a secret, key material in any value, ``!!binary`` decoded, a ``password_env`` that is no
variable's name) is refused before a field is read, and the message never repeats the secret.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable

from npu_hil.harness.farm.inventory_reader import TYPED, InventoryError, dotted
from npu_hil.harness.redact import find_secret, secret_key_name
from npu_hil.harness.yaml_reader import Node, ScalarNode

SECRETS = {"password": "password_env (the name of an environment variable)", "key": "key_file"}
ADVICE = "use key_file (the key's path) and password_env (the name of an environment variable)"
_BINARY = "tag:yaml.org,2002:binary"
_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _not_a_variable(node: Node) -> str | None:
    """What a ``password_env`` value is when it cannot name an environment variable (said
    without the value), or None; wherever the key is (in a field, or in adapter options on
    their way to a job)."""
    if node.tag == _NULL or node.value == "":
        return None
    if node.tag != _STR:
        return TYPED.get(node.tag, "a tagged value")
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


def secret_use(key: str) -> str | None:
    """What to write instead of the secret a key names (``password``, ``Key``, ``api_token``),
    or None when it names none."""
    name = key.strip().lower()
    if name in SECRETS:
        return SECRETS[name]
    return ADVICE[4:] if secret_key_name(name) else None


def secret_check(source: str) -> Callable[[Node, tuple[str | int, ...], bool], None]:
    """The check of one node (a key, or a value, at its path) for what must not be there: a key
    pasted into ``key_file:`` would otherwise be taken as a path and quoted by the connect
    error in every report."""

    def check(node: Node, path: tuple[str | int, ...], key: bool) -> None:
        if not isinstance(node, ScalarNode):
            return
        mark = node.start_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}: {dotted(path) or '(top)'}"
        texts = _texts(node)
        use = next(filter(None, map(secret_use, texts)), None) if key else None
        if use is not None:
            raise InventoryError(
                f"{where}: secrets do not belong in the inventory; use {use} instead"
            )
        kind = _not_a_variable(node) if not key and path[-1:] == ("password_env",) else None
        if kind is not None:
            raise InventoryError(
                f"{where}: expected the name of an environment variable, got {kind} (not shown: "
                "it may be the password itself; put the password in a variable and name the "
                "variable here)"
            )
        what = next(filter(None, map(find_secret, texts)), None)
        if what is not None:
            raise InventoryError(
                f"{where}: holds {what}; secrets do not belong in the inventory: {ADVICE}"
            )

    return check


def refuse_secret_text(source: str, text: str) -> None:
    """A file that is not even YAML may still hold a pasted key: say that rather than where the
    YAML broke (the user's next step is removing the key, not fixing the indentation)."""
    for index, line in enumerate(text.splitlines()):
        what = find_secret(line)
        if what is not None:
            raise InventoryError(
                f"{source}:{index + 1}:1: holds {what}; secrets do not belong in the inventory: "
                f"{ADVICE}"
            )
    if find_secret(text) is not None:
        raise InventoryError(f"{source}:1:1: holds key material; secrets do not belong there")
