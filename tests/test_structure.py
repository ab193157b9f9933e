"""The structure DESIGN.md promises, held as a ratchet: what the tree still owes is listed here
by name, so nothing new joins a list (a test fails) and every fix must strike its entry (a test
fails until it does). The restructure empties the lists.

- no import cycle between the packages of ``harness/`` (and ``targets/``);
- no module over ``MAX_LINES`` lines;
- outside ``targets/`` no code names a vendor or a target;
- the vendor units sit on the codec and not the other way round: ``harness/codec/`` imports
  nothing of ``targets/``, and ``targets/`` only the codec, the simulation kit, the error types
  and the file readers;
- the oracle (``harness/expect/``) imports nothing of the simulator (``harness/sim/``), so a
  real board's result is checked without it.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 600

# Package-level import cycles the tree still owes (each a set of packages that reach one
# another): none, and none may come back.
KNOWN_CYCLES: set[frozenset[str]] = set()

KNOWN_LONG_MODULES = {
    "npu_hil/harness/board/adapters/hobot_native.py",
    "npu_hil/harness/board/adapters/kneron.py",
    "npu_hil/harness/board/adapters/rknn_native.py",
}

# Files outside targets/ whose code (not their docstrings) names a vendor, a runtime or a target.
KNOWN_VENDOR_FILES = {
    "npu_hil/harness/board/adapters/hobot.py",
    "npu_hil/harness/board/adapters/hobot_native.py",
    "npu_hil/harness/board/adapters/kneron.py",
    "npu_hil/harness/board/adapters/rknn_native.py",
    "npu_hil/harness/board/adapters/rknnlite.py",
    "npu_hil/harness/cli/models_cmd.py",
    "npu_hil/harness/models/compile_set.py",
}
VENDOR_WORD = re.compile(
    r"rockchip|horizon|kneron|rknn|hobot|kl730|rk35\d\d|rv11\d\d|rk2118|rdk[-_]", re.IGNORECASE
)


def modules() -> dict[str, Path]:
    """``npu_hil.harness.codec.engine`` → its file, for harness/ and targets/."""
    found = {}
    for top in ("harness", "targets"):
        for path in sorted((REPO / "npu_hil" / top).rglob("*.py")):
            parts = list(path.relative_to(REPO / "npu_hil").with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(["npu_hil", *parts])] = path
    return found


def package_of(module: str) -> str:
    """The package a module belongs to: ``harness.codec``, ``targets``, or ``harness`` for the
    top-level modules (errors, folders, preflight...) and ``harness.plugin`` for the plugin's."""
    parts = module.split(".")[1:]
    if parts[0] == "targets":
        return "targets"
    if len(parts) >= 2 and (REPO / "npu_hil" / "harness" / parts[1]).is_dir():
        return f"harness.{parts[1]}"
    if len(parts) >= 2 and parts[1].startswith("plugin"):
        return "harness.plugin"
    return "harness"


def imports_of(module: str, path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level:
            base = module.split(".")
            base = base if path.name == "__init__.py" else base[:-1]
            base = base[: len(base) - node.level + 1]
            names.add(".".join(base + ([node.module] if node.module else [])))
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return {n for n in names if n.startswith("npu_hil.")}


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in modules().items():
        here = package_of(module)
        graph[here].update(p for p in map(package_of, imports_of(module, path)) if p != here)
    return graph


def cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components with more than one package (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    for node in sorted(set(graph) | {n for targets in graph.values() for n in targets}):
        if node not in index:
            visit(node)
    return found


def identifiers(node: ast.AST) -> list[str]:
    """The names a node spells in code: variables, attributes, imported modules."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.alias):
        return [node.name]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    return []


def names_a_vendor(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        text = node.value if isinstance(node, ast.Constant) else None
        if isinstance(text, str) and id(node) not in docstrings and VENDOR_WORD.search(text):
            return True
        if any(VENDOR_WORD.search(name) for name in identifiers(node)):
            return True
    return False


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == {frozenset({"a", "b", "c"})}
    assert cycles({"a": {"b"}}) == set()


def test_package_import_cycles_are_the_known_ones() -> None:
    found = cycles(package_graph())
    new = [sorted(c) for c in found - KNOWN_CYCLES]
    gone = [sorted(c) for c in KNOWN_CYCLES - found]
    assert not new, f"a new import cycle between packages: {new}"
    assert not gone, f"an import cycle is gone (or changed): update KNOWN_CYCLES: {gone}"


def test_the_plugin_features_import_one_way() -> None:
    """The plugin's feature modules feed one another in one direction (records are fed by the
    farm and run features and read none of them): no import cycle between them."""
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in modules().items():
        if module.startswith("npu_hil.harness.plugin."):
            graph[module].update(
                m for m in imports_of(module, path) if m.startswith("npu_hil.harness.plugin.")
            )
    assert graph, "no plugin feature modules found"
    found = sorted(sorted(c) for c in cycles(graph))
    assert not found, f"plugin features import each other: {found}"


MODULE_ACYCLIC = ("npu_hil.harness.farm", "npu_hil.harness.labgrid", "npu_hil.harness.transport")
"""Packages whose modules import one another in one direction only (the inventory's reading
modules under the farm, the transports under their configurations)."""
KNOWN_MODULE_CYCLES: set[frozenset[str]] = set()
"""Circles of modules inside those packages the tree still owes (a ratchet, like
KNOWN_CYCLES)."""


def module_graph(package: str) -> dict[str, set[str]]:
    """The imports between the modules of ``package`` (its ``__init__`` included)."""
    inside = {m: p for m, p in modules().items() if m == package or m.startswith(f"{package}.")}
    return {m: {i for i in imports_of(m, p) if i in inside and i != m} for m, p in inside.items()}


def test_module_cycles_inside_the_acyclic_packages_are_the_known_ones() -> None:
    found = set().union(*(cycles(module_graph(package)) for package in MODULE_ACYCLIC))
    new = [sorted(c) for c in found - KNOWN_MODULE_CYCLES]
    gone = [sorted(c) for c in KNOWN_MODULE_CYCLES - found]
    assert not new, f"modules importing one another in a circle: {new}"
    assert not gone, f"a circle of modules is gone: strike it from KNOWN_MODULE_CYCLES: {gone}"


def test_no_module_grows_past_the_limit() -> None:
    long = {
        path.relative_to(REPO).as_posix()
        for path in modules().values()
        if len(path.read_text(encoding="utf-8").splitlines()) > MAX_LINES
    }
    grown = sorted(long - KNOWN_LONG_MODULES)
    assert not grown, f"over {MAX_LINES} lines: {grown}"
    assert not KNOWN_LONG_MODULES - long, f"now short: strike {sorted(KNOWN_LONG_MODULES - long)}"


def test_vendor_names_stay_in_targets() -> None:
    naming = {
        path.relative_to(REPO).as_posix()
        for path in sorted((REPO / "npu_hil" / "harness").rglob("*.py"))
        if names_a_vendor(path)
    }
    assert not naming - KNOWN_VENDOR_FILES, (
        f"vendor or target names outside targets/: {sorted(naming - KNOWN_VENDOR_FILES)}"
    )
    assert not KNOWN_VENDOR_FILES - naming, (
        f"no longer names a vendor: strike {sorted(KNOWN_VENDOR_FILES - naming)}"
    )


def test_the_vendor_check_sees_code_and_not_docstrings(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('"""About Rockchip."""\nX = 1\n', encoding="utf-8")
    assert not names_a_vendor(sample)
    sample.write_text('"""Doc."""\nTARGET = "rk3588"\n', encoding="utf-8")
    assert names_a_vendor(sample)


def test_the_board_package_stands_alone_and_the_host_reads_it() -> None:
    """Board code reaches no other package; the agent's host side and the transports may read
    the board package (its wire format, its folder rule), and no transport reads the host side
    of the agent (the agent's session on a console is the agent side's code)."""
    graph = package_graph()
    assert graph.get("harness.board", set()) == set()
    assert "harness.board" in graph["harness.agent"]
    assert "harness.agent" not in graph["harness.transport"]


# What the vendor units may import of the harness: the codec they describe formats with, the
# kit they write their simulated runtime with, the error types they raise and the safe file
# readers (a compiler's calibration data).
TARGETS_MAY_IMPORT = (
    "npu_hil.targets",
    "npu_hil.harness.codec",
    "npu_hil.harness.simkit",
    "npu_hil.harness.errors",
    "npu_hil.harness.inputs",
)


def _is_in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _imports_under(folder: str) -> dict[str, set[str]]:
    prefix = "npu_hil." + folder.replace("/", ".")
    return {
        module: imports_of(module, path)
        for module, path in modules().items()
        if module == prefix or module.startswith(prefix + ".")
    }


def test_the_codec_imports_nothing_of_the_vendor_units() -> None:
    reaching = {
        module: sorted(n for n in names if _is_in(n, "npu_hil.targets"))
        for module, names in _imports_under("harness/codec").items()
    }
    assert not {m: n for m, n in reaching.items() if n}, "the codec must not import targets/"


def test_the_vendor_units_import_only_the_codec_and_the_errors() -> None:
    upward = {
        module: sorted(n for n in names if not any(_is_in(n, p) for p in TARGETS_MAY_IMPORT))
        for module, names in _imports_under("targets").items()
    }
    assert not {m: n for m, n in upward.items() if n}, f"targets/ imports upward: {upward}"


def test_the_oracle_imports_nothing_of_the_simulator() -> None:
    found = _imports_under("harness/expect")
    assert found, "harness/expect/ is the oracle stage"
    reaching = {
        module: sorted(n for n in names if _is_in(n, "npu_hil.harness.sim"))
        for module, names in found.items()
    }
    assert not {m: n for m, n in reaching.items() if n}, f"the oracle imports the sim: {reaching}"


def test_the_simulation_kit_imports_neither_the_units_nor_the_simulator() -> None:
    found = _imports_under("harness/simkit")
    assert found, "harness/simkit/ is what vendor units write their simulated runtime with"
    reaching = {
        module: sorted(
            n for n in names if _is_in(n, "npu_hil.targets") or _is_in(n, "npu_hil.harness.sim")
        )
        for module, names in found.items()
    }
    assert not {m: n for m, n in reaching.items() if n}, f"harness/simkit/ reaches up: {reaching}"


def test_the_direction_checks_see_an_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from npu_hil.harness.sim.tensors import SimTensor\n", encoding="utf-8")
    assert imports_of("npu_hil.harness.expect.sample", sample) == {"npu_hil.harness.sim.tensors"}


# The one direction of flow (DESIGN.md, "Layers"): a package imports only packages of a lower
# layer, never one of its own layer or above. The board package is the bottom: it is sent to
# boards alone. ``harness`` is the top-level modules (errors, folders, inputs, the YAML reader).
LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(layer.split())
    for layer in (
        "harness.board",
        "harness",
        "harness.codec harness.report harness.labgrid harness.emulated",
        "harness.simkit",
        "targets",
        "harness.models harness.diff harness.preflight harness.history",
        "harness.expect harness.sim harness.transport",
        "harness.agent",
        "harness.farm",
        "harness.pipeline harness.simfarm",
        "harness.plugin harness.soak",
        "harness.cli",
    )
)


def layer_of(package: str) -> int:
    for depth, layer in enumerate(LAYERS):
        if package in layer:
            return depth
    raise AssertionError(f"{package} is in no layer of LAYERS: place it there (and in DESIGN.md)")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{package} (layer {layer_of(package)}) imports {other} (layer {layer_of(other)})"
        for package, imported in graph.items()
        for other in imported
        if layer_of(other) >= layer_of(package)
    )


def test_every_package_has_a_layer() -> None:
    graph = package_graph()
    for package in set(graph) | {p for targets in graph.values() for p in targets}:
        layer_of(package)


def test_no_package_imports_upward_or_sideways() -> None:
    found = upward_imports(package_graph())
    assert not found, "imports against the flow:\n" + "\n".join(found)


def test_the_layer_check_sees_an_upward_import() -> None:
    assert upward_imports({"harness.codec": {"harness.farm"}})
    assert upward_imports({"harness.sim": {"harness.expect"}})
    assert not upward_imports({"harness.farm": {"harness.codec"}})


def module_closure(start: str) -> set[str]:
    """Every module of the tree importing ``start`` loads (its parent packages included)."""
    found = modules()
    imported = {m: {i for i in imports_of(m, p) if i in found} for m, p in found.items()}
    seen: set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        parents = (".".join(parts[:k]) for k in range(2, len(parts)))
        todo.extend(parent for parent in parents if parent in found)
        todo.extend(imported.get(module, ()))
    return seen


def test_the_real_board_path_loads_nothing_of_the_simulator() -> None:
    """run_model on a real board (the pipeline, the farm, the agent's client) never loads
    harness/sim/: the oracle is harness/expect/, fed by the vendor units."""
    assert "npu_hil.harness.expect" in module_closure("npu_hil.harness.pipeline")
    for start in (
        "npu_hil.harness.pipeline",
        "npu_hil.harness.farm",
        "npu_hil.harness.agent.client",
    ):
        loaded = module_closure(start)
        simulator = sorted(m for m in loaded if _is_in(m, "npu_hil.harness.sim"))
        assert not simulator, f"{start} loads the simulator: {simulator}"


def test_every_data_file_of_the_packages_is_installed() -> None:
    # A data file a module reads (a vendor's tables) that pyproject.toml's package-data does
    # not list is missing from an installed npu-hil: the checkout's tests pass, tox's fail.
    import tomllib

    listed = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]
    installed = {
        (package.replace("npu_hil.", "", 1).replace(".", "/") if package != "npu_hil" else "")
        + "/"
        + name
        for package, names in listed.items()
        for name in names
    }
    missing = sorted(
        path.relative_to(REPO).as_posix()
        for top in ("harness", "targets")
        for path in (REPO / "npu_hil" / top).rglob("*")
        if path.is_file()
        and path.suffix not in (".py", ".pyc", ".so")
        and "__pycache__" not in path.parts
        and path.relative_to(REPO / "npu_hil").as_posix() not in installed
    )
    assert not missing, f"not in pyproject.toml's package-data: {missing}"
