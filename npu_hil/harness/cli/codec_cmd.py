"""``npu-hil codec pack|unpack|locate|describe``."""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import Any

import numpy as np

from npu_hil.harness import files
from npu_hil.harness.cli.common import (
    add_layout_args,
    layout_from_args,
    parse_shape,
    print_json,
)
from npu_hil.harness.codec import BlockedLayout


def add_parser(sub: Any) -> None:
    codec = sub.add_parser("codec", help="pack, unpack and inspect NPU layouts")
    actions = codec.add_subparsers(dest="action", required=True)

    pack = actions.add_parser("pack", help="logical tensor (.npy) -> device buffer (.bin)")
    add_layout_args(pack, tensor=False)
    pack.set_defaults(run=run_pack)

    unpack = actions.add_parser("unpack", help="device buffer (.bin) -> logical tensor (.npy)")
    add_layout_args(unpack)
    unpack.set_defaults(run=run_unpack)
    for action in (pack, unpack):
        action.add_argument("--in", dest="src", required=True, type=Path)
        action.add_argument("--out", dest="dst", required=True, type=Path)

    locate = actions.add_parser("locate", help="what lives at a byte offset")
    add_layout_args(locate)
    locate.add_argument("--offset", required=True, type=int)
    locate.add_argument("--json", action="store_true")
    locate.set_defaults(run=run_locate)

    describe = actions.add_parser("describe", help="sizes, strides, padding, predictions")
    add_layout_args(describe)
    describe.add_argument("--json", action="store_true")
    describe.set_defaults(run=run_describe)


def read_buffer(path: Path, layout: BlockedLayout, what: str, *, slack: bool = False) -> bytes:
    """A packed buffer file, read only when it is a regular file of at most the layout's size
    (``slack``: a device buffer may be longer, which the diff reports; twice is the bound)."""
    limit = 2 * layout.nbytes + 4096 if slack else layout.nbytes
    return bytes(files.read_regular(path, what, limit))


def run_pack(args: argparse.Namespace) -> int:
    tensor = files.load_npy(args.src)
    layout = layout_from_args(args, tensor.shape, tensor.dtype.name)
    files.write_regular(args.dst, layout.pack(tensor).data, "the packed buffer")
    print(f"{args.dst}: {layout.nbytes} bytes ({layout.name}, {layout.padding_bytes} padding)")
    return 0


def run_unpack(args: argparse.Namespace) -> int:
    layout = layout_from_args(args, parse_shape(args.shape), args.dtype)
    data = read_buffer(args.src, layout, f"a packed {layout.nbytes}-byte buffer")
    encoded = io.BytesIO()
    np.save(encoded, layout.unpack(data), allow_pickle=False)
    # as np.save(path) names it: with .npy added when it is not there
    dst = args.dst if args.dst.suffix == ".npy" else args.dst.with_name(args.dst.name + ".npy")
    files.write_regular(dst, encoded.getbuffer(), "the tensor (.npy)")
    print(f"{dst}: {layout.shape} {layout.dtype.name}")
    return 0


def run_locate(args: argparse.Namespace) -> int:
    layout = layout_from_args(args, parse_shape(args.shape), args.dtype)
    where = layout.locate(args.offset)
    if args.json:
        print_json(where.to_dict())
    else:
        print(where.describe())
    return 0


def run_describe(args: argparse.Namespace) -> int:
    layout = layout_from_args(args, parse_shape(args.shape), args.dtype)
    info = {
        "target": layout.target,
        "layout": layout.name,
        "role": layout.role,
        "shape": list(layout.shape),
        "dtype": layout.dtype.name,
        "nbytes": layout.nbytes,
        "padding_bytes": layout.padding_bytes,
        "strides": list(layout.strides),
        "dims": [
            {"name": d.name, "axis": d.axis, "size": d.size, "block": d.block, "stride": d.stride}
            for d in layout.dims
        ],
        "element_bytes": layout.encoding.nparts,
        "encoding": layout.encoding.kind,
        "value_bits": layout.encoding.value_bits,
        "params_given": dict(layout.params),
        "provenance": dict(layout.provenance),
        "attributes": dict(layout.attributes),
    }
    if args.json:
        print_json(info)
        return 0
    print(f"{layout.target} {layout.name} ({layout.role}) {list(layout.shape)} {layout.dtype.name}")
    print(f"  nbytes         {layout.nbytes} ({layout.padding_bytes} padding)")
    print(f"  strides        {list(layout.strides)} bytes per logical axis")
    dims = ", ".join(f"{d.name or d.axis}:{d.size}@{d.stride}" for d in layout.dims)
    print(f"  dims           {dims}")
    print(
        f"  element        {layout.encoding.nparts} byte(s), {layout.encoding.kind}, "
        f"{layout.encoding.value_bits} significant bits"
    )
    for key, source in layout.provenance.items():
        print(f"  {key:<14} {source}")
    for key, value in layout.attributes.items():
        print(f"  attr {key:<9} {value}")
    return 0
