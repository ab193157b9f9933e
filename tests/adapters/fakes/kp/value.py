"""The kp value classes the adapter touches, with the PLUS 3.x constructor arguments."""

from __future__ import annotations

from typing import Any

import numpy as np


class DeviceGroup:
    def __init__(self, address: int) -> None:
        self.address = address


class SingleModelDescriptor:
    def __init__(self, id: int, max_raw_out_size: int) -> None:
        self.id = id
        self.max_raw_out_size = max_raw_out_size
        self.target = 4  # KP_MODEL_TARGET_CHIP_KL730


class ModelNefDescriptor:
    def __init__(self, models: list[SingleModelDescriptor]) -> None:
        self.magic = 0x5AA55AA5
        self.models = models


class FirmwareVersion:
    def __init__(self, major: int, minor: int, update: int, build: int) -> None:
        self.reserved = 0
        self.major = major
        self.minor = minor
        self.update = update
        self.build = build


class SystemInfo:
    def __init__(self, kn_number: int, firmware_version: FirmwareVersion) -> None:
        self.kn_number = kn_number
        self.firmware_version = firmware_version


class GenericInputNodeData:
    def __init__(self, buffer: bytes = b"") -> None:
        self.buffer = buffer

    @property
    def buffer_size(self) -> int:
        return len(self.buffer)


class GenericDataInferenceDescriptor:
    def __init__(
        self,
        inference_number: int = 0,
        model_id: int = 0,
        input_node_data_list: list[GenericInputNodeData] | None = None,
    ) -> None:
        self.inference_number = inference_number
        self.model_id = model_id
        self.input_node_data_list = list(input_node_data_list or [])

    @property
    def input_node_data_num(self) -> int:
        return len(self.input_node_data_list)


class GenericDataInferenceResultHeader:
    def __init__(
        self,
        inference_number: int = 0,
        crop_number: int = 0,
        num_output_node: int = 0,
        product_id: int = 0,
    ) -> None:
        self.inference_number = inference_number
        self.crop_number = crop_number
        self.num_output_node = num_output_node
        self.product_id = product_id


class GenericRawResultNDArray:
    """Its only documented member is ``buffer_size``; the bytes are private, as in PLUS."""

    def __init__(self, buffer_size: int) -> None:
        self.__buffer_size = buffer_size
        self.__raw_result_buffer = np.zeros(buffer_size, dtype=np.uint8)

    @property
    def buffer_size(self) -> int:
        return self.__buffer_size

    def _fake_fill(self, data: bytes) -> None:
        self.__raw_result_buffer[: len(data)] = np.frombuffer(data, dtype=np.uint8)


class GenericDataInferenceResult:
    def __init__(self, buffer_size: int) -> None:
        self.header = GenericDataInferenceResultHeader()
        self.raw_result = GenericRawResultNDArray(buffer_size)

    def get_member_variable_dict(self) -> dict[str, Any]:
        return {
            "header": vars(self.header),
            "raw_result": {"buffer_size": self.raw_result.buffer_size},
        }
