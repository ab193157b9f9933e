"""Rockchip RKNN2: the seed tables (RKNN2 V2.5.0, ``seeds/002_0de9e292831d3a07.txt``) and what
the vendor's compiler and runtimes were measured to do, the layouts and predictions built on them,
the report reader, the quantization model, and the :class:`~npu_hil.targets.unit.Vendor` that
registers them all.

Modules: :mod:`.tables` (platforms, input and output tables), :mod:`.convolution` (C2 and the
convolution width limits), :mod:`.text` (the tables as text), :mod:`.observed` (measured
deviations), :mod:`.layouts` (the codec layouts), :mod:`.queries` (per-query attribute
predictions), :mod:`.reported` (``rknn_tensor_attr`` → layout), :mod:`.quant` (the tensor record
and its quantization), :mod:`.unit`. The table names are re-exported here
(``from npu_hil.targets import rockchip``).
"""

from __future__ import annotations

from npu_hil.targets.conv import dilated_kernel
from npu_hil.targets.rockchip.convolution import (
    C2_DERIVED_SOURCE,
    C2_USER_GUIDE_SOURCE,
    CONV_RULES,
    ConvRule,
    NFormula,
    c2_default,
    conv_rule,
    conv_rules,
)
from npu_hil.targets.rockchip.tables import (
    CONV_KINDS,
    INPUT_ROWS,
    INPUT_TYPES,
    LAYOUTS,
    OUTPUT_ROWS,
    PLATFORM_OF,
    PLATFORMS,
    PRECISIONS,
    RK2118,
    RK3562,
    RK3566_RK3568,
    RK3576_RV1126B,
    RK3588,
    RV1103_RV1106,
    RV1103B_RV1106B,
    TARGETS,
    InputRow,
    OutputRow,
    default_first_layer,
    input_row,
    input_rows,
    input_type_of,
    output_row,
    output_rows,
    platform_of,
    precision_of,
)
from npu_hil.targets.rockchip.text import tables_text
from npu_hil.targets.rockchip.unit import UNIT

__all__ = [
    "C2_DERIVED_SOURCE",
    "C2_USER_GUIDE_SOURCE",
    "CONV_KINDS",
    "CONV_RULES",
    "INPUT_ROWS",
    "INPUT_TYPES",
    "LAYOUTS",
    "OUTPUT_ROWS",
    "PLATFORMS",
    "PLATFORM_OF",
    "PRECISIONS",
    "RK2118",
    "RK3562",
    "RK3566_RK3568",
    "RK3576_RV1126B",
    "RK3588",
    "RV1103B_RV1106B",
    "RV1103_RV1106",
    "TARGETS",
    "UNIT",
    "ConvRule",
    "InputRow",
    "NFormula",
    "OutputRow",
    "c2_default",
    "conv_rule",
    "conv_rules",
    "default_first_layer",
    "dilated_kernel",
    "input_row",
    "input_rows",
    "input_type_of",
    "output_row",
    "output_rows",
    "platform_of",
    "precision_of",
    "tables_text",
]
