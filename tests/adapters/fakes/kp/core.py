"""``kp.core``: connect, firmware, model upload, versions."""

from __future__ import annotations

import math

from . import _fake
from .enum import ApiReturnCode
from .exception import ApiKPException
from .value import (
    DeviceGroup,
    FirmwareVersion,
    ModelNefDescriptor,
    SingleModelDescriptor,
    SystemInfo,
)

LAYOUT_CODES = {"1W16C8B": 2, "16W1C8B": 3, "RAW_8B": 8}


def node_geometry(layout: str, c: int, h: int, w: int) -> tuple[list[int], int]:
    """``stride_npu`` (in scalars) and the byte size of a [1, C, H, W] int8 node, written from
    Kneron's convention (its KL730 ONNX/NPU conversion note), not from the harness codec: in
    1W16C8B the strides describe ONE group of 16 channels and the groups follow each other
    (group stride = the largest stride * size of the axes whose stride is not 1); 16W1C8B pads
    rows to 16 columns; RAW_8B is flat NCHW."""
    if layout == "1W16C8B":
        return [h * w * 16, 1, w * 16, 16], math.ceil(c / 16) * h * w * 16
    if layout == "16W1C8B":
        row = math.ceil(w / 16) * 16
        return [c * h * row, h * row, row, 1], c * h * row
    if layout == "RAW_8B":
        return [c * h * w, h * w, w, 1], math.ceil(c * h * w / 16) * 16
    raise ApiKPException(ApiReturnCode.KP_ERROR_INVALID_MODEL_21, f"fake NEF layout {layout}")


def get_version() -> str:
    return "3.1.2 (fake)"


def connect_devices(usb_port_ids: list[int]) -> DeviceGroup:
    _fake.CALLS.append(("connect_devices", {"usb_port_ids": list(usb_port_ids)}))
    if "connect" in _fake.FAULTS:
        raise ApiKPException(ApiReturnCode.KP_ERROR_DEVICE_NOT_EXIST_10, "connect_devices")
    _fake.STATE["connected"] += 1
    return DeviceGroup(address=0x1000 + _fake.STATE["connected"])


def disconnect_devices(device_group: DeviceGroup) -> None:
    _fake.CALLS.append(("disconnect_devices", {}))
    _fake.STATE["connected"] -= 1
    _fake.STATE["model"] = None


def set_timeout(device_group: DeviceGroup, milliseconds: int) -> None:
    _fake.CALLS.append(("set_timeout", {"milliseconds": milliseconds}))


def load_firmware_from_file(
    device_group: DeviceGroup, scpu_fw_path: str, ncpu_fw_path: str
) -> None:
    _fake.CALLS.append(
        ("load_firmware_from_file", {"scpu_fw_path": scpu_fw_path, "ncpu_fw_path": ncpu_fw_path})
    )
    if "firmware" in _fake.FAULTS:
        raise ApiKPException(ApiReturnCode.KP_ERROR_FW_LOAD_FAILED_34, "load_firmware_from_file")
    _fake.STATE["firmware"] = scpu_fw_path


def get_system_info(device_group: DeviceGroup, usb_port_id: int) -> SystemInfo:
    return SystemInfo(kn_number=0x730A1B2C, firmware_version=FirmwareVersion(2, 3, 0, 1234))


def load_model_from_file(device_group: DeviceGroup, file_path: str) -> ModelNefDescriptor:
    """NEF here is text: ``FAKE-NEF channels=C height=H width=W layout=1W16C8B model_id=N``."""
    _fake.CALLS.append(("load_model_from_file", {"file_path": file_path}))
    if "load_model" in _fake.FAULTS:
        raise ApiKPException(ApiReturnCode.KP_ERROR_INVALID_MODEL_21, "load_model_from_file")
    try:
        with open(file_path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ApiKPException(ApiReturnCode.KP_ERROR_INVALID_MODEL_21, str(exc)) from exc
    if not text.startswith("FAKE-NEF"):
        raise ApiKPException(ApiReturnCode.KP_ERROR_INVALID_MODEL_21, "not a NEF")
    fields = dict(tok.partition("=")[::2] for tok in text.split()[1:])
    model = {
        "path": file_path,
        "c": int(fields.get("channels", 3)),
        "h": int(fields.get("height", 4)),
        "w": int(fields.get("width", 5)),
        "layout": fields.get("layout", "1W16C8B"),
        "id": int(fields.get("model_id", 211)),
    }
    model["stride_npu"], model["nbytes"] = node_geometry(
        model["layout"], model["c"], model["h"], model["w"]
    )
    _fake.STATE["model"] = model
    return ModelNefDescriptor([SingleModelDescriptor(id=model["id"], max_raw_out_size=4096)])
