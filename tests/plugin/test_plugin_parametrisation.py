"""Board tests are parametrised over the inventory's matching boards."""

from __future__ import annotations

import pytest

BOARD_TESTS = """
import pytest

@pytest.mark.soc("rk3588", "kl730")
def test_two_socs(board):
    assert board.simulated

@pytest.mark.vendor("rockchip")
def test_vendor(board):
    assert board.board.vendor == "rockchip"

def test_any_board(board):
    pass

@pytest.mark.soc("rv1106")
def test_missing_soc(board):
    pass
"""


def test_ids_are_board_names(project: pytest.Pytester) -> None:
    project.makepyfile(BOARD_TESTS)
    result = project.runpytest("--collect-only", "-q", "--strict-markers")
    # Listed as they run: each board's cases together, in the order the boards first appear.
    result.stdout.fnmatch_lines(
        [
            "*test_two_socs[[]rk3588-01[]]",
            "*test_vendor[[]rk3588-01[]]",
            "*test_any_board[[]rk3588-01[]]",
            "*test_two_socs[[]kl730-01[]]",
            "*test_any_board[[]kl730-01[]]",
            "*test_vendor[[]rk3566-01[]]",
            "*test_any_board[[]rk3566-01[]]",
            "*test_missing_soc[[]rv1106-no-board[]]",
        ]
    )


@pytest.mark.slow
def test_soc_without_board_is_skipped_with_reason(project: pytest.Pytester) -> None:
    project.makepyfile(BOARD_TESTS)
    result = project.runpytest("-rs", "--strict-markers")
    result.assert_outcomes(passed=7, skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*no board for SoC rv1106 in *inventory.yaml*"])


@pytest.mark.slow
def test_target_and_board_filters(project: pytest.Pytester) -> None:
    project.makepyfile(BOARD_TESTS)
    result = project.runpytest("--collect-only", "-q", "--target", "rk3566")
    out = result.stdout.str()
    assert "test_vendor[rk3566-01]" in out
    assert "test_vendor[rk3588-01]" not in out
    # what the filter leaves out is deselected; a SoC the inventory lacks stays a skip
    assert "test_two_socs[rk3588-no-board]" not in out
    assert "test_missing_soc[rv1106-no-board]" in out
    assert "(2 deselected)" in out  # test_two_socs: rk3588 and kl730
    result = project.runpytest("-q", "--board", "kl730-01", "-rs")
    result.assert_outcomes(passed=2, skipped=1, deselected=2)


@pytest.mark.slow
def test_unknown_soc_is_a_collection_error(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import pytest

        @pytest.mark.soc("rk3589")
        def test_typo(board):
            pass
        """
    )
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*soc('rk3589'): unknown SoC*"])


@pytest.mark.slow
def test_inventory_error_names_file_line_column(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        farm="""\
boards:
  - name: rk3588-01
    target: rk3588
    backend: hw
    transport: {kind: ssh, host: 10.0.0.5, port: "22a"}
""",
    )
    pytester.makepyfile("def test_x(board):\n    pass\n")
    result = pytester.runpytest("--inventory", "farm.yaml")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*farm.yaml:5:*: boards[[]0[]].transport.port: *22a*"])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.slow
def test_no_inventory_runs_on_the_builtin_simulated_farm(pytester: pytest.Pytester) -> None:
    """A model developer's own project: no inventory, and the board test runs once per target
    on the built-in simulated farm, which the summary of the run names."""
    pytester.makepyfile("def test_x(board):\n    assert board.simulated\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=15)
    result.stdout.fnmatch_lines(
        ["npu-hil: no inventory given (--inventory FILE) or found*built-in simulated farm*(15)*"]
    )


@pytest.mark.slow
def test_the_builtin_farm_header_is_absent_with_an_inventory(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", inventory="boards:\n  - {name: rk3588-01, target: rk3588}\n")
    pytester.makepyfile("def test_x(board):\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert "built-in simulated farm" not in result.stdout.str()
