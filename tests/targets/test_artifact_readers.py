"""The compiled-model readers: real .rknn files rknn-toolkit2 2.5.0 wrote (tests/data/artifacts,
with their provenance), files damaged from them, and the NEF and Horizon checks."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_hil.harness.errors import ArtifactError, CompatibilityError, NpuHilError
from npu_hil.targets.artifact import parse_version, read_artifact
from npu_hil.targets.horizon.artifact import read_horizon_model
from npu_hil.targets.kneron.artifact import read_kneron_model
from npu_hil.targets.rockchip.artifact import read_rockchip_model

DATA = Path(__file__).resolve().parents[1] / "data" / "artifacts" / "rockchip"
REAL = {
    "probe-rk3566-i8.rknn": ("rknn", 6, "rk3566", 17536),
    "probe-rk3588-i8.rknn": ("rknn", 6, "rk3588", 19968),
    "probe-rv1106-i8.rknn": ("rknn-mini", 0x1004, "rv1106", 6688),
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_rknn_files_state_their_toolkit_format_and_target(name: str) -> None:
    fmt, version, platform, data_bytes = REAL[name]
    info = read_rockchip_model(DATA / name)
    assert (info.vendor, info.format, info.format_version) == ("rockchip", fmt, version)
    assert info.toolkit_version == "2.5.0"
    assert info.target_platforms == (platform,)
    assert info.compiler_version == "2.5.0 (74ea630ce@2026-09-29T14:54:20)"
    assert info.extras["model_data_bytes"] == data_bytes
    assert "trailing_bytes" not in info.extras and info.unverified == ()
    # Through the vendor unit, by the target's suffixes.
    assert read_artifact(DATA / name, platform) == info
    assert info.to_dict()["target_platforms"] == [platform]


def test_an_onnx_file_is_no_compiled_artifact() -> None:
    assert read_artifact(DATA / "probe.onnx", "rk3588") is None


def real_bytes(name: str = "probe-rk3566-i8.rknn") -> bytearray:
    return bytearray((DATA / name).read_bytes())


def written(tmp_path: Path, data: bytes, name: str = "m.rknn") -> Path:
    path = tmp_path / name
    path.write_bytes(bytes(data))
    return path


def info_offset(data: bytes) -> int:
    return 64 + struct.unpack_from("<Q", data, 16)[0]


def with_info(data: bytearray, document: object) -> bytearray:
    at = info_offset(data)
    block = json.dumps(document).encode()
    return data[:at] + struct.pack("<Q", len(block)) + block


def test_damaged_rknn_files_are_typed_errors_naming_what_and_where(tmp_path: Path) -> None:
    data = real_bytes()
    at = info_offset(data)
    cases: list[tuple[bytes, str]] = [
        (b"", r"expected the magic b'RKNN' and a 64-byte header, got b'' and 0 bytes"),
        (b"ONNX" + bytes(data[4:]), r"not a compiled RKNN model .*got b'ONNX'"),
        (bytes(data[:40]), r"got b'RKNN' and 40 bytes"),
        (bytes(data[: at + 4]), rf"model-info length after them at offset {at}; the file has"),
        (
            bytes(data[: at + 100]),
            rf"model-info block at offset {at + 8} claims \d+ bytes; the file ends 92",
        ),
        (
            bytes(data[:16]) + struct.pack("<Q", 1 << 40) + bytes(data[24:]),
            r"says 1099511627776 bytes",
        ),
        (
            bytes(data[:at]) + struct.pack("<Q", 1 << 30) + bytes(data[at + 8 :]),
            r"expected at most 8388608",
        ),
        (
            bytes(data[: at + 8]) + b"{not json" + bytes(data[at + 17 :]),
            r"at offset \d+ is not the JSON",
        ),
        (bytes(with_info(data, [1, 2])), r"is a JSON list, expected an object"),
    ]
    for number, (content, match) in enumerate(cases):
        with pytest.raises(ArtifactError, match=match) as caught:
            read_rockchip_model(written(tmp_path, content, f"{number}.rknn"))
        assert isinstance(caught.value, CompatibilityError)
        assert f"{number}.rknn" in caught.value.message


def test_missing_fields_are_unknown_never_guessed(tmp_path: Path) -> None:
    info = read_rockchip_model(written(tmp_path, with_info(real_bytes(), {"name": "x"})))
    assert info.toolkit_version is None and info.target_platforms == ()
    assert any("no toolkit version" in u for u in info.unverified)
    assert any("no target platform" in u for u in info.unverified)
    one = read_rockchip_model(
        written(
            tmp_path, with_info(real_bytes(), {"version": "1.6.0", "target_platform": "RK3588"})
        )
    )
    assert (one.toolkit_version, one.target_platforms) == ("1.6.0", ("rk3588",))


def test_a_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "m.rknn"
    folder.mkdir()
    with pytest.raises(ArtifactError, match=r"m\.rknn: expected a compiled RKNN model"):
        read_rockchip_model(folder)
    with pytest.raises(ArtifactError, match="cannot open"):
        read_rockchip_model(tmp_path / "missing.rknn")


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    cut=st.integers(0, 18631),
    flips=st.lists(st.tuples(st.integers(0, 18631), st.integers(1, 255)), max_size=4),
)
def test_any_cut_or_corruption_reads_or_fails_typed(
    tmp_path_factory: pytest.TempPathFactory, cut: int, flips: list[tuple[int, int]]
) -> None:
    data = real_bytes()
    for at, xor in flips:
        data[at] ^= xor
    path = written(tmp_path_factory.mktemp("cut"), data[:cut])
    try:
        info = read_rockchip_model(path)
    except ArtifactError:
        return
    # What reads at all reads as what the file says: never an invented field.
    assert info.format_version == struct.unpack_from("<Q", data, 8)[0]


def nef(tmp_path: Path, body: bytes, *, crc: int | None = None) -> Path:
    content = struct.pack("<I", 8) + body
    value = zlib.crc32(content) if crc is None else crc
    return written(tmp_path, content + struct.pack("<I", value), "m.nef")


def test_nef_crc_and_root_offset(tmp_path: Path) -> None:
    info = read_kneron_model(nef(tmp_path, bytes(range(64)) * 40))
    assert (info.vendor, info.format, info.target_platforms, info.toolkit_version) == (
        "kneron",
        "nef",
        (),
        None,
    )
    assert info.unverified and "schema" in info.unverified[0]
    assert read_artifact(tmp_path / "m.nef", "kl730") == info
    with pytest.raises(ArtifactError, match=r"CRC-32 stored in its last 4 bytes is 0x00000001"):
        read_kneron_model(nef(tmp_path, bytes(100), crc=1))
    with pytest.raises(ArtifactError, match="root offset at byte 0 is 4000"):
        path = written(tmp_path, struct.pack("<I", 4000) + bytes(20), "m.nef")
        read_kneron_model(path)
    with pytest.raises(ArtifactError, match="the file has 3 bytes"):
        read_kneron_model(written(tmp_path, b"abc", "m.nef"))


def test_horizon_models_are_checked_for_what_they_are_not(tmp_path: Path) -> None:
    info = read_horizon_model(written(tmp_path, b"\x00HBDNN-like bytes", "m.bin"))
    assert (info.vendor, info.format, info.target_platforms) == ("horizon", "bin", ())
    assert "not publicly documented" in info.unverified[0]
    for content, match in [
        (b"", "the file is empty"),
        ((DATA / "probe-rk3566-i8.rknn").read_bytes(), "the file is an RKNN model"),
        ((DATA / "probe.onnx").read_bytes(), "the file is an ONNX model"),
        (b"PK\x03\x04rest", "a ZIP archive"),
    ]:
        with pytest.raises(ArtifactError, match=match):
            read_horizon_model(written(tmp_path, content, "m.hbm"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.6.0 (9a7b5d24c@2023-12-13T17:31:11)", (1, 6, 0)),
        ("v2.5.0", (2, 5, 0)),
        ("2.3", (2, 3, 0)),
        ("kneron/toolchain:v0.20.1", None),
        ("", None),
        (None, None),
        (3, None),
    ],
)
def test_parse_version(text: object, expected: tuple[int, int, int] | None) -> None:
    assert parse_version(text) == expected


def test_errors_are_npu_hil_errors() -> None:
    assert issubclass(ArtifactError, NpuHilError)
