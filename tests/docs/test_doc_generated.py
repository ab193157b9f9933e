"""The pages docs/gen_pages.py writes at build time: every command, every inventory key with
the error its typo gets, and each layout's picture byte for byte what the codec says."""

from __future__ import annotations

import re
from types import ModuleType

import numpy as np
import pytest
from doc_examples import load_gen_pages


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    return load_gen_pages()


def test_the_cli_page_has_every_command_and_option(gen: ModuleType) -> None:
    from npu_hil.harness.cli.main import build_parser

    page = gen.cli_page()
    words = gen.commands()
    assert {"npu-hil codec pack", "npu-hil nightly", "npu-hil simfarm arm64-root build"} <= set(
        words
    )
    for command in words:
        assert f"`{command}`" in page
    options = {"--inventory", "--runtime-matrix", "--sim-fault", "--max-leak-kib-per-hour"}
    assert all(f"`{option}`" in page for option in options)
    assert build_parser().prog == "npu-hil"


def test_the_inventory_page_has_every_key_with_its_typo(gen: ModuleType) -> None:
    page = gen.inventory_page()
    keys = gen.inventory_keys()
    assert len(keys) > 60
    for model, key, place in keys:
        error = gen.typo_error(model, key)
        assert "unknown key" in error, (place, error)
        assert error.replace("|", "\\|") in page
    assert "did you mean 'transport'?" in page


def test_each_layout_picture_is_the_codecs_layout(gen: ModuleType) -> None:
    """Every drawn cell is a byte the codec places: grey exactly where it pads, and labelled
    with the element ``locate`` gives, for every layout of every pictured target."""
    from npu_hil.harness.codec import get_layout, layout_names

    pictured = gen.pictured_layouts()
    drawn = {(target, layout) for target, layout, *_ in pictured}
    for target in gen.PICTURED:
        assert {(target, name) for name in layout_names(target)} <= drawn
    for target, name, role, shape, dtype in pictured:
        layout = get_layout(target, name, shape, dtype, role=role)
        svg = gen.layout_svg(layout, f"{target} {name} {role}")
        cells = re.findall(r'<rect [^>]*fill="([^"]+)"', svg)
        count = min(layout.nbytes, gen.COLUMNS * gen.MAX_ROWS)
        assert len(cells) == count
        grey = np.array([fill == "#d9d9d9" for fill in cells])
        assert (grey == layout.padding_mask()[:count]).all(), (target, name, role)
        labels = re.findall(r'text-anchor="middle">([^<]*)</text>', svg)
        assert len(labels) == int((~grey).sum())
        first = layout.locate(int(np.flatnonzero(~grey)[0]))
        assert labels[0] == gen._label(first)
