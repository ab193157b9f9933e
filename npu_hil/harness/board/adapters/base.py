"""The contract between the board agent and a runtime adapter (``docs/runtime/agent.md``, Writing
an adapter). Board-side: Python >= 3.8, standard library and numpy, nothing from ``harness``.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.metadata
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, TypeVar

import numpy as np

T = TypeVar("T")


class AdapterError(Exception):
    """A typed failure the agent records in result.json (its kinds and stages: the docs page)."""

    def __init__(self, kind: str, stage: str, message: str, code: Optional[int] = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.stage = stage
        self.message = message
        self.code = code

    def record(self) -> Dict[str, Any]:
        return {"type": self.kind, "stage": self.stage, "message": self.message, "code": self.code}


@dataclass
class InputTensor:
    """One input of a job.

    ``data`` holds the file's bytes as a flat uint8 array. With ``pass_through`` the bytes are
    already in the device's native layout (packed by the host codec in ``layout``); without it
    they are the logical tensor in C order (``shape``, ``dtype``).
    """

    name: str
    data: np.ndarray
    layout: str
    shape: List[int]
    dtype: str
    pass_through: bool

    def logical(self) -> np.ndarray:
        """The logical tensor (only for ``pass_through`` False)."""
        return self.data.view(np.dtype(self.dtype)).reshape(self.shape)


@dataclass
class TensorOut:
    """A tensor as the runtime holds it: the raw device buffer and the runtime's own attributes.

    ``attributes`` are reported exactly as the runtime gives them (RKNN ``rknn_tensor_attr``
    fields, Horizon ``hbDNNTensorProperties``, KL730 node descriptor ...), JSON-serialisable.
    ``layout`` is the runtime's layout name for the buffer (``NC1HWC2``, ``1W16C8B`` ...).
    """

    name: str
    data: np.ndarray
    layout: str
    dtype: str
    shape: List[int]
    attributes: Dict[str, Any] = field(default_factory=dict)


@dataclass
class RunOutput:
    """What one run brought back: device input buffers (as the runtime holds them after they were
    set, read back from zero-copy memory where the runtime allows), output buffers, timings in
    seconds (``run_s``, ``copy_s`` ...)."""

    inputs: List[TensorOut]
    outputs: List[TensorOut]
    timings: Dict[str, float] = field(default_factory=dict)


@dataclass
class CanaryFill:
    """What :meth:`Adapter.fill_canary` did: whether every output buffer (``outputs``) and every
    input buffer the adapter allocates (``inputs``) starts the next run filled with the pattern;
    where not, ``reason`` says why (the runtime allocates that memory itself during the run).
    The host checks for unwritten bytes only in buffers said to be filled: a buffer that was not
    is "not applicable", never "clean"."""

    outputs: bool = False
    inputs: bool = False
    reason: str = ""


def packed_bytes(inp: InputTensor, takes: str, detail: str = "") -> np.ndarray:
    """An input's bytes as the host codec packed them (``pass_through``), flat uint8; else a
    LayoutError that says what the runtime ``takes``."""
    if not inp.pass_through:
        raise AdapterError(
            "LayoutError",
            "run",
            f"input {inp.name!r}: {takes} (pass_through); pack it with the host codec{detail}",
        )
    return np.ascontiguousarray(inp.data, dtype=np.uint8).reshape(-1)


def canary_bytes(pattern: bytes, nbytes: int) -> np.ndarray:
    """``pattern`` repeated over ``nbytes`` bytes, starting at the buffer's first byte (the
    phase the host assumes when it looks for the pattern)."""
    if nbytes <= 0:
        return np.zeros(0, dtype=np.uint8)
    unit = np.frombuffer(pattern, dtype=np.uint8)
    return np.resize(unit, nbytes)


def match_inputs(names: List[str], inputs: List[InputTensor]) -> Tuple[List[int], str]:
    """Positions of the job's inputs among the model's ``names`` (see :func:`match_names`); the
    job must give every input, since zero-copy memory of an input left out would go in with
    whatever it held."""
    if len(inputs) != len(names):
        raise AdapterError(
            "LayoutError",
            "run",
            f"the model takes {len(names)} inputs {names}, the job gives {len(inputs)}",
        )
    return match_names(names, [i.name for i in inputs], "run", "inputs")


def match_names(
    names: List[str], wanted: List[str], stage: str, what: str
) -> Tuple[List[int], str]:
    """Positions of ``wanted`` among ``names``: by name, else by position when the counts agree
    (converted models may rename tensors); anything else is a request the model cannot serve."""
    if all(w in names for w in wanted):
        return [names.index(w) for w in wanted], "name"
    if len(wanted) == len(names):
        return list(range(len(names))), "position"
    missing = [w for w in wanted if w not in names]
    raise AdapterError("LayoutError", stage, f"{what} {missing} not in the model (it has {names})")


def match_outputs(names: List[str], outputs: Optional[List[str]]) -> Tuple[List[int], str]:
    """Positions of the wanted ``outputs`` among ``names`` (None: all), as :func:`match_names`."""
    if outputs is None:
        return list(range(len(names))), "name"
    return match_names(names, list(outputs), "fetch", "outputs")


def pick_outputs(names: List[str], outputs: Optional[List[str]], hint: str = "") -> List[int]:
    """Positions of the wanted ``outputs`` among ``names`` (None: all), by name only; ``hint``
    says where an adapter's names come from."""
    if outputs is None:
        return list(range(len(names)))
    missing = [w for w in outputs if w not in names]
    if missing:
        raise AdapterError("LayoutError", "fetch", f"outputs {missing} not in {names}{hint}")
    return [names.index(w) for w in outputs]


def pick_model(names: List[str], wanted: Any, path: str) -> int:
    """Which of the models an artifact packs (``names``) runs: the one the option ``model_name``
    (``wanted``) names, else the only one."""
    if wanted is not None:
        if wanted not in names:
            raise AdapterError(
                "LayoutError", "load", f"model_name {wanted!r} is not in {path} (it has {names})"
            )
        return names.index(wanted)
    if len(names) != 1:
        raise AdapterError(
            "LayoutError", "load", f"{path} packs {len(names)} models {names}: set model_name"
        )
    return 0


def undo_on_failure(step: Callable[[], T], undo: Callable[[], object]) -> T:
    """``step()``; when it fails, ``undo()`` (free what was made) before the failure goes on: it
    is the error worth reporting, so an AdapterError of the undo gives way to it."""
    try:
        return step()
    except BaseException:
        with contextlib.suppress(AdapterError):
            undo()
        raise


def release_all(steps: Sequence[Callable[[], object]]) -> None:
    """Every step of a release, whatever fails (what one step cannot free must not keep the
    others from being freed); then the first AdapterError."""
    errors: List[AdapterError] = []
    for step in steps:
        try:
            step()
        except AdapterError as exc:
            errors.append(exc)
    if errors:
        raise errors[0]


@contextlib.contextmanager
def timed(timings: Dict[str, float], key: str) -> Iterator[None]:
    """Add the seconds the block takes to ``timings[key]`` (a run's ``copy_s``, ``run_s`` ...)."""
    start = time.perf_counter()
    yield
    timings[key] = timings.get(key, 0.0) + time.perf_counter() - start


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def vendor_call(func: Callable[..., T], stage: str, what: str, *args: Any, **kwargs: Any) -> T:
    """``func(*args, **kwargs)``, a call into the vendor's Python package: an exception it raises
    becomes a DeviceError of ``stage`` that names the call (``what``)."""
    try:
        return func(*args, **kwargs)
    except AdapterError:
        raise
    except Exception as exc:
        raise AdapterError("DeviceError", stage, f"{what} raised {describe(exc)}") from exc


class CLibrary:
    """Native libraries opened by ctypes, and the functions bound from them with the signatures
    of their headers: the one place an adapter knows its C calls."""

    def __init__(self, stage: str, hint: str) -> None:
        self.stage = stage  # where a missing library or function fails
        self.hint = hint  # how a job points the adapter at its libraries
        self.libs: List[Any] = []
        self.paths: List[str] = []
        self.funcs: Dict[str, Any] = {}

    def open(self, path: str, mode: int = ctypes.DEFAULT_MODE) -> None:
        try:
            self.libs.append(ctypes.CDLL(path, mode=mode))
        except OSError as exc:
            message = f"cannot load {path!r}: {exc} ({self.hint})"
            raise AdapterError("UnsupportedError", self.stage, message) from exc
        self.paths.append(path)

    def bind(self, name: str, argtypes: List[Any], restype: Any, required: bool = True) -> bool:
        """Bind ``name`` from the first library that exports it. A function none exports is an
        UnsupportedError when ``required``; else False (a function of newer runtimes only, used
        where present)."""
        for lib in self.libs:
            func = getattr(lib, name, None)
            if func is not None:
                func.argtypes = argtypes
                func.restype = restype
                self.funcs[name] = func
                return True
        if required:
            where = ", ".join(self.paths)
            message = f"{name} is not exported by {where} ({self.hint})"
            raise AdapterError("UnsupportedError", self.stage, message)
        return False

    def call(self, name: str, *args: Any) -> Any:
        return self.funcs[name](*args)

    def checked(self, stage: str, what: str, *args: Any) -> None:
        """Call the function ``what`` names (up to its first parenthesis) and check its code."""
        self.check(int(self.call(what.split("(")[0], *args)), stage, what)

    def check(self, ret: int, stage: str, call: str) -> None:
        """The map from the library's return codes to typed errors (0 is success)."""
        if ret != 0:
            raise AdapterError("DeviceError", stage, f"{call} returned {ret}", ret)


def package_version(dist: str) -> str:
    """The installed version of a distribution, or "" when it is not installed as one (an
    image's copy of the module, a fake)."""
    try:
        return str(importlib.metadata.version(dist))
    except Exception:
        return ""


class Adapter:
    """Base class of the runtime adapters. ``options`` is the job's ``adapter_options``."""

    name = "base"
    simulated = False
    """A simulated board: its run times are modeled and it has no board state to read."""
    log_level_env: Optional[str] = None
    """The environment variable the runtime reads its log level from when it initialises (None:
    the runtime has none); the agent writes the job's ``runtime_log_level`` there before the
    adapter is created."""
    canary_reason: Optional[str] = None
    """Why no buffer of the runtime's can start a run filled (the default :meth:`fill_canary`
    says it; None: a generic reason)."""

    def __init__(self, options: Dict[str, Any]) -> None:
        self.options = dict(options)

    def loaded(self, model: Any, kind: Any) -> None:
        """A DeviceError unless ``model`` is a handle of ``kind`` loaded and not yet released."""
        if not isinstance(model, kind) or model.released:
            raise AdapterError(
                "DeviceError", "run", f"model handle is not a loaded {self.name} model"
            )

    def versions(self) -> Dict[str, str]:
        """Runtime, driver and SDK versions, as the runtime reports them."""
        return {}

    def load(self, model_path: str) -> Any:
        """Load a model artifact; the agent caches the handle by the artifact's sha256."""
        raise NotImplementedError

    def run(self, model: Any, inputs: List[InputTensor], outputs: Optional[List[str]]) -> RunOutput:
        """Run one inference; ``outputs`` names the wanted outputs (None: all)."""
        raise NotImplementedError

    def fill_canary(self, model: Any, pattern: bytes) -> CanaryFill:
        """Fill the buffers you own for ``model`` with ``pattern`` (:func:`canary_bytes`) before
        the next run, and return what will start it filled (the contract: the docs page). The
        default fills nothing and says why in ``reason`` (``canary_reason``)."""
        generic = f"adapter {self.name!r} does not fill buffers with a canary"
        return CanaryFill(reason=self.canary_reason or generic)

    def release(self, model: Any) -> None:
        """Free a loaded model."""
