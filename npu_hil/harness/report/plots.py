"""The small line plots the reports embed: a figure on matplotlib's Agg canvas, and the PNG
data URI a page takes inline (the history trends and the soak report draw with them)."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PlotStyle:
    """One report's plots: their x axis label, size, resolution and ``margins`` (left, right,
    top, bottom as figure fractions)."""

    xlabel: str
    inches: tuple[float, float]
    dpi: int
    margins: tuple[float, float, float, float]

    def figure(self, title: str, ylabel: str) -> tuple[Any, Any]:
        """(figure, axes) with one titled, labelled, gridded plot."""
        # The object API on the Agg canvas: no pyplot state, safe from any thread or process.
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        # fixed margins: a constrained layout draws every figure twice (a third of its time)
        figure = Figure(figsize=self.inches, dpi=self.dpi)
        left, right, top, bottom = self.margins
        figure.subplots_adjust(left=left, right=right, top=top, bottom=bottom)
        FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        axes.set_title(title, fontsize=9)
        axes.set_ylabel(ylabel, fontsize=8)
        axes.set_xlabel(self.xlabel, fontsize=8)
        axes.tick_params(labelsize=7)
        axes.grid(True, alpha=0.3)
        return figure, axes

    def png(self, figure: Any) -> str:
        """The figure as a ``data:image/png;base64,...`` URI."""
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=self.dpi)
        return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
