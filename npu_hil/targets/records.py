"""Checking a device-reported tensor record where it enters a vendor unit from the harness: the
type of each field the unit reads, so its code after the check reads the vendor's TypedDict."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from npu_hil.harness.errors import LayoutError

INTEGER = (int, np.integer)
NUMBER = (int, float, np.integer, np.floating)
NAME_OR_CODE = (str, int, np.integer)
"""An enum field: the runtime's number, or its name (the adapters and the simulators)."""
SEQUENCE = (list, tuple)


def check_fields(
    what: str, reported: Mapping[str, object], kinds: Mapping[str, tuple[type, ...]]
) -> None:
    """LayoutError for a record that is no mapping or has a field of ``kinds`` of another type;
    a field it lacks fails where it is read (a reader's default, or the reader's error)."""
    if not isinstance(reported, Mapping):
        raise LayoutError(f"{what}: expected a mapping of fields, got {reported!r}")
    for key, kind in kinds.items():
        if key in reported and not isinstance(reported[key], kind):
            names = " or ".join(k.__name__ for k in kind)
            raise LayoutError(f"{what}: {key} {reported[key]!r} is not {names}")
