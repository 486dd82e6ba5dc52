"""The package's layering, read from the source with `ast` (nothing is imported): the core depends on
no layer above it, baselines and tasks not on the book or the CLI, nothing on the CLI, and the
import graph among jeirt's modules has no cycle. Also the core's size and JEIRT's scikit-learn
parameter protocol."""
from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest
from sklearn.base import clone

PACKAGE = Path(__file__).resolve().parents[1] / "jeirt"

CORE = ("model", "train", "onboard", "estimator", "data", "splits", "simulate", "encoders",
        "metrics", "settings", "files")
CORE_MODULES = ("jeirt", *(f"jeirt.{name}" for name in CORE))
MAX_CORE_LINES = 3000


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
PACKAGES = {name for name, path in MODULES.items() if path.name == "__init__.py"}


def imports_of(module: str) -> list[tuple[str, int, str]]:
    """(imported jeirt module, line, source text) for every import in `module`, at any depth (module
    level, inside functions, classes or `if` blocks). `from jeirt.pkg import x` is `jeirt.pkg.x` when
    that is a module, else `jeirt.pkg`; relative imports are resolved against `module`'s package."""
    path = MODULES[module]
    source = path.read_text(encoding="utf-8")
    package = module if module in PACKAGES else module.rpartition(".")[0]
    found = []
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        text = lines[node.lineno - 1].strip()
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "jeirt" or alias.name.startswith("jeirt."):
                    found.append((alias.name, node.lineno, text))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not (target == "jeirt" or target.startswith("jeirt.")):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((sub if sub in MODULES else target, node.lineno, text))
    return found


GRAPH: dict[str, list[tuple[str, int, str]]] = {m: imports_of(m) for m in MODULES}


def in_layer(module: str, layer: str) -> bool:
    return module == layer or module.startswith(layer + ".")


def offending(importers, forbidden) -> list[str]:
    """'importer:line imports target (source)' for each import from `importers` into `forbidden`."""
    return [f"{m}:{line} imports {target}  ({text})"
            for m in sorted(importers) for target, line, text in GRAPH[m]
            if any(in_layer(target, layer) for layer in forbidden)]


def test_the_package_was_found_and_parsed():
    assert set(CORE_MODULES) <= set(MODULES), f"core modules missing: {set(CORE_MODULES) - set(MODULES)}"
    for layer in ("jeirt.baselines", "jeirt.tasks", "jeirt.book", "jeirt.cli"):
        assert layer in MODULES, f"{layer} not found under {PACKAGE}"
    # the graph is not empty: the estimator imports the model (so a broken parser cannot pass vacuously)
    assert "jeirt.model" in {t for t, _, _ in GRAPH["jeirt.estimator"]}
    assert "jeirt.settings" in {t for t, _, _ in GRAPH["jeirt.data"]}  # `from jeirt import settings`


def test_core_imports_no_layer_above_it():
    bad = offending(CORE_MODULES, ("jeirt.book", "jeirt.tasks", "jeirt.cli", "jeirt.baselines"))
    assert not bad, "the core (" + ", ".join(CORE_MODULES) + ") must not import baselines, tasks, book " \
        "or cli:\n" + "\n".join(bad)


def test_baselines_import_neither_tasks_book_nor_cli():
    baselines = [m for m in MODULES if in_layer(m, "jeirt.baselines")]
    bad = offending(baselines, ("jeirt.book", "jeirt.tasks", "jeirt.cli"))
    assert not bad, "jeirt.baselines must not import jeirt.book, jeirt.tasks or jeirt.cli:\n" + "\n".join(bad)


def test_tasks_import_neither_book_nor_cli():
    tasks = [m for m in MODULES if in_layer(m, "jeirt.tasks")]
    bad = offending(tasks, ("jeirt.book", "jeirt.cli"))
    assert not bad, "jeirt.tasks must not import jeirt.book or jeirt.cli:\n" + "\n".join(bad)


def test_nothing_imports_the_cli():
    """Only the console entry (`jeirt.__main__`, which runs it with Ctrl-C handled) sits above it."""
    bad = offending([m for m in MODULES if m not in ("jeirt.cli", "jeirt.__main__")], ("jeirt.cli",))
    assert not bad, "jeirt.cli is the top layer; no module may import it:\n" + "\n".join(bad)


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle [a, b, ..., a] of the directed graph, or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def test_find_cycle_finds_cycles_and_only_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None  # a diamond is no cycle
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"a"}}) == ["a", "a"]


def test_the_import_graph_has_no_cycle():
    graph = {m: {t for t, _, _ in GRAPH[m] if t in MODULES and t != m} for m in MODULES}
    cycle = find_cycle(graph)
    if cycle:
        steps = []
        for a, b in itertools.pairwise(cycle):
            line, text = next((line, text) for t, line, text in GRAPH[a] if t == b)
            steps.append(f"  {a}:{line} imports {b}  ({text})")
        pytest.fail("import cycle among jeirt modules (imports inside functions count):\n" + "\n".join(steps))


def test_the_core_stays_small():
    lines = {m: len(MODULES[m].read_text(encoding="utf-8").splitlines()) for m in CORE_MODULES}
    total = sum(lines.values())
    table = "\n".join(f"  {m:<18} {n:>5}" for m, n in sorted(lines.items(), key=lambda kv: -kv[1]))
    assert total <= MAX_CORE_LINES, f"the core has {total} lines (at most {MAX_CORE_LINES}):\n{table}"


# ----------------------------------------------------------------------------- scikit-learn protocol

def test_jeirt_clones_and_sets_params():
    from jeirt.estimator import JEIRT

    est = JEIRT(d=8, training={"max_epochs": 3}, random_state=5, progress=False)
    copy = clone(est)
    assert copy is not est and type(copy) is JEIRT
    assert copy.get_params() == est.get_params()
    assert (copy.d, copy.training, copy.random_state, copy.progress) == (8, {"max_epochs": 3}, 5, False)
    assert clone(JEIRT(d=8)).d == 8
    assert JEIRT(d=8).set_params(d=16).d == 16
    with pytest.raises(ValueError, match="Invalid parameter"):
        JEIRT(d=8).set_params(width=16)
