"""Attribute diff: the codec's predictions against what the device's runtime reported, each
disagreement a finding naming the table row behind the prediction (docs/runtime/diff.md); what
differs per vendor (enum prefixes, a documented address rule) comes from its vendor unit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from typing_extensions import TypedDict

from npu_hil.harness.codec.engine import BlockedLayout
from npu_hil.harness.errors import LayoutError
from npu_hil.targets.registry import all_targets, unit_for, units

ALIAS = {
    "aligned_byte_size": "alignedByteSize",
    "alignedbytesize": "alignedByteSize",
    "valid_shape": "validShape",
    "aligned_shape": "alignedShape",
    "native_dims": "dims",
}
"""Spellings of the same attribute across runtimes and bindings → the name the codec uses."""

ADDRESS_KEYS = ("address", "virt_addr", "vir_addr", "virAddr")
FIRST_ADDRESS_ALIGN = 32


class AttributeFindingDocument(TypedDict):
    """:meth:`AttributeFinding.to_dict`: one attribute finding as results and reports hold it."""

    attribute: str
    predicted: object
    reported: object
    agrees: bool
    rule: str
    message: str


@dataclass(frozen=True)
class AttributeFinding:
    """One attribute: what the codec predicted, what the device reported, and why."""

    attribute: str
    predicted: Any
    reported: Any
    agrees: bool
    rule: str
    message: str

    def to_dict(self) -> AttributeFindingDocument:
        return cast(AttributeFindingDocument, dataclasses.asdict(self))


def diff_attributes(
    layout: BlockedLayout, reported: Mapping[str, object]
) -> list[AttributeFinding]:
    """Compare each reported attribute with the codec's prediction for ``layout``.

    ``layout`` should be built from the model's declaration alone (no device-reported params);
    where it was built with them, the prediction recorded beside them is used. A buffer address
    is checked for 32-byte alignment; attributes the codec predicts nothing for are skipped.
    """
    findings = []
    predicted = _predictions(layout)
    for raw_key, value in reported.items():
        if raw_key in ADDRESS_KEYS:
            findings.append(_address(layout, raw_key, value))
            continue
        key = ALIAS.get(raw_key, ALIAS.get(raw_key.lower(), raw_key))
        if key not in predicted:
            continue
        expected, rule = predicted[key]
        agrees = _normalise(expected) == _normalise(value)
        verb = "agrees with" if agrees else "differs from"
        findings.append(
            AttributeFinding(
                attribute=raw_key,
                predicted=expected,
                reported=value,
                agrees=agrees,
                rule=rule,
                message=f"{raw_key}: device reports {value}, which {verb} the prediction "
                f"{expected} ({rule})",
            )
        )
    return findings


def disagreements(findings: list[AttributeFinding]) -> list[AttributeFinding]:
    return [f for f in findings if not f.agrees]


def _predictions(layout: BlockedLayout) -> dict[str, tuple[Any, str]]:
    """Attribute name → (predicted value, the rule behind it)."""
    attrs = layout.attributes
    table_row = str(attrs.get("table_row", ""))
    out: dict[str, tuple[Any, str]] = {}

    def put(key: str, value: Any, rule: str) -> None:
        if value is not None:
            out[key] = (value, rule or table_row or f"{layout.target} {layout.name}")

    prov = layout.provenance
    put("w_stride", attrs.get("predicted_w_stride"), _rule(prov.get("w_stride"), table_row))
    put("size_with_stride", _predicted_size(layout, "size_with_stride"), table_row)
    put("size", _predicted_size(layout, "size"), table_row)
    put("fmt", attrs.get("fmt"), table_row)
    put("type", attrs.get("type"), table_row)
    put("n_elems", attrs.get("n_elems"), table_row)
    if "native_dims" in attrs and "native_dims" not in layout.params:
        put(
            "dims",
            attrs["native_dims"],
            f"C1: {_rule(prov.get('c1'), '')}; C2: {_rule(prov.get('c2'), '')}; {table_row}",
        )
    elif "dims" in attrs and layout.name != "NC1HWC2" and "native_dims" not in layout.params:
        put("dims", attrs["dims"], _rule(prov.get("channels"), table_row))
    put("stride", attrs.get("predicted_stride"), _rule(prov.get("stride"), ""))
    if (
        "stride" in attrs
        and "predicted_stride" in attrs
        and "aligned_byte_size" not in layout.params
    ):
        shape0 = int(layout.shape[0])
        put(
            "alignedByteSize",
            int(attrs["predicted_stride"][0]) * shape0,
            "stride[0] * validShape[0] of the predicted strides (seeds/003)",
        )
    put("validShape", attrs.get("validShape"), "the model's validShape")
    put("alignedShape", attrs.get("predicted_alignedShape"), _rule(prov.get("stride"), ""))
    put("stride_npu", attrs.get("predicted_stride_npu"), _rule(prov.get("stride_npu"), ""))
    put("data_layout", attrs.get("data_layout"), f"the model's declared {layout.target} layout")
    return out


def _predicted_size(layout: BlockedLayout, key: str) -> Any:
    if key not in layout.attributes or key in layout.params:
        return None
    return layout.attributes[key]


def _rule(provenance: str | None, fallback: str) -> str:
    if provenance and provenance.startswith("predicted: "):
        return provenance.removeprefix("predicted: ")
    return fallback


SPELLINGS = {"UNDEFINED": "UNDEFINE"}
"""The runtime's enum name → the seed's (an API says UNDEFINED where the tables say UNDEFINE)."""


def _normalise(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(_normalise(v) for v in value)
    if isinstance(value, str):
        name = value.upper()
        # the prefixes every vendor's runtime puts on its enum names
        for prefix in (p for unit in units() for p in unit.enum_prefixes):
            name = name.removeprefix(prefix)
        return SPELLINGS.get(name, name)
    return value


def _address(layout: BlockedLayout, key: str, value: Any) -> AttributeFinding:
    try:
        address = int(value, 0) if isinstance(value, str) else int(value)
    except (TypeError, ValueError) as exc:
        raise LayoutError(f"{key}: expected an integer address, got {value!r}") from exc
    misaligned = address % FIRST_ADDRESS_ALIGN
    documented = unit_for(layout.target).address_rule if layout.target in all_targets() else None
    rule = documented or "the codec's own buffers are 32-byte aligned"
    return AttributeFinding(
        attribute=key,
        predicted=f"a multiple of {FIRST_ADDRESS_ALIGN}",
        reported=hex(address),
        agrees=misaligned == 0,
        rule=rule,
        message=f"{key}: buffer address {hex(address)} is "
        + ("32-byte aligned" if not misaligned else f"{misaligned} bytes past a 32-byte boundary"),
    )
