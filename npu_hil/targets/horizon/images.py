"""Image inputs of the Horizon BPU (NV12 and Y) turned into the planes a model sees.

The BPU converts an NV12 frame inside the compiled model (the toolchain's colour conversion);
the sim feeds the model the YUV planes at full resolution, chroma repeated 2x2 (nearest
neighbour), and leaves colour conversion to the model, so the numbers are the frame's own.
"""

from __future__ import annotations

import numpy as np


def nv12_planes(frame: np.ndarray) -> np.ndarray:
    """An NV12 frame (N, 3H/2, W) or (3H/2, W), uint8 → (N, 3, H, W) float32 Y, U, V planes."""
    frames = frame if frame.ndim == 3 else frame[np.newaxis]
    n, rows, width = frames.shape
    height = rows * 2 // 3
    luma = frames[:, :height, :]
    chroma = frames[:, height:, :].reshape(n, height // 2, width // 2, 2)
    u = chroma[..., 0].repeat(2, axis=1).repeat(2, axis=2)
    v = chroma[..., 1].repeat(2, axis=1).repeat(2, axis=2)
    planes: np.ndarray = np.stack([luma, u, v], axis=1).astype(np.float32)
    return planes


def y_plane(frame: np.ndarray) -> np.ndarray:
    """A Y frame (N, H, W) or (H, W), uint8 → (N, 1, H, W) float32."""
    frames = frame if frame.ndim == 3 else frame[np.newaxis]
    plane: np.ndarray = frames[:, np.newaxis].astype(np.float32)
    return plane


def image_shape(layout: str, model_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The frame shape an NV12 or Y input of a model input (N, C, H, W) has."""
    n, _, h, w = model_shape
    return (n, h * 3 // 2, w) if layout == "NV12" else (n, h, w)
