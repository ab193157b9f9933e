"""The one bounded reader of JSON files (``npu_hil.harness.files.read_json``): whatever a file
holds, the answer is the document or an InputFileError naming the path, never another exception,
a hang or a stack overflow."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_hil.harness.board.wire import nested_deeper
from npu_hil.harness.files import (
    MAX_JSON_DEPTH,
    InputFileError,
    json_document,
    read_json,
)

DOCUMENTS = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(DOCUMENTS)
def test_what_json_writes_reads_back(document: object) -> None:
    assert json_document(json.dumps(document), "doc") == document


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=200) | st.text(alphabet='[]{}":,0123456789eE.-+NaIfinty \\u', max_size=200)
)
def test_any_bytes_are_a_document_or_a_typed_refusal(data: bytes | str) -> None:
    try:
        json_document(data, "fuzz")
    except InputFileError as exc:
        assert str(exc).startswith("fuzz: expected")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[" * 100_000 + "]" * 100_000, f"nested at most {MAX_JSON_DEPTH} levels"),
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), "nested at most"),
        ('{"x": NaN}', "non-finite number (NaN)"),
        ('{"x": -Infinity}', "non-finite number (-Infinity)"),
        ('{"x": 1e400}', "too large for a float"),
        # among many ordinary floats, and written without an exponent
        ('{"a": [' + "0.5, " * 5000 + "1.5E+308, 2E308]}", "too large for a float"),
        ('{"x": ' + "9" * 400 + ".0}", "too large for a float"),
        ('{"x": 1', "expected JSON, got Expecting"),
    ],
)
def test_damage_is_named(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "doc.json"
    path.write_text(text)
    with pytest.raises(InputFileError, match=rf"^{path}: expected") as caught:
        read_json(path, "a document")
    assert says in str(caught.value)
    assert "\n" not in str(caught.value)


def test_as_deep_as_allowed_reads(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)
    assert read_json(path, "a document") is not None


def test_a_fifo_a_device_and_a_huge_file_are_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(InputFileError, match="a FIFO"):
        read_json(fifo, "a document")
    with pytest.raises(InputFileError, match="a character device"):
        read_json("/dev/zero", "a document")
    sparse = tmp_path / "sparse.json"
    with open(sparse, "wb") as handle:
        handle.truncate(1 << 40)
    with pytest.raises(InputFileError, match="at most 1024 bytes"):
        read_json(sparse, "a document", limit=1024)


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(DOCUMENTS, st.integers(min_value=0, max_value=8))
def test_the_depth_check_agrees_with_a_recursive_count(document: object, limit: int) -> None:
    # The check walks a level at a time; a plain recursive count of the same document decides.
    assert nested_deeper(document, limit) == (_depth(document) > limit)
