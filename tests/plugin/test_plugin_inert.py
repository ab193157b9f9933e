"""The plugin is inert until a test asks for a board."""

from __future__ import annotations

import pytest


def test_plain_project_is_untouched(pytester: pytest.Pytester) -> None:
    # A broken inventory.yaml in the rootdir is never read when no test uses a board.
    pytester.makefile(".yaml", inventory="boards: [\n")
    pytester.makepyfile(
        """
        def test_one():
            assert 1 + 1 == 2

        def test_two(tmp_path):
            assert tmp_path.exists()
        """
    )
    result = pytester.runpytest("--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert not (pytester.path / "reports").exists()
    assert "npu-hil: report" not in result.stdout.str()


def test_options_and_markers_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    for option in (
        "--inventory",
        "--backend",
        "--target",
        "--board",
        "--reports",
        "--keep-remote",
        "--hil-retries",
    ):
        result.stdout.fnmatch_lines([f"*{option}*"])
    markers = pytester.runpytest("--markers")
    for marker in ("soc(*names)", "vendor(*names)", "hw_only", "sim_only", "layout(*names)"):
        markers.stdout.fnmatch_lines([f"@pytest.mark.{marker}*"])


def test_strict_markers_accept_the_plugin_markers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.hw_only
        @pytest.mark.sim_only
        @pytest.mark.layout("NC1HWC2", "1W16C8B")
        def test_marked():
            pass
        """
    )
    result = pytester.runpytest("--strict-markers")
    result.assert_outcomes(passed=1)


def test_codec_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_codec(codec):
            layout = codec.get_layout("rk3588", "NC1HWC2", (1, 3, 2, 2), "int8")
            assert layout.nbytes > 0
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)
