"""The site's generated pages, written at build time from the code they describe.

- ``reference/cli.md``: every ``npu-hil`` command and option, from
  :func:`npu_hil.harness.cli.main.build_parser`;
- ``reference/pytest.md``: the plugin's markers (as pytest registers them), fixtures (their
  docstrings), command-line options and ini settings (the features' ``pytest_addoption``);
- ``reference/inventory.md``: every inventory key, from the pydantic models of
  :mod:`npu_hil.harness.farm.inventory`, with the error a misspelling of it gets;
- ``runtime/layouts.md``: every layout of a representative target of each vendor, drawn byte by
  byte from the codec's own ``locate``.

mkdocs-gen-files runs this file during ``mkdocs build``; ``pages()`` is what it writes, and the
documentation tests call it too.
"""

from __future__ import annotations

import argparse
import html
import importlib
import inspect
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel

from npu_hil.harness.errors import NpuHilError

# ---------------------------------------------------------------------------------------------
# The command line


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, Any]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def _option_row(action: argparse.Action) -> str:
    if action.option_strings:
        names = ", ".join(f"`{name}`" for name in action.option_strings)
        if action.nargs != 0:
            metavar = action.metavar or action.dest.upper()
            if isinstance(metavar, tuple):
                metavar = " ".join(metavar)
            names += f" `{metavar}`"
    else:
        names = f"`{action.metavar or action.dest}`"
    what = (action.help or "").replace("%(default)s", str(action.default)).replace("%%", "%")
    if action.required and action.option_strings:
        shown = "required"
    else:
        shown = _shown(action.default) if action.option_strings and action.nargs != 0 else ""
    return _row(names, what, action.choices, shown)


def _shown(default: Any) -> str:
    """A default worth showing, as code; nothing for an unset or empty one."""
    return f"`{default}`" if default not in (None, False, [], "", argparse.SUPPRESS) else ""


def _row(names: str, what: str, choices: Any, shown: str) -> str:
    """A table row of an option, the CLI's and the plugin's alike: its help on one line, its
    choices, and its default."""
    what = " ".join(what.split()).replace("|", "\\|")
    if choices:
        what += " (one of " + ", ".join(f"`{choice}`" for choice in choices) + ")"
    return f"| {names} | {what} | {shown} |"


def _command_section(path: list[str], parser: Any, summary: str, level: int) -> list[str]:
    lines = [f"{'#' * level} `{' '.join(path)}`", ""]
    description = parser.description or summary
    if description:
        lines += [textwrap.dedent(description).strip(), ""]
    usage = parser.format_usage().removeprefix("usage: ").strip()
    lines += ["```text", " ".join(usage.split()), "```", ""]
    actions = [
        action
        for action in parser._actions
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
    ]
    if actions:
        lines += ["| option | what | default |", "|---|---|---|"]
        lines += [_option_row(action) for action in actions]
        lines.append("")
    if parser.epilog:
        lines += [textwrap.dedent(parser.epilog).strip(), ""]
    for name, help_text, sub in _subcommands(parser):
        lines += _command_section([*path, name], sub, help_text, min(level + 1, 4))
    return lines


def commands() -> list[str]:
    """Every command's words, ``npu-hil codec pack`` included: what the CLI page documents."""
    from npu_hil.harness.cli.main import build_parser

    found: list[str] = []

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        for name, _, sub in _subcommands(parser):
            found.append(" ".join([*path, name]))
            walk(sub, [*path, name])

    walk(build_parser(), ["npu-hil"])
    return found


def cli_page() -> str:
    from npu_hil.harness.cli.main import build_parser

    parser = build_parser()
    lines = [
        "# Command line: `npu-hil`",
        "",
        "Written at build time from the parser (`npu_hil.harness.cli.main.build_parser`), so it "
        "is what `npu-hil ... --help` says. Bad input exits 2 with one line on stderr; every "
        "listing takes `--json`.",
        "",
        "Commands: " + ", ".join(f"`{command}`" for command in commands()) + ".",
        "",
    ]
    for name, help_text, sub in _subcommands(parser):
        lines += _command_section(["npu-hil", name], sub, help_text, 2)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The pytest plugin


def plugin_markers() -> list[tuple[str, str]]:
    """The markers the plugin registers: ``pytest --markers`` with it, less without it."""

    def markers(*extra: str) -> dict[str, str]:
        with tempfile.TemporaryDirectory() as folder:
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "--markers", "-p", "no:cacheprovider", *extra],
                cwd=folder,
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "PYTEST_ADDOPTS": ""},
            )
        found = {}
        for line in done.stdout.splitlines():
            if line.startswith("@pytest.mark."):
                head, _, what = line.removeprefix("@pytest.mark.").partition(": ")
                found[head] = what.strip()
        return found

    without = markers("-p", "no:npu_hil")
    return [(head, what) for head, what in markers().items() if head not in without]


def _features() -> list[Any]:
    from npu_hil.harness import plugin

    return [plugin, *(importlib.import_module(name) for name in plugin.FEATURES)]


def plugin_fixtures() -> list[tuple[str, str, str, str]]:
    """(name, scope, module, docstring) of every fixture the plugin defines."""
    found = []
    for module in _features():
        for name, value in vars(module).items():
            marker = getattr(value, "_fixture_function_marker", None) or getattr(
                value, "_pytestfixturefunction", None
            )
            if marker is None or name.startswith("_"):
                continue
            doc = inspect.getdoc(value) or ""
            found.append((marker.name or name, marker.scope, module.__name__, doc))
    return found


def plugin_options() -> tuple[list[Any], list[tuple[str, str, Any]]]:
    """The options of the plugin's ``npu-hil`` group and its ini settings, as registered."""
    from _pytest.config.argparsing import Parser

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parser = Parser()
    for module in _features():
        hook = getattr(module, "pytest_addoption", None)
        if hook is not None and len(inspect.signature(hook).parameters) == 1:
            hook(parser)
    group = parser.getgroup("npu-hil")
    inis = [(name, spec[0], spec[2]) for name, spec in parser._inidict.items()]
    return list(group.options), inis


def pytest_page() -> str:
    lines = [
        "# pytest: markers, fixtures, options",
        "",
        "Written at build time from the plugin (`npu_hil.harness.plugin` and its features): the "
        "markers as pytest registers them, the fixtures with their docstrings, the options of "
        "its `npu-hil` group and its ini settings.",
        "",
        "## Markers",
        "",
        "| marker | what |",
        "|---|---|",
    ]
    lines += [f"| `@pytest.mark.{head}` | {what} |" for head, what in plugin_markers()]
    lines += ["", "## Fixtures", ""]
    for name, scope, module, doc in plugin_fixtures():
        lines += [f"### `{name}`", "", f"Scope `{scope}`, defined in `{module}`.", ""]
        lines += [_roles(doc), ""]
    options, inis = plugin_options()
    lines += ["## Options", "", "| option | what | default |", "|---|---|---|"]
    for option in options:
        attrs = option.attrs()
        names = ", ".join(f"`{name}`" for name in option.names())
        if attrs.get("metavar"):
            names += f" `{attrs['metavar']}`"
        help_text = attrs.get("help") or ""
        lines.append(_row(names, help_text, attrs.get("choices"), _shown(attrs.get("default"))))
    lines += ["", "## ini settings", "", "| setting | what | default |", "|---|---|---|"]
    lines += [f"| `{name}` | {what} | `{default}` |" for name, what, default in inis]
    return "\n".join(lines) + "\n"


def _roles(doc: str) -> str:
    """Sphinx roles (``:class:`~a.b.C```) as code spans."""
    doc = re.sub(r":\w+:`~?([^`]+)`", lambda m: f"`{m.group(1)}`", doc)
    return doc.replace("``", "`")


# ---------------------------------------------------------------------------------------------
# The inventory

_MINIMAL: dict[str, tuple[str, str]] = {
    # model name: (YAML with {key} where the misspelt key goes, the key's dotted place)
    "InventoryFile": ("{key}: x\nboards: []\n", ""),
    "Defaults": ("defaults: {{{key}: x}}\nboards: []\n", "defaults."),
    "BoardEntry": ("boards:\n  - {{name: a, target: rk3588, {key}: x}}\n", "boards[]."),
    "Timeouts": (
        "boards:\n  - {{name: a, target: rk3588, timeouts: {{{key}: 1}}}}\n",
        "boards[].timeouts.",
    ),
    "Power": (
        "boards:\n  - {{name: a, target: rk3588, power: {{{key}: x}}}}\n",
        "boards[].power.",
    ),
    "PowerCommands": (
        "boards:\n  - {{name: a, target: rk3588, power: {{command: {{{key}: [x]}}}}}}\n",
        "boards[].power.command.",
    ),
    "LocalEntry": (
        "boards:\n  - {{name: a, target: rk3588, transport: {{kind: local, {key}: x}}}}\n",
        "boards[].transport (local).",
    ),
    "SshEntry": (
        "boards:\n  - {{name: a, target: rk3588, transport: {{kind: ssh, host: h, {key}: x}}}}\n",
        "boards[].transport (ssh).",
    ),
    "SerialEntry": (
        "boards:\n  - {{name: a, target: rk3588, transport: {{kind: serial, port: p, {key}: x}}}}"
        "\n",
        "boards[].transport (serial).",
    ),
    "LabgridEntry": ("labgrid: {{coordinator: c, {key}: x}}\n", "labgrid."),
    "PlaceEntry": (
        "labgrid: {{coordinator: c, places: [{{place: p, {key}: x}}]}}\n",
        "labgrid.places[].",
    ),
    "SshLogin": ("labgrid: {{coordinator: c, ssh: {{{key}: x}}}}\n", "labgrid.ssh."),
    "SerialLogin": ("labgrid: {{coordinator: c, serial: {{{key}: x}}}}\n", "labgrid.serial."),
}


def misspelt(key: str) -> str:
    """The key with two neighbouring letters swapped (a typo a person makes)."""
    at = 1 if len(key) > 2 else 0
    if key[at] == key[at + 1]:
        return key[:at] + key[at + 1 :]
    return key[:at] + key[at + 1] + key[at] + key[at + 2 :]


def typo_error(model: str, key: str) -> str:
    """The error ``farm.yaml`` gets with ``key`` misspelt at its place."""
    from npu_hil.harness.farm.inventory import parse_inventory

    text = _MINIMAL[model][0].format(key=misspelt(key))
    try:
        parse_inventory(text, source="farm.yaml")
    except NpuHilError as exc:
        return exc.message
    raise AssertionError(f"a misspelt {key!r} was taken: {text!r}")


def _type_name(annotation: Any) -> str:
    """``Literal['sim', 'none'] | None`` as ``sim or none``; a model by the key it is under."""
    import types
    import typing

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return " or ".join(f"`{arg}`" for arg in args)
    if origin in (typing.Union, types.UnionType):
        kinds = [arg for arg in args if arg is not type(None)]
        if len(kinds) > 1 and all(isinstance(a, type) and issubclass(a, BaseModel) for a in kinds):
            return "`local`, or a mapping whose `kind` says which of those below"
        return " or ".join(_type_name(arg) for arg in args if arg is not type(None))
    if origin in (list, tuple):
        return "a list of " + _type_name(args[0]) if args else "a list"
    if origin is dict:
        return "a mapping"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "a mapping (below)"
    return {str: "text", int: "an integer", float: "a number", bool: "true or false"}.get(
        annotation, getattr(annotation, "__name__", str(annotation))
    )


def inventory_models() -> list[tuple[str, type[BaseModel]]]:
    """Every model of the file, the file first, each once, in the order a reader meets them."""
    from npu_hil.harness.farm import inventory

    order: list[type[BaseModel]] = [
        inventory.InventoryFile,
        inventory.Defaults,
        inventory.BoardEntry,
        inventory.LocalEntry,
        inventory.SshEntry,
        inventory.SerialEntry,
        inventory.Timeouts,
        inventory.Power,
        inventory.PowerCommands,
        inventory.LabgridEntry,
        inventory.PlaceEntry,
        inventory.SshLogin,
        inventory.SerialLogin,
    ]
    return [(model.__name__, model) for model in order]


def inventory_keys() -> list[tuple[str, str, str]]:
    """(model, key, the key's dotted place) for every key of every model."""
    return [
        (name, key, _MINIMAL[name][1] + key)
        for name, model in inventory_models()
        for key in model.model_fields
    ]


def inventory_page() -> str:
    lines = [
        "# Inventory keys",
        "",
        "Written at build time from the typed models the inventory is checked with "
        "(`npu_hil.harness.farm.inventory`). Every mapping refuses a key it does not "
        "know, and a key written with nothing after it (`key_file: ~`). The last column is "
        "the error a file named `farm.yaml` gets when the key is misspelt (two letters "
        "swapped), made by the inventory reader while this page was built.",
        "",
        "How to write an inventory, with examples: [The inventory](../farm/inventory.md).",
        "",
    ]
    for name, model in inventory_models():
        place = _MINIMAL[name][1].rstrip(".") or "the file's top level"
        lines += [f"## `{place}`", ""]
        doc = inspect.getdoc(model)
        if doc and model.__doc__:
            lines += [_roles(doc), ""]
        lines += ["| key | type | default | a typo gives |", "|---|---|---|---|"]
        for key, field in model.model_fields.items():
            default = "required" if field.is_required() else ""
            if not field.is_required():
                value = field.get_default(call_default_factory=True)
                if isinstance(value, BaseModel):
                    value = "(its defaults)"
                default = f"`{value}`" if value not in (None, (), [], {}) else ""
            kind = field.description or _type_name(field.annotation)
            kind = kind.replace("|", "or")
            error = typo_error(name, key).replace("|", "\\|")
            lines.append(f"| `{key}` | {kind} | {default} | `{error}` |")
        lines.append("")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The layouts, drawn

PICTURED = ("kl730", "rk3588", "rk3562", "rdk-x5", "rdk-s100")
"""A target of each vendor, and the Rockchip and Horizon ones whose rules differ (C2, strides)."""
SHAPES = ((1, 3, 2, 3), (1, 17, 2, 3), (1, 4, 2, 3), (1, 1, 2, 3), (1, 3, 4, 6), (1, 6, 8))
COLUMNS = 16
MAX_ROWS = 24
CELL_W, CELL_H = 42, 22


def _dtypes(target: str, layout: str) -> tuple[str, ...]:
    if target == "kl730":
        sixteen = "16B" in layout or layout.endswith(("HL", "HL_CH_COMPACT"))
        return ("int16",) if sixteen else ("int8", "uint8")
    return ("int8", "uint8", "float16")


def pictured_layouts() -> list[tuple[str, str, str, tuple[int, ...], str]]:
    """(target, layout, role, shape, dtype): each layout of each pictured target, at the first
    small shape and type the codec takes for it."""
    from npu_hil.harness.codec import LayoutError, get_layout, layout_names

    found: list[tuple[str, str, str, tuple[int, ...], str]] = []
    for target in PICTURED:
        for layout in layout_names(target):
            for role in ("input", "output"):
                chosen = None
                for shape in SHAPES:
                    for dtype in _dtypes(target, layout):
                        try:
                            get_layout(target, layout, shape, dtype, role=role)
                        except (LayoutError, ValueError, KeyError):
                            continue
                        chosen = (target, layout, role, shape, dtype)
                        break
                    if chosen:
                        break
                if chosen:
                    found.append(chosen)
    return found


def _label(location: Any) -> str:
    index = location.index
    names = location.axis_names
    parts = [str(value) for name, value in zip(names, index, strict=False) if name != "n"]
    text = ",".join(parts)
    if location.part:
        text += f" {location.part}"
    return text


def _colour(channel: int) -> str:
    hue = (channel * 47) % 360
    return f"hsl({hue}, 65%, 78%)"


def layout_svg(layout: Any, title: str) -> str:
    """The buffer as rows of 16 bytes, each byte labelled with the element it holds (its
    indices after N) or drawn grey as padding, by the codec's ``locate``."""
    count = min(layout.nbytes, COLUMNS * MAX_ROWS)
    rows = -(-count // COLUMNS)
    width = 40 + COLUMNS * CELL_W
    height = 6 + rows * CELL_H + 4
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="9">',
        f"<title>{html.escape(title)}</title>",
    ]
    for offset in range(count):
        location = layout.locate(offset)
        row, column = divmod(offset, COLUMNS)
        x, y = 40 + column * CELL_W, 6 + row * CELL_H
        if column == 0:
            parts.append(f'<text x="2" y="{y + 15}" fill="#555">{offset}</text>')
        if location.padding or location.index is None:
            fill, label = "#d9d9d9", ""
        else:
            names = list(location.axis_names)
            # Coloured by channel; a frame without one (NV12, Y) by its row.
            channel = location.index[names.index("c") if "c" in names else 1]
            fill, label = _colour(int(channel)), _label(location)
        parts.append(
            f'<rect x="{x}" y="{y}" width="{CELL_W - 2}" height="{CELL_H - 2}" fill="{fill}"/>'
        )
        if label:
            parts.append(
                f'<text x="{x + (CELL_W - 2) / 2}" y="{y + 14}" text-anchor="middle">'
                f"{html.escape(label)}</text>"
            )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def layouts_page(pictures: dict[str, str]) -> str:
    from npu_hil.harness.codec import get_layout

    lines = [
        "# Every layout, drawn",
        "",
        "Each picture is a buffer as the codec lays it out, drawn at build time from "
        "`npu_hil.harness.codec` itself: sixteen bytes a row, the byte offset of each row on "
        "the left, each byte labelled with the element it holds (its indices after N, e.g. "
        "`c,h,w` for an NCHW tensor; `L`/`H` for the low and high byte of a 16-bit value "
        "split into planes), coloured by channel, and padding grey. Long buffers show their "
        f"first {COLUMNS * MAX_ROWS} bytes. The parameters are the codec's predictions for "
        "the target (what a runtime reports replaces them on a board).",
        "",
        "What the layouts are and which parameters move them: [The codec](codec.md).",
        "",
    ]
    current = None
    for target, layout_name, role, shape, dtype in pictured_layouts():
        if target != current:
            lines += [f"## `{target}`", ""]
            current = target
        layout = get_layout(target, layout_name, shape, dtype, role=role)
        name = f"{target}-{layout_name}-{role}.svg".replace("/", "_")
        pictures[name] = layout_svg(layout, f"{target} {layout_name} {role}")
        shown_shape = "x".join(str(n) for n in shape)
        kept = min(layout.nbytes, COLUMNS * MAX_ROWS)
        lines += [
            f"### {layout_name}, {role}",
            "",
            f"`get_layout({target!r}, {layout_name!r}, ({', '.join(map(str, shape))}), "
            f"{dtype!r}, role={role!r})`: a {shown_shape} {dtype} tensor in "
            f"{layout.nbytes} bytes, {layout.padding_bytes} of them padding"
            + (f" (the first {kept} drawn)" if kept < layout.nbytes else "")
            + ".",
            "",
            f"![{target} {layout_name} {role}](layouts/{name})",
            "",
        ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------


GENERATED = (
    "reference/cli.md",
    "reference/pytest.md",
    "reference/inventory.md",
    "runtime/layouts.md",
)
"""The pages this file writes (and the pictures of the last), in the order :func:`pages` gives."""


def pages() -> dict[str, str]:
    """Each generated file's path under docs/ and its text."""
    pictures: dict[str, str] = {}
    texts = (cli_page(), pytest_page(), inventory_page(), layouts_page(pictures))
    found = dict(zip(GENERATED, texts, strict=True))
    found.update({f"runtime/layouts/{name}": svg for name, svg in pictures.items()})
    return found


def _write(opener: Callable[..., Any]) -> None:
    for path, text in pages().items():
        with opener(path, "w") as out:
            out.write(text)


if __name__ in {"__main__", "<run_path>"}:
    import mkdocs_gen_files  # type: ignore[import-not-found,unused-ignore]

    _write(mkdocs_gen_files.open)
