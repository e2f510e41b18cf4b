#!/usr/bin/env python3
"""The module graph of every crate: no import circle, and in the server no upward edge.

A module is a source file. File A depends on file B when A names a path that resolves into B:
a `use` line or a qualified path (`crate::x::y`, `super::y`, `self::y`, `child::y`). A path that
ends at an item a module re-exports (`pub use child::Item`) resolves to the file defining it.
Two things are not dependencies: declaring a child module (`mod x;`) and a parent re-exporting
its children's items (`pub use child::Item` in a mod.rs or lib.rs): both shape the parent's
interface without giving it any behaviour. Comments and string literals are ignored.

The server's layers are listed in LAYERS, bottom first (ARCHITECTURE.md, "Architecture
invariants"): a module may name modules of its own layer or below, never above. Every server
module must match a layer. Exit status 1 on any circle, upward edge or unplaced module.

Usage: scripts/check-layers.py [--graph]   (--graph prints every edge)
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Crate directory -> the source roots (crate root files) analysed.
CRATES = {
    "core": ["src/lib.rs"],
    "server": ["src/lib.rs"],
    "server/storage": ["src/lib.rs"],
    "sdk": ["src/lib.rs"],
    "cli": ["src/main.rs"],
    "bench": ["src/lib.rs"],
    "integration": ["src/lib.rs"],
}

# The server crate, bottom layer first. A module belongs to the layer of its longest matching
# prefix ("shard::table" before "shard").
LAYERS = [
    (
        "foundations: storage, metadata, config, auth (no shard, no socket)",
        [
            "time",
            "config",
            "storage",
            "encryption",
            "metadata",
            "auth",
            "permissions",
            "limits",
            "logging",
            "telemetry",
            "system_info",
            "tls",
            "layout",
            "io_driver",
        ],
    ),
    (
        "shared state: metric cells, sessions, clients, groups, shards table, shard messages",
        [
            "metrics",
            "session",
            "admission",
            "clients",
            "groups",
            "views",
            "shard::table",
            "shard::message",
            "shard::allocation",
            "shard::state",
            "cluster::link",
            "cluster::relay",
            "cluster::partition_call",
            "cluster::reader",
        ],
    ),
    ("the shard: per-thread state, owned partitions, routing", ["shard", "stats"]),
    ("commands: control plane and handlers", ["control", "handlers"]),
    ("transports: TCP, TLS, QUIC, WebSocket (with http, the only modules touching client sockets)", ["frontend"]),
    (
        "process: bootstrap, HTTP endpoint, maintenance tasks, scrape",
        ["server", "http", "cluster", "maintenance", "metrics::exposition", "lib"],
    ),
]

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_comments_and_strings(text):
    """Blanks comments, string and char literals, keeping line structure."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    if text[i] == "\n":
                        out.append("\n")
                    i += 1
            continue
        raw = re.match(r'b?r(#*)"', text[i:])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = '"' + raw.group(1)
            j = text.find(close, i + raw.end())
            j = n if j < 0 else j + len(close)
            out.append("\n" * text.count("\n", i, j) + '""')
            i = j
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append("\n" * text.count("\n", i, j) + '""')
            i = j + 1
            continue
        char = re.match(r"'(\\.[^']*|[^'\\])'", text[i:])
        if c == "'" and char:
            out.append("' '")
            i += char.end()
            continue
        out.append(c)
        i += 1
    return "".join(out)


def expand_use_tree(tree):
    """`a::{b, c::{d, e as f}, self}` -> [a::b, a::c::d, a::c::e, a]."""
    tree = re.sub(r"\s+as\s+" + IDENT, "", tree)
    tree = re.sub(r"\s+", "", tree)
    results = []

    def walk(prefix, rest):
        if not rest:
            return
        depth, parts, start = 0, [], 0
        for k, ch in enumerate(rest):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(rest[start:k])
                start = k + 1
        parts.append(rest[start:])
        for part in parts:
            if not part:
                continue
            brace = part.find("{")
            if brace >= 0 and part.endswith("}"):
                head = part[:brace].rstrip(":")
                walk(prefix + [h for h in head.split("::") if h], part[brace + 1 : -1])
                continue
            segments = [s for s in part.split("::") if s]
            if segments == ["self"]:
                results.append(prefix)
            else:
                results.append(prefix + segments)

    walk([], tree)
    return [r for r in results if r]


class Crate:
    def __init__(self, directory, roots):
        self.directory = directory
        self.src = ROOT / directory / "src"
        self.modules = {}  # tuple(path) -> file
        for root in roots:
            self.discover((), ROOT / directory / root, is_root=True)
        self.files = {file: path for path, file in self.modules.items()}
        self.cleaned = {f: strip_comments_and_strings(f.read_text()) for f in self.files}
        self.reexports = {f: self.find_reexports(f) for f in self.files}

    def discover(self, path, file, is_root=False):
        self.modules[path] = file
        text = strip_comments_and_strings(file.read_text())
        directory = file.parent if (is_root or file.name == "mod.rs") else file.with_suffix("")
        for match in re.finditer(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", text, re.M):
            name = match.group(1)
            for candidate in (directory / f"{name}.rs", directory / name / "mod.rs"):
                if candidate.exists():
                    self.discover(path + (name,), candidate)
                    break

    def children(self, module):
        return {p[-1] for p in self.modules if len(p) == len(module) + 1 and p[:-1] == module}

    def absolute(self, module, segments):
        """Turns a path as written in `module` into crate-absolute segments, or None."""
        if not segments:
            return None
        head = segments[0]
        if head == "crate":
            return list(segments[1:])
        if head == "self":
            return list(module) + list(segments[1:])
        if head == "super":
            base = list(module)
            rest = list(segments)
            while rest and rest[0] == "super":
                if not base:
                    return None
                base.pop()
                rest.pop(0)
            return base + rest
        if head in self.children(module):
            return list(module) + list(segments)
        return None

    def scopes(self, file):
        """(module path, text) of the file and of each inline `mod name { ... }` in it, each
        text without its inline modules' bodies."""
        found = []

        def split(module, text):
            outer, last = [], 0
            for match in re.finditer(r"\bmod\s+(" + IDENT + r")\s*\{", text):
                if match.start() < last:
                    continue
                depth, k = 1, match.end()
                while k < len(text) and depth:
                    depth += {"{": 1, "}": -1}.get(text[k], 0)
                    k += 1
                outer.append(text[last : match.start()])
                split(module + (match.group(1),), text[match.end() : k - 1])
                last = k
            outer.append(text[last:])
            found.append((module, "".join(outer)))

        split(self.files[file], self.cleaned[file])
        return found

    @staticmethod
    def uses_in(text):
        """(is_pub, path segments as written) for every `use` item of a text."""
        found = []
        pattern = r"(^|[;{}\s])(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);"
        for match in re.finditer(pattern, text):
            for segments in expand_use_tree(match.group(3)):
                found.append((bool(match.group(2)), segments))
        return found

    def uses(self, file):
        return self.uses_in(self.scopes(file)[-1][1])

    def find_reexports(self, file):
        module = self.files[file]
        names = {}
        for is_pub, segments in self.uses(file):
            if not is_pub or segments[-1] == "*":
                continue
            target = self.absolute(module, segments)
            if target is not None:
                names[segments[-1]] = target
        return names

    def resolve(self, segments, depth=0):
        """The module file an absolute path lands in (following re-exports), or None."""
        for cut in range(len(segments), -1, -1):
            module = tuple(segments[:cut])
            if module in self.modules:
                file = self.modules[module]
                rest = segments[cut:]
                if rest and depth < 8 and rest[0] in self.reexports[file]:
                    target = self.reexports[file][rest[0]]
                    return self.resolve(list(target) + list(rest[1:]), depth + 1)
                return file
        return None

    def edges(self):
        graph = {file: set() for file in self.files}
        for file in self.files:
            for module, text in self.scopes(file):
                self.scope_edges(graph, file, module, text)
        return graph

    def scope_edges(self, graph, file, module, text):
        """Adds the edges one scope of `file` (the file or an inline module) contributes."""
        paths = []
        for is_pub, segments in self.uses_in(text):
            target = self.absolute(module, segments)
            if target is None:
                continue
            # A parent re-exporting its own descendants' items: interface, not dependency.
            if is_pub and tuple(target[: len(module)]) == module and len(target) > len(module):
                continue
            paths.append(target)
        body = re.sub(r"(^|[;{}\s])(pub(?:\([^)]*\))?\s+)?use\s+[^;]+;", " ", text)
        heads = ["crate", "super", "self"] + sorted(self.children(module))
        qualified = r"(?<![A-Za-z0-9_:])((?:" + "|".join(map(re.escape, heads)) + r")(?:::" + IDENT + ")+)"
        for match in re.finditer(qualified, body):
            target = self.absolute(module, match.group(1).split("::"))
            if target is not None:
                paths.append(target)
        for target in paths:
            resolved = self.resolve(target)
            if resolved is not None and resolved != file:
                graph[file].add(resolved)

    def name(self, file):
        return "::".join(self.files[file]) or file.name.removesuffix(".rs")


def strongly_connected(graph):
    index, low, stack, on_stack, result, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            result.append(component)

    for v in graph:
        if v not in index:
            visit(v)
    return result


def layer_of(module_name):
    best, best_len = None, -1
    for number, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module_name == prefix or module_name.startswith(prefix + "::"):
                if len(prefix) > best_len:
                    best, best_len = number, len(prefix)
    return best


def main():
    show_graph = "--graph" in sys.argv
    problems = []
    for directory, roots in CRATES.items():
        if not (ROOT / directory).exists():
            continue
        crate = Crate(directory, roots)
        graph = crate.edges()
        if show_graph:
            for file in sorted(graph, key=crate.name):
                for target in sorted(graph[file], key=crate.name):
                    print(f"{directory}: {crate.name(file)} -> {crate.name(target)}")
        for component in strongly_connected(graph):
            if len(component) > 1:
                names = ", ".join(sorted(crate.name(f) for f in component))
                problems.append(f"{directory}: import circle between {names}")
        if directory != "server":
            continue
        for file, targets in graph.items():
            source = crate.name(file)
            source_layer = layer_of(source)
            if source_layer is None:
                problems.append(f"server: module {source} is in no layer (scripts/check-layers.py LAYERS)")
                continue
            for target in targets:
                target_layer = layer_of(crate.name(target))
                if target_layer is not None and target_layer > source_layer:
                    problems.append(
                        f"server: {source} ({LAYERS[source_layer][0].split(':')[0]}) names "
                        f"{crate.name(target)} ({LAYERS[target_layer][0].split(':')[0]}), a layer above it"
                    )
    for problem in problems:
        print(problem)
    if problems:
        print(f"check-layers: {len(problems)} problem(s)")
        return 1
    print("check-layers: no import circle, no upward edge")
    return 0


if __name__ == "__main__":
    sys.exit(main())
