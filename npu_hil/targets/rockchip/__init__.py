"""Rockchip RKNN2: the seed tables (RKNN2 V2.5.0, ``seeds/002_0de9e292831d3a07.txt``), what the
vendor's compiler and runtimes were measured to do, and the vendor unit (:mod:`.unit`) built on
them. The table lookups are re-exported here (``from npu_hil.targets import rockchip``).
"""

from __future__ import annotations

from npu_hil.targets.conv import dilated_kernel
from npu_hil.targets.rockchip.tables import (
    CONV_RULES,
    INPUT_ROWS,
    INPUT_TYPES,
    OUTPUT_ROWS,
    PLATFORM_OF,
    PRECISIONS,
    TARGETS,
    InputRow,
    OutputRow,
    c2_default,
    default_first_layer,
    input_row,
    input_rows,
    input_type_of,
    output_row,
    output_rows,
    precision_of,
    tables_text,
)

__all__ = [
    "CONV_RULES",
    "INPUT_ROWS",
    "INPUT_TYPES",
    "OUTPUT_ROWS",
    "PLATFORM_OF",
    "PRECISIONS",
    "TARGETS",
    "InputRow",
    "OutputRow",
    "c2_default",
    "default_first_layer",
    "dilated_kernel",
    "input_row",
    "input_rows",
    "input_type_of",
    "output_row",
    "output_rows",
    "precision_of",
    "tables_text",
]
