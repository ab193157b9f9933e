"""Mutated inventories, for the parser's fuzz test and for counting by hand.

Valid inventories (the repository's ``inventory.yaml``, the emulated boards' one, a farm of real
boards, a labgrid section, the inventory ``npu-hil simfarm up`` writes) are mutated at the
YAML-text level (characters, tokens and lines inserted, removed, swapped) and at the node level
(a node replaced by a hostile value, a key renamed, entries dropped, aliased, merged, nested
deep), and handed to
:func:`npu_hil.harness.farm.parse_inventory`. The contract: it returns an inventory, or raises an
``InventoryError`` whose message starts with ``file:line:col``; never another exception, never a
hang.

The mutations draw their choices from a :class:`Chooser`, so the same code runs under hypothesis
(the test) and under :mod:`random` (this script, which counts)::

    python tests/farm/inventory_fuzz.py --inputs 20000 --seed 1
"""

from __future__ import annotations

import argparse
import collections
import copy
import dataclasses
import random
import re
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

ROOT = Path(__file__).resolve().parents[2]
SOURCE = "fuzz.yaml"
POSITION = re.compile(re.escape(SOURCE) + r":\d+:\d+: ")
HANG_SECONDS = 5.0

_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_STR = "tag:yaml.org,2002:str"

FARM = """\
defaults:
  fallback: sim
  python: /usr/bin/python3
  workdir: /tmp/npu-hil
  timeouts: {run: 30, connect: 10.5}
manifest: models/manifest.yaml
boards:
  - name: rk3588-01
    target: rk3588
    backend: hw
    transport: {kind: ssh, host: 10.0.0.21, port: 22, user: root, key_file: ~/.ssh/farm,
                host_key_policy: accept-new, known_hosts: farm_known_hosts}
    tags: [rack-a, fast]
    power: {command: {cycle: "pdu-ctl cycle 3"}}
    timeouts: {load: 300}
  - name: rdk-x5-01
    target: rdk-x5
    backend: hw
    fallback: none
    transport: {kind: serial, port: "rfc2217://exporter:4001", baudrate: 1500000,
                user: root, password_env: RDK_PASSWORD}
    power: {command: {on: [pdu-ctl, on, 4], off: [pdu-ctl, off, 4]}}
  - name: kl730-01
    target: kl730
    backend: hw
    transport: {kind: ssh, host: kl730.lab, port: 2222}
    adapter: kneron
    power: {labgrid: kl730-place}
  - {name: rv1106-sim, target: rv1106, transport: local}
"""

LABGRID = """\
defaults:
  adapter: rknn_native
  timeouts: {health: 60}
labgrid:
  coordinator: coordinator.farm.lan:20408
  places:
    - rk3588-a
    - {place: kl730-b, target: kl730, adapter: kneron, workdir: /data/npu-hil, fallback: sim}
  tags: {pool: npu}
  wait: 600
  refresh: 20
  prio: -1
  target_tag: target
  prefer: ssh
  ssh: {user: root, key_file: ~/.ssh/farm_ed25519, known_hosts: farm_known_hosts,
        host_key_policy: strict}
  serial: {user: root, password_env: FARM_CONSOLE_PASSWORD}
"""

SIMFARM = """\
# Written by `npu-hil simfarm up`
defaults: {fallback: none}
manifest: /work/models/manifest.yaml
boards:
- name: rk3588-ssh
  target: rk3588
  backend: sim
  transport: {kind: ssh, host: 127.0.0.1, port: 40022, user: root, key_file: /tmp/farm/id_ed25519,
    known_hosts: /tmp/farm/known_hosts}
  workdir: /tmp/farm/boards/rk3588-ssh
  python: /usr/bin/python3
- name: rdk-x5-serial
  target: rdk-x5
  backend: sim
  transport: {kind: serial, port: 'rfc2217://127.0.0.1:40100', baudrate: 115200}
  workdir: /tmp/farm/boards/rdk-x5-serial
"""


def seeds() -> list[tuple[str, str]]:
    """The valid inventories the mutations start from."""
    return [
        ("inventory.yaml", (ROOT / "inventory.yaml").read_text(encoding="utf-8")),
        ("farm", FARM),
        ("labgrid", LABGRID),
        ("simfarm", SIMFARM),
        ("emulated", (ROOT / "tests/emulated/inventory.yaml").read_text(encoding="utf-8")),
    ]


# Values that broke the parser or could: each a YAML fragment, composed into a node.
HOSTILE = (
    "!!int ''",
    "!!int x",
    "!!int 0x",
    "!!float x",
    "!!float ''",
    "!!bool maybe",
    "!!null x",
    "9" * 4301,
    "-" + "9" * 5000,
    "1" + "0" * 400,
    "1.0e+999",
    ".inf",
    "-.inf",
    ".nan",
    ".NaN",
    "1:30",
    "190:20:30",
    "1:30.5",
    "0x1F",
    "0o17",
    "022",
    "0b101",
    "1_000",
    "+22",
    "-0",
    "-1",
    "0",
    "65536",
    "99999999999999999999",
    "86401",
    "1e3",
    "1.5",
    "0.0000001",
    "'~.ssh/farm'",
    "~.ssh/farm",
    "'~nosuchuser-x/key'",
    "'~'",
    '"a\\0b"',
    '"\\ud800"',
    '"\\udcff/key"',
    '"\\x1b[31m"',
    '"\\u202e"',
    "!-1",
    "!-1 5",
    "!foo bar",
    "!foo",
    "!!binary AAAA",
    "!!binary ''",
    "!!timestamp 2001-12-14",
    "2001-12-14",
    "!!set {a}",
    "!!omap [a: 1]",
    "!!pairs [a: 1]",
    "!!python/object/apply:os.system [true]",
    "!!python/name:os.system",
    "!<tag:example.com,2000:x> 1",
    "!!merge <<",
    "!!value =",
    "!!str",
    "!!map {}",
    "!!seq []",
    "!!str 22",
    "!!int 22",
    "!!float 30",
    "yes",
    "no",
    "on",
    "off",
    "true",
    "~",
    "null",
    "''",
    "' '",
    "'\\t'",
    "x" * 5000,
    "[]",
    "{}",
    "[a, [b]]",
    "{a: 1}",
    "{? [a]: b}",
    "'-----BEGIN OPENSSH PRIVATE KEY-----'",
)

KEYS = (
    "name",
    "target",
    "backend",
    "transport",
    "fallback",
    "tags",
    "adapter",
    "python",
    "workdir",
    "power",
    "timeouts",
    "kind",
    "host",
    "port",
    "user",
    "key_file",
    "host_key_policy",
    "known_hosts",
    "baudrate",
    "password_env",
    "command",
    "labgrid",
    "on",
    "off",
    "cycle",
    "connect",
    "load",
    "run",
    "health",
    "defaults",
    "boards",
    "manifest",
    "coordinator",
    "places",
    "wait",
    "refresh",
    "prio",
    "target_tag",
    "prefer",
    "ssh",
    "serial",
    "place",
    "password",
    "key",
    "token",
    "<<",
    "",
    "9" * 4301,
    "~",
)

TOKENS = (
    *HOSTILE,
    ": ",
    "- ",
    "\n",
    "\n  ",
    "\t",
    "#",
    "&a ",
    "*a",
    "&a",
    "<<: *a",
    "<<: ",
    "? ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "'",
    '"',
    "|",
    ">",
    "%YAML 1.1\n---\n",
    "---\n",
    "...\n",
    "!",
    "@",
    "`",
    "\x00",
    "\x85",
    "\ufeff",
    "\\",
    "%TAG ! tag:yaml.org,2002:\n---\n",
    "[" * 500 + "]" * 500,
    "{a: " * 500 + "b" + "}" * 500,
    "- " * 600 + "x",
    "".join(f"{' ' * i}a:\n" for i in range(500)),
)

CHARS = "\t\n :-{}[],'\"&*!%@`|>#?\\0a9.~\x00\x7f\u2028"


class Chooser(Protocol):
    """The source of the mutations' choices."""

    def below(self, n: int) -> int:
        """An integer in [0, n)."""


class RandomChooser:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def below(self, n: int) -> int:
        return self.rng.randrange(n)


def pick(c: Chooser, items: Sequence[Any]) -> Any:
    return items[c.below(len(items))]


# --- the node level -----------------------------------------------------------------------------


def _walk(root: Node) -> Iterator[tuple[Node, Any, Any]]:
    """Every node with its container and its place there: (node, parent, index)."""
    stack: list[tuple[Node, Any, Any]] = [(root, None, None)]
    seen: set[int] = set()
    while stack:
        node, parent, index = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node, parent, index
        if isinstance(node, MappingNode):
            for i, (key, value) in enumerate(node.value):
                stack.append((key, node, (i, 0)))
                stack.append((value, node, (i, 1)))
        elif isinstance(node, SequenceNode):
            stack.extend((item, node, i) for i, item in enumerate(node.value))


def _put(parent: Any, index: Any, node: Node) -> None:
    if isinstance(index, tuple):
        i, side = index
        pair = list(parent.value[i])
        pair[side] = node
        parent.value[i] = tuple(pair)
    else:
        parent.value[index] = node


def _fragment(c: Chooser) -> Node:
    node = yaml.compose(pick(c, HOSTILE), Loader=yaml.SafeLoader)
    return node if node is not None else ScalarNode("tag:yaml.org,2002:null", "")


def _nested(c: Chooser, inner: Node) -> Node:
    depth = pick(c, (2, 10, 40))  # deeper ones come as text: the serialiser recurses
    for _ in range(depth):
        if c.below(2):
            inner = SequenceNode(_SEQ, [inner])
        else:
            inner = MappingNode(_MAP, [(ScalarNode(_STR, pick(c, KEYS) or "k"), inner)])
    return inner


def mutate_nodes(c: Chooser, root: Node) -> Node:
    """One node-level change to the tree ``root`` (in place; the new root is returned)."""
    nodes = list(_walk(root))
    node, parent, index = pick(c, nodes)
    op = c.below(8)
    if op == 0 or parent is None:  # a hostile value
        replacement = _fragment(c)
    elif op == 1:  # a key renamed, maybe with a tag
        maps = [n for n, _, _ in nodes if isinstance(n, MappingNode) and n.value]
        if not maps:
            return root
        target = pick(c, maps)
        i = c.below(len(target.value))
        tag = pick(c, (_STR, _STR, "tag:yaml.org,2002:merge", "!k", "tag:yaml.org,2002:binary"))
        key = ScalarNode(tag, pick(c, KEYS))
        target.value[i] = (key, target.value[i][1])
        return root
    elif op == 2:  # an entry or item dropped
        if isinstance(parent, MappingNode):
            del parent.value[index[0]]
        else:
            del parent.value[index]
        return root
    elif op == 3:  # an alias: the same node in two places (the serialiser writes &id/*id)
        replacement = pick(c, nodes)[0]
    elif op == 4:  # the node inside itself
        if isinstance(node, (MappingNode, SequenceNode)):
            if isinstance(node, MappingNode):
                node.value.append((ScalarNode(_STR, pick(c, KEYS) or "k"), node))
            else:
                node.value.append(node)
        return root
    elif op == 5:  # nested deep
        replacement = _nested(c, node)
    elif op == 6:  # an entry duplicated, or a merge key
        if isinstance(parent, MappingNode):
            key, value = parent.value[index[0]]
            if c.below(2):
                parent.value.append((key, copy.copy(value)))
            else:
                merge = ScalarNode("tag:yaml.org,2002:merge", "<<")
                parent.value.append((merge, pick(c, [n for n, _, _ in nodes])))
        return root
    else:  # a scalar's tag changed
        if isinstance(node, ScalarNode):
            node.tag = pick(
                c,
                (
                    "tag:yaml.org,2002:int",
                    "tag:yaml.org,2002:float",
                    "tag:yaml.org,2002:bool",
                    "tag:yaml.org,2002:null",
                    "tag:yaml.org,2002:binary",
                    "!-1",
                    "!x",
                    _STR,
                ),
            )
        return root
    if parent is None:
        return replacement
    _put(parent, index, replacement)
    return root


def node_level(c: Chooser, text: str) -> str:
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    for _ in range(1 + c.below(3)):
        root = mutate_nodes(c, root)
    return str(yaml.serialize(root, Dumper=yaml.SafeDumper, width=10_000))


# --- the text level -----------------------------------------------------------------------------


def text_level(c: Chooser, text: str) -> str:
    for _ in range(1 + c.below(4)):
        op = c.below(6)
        at = c.below(len(text) + 1)
        if op == 0:
            text = text[:at] + pick(c, TOKENS) + text[at:]
        elif op == 1:
            text = text[:at] + text[at + 1 + c.below(40) :]
        elif op == 2:
            text = text[:at] + pick(c, CHARS) + text[at + 1 :]
        elif op == 3:
            lines = text.splitlines(keepends=True)
            if lines:
                i, j = c.below(len(lines)), c.below(len(lines))
                lines[i], lines[j] = lines[j], lines[i]
                if c.below(2):
                    lines.insert(i, lines[j])
                text = "".join(lines)
        else:  # a scalar after a key or a dash replaced by a hostile one
            spots = [m.start(1) for m in re.finditer(r"(?:: |- )([^\s,{}\[\]][^,\n{}\[\]]*)", text)]
            if spots:
                start = pick(c, spots)
                end = re.compile(r"[,\n}\]]|\Z").search(text, start)
                stop = end.start() if end else len(text)
                text = text[:start] + pick(c, HOSTILE) + text[stop:]
    return text


def mutated(c: Chooser) -> tuple[str, str]:
    """A mutated inventory: (the seed's name and the mutation level, the text)."""
    name, text = pick(c, seeds())
    if c.below(2):
        return f"{name}/text", text_level(c, text)
    try:
        return f"{name}/node", node_level(c, text)
    except (yaml.YAMLError, RecursionError):  # a tree the serialiser cannot write
        return f"{name}/text", text_level(c, text)


# --- checking one input -------------------------------------------------------------------------


BAD = ("ok", "typed", "untyped", "unpositioned", "hang", "accepted-unusable")


class Hang(Exception):
    """The parser took longer than :data:`HANG_SECONDS`."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise Hang(f"no answer in {HANG_SECONDS:g} s")


BAUDRATES = frozenset(
    (
        300,
        600,
        1200,
        2400,
        4800,
        9600,
        19200,
        38400,
        57600,
        115200,
        230400,
        460800,
        500000,
        576000,
        921600,
        1000000,
        1152000,
        1500000,
        2000000,
        2500000,
        3000000,
        3500000,
        4000000,
    )
)
DAY = 24 * 3600.0


UNCLEAN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")


def _clean(text: object) -> bool:
    """Text a board, a subprocess and a report can take: no NUL, control or lone surrogate."""
    return not isinstance(text, str) or not UNCLEAN.search(text)


def unusable(inventory: Any) -> str | None:
    """What an accepted inventory holds that no board can use (a parser that let it through
    only moves the crash to run time), or None."""
    for board in inventory.boards:
        for key, value in board.timeouts.__dict__.items():
            if not 0 < value <= DAY:
                return f"{board.name}: timeouts.{key} = {value!r}"
        t = board.transport
        if t.kind == "ssh" and not (isinstance(t.port, int) and 1 <= t.port <= 65535):
            return f"{board.name}: port {t.port!r}"
        if t.kind == "serial" and t.baudrate not in BAUDRATES:
            return f"{board.name}: baudrate {t.baudrate!r}"
        # Every field of the transport's configuration, whichever kind it is.
        texts = [board.name, board.python, board.workdir, *dataclasses.asdict(t).values()]
        texts += [*board.tags]
        if board.power is not None:
            texts += [*(board.power.on or ()), *(board.power.off or ()), *(board.power.cycle or ())]
        if not all(_clean(x) for x in texts):
            return f"{board.name}: a control character or lone surrogate in a field"
    section = inventory.labgrid
    if section is not None:
        config = section.config
        for key in ("wait", "refresh", "prio"):
            value = getattr(config, key)
            if not abs(value) <= DAY:
                return f"labgrid.{key} = {value!r}"
        texts = [section.ssh.key_file, section.ssh.known_hosts]
        texts += [section.defaults.workdir, section.defaults.python]
        entries = section.entries.values()
        texts += [e.workdir for e in entries] + [e.python for e in entries]
        if not all(_clean(x) for x in texts):
            return "labgrid: a control character or lone surrogate in a field"
    return None


def outcome(text: str, base: Path, parse: Callable[..., Any] | None = None) -> tuple[str, str]:
    """("ok" | "typed" | "unpositioned" | "untyped" | "hang" | "accepted-unusable", detail)
    for one input."""
    from npu_hil.harness.farm import InventoryError, parse_inventory

    parse = parse or parse_inventory
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
    try:
        problem = unusable(parse(text, source=SOURCE, base=base))
        return ("accepted-unusable", problem) if problem else ("ok", "")
    except InventoryError as exc:
        message = str(exc)
        if not POSITION.match(message):
            return "unpositioned", message[:200]
        return "typed", message[:200]
    except Hang as exc:
        return "hang", str(exc)
    except BaseException as exc:  # counting every kind is the point
        if isinstance(exc, KeyboardInterrupt):
            raise
        frames = traceback.extract_tb(exc.__traceback__)
        ours = [f for f in frames if "/harness/" in f.filename]
        site = ours[-1] if ours else (frames[-1] if frames else None)
        where = f"{Path(site.filename).name}:{site.lineno}" if site else "?"
        return "untyped", f"{type(exc).__name__} at {where}: {str(exc)[:80]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--show", type=int, default=1, help="examples shown per root cause")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(1000)
    base = Path("/nonexistent-fuzz-base")
    c = RandomChooser(random.Random(args.seed))
    counts: collections.Counter[str] = collections.Counter()
    causes: dict[str, list[str]] = collections.defaultdict(list)
    started = time.monotonic()
    for _ in range(args.inputs):
        _, text = mutated(c)
        kind, detail = outcome(text, base)
        counts[kind] += 1
        if kind != "ok" and kind != "typed":
            cause = re.sub(r": .*", "", detail) if kind == "untyped" else kind
            if kind == "accepted-unusable":
                cause = f"{kind}: {re.sub(r'^[^:]*: ', '', detail).split(' = ')[0]}"
            causes[cause].append(f"{detail}\n      input: {text[:160]!r}")
    elapsed = time.monotonic() - started
    print(f"inputs tried: {args.inputs} in {elapsed:.1f} s (seed {args.seed})")
    for kind in BAD:
        print(f"  {kind:17} {counts[kind]}")
    print(f"root causes (untyped exception type and raise site, or kind): {len(causes)}")
    for cause, examples in sorted(causes.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(examples):6}  {cause}")
        for example in examples[: args.show]:
            print(f"      {example}")
    return 1 if any(counts[kind] for kind in BAD[2:]) else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
