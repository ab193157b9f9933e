"""``kp.inference``: generic data inference send/receive on the fake KL730.

The model is an identity in the NPU layout: output node 0 holds the input bytes, described as a
node of the NEF's layout (1W16C8B by default) and ONNX shape [1, C, H, W] with its NPU and ONNX
strides (in scalars, Kneron's convention: see ``core.node_geometry``).
"""

from __future__ import annotations

from . import _fake
from .core import LAYOUT_CODES
from .enum import ApiReturnCode, DataType
from .exception import ApiKPException
from .value import DeviceGroup, GenericDataInferenceDescriptor, GenericDataInferenceResult


def generic_data_inference_send(
    device_group: DeviceGroup, generic_inference_input_descriptor: GenericDataInferenceDescriptor
) -> None:
    desc = generic_inference_input_descriptor
    _fake.CALLS.append(
        (
            "generic_data_inference_send",
            {"model_id": desc.model_id, "inference_number": desc.inference_number},
        )
    )
    model = _fake.STATE["model"]
    if model is None:
        raise ApiKPException(ApiReturnCode.KP_ERROR_MODEL_NOT_LOADED_35, "send")
    if "send" in _fake.FAULTS or desc.model_id != model["id"]:
        raise ApiKPException(ApiReturnCode.KP_FW_INFERENCE_ERROR_101, "send")
    data = bytes(desc.input_node_data_list[0].buffer) if desc.input_node_data_list else b""
    if len(data) != model["nbytes"]:
        raise ApiKPException(ApiReturnCode.KP_FW_IMAGE_SIZE_NOT_MATCH_MODEL_INPUT_107, "send")
    _fake.STATE["queue"].append((desc.inference_number, data))


def generic_data_inference_receive(device_group: DeviceGroup) -> GenericDataInferenceResult:
    _fake.CALLS.append(("generic_data_inference_receive", {}))
    if "timeout" in _fake.FAULTS:
        raise ApiKPException(ApiReturnCode.KP_ERROR_USB_TIMEOUT_N7, "receive")
    if not _fake.STATE["queue"]:
        raise ApiKPException(ApiReturnCode.KP_FW_INFERENCE_ERROR_101, "receive: nothing sent")
    number, data = _fake.STATE["queue"].pop(0)
    model = _fake.STATE["model"]
    c, h, w = model["c"], model["h"], model["w"]
    node = _fake.pack_node(
        index=0,
        data_layout=LAYOUT_CODES[model["layout"]],
        shape=[1, c, h, w],
        stride_npu=model["stride_npu"],
        stride_onnx=[c * h * w, h * w, w, 1],
        quantized_axis=1,
        quant=[(7, int(DataType.KP_DTYPE_FLOAT32), 1.0)],
        name="identity_out",
        data=data,
    )
    raw = _fake.pack_raw_result([node])
    if "bad_raw" in _fake.FAULTS:
        raw = b"XXXX" + raw[4:]
    result = GenericDataInferenceResult(buffer_size=len(raw) + 64)
    result.raw_result._fake_fill(raw)
    result.header.inference_number = number
    result.header.num_output_node = 1
    result.header.product_id = 0x732
    return result
