"""Extract the KL730 byte diagrams of seeds/000 into the golden fixture the codec tests use.

The seed draws every format as a "Bits [127:120] ... [7:0]" header (or eight 16-bit lanes
"[127:112] ... [15:0]") followed by "Entry #k tok tok ..." rows, the first token of a row being the
highest bit range. Formats appear under "Input Data Layout" and, if they are also output formats,
again under "Output Data Layout"; the two drawings must agree, and the fixture lists both sections.

Output: ``{format: {"sections": [...], "lanes": [bit ranges, high first],
"entries": [[tokens of entry 0, high first], ...], "example_shape": [B, C, H, W] or null}}``.

Usage::

    python tests/codec/golden/extract_kl730_seed.py ../shared/seeds/000_c8f60e1c54f092ef.txt \
        > tests/codec/golden/kl730_seed_entries.json
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

SECTIONS = {"Input Data Layout": "input", "Output Data Layout": "output"}
HEADER = re.compile(r"^(?P<name>[0-9A-Z][0-9A-Z_]*[0-9A-Z])\s.*Feature Map Format")
BITS = re.compile(r"Bits\s+((?:\[\d+:\d+\]\s*)+)")
ENTRY = re.compile(r"Entry\s+#(\d+)")
CELL = re.compile(r"^(?:P\d+CH\d+(?:G\d+)?[LH]?|0)$")
EXAMPLE = re.compile(r"shape\s+(\d+(?:x\d+)+)\s*\(BxCxHxW\)")


class SeedFormatError(ValueError):
    """The seed text does not have the shape this extractor expects."""


def _blocks(text: str) -> list[tuple[str, str, str]]:
    """(section, format name, the text up to the next format or section) in seed order."""
    blocks: list[tuple[str, str, str]] = []
    section: str | None = None
    current: tuple[str, str, list[str]] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped in SECTIONS:
            if current:
                blocks.append((current[0], current[1], "\n".join(current[2])))
                current = None
            section = SECTIONS[stripped]
            continue
        match = HEADER.match(stripped)
        if match:
            if current:
                blocks.append((current[0], current[1], "\n".join(current[2])))
            if section is None:
                raise SeedFormatError(f"format {match['name']} before any section heading")
            current = (section, match["name"], [stripped])
        elif current:
            current[2].append(stripped)
    if current:
        blocks.append((current[0], current[1], "\n".join(current[2])))
    return blocks


def _diagram(name: str, body: str) -> dict[str, Any]:
    bits = BITS.search(body)
    if not bits:
        raise SeedFormatError(f"{name}: no 'Bits [...]' header")
    lanes = re.findall(r"\[\d+:\d+\]", bits.group(1))
    rest = body[bits.end() :]
    pieces = ENTRY.split(rest)  # ['', '0', 'tokens', '1', 'tokens', ...]
    entries: list[list[str]] = []
    for number, tokens_text in zip(pieces[1::2], pieces[2::2], strict=True):
        if int(number) != len(entries):
            raise SeedFormatError(f"{name}: entry #{number} out of order")
        tokens = []
        for token in tokens_text.split():
            if not CELL.match(token):
                break  # the "-" separators and headings that follow the last entry
            tokens.append(token)
        if len(tokens) != len(lanes):
            raise SeedFormatError(
                f"{name}: entry #{number} has {len(tokens)} cells for {len(lanes)} lanes"
            )
        entries.append(tokens)
    if not entries:
        raise SeedFormatError(f"{name}: no entries")
    example = EXAMPLE.search(body)
    return {
        "lanes": lanes,
        "entries": entries,
        "example_shape": [int(v) for v in example.group(1).split("x")] if example else None,
    }


def extract(text: str) -> dict[str, dict[str, Any]]:
    """The fixture for the seed text (see the module docstring)."""
    out: dict[str, dict[str, Any]] = {}
    for section, name, body in _blocks(text):
        diagram = _diagram(name, body)
        if name not in out:
            out[name] = {"sections": [section], **diagram}
            continue
        known = out[name]
        if section in known["sections"]:
            raise SeedFormatError(f"{name} drawn twice under {section}")
        if any(known[key] != diagram[key] for key in ("lanes", "entries")):
            raise SeedFormatError(f"{name}: the {section} diagram differs from the earlier one")
        known["sections"].append(section)
    return out


def render(data: dict[str, dict[str, Any]]) -> str:
    """JSON with one entry of the diagram a line, so the fixture reads like the seed."""
    formats = []
    for name, info in data.items():
        entries = ",\n".join(f"      {json.dumps(row)}" for row in info["entries"])
        formats.append(
            f"  {json.dumps(name)}: {{\n"
            f'    "sections": {json.dumps(info["sections"])},\n'
            f'    "example_shape": {json.dumps(info["example_shape"])},\n'
            f'    "lanes": {json.dumps(info["lanes"])},\n'
            f'    "entries": [\n{entries}\n    ]\n'
            "  }"
        )
    return "{\n" + ",\n".join(formats) + "\n}\n"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} SEED_000_TEXT", file=sys.stderr)
        return 2
    sys.stdout.write(render(extract(Path(argv[1]).read_text(encoding="utf-8"))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
