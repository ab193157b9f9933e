"""The zoo's input samples: calibration and test data, deterministic, shaped per model input.

Image-like inputs (rank 4) are pixels already normalized the usual way, (x / 255 - mean) / std
with ImageNet's figures, so they span about -2.1 to 2.6; other inputs are standard normal. The
compiler calibrates on one set (seed 1) and every accuracy figure is measured on another (seed 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

SAMPLES = 8
TEST_SAMPLES = 8
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def sample(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if len(shape) == 4 and shape[1] == 3:
        # Smooth images (a few gradients and blobs), not noise: the statistics a camera gives.
        _, c, h, w = shape
        y, x = np.meshgrid(np.linspace(0, 1, h), np.linspace(0, 1, w), indexing="ij")
        pixels = np.empty(shape, np.float32)
        for k in range(c):
            a, b, f, p = rng.uniform(0, 1, 4)
            wave = np.sin(2 * np.pi * (f * 3 * x + a * 2 * y) + p * 6)
            pixels[:, k] = 127.5 + 100 * (b * (x - 0.5) + 0.5 * wave)
        pixels += rng.normal(0.0, 8.0, shape).astype(np.float32)
        pixels = np.clip(np.round(pixels), 0, 255)
        normed = (pixels / 255.0 - MEAN[None, :, None, None]) / STD[None, :, None, None]
        return normed.astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def samples(
    shapes: Mapping[str, tuple[int, ...]], count: int, seed: int
) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{name: sample(shape, rng) for name, shape in shapes.items()} for _ in range(count)]


def write_samples(
    folder: Path, shapes: Mapping[str, tuple[int, ...]], count: int, seed: int
) -> list[dict[str, Path]]:
    """``count`` samples as ``NNN.<input>.npy`` files (what ``--dataset`` reads)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for k, arrays in enumerate(samples(shapes, count, seed)):
        paths = {}
        for name, array in arrays.items():
            paths[name] = folder / f"{k:03d}.{name}.npy"
            np.save(paths[name], array)
        written.append(paths)
    return written
