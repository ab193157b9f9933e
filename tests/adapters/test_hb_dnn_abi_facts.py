"""``hobot_native``'s ctypes mirrors and the C fake of libdnn held to the measured ABI facts of the
real Horizon headers (``tests/data/abi/hb_dnn-*.json``, see README-hb_dnn.md): every struct's size
and alignment, every field's offset and size, every enum value and return code, per header
version. Neither side is compared with the other: both answer to the facts."""

from __future__ import annotations

import ctypes
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from npu_hil.harness.board.adapters import hobot_native
from tests.adapters import mirrors as names

DATA = Path(__file__).resolve().parents[1] / "data" / "abi"
# header version -> (adapter ABI, fake library)
FACTS = {
    "hb_dnn-x3-1.18.6": ("x3x5", "dnn_x3x5"),
    "hb_dnn-x5-1.24.5": ("x3x5", "dnn_x3x5"),
    "hb_dnn-s100-ucp-3.13.6": ("s100", "dnn_s100"),
}
# Every struct the facts hold must have a mirror, so a new header struct cannot slip by.
Item = tuple[str, tuple[str, ...], int]


def facts(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text())
    assert data["abi"] == name
    arch: dict[str, Any] = data["aarch64"]
    return arch


def items(arch: dict[str, Any]) -> Iterator[Item]:
    """Every measured number: ("size"|"align", (struct,)), ("offset"|"fieldsize", (struct,
    field)), ("constant", (name,))."""
    for struct, info in sorted(arch["structs"].items()):
        yield "size", (struct,), int(info["size"])
        yield "align", (struct,), int(info["align"])
        for field, where in sorted(info["fields"].items()):
            yield "offset", (struct, field), int(where["offset"])
            yield "fieldsize", (struct, field), int(where["size"])


def mirrors(abi: str) -> dict[str, Any]:
    structs = names.HB_STRUCTS_X3X5 if abi == "x3x5" else names.HB_STRUCTS_S100
    return {**structs, **names.HB_ENUM_TYPES}


def mirror_value(abi: str, kind: str, key: tuple[str, ...]) -> int | None:
    cls = mirrors(abi).get(key[0])
    if cls is None:
        return None
    if kind == "size":
        return ctypes.sizeof(cls)
    if kind == "align":
        return ctypes.alignment(cls)
    names = [f[0] for f in getattr(cls, "_fields_", [])]
    if key[1] not in names:
        return None
    field = getattr(cls, key[1])
    return int(field.offset if kind == "offset" else field.size)


def fake_lib(path: Path) -> Any:
    lib = ctypes.CDLL(str(path))
    for name in ("fake_sizeof", "fake_alignof"):
        getattr(lib, name).restype = ctypes.c_long
        getattr(lib, name).argtypes = [ctypes.c_char_p]
    for name in ("fake_offsetof", "fake_fieldsize"):
        getattr(lib, name).restype = ctypes.c_long
        getattr(lib, name).argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    lib.fake_constant_name.restype = ctypes.c_char_p
    lib.fake_constant_name.argtypes = [ctypes.c_int]
    lib.fake_constant_value.restype = ctypes.c_long
    lib.fake_constant_value.argtypes = [ctypes.c_int]
    lib.fake_dnn_code.restype = ctypes.c_long
    lib.fake_dnn_code.argtypes = [ctypes.c_char_p]
    return lib


def fake_value(lib: Any, kind: str, key: tuple[str, ...]) -> int | None:
    call = {
        "size": lib.fake_sizeof,
        "align": lib.fake_alignof,
        "offset": lib.fake_offsetof,
        "fieldsize": lib.fake_fieldsize,
    }[kind]
    value = int(call(*(k.encode() for k in key)))
    return None if value == -1 else value


def fake_constants(lib: Any) -> dict[str, int]:
    return {
        lib.fake_constant_name(i).decode(): int(lib.fake_constant_value(i))
        for i in range(lib.fake_constant_count())
    }


def check(
    arch: dict[str, Any], value_of: Callable[[str, tuple[str, ...]], int | None], what: str
) -> tuple[int, list[str]]:
    checked, wrong = 0, []
    for kind, key, expected in items(arch):
        checked += 1
        got = value_of(kind, key)
        if got != expected:
            wrong.append(f"{what} {kind}{key}: {got}, the header says {expected}")
    return checked, wrong


def check_constants(
    arch: dict[str, Any], constants: dict[str, int], what: str
) -> tuple[int, list[str]]:
    measured = arch["constants"]
    wrong = [
        f"{what} {name} = {value}, the header says {measured.get(name)}"
        for name, value in sorted(constants.items())
        if measured.get(name) != value
    ]
    return len(constants), wrong


@pytest.mark.parametrize("header", sorted(FACTS))
def test_ctypes_mirrors_match_the_header(header: str) -> None:
    abi, _ = FACTS[header]
    arch = facts(header)
    checked, wrong = check(arch, lambda k, key: mirror_value(abi, k, key), "mirror")
    # A mirror the facts do not know would be checked against nothing.
    structs = names.HB_STRUCTS_X3X5 if abi == "x3x5" else names.HB_STRUCTS_S100
    extra = sorted(set(structs) - set(arch["structs"]))
    assert not extra, f"mirrors without measured facts in {header}: {extra}"
    # And no field the facts do not know.
    for name, cls in structs.items():
        fields = {f[0] for f in cls._fields_}
        assert fields == set(arch["structs"][name]["fields"]), name
    assert not wrong, "\n".join(wrong)
    assert checked >= 40


@pytest.mark.parametrize("header", sorted(FACTS))
def test_adapter_constants_match_the_header(header: str) -> None:
    abi_name, _ = FACTS[header]
    abi = hobot_native.ABIS[abi_name]
    arch = facts(header)
    constants = names.hb_header_constants(abi)
    checked, wrong = check_constants(arch, constants, "adapter")
    assert not wrong, "\n".join(wrong)
    # Every tensor type, image type and layout the header has is known to the adapter.
    measured = arch["constants"]
    prefixes = ("HB_DNN_TENSOR_TYPE_", "HB_DNN_IMG_TYPE_", "HB_DNN_LAYOUT_")
    missing = [
        name
        for name in measured
        if name.startswith(prefixes) and name != "HB_DNN_TENSOR_TYPE_MAX" and name not in constants
    ]
    assert not missing, f"header values the adapter does not map: {missing}"
    assert checked >= 20


@pytest.mark.parametrize("header", sorted(FACTS))
def test_c_fake_matches_the_header(header: str, fake_libs: dict[str, Path]) -> None:
    _, lib_name = FACTS[header]
    lib = fake_lib(fake_libs[lib_name])
    arch = facts(header)
    checked, wrong = check(arch, lambda k, key: fake_value(lib, k, key), "fake")
    n, wrong_constants = check_constants(arch, fake_constants(lib), "fake")
    assert not wrong + wrong_constants, "\n".join(wrong + wrong_constants)
    assert checked >= 40 and n >= 20


@pytest.mark.parametrize("header", sorted(FACTS))
def test_fake_return_codes_are_the_headers(header: str, fake_libs: dict[str, Path]) -> None:
    abi_name, lib_name = FACTS[header]
    lib = fake_lib(fake_libs[lib_name])
    measured = fake_facts_codes(facts(header))
    for meaning in ("invalid", "model", "fault", "nomem", "timeout", "align"):
        code = int(lib.fake_dnn_code(meaning.encode()))
        assert code in measured.values(), f"the fake's {meaning} code {code} is no header code"
    timeout = int(lib.fake_dnn_code(b"timeout"))
    abi = hobot_native.ABIS[abi_name]
    assert measured[abi.timeout_name] == timeout == abi.timeout_code


def fake_facts_codes(arch: dict[str, Any]) -> dict[str, int]:
    """The measured return codes (negative status values)."""
    return {k: int(v) for k, v in arch["constants"].items() if int(v) < -1000}


def count_items() -> dict[str, int]:
    """How many measured items each header's checks cover (for the record)."""
    found = {}
    for header, (abi_name, _) in FACTS.items():
        arch = facts(header)
        layout = sum(1 for _ in items(arch))
        constants = len(names.hb_header_constants(hobot_native.ABIS[abi_name]))
        found[header] = layout + constants
    return found
