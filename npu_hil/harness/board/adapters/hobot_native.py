"""``hobot_native``: Horizon / D-Robotics BPU runtime (``libdnn``) through ctypes, raw aligned
buffers with the full ``hbDNNTensorProperties``. The two ABIs (``x3x5``, ``s100``), their call
sequences, the options and the return codes: ``docs/runtime/agent.md`` (Adapters).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from functools import partial
from typing import Any, List, TypedDict, cast

import numpy as np

# Relative: loaded as adapters.<name> or npu_hil...adapters.<name>, the base is the one beside it.
from .base import (
    Adapter,
    AdapterError,
    CanaryFill,
    CLibrary,
    InputTensor,
    RunOutput,
    TensorOut,
    canary_bytes,
    match_inputs,
    match_outputs,
    packed_bytes,
    pick_model,
    release_all,
    timed,
    undo_on_failure,
)

FIRST_ADDRESS_ALIGNMENT = 32
# hbSysMemFlushFlag (X3/X5) and hbUCPSysMem's flush flags (S100) share their values.
HB_SYS_MEM_CACHE_INVALIDATE = 1
HB_SYS_MEM_CACHE_CLEAN = 2
HB_DNN_SUCCESS = 0
# The task-timeout return codes of hbDNNWaitTaskDone (hb_dnn_status.h) and hbUCPWaitTaskDone
# (the UCP status header).
HB_DNN_TIMEOUT = -6000008
HB_UCP_TASK_TIMEOUT = -200002
# Arrays read through pointers the runtime hands out are bounded: a corrupt length must not
# turn into a multi-gigabyte read.
MAX_QUANT_PARAMS = 1 << 16

# hb_dnn.h / hb_sys.h (RDK X3, X5)

X3X5_MAX_DIMS = 8


class TensorShapeX3X5(ctypes.Structure):
    """``hbDNNTensorShape`` (8 dimensions)."""

    _fields_ = [
        ("dimensionSize", ctypes.c_int32 * X3X5_MAX_DIMS),
        ("numDimensions", ctypes.c_int32),
    ]


class QuantiShift(ctypes.Structure):
    _fields_ = [("shiftLen", ctypes.c_int32), ("shiftData", ctypes.POINTER(ctypes.c_uint8))]


class QuantiScaleX3X5(ctypes.Structure):
    """``hbDNNQuantiScale`` with int8 zero points."""

    _fields_ = [
        ("scaleLen", ctypes.c_int32),
        ("scaleData", ctypes.POINTER(ctypes.c_float)),
        ("zeroPointLen", ctypes.c_int32),
        ("zeroPointData", ctypes.POINTER(ctypes.c_int8)),
    ]


# hbDNNQuantiType is a plain C enum: int-sized (4 bytes) on both ABIs.
QuantiType = ctypes.c_int


class TensorPropertiesX3X5(ctypes.Structure):
    """``hbDNNTensorProperties`` of RDK X3/X5 (hbDNNQuantiType is an int-sized enum)."""

    _fields_ = [
        ("validShape", TensorShapeX3X5),
        ("alignedShape", TensorShapeX3X5),
        ("tensorLayout", ctypes.c_int32),
        ("tensorType", ctypes.c_int32),
        ("shift", QuantiShift),
        ("scale", QuantiScaleX3X5),
        ("quantiType", QuantiType),
        ("quantizeAxis", ctypes.c_int32),
        ("alignedByteSize", ctypes.c_int32),
        ("stride", ctypes.c_int32 * X3X5_MAX_DIMS),
    ]


class SysMem(ctypes.Structure):
    _fields_ = [
        ("phyAddr", ctypes.c_uint64),
        ("virAddr", ctypes.c_void_p),
        ("memSize", ctypes.c_uint32),
    ]


class TensorX3X5(ctypes.Structure):
    """``hbDNNTensor`` of RDK X3/X5: NV12_SEPARATE uses two of the four memories."""

    _fields_ = [("sysMem", SysMem * 4), ("properties", TensorPropertiesX3X5)]


class InferCtrlParam(ctypes.Structure):
    _fields_ = [
        ("bpuCoreId", ctypes.c_int32),
        ("dspCoreId", ctypes.c_int32),
        ("priority", ctypes.c_int32),
        ("more", ctypes.c_int32),
        ("customId", ctypes.c_int64),
        ("reserved1", ctypes.c_int32),
        ("reserved2", ctypes.c_int32),
    ]


# hobot/dnn/hb_dnn.h, hb_ucp.h, hb_ucp_sys.h (RDK S100)

S100_MAX_DIMS = 10


class TensorShapeS100(ctypes.Structure):
    """``hbDNNTensorShape`` (10 dimensions)."""

    _fields_ = [
        ("dimensionSize", ctypes.c_int32 * S100_MAX_DIMS),
        ("numDimensions", ctypes.c_int32),
    ]


class QuantiScaleS100(ctypes.Structure):
    """``hbDNNQuantiScale`` with int32 zero points."""

    _fields_ = [
        ("scaleLen", ctypes.c_int32),
        ("scaleData", ctypes.POINTER(ctypes.c_float)),
        ("zeroPointLen", ctypes.c_int32),
        ("zeroPointData", ctypes.POINTER(ctypes.c_int32)),
    ]


class TensorPropertiesS100(ctypes.Structure):
    """``hbDNNTensorProperties`` of RDK S100: no alignedShape, tensorLayout or shift."""

    _fields_ = [
        ("validShape", TensorShapeS100),
        ("tensorType", ctypes.c_int32),
        ("scale", QuantiScaleS100),
        ("quantiType", QuantiType),
        ("quantizeAxis", ctypes.c_int32),
        ("alignedByteSize", ctypes.c_int64),
        ("stride", ctypes.c_int64 * S100_MAX_DIMS),
    ]


class UCPSysMem(ctypes.Structure):
    """``hbUCPSysMem`` (64-bit size, unlike hbSysMem)."""

    _fields_ = [
        ("phyAddr", ctypes.c_uint64),
        ("virAddr", ctypes.c_void_p),
        ("memSize", ctypes.c_uint64),
    ]


class TensorS100(ctypes.Structure):
    """``hbDNNTensor`` of RDK S100: one memory."""

    _fields_ = [("sysMem", UCPSysMem), ("properties", TensorPropertiesS100)]


class UCPSchedParam(ctypes.Structure):
    _fields_ = [
        ("priority", ctypes.c_int32),
        ("customId", ctypes.c_int64),
        ("backend", ctypes.c_uint64),
        ("deviceId", ctypes.c_uint32),
    ]


LAYOUTS = {0: "NHWC", 2: "NCHW", 255: "NONE"}
IMAGE_TYPES = ("Y", "NV12", "NV12_SEPARATE", "YUV444", "RGB", "BGR")
# hbDNNDataType: X3/X5 numbers the image types first, then the tensor types; S100 has the tensor
# types only, with BOOL8 after them.
NUMBER_TYPES = tuple("S4 U4 S8 U8 F16 S16 U16 F32 S32 U32 F64 S64 U64".split())  # noqa: SIM905
TENSOR_TYPES_X3X5 = dict(enumerate(IMAGE_TYPES + NUMBER_TYPES))
TENSOR_TYPES_S100 = dict(enumerate((*NUMBER_TYPES, "BOOL8")))
QUANTI_TYPES_X3X5 = {0: "NONE", 1: "SHIFT", 2: "SCALE"}
QUANTI_TYPES_S100 = {0: "NONE", 1: "SCALE"}
# numpy names by tensorType (S8 is int8 ...); 4-bit types have none and keep their own.
NUMPY_TYPES = {t: {"S": "int", "U": "uint", "F": "float"}[t[0]] + t[1:] for t in NUMBER_TYPES}
NUMPY_TYPES["BOOL8"] = "bool"
# Bytes per element, by tensorType (none for the 4-bit types).
ELEMENT_SIZES = {t: int(t[1:]) // 8 for t in NUMBER_TYPES[2:]}
ELEMENT_SIZES["BOOL8"] = 1


@dataclass(frozen=True)
class Abi:
    """What differs between the two headers."""

    name: str
    properties: Any
    tensor: Any
    mem: Any
    tensor_types: dict[int, str]
    quanti_types: dict[int, str]
    has_aligned_shape: bool
    timeout_code: int
    timeout_name: str


ABIS = {
    "x3x5": Abi(
        "x3x5",
        TensorPropertiesX3X5,
        TensorX3X5,
        SysMem,
        TENSOR_TYPES_X3X5,
        QUANTI_TYPES_X3X5,
        True,
        HB_DNN_TIMEOUT,
        "HB_DNN_TIMEOUT",
    ),
    "s100": Abi(
        "s100",
        TensorPropertiesS100,
        TensorS100,
        UCPSysMem,
        TENSOR_TYPES_S100,
        QUANTI_TYPES_S100,
        False,
        HB_UCP_TASK_TIMEOUT,
        "HB_UCP_TASK_TIMEOUT",
    ),
}


def _shape(shape: Any) -> list[int]:
    count = max(0, min(int(shape.numDimensions), len(shape.dimensionSize)))
    return [int(d) for d in shape.dimensionSize[:count]]


def _array(pointer: Any, length: int) -> list[Any]:
    if not pointer or length <= 0:
        return []
    return [pointer[i] for i in range(min(int(length), MAX_QUANT_PARAMS))]


class _PropertiesJson(TypedDict):
    validShape: List[int]
    tensorType: str
    quantiType: str
    scale: List[float]
    zeroPoint: List[int]
    quantizeAxis: int
    alignedByteSize: int
    stride: List[int]


class HbPropertiesJson(_PropertiesJson, total=False):
    """``hbDNNTensorProperties`` in a result; the aligned shape, layout and shift on an ABI that
    has them."""

    alignedShape: List[int]
    tensorLayout: str
    shift: List[int]


def properties_record(props: Any, abi: Abi) -> HbPropertiesJson:
    """``hbDNNTensorProperties`` as the runtime reported it: the header's names, enums by name."""
    valid = _shape(props.validShape)
    # The rest follows, in the header's order.
    record = cast("HbPropertiesJson", {"validShape": valid})
    if abi.has_aligned_shape:
        record["alignedShape"] = _shape(props.alignedShape)
        layout = int(props.tensorLayout)
        record["tensorLayout"] = LAYOUTS.get(layout, f"UNKNOWN({layout})")
    ttype = int(props.tensorType)
    record["tensorType"] = abi.tensor_types.get(ttype, f"UNKNOWN({ttype})")
    qtype = int(props.quantiType)
    record["quantiType"] = abi.quanti_types.get(qtype, f"UNKNOWN({qtype})")
    if abi.has_aligned_shape:
        record["shift"] = [int(v) for v in _array(props.shift.shiftData, props.shift.shiftLen)]
    record["scale"] = [float(v) for v in _array(props.scale.scaleData, props.scale.scaleLen)]
    record["zeroPoint"] = [
        int(v) for v in _array(props.scale.zeroPointData, props.scale.zeroPointLen)
    ]
    record["quantizeAxis"] = int(props.quantizeAxis)
    record["alignedByteSize"] = int(props.alignedByteSize)
    record["stride"] = [int(s) for s in props.stride[: len(valid)]]
    return record


# The runtime binding: one place that knows the C signatures of each ABI.


class HorizonRuntime(CLibrary):
    """libdnn (+ hbSys or hbUCP) with argtypes from the headers of one ABI."""

    def __init__(self, abi: Abi, options: dict[str, Any]) -> None:
        hint = f"abi {abi.name}; set adapter_options.library / ucp_library / preload"
        super().__init__("init", hint)
        self.abi = abi
        self.has_ucp_version = False
        for path in options.get("preload") or []:
            self.open(str(path), ctypes.RTLD_GLOBAL)
        self.dnn_path = str(options.get("library") or "libdnn.so")
        self.open(self.dnn_path, ctypes.RTLD_GLOBAL)
        extra = (
            options.get("ucp_library") or "libhbucp.so"
            if abi.name == "s100"
            else options.get("sys_library")
        )
        if extra and str(extra) != self.dnn_path:
            self.open(str(extra), ctypes.RTLD_GLOBAL)

        P, T, M = abi.properties, abi.tensor, abi.mem
        vp, i32, text, ptr = ctypes.c_void_p, ctypes.c_int32, ctypes.c_char_p, ctypes.POINTER
        self.bind("hbDNNGetVersion", [], text)
        self.bind("hbDNNInitializeFromFiles", [ptr(vp), ptr(text), i32], i32)
        self.bind("hbDNNGetModelNameList", [ptr(ptr(text)), ptr(i32), vp], i32)
        self.bind("hbDNNGetModelHandle", [ptr(vp), vp, text], i32)
        self.bind("hbDNNGetInputCount", [ptr(i32), vp], i32)
        self.bind("hbDNNGetOutputCount", [ptr(i32), vp], i32)
        self.bind("hbDNNGetInputTensorProperties", [ptr(P), vp, i32], i32)
        self.bind("hbDNNGetOutputTensorProperties", [ptr(P), vp, i32], i32)
        self.bind("hbDNNRelease", [vp], i32)
        self.has_names = self.bind(
            "hbDNNGetInputName", [ptr(text), vp, i32], i32, False
        ) and self.bind("hbDNNGetOutputName", [ptr(text), vp, i32], i32, False)
        self.has_error_desc = self.bind("hbDNNGetErrorDesc", [i32], text, False)
        if abi.name == "x3x5":
            infer = [ptr(vp), ptr(ptr(T)), ptr(T), vp, ptr(InferCtrlParam)]
            self.bind("hbDNNInfer", infer, i32)
            self.bind("hbDNNWaitTaskDone", [vp, i32], i32)
            self.bind("hbDNNReleaseTask", [vp], i32)
            self.bind("hbSysAllocCachedMem", [ptr(M), ctypes.c_uint32], i32)
            self.bind("hbSysFlushMem", [ptr(M), i32], i32)
            self.bind("hbSysFreeMem", [ptr(M)], i32)
        else:
            self.bind("hbDNNInferV2", [ptr(vp), ptr(T), ptr(T), vp], i32)
            self.bind("hbUCPSubmitTask", [vp, ptr(UCPSchedParam)], i32)
            self.bind("hbUCPWaitTaskDone", [vp, i32], i32)
            self.bind("hbUCPReleaseTask", [vp], i32)
            self.bind("hbUCPMallocCached", [ptr(M), ctypes.c_uint64, i32], i32)
            self.bind("hbUCPMemFlush", [ptr(M), i32], i32)
            self.bind("hbUCPFree", [ptr(M)], i32)
            self.has_ucp_version = self.bind("hbUCPGetVersion", [], text, False)

    def check(self, ret: int, stage: str, call: str, kind: str = "DeviceError") -> None:
        if ret == 0:
            return
        desc = ""
        if self.has_error_desc:
            text = self.call("hbDNNGetErrorDesc", ret)
            desc = f" ({text.decode('utf-8', 'replace')})" if text else ""
        raise AdapterError(kind, stage, f"{call} returned {ret}{desc}", ret)

    # -- memory and tasks, per ABI --------------------------------------------------------

    def alloc(self, size: int, what: str) -> Any:
        mem = self.abi.mem()
        x3x5 = self.abi.name == "x3x5"
        call = "hbSysAllocCachedMem" if x3x5 else "hbUCPMallocCached"
        ret = self.call(call, ctypes.byref(mem), size, *(() if x3x5 else (0,)))  # S100: flags 0
        self.check(int(ret), "run", f"{call}({size}) for {what}")
        if not mem.virAddr:
            raise AdapterError(
                "DeviceError", "run", f"{call}({size}) for {what} returned no address"
            )
        return mem

    def flush(self, mem: Any, flag: int, what: str) -> None:
        call = "hbSysFlushMem" if self.abi.name == "x3x5" else "hbUCPMemFlush"
        label = "CLEAN" if flag == HB_SYS_MEM_CACHE_CLEAN else "INVALIDATE"
        stage = "run" if flag == HB_SYS_MEM_CACHE_CLEAN else "fetch"
        self.check(int(self.call(call, ctypes.byref(mem), flag)), stage, f"{call}({what}, {label})")

    def free(self, mem: Any, what: str) -> None:
        call = "hbSysFreeMem" if self.abi.name == "x3x5" else "hbUCPFree"
        self.check(int(self.call(call, ctypes.byref(mem))), "release", f"{call}({what})")

    def submit(self, inputs: Any, outputs: Any, dnn: Any, options: dict[str, Any]) -> Any:
        task = ctypes.c_void_p(None)  # the API wants a null handle for a new task
        core = int(options.get("bpu_core", 0))
        if self.abi.name == "x3x5":
            ctrl = InferCtrlParam(bpuCoreId=core, dspCoreId=0, priority=0, more=0, customId=0)
            out_ptr = ctypes.cast(outputs, ctypes.POINTER(self.abi.tensor))
            out = ctypes.byref(out_ptr)
            self.checked(
                "run", "hbDNNInfer", ctypes.byref(task), out, inputs, dnn, ctypes.byref(ctrl)
            )
            return task
        self.checked("run", "hbDNNInferV2", ctypes.byref(task), outputs, inputs, dnn)
        sched = UCPSchedParam(priority=0, customId=0, backend=core, deviceId=0)
        undo_on_failure(
            lambda: self.checked("run", "hbUCPSubmitTask", task, ctypes.byref(sched)),
            lambda: self.release_task(task),
        )
        return task

    def wait(self, task: Any, timeout_ms: int) -> None:
        call = "hbDNNWaitTaskDone" if self.abi.name == "x3x5" else "hbUCPWaitTaskDone"
        ret = int(self.call(call, task, timeout_ms))
        # The status header names the timeout; any other failure is the device's, however long
        # it took to come.
        kind = "TimeoutError" if ret == self.abi.timeout_code else "DeviceError"
        what = f"{call}(timeout={timeout_ms} ms)"
        if kind == "TimeoutError":
            what += f": {self.abi.timeout_name}"
        self.check(ret, "run", what, kind)

    def release_task(self, task: Any) -> None:
        call = "hbDNNReleaseTask" if self.abi.name == "x3x5" else "hbUCPReleaseTask"
        self.check(int(self.call(call, task)), "release", call)

    def versions(self) -> dict[str, str]:
        found = {"abi": self.abi.name, "library": self.dnn_path}
        text = self.call("hbDNNGetVersion")
        if text:
            found["dnn"] = text.decode("utf-8", "replace")
        if self.abi.name == "s100" and self.has_ucp_version:
            text = self.call("hbUCPGetVersion")
            if text:
                found["ucp"] = text.decode("utf-8", "replace")
        return found


# The adapter


@dataclass
class HbTensor:
    """One model input or output: its name, properties (the C struct) and their record."""

    name: str
    properties: Any
    record: HbPropertiesJson


@dataclass
class HorizonModel:
    path: str
    model_name: str
    packed: Any
    dnn: Any
    inputs: list[HbTensor] = field(default_factory=list)
    outputs: list[HbTensor] = field(default_factory=list)
    released: bool = False


@dataclass
class _Buffer:
    """One allocation: the hbSysMem/hbUCPSysMem, what it holds, the bytes asked for."""

    mem: Any
    what: str
    size: int


@dataclass
class _Job:
    """What one run holds and must give back."""

    task: Any = None
    buffers: list[_Buffer] = field(default_factory=list)


def _buffer_size(tensor: HbTensor, abi: Abi) -> int:
    """The bytes to allocate: alignedByteSize when > 0 (the seed's rule), else from alignedShape
    (X3/X5: the aligned data's shape) or the strides (S100)."""
    size = int(tensor.record["alignedByteSize"])
    if size > 0:
        return size
    stride, valid = tensor.record["stride"], tensor.record["validShape"]
    aligned = tensor.record.get("alignedShape") or []
    item = ELEMENT_SIZES.get(str(tensor.record.get("tensorType")))
    usable = aligned and item and all(d > 0 for d in aligned)
    if abi.has_aligned_shape and usable and item:
        return int(np.prod(aligned)) * item
    if stride and valid and all(s > 0 for s in stride):
        return int(stride[0]) * int(valid[0])
    raise AdapterError(
        "LayoutError",
        "run",
        f"{tensor.name!r}: alignedByteSize {size}, alignedShape {aligned or None} and stride "
        f"{stride} give no buffer size",
    )


def nv12_separate_y_bytes(record: HbPropertiesJson, name: str, total: int) -> int:
    """Bytes of the Y plane of an NV12_SEPARATE input of ``total`` bytes (Y then UV), from
    validShape and alignedShape (rows alignedShape-W bytes apart), checked against ``total``."""
    valid, aligned = record["validShape"], record.get("alignedShape") or []
    nhwc = record.get("tensorLayout") == "NHWC"
    if len(valid) != 4 or len(aligned) != 4:
        raise AdapterError(
            "LayoutError",
            "run",
            f"input {name!r}: NV12_SEPARATE needs a 4-D validShape and alignedShape, got "
            f"{valid} and {aligned or None}",
        )
    n, h = int(valid[0]), int(valid[1] if nhwc else valid[2])
    row = int(aligned[2] if nhwc else aligned[3])
    if n != 1:
        # Where a batch's planes go is not documented; the vendor's samples give one tensor
        # per image.
        raise AdapterError(
            "LayoutError",
            "run",
            f"input {name!r}: NV12_SEPARATE takes one image, validShape is {valid}",
        )
    y_bytes, uv_bytes = n * h * row, n * (h // 2) * row
    if h % 2 or total != y_bytes + uv_bytes:
        raise AdapterError(
            "LayoutError",
            "run",
            f"input {name!r}: NV12_SEPARATE with validShape {valid} and alignedShape {aligned} "
            f"is {y_bytes} bytes of Y then {uv_bytes} of UV (even H), {total} given",
        )
    return y_bytes


class HobotNativeAdapter(Adapter):
    """Raw aligned BPU buffers and full ``hbDNNTensorProperties`` through libdnn."""

    name = "hobot_native"
    log_level_env = "HB_DNN_LOG_LEVEL"  # libdnn reads it: 0 (verbose) .. 6; default 3 (warnings)

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__(options)
        abi = str(self.options.get("abi", "x3x5")).lower()
        if abi not in ABIS:
            raise AdapterError(
                "UnsupportedError", "init", f"abi must be one of {sorted(ABIS)}, not {abi!r}"
            )
        self.abi = ABIS[abi]
        # The canary the next run fills its memories with (fill_canary arms it for one run).
        self.canary: bytes | None = None
        self._runtime: HorizonRuntime | None = None

    def runtime(self) -> HorizonRuntime:
        if self._runtime is None:
            self._runtime = HorizonRuntime(self.abi, self.options)
        return self._runtime

    def versions(self) -> dict[str, str]:
        return self.runtime().versions()

    # -- load / release -------------------------------------------------------------------

    def load(self, model_path: str) -> HorizonModel:
        rt = self.runtime()
        packed = ctypes.c_void_p()
        files = (ctypes.c_char_p * 1)(model_path.encode())
        rt.checked(
            "load", f"hbDNNInitializeFromFiles({model_path!r})", ctypes.byref(packed), files, 1
        )
        model = HorizonModel(path=model_path, model_name="", packed=packed, dnn=ctypes.c_void_p())
        undo_on_failure(lambda: self._describe(model), lambda: self.release(model))
        return model

    def _describe(self, model: HorizonModel) -> None:
        rt = self.runtime()
        name_list = ctypes.POINTER(ctypes.c_char_p)()
        count = ctypes.c_int32()
        listed = (ctypes.byref(name_list), ctypes.byref(count), model.packed)
        rt.checked("load", "hbDNNGetModelNameList", *listed)
        names = [(name_list[i] or b"").decode("utf-8", "replace") for i in range(count.value)]
        model.model_name = names[pick_model(names, self.options.get("model_name"), model.path)]
        handle = (ctypes.byref(model.dnn), model.packed, model.model_name.encode())
        rt.checked("load", f"hbDNNGetModelHandle({model.model_name!r})", *handle)
        for kind, target in (("Input", model.inputs), ("Output", model.outputs)):
            n = ctypes.c_int32()
            rt.checked("load", f"hbDNNGet{kind}Count", ctypes.byref(n), model.dnn)
            for i in range(n.value):
                props = self.abi.properties()
                call = f"hbDNNGet{kind}TensorProperties"
                rt.checked("load", f"{call}({i})", ctypes.byref(props), model.dnn, i)
                name = self._tensor_name(kind, model.dnn, i)
                target.append(HbTensor(name, props, properties_record(props, self.abi)))

    def _tensor_name(self, kind: str, dnn: Any, index: int) -> str:
        rt = self.runtime()
        if rt.has_names:
            text = ctypes.c_char_p()
            ret = int(rt.call(f"hbDNNGet{kind}Name", ctypes.byref(text), dnn, index))
            if ret == 0 and text.value:
                return text.value.decode("utf-8", "replace")
        return f"{kind.lower()}{index}"

    def release(self, model: Any) -> None:
        if isinstance(model, HorizonModel) and not model.released:
            model.released = True
            if model.packed:
                self.runtime().checked("release", "hbDNNRelease", model.packed)

    # -- run ------------------------------------------------------------------------------

    def run(self, model: Any, inputs: list[InputTensor], outputs: list[str] | None) -> RunOutput:
        self.loaded(model, HorizonModel)
        job = _Job()
        try:
            result = undo_on_failure(
                lambda: self._run(model, inputs, outputs, job), lambda: self._cleanup(job)
            )
        finally:
            self.canary = None  # armed for one run: the agent fills again before the next
        self._cleanup(job)
        return result

    def _run(
        self, model: HorizonModel, inputs: list[InputTensor], outputs: list[str] | None, job: _Job
    ) -> RunOutput:
        order, matched_by = match_inputs([t.name for t in model.inputs], inputs)
        wanted, out_matched_by = match_outputs([t.name for t in model.outputs], outputs)
        rt = self.runtime()
        timings = {"copy_s": 0.0, "run_s": 0.0}
        in_array = (self.abi.tensor * max(1, len(model.inputs)))()
        out_array = (self.abi.tensor * max(1, len(model.outputs)))()
        in_buffers: dict[int, list[_Buffer]] = {}
        out_buffers: list[_Buffer] = []

        with timed(timings, "copy_s"):
            for position, index in enumerate(order):
                tensor = model.inputs[index]
                planes = self._input_buffers(tensor, inputs[position], job)
                self._attach(in_array[index], planes, tensor, self._input_strides(tensor))
                in_buffers[index] = planes
            for index, tensor in enumerate(model.outputs):
                size = _buffer_size(tensor, self.abi)
                buffer = self._allocate(size, f"output {tensor.name!r}", job)
                self._attach(out_array[index], [buffer], tensor, None)
                out_buffers.append(buffer)

        with timed(timings, "run_s"):
            job.task = rt.submit(in_array, out_array, model.dnn, self.options)
            rt.wait(job.task, int(self.options.get("timeout_ms", 10000)))

        with timed(timings, "copy_s"):
            for buffer in job.buffers:
                rt.flush(buffer.mem, HB_SYS_MEM_CACHE_INVALIDATE, buffer.what)
            return RunOutput(
                inputs=[self._read(model.inputs[i], in_buffers[i], matched_by) for i in order],
                outputs=[
                    self._read(model.outputs[i], [out_buffers[i]], out_matched_by) for i in wanted
                ],
                timings=timings,
            )

    def _input_strides(self, tensor: HbTensor) -> list[int] | None:
        """Strides to fill in where the model leaves them dynamic (-1), from the options."""
        stride = tensor.record["stride"]
        if all(s >= 0 for s in stride):
            return None
        given = (self.options.get("input_strides") or {}).get(tensor.name)
        if not given or len(given) != len(stride):
            raise AdapterError(
                "LayoutError",
                "run",
                f"input {tensor.name!r}: stride {stride} is dynamic; give "
                f"adapter_options.input_strides[{tensor.name!r}] ({len(stride)} values)",
            )
        return [int(s) for s in given]

    def fill_canary(self, model: Any, pattern: bytes) -> CanaryFill:
        """Every input and output memory is the adapter's, allocated per run
        (``hbSysAllocCachedMem`` / ``hbUCPMallocCached``): the next run fills each with the
        pattern as it allocates it and cleans the cache, before the input's bytes go in."""
        self.loaded(model, HorizonModel)
        self.canary = pattern
        return CanaryFill(outputs=True, inputs=True)

    def _allocate(self, size: int, what: str, job: _Job) -> _Buffer:
        buffer = _Buffer(self.runtime().alloc(size, what), what, size)
        job.buffers.append(buffer)
        pattern = self.canary
        if pattern is not None:
            fill = canary_bytes(pattern, size)
            ctypes.memmove(buffer.mem.virAddr, fill.ctypes.data, fill.nbytes)
            self.runtime().flush(buffer.mem, HB_SYS_MEM_CACHE_CLEAN, what)
        # The seed: the first address of every input and output buffer is 32-byte aligned. An
        # allocator that breaks it would make the BPU read or write the wrong bytes.
        for label in ("virAddr", "phyAddr"):
            address = int(getattr(buffer.mem, label) or 0)
            if address % FIRST_ADDRESS_ALIGNMENT:
                raise AdapterError(
                    "DeviceError",
                    "run",
                    f"{what}: {label} {address:#x} is not {FIRST_ADDRESS_ALIGNMENT}-byte aligned",
                )
        return buffer

    def _input_buffers(self, tensor: HbTensor, inp: InputTensor, job: _Job) -> list[_Buffer]:
        """The input's memories: one, or Y then UV for NV12_SEPARATE (sysMem[0], sysMem[1])."""
        shapes = f" (validShape {tensor.record['validShape']}, stride {tensor.record['stride']})"
        data = packed_bytes(inp, "hobot_native takes the aligned layout", shapes)
        size = int(tensor.record["alignedByteSize"])
        if size > 0 and data.nbytes != size:
            raise AdapterError(
                "LayoutError",
                "run",
                f"input {inp.name!r}: {data.nbytes} bytes given, alignedByteSize is {size} "
                f"(validShape {tensor.record['validShape']}, stride {tensor.record['stride']})",
            )
        what = f"input {inp.name!r}"
        if tensor.record["tensorType"] == "NV12_SEPARATE":
            y_bytes = nv12_separate_y_bytes(tensor.record, inp.name, data.nbytes)
            parts = [(f"{what} Y", data[:y_bytes]), (f"{what} UV", data[y_bytes:])]
        else:
            parts = [(what, data)]
        buffers = []
        for label, part in parts:
            buffer = self._allocate(part.nbytes, label, job)
            ctypes.memmove(buffer.mem.virAddr, part.ctypes.data, part.nbytes)
            self.runtime().flush(buffer.mem, HB_SYS_MEM_CACHE_CLEAN, label)
            buffers.append(buffer)
        return buffers

    def _attach(
        self, slot: Any, buffers: list[_Buffer], tensor: HbTensor, strides: list[int] | None
    ) -> None:
        if self.abi.name == "x3x5":
            for i, buffer in enumerate(buffers):
                slot.sysMem[i] = buffer.mem
        else:
            (only,) = buffers  # S100's hbDNNTensor has one memory
            slot.sysMem = only.mem
        # The model's own properties: the bytes were prepared to them (aligned), so nothing is
        # changed, except dynamic strides the job had to supply. (Assigning a struct copies it.)
        slot.properties = tensor.properties
        if strides is not None:
            for i, s in enumerate(strides):
                slot.properties.stride[i] = s

    def _read(self, tensor: HbTensor, buffers: list[_Buffer], matched_by: str) -> TensorOut:
        raw = np.frombuffer(
            b"".join(ctypes.string_at(b.mem.virAddr, b.size) for b in buffers), dtype=np.uint8
        )
        record = dict(tensor.record)
        record["first_address_aligned_32"] = True
        record["allocated"] = sum(b.size for b in buffers)
        if len(buffers) > 1:
            record["memories"] = [b.size for b in buffers]
        record["layout_from"] = "alignedShape" if self.abi.has_aligned_shape else "stride"
        record["matched_by"] = matched_by
        record["abi"] = self.abi.name
        ttype = str(record["tensorType"])
        return TensorOut(
            name=tensor.name,
            data=raw.copy(),
            layout=ttype if ttype in IMAGE_TYPES else "strided",
            dtype="uint8" if ttype in IMAGE_TYPES else NUMPY_TYPES.get(ttype, ttype.lower()),
            shape=list(tensor.record["validShape"]),
            attributes=record,
        )

    def _cleanup(self, job: _Job) -> None:
        """Release the task and every allocation, whatever fails; then raise the first failure."""
        rt = self.runtime()
        steps = [partial(rt.free, buffer.mem, buffer.what) for buffer in job.buffers]
        if job.task is not None and job.task.value:
            steps.insert(0, partial(rt.release_task, job.task))
        job.task, job.buffers = None, []
        release_all(steps)


ADAPTER = HobotNativeAdapter
