"""Fake Kneron PLUS ``kp`` for the adapter tests: the subset of the PLUS 3.x Python API the
``kneron`` adapter uses (``kp.core``, ``kp.inference``, the value classes and enums), serving one
KL730 "device" whose model is an identity in the NPU layout.

The receive buffer it hands out is in this fake's own format (see ``_fake.pack_raw_result``),
which ``fake_kplus.c`` parses: the adapter treats the buffer as opaque bytes for libkplus, as it
does with the real one.
"""

from __future__ import annotations

from . import core, inference
from .enum import ApiReturnCode, DataType, ModelTensorDataLayout
from .exception import ApiKPException
from .value import (
    DeviceGroup,
    GenericDataInferenceDescriptor,
    GenericDataInferenceResult,
    GenericDataInferenceResultHeader,
    GenericInputNodeData,
    GenericRawResultNDArray,
    ModelNefDescriptor,
    SingleModelDescriptor,
)

__all__ = [
    "ApiKPException",
    "ApiReturnCode",
    "DataType",
    "DeviceGroup",
    "GenericDataInferenceDescriptor",
    "GenericDataInferenceResult",
    "GenericDataInferenceResultHeader",
    "GenericInputNodeData",
    "GenericRawResultNDArray",
    "ModelNefDescriptor",
    "ModelTensorDataLayout",
    "SingleModelDescriptor",
    "core",
    "inference",
]
