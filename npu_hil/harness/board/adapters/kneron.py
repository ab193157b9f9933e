"""``kneron``: Kneron PLUS (``kp``) for a KL730 on USB, with the raw fixed-point NPU node bytes read
through ``libkplus`` by ctypes. The flow, the raw-node call and the options:
``docs/runtime/agent.md`` (Adapters).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import glob
import importlib
import operator
import os
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

# Relative: loaded as adapters.<name> or npu_hil...adapters.<name>, the base is the one beside it.
from .base import (
    Adapter,
    AdapterError,
    CLibrary,
    InputTensor,
    RunOutput,
    TensorOut,
    describe,
    packed_bytes,
    pick_outputs,
    timed,
)

# kp_model_tensor_data_layout_t as the PLUS 3.2 kp_struct.h numbers it (0-12 as in 3.1, 13-17 the
# HW* input formats added later). Only a fallback: the installed kp's own enum is asked first.
_LAYOUT_NAMES = (
    "UNKNOWN 4W4C8B 1W16C8B 16W1C8B 8W1C16B 4W4C8BHL 1W16C8BHL 16W1C8BHL RAW_8B RAW_16B "
    "RAW_FLOAT 1W16C8B_CH_COMPACT 1W16C8BHL_CH_COMPACT "
    "HW4C8B_KEEP_A HW4C8B_DROP_A HW1C8B HW1C16B_LE HW1C16B_BE"
)
DATA_LAYOUTS = dict(enumerate(_LAYOUT_NAMES.split()))
LAYOUT_PREFIX = "KP_MODEL_TENSOR_DATA_LAYOUT_"
_SIXTEEN_BIT = (
    "8W1C16B 4W4C8BHL 1W16C8BHL 16W1C8BHL 1W16C8BHL_CH_COMPACT RAW_16B HW1C16B_LE HW1C16B_BE"
)
SIXTEEN_BIT_LAYOUTS = tuple(_SIXTEEN_BIT.split())
# kp_dtype_t, for the scale of a quantized_fixed_point_descriptor.
_DTYPE_NAMES = "UNKNOWN INT8 INT16 INT32 INT64 UINT8 UINT16 UINT32 UINT64 FLOAT32 BFLOAT16 DOUBLE64"
DTYPES = dict(enumerate(_DTYPE_NAMES.split()))
# kp_scale_t's member by scale dtype (BFLOAT16 has no numeric value to report).
SCALE_FIELDS = {
    t: "scale_" + t.lower() for t in DTYPES.values() if t not in ("UNKNOWN", "BFLOAT16")
}
# KP_API_RETURN_CODE values that mean "took too long" (USB, WinUSB, firmware NPU timeout).
TIMEOUT_CODES = (-7, -207, 103)
MAX_ITEMS = 1 << 16  # bound on any array length read through a pointer the library hands out

# kp_struct.h (PLUS 3.x), the part kp_inf_raw_fixed_node_output_t needs. PLUS declares almost
# every struct __attribute__((packed, aligned(4))): no member is placed beyond a 4-byte boundary
# (pointers and the 8-byte kp_scale_t union sit at offsets 4, 12 ...) and each struct is 4-aligned.
# ctypes says the same with _pack_ = 4 (a member's alignment is min(natural, 4)); no member here is
# narrower than 4 bytes except inside kp_scale_t, which the header leaves unpacked (8-aligned).
# tests/data/abi/kp_struct-plus-3.1.1.json holds sizeof/_Alignof/offsetof of the real header
# compiled for aarch64; the tests hold these mirrors to it.


class _PackedStruct(ctypes.Structure):
    """A ``packed, aligned(4)`` struct: ctypes reads ``_pack_`` and ``_layout_`` from the class
    that declares ``_fields_``, inherited ones included."""

    _pack_ = 4
    _layout_ = "ms"  # with _pack_ set, what newer Pythons ask for (older ones ignore it)


class _PackedUnion(ctypes.Union):
    """A ``packed, aligned(4)`` union."""

    _pack_ = 4
    _layout_ = "ms"


# Descriptor versions the reader branches on (kp_struct.h enums).
SHAPE_INFO_VERSION_1 = 1  # KP_MODEL_TENSOR_SHAPE_INFO_VERSION_1
SHAPE_INFO_VERSION_2 = 2  # KP_MODEL_TENSOR_SHAPE_INFO_VERSION_2
QUANTIZATION_PARAMS_VERSION_1 = 1  # KP_MODEL_QUANTIZATION_PARAMS_VERSION_1


class KpTensorShapeInfoV1(_PackedStruct):
    """``kp_tensor_shape_info_v1_t`` (KL520/KL720/KL630)."""

    _fields_ = [
        ("shape_npu_len", ctypes.c_uint32),
        ("shape_npu", ctypes.POINTER(ctypes.c_int32)),
        ("shape_onnx_len", ctypes.c_uint32),
        ("shape_onnx", ctypes.POINTER(ctypes.c_int32)),
        ("axis_permutation_len", ctypes.c_uint32),
        ("axis_permutation_onnx_to_npu", ctypes.POINTER(ctypes.c_int32)),
    ]


class KpTensorShapeInfoV2(_PackedStruct):
    """``kp_tensor_shape_info_v2_t`` (KL730): strides in scalars."""

    _fields_ = [
        ("shape_len", ctypes.c_uint32),
        ("shape", ctypes.POINTER(ctypes.c_int32)),
        ("stride_onnx", ctypes.POINTER(ctypes.c_uint32)),
        ("stride_npu", ctypes.POINTER(ctypes.c_uint32)),
    ]


class KpTensorShapeInfoData(_PackedUnion):
    _fields_ = [("v1", KpTensorShapeInfoV1), ("v2", KpTensorShapeInfoV2)]


class KpTensorShapeInfo(_PackedStruct):
    _fields_ = [("version", ctypes.c_uint32), ("tensor_shape_info_data", KpTensorShapeInfoData)]


class KpScale(ctypes.Union):
    """``kp_scale_t``: the one union the header does not pack (8 bytes, 8-aligned)."""

    _fields_ = [
        ("scale_int8", ctypes.c_int8),
        ("scale_int16", ctypes.c_int16),
        ("scale_int32", ctypes.c_int32),
        ("scale_int64", ctypes.c_int64),
        ("scale_uint8", ctypes.c_uint8),
        ("scale_uint16", ctypes.c_uint16),
        ("scale_uint32", ctypes.c_uint32),
        ("scale_uint64", ctypes.c_uint64),
        ("scale_bfloat16", ctypes.c_uint16),
        ("scale_float32", ctypes.c_float),
        ("scale_double64", ctypes.c_double),
    ]


class KpQuantizedFixedPointDescriptor(_PackedStruct):
    _fields_ = [("radix", ctypes.c_int32), ("scale_dtype", ctypes.c_uint32), ("scale", KpScale)]


class KpQuantizationParametersV1(_PackedStruct):
    _fields_ = [
        ("quantized_axis", ctypes.c_uint32),
        ("quantized_fixed_point_descriptor_num", ctypes.c_uint32),
        ("quantized_fixed_point_descriptor", ctypes.POINTER(KpQuantizedFixedPointDescriptor)),
    ]


class KpQuantizationParametersData(_PackedUnion):
    _fields_ = [("v1", KpQuantizationParametersV1)]


class KpQuantizationParameters(_PackedStruct):
    _fields_ = [
        ("version", ctypes.c_uint32),
        ("quantization_parameters_data", KpQuantizationParametersData),
    ]


class KpTensorDescriptor(_PackedStruct):
    _fields_ = [
        ("index", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("data_layout", ctypes.c_uint32),
        ("tensor_shape_info", KpTensorShapeInfo),
        ("quantization_parameters", KpQuantizationParameters),
    ]


class KpInfRawFixedNodeMetadata(_PackedStruct):
    _fields_ = [("tensor_descriptor", KpTensorDescriptor)]


class KpInfRawFixedNodeOutput(_PackedStruct):
    """``kp_inf_raw_fixed_node_output_t``: ``data`` points into the receive buffer."""

    _fields_ = [
        ("metadata", KpInfRawFixedNodeMetadata),
        ("num_data", ctypes.c_uint32),
        ("data", ctypes.c_void_p),
    ]


# The raw node call: receive buffer -> libkplus -> bytes and descriptor


V1_ONLY = ("shape_npu", "axis_permutation_onnx_to_npu")


@dataclass
class RawNode:
    """One output node as ``kp_generic_inference_retrieve_raw_fixed_node`` describes it."""

    index: int
    name: str
    data_layout_code: int
    data: bytes
    num_data: int
    shape_info_version: int
    shape: list[int]
    stride_npu: list[int] | None = None
    stride_onnx: list[int] | None = None
    shape_npu: list[int] | None = None
    axis_permutation_onnx_to_npu: list[int] | None = None
    quantized_axis: int | None = None
    radix: list[int] = field(default_factory=list)
    scale: list[float | None] = field(default_factory=list)
    scale_dtype: list[str] = field(default_factory=list)


class KplusLibrary(CLibrary):
    """``libkplus`` with the raw-node call and its release bound from ``kp_inference.h``."""

    def __init__(self, path: str) -> None:
        super().__init__("fetch", "libkplus; set adapter_options.kplus_library")
        self.open(path)
        node = ctypes.POINTER(KpInfRawFixedNodeOutput)
        args = [ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint8)]
        self.bind("kp_generic_inference_retrieve_raw_fixed_node", args, node)
        self.has_release = self.bind("kp_release_raw_fixed_node_output", [node], None, False)


def find_kplus_library(kp: Any) -> str:
    """libkplus beside the ``kp`` package (the SDK wheel ships it there), else on the loader's
    search path."""
    package_dir = os.path.dirname(getattr(kp, "__file__", "") or "")
    if package_dir:
        for pattern in ("libkplus*.so*", "lib/libkplus*.so*", "*/libkplus*.so*"):
            hits = sorted(glob.glob(os.path.join(package_dir, pattern)))
            if hits:
                return hits[0]
    found = ctypes.util.find_library("kplus")
    if found:
        return found
    raise AdapterError(
        "UnsupportedError",
        "fetch",
        "libkplus not found beside the kp package nor on the loader path; "
        "set adapter_options.kplus_library",
    )


def raw_result_bytes(result: Any) -> bytes:
    """The receive buffer of a ``GenericDataInferenceResult``.

    ``raw_result`` is a ``GenericRawResultNDArray`` whose documented surface is only
    ``buffer_size``; its bytes sit in an attribute the docs do not name. So: the object itself if
    it is a buffer, else the first attribute that is one and is at least ``buffer_size`` long.
    Unverified against a real PLUS install.
    """
    raw = getattr(result, "raw_result", result)
    size = getattr(raw, "buffer_size", None)
    size = int(size) if isinstance(size, (int, np.integer)) and size > 0 else None
    candidates = [raw]
    if hasattr(raw, "__dict__"):
        candidates += list(vars(raw).values())
    for candidate in candidates:
        found = _as_bytes(candidate)
        if found is not None and (size is None or len(found) >= size):
            return found[:size] if size else found
    raise AdapterError(
        "UnsupportedError",
        "fetch",
        f"cannot find the bytes of {type(raw).__name__} (buffer_size {size}); this kp keeps "
        "its receive buffer where the adapter does not look",
    )


def _as_bytes(obj: Any) -> bytes | None:
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj)
    if isinstance(obj, np.ndarray):
        return np.ascontiguousarray(obj).tobytes()
    if isinstance(obj, ctypes.Array):
        return bytes(memoryview(obj).cast("B"))
    if hasattr(obj, "__array_interface__"):
        return np.ascontiguousarray(np.asarray(obj)).tobytes()
    return None


def _ints(pointer: Any, length: int) -> list[int]:
    if not pointer or length <= 0:
        return []
    return [int(pointer[i]) for i in range(min(int(length), MAX_ITEMS))]


def _scale_value(scale: KpScale, dtype: str) -> float | None:
    if dtype == "BFLOAT16":
        # bfloat16 is the top half of a float32.
        return float(np.array([int(scale.scale_bfloat16) << 16], np.uint32).view(np.float32)[0])
    name = SCALE_FIELDS.get(dtype)
    return float(getattr(scale, name)) if name else None  # an unknown type: no value to give


def _read_node(node: KpInfRawFixedNodeOutput) -> RawNode:
    desc = node.metadata.tensor_descriptor
    info = desc.tensor_shape_info
    version = int(info.version)
    raw = RawNode(
        index=int(desc.index),
        name=(desc.name or b"").decode("utf-8", "replace"),
        data_layout_code=int(desc.data_layout),
        # num_data counts the bytes of the NPU buffer (for the KL730 the library sets it from
        # the node's npu_data_len); read from a real board, this is the first thing to confirm.
        data=ctypes.string_at(node.data, int(node.num_data)) if node.data else b"",
        num_data=int(node.num_data),
        shape_info_version=version,
        shape=[],
    )
    if version == SHAPE_INFO_VERSION_2:
        v2 = info.tensor_shape_info_data.v2
        n = int(v2.shape_len)
        raw.shape = _ints(v2.shape, n)
        raw.stride_npu = _ints(v2.stride_npu, n)
        raw.stride_onnx = _ints(v2.stride_onnx, n)
    elif version == SHAPE_INFO_VERSION_1:
        v1 = info.tensor_shape_info_data.v1
        raw.shape = _ints(v1.shape_onnx, v1.shape_onnx_len)
        raw.shape_npu = _ints(v1.shape_npu, v1.shape_npu_len)
        raw.axis_permutation_onnx_to_npu = _ints(
            v1.axis_permutation_onnx_to_npu, v1.axis_permutation_len
        )
    quant = desc.quantization_parameters
    if int(quant.version) == QUANTIZATION_PARAMS_VERSION_1:
        v1q = quant.quantization_parameters_data.v1
        raw.quantized_axis = int(v1q.quantized_axis)
        count = min(int(v1q.quantized_fixed_point_descriptor_num), MAX_ITEMS)
        descriptors = v1q.quantized_fixed_point_descriptor
        for i in range(count if descriptors else 0):
            d = descriptors[i]
            dtype = DTYPES.get(int(d.scale_dtype), f"UNKNOWN({int(d.scale_dtype)})")
            raw.radix.append(int(d.radix))
            raw.scale.append(_scale_value(d.scale, dtype))
            raw.scale_dtype.append(dtype)
    return raw


def retrieve_raw_fixed_nodes(
    library: KplusLibrary, receive_buffer: bytes, count: int
) -> list[RawNode]:
    """Every output node of one receive buffer, raw, through libkplus. The C call returns a
    pointer into the buffer, so the buffer stays alive until each node has been copied out."""
    buffer = (ctypes.c_uint8 * max(1, len(receive_buffer))).from_buffer_copy(
        receive_buffer or b"\0"
    )
    nodes = []
    for index in range(count):
        pointer = library.call("kp_generic_inference_retrieve_raw_fixed_node", index, buffer)
        if not pointer:
            raise AdapterError(
                "DeviceError",
                "fetch",
                f"kp_generic_inference_retrieve_raw_fixed_node({index}) returned NULL",
            )
        try:
            nodes.append(_read_node(pointer.contents))
        finally:
            if library.has_release:
                library.call("kp_release_raw_fixed_node_output", pointer)
    return nodes


# The adapter


@dataclass
class KneronModel:
    path: str
    descriptor: Any
    model_id: int
    released: bool = False


def _api_code(exc: BaseException) -> int | None:
    for value in (getattr(exc, "api_return_code", None), *getattr(exc, "args", ())[:1]):
        try:
            return int(value) if value is not None else None
        except (TypeError, ValueError):
            continue
    return None


def _layout_name(kp: Any, code: int) -> str:
    enum = getattr(kp, "ModelTensorDataLayout", None)
    if enum is not None:
        try:
            name = str(enum(code).name)
            return name[len(LAYOUT_PREFIX) :] if name.startswith(LAYOUT_PREFIX) else name
        except (ValueError, TypeError):
            pass
    return DATA_LAYOUTS.get(code, f"UNKNOWN({code})")


class KneronAdapter(Adapter):
    """Kneron PLUS generic data inference on a USB KL730; raw NPU node bytes with descriptors."""

    name = "kneron"
    canary_reason = (
        "the KL730's output nodes are written in the device's own memory and come back "
        "over USB in the receive buffer Kneron PLUS fills "
        "(generic_data_inference_receive); the host cannot fill the device's memory "
        "first."
    )

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__(options)
        self._kp: Any = None
        self._device: Any = None
        self._kplus: KplusLibrary | None = None
        self._on_device: KneronModel | None = None
        self._live = 0
        self._inference_number = 0
        self._versions: dict[str, str] = {}

    # -- plumbing -------------------------------------------------------------------------

    def kp(self) -> Any:
        if self._kp is None:
            try:
                self._kp = importlib.import_module("kp")
            except ImportError as exc:
                raise AdapterError(
                    "UnsupportedError",
                    "init",
                    f"Kneron PLUS (kp) is not importable here: {exc} (it comes with the SDK)",
                ) from exc
        return self._kp

    def _vendor(self, stage: str, call: str, what: str = "", **kwargs: Any) -> Any:
        """``kp.<call>`` (``core.connect_devices`` ...); its exceptions (ApiKPException with a
        KP_API_RETURN_CODE) become typed errors of this stage, naming ``kp.<call><what>``."""
        func = operator.attrgetter(call)(self.kp())
        what = f"kp.{call}{what}"
        try:
            return func(**kwargs)
        except AdapterError:
            raise
        except Exception as exc:
            code = _api_code(exc)
            kind = "TimeoutError" if code in TIMEOUT_CODES else "DeviceError"
            raise AdapterError(kind, stage, f"{what}: {describe(exc)}", code) from exc

    def device(self) -> Any:
        if self._device is not None:
            return self._device
        kp = self.kp()
        port = int(self.options.get("port_id", 0))
        device = self._vendor("init", "core.connect_devices", usb_port_ids=[port])
        try:
            if "timeout_ms" in self.options:
                self._vendor(
                    "init",
                    "core.set_timeout",
                    device_group=device,
                    milliseconds=int(self.options["timeout_ms"]),
                )
            scpu = self.options.get("scpu_firmware")
            if scpu:
                self._vendor(
                    "init",
                    "core.load_firmware_from_file",
                    device_group=device,
                    scpu_fw_path=str(scpu),
                    ncpu_fw_path=str(self.options.get("ncpu_firmware") or ""),
                )
        except AdapterError:
            self._disconnect(device)
            raise
        self._device = device
        self._versions.update(self._device_versions(kp, device, port))
        return device

    def _device_versions(self, kp: Any, device: Any, port: int) -> dict[str, str]:
        found: dict[str, str] = {}
        try:
            info = kp.core.get_system_info(device_group=device, usb_port_id=port)
        except Exception:  # informative only; some firmware answers nothing before a model
            return found
        firmware = getattr(info, "firmware_version", None)
        if firmware is not None:
            parts = [getattr(firmware, k, None) for k in ("major", "minor", "update", "build")]
            found["firmware"] = (
                ".".join(str(p) for p in parts) if None not in parts else str(firmware)
            )
        kn = getattr(info, "kn_number", None)
        if kn is not None:
            found["kn_number"] = f"{int(kn):#x}" if isinstance(kn, int) else str(kn)
        return found

    def _disconnect(self, device: Any) -> None:
        self._vendor("release", "core.disconnect_devices", device_group=device)

    def versions(self) -> dict[str, str]:
        kp = self.kp()
        self.device()  # the firmware version and KN number come from the connected device
        found = dict(self._versions)
        with contextlib.suppress(Exception):  # informative only
            found["kneron_plus"] = str(kp.core.get_version())
        return found

    # -- load / release -------------------------------------------------------------------

    def _upload(self, path: str) -> Any:
        """The NEF onto the device (which holds one at a time); its descriptor."""
        return self._vendor(
            "load",
            "core.load_model_from_file",
            f"({path!r})",
            device_group=self.device(),
            file_path=path,
        )

    def load(self, model_path: str) -> KneronModel:
        descriptor = self._upload(model_path)
        models = list(getattr(descriptor, "models", []) or [])
        if "model_id" in self.options:
            model_id = int(self.options["model_id"])
            ids = [int(getattr(m, "id", -1)) for m in models]
            if models and model_id not in ids:
                raise AdapterError(
                    "LayoutError", "load", f"model_id {model_id} not in the NEF ({ids})"
                )
        elif models:
            model_id = int(models[0].id)
        else:
            raise AdapterError(
                "DeviceError", "load", f"{model_path}: the NEF descriptor lists no model"
            )
        model = KneronModel(path=model_path, descriptor=descriptor, model_id=model_id)
        self._on_device = model
        self._live += 1
        return model

    def release(self, model: Any) -> None:
        if isinstance(model, KneronModel) and not model.released:
            model.released = True
            self._live -= 1
            if self._on_device is model:
                self._on_device = None
            if self._live <= 0 and self._device is not None:
                device, self._device = self._device, None
                self._disconnect(device)

    # -- run ------------------------------------------------------------------------------

    def run(self, model: Any, inputs: list[InputTensor], outputs: list[str] | None) -> RunOutput:
        self.loaded(model, KneronModel)
        kp = self.kp()
        device = self.device()
        timings = {"copy_s": 0.0, "run_s": 0.0, "reloads": 0.0}
        if self._on_device is not model:
            # The device holds one NEF: bring this one back before running it.
            with timed(timings, "load_s"):
                self._upload(model.path)
            self._on_device = model
            timings["reloads"] = 1.0

        with timed(timings, "copy_s"):
            takes = "the KL730 takes its NPU layout"
            nodes = [
                kp.GenericInputNodeData(buffer=packed_bytes(inp, takes).tobytes()) for inp in inputs
            ]
            self._inference_number += 1
            descriptor = kp.GenericDataInferenceDescriptor(
                model_id=model.model_id,
                inference_number=self._inference_number,
                input_node_data_list=nodes,
            )

        with timed(timings, "run_s"):
            self._vendor(
                "run",
                "inference.generic_data_inference_send",
                device_group=device,
                generic_inference_input_descriptor=descriptor,
            )
            result = self._vendor(
                "run", "inference.generic_data_inference_receive", device_group=device
            )

        with timed(timings, "copy_s"):
            count = int(result.header.num_output_node)
            raw_nodes = retrieve_raw_fixed_nodes(self.kplus(), raw_result_bytes(result), count)
            tensors = [self._tensor(kp, node) for node in raw_nodes]
            tensors = [tensors[i] for i in pick_outputs([t.name for t in tensors], outputs)]
        return RunOutput(inputs=[], outputs=tensors, timings=timings)

    def kplus(self) -> KplusLibrary:
        if self._kplus is None:
            path = self.options.get("kplus_library") or find_kplus_library(self.kp())
            self._kplus = KplusLibrary(path)
            self._versions["libkplus"] = path
        return self._kplus

    def _tensor(self, kp: Any, node: RawNode) -> TensorOut:
        layout = _layout_name(kp, node.data_layout_code)
        dtype = "int16" if layout in SIXTEEN_BIT_LAYOUTS else "int8"
        dtype = "float32" if layout == "RAW_FLOAT" else dtype
        # Every field of the node but its bytes; the V1 shape fields only where it has them.
        attributes: dict[str, Any] = {
            f.name: getattr(node, f.name)
            for f in fields(node)
            if f.name != "data" and (node.shape_npu is not None or f.name not in V1_ONLY)
        }
        attributes.update(data_layout=layout, inputs_read_back=False)
        return TensorOut(
            name=node.name or f"node{node.index}",
            data=np.frombuffer(node.data, dtype=np.uint8).copy(),
            layout=layout,
            dtype=dtype,
            shape=list(node.shape),
            attributes=attributes,
        )


ADAPTER = KneronAdapter
