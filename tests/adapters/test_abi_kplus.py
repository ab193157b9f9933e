"""Kneron PLUS 3.1.1 ``kp_struct.h`` as the compiler lays it out (``tests/data/abi``, measured from
the real header for aarch64) against every copy of it in the project: the adapter's ctypes
mirrors, the C fake of libkplus, and the constants of the adapter and of the Python fake ``kp``.

Nothing here compares a copy with another copy: each is held to the facts file on its own, so a
fake that drifts together with the adapter still fails."""

from __future__ import annotations

import ctypes
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from npu_hil.harness.board.adapters import kneron
from tests.adapters import mirrors

FACTS_PATH = Path(__file__).resolve().parents[1] / "data" / "abi" / "kp_struct-plus-3.1.1.json"
FACTS: dict[str, Any] = json.loads(FACTS_PATH.read_text(encoding="utf-8"))
ABI = FACTS["aarch64"]
STRUCTS: dict[str, Any] = ABI["structs"]
CONSTANTS: dict[str, int] = ABI["constants"]
LAYOUT_PREFIX = "KP_MODEL_TENSOR_DATA_LAYOUT_"

pytestmark = pytest.mark.skipif(
    ctypes.sizeof(ctypes.c_void_p) != 8, reason="the facts are LP64 (aarch64) figures"
)


def struct_items() -> Iterator[tuple[str, str, str | None, int]]:
    """(struct, what, field, expected): every size, alignment, field offset and field size."""
    for name, info in STRUCTS.items():
        yield name, "size", None, info["size"]
        yield name, "align", None, info["align"]
        for field, where in info["fields"].items():
            yield name, "offset", field, where["offset"]
            yield name, "field_size", field, where["size"]


STRUCT_ITEMS = list(struct_items())
ITEM_IDS = [f"{s}.{f}.{w}" if f else f"{s}.{w}" for s, w, f, _ in STRUCT_ITEMS]


def test_the_facts_are_the_ones_the_issue_names() -> None:
    # The figures the crash on a real KL730 came from, so a wrong file cannot pass unnoticed.
    assert FACTS["abi"] == "kp_struct-plus-3.1.1"
    assert STRUCTS["kp_tensor_descriptor_t"]["size"] == 76
    assert STRUCTS["kp_tensor_descriptor_t"]["fields"]["name"]["offset"] == 4
    assert STRUCTS["kp_inf_raw_fixed_node_output_t"]["size"] == 88
    assert STRUCTS["kp_inf_raw_fixed_node_output_t"]["fields"]["data"]["offset"] == 80


def test_every_struct_of_the_facts_has_a_mirror() -> None:
    assert sorted(mirrors.KP_STRUCTS) == sorted(STRUCTS)


def _ctypes_value(cls: Any, what: str, field: str | None) -> int:
    if what == "size":
        return ctypes.sizeof(cls)
    if what == "align":
        return ctypes.alignment(cls)
    descriptor = getattr(cls, field or "")
    return int(descriptor.offset if what == "offset" else descriptor.size)


@pytest.mark.parametrize(("struct", "what", "field", "expected"), STRUCT_ITEMS, ids=ITEM_IDS)
def test_ctypes_mirror_matches_the_header(
    struct: str, what: str, field: str | None, expected: int
) -> None:
    cls = mirrors.KP_STRUCTS[struct]
    assert _ctypes_value(cls, what, field) == expected, f"{struct} {what} {field or ''}"


def test_every_mirrored_field_is_in_the_facts() -> None:
    # A mirror field the facts do not list would go unchecked: unions only list no fields
    # (every member at offset 0), structs list all of theirs.
    for name, cls in mirrors.KP_STRUCTS.items():
        if issubclass(cls, ctypes.Union):
            continue
        fields = STRUCTS[name]["fields"]
        in_memory_order = sorted(fields, key=lambda f: fields[f]["offset"])
        assert [f for f, *_ in cls._fields_] == in_memory_order, name


@pytest.fixture
def fake_kplus(fake_libs: dict[str, Path]) -> Any:
    lib = ctypes.CDLL(str(fake_libs["kplus"]))
    for fn in ("fake_sizeof", "fake_alignof", "fake_kplus_constant"):
        getattr(lib, fn).restype = ctypes.c_long
        getattr(lib, fn).argtypes = [ctypes.c_char_p]
    for fn in ("fake_offsetof", "fake_fieldsize"):
        getattr(lib, fn).restype = ctypes.c_long
        getattr(lib, fn).argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    return lib


def _c_value(lib: Any, struct: str, what: str, field: str | None) -> int:
    name = struct.encode()
    if what == "size":
        return int(lib.fake_sizeof(name))
    if what == "align":
        return int(lib.fake_alignof(name))
    call = lib.fake_offsetof if what == "offset" else lib.fake_fieldsize
    return int(call(name, (field or "").encode()))


@pytest.mark.parametrize(("struct", "what", "field", "expected"), STRUCT_ITEMS, ids=ITEM_IDS)
def test_c_fake_matches_the_header(
    fake_kplus: Any, struct: str, what: str, field: str | None, expected: int
) -> None:
    got = _c_value(fake_kplus, struct, what, field)
    assert got != -1, f"the C fake does not declare {struct} {field or ''}"
    assert got == expected, f"fake_kplus.c: {struct} {what} {field or ''}"


# ------------------------------------------------------------------------------- constants


def constant_items() -> Iterator[tuple[str, str, int]]:
    """(where, constant, expected) for every constant a copy uses."""
    for code, name in kneron.DATA_LAYOUTS.items():
        if LAYOUT_PREFIX + name in CONSTANTS:
            yield "adapter.DATA_LAYOUTS", LAYOUT_PREFIX + name, code
    for code, name in kneron.DTYPES.items():
        yield "adapter.DTYPES", f"KP_DTYPE_{name}", code
    timeouts = ("KP_ERROR_USB_TIMEOUT_N7", "KP_ERROR_WDI_TIMEOUT_N7", "KP_FW_INFERENCE_TIMEOUT_103")
    for name, code in zip(timeouts, kneron.TIMEOUT_CODES, strict=True):
        yield "adapter.TIMEOUT_CODES", name, code
    yield "adapter", "KP_MODEL_TENSOR_SHAPE_INFO_VERSION_1", kneron.SHAPE_INFO_VERSION_1
    yield "adapter", "KP_MODEL_TENSOR_SHAPE_INFO_VERSION_2", kneron.SHAPE_INFO_VERSION_2
    yield (
        "adapter",
        "KP_MODEL_QUANTIZATION_PARAMS_VERSION_1",
        kneron.QUANTIZATION_PARAMS_VERSION_1,
    )


CONSTANT_ITEMS = list(constant_items())


@pytest.mark.parametrize(
    ("where", "name", "value"), CONSTANT_ITEMS, ids=[f"{w}:{n}" for w, n, _ in CONSTANT_ITEMS]
)
def test_adapter_constants_match_the_header(where: str, name: str, value: int) -> None:
    assert name in CONSTANTS, f"{where}: {name} is not in the facts file"
    assert CONSTANTS[name] == value, f"{where}: {name}"


def test_the_adapter_names_every_layout_code_of_the_header() -> None:
    header = {
        v: k[len(LAYOUT_PREFIX) :] for k, v in CONSTANTS.items() if k.startswith(LAYOUT_PREFIX)
    }
    assert {code: kneron.DATA_LAYOUTS[code] for code in header} == header


@pytest.mark.parametrize(
    "name", ["KP_MODEL_TENSOR_SHAPE_INFO_VERSION_2", "KP_MODEL_QUANTIZATION_PARAMS_VERSION_1"]
)
def test_c_fake_constants_match_the_header(fake_kplus: Any, name: str) -> None:
    assert fake_kplus.fake_kplus_constant(name.encode()) == CONSTANTS[name]


def python_fake_items() -> Iterator[tuple[str, int]]:
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "fakes"))
    try:
        from kp.enum import ApiReturnCode, DataType, ModelTensorDataLayout
    finally:
        sys.path.pop(0)
    for enum in (ApiReturnCode, DataType, ModelTensorDataLayout):
        for member in enum:
            yield member.name, int(member)


PY_FAKE_ITEMS = [(n, v) for n, v in python_fake_items() if n in CONSTANTS]


@pytest.mark.parametrize(("name", "value"), PY_FAKE_ITEMS, ids=[n for n, _ in PY_FAKE_ITEMS])
def test_python_fake_enums_match_the_header(name: str, value: int) -> None:
    assert CONSTANTS[name] == value


def test_python_fake_leaves_out_only_what_the_facts_do_not_cover() -> None:
    # Every value of the fake's enums is checked, except the 3.2-only HW* layout codes (13-17,
    # absent from the 3.1.1 header) and KP_SUCCESS (0 by definition).
    unchecked = {n for n, _ in python_fake_items()} - {n for n, _ in PY_FAKE_ITEMS}
    hw = {LAYOUT_PREFIX + f for f in ("HW4C8B_KEEP_A", "HW4C8B_DROP_A", "HW1C8B")}
    hw |= {LAYOUT_PREFIX + f for f in ("HW1C16B_LE", "HW1C16B_BE")}
    assert unchecked == hw | {"KP_SUCCESS"}


def test_python_fake_reports_the_kl730_product_id(fake_modules: Path, tmp_path: Path) -> None:
    import kp

    nef = tmp_path / "m.nef"
    nef.write_text("FAKE-NEF channels=3 height=4 width=5 layout=1W16C8B model_id=211")
    device = kp.core.connect_devices(usb_port_ids=[0])
    kp.core.load_model_from_file(device_group=device, file_path=str(nef))
    data = bytes(kp._fake.STATE["model"]["nbytes"])
    kp.inference.generic_data_inference_send(
        device_group=device,
        generic_inference_input_descriptor=kp.GenericDataInferenceDescriptor(
            model_id=211, inference_number=1, input_node_data_list=[kp.GenericInputNodeData(data)]
        ),
    )
    result = kp.inference.generic_data_inference_receive(device_group=device)
    assert result.header.product_id == CONSTANTS["KP_DEVICE_KL730"]


# ------------------------------------------------- optional: a kp_struct.h installed here

KP_STRUCT_ENV = "NPU_HIL_KP_STRUCT_H"


def probe_source(header: Path) -> str:
    """A C program printing ``name field what value`` for every item of the facts file."""
    lines = [
        f'#include "{header}"',
        "#include <stddef.h>",
        "#include <stdio.h>",
        "int main(void) {",
    ]
    for name, info in STRUCTS.items():
        lines.append(f'printf("{name} - size %zu\\n", sizeof({name}));')
        lines.append(f'printf("{name} - align %zu\\n", _Alignof({name}));')
        for field in info["fields"]:
            lines.append(f'printf("{name} {field} offset %zu\\n", offsetof({name}, {field}));')
            lines.append(
                f'printf("{name} {field} field_size %zu\\n", sizeof((({name} *)0)->{field}));'
            )
    return "\n".join([*lines, "return 0;", "}", ""])


def probe_header(header: Path, workdir: Path) -> dict[tuple[str, str, str | None], int]:
    import shutil
    import subprocess

    cc = next(
        (shutil.which(c) for c in (os.environ.get("CC"), "cc", "gcc") if c and shutil.which(c)),
        None,
    )
    if cc is None:
        pytest.skip("no C compiler to compile the kp_struct.h probe")
    source, binary = workdir / "probe.c", workdir / "probe"
    source.write_text(probe_source(header), encoding="utf-8")
    done = subprocess.run(
        [cc, "-std=gnu11", "-o", str(binary), str(source)], capture_output=True, text=True
    )
    assert done.returncode == 0, f"the probe does not compile against {header}:\n{done.stderr}"
    out = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        name, field, what, value = line.split()
        found[(name, what, None if field == "-" else field)] = int(value)
    return found


def check_probe(found: dict[tuple[str, str, str | None], int]) -> None:
    for struct, what, field, expected in STRUCT_ITEMS:
        assert found[(struct, what, field)] == expected, f"{struct} {what} {field or ''}"
        assert _ctypes_value(mirrors.KP_STRUCTS[struct], what, field) == expected


@pytest.mark.skipif(
    not os.environ.get(KP_STRUCT_ENV),
    reason=f"set {KP_STRUCT_ENV} to an installed kp_struct.h to probe it",
)
def test_installed_kp_struct_header_matches(tmp_path: Path) -> None:
    """The user's own PLUS header (``$NPU_HIL_KP_STRUCT_H``), compiled here, against the facts
    and the mirrors: a PLUS version whose layout moved fails here before it reaches a board."""
    check_probe(probe_header(Path(os.environ[KP_STRUCT_ENV]), tmp_path))


def test_the_probe_reads_a_header(tmp_path: Path) -> None:
    # The probe itself, on a header holding the C fake's declarations (held to the facts above).
    fake = (Path(__file__).parent / "fakes" / "fake_kplus.c").read_text(encoding="utf-8")
    declarations = fake[: fake.index("#define FAKE_MAGIC")]
    header = tmp_path / "kp_struct.h"
    header.write_text("#pragma once\n" + declarations, encoding="utf-8")
    check_probe(probe_header(header, tmp_path))
