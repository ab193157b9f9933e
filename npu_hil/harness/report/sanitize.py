"""Text made safe for every report file (records.jsonl, summary.json, comparison.json, junit.xml,
report.html): what becomes what is in docs/farm/nightly.md. A lone surrogate (bytes decoded with
``surrogateescape``) once lost the page (UTF-8 cannot encode it) and made a JUnit file no parser
accepts; the escapes are plain ASCII, so a character stays visible and apart from its text."""

from __future__ import annotations

import json
import re
from typing import Any

REPLACEMENT = "\ufffd"

# Surrogates and noncharacters (U+FDD0-U+FDEF, and the last two code points of every plane).
_INVALID = re.compile(
    "[\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff"
    + "".join(f"{chr(p * 0x10000 + 0xFFFE)}{chr(p * 0x10000 + 0xFFFF)}" for p in range(1, 17))
    + "]"
)
# C0 controls but tab and newline, DEL, C1 controls, and the bidi embedding/override/isolates.
_NEUTRALISE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean_text(text: str) -> str:
    """``text`` with invalid code points replaced and control/bidi characters made visible."""
    if text.isascii() and text.isprintable():
        return text  # the common case: nothing to do
    text = _INVALID.sub(REPLACEMENT, text.replace("\r\n", "\n"))
    return _NEUTRALISE.sub(_visible, text)


def clean_value(value: Any) -> Any:
    """``value`` with :func:`clean_text` applied to every string in it, mapping keys included
    (JSON-shaped data: dicts, lists, tuples, scalars; anything else becomes its cleaned text)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_value(key): clean_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_value(item) for item in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return clean_text(str(value))  # a Path or the like: its text, as json's default=str has it


def clean_json(value: Any, **dumps_options: Any) -> str:
    """``json.dumps(clean_value(value), **dumps_options)``, without the walk when it changes
    nothing: the JSON text of ``value`` is made first, and walked again only when that text
    holds something :func:`clean_text` might change (a character beyond ASCII, DEL, or an
    escape json made: a control character, a surrogate, or a backslash, which merely costs the
    walk). At 12,000 cases the walk of the history's measurements was 1.4 s of a run's end."""
    options = {**dumps_options, "ensure_ascii": False}
    try:
        text = json.dumps(value, **options)
    except TypeError:  # a Path or the like, which clean_value turns into its text
        return json.dumps(clean_value(value), **options)
    if text.isascii() and "\\" not in text and "\x7f" not in text:
        return text
    return json.dumps(clean_value(value), **options)
