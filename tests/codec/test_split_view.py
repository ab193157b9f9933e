"""The codec's split view (unpacking writes through it into the caller's array): never a copy,
on every numpy the harness runs with, and no deprecated way of getting one (numpy 2.5 deprecates
setting ``ndarray.shape``; the project's filterwarnings make that an error)."""

from __future__ import annotations

import numpy as np
import pytest

from npu_hil.harness.codec.buffers import split_view


def test_writes_through_the_split_view_reach_the_array() -> None:
    array = np.zeros((4, 6), np.uint8)[:, 1:5]  # a strided view, as an output's piece is
    view = split_view(array, (2, 2, 2, 2))
    view[1, 0, 1, 1] = 7
    assert array[2, 3] == 7
    assert split_view(array[:0], (0, 2, 2)).shape == (0, 2, 2)


def test_a_shape_that_needs_a_copy_is_refused() -> None:
    array = np.zeros((6, 4), np.uint8).T  # merging its axes would copy
    with pytest.raises(ValueError, match="without a copy"):
        split_view(array, (24,))
