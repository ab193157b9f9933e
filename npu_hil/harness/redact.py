"""Key material and passwords, found and removed from text: one definition of what a secret looks
like (docs/farm/inventory.md, "No secrets in the file"), for the inventory's refusals and for
:func:`scrub`, which every error text reaching a record, a report or a log passes through.
Every pattern is linear in the text: ``tests/report/test_scrub_bounds.py`` holds each to it.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "find_secret", "scrub", "secret_key_name"]

REDACTED = "[secret removed]"

_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]*-----.*?(?:-----END [A-Z0-9 ]*-----|\Z)", re.DOTALL)
_PUTTY = re.compile(r"PuTTY-User-Key-File-\d+:.*", re.DOTALL)
# "openssh-key-v1" in base64, then the key's body.
_OPENSSH_BODY = re.compile(r"b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/=\s]*")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{64,}={0,2}")
# The scheme is bounded (real ones are short): unbounded, every letter of a long run starts a
# match attempt that scans the rest of the run, quadratic in its length (100,000 letters: 20 s).
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s:/@]*:)(?P<pw>[^\s@/]+)@")
# ``password=hunter2``, ``token:abc``, ``"api_key": "abc"``: the value, to the next space, quote,
# comma or semicolon. The name must end where a word ends (``passwords=3`` is a count).
_SETTING = re.compile(
    r"(?i)(?<![A-Za-z0-9])(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|access[_-]?key"
    r"|private[_-]?key|auth)[\"']?"
    # name=value (spaces around = allowed), name:value, or name: "value" (JSON, YAML): never
    # name: words, which is prose ("password: secrets do not belong in the inventory")
    r"(?:\s{0,3}=\s{0,3}[\"']?|:[\"']?|:\s{1,3}[\"'])(?!\[secret removed\])"
    r"(?P<value>[^\s\"',;]{1,512})"
)
_SECRET_KEY = re.compile(
    r"(?i)(?:\A|[_.-])(pass(word|wd|phrase)?|secret|token|private[_-]?key|api[_-]?key"
    r"|credentials?)\Z"
)


_UPPER, _LOWER, _DIGIT = re.compile("[A-Z]"), re.compile("[a-z]"), re.compile("[0-9]")


def _looks_encoded(run: str) -> bool:
    """Encoded key bytes: upper and lower case and digits, few slashes (unlike a path)."""
    return (
        _UPPER.search(run) is not None
        and _LOWER.search(run) is not None
        and _DIGIT.search(run) is not None
        and run.count("/") * 16 <= len(run)
    )


# What every secret above holds: a text of none of these, and shorter than a base64 run,
# holds no secret. Most texts a record carries (names, numbers, short messages) are such, and
# one search costs a fraction of six regular-expression scans.
_SETTING_NAMES = r"(?i:pass(?:word|wd|phrase)?|pwd|secret|token|key|auth)[\"']?\s{0,3}[=:]"
_MARKERS = re.compile(r"://|-----BEGIN |PuTTY-User-Key-File-|b3BlbnNzaC1rZXktdjE|" + _SETTING_NAMES)
_SETTING_NAME = re.compile(_SETTING_NAMES)
_SHORTEST_RUN = 64


def _may_hold_secret(text: str) -> bool:
    return len(text) >= _SHORTEST_RUN or _MARKERS.search(text) is not None


# A long text (a board's log, a dumped buffer) is first looked at as bytes, where a table
# lookup and a substring search run at memory speed: a text with no 64 base64 characters in a
# row holds no base64 run, one without a setting's name stem holds no setting, and then those
# two patterns (a case-blind alternation tried at every position: a few MB/s) are not run.
_BASE64_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_RUN_TABLE = bytes(0x41 if i in _BASE64_BYTES else 0x20 for i in range(256))
_RUN_MARK = b"A" * _SHORTEST_RUN
_NAME_STEMS = (b"pass", b"pwd", b"secret", b"token", b"key", b"auth")  # every _SETTING name


def _long_text_may_hold(text: str) -> tuple[bool, bool]:
    """Whether a long ``text`` may hold a base64 run, and a setting."""
    raw = text.encode("utf-8", "surrogatepass")
    run = _RUN_MARK in raw.translate(_RUN_TABLE)
    if b"=" not in raw and b":" not in raw:
        return run, False
    low = raw.lower()
    return run, any(stem in low for stem in _NAME_STEMS)


def _spans(text: str) -> list[tuple[int, int, str]]:
    if not _may_hold_secret(text):
        return []
    # Each pattern only where its fixed part is in the text: a substring search runs at memory
    # speed, a pattern tried at every position of 10 MB does not (ten times slower).
    found: list[tuple[int, int, str]] = []
    if "-----BEGIN " in text:
        found += [(m.start(), m.end(), "key material") for m in _PEM.finditer(text)]
    if "PuTTY-User-Key-File-" in text:
        found += [(m.start(), m.end(), "key material") for m in _PUTTY.finditer(text)]
    if "b3BlbnNzaC1rZXktdjE" in text:
        found += [(m.start(), m.end(), "key material") for m in _OPENSSH_BODY.finditer(text)]
    long_text = len(text) >= _SHORTEST_RUN
    may_run, may_set = _long_text_may_hold(text) if long_text else (False, True)
    if may_run:
        found += [
            (m.start(), m.end(), "key material")
            for m in _BASE64_RUN.finditer(text)
            if _looks_encoded(m.group())
        ]
    if "://" in text:
        found += [(m.start("pw"), m.end("pw"), "a password") for m in _URL_PASSWORD.finditer(text)]
    if may_set and (long_text or _SETTING_NAME.search(text) is not None):
        found += [(m.start("value"), m.end("value"), "a password") for m in _SETTING.finditer(text)]
    return sorted(found)


def find_secret(text: str) -> str | None:
    """What secret ``text`` holds ("key material", "a password"), or None."""
    spans = _spans(text)
    return spans[0][2] if spans else None


def scrub(text: str) -> str:
    """``text`` with every secret it holds replaced by :data:`REDACTED`."""
    spans = _spans(text)
    if not spans:
        return text
    out: list[str] = []
    position = 0
    for start, end, _ in spans:
        if end <= position:
            continue  # inside a span already removed
        out.append(text[position : max(start, position)])
        out.append(REDACTED)
        position = end
    out.append(text[position:])
    return "".join(out)


def secret_key_name(key: str) -> bool:
    """A mapping key that names a secret (``password``, ``token``, ``private_key``...)."""
    return bool(_SECRET_KEY.search(key))
