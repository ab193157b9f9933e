"""``rknn_native``: Rockchip's C runtime (``librknnrt.so``/``librknnmrt.so``) by ctypes, zero-copy:
the native buffers and ``rknn_tensor_attr``s. Call sequence, what it was checked against and its
options: ``docs/runtime/agent.md`` (Adapters).
"""

from __future__ import annotations

import ctypes
import os
import platform
from dataclasses import dataclass, field
from functools import partial
from typing import Any, List, TypedDict, TypeVar

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
    release_all,
    timed,
    undo_on_failure,
)

# rknn_api.h, mirrored. Field order and types are the header's; tests hold every size, alignment,
# field offset and size, enum and error value here to the numbers measured from the real 2.3.2
# header (aarch64 and armhf, tests/data/abi/rknn_api-2.3.2.json), as they hold the C fake.

RKNN_MAX_DIMS = 16
RKNN_MAX_NAME_LEN = 256

RKNN_QUERY_IN_OUT_NUM = 0
RKNN_QUERY_INPUT_ATTR = 1
RKNN_QUERY_OUTPUT_ATTR = 2
RKNN_QUERY_SDK_VERSION = 5
RKNN_QUERY_NATIVE_INPUT_ATTR = 8
RKNN_QUERY_NATIVE_OUTPUT_ATTR = 9
RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR = 10
RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR = 11
# The commands by name: a query is asked by its name, which its error message gives.
QUERY_CODES = {name: code for name, code in globals().items() if name.startswith("RKNN_QUERY_")}

RKNN_MEMORY_SYNC_TO_DEVICE = 0x1
RKNN_MEMORY_SYNC_FROM_DEVICE = 0x2

TENSOR_FORMATS = {0: "NCHW", 1: "NHWC", 2: "NC1HWC2", 3: "UNDEFINED"}
_TYPE_NAMES = "FLOAT32 FLOAT16 INT8 UINT8 INT16 UINT16 INT32 UINT32 INT64 BOOL INT4 BFLOAT16"
TENSOR_TYPES = dict(enumerate(_TYPE_NAMES.split()))
QNT_TYPES = {0: "NONE", 1: "DFP", 2: "AFFINE_ASYMMETRIC"}
# The return codes, 0 down to -13, in order.
_ERROR_NAMES = (
    "SUCC ERR_FAIL ERR_TIMEOUT ERR_DEVICE_UNAVAILABLE ERR_MALLOC_FAIL ERR_PARAM_INVALID "
    "ERR_MODEL_INVALID ERR_CTX_INVALID ERR_INPUT_INVALID ERR_OUTPUT_INVALID ERR_DEVICE_UNMATCH "
    "ERR_INCOMPATILE_PRE_COMPILE_MODEL ERR_INCOMPATILE_OPTIMIZATION_LEVEL_VERSION "
    "ERR_TARGET_PLATFORM_UNMATCH"
)
ERROR_NAMES = {-code: "RKNN_" + name for code, name in enumerate(_ERROR_NAMES.split())}
RKNN_ERR_TIMEOUT = -2

CORE_MASKS = {"auto": 0, "0": 1, "1": 2, "2": 4, "0_1": 3, "0_1_2": 7, "all": 0xFFFF}
MULTI_CORE_SOCS = ("rk3588", "rk3576")
# RK3576 (two cores): the masks naming core 2 and what RKNNLite 2.5.0 replaces them with.
RK3576_REMAP = {CORE_MASKS["0_1_2"]: CORE_MASKS["0_1"], CORE_MASKS["2"]: CORE_MASKS["0"]}
MICRO_RUNTIME_SOCS = ("rv1103", "rv1106", "rv1103b", "rv1106b")


# rknn_api.h: `#ifdef __arm__ typedef uint32_t rknn_context; #else uint64_t`. __arm__ is the
# 32-bit ARM ABI (RV1103/RV1106 armhf userlands), whatever the kernel reports as machine.
_MACHINE = platform.machine().lower()
_ARM32 = ctypes.sizeof(ctypes.c_void_p) == 4 and (
    _MACHINE.startswith("arm") or _MACHINE == "aarch64"
)
rknn_context: Any = ctypes.c_uint32 if _ARM32 else ctypes.c_uint64


class RknnInputOutputNum(ctypes.Structure):
    _fields_ = [("n_input", ctypes.c_uint32), ("n_output", ctypes.c_uint32)]


class RknnTensorAttr(ctypes.Structure):
    """``rknn_tensor_attr``; the enum fields are C ``int``-sized."""

    _fields_ = [
        ("index", ctypes.c_uint32),
        ("n_dims", ctypes.c_uint32),
        ("dims", ctypes.c_uint32 * RKNN_MAX_DIMS),
        ("name", ctypes.c_char * RKNN_MAX_NAME_LEN),
        ("n_elems", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("fmt", ctypes.c_int),
        ("type", ctypes.c_int),
        ("qnt_type", ctypes.c_int),
        ("fl", ctypes.c_int8),
        ("zp", ctypes.c_int32),
        ("scale", ctypes.c_float),
        ("w_stride", ctypes.c_uint32),
        ("size_with_stride", ctypes.c_uint32),
        ("pass_through", ctypes.c_uint8),
        ("h_stride", ctypes.c_uint32),
    ]


class RknnTensorMem(ctypes.Structure):
    _fields_ = [
        ("virt_addr", ctypes.c_void_p),
        ("phys_addr", ctypes.c_uint64),
        ("fd", ctypes.c_int32),
        ("offset", ctypes.c_int32),
        ("size", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("priv_data", ctypes.c_void_p),
    ]


class RknnSdkVersion(ctypes.Structure):
    _fields_ = [("api_version", ctypes.c_char * 256), ("drv_version", ctypes.c_char * 256)]


MemPointer = ctypes.POINTER(RknnTensorMem)
T = TypeVar("T", bound=ctypes.Structure)


class RknnAttrJson(TypedDict):
    """An ``rknn_tensor_attr`` in a result: the header's field names, its enums by name."""

    index: int
    n_dims: int
    dims: List[int]
    name: str
    n_elems: int
    size: int
    fmt: str
    type: str
    qnt_type: str
    fl: int
    zp: int
    scale: float
    w_stride: int
    size_with_stride: int
    pass_through: int
    h_stride: int


def attr_record(attr: RknnTensorAttr) -> RknnAttrJson:
    """The attribute as the runtime reported it: header field names, enums by name."""
    n_dims = min(int(attr.n_dims), RKNN_MAX_DIMS)
    return {
        "index": int(attr.index),
        "n_dims": n_dims,
        "dims": [int(d) for d in attr.dims[:n_dims]],
        "name": bytes(attr.name).split(b"\0", 1)[0].decode("utf-8", "replace"),
        "n_elems": int(attr.n_elems),
        "size": int(attr.size),
        "fmt": TENSOR_FORMATS.get(int(attr.fmt), f"UNKNOWN({attr.fmt})"),
        "type": TENSOR_TYPES.get(int(attr.type), f"UNKNOWN({attr.type})"),
        "qnt_type": QNT_TYPES.get(int(attr.qnt_type), f"UNKNOWN({attr.qnt_type})"),
        "fl": int(attr.fl),
        "zp": int(attr.zp),
        "scale": float(attr.scale),
        "w_stride": int(attr.w_stride),
        "size_with_stride": int(attr.size_with_stride),
        "pass_through": int(attr.pass_through),
        "h_stride": int(attr.h_stride),
    }


# The library binding: one place that knows the C signatures.


class RknnLibrary(CLibrary):
    """The subset of ``librknnrt`` this adapter calls, with argtypes set from the header."""

    def __init__(self, path: str) -> None:
        super().__init__("init", "the RKNN runtime; set adapter_options.library")
        self.open(path)
        ctx, u32, ptr = rknn_context, ctypes.c_uint32, ctypes.POINTER
        self.bind("rknn_init", [ptr(ctx), ctypes.c_void_p, u32, u32, ctypes.c_void_p], ctypes.c_int)
        self.bind("rknn_query", [ctx, ctypes.c_int, ctypes.c_void_p, u32], ctypes.c_int)
        self.bind("rknn_create_mem", [ctx, u32], MemPointer)
        self.bind("rknn_destroy_mem", [ctx, MemPointer], ctypes.c_int)
        self.bind("rknn_set_io_mem", [ctx, MemPointer, ptr(RknnTensorAttr)], ctypes.c_int)
        self.bind("rknn_run", [ctx, ctypes.c_void_p], ctypes.c_int)
        self.bind("rknn_destroy", [ctx], ctypes.c_int)
        # Newer runtimes only: used when present.
        self.has_core_mask = self.bind(
            "rknn_set_core_mask", [ctx, ctypes.c_int], ctypes.c_int, False
        )
        self.has_mem_sync = self.bind(
            "rknn_mem_sync", [ctx, MemPointer, ctypes.c_int], ctypes.c_int, False
        )

    def check(self, ret: int, stage: str, call: str) -> None:
        if ret == 0:
            return
        kind = "TimeoutError" if ret == RKNN_ERR_TIMEOUT else "DeviceError"
        name = ERROR_NAMES.get(ret, "unknown error")
        raise AdapterError(kind, stage, f"{call} returned {ret} ({name})", ret)


def _default_library(soc: str | None) -> str:
    if soc and soc.lower() in MICRO_RUNTIME_SOCS:
        return "librknnmrt.so"
    return "librknnrt.so"


def core_mask(value: Any, soc: str | None, constants: Any = None) -> int:
    """The mask a ``core_mask`` option asks for: an int as it is; a name (``0_1``,
    ``NPU_CORE_0_1`` ...) as ``constants.NPU_CORE_<NAME>`` (RKNNLite's own) where there is one,
    else as ``CORE_MASKS``. A mask other than auto is refused on a SoC known to have one NPU core.
    """
    if isinstance(value, int):
        mask = value
    else:
        key = str(value).lower()
        for prefix in ("rknn_npu_core_", "npu_core_"):
            if key.startswith(prefix):
                key = key[len(prefix) :]
        if key not in CORE_MASKS:
            known = ", ".join(sorted(CORE_MASKS))
            raise AdapterError(
                "LayoutError", "init", f"unknown core_mask {value!r} (one of {known})"
            )
        mask = int(getattr(constants, "NPU_CORE_" + key.upper(), CORE_MASKS[key]))
    if soc and soc not in MULTI_CORE_SOCS and mask != 0:
        raise AdapterError(
            "UnsupportedError", "init", f"core_mask is only supported on RK3588/RK3576, not {soc}"
        )
    return mask


# The adapter


@dataclass
class NativeTensor:
    """One model input or output: its native attribute and its zero-copy memory."""

    attr: RknnTensorAttr
    record: RknnAttrJson
    logical: RknnAttrJson
    query: str
    mem: Any = None  # POINTER(RknnTensorMem) once created

    @property
    def name(self) -> str:
        return str(self.record["name"])

    @property
    def nbytes(self) -> int:
        # size_with_stride is what the zero-copy API allocates; outputs of some runtimes leave
        # it 0 and only fill `size` (the seed's output notes say: allocate `size`).
        return int(self.record["size_with_stride"]) or int(self.record["size"])


@dataclass
class RknnModel:
    """A loaded model: its context, tensors and memory."""

    path: str
    context: int
    inputs: list[NativeTensor] = field(default_factory=list)
    outputs: list[NativeTensor] = field(default_factory=list)
    model_bytes: Any = None  # kept alive: the runtime may reference the buffer
    core_mask: int | None = None  # as asked
    core_mask_set: int | None = None  # as given to rknn_set_core_mask
    released: bool = False


class RknnNativeAdapter(Adapter):
    """Zero-copy inference on ``librknnrt``; raw native buffers and ``rknn_tensor_attr``s."""

    name = "rknn_native"
    log_level_env = "RKNN_LOG_LEVEL"  # librknnrt reads it at rknn_init: 0 (none) .. 5 (most)

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__(options)
        self._lib: RknnLibrary | None = None
        self._versions: dict[str, str] = {}

    # -- plumbing -------------------------------------------------------------------------

    @property
    def soc(self) -> str | None:
        soc = self.options.get("soc")
        return str(soc).lower() if soc else None

    def library(self) -> RknnLibrary:
        if self._lib is None:
            path = str(self.options.get("library") or _default_library(self.soc))
            self._lib = RknnLibrary(path)
            self._versions["library"] = path
        return self._lib

    def _query(self, ctx: int, name: str, out: T, index: int | None = None) -> T:
        """``rknn_query(name)`` into ``out`` (for a tensor attribute: the tensor's ``index``)."""
        cmd = QUERY_CODES[name]
        call = f"rknn_query({name})"
        if index is not None:
            out.index = index  # an RknnTensorAttr
            call += f"(index={index})"
        self.library().checked("load", call, ctx, cmd, ctypes.byref(out), ctypes.sizeof(out))
        return out

    # -- Adapter API ----------------------------------------------------------------------

    def versions(self) -> dict[str, str]:
        # api_version/drv_version come from RKNN_QUERY_SDK_VERSION, which needs a context: they
        # are known from the first load on. Loading the library here surfaces a missing runtime.
        self.library()
        return dict(self._versions)

    def load(self, model_path: str) -> RknnModel:
        lib = self.library()
        with open(model_path, "rb") as handle:
            blob = handle.read()
        model_bytes = ctypes.create_string_buffer(blob, len(blob))
        ctx = rknn_context(0)
        lib.checked(
            "load",
            f"rknn_init({os.path.basename(model_path)})",
            ctypes.byref(ctx),
            ctypes.cast(model_bytes, ctypes.c_void_p),
            len(blob),
            int(self.options.get("init_flags", 0)),
            None,
        )
        model = RknnModel(path=model_path, context=int(ctx.value), model_bytes=model_bytes)
        undo_on_failure(lambda: self._setup(model), lambda: self._teardown(model))
        return model

    def _setup(self, model: RknnModel) -> None:
        lib = self.library()
        ctx = model.context
        model.core_mask, model.core_mask_set = self._apply_core_mask(ctx)
        sdk = self._query(ctx, "RKNN_QUERY_SDK_VERSION", RknnSdkVersion())
        self._versions["api_version"] = sdk.api_version.decode("utf-8", "replace")
        self._versions["drv_version"] = sdk.drv_version.decode("utf-8", "replace")

        io_num = self._query(ctx, "RKNN_QUERY_IN_OUT_NUM", RknnInputOutputNum())
        out_query = str(self.options.get("output_query") or self._query_of_layout()).lower()
        if out_query not in ("native", "native_nhwc"):
            raise AdapterError(
                "LayoutError",
                "load",
                f"output_query must be 'native' or 'native_nhwc', not {out_query!r}",
            )
        out_name = f"RKNN_QUERY_{out_query.upper()}_OUTPUT_ATTR"
        in_name = "RKNN_QUERY_NATIVE_INPUT_ATTR"
        for i in range(int(io_num.n_input)):
            logical = self._query(ctx, "RKNN_QUERY_INPUT_ATTR", RknnTensorAttr(), i)
            native = self._query(ctx, in_name, RknnTensorAttr(), i)
            # Recorded as the runtime reported it, before the adapter sets pass_through: the
            # bytes we copy in are already native (packed by the host codec), no conversion.
            reported = attr_record(native)
            native.pass_through = 1
            model.inputs.append(NativeTensor(native, reported, attr_record(logical), in_name))
        for i in range(int(io_num.n_output)):
            logical = self._query(ctx, "RKNN_QUERY_OUTPUT_ATTR", RknnTensorAttr(), i)
            native = self._query(ctx, out_name, RknnTensorAttr(), i)
            model.outputs.append(
                NativeTensor(native, attr_record(native), attr_record(logical), out_name)
            )

        for tensor in model.inputs + model.outputs:
            mem = lib.call("rknn_create_mem", ctx, tensor.nbytes)
            if not mem:
                raise AdapterError(
                    "DeviceError",
                    "load",
                    f"rknn_create_mem({tensor.nbytes}) returned NULL for {tensor.name!r}",
                )
            tensor.mem = mem
            call = f"rknn_set_io_mem({tensor.name!r})"
            lib.checked("load", call, ctx, mem, ctypes.byref(tensor.attr))

    def _query_of_layout(self) -> str:
        layout = self.options.get("output_layout")
        if layout is None:
            return "native"
        queries = {"NC1HWC2": "native", "NHWC": "native_nhwc"}
        if str(layout).upper() not in queries:
            raise AdapterError(
                "LayoutError",
                "load",
                f"output_layout {layout!r}: rknn_native reads the runtime's native output "
                "buffers only, NC1HWC2 (RKNN_QUERY_NATIVE_OUTPUT_ATTR) or NHWC "
                "(RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR)",
            )
        return queries[str(layout).upper()]

    def _apply_core_mask(self, ctx: int) -> tuple[int | None, int | None]:
        """Set the core mask when asked: (the mask asked, the mask the runtime was given)."""
        if self.options.get("core_mask") is None:
            return None, None
        mask = core_mask(self.options["core_mask"], self.soc)
        given = RK3576_REMAP.get(mask, mask) if self.soc == "rk3576" else mask
        lib = self.library()
        if not lib.has_core_mask:
            raise AdapterError(
                "UnsupportedError", "init", f"{lib.paths[0]} has no rknn_set_core_mask"
            )
        lib.checked("init", f"rknn_set_core_mask({given:#x})", ctx, given)
        return mask, given

    def run(self, model: Any, inputs: list[InputTensor], outputs: list[str] | None) -> RunOutput:
        self.loaded(model, RknnModel)
        lib = self.library()
        ctx = model.context
        timings: dict[str, float] = {}

        order, matched_by = match_inputs([t.name for t in model.inputs], inputs)
        with timed(timings, "copy_s"):
            for position, index in enumerate(order):
                self._write_input(model.inputs[index], inputs[position])
        with timed(timings, "run_s"):
            for tensor in model.inputs:
                self._sync(model, tensor, RKNN_MEMORY_SYNC_TO_DEVICE, "run")
            lib.checked("run", "rknn_run", ctx, None)
            # The runtime invalidates output caches itself unless RKNN_FLAG_DISABLE_FLUSH_* was
            # given at init; syncing here keeps the read-back right in either case.
            for tensor in model.inputs + model.outputs:
                self._sync(model, tensor, RKNN_MEMORY_SYNC_FROM_DEVICE, "fetch")
        # copy_s: both directions of the copy, apart from the run itself (the agent reads it)
        with timed(timings, "copy_s"):
            wanted, out_matched_by = match_outputs([t.name for t in model.outputs], outputs)
            return RunOutput(
                inputs=[self._read(model, t, matched_by) for t in model.inputs],
                outputs=[self._read(model, model.outputs[i], out_matched_by) for i in wanted],
                timings=timings,
            )

    def fill_canary(self, model: Any, pattern: bytes) -> CanaryFill:
        """The zero-copy memories are the adapter's (``rknn_create_mem`` at load, bound by
        ``rknn_set_io_mem``): every output and input memory is filled through ``virt_addr`` and
        synced to the device, so a byte the NPU does not write reads back as the pattern. The
        inputs are then overwritten whole by the run's copy (their size is checked)."""
        self.loaded(model, RknnModel)
        for tensor in model.inputs + model.outputs:
            fill = canary_bytes(pattern, tensor.nbytes)
            ctypes.memmove(tensor.mem.contents.virt_addr, fill.ctypes.data, fill.nbytes)
            self._sync(model, tensor, RKNN_MEMORY_SYNC_TO_DEVICE, "run", " after the canary")
        return CanaryFill(outputs=True, inputs=True)

    def _sync(
        self, model: RknnModel, tensor: NativeTensor, flag: int, stage: str, why: str = ""
    ) -> None:
        """``rknn_mem_sync`` one memory, on runtimes that have it."""
        lib = self.library()
        if lib.has_mem_sync:
            way = "TO_DEVICE" if flag == RKNN_MEMORY_SYNC_TO_DEVICE else "FROM_DEVICE"
            call = f"rknn_mem_sync({tensor.name!r}, {way}){why}"
            lib.checked(stage, call, model.context, tensor.mem, flag)

    def _write_input(self, tensor: NativeTensor, inp: InputTensor) -> None:
        layout = f" ({tensor.record['fmt']}, w_stride {tensor.record['w_stride']})"
        data = packed_bytes(inp, "rknn_native takes the native layout", layout)
        if data.nbytes != tensor.nbytes:
            raise AdapterError(
                "LayoutError",
                "run",
                f"input {inp.name!r}: {data.nbytes} bytes given, the runtime's native "
                f"buffer is {tensor.nbytes} bytes (size_with_stride; fmt {tensor.record['fmt']}, "
                f"dims {tensor.record['dims']}, w_stride {tensor.record['w_stride']})",
            )
        ctypes.memmove(tensor.mem.contents.virt_addr, data.ctypes.data, data.nbytes)

    def _read(self, model: RknnModel, tensor: NativeTensor, matched_by: str) -> TensorOut:
        mem = tensor.mem.contents
        size = min(int(mem.size), tensor.nbytes) if int(mem.size) else tensor.nbytes
        raw = np.frombuffer(ctypes.string_at(mem.virt_addr, size), dtype=np.uint8).copy()
        record = dict(tensor.record)
        record["query"] = tensor.query
        record["logical_attr"] = tensor.logical
        record["matched_by"] = matched_by
        if model.core_mask is not None:
            record["core_mask"] = model.core_mask
            record["core_mask_set"] = model.core_mask_set
        return TensorOut(
            name=tensor.name,
            data=raw,
            layout=str(record["fmt"]),
            # The element type's numpy name (INT4, BFLOAT16: none, and keep their own).
            dtype=str(record["type"]).lower(),
            shape=list(tensor.record["dims"]),
            attributes=record,
        )

    def release(self, model: Any) -> None:
        if isinstance(model, RknnModel) and not model.released:
            self._teardown(model)

    def _teardown(self, model: RknnModel) -> None:
        """Free every memory and the context; report the first failure after trying them all."""
        lib = self.library()
        steps = [
            partial(lib.checked, "release", f"rknn_destroy_mem({t.name!r})", model.context, t.mem)
            for t in model.inputs + model.outputs
            if t.mem
        ]
        if model.context:
            steps.append(partial(lib.checked, "release", "rknn_destroy", model.context))
        for tensor in model.inputs + model.outputs:
            tensor.mem = None
        model.released = True
        release_all(steps)


ADAPTER = RknnNativeAdapter
