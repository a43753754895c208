"""Layering: no import cycle in the Python package or between the Rust core's modules, and
no source file grown past what one reader holds in mind (Rust ~900 lines before its tests,
Python ~600). A cycle or an oversized file added by a change fails here, naming it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY_ROOT = ROOT / "python"
CORE = ROOT / "crates" / "l4sim-core" / "src"

#: Longest file allowed, in lines (Rust: the lines before `#[cfg(test)]`).
MAX_PY_LINES = 600
MAX_RUST_LINES = 900


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _describe(graph: dict[str, set[str]], cycles: list[list[str]]) -> str:
    return "; ".join(", ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c) for c in cycles)


# -- Python ----------------------------------------------------------------------------------


def python_graph() -> dict[str, set[str]]:
    """Module -> the l4sim modules it imports, at module level or inside functions (a
    deferred import still ties the two modules together)."""
    mods: dict[str, Path] = {}
    for p in PY_ROOT.rglob("*.py"):
        name = ".".join(p.relative_to(PY_ROOT).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = p
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    if a.name == "_core":  # the compiled extension
                        continue
                    sub = f"{node.module}.{a.name}"
                    target = sub if sub in mods else node.module
                    if target in mods and target != m:
                        graph[m].add(target)
            elif isinstance(node, ast.Import):
                graph[m] |= {a.name for a in node.names if a.name in mods and a.name != m}
    return graph


def test_python_package_has_no_import_cycle():
    graph = python_graph()
    cycles = _cycles(graph)
    assert not cycles, f"import cycles in python/l4sim: {_describe(graph, cycles)}"


def _imports_core(tree: ast.AST) -> bool:
    """Whether a module imports the compiled extension ``l4sim._core`` itself, in any
    spelling (``from l4sim import _core``, ``from l4sim._core import x``, ``import
    l4sim._core``, ``importlib.import_module("l4sim._core")``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "l4sim._core" or (
                node.module == "l4sim" and any(a.name == "_core" for a in node.names)
            ):
                return True
        elif (
            isinstance(node, ast.Import) and any(a.name == "l4sim._core" for a in node.names)
        ) or (isinstance(node, ast.Constant) and node.value == "l4sim._core"):
            return True
    return False


def test_only_native_imports_the_compiled_core():
    # Every call into the core goes through l4sim.native.core(), which turns a missing
    # build into one CoreError; a second door would bypass it.
    others = sorted(
        str(p.relative_to(PY_ROOT))
        for p in PY_ROOT.rglob("*.py")
        if p != PY_ROOT / "l4sim" / "native.py"
        and _imports_core(ast.parse(p.read_text(encoding="utf-8")))
    )
    assert not others, f"modules importing l4sim._core besides l4sim/native.py: {others}"


def test_the_core_check_sees_every_spelling():
    for code in (
        "from l4sim import _core",
        "from l4sim import errors, _core",
        "from l4sim._core import router_main",
        "import l4sim._core as c",
        "def f():\n    import importlib\n    return importlib.import_module('l4sim._core')",
    ):
        assert _imports_core(ast.parse(code)), code
    assert not _imports_core(ast.parse("from l4sim.native import core"))


def test_python_files_are_short():
    long = {
        str(p.relative_to(ROOT)): n
        for p in PY_ROOT.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_PY_LINES
    }
    assert not long, f"Python files over {MAX_PY_LINES} lines: {long}"


# -- Rust ------------------------------------------------------------------------------------

_PATH = re.compile(r"\b(crate|super)((?:::[a-z_][a-z0-9_]*)+)")


def _module_of(path: Path) -> tuple[str, ...]:
    parts = path.relative_to(CORE).with_suffix("").parts
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return tuple(parts)


def _code(path: Path) -> str:
    """The file without its tests and comments."""
    text = path.read_text(encoding="utf-8").split("#[cfg(test)]")[0]
    return re.sub(r"//[^\n]*", "", text)


def rust_graph() -> dict[str, set[str]]:
    """Module file -> the core's module files its code names (`use crate::...`,
    `super::...`, inline paths). A module naming its own submodules is not an edge: a
    parent declares its children (a `QdiscConfig` enum over each qdisc's config), and the
    children use the parent's trait; a cycle here is between modules neither of which owns
    the other (e.g. two siblings that use each other)."""
    files = {_module_of(p): p for p in CORE.rglob("*.rs")}
    graph: dict[str, set[str]] = {"::".join(m) or "crate": set() for m in files}
    for mod, path in files.items():
        me = "::".join(mod) or "crate"
        for kind, rest in _PATH.findall(_code(path)):
            segs = tuple(rest.strip(":").split("::"))
            base: tuple[str, ...] = ()
            if kind == "super":
                # `super` of a file module is its parent; `super::super` etc. are rare here.
                base = mod[:-1]
                while segs and segs[0] == "super":
                    base, segs = base[:-1], segs[1:]
            full = base + segs
            # The longest prefix that is a module file.
            target = next((full[:k] for k in range(len(full), -1, -1) if full[:k] in files), None)
            if target is None:
                continue
            if target[: len(mod)] == mod:  # itself or one of its own submodules
                continue
            graph[me].add("::".join(target) or "crate")
    return graph


def test_rust_core_has_no_module_cycle():
    graph = rust_graph()
    cycles = _cycles(graph)
    assert not cycles, f"module cycles in l4sim-core: {_describe(graph, cycles)}"


def test_rust_files_are_short():
    long = {}
    for p in ROOT.glob("crates/*/src/**/*.rs"):
        n = len(p.read_text(encoding="utf-8").split("#[cfg(test)]")[0].splitlines())
        if n > MAX_RUST_LINES:
            long[str(p.relative_to(ROOT))] = n
    assert not long, f"Rust files over {MAX_RUST_LINES} lines before their tests: {long}"
