"""A picture of where a tensor went wrong: mismatches over H x W, one panel per channel or group,
padding and dirty padding in their own colours (docs/runtime/diff.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from npu_hil.harness.codec.engine import BlockedLayout
from npu_hil.harness.diff.report import DiffReport

MAX_PANELS = 32
MAX_PAD_PANELS = 4
PADDING_COLOUR = "#c8c8c8"
DIRTY_COLOUR = "#d01cd0"


def mismatch_grid(report: DiffReport, layout: BlockedLayout) -> tuple[np.ndarray, np.ndarray, int]:
    """(counts [panels, H, Wp], dirty [panels, H, Wp], channels per panel).

    ``Wp`` covers the widest row position any dirty padding byte sits at, so padding to the
    right of a row is visible; cells at w >= W are padding.
    """
    height, _, channels, axes = _geometry(layout)
    per_panel = max(1, -(-channels // MAX_PANELS))
    if report.group_size and channels > MAX_PANELS:
        per_panel = max(per_panel, report.group_size)
    panels = -(-channels // per_panel)
    dirty_cells, padded_width = _dirty_cells(report, layout)
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
        if channel < channels:  # a padded channel's bytes: padded_channel_grid draws them
            dirty[channel // per_panel, row, column] += 1
    return counts, dirty, per_panel


def render_heatmap(report: DiffReport, layout: BlockedLayout, path: str | Path) -> Path:
    """Write the heatmap of ``report`` as a PNG at ``path`` and return the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import ListedColormap, Normalize
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    counts, dirty, per_panel = mismatch_grid(report, layout)
    pad_dirty, first_pad, pad_per_panel = padded_channel_grid(report, layout)
    _, width, _, _ = _geometry(layout)
    real_panels = counts.shape[0]
    if pad_dirty.shape[0]:
        wide = max(counts.shape[2], pad_dirty.shape[2])
        counts = _widen(counts, wide)
        dirty = _widen(dirty, wide)
        pad_dirty = _widen(pad_dirty, wide)
    panels = real_panels + pad_dirty.shape[0]
    columns = min(panels, 8)
    rows = -(-panels // columns)
    figure, axes = plt.subplots(
        rows, columns, figsize=(2.2 * columns + 1.2, 2.2 * rows + 1.2), squeeze=False
    )
    peak = max(int(counts.max()), 1)
    heat = plt.get_cmap("inferno_r")
    pad_colour = ListedColormap([PADDING_COLOUR])
    dirty_colour = ListedColormap([DIRTY_COLOUR])
    for number in range(rows * columns):
        ax = axes[number // columns][number % columns]
        ax.set_xticks([])
        ax.set_yticks([])
        if number >= panels:
            ax.axis("off")
            continue
        if number >= real_panels:
            # a channel the layout pads: no element lives there, only padding bytes
            marks = pad_dirty[number - real_panels]
            ax.imshow(np.ones(marks.shape), cmap=pad_colour, interpolation="nearest")
            if marks.any():
                mask = np.ma.masked_where(marks == 0, np.ones(marks.shape))
                ax.imshow(mask, cmap=dirty_colour, interpolation="nearest")
            first = first_pad + (number - real_panels) * pad_per_panel
            last = min(first + pad_per_panel, _padded_channels(layout)) - 1
            label = f"pad c{first}" if first == last else f"pad c{first}-{last}"
            ax.set_title(f"{label}: {int(marks.sum())} dirty", fontsize=8)
            continue
        ax.imshow(counts[number], cmap=heat, vmin=0, vmax=peak, interpolation="nearest")
        if counts.shape[2] > width:
            columns_index = np.broadcast_to(np.arange(counts.shape[2]), counts.shape[1:])
            pad = np.ma.masked_where(columns_index < width, np.ones(counts.shape[1:]))
            ax.imshow(pad, cmap=pad_colour, interpolation="nearest")
        if dirty[number].any():
            marks = np.ma.masked_where(dirty[number] == 0, np.ones(dirty.shape[1:]))
            ax.imshow(marks, cmap=dirty_colour, interpolation="nearest")
        first = number * per_panel
        label = f"c{first}" if per_panel == 1 else f"c{first}-{first + per_panel - 1}"
        ax.set_title(f"{label}: {int(counts[number].sum())}", fontsize=8)
    figure.suptitle(
        f"{report.target} {report.layout} {list(report.shape)}: {report.verdict} "
        f"({report.mismatched} mismatched, {report.dirty_padding_bytes} dirty padding)",
        fontsize=9,
    )
    figure.legend(
        handles=[
            Patch(color=heat(1.0), label="mismatched elements (scale at right)"),
            Patch(color=PADDING_COLOUR, label="padding (row padding, padded channels)"),
            Patch(color=DIRTY_COLOUR, label="dirty padding byte"),
        ],
        loc="lower center",
        ncol=3,
        fontsize=7,
        frameon=False,
    )
    scale = ScalarMappable(norm=Normalize(0, peak), cmap=heat)
    bar = figure.colorbar(scale, ax=axes.ravel().tolist(), shrink=0.8, label="mismatches per pixel")
    bar.locator = MaxNLocator(integer=True)
    bar.update_ticks()
    out = Path(path)
    figure.savefig(out, dpi=90)
    plt.close(figure)
    return out


def _widen(grid: np.ndarray, width: int) -> np.ndarray:
    return np.pad(grid, ((0, 0), (0, 0), (0, max(0, width - grid.shape[2]))))


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
    report: DiffReport, layout: BlockedLayout
) -> tuple[list[tuple[int, int, int]], int]:
    """(channel, row, column) of each dirty padding byte that sits in a row's padding, and the
    grid width that shows them all (W or more)."""
    height, width, _, (c_axis, h_axis, w_axis) = _geometry(layout)
    offsets = report.dirty_padding_offsets
    cells = []
    if offsets is not None and offsets.size:
        padded = _padded_channels(layout)
        for row in layout.locate_many(offsets[:100_000]).index:
            c = int(row[c_axis]) if c_axis is not None else 0
            h = int(row[h_axis]) if h_axis is not None else 0
            if 0 <= h < height and c < padded:
                cells.append((c, h, int(row[w_axis])))
    return cells, max([width, *(w + 1 for _, _, w in cells)])


def _padded_channels(layout: BlockedLayout) -> int:
    """C rounded up the way the layout stores it (e.g. NC1HWC2 with C2 = 16: 3 -> 16 or more);
    C itself for a layout that does not pad channels or has no channel axis."""
    names = layout.axis_names
    if "c" not in names:
        return 1
    logical = names.index("c")
    axis = layout.logical_axes[logical]
    extents = [d.size * d.block for d in layout.dims if d.axis == axis]
    return max([layout.shape[logical], *extents])


def padded_channel_grid(report: DiffReport, layout: BlockedLayout) -> tuple[np.ndarray, int, int]:
    """(dirty [panels, H, Wp], first padded channel, channels per panel) for the channels the
    layout adds beyond C; no panels when it adds none."""
    height, _, channels, _ = _geometry(layout)
    dirty_cells, padded_width = _dirty_cells(report, layout)
    extra = _padded_channels(layout) - channels
    if extra <= 0:
        return np.zeros((0, height, padded_width), dtype=np.int64), channels, 1
    per_panel = -(-extra // MAX_PAD_PANELS)
    panels = -(-extra // per_panel)
    dirty = np.zeros((panels, height, padded_width), dtype=np.int64)
    for channel, row, column in dirty_cells:
        if channel >= channels:
            dirty[(channel - channels) // per_panel, row, column] += 1
    return dirty, channels, per_panel
