"""The one sanitiser every report writer uses: valid UTF-8, valid XML 1.0, nothing hidden."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_hil.harness.report.sanitize import REPLACEMENT, clean_json, clean_text, clean_value

# What must never reach a report file raw: surrogates, U+FFFE/U+FFFF, C0 but tab and newline,
# DEL and C1, the bidi embedding/override/isolate controls.
FORBIDDEN = re.compile(
    "[\ud800-\udfff\ufffe\uffff\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)
# Every code point, lone surrogates included (hypothesis leaves them out unless asked).
ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()))


def test_each_kind_is_replaced_or_made_visible() -> None:
    assert clean_text("a\udc80b") == f"a{REPLACEMENT}b"
    assert clean_text("\ud83d") == REPLACEMENT  # half of a pair
    assert clean_text("nul\x00") == "nul\\x00"
    assert clean_text("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m"
    assert clean_text("x\u202ey\u2066z\u2069") == "x\\u202ey\\u2066z\\u2069"
    assert clean_text("del\x7f nel\x85") == "del\\x7f nel\\x85"
    assert clean_text("\ufffe\uffff\U0010ffff") == REPLACEMENT * 3
    assert clean_text("a\r\nb\rc") == "a\nb\\x0dc"


def test_ordinary_text_is_untouched() -> None:
    text = "AssertionError: expected 60,\tgot 44\n  at offset 3 — Ünïcode 日本 😀 עברית"
    assert clean_text(text) == text


def test_clean_value_walks_keys_lists_and_odd_types() -> None:
    from pathlib import PurePosixPath

    value = {"k\x1b": ["\udc80", 3, None, True, (1.5, "\u202e")], "p": PurePosixPath("/a\x00")}
    assert clean_value(value) == {
        "k\\x1b": [REPLACEMENT, 3, None, True, [1.5, "\\u202e"]],
        "p": "/a\\x00",
    }


@pytest.mark.slow
@given(ANY_TEXT)
def test_any_text_becomes_utf8_xml_and_json_safe(text: str) -> None:
    cleaned = clean_text(text)
    assert FORBIDDEN.search(cleaned) is None
    assert clean_text(cleaned) == cleaned  # idempotent: a rebuilt report does not drift
    cleaned.encode("utf-8")  # strict: no surrogate left
    element = ET.Element("failure", message=cleaned)
    element.text = cleaned
    parsed = ET.fromstring(ET.tostring(element, encoding="utf-8"))
    assert (parsed.text or "") == cleaned
    assert parsed.get("message", "").replace("\t", " ").replace("\n", " ") == cleaned.replace(
        "\t", " "
    ).replace("\n", " ")
    assert json.loads(json.dumps(cleaned, ensure_ascii=False).encode("utf-8")) == cleaned


_JSON_TEXT = st.text(alphabet=st.characters() | st.sampled_from(list("\\\x7f\r\t\n\u202e\udc80")))
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _JSON_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_JSON_TEXT, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=_JSON_VALUES)
def test_clean_json_is_the_json_of_the_cleaned_value(value: object) -> None:
    # The shortcut (no walk when the text needs none) never changes what is written.
    expected = json.dumps(clean_value(value), sort_keys=True, ensure_ascii=False)
    assert clean_json(value, sort_keys=True) == expected
    expected.encode("utf-8")  # never a lone surrogate


def test_clean_json_takes_what_only_the_walk_can_write() -> None:
    assert clean_json({"p": Path("/a\x1b")}) == '{"p": "/a\\\\x1b"}'
