"""The RKNN ABI held to the measured facts: both the ctypes mirrors in ``rknn_native`` and the C
fake ``fakes/fake_rknnrt.c`` against ``tests/data/abi/rknn_api-2.3.2.json`` (sizes, alignments,
field offsets and sizes, enum and error values), never against each other."""

from __future__ import annotations

import ctypes
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from npu_hil.harness.board.adapters import rknn_native
from tests.adapters import mirrors

FACTS_FILE = Path(__file__).resolve().parents[1] / "data" / "abi" / "rknn_api-2.3.2.json"
ARCH = "aarch64" if ctypes.sizeof(ctypes.c_void_p) == 8 else "armhf"


def facts() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FACTS_FILE.read_text())[ARCH]
    return data


def mirror_structs() -> dict[str, Any]:
    """Every C type the adapter declares: its structs and the context handle."""
    return {**mirrors.RKNN_STRUCTS, "rknn_context": rknn_native.rknn_context}


def mirror_constants() -> dict[str, int]:
    """Every rknn_api.h constant the adapter uses, under the header's names."""
    m = rknn_native
    out = {name: int(getattr(m, name)) for name in dir(m) if name.startswith("RKNN_")}
    out.update({f"RKNN_TENSOR_{v}": k for k, v in m.TENSOR_FORMATS.items()})
    out.update({f"RKNN_TENSOR_{v}": k for k, v in m.TENSOR_TYPES.items()})
    out.update({f"RKNN_TENSOR_QNT_{v}": k for k, v in m.QNT_TYPES.items()})
    out.update({v: k for k, v in m.ERROR_NAMES.items()})
    out.update({f"RKNN_NPU_CORE_{k.upper()}": v for k, v in m.CORE_MASKS.items()})
    return out


class FakeAbi:
    """The C fake's own account of its declarations (its layout exports)."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        for name in ("fake_constant_name", "fake_struct_name"):
            getattr(lib, name).restype = ctypes.c_char_p
            getattr(lib, name).argtypes = [ctypes.c_int]
        lib.fake_constant.restype = ctypes.c_long
        lib.fake_constant.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
        lib.fake_alignof.restype = ctypes.c_long
        lib.fake_alignof.argtypes = [ctypes.c_char_p]
        lib.fake_fieldsize.restype = ctypes.c_long
        lib.fake_fieldsize.argtypes = [ctypes.c_char_p, ctypes.c_char_p]

    def _names(self, func: Any) -> list[str]:
        names, i = [], 0
        while (name := func(i)) is not None:
            names.append(name.decode())
            i += 1
        return names

    def structs(self) -> list[str]:
        return self._names(self.lib.fake_struct_name)

    def constants(self) -> dict[str, int]:
        found = ctypes.c_int()
        return {
            n: int(self.lib.fake_constant(n.encode(), ctypes.byref(found)))
            for n in self._names(self.lib.fake_constant_name)
        }


@pytest.fixture
def fake_abi(layout_exports: Callable[[str], Any]) -> FakeAbi:
    return FakeAbi(layout_exports("rknnrt"))


# -- the mirrors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("c_name", sorted(mirror_structs()))
def test_mirror_struct_matches_the_facts(c_name: str) -> None:
    want = facts()["structs"][c_name]
    cls = mirror_structs()[c_name]
    assert ctypes.sizeof(cls) == want["size"], f"sizeof({c_name})"
    assert ctypes.alignment(cls) == want["align"], f"_Alignof({c_name})"
    fields = [f[0] for f in getattr(cls, "_fields_", [])]
    # Every field the header has is mirrored, and nothing else.
    assert sorted(fields) == sorted(want["fields"]), c_name
    for name in fields:
        got = getattr(cls, name)
        assert (got.offset, got.size) == (
            want["fields"][name]["offset"],
            want["fields"][name]["size"],
        ), f"{c_name}.{name} (offset, size)"


def test_mirror_constants_match_the_facts() -> None:
    have = facts()["constants"]
    used = mirror_constants()
    unknown = sorted(set(used) - set(have))
    assert not unknown, f"the adapter uses names the header does not define: {unknown}"
    wrong = {n: (v, have[n]) for n, v in used.items() if have[n] != v}
    assert not wrong, f"(adapter, header) values differ: {wrong}"


def test_enum_fields_are_int_sized_as_the_header_enums() -> None:
    enum_size = facts()["structs"]["rknn_tensor_format"]["size"]
    for name in ("fmt", "type", "qnt_type"):
        assert getattr(rknn_native.RknnTensorAttr, name).size == enum_size
    assert ctypes.sizeof(ctypes.c_int) == facts()["structs"]["rknn_core_mask"]["size"]
    assert ctypes.sizeof(ctypes.c_int) == facts()["structs"]["rknn_query_cmd"]["size"]


# -- the C fake -----------------------------------------------------------------------------------


def test_fake_declares_every_mirrored_type(fake_abi: FakeAbi) -> None:
    missing = sorted(set(mirror_structs()) - set(fake_abi.structs()))
    assert not missing, f"the fake lacks {missing}"


def test_fake_structs_match_the_facts(fake_abi: FakeAbi) -> None:
    known = facts()["structs"]
    checked = 0
    for c_name in fake_abi.structs():
        if c_name not in known:
            continue  # normal-API structs the facts file does not cover (see the fake's header)
        want, name = known[c_name], c_name.encode()
        assert fake_abi.lib.fake_sizeof(name) == want["size"], f"sizeof({c_name})"
        assert fake_abi.lib.fake_alignof(name) == want["align"], f"_Alignof({c_name})"
        for field, fact in want["fields"].items():
            got = (
                fake_abi.lib.fake_offsetof(name, field.encode()),
                fake_abi.lib.fake_fieldsize(name, field.encode()),
            )
            assert got == (fact["offset"], fact["size"]), f"{c_name}.{field} (offset, size)"
        checked += 1
    assert checked >= len(mirror_structs())


def test_fake_constants_match_the_facts(fake_abi: FakeAbi) -> None:
    have = facts()["constants"]
    declared = fake_abi.constants()
    unknown = sorted(set(declared) - set(have))
    assert not unknown, f"the fake declares names the header does not: {unknown}"
    wrong = {n: (v, have[n]) for n, v in declared.items() if have[n] != v}
    assert not wrong, f"(fake, header) values differ: {wrong}"
    missing = sorted(set(mirror_constants()) - set(declared))
    assert not missing, f"constants the adapter uses that the fake does not declare: {missing}"


def test_facts_file_is_the_measured_one() -> None:
    # The anchor figures the observations README quotes; a hand edit of the file shows here.
    doc = json.loads(FACTS_FILE.read_text())
    assert doc["abi"] == "rknn_api-2.3.2"
    for arch in ("aarch64", "armhf"):
        attr = doc[arch]["structs"]["rknn_tensor_attr"]
        assert (attr["size"], attr["fields"]["h_stride"]["offset"]) == (376, 372)
    assert doc["armhf"]["structs"]["rknn_context"]["size"] == 4
    assert doc["aarch64"]["structs"]["rknn_context"]["size"] == 8
