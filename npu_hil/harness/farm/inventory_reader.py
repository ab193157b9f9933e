"""A YAML document checked by a pydantic model, each error put back at its node:
``file:line:column: key.path: what was expected, what came`` (pydantic's ``loc`` walked back down
the composed nodes; a "did you mean", a missing field's ``description``, what came, escaped).
Secrets never belong in an inventory: a key or a password anywhere in the file (a key that names a
secret, key material in any value, ``!!binary`` decoded, a ``password_env`` that is no variable's
name) is refused before a field is read, and the message never repeats the secret.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import json
import re
from collections.abc import Callable
from typing import Any, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic_core import ErrorDetails, PydanticCustomError

from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.redact import find_secret, secret_key_name
from npu_hil.harness.yaml_reader import (
    MappingNode,
    Node,
    ScalarNode,
    SequenceNode,
    YamlProblem,
    plain_data,
)

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)

KIND = "kind"
"""The key whose value says which model a mapping is (a transport's kind)."""
TYPED = {
    "tag:yaml.org,2002:bool": "a boolean",
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a number",
}
"""What YAML 1.1 makes of a scalar that may have been meant as text (``yes``, ``022``)."""
_WHAT = {
    **dict.fromkeys(("string_type", "string_too_short"), "a non-empty string"),
    **dict.fromkeys(("list_type", "tuple_type"), "a list"),
    **dict.fromkeys(("dict_type", "model_type", "model_attributes_type"), "a mapping"),
    "string_unicode": "printable text",
}


class InventoryError(NpuHilError):
    """An inventory that cannot be used: the message is ``file:line:column: key.path: ...``."""


def expected(
    what: str, *, why: str = "", choices: tuple[str, ...] = (), at: Loc = ()
) -> PydanticCustomError:
    """A validator's "expected ``what``, got <the node>[: ``why``]", suggesting a close one of
    ``choices``; ``at`` is a path below the value checked."""
    context = {"what": what, "why": why, "choices": choices, "at": at}
    return PydanticCustomError("expected", "expected {what}", context)


def problem(message: str, *, at: Loc = ()) -> PydanticCustomError:
    """A validator's error said in full (the value is not shown: it may be a secret)."""
    return PydanticCustomError("problem", "{message}", {"message": message, "at": at})


class Entry(BaseModel):
    """A mapping of the file: an unknown key is refused, and so is a key with nothing after it
    (``key_file: ~`` is no home folder), not taken as the default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _no_nulls(cls, data: Any) -> Any:
        for key, value in data.items() if isinstance(data, dict) else ():
            if value is None and key in cls.model_fields:
                raise expected("a value", at=(key,))
        return data


def shown(value: str, *, quoted: bool = True, limit: int = 60) -> str:
    """``value`` for an error message: JSON-escaped (no control character, no lone surrogate
    reaches a report) and cut to about ``limit`` characters."""
    text = json.dumps(value[:limit])
    text = text if quoted else text[1:-1]
    if len(value) > limit:
        text += f"... ({len(value)} characters)"
    return text


def describe(node: Node) -> str:
    """What came, shown short and escaped (the message goes to records and reports)."""
    if isinstance(node, (MappingNode, SequenceNode)):
        return "a mapping" if isinstance(node, MappingNode) else "a list"
    if node.tag == "tag:yaml.org,2002:null":
        return "nothing (null)"
    value = str(node.value)
    return shown(value, quoted=node.tag == "tag:yaml.org,2002:str" or not value)


def dotted(path: Loc) -> str:
    """``boards[4].transport.port`` (a key as written, escaped only where it is not printable)."""
    text = "".join(
        f"[{s}]" if isinstance(s, int) else f".{s if s.isprintable() else shown(s, quoted=False)}"
        for s in path
    )
    return text[1:] if text.startswith(".") else text


class Located:
    """The document's nodes, to say where a path of keys and indices is."""

    def __init__(self, source: str, root: Node) -> None:
        self.source = source
        self.root = root

    def find(self, loc: Loc) -> tuple[Loc, Node, Node | None]:
        """The path, node and key node (None for a list's item) pydantic's ``loc`` names. Steps
        the document has not (a missing key, a union's tag, a list a validator made of a
        scalar) are passed over; ``[key]`` is the key itself, at its mapping's path."""
        node, key_node, path = self.root, None, []
        for step in loc:
            if step == "[key]" and key_node is not None:
                return tuple(path[:-1]), key_node, key_node
            if isinstance(node, MappingNode) and isinstance(step, str):
                pair = next(((k, v) for k, v in node.value if str(k.value) == step), None)
            elif isinstance(node, SequenceNode) and isinstance(step, int):
                pair = (None, node.value[step]) if 0 <= step < len(node.value) else None
            else:
                pair = None
            if pair is not None:
                key_node, node = pair
                path.append(step)
        return tuple(path), node, key_node

    def where(self, loc: Loc, *, path: bool = True) -> str:
        """``file:line:column: key.path`` of ``loc`` (``file:line:column`` without ``path``)."""
        steps, node, _ = self.find(loc)
        return self._at(steps if path else (), node)

    def _at(self, steps: Loc, node: Node) -> str:
        mark = node.start_mark
        where = f"{self.source}:{mark.line + 1}:{mark.column + 1}"
        return f"{where}: {dotted(steps)}" if steps else where

    def explain(self, exc: ValidationError, model: type[BaseModel]) -> InventoryError:
        """The first of pydantic's errors in the file's words: an unknown key before any other
        (a typo'd key explains a missing one), then the first in the file."""
        found = []
        for error in exc.errors(include_url=False):
            kind, ctx = error["type"], error.get("ctx") or {}
            loc, text = _explained(error, model)
            steps, node, key_node = self.find(loc)
            if kind == "extra_forbidden":  # at the key (and its path)
                node = key_node or node
            elif kind not in ("problem", "missing"):
                text = f"{text}, got {describe(node)}{_hint(kind, ctx, node)}"
            rank = (kind != "extra_forbidden", node.start_mark.line, node.start_mark.column)
            found.append((rank, f"{self._at(steps, node)}: {text}"))
        return InventoryError(min(found)[1])


def _explained(error: ErrorDetails, model: type[BaseModel]) -> tuple[Loc, str]:
    """Where one of pydantic's errors is, and what it says: in full for a missing field, an
    unknown key and a validator's problem; else what was expected (what came is added)."""
    kind, ctx = error["type"], error.get("ctx") or {}
    loc: Loc = (*error["loc"], *ctx.get("at", ()))
    if kind in ("problem", "expected"):
        return loc, ctx["message"] if kind == "problem" else f"expected {ctx['what']}"
    owner, field = _field(model, loc)
    described = field.description if field is not None else None
    if kind == "missing":
        return loc, f"expected {described or f'a {loc[-1]}'}"
    if kind == "extra_forbidden":
        known = tuple(owner.model_fields) if owner else ()
        close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return loc, f"unknown key (expected one of {', '.join(known)}){hint}"
    if kind == "literal_error":
        return loc, f"expected one of {', '.join(_choices(ctx))}"
    if kind in ("string_too_long", "too_long"):
        unit = "characters" if kind == "string_too_long" else "entries"
        return loc, f"expected at most {ctx['max_length']} {unit}"
    what = _WHAT.get(kind)
    if what in ("a list", "a mapping"):
        what = described or what
    return loc, f"expected {what}" if what else error["msg"]


def _choices(ctx: dict[str, Any]) -> tuple[str, ...]:
    """A literal's choices, as pydantic writes them (``'hw' or 'sim'``)."""
    return tuple(re.findall(r"'([^']*)'", str(ctx.get("expected"))))


def _hint(kind: str, ctx: dict[str, Any], node: Node) -> str:
    """A close choice for a value that is none of them; a note for YAML 1.1's typing of what
    looks like text; why a value is no plain number."""
    choices = ctx.get("choices") or (_choices(ctx) if kind == "literal_error" else ())
    if choices and isinstance(node, ScalarNode):
        close = difflib.get_close_matches(str(node.value), choices, n=1, cutoff=0.6)
        if close:
            return f" (did you mean {close[0]!r}?)"
    if kind == "string_type" and node.tag in TYPED and node.value:
        return f" (YAML reads it as {TYPED[node.tag]}: quote it)"
    return f": {ctx['why']}" if ctx.get("why") else ""


def _models(kind: Any) -> list[type[BaseModel]]:
    """The models a field's type holds, through Annotated, unions, lists and mappings."""
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return [kind]
    return [model for arg in get_args(kind) for model in _models(arg)]


def _field(model: type[BaseModel], loc: Loc) -> tuple[type[BaseModel] | None, Any]:
    """The model whose key the last step of ``loc`` is, and its field of that name (pydantic's
    errors name neither). A step that is no field is a list's index, a mapping's key or a
    union's tag (the ``kind`` that picks the model)."""
    kind: Any = model
    for step in loc[:-1]:
        for candidate in _models(kind):
            tag = candidate.model_fields.get(KIND)
            if tag is not None and step in get_args(tag.annotation):
                kind = candidate
                break
            if step in candidate.model_fields:
                kind = candidate.model_fields[step].annotation
                break
    owners = _models(kind)
    owner = next((m for m in owners if loc and loc[-1] in m.model_fields), None)
    owner = owner or (owners[0] if owners else None)
    return owner, owner.model_fields.get(str(loc[-1])) if owner and loc else None


def validate(
    model: type[M], root: Node, source: str, *, context: Any = None, **plain: Any
) -> tuple[M, Located]:
    """The document under ``root`` as ``model`` (``context`` reaches its validators, ``plain``
    goes to :func:`~npu_hil.harness.yaml_reader.plain_data`), and its nodes."""
    located = Located(source, root)
    try:
        return model.model_validate(plain_data(root, **plain), context=context), located
    except YamlProblem as exc:
        path = f" {dotted(exc.path)}:" if exc.path else ""
        raise InventoryError(f"{source}:{exc.line}:{exc.column}:{path} {exc.message}") from None
    except ValidationError as exc:
        raise located.explain(exc, model) from None


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


def secret_check(source: str) -> Callable[[Node, Loc, bool], None]:
    """The check of one node (a key, or a value, at its path) for what must not be there: a key
    pasted into ``key_file:`` would otherwise be taken as a path and quoted by the connect
    error in every report."""

    def check(node: Node, path: Loc, key: bool) -> None:
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
