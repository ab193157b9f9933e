"""The codec's predicted native shapes and sizes against rknn-toolkit2's compiled files, for a
small grid on every Rockchip target (tests/vendor_rknn/grid.py). Every mismatch is printed with
both values; the test passes only when each one is an expected skew kept in grid.EXPECTED_SKEW
with the observation that justifies it, and every such entry is still needed."""

from __future__ import annotations

from grid import EXPECTED_SKEW, Grid, classify, compare, grid_models

from npu_hil.targets import rockchip


def test_every_target_and_precision_was_compiled(grid: Grid) -> None:
    expected = [m for m in grid_models() if (m.target, m.precision) != ("rk2118", "int8")]
    missing = [f"{m.label}: {grid.failed[m].message}" for m in expected if m not in grid.built]
    assert not missing, "\n".join(missing)
    assert {m.target for m in grid.built} == set(rockchip.TARGETS)


def test_codec_predictions_match_the_compiler(grid: Grid) -> None:
    mismatches = []
    exact = held = 0
    for model, result in sorted(grid.built.items(), key=lambda item: item[0].label):
        found, fields = compare(model, result)
        mismatches += found
        held += fields
        exact += not found
    explained, unexplained = classify(mismatches)
    total = len(grid.built)
    print(
        f"\n{exact} of {total} compiled models predicted exactly ({100 * exact / total:.0f}%); "
        f"{len(mismatches)} of {held} fields differ, {len(unexplained)} not an expected skew"
    )
    for name, items in explained.items():
        print(f"expected skew {name}: {len(items)}")
        for m in items:
            print(f"    {m}")
    for m in unexplained:
        print(f"UNEXPECTED {m}")
    unused = [s.name for s in EXPECTED_SKEW if not explained[s.name]]
    assert not unexplained, (
        f"{len(unexplained)} differences from the compiler are not expected skews:\n"
        + "\n".join(map(str, unexplained))
    )
    assert not unused, f"expected skews the grid no longer shows (drop or fix them): {unused}"
