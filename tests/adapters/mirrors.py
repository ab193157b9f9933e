"""The adapters' ctypes mirrors under the C headers' own names, and the constants they rely on,
for the tests that hold them to the measured ABI facts (``tests/data/abi``)."""

from __future__ import annotations

from typing import Any

from npu_hil.harness.board.adapters import hobot_native as hb
from npu_hil.harness.board.adapters import kneron as kp
from npu_hil.harness.board.adapters import rknn_native as rk

HB_STRUCTS_X3X5: dict[str, Any] = {
    "hbDNNTensorShape": hb.TensorShapeX3X5,
    "hbDNNQuantiShift": hb.QuantiShift,
    "hbDNNQuantiScale": hb.QuantiScaleX3X5,
    "hbDNNTensorProperties": hb.TensorPropertiesX3X5,
    "hbSysMem": hb.SysMem,
    "hbDNNTensor": hb.TensorX3X5,
    "hbDNNInferCtrlParam": hb.InferCtrlParam,
}
# Enums the structs hold, by their C type name (the same on both ABIs).
HB_ENUM_TYPES: dict[str, Any] = {"hbDNNQuantiType": hb.QuantiType}
HB_STRUCTS_S100: dict[str, Any] = {
    "hbDNNTensorShape": hb.TensorShapeS100,
    "hbDNNQuantiScale": hb.QuantiScaleS100,
    "hbDNNTensorProperties": hb.TensorPropertiesS100,
    "hbUCPSysMem": hb.UCPSysMem,
    "hbDNNTensor": hb.TensorS100,
    "hbUCPSchedParam": hb.UCPSchedParam,
}
# The header dimension limits the shape mirrors are built on.
HB_MAX_DIMS = {"x3x5": hb.X3X5_MAX_DIMS, "s100": hb.S100_MAX_DIMS}


def hb_header_constants(abi: hb.Abi) -> dict[str, int]:
    """Every enum value and return code ``hobot_native`` relies on, under the header's own
    names."""
    found: dict[str, int] = {
        "HB_DNN_TENSOR_MAX_DIMENSIONS": HB_MAX_DIMS[abi.name],
        "HB_SYS_MEM_CACHE_INVALIDATE": hb.HB_SYS_MEM_CACHE_INVALIDATE,
        "HB_SYS_MEM_CACHE_CLEAN": hb.HB_SYS_MEM_CACHE_CLEAN,
        abi.timeout_name: abi.timeout_code,
    }
    for code, name in abi.tensor_types.items():
        prefix = "HB_DNN_IMG_TYPE_" if name in hb.IMAGE_TYPES else "HB_DNN_TENSOR_TYPE_"
        found[prefix + name] = code
    for code, name in abi.quanti_types.items():
        found[name] = code
    if abi.has_aligned_shape:
        found["HB_DNN_SUCCESS"] = hb.HB_DNN_SUCCESS
        for code, name in hb.LAYOUTS.items():
            found["HB_DNN_LAYOUT_" + name] = code
    return found


KP_STRUCTS: dict[str, Any] = {
    "kp_tensor_shape_info_v1_t": kp.KpTensorShapeInfoV1,
    "kp_tensor_shape_info_v2_t": kp.KpTensorShapeInfoV2,
    "kp_tensor_shape_info_data_t": kp.KpTensorShapeInfoData,
    "kp_tensor_shape_info_t": kp.KpTensorShapeInfo,
    "kp_scale_t": kp.KpScale,
    "kp_quantized_fixed_point_descriptor_t": kp.KpQuantizedFixedPointDescriptor,
    "kp_quantization_parameters_v1_t": kp.KpQuantizationParametersV1,
    "kp_quantization_parameters_data_t": kp.KpQuantizationParametersData,
    "kp_quantization_parameters_t": kp.KpQuantizationParameters,
    "kp_tensor_descriptor_t": kp.KpTensorDescriptor,
    "kp_inf_raw_fixed_node_metadata_t": kp.KpInfRawFixedNodeMetadata,
    "kp_inf_raw_fixed_node_output_t": kp.KpInfRawFixedNodeOutput,
}

RKNN_STRUCTS: dict[str, Any] = {
    "rknn_input_output_num": rk.RknnInputOutputNum,
    "rknn_tensor_attr": rk.RknnTensorAttr,
    "rknn_tensor_mem": rk.RknnTensorMem,
    "rknn_sdk_version": rk.RknnSdkVersion,
}
