"""Accuracy of a device's output against the float reference (cosine, SNR in dB, max absolute
and relative error) and the thresholds a test or a manifest entry sets; the edge cases are
explicit values, never NaN (see :class:`Accuracy`). docs/model-developer/figures.md says more.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from typing_extensions import NotRequired, TypedDict

from npu_hil.harness.errors import LayoutError

__all__ = ["Accuracy", "AccuracyError", "Thresholds", "measure", "thresholds_of"]


class AccuracyError(LayoutError):
    """Accuracy asked of tensors that cannot be compared, or thresholds that make no sense."""


class AccuracyDocument(TypedDict):
    """:meth:`Accuracy.to_dict`: a tensor's accuracy as results and reports hold it."""

    cosine: float | None
    snr_db: float | str
    max_abs_err: float | str
    max_rel_err: float | str | None
    elements: int
    cosine_note: NotRequired[str]
    inputs: NotRequired[str]


@dataclass(frozen=True)
class Accuracy:
    """How close a dequantized device tensor is to the float reference."""

    cosine: float | None
    """Cosine similarity in [-1, 1]; None when either tensor is all zeros (undefined)."""
    snr_db: float
    """``10 log10(sum ref² / sum (dev - ref)²)``: +inf for an exact match, -inf for a zero
    reference with a nonzero device tensor."""
    max_abs_err: float
    max_rel_err: float | None
    """max ``|dev - ref| / |ref|`` where ``ref != 0``; None when every element of ref is 0."""
    elements: int
    cosine_note: str = ""
    inputs: str = ""
    """What the float reference ran on: ``given`` (the caller's inputs, so input quantization
    counts) or ``held`` (what the device held, decoded: inputs not in the model's own form)."""

    def to_dict(self) -> AccuracyDocument:
        """JSON-safe: infinities as the strings ``"inf"`` / ``"-inf"``, undefined as null."""
        document: AccuracyDocument = {
            "cosine": self.cosine,
            "snr_db": _json_float(self.snr_db),
            "max_abs_err": _json_float(self.max_abs_err),
            "max_rel_err": None if self.max_rel_err is None else _json_float(self.max_rel_err),
            "elements": self.elements,
        }
        if self.cosine_note:
            document["cosine_note"] = self.cosine_note
        if self.inputs:
            document["inputs"] = self.inputs
        return document

    def summary(self) -> str:
        """One line: ``cosine 0.999812, SNR 41.3 dB, max abs 0.0123, max rel 0.0456``."""
        cosine = f"{self.cosine:.6f}" if self.cosine is not None else f"n/a ({self.cosine_note})"
        rel = f"{self.max_rel_err:.4g}" if self.max_rel_err is not None else "n/a"
        return (
            f"cosine {cosine}, SNR {_db(self.snr_db)}, max abs {self.max_abs_err:.4g}, "
            f"max rel {rel}"
        )


def _json_float(value: float) -> float | str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def _db(value: float) -> str:
    if math.isinf(value):
        return "+inf dB" if value > 0 else "-inf dB"
    return f"{value:.1f} dB"


def measure(device: np.ndarray, reference: np.ndarray, what: str = "tensor") -> Accuracy:
    """The figures of ``device`` (dequantized) against ``reference`` (float), same shape."""
    dev = np.asarray(device, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    if dev.shape != ref.shape:
        if dev.size != ref.size:
            raise AccuracyError(
                f"{what}: device tensor of shape {dev.shape} against a reference of shape "
                f"{ref.shape}: expected the same number of elements"
            )
        dev = dev.reshape(ref.shape)
    if not (np.isfinite(dev).all() and np.isfinite(ref).all()):
        raise AccuracyError(f"{what}: non-finite values (NaN or inf): no accuracy figures")
    dev, ref = dev.reshape(-1), ref.reshape(-1)
    error = dev - ref
    # Norms are taken of tensors scaled by their largest magnitude, so neither tiny (1e-200)
    # nor huge (1e200) values underflow or overflow a sum of squares.
    cosine, note = _cosine(dev, ref)
    return Accuracy(
        cosine=cosine,
        snr_db=_snr_db(ref, error),
        max_abs_err=float(np.max(np.abs(error), initial=0.0)),
        max_rel_err=_max_rel(error, ref),
        elements=int(ref.size),
        cosine_note=note,
    )


def _norm(values: np.ndarray) -> float:
    top = float(np.max(np.abs(values), initial=0.0))
    if top == 0.0:
        return 0.0
    return top * float(np.sqrt(np.sum((values / top) ** 2)))


def _cosine(dev: np.ndarray, ref: np.ndarray) -> tuple[float | None, str]:
    n_dev, n_ref = _norm(dev), _norm(ref)
    if n_ref == 0.0 and n_dev == 0.0:
        return None, "both tensors are all zeros"
    if n_ref == 0.0:
        return None, "the reference is all zeros"
    if n_dev == 0.0:
        return None, "the device tensor is all zeros"
    dot = float(np.dot(dev / n_dev, ref / n_ref))
    return max(-1.0, min(1.0, dot)), ""


def _snr_db(ref: np.ndarray, error: np.ndarray) -> float:
    signal, noise = _norm(ref), _norm(error)
    if noise == 0.0:
        return math.inf
    if signal == 0.0:
        return -math.inf
    return 20.0 * math.log10(signal / noise)


def _max_rel(error: np.ndarray, ref: np.ndarray) -> float | None:
    nonzero = ref != 0.0
    if not nonzero.any():
        return None
    with np.errstate(over="ignore"):  # a subnormal reference: the relative error is +inf
        return float(np.max(np.abs(error[nonzero]) / np.abs(ref[nonzero])))


# ------------------------------------------------------------------------------ thresholds

_KEYS = {
    "cosine_min": "cosine similarity at least",
    "snr_db_min": "SNR in dB at least",
    "max_abs_err_max": "max absolute error at most",
    "max_rel_err_max": "max relative error at most",
}


@dataclass(frozen=True)
class Thresholds:
    """What a test or a model's manifest entry demands of every output (None: not checked)."""

    cosine_min: float | None = None
    snr_db_min: float | None = None
    max_abs_err_max: float | None = None
    max_rel_err_max: float | None = None

    @property
    def active(self) -> bool:
        """Whether any limit is set."""
        return bool(self.limits())

    def limits(self) -> dict[str, float]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def merged(self, override: Thresholds | None) -> Thresholds:
        """These thresholds with every limit ``override`` sets taken from it (a test's over the
        manifest's)."""
        if override is None:
            return self
        return Thresholds(**{**self.limits(), **override.limits()})

    def breaches(self, figures: Accuracy) -> list[str]:
        """One message per limit ``figures`` fails; an undefined cosine fails a cosine limit."""
        found = []
        if self.cosine_min is not None:
            if figures.cosine is None:
                found.append(
                    f"cosine undefined ({figures.cosine_note}), needs >= {self.cosine_min:g}"
                )
            elif figures.cosine < self.cosine_min:
                found.append(f"cosine {figures.cosine:.6f} < {self.cosine_min:g}")
        if self.snr_db_min is not None and figures.snr_db < self.snr_db_min:
            found.append(f"SNR {_db(figures.snr_db)} < {self.snr_db_min:g} dB")
        if self.max_abs_err_max is not None and figures.max_abs_err > self.max_abs_err_max:
            found.append(f"max abs error {figures.max_abs_err:.4g} > {self.max_abs_err_max:g}")
        rel = figures.max_rel_err
        if self.max_rel_err_max is not None and rel is not None and rel > self.max_rel_err_max:
            found.append(f"max relative error {rel:.4g} > {self.max_rel_err_max:g}")
        return found


def thresholds_of(value: Thresholds | Mapping[str, Any] | None, where: str) -> Thresholds | None:
    """Thresholds from a mapping (``{cosine_min: 0.99, snr_db_min: 30}``), checked: known keys,
    finite numbers, a cosine in [-1, 1], error limits >= 0. ``where`` names the source in the
    AccuracyError."""
    if value is None or isinstance(value, Thresholds):
        return value
    if not isinstance(value, Mapping):
        raise AccuracyError(
            f"{where}: expected a mapping of {', '.join(_KEYS)}, got {type(value).__name__}"
        )
    unknown = sorted(str(k) for k in value if k not in _KEYS)
    if unknown:
        raise AccuracyError(
            f"{where}: unknown key(s) {', '.join(unknown)}; expected some of {', '.join(_KEYS)}"
        )
    limits: dict[str, float] = {}
    for key, raw in value.items():
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
            raise AccuracyError(
                f"{where}.{key}: expected a finite number ({_KEYS[key]}), got {raw!r}"
            )
        number = float(raw)
        if key == "cosine_min" and not -1.0 <= number <= 1.0:
            raise AccuracyError(f"{where}.{key}: expected a cosine in [-1, 1], got {raw!r}")
        if key.endswith("_max") and number < 0:
            raise AccuracyError(f"{where}.{key}: expected an error limit >= 0, got {raw!r}")
        limits[key] = number
    return Thresholds(**limits)
