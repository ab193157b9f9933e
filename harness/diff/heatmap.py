"""A picture of where a tensor went wrong: mismatches over H x W, one panel per channel or group.

Each panel is one channel (or one channel group when there are many channels) of a 4-D NCHW
tensor, summed over N: the colour is how many mismatched elements fall on that pixel. Padding
columns the layout keeps to the right of each row are drawn in their own colour, and dirty
padding bytes in another, so a row-alignment fault shows as a stripe.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.codec.engine import BlockedLayout
from harness.diff.report import DiffReport

MAX_PANELS = 32
PADDING_COLOUR = "#c8c8c8"
DIRTY_COLOUR = "#d01cd0"


def mismatch_grid(
    report: DiffReport, layout: BlockedLayout, max_panels: int = MAX_PANELS
) -> tuple[np.ndarray, np.ndarray, int]:
    """(counts [panels, H, Wp], dirty [panels, H, Wp], channels per panel).

    ``Wp`` covers the widest row position any dirty padding byte sits at, so padding to the
    right of a row is visible; cells at w >= W are padding.
    """
    height, width, channels, axes = _geometry(layout)
    per_panel = max(1, -(-channels // max_panels))
    if report.group_size and channels > max_panels:
        per_panel = max(per_panel, report.group_size)
    panels = -(-channels // per_panel)
    dirty_cells = _dirty_cells(report, layout, axes, height)
    padded_width = max([width, *(int(w) + 1 for _, _, w in dirty_cells)])
    counts = np.zeros((panels, height, padded_width), dtype=np.int64)
    dirty = np.zeros_like(counts)
    if report.mismatch_index is not None and report.mismatch_index.size:
        index = report.mismatch_index
        c_axis, h_axis, w_axis = axes
        c = index[:, c_axis] if c_axis is not None else np.zeros(len(index), np.int64)
        h = index[:, h_axis] if h_axis is not None else np.zeros(len(index), np.int64)
        w = index[:, w_axis]
        np.add.at(counts, (c // per_panel, h, w), 1)
    for channel, row, column in dirty_cells:
        dirty[min(channel // per_panel, panels - 1), row, column] += 1
    return counts, dirty, per_panel


def render_heatmap(
    report: DiffReport,
    layout: BlockedLayout,
    path: str | Path,
    *,
    max_panels: int = MAX_PANELS,
    title: str | None = None,
) -> Path:
    """Write the heatmap of ``report`` as a PNG at ``path`` and return the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    counts, dirty, per_panel = mismatch_grid(report, layout, max_panels)
    _, width, _, _ = _geometry(layout)
    panels = counts.shape[0]
    columns = min(panels, 8)
    rows = -(-panels // columns)
    figure, axes = plt.subplots(
        rows, columns, figsize=(2.2 * columns, 2.2 * rows + 0.6), squeeze=False
    )
    peak = max(int(counts.max()), 1)
    heat = plt.get_cmap("inferno_r")
    for number in range(rows * columns):
        ax = axes[number // columns][number % columns]
        ax.set_xticks([])
        ax.set_yticks([])
        if number >= panels:
            ax.axis("off")
            continue
        ax.imshow(counts[number], cmap=heat, vmin=0, vmax=peak, interpolation="nearest")
        if counts.shape[2] > width:
            columns_index = np.broadcast_to(np.arange(counts.shape[2]), counts.shape[1:])
            pad = np.ma.masked_where(columns_index < width, np.ones(counts.shape[1:]))
            ax.imshow(pad, cmap=ListedColormap([PADDING_COLOUR]), interpolation="nearest")
        if dirty[number].any():
            marks = np.ma.masked_where(dirty[number] == 0, np.ones(dirty.shape[1:]))
            ax.imshow(marks, cmap=ListedColormap([DIRTY_COLOUR]), interpolation="nearest")
        first = number * per_panel
        label = f"c{first}" if per_panel == 1 else f"c{first}-{first + per_panel - 1}"
        ax.set_title(f"{label}: {int(counts[number].sum())}", fontsize=8)
    figure.suptitle(
        title
        or f"{report.target} {report.layout} {list(report.shape)}: {report.verdict} "
        f"({report.mismatched} mismatched, {report.dirty_padding_bytes} dirty padding)",
        fontsize=9,
    )
    out = Path(path)
    figure.savefig(out, dpi=90)
    plt.close(figure)
    return out


def _geometry(layout: BlockedLayout) -> tuple[int, int, int, tuple[int | None, int | None, int]]:
    """(H, W, C, (c axis, h axis, w axis)) of the logical tensor; lower ranks get H = 1."""
    names = layout.axis_names
    shape = layout.shape
    c_axis = names.index("c") if "c" in names else None
    h_axis = names.index("h") if "h" in names else None
    w_axis = names.index("w") if "w" in names else len(shape) - 1
    if h_axis is None and c_axis is None and len(shape) >= 2:
        h_axis = len(shape) - 2
    height = shape[h_axis] if h_axis is not None else 1
    channels = shape[c_axis] if c_axis is not None else 1
    return height, shape[w_axis], channels, (c_axis, h_axis, w_axis)


def _dirty_cells(
    report: DiffReport,
    layout: BlockedLayout,
    axes: tuple[int | None, int | None, int],
    height: int,
) -> list[tuple[int, int, int]]:
    """(channel, row, column) of each dirty padding byte that sits in a row's padding."""
    offsets = report.dirty_padding_offsets
    if offsets is None or not offsets.size:
        return []
    located = layout.locate_many(offsets[:100_000])
    c_axis, h_axis, w_axis = axes
    cells = []
    for row in located.index:
        c = int(row[c_axis]) if c_axis is not None else 0
        h = int(row[h_axis]) if h_axis is not None else 0
        w = int(row[w_axis])
        if 0 <= h < height and c < layout.shape[c_axis if c_axis is not None else 0]:
            cells.append((c, h, w))
    return cells
