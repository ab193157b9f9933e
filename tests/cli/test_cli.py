"""The ``npu-hil`` command line: codec and targets subcommands, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.cli.main import main
from npu_hil.harness.codec import get_layout
from tests.clirun import run_cli

ONE_GROUP = ["--target", "kl730", "--layout", "1W16C8B", "--shape", "1,16,1,1", "--dtype", "int8"]
"""One full KL730 channel group of one pixel: the tensor the bad-input cases describe."""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in this process (exit code, stdout, stderr); the real process is held to the same
    answers by ``test_the_installed_command_answers_as_in_process``."""
    return run_cli(*args)


def test_pack_then_unpack_round_trips_through_files(tmp_path: Path) -> None:
    tensor = np.arange(1 * 20 * 3 * 5, dtype=np.int64).reshape(1, 20, 3, 5).astype(np.int8)
    np.save(tmp_path / "x.npy", tensor)
    common = ["--target", "kl730", "--layout", "1W16C8B"]
    assert (
        main(
            [
                "codec",
                "pack",
                *common,
                "--in",
                str(tmp_path / "x.npy"),
                "--out",
                str(tmp_path / "y.bin"),
            ]
        )
        == 0
    )
    packed = (tmp_path / "y.bin").read_bytes()
    expected = get_layout("kl730", "1W16C8B", tensor.shape, "int8").pack(tensor)
    assert packed == expected.tobytes()
    unpack = [
        "codec",
        "unpack",
        *common,
        "--shape",
        "1,20,3,5",
        "--dtype",
        "int8",
        "--in",
        str(tmp_path / "y.bin"),
        "--out",
        str(tmp_path / "z.npy"),
    ]
    assert main(unpack) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "z.npy"), tensor)


def test_pack_takes_device_params(tmp_path: Path) -> None:
    tensor = np.ones((1, 3, 2, 5), np.uint8)
    np.save(tmp_path / "x.npy", tensor)
    args = [
        "codec",
        "pack",
        "--target",
        "rk3588",
        "--layout",
        "NHWC",
        "--role",
        "input",
        "--param",
        "w_stride=32",
        "--in",
        str(tmp_path / "x.npy"),
        "--out",
        str(tmp_path / "y.bin"),
    ]
    assert main(args) == 0
    assert len((tmp_path / "y.bin").read_bytes()) == 1 * 2 * 32 * 3


def test_locate_json_names_index_entry_and_bits(capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "codec",
        "locate",
        "--target",
        "kl730",
        "--layout",
        "1W16C8B",
        "--shape",
        "1,32,4,5",
        "--dtype",
        "int8",
        "--offset",
        "335",
        "--json",
    ]
    assert main(args) == 0
    found = json.loads(capsys.readouterr().out)
    # Group 1 starts after 20 pixels x 16 bytes of group 0; byte 15 of its first entry is c=31.
    assert found["index"] == [0, 31, 0, 0]
    assert found["entry"] == 20
    assert found["bits"] == "[127:120]"
    assert found["padding"] is False


def test_locate_text_says_padding(capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "codec",
        "locate",
        "--target",
        "kl730",
        "--layout",
        "1W16C8B",
        "--shape",
        "1,20,1,1",
        "--dtype",
        "int8",
        "--offset",
        "20",
    ]
    assert main(args) == 0
    assert "padding" in capsys.readouterr().out


def test_describe_json_says_what_is_predicted_and_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = [
        "codec",
        "describe",
        "--target",
        "rk3566",
        "--layout",
        "NC1HWC2",
        "--shape",
        "1,255,20,20",
        "--dtype",
        "int8",
        "--json",
    ]
    assert main(args) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["attributes"]["native_dims"] == [1, 32, 20, 20, 8]
    assert info["nbytes"] == 32 * 20 * 20 * 8
    assert info["provenance"]["c2"].startswith("predicted")
    assert main([*args, "--param", "native_dims=[1,16,20,20,16]"]) == 0
    given = json.loads(capsys.readouterr().out)
    assert given["provenance"]["c2"].startswith("given")
    assert given["nbytes"] == 16 * 20 * 20 * 16


def test_targets_list_show_and_conv_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["targets", "list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert len(listing) == 15
    assert len(listing["kl730"]) == 16
    for target in ("kl730", "rk3588", "rdk-s100"):
        assert main(["targets", "show", target]) == 0
        assert target in capsys.readouterr().out
    ok = ["targets", "conv-check", "--target", "rk3588", "--width", "6144", "--kernel", "3x3"]
    assert main(ok) == 0
    capsys.readouterr()
    too_wide = [
        "targets",
        "conv-check",
        "--target",
        "rk3588",
        "--width",
        "6145",
        "--kernel",
        "3x3",
        "--json",
    ]
    assert main(too_wide) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] is False
    assert result["n"] == 9


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            [
                "codec",
                "describe",
                "--target",
                "nope",
                "--layout",
                "X",
                "--shape",
                "1",
                "--dtype",
                "int8",
            ],
            "unknown target",
        ),
        (
            [
                "codec",
                "describe",
                "--target",
                "kl730",
                "--layout",
                "4W4C8B",
                "--shape",
                "1,3,4,4",
                "--dtype",
                "uint8",
            ],
            "input-only",
        ),
        (
            [
                "codec",
                "describe",
                "--target",
                "kl730",
                "--layout",
                "1W16C8B",
                "--shape",
                "1,a",
                "--dtype",
                "int8",
            ],
            "--shape",
        ),
        (
            [
                "codec",
                "describe",
                "--target",
                "rk3588",
                "--layout",
                "NHWC",
                "--role",
                "input",
                "--shape",
                "1,3,4,4",
                "--dtype",
                "uint8",
                "--param",
                "w_stride=abc",
            ],
            "w_stride",
        ),
        (
            [
                "codec",
                "locate",
                "--target",
                "kl730",
                "--layout",
                "1W16C8B",
                "--shape",
                "1,16,1,1",
                "--dtype",
                "int8",
                "--offset",
                "99",
            ],
            "outside the buffer",
        ),
        (
            ["codec", "unpack", *ONE_GROUP, "--in", "/nonexistent/y.bin", "--out", "never.npy"],
            "no such file",
        ),
        (
            ["targets", "conv-check", "--target", "rk3588", "--width", "10", "--kernel", "3by3"],
            "--kernel",
        ),
        (["targets", "show", "rk9999"], "unknown target"),
        (["codec", "describe", "--target", "kl730"], "required"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_traceback(args: list[str], needle: str) -> None:
    done = run(*args)
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 or lines[0].startswith("usage:"), done.stderr
    assert "Traceback" not in done.stderr
    assert needle in done.stderr


def test_unpack_of_a_short_buffer_says_how_short(tmp_path: Path) -> None:
    (tmp_path / "y.bin").write_bytes(b"\0" * 10)
    done = run(
        "codec",
        "unpack",
        *ONE_GROUP,
        "--in",
        str(tmp_path / "y.bin"),
        "--out",
        str(tmp_path / "x.npy"),
    )
    assert done.returncode == 2
    assert "6 bytes short" in done.stderr


def test_targets_show_lists_every_deviation_from_the_seed_with_both_values() -> None:
    done = run("targets", "show", "rv1106b")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "Deviations from the seed" in text
    for key in ("c2-8", "input-width-16", "flattened-plane", "contradictory-reports"):
        assert f"{key}:" in text, key
    # Both values, each with its provenance.
    assert "seed:     x8" in text and "observed: x16" in text
    assert "librknnmrt 2.3.2 observed" in text
    kl730 = run("targets", "show", "kl730")
    assert "Deviations from the seed" not in kl730.stdout


def test_targets_observed_prints_the_shares(tmp_path: Path) -> None:
    facts = Path(__file__).resolve().parents[1] / "data" / "rknn" / "observed.json.gz"
    done = run("targets", "observed", str(facts))
    assert done.returncode == 0, done.stderr
    assert "accepted    2367 / 2376" in done.stdout
    assert "predicted    384 / 396 models exactly (97.0%)" in done.stdout
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    refused = run("targets", "observed", str(bad))
    assert refused.returncode == 2 and "expected a JSON list" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_a_nightly_with_a_bad_inventory_prints_its_line_and_exits_2(tmp_path: Path) -> None:
    inventory = tmp_path / "farm.yaml"
    inventory.write_text(
        "boards:\n  - name: x\n    target: rk3588\n    transport: {kind: ssh, host: h, port: 22a}\n"
    )
    done = run("nightly", "--inventory", str(inventory), "--reports", str(tmp_path / "reports"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"npu-hil: error: {inventory}:4:43: boards[0].transport.port: expected an integer, got "
        '"22a"'
    ]
    assert not (tmp_path / "reports").exists() or not any((tmp_path / "reports").iterdir())


@pytest.mark.slow
@pytest.mark.parametrize(
    "args", [("targets", "show", "rk9999"), ("codec", "describe", "--target", "kl730")]
)
def test_the_installed_command_answers_as_in_process(args: tuple[str, ...]) -> None:
    """The separate process a user starts: the same exit code and stderr as in-process."""
    real = subprocess.run(
        [sys.executable, "-m", "npu_hil.harness.cli.main", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    inside = run(*args)
    assert (real.returncode, real.stderr, real.stdout) == (
        inside.returncode,
        inside.stderr,
        inside.stdout,
    )
    assert real.returncode == 2 and "Traceback" not in real.stderr
