"""The zoo against the compiler itself: the stored tables (tests/data/zoo) are what rknn-toolkit2
still says, and the zoo's variants at sizes never stored, compiled here, are laid out by the
simulated boards as the compiler lays them out (a blind check of the rules read off the data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zoo_agreement as agreement
from zoo_models import BUILDERS, VARIANTS

from tests.clirun import run_cli

pytestmark = pytest.mark.real_models


def test_every_variant_builds_everywhere(zoo_builds: list[dict[str, object]]) -> None:
    failed = [
        f"{r['model']} {r['target']}: {r.get('reason')}" for r in zoo_builds if not r["built"]
    ]
    assert not failed, "\n".join(failed)
    assert {r["model"] for r in zoo_builds} >= set(VARIANTS)


def test_the_stored_tables_are_what_the_compiler_says(zoo_builds: list[dict[str, object]]) -> None:
    stored = {agreement.key(r): r for r in agreement.records()}
    fresh = [r for r in zoo_builds if agreement.key(r) in stored]  # type: ignore[arg-type]
    assert len(fresh) >= 3 * len(agreement.ALL_TARGETS)
    for record in fresh:
        old = stored[agreement.key(record)]  # type: ignore[arg-type]
        assert (record["inputs"], record["outputs"]) == (old["inputs"], old["outputs"])
        for now, then in zip(record["simulator_snr_db"], old["simulator_snr_db"], strict=True):  # type: ignore[call-overload]
            assert (now is None) == (then is None)
            assert now is None or abs(now - then) < 0.5


def test_the_variants_are_laid_out_as_the_simulated_boards_predict(
    zoo_builds: list[dict[str, object]],
) -> None:
    variants = [r for r in zoo_builds if r["model"] in VARIANTS and r["built"]]
    held = 0
    differences = []
    for record in variants:
        found, fields = agreement.compare(record)  # type: ignore[arg-type]
        held += fields
        differences += found
    share = 1 - len(differences) / held
    print(f"\nvariants: {len(variants)} builds, {held} fields, {share:.1%} predicted")
    for difference in differences:
        print(f"    {difference}")
    assert share >= 0.95, "\n".join(map(str, differences))


def test_models_build_compiles_a_users_model_for_rv1106(compiler: str, tmp_path: Path) -> None:
    model = tmp_path / "resnet18.onnx"
    model.write_bytes(BUILDERS["resnet18"]().SerializeToString())
    out = tmp_path / "build"
    argv = ["models", "build", str(model), "--target", "rv1106", "rk3588", "--out", str(out)]
    argv += ["--mean", "123.675,116.28,103.53", "--std", "58.395,57.12,57.375", "--json"]
    first = run_cli(*argv)
    assert first.returncode == 0, first.stderr
    builds = json.loads(first.stdout)["builds"]
    assert [b["target"] for b in builds] == ["rv1106", "rk3588"]
    for build in builds:
        ((key, built),) = build["built"].items()
        assert key.startswith("resnet18-") and Path(built["rknn"]).is_file()
        assert built["outputs"][0]["native"] == [1, 1000] and built["outputs"][0]["size"] == 1024
        assert Path(built["rknn"]).with_suffix(".log").is_file()  # the compiler's log, kept
    again = run_cli(*argv)
    assert again.returncode == 0, again.stderr
    assert all(not b["built"] and b["cached"] for b in json.loads(again.stdout)["builds"])


def test_a_simulated_board_runs_the_vendors_own_simulator_as_a_reference(compiler: str) -> None:
    """``numerics: vendor``: the simulated board's outputs come from rknn-toolkit2's simulator
    (compiled and run in a child process per run), so its SNR is the toolkit's own."""
    from zoo_agreement import simulated_snr

    stored = next(
        r
        for r in agreement.records()
        if (r["model"], r["target"], r["precision"]) == ("resnet18", "rk3588", "int8")
    )
    # Two of the eight test samples (a compile per run), and the board quantizes its inputs
    # itself: within 1.5 dB of the toolkit's figure over all eight.
    (vendor,) = simulated_snr("resnet18", "int8", numerics="vendor", tests=2)
    (ours,) = simulated_snr("resnet18", "int8", tests=2)
    (toolkit,) = stored["simulator_snr_db"]
    assert vendor is not None and ours is not None
    assert abs(vendor - toolkit) <= 1.5 and vendor != ours, (vendor, ours, toolkit)
