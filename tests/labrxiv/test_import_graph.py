"""The shell's modules import one another without a circle: what two commands share lives
in a module both import, never in one command taken by another that takes it back.

The graph is read from the source with `ast`, every import counted wherever it is written
(at module level or inside a function, where a circle only hides until the call)."""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

import labrxiv

PACKAGE = Path(labrxiv.__file__).parent


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(tree: ast.AST, modules: set[str]) -> set[str]:
    """The package's modules `tree` imports (`from labrxiv import x` names module `x`)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        found.update(name for name in names if name in modules)
    return found


def import_graph() -> dict[str, set[str]]:
    """Each module of `labrxiv` and the modules of `labrxiv` it imports."""
    paths = {_module(path): path for path in PACKAGE.rglob("*.py")}
    modules = set(paths)
    return {
        name: _imported(ast.parse(path.read_text(), str(path)), modules) - {name}
        for name, path in paths.items()
    }


def test_the_graph_sees_imports_inside_functions() -> None:
    tree = ast.parse("def f():\n    from labrxiv.b import x\n    import labrxiv.c\n")
    assert _imported(tree, {"labrxiv.b", "labrxiv.c", "labrxiv.d"}) == {"labrxiv.b", "labrxiv.c"}


def test_a_circle_is_found() -> None:
    graph = {"labrxiv.a": {"labrxiv.b"}, "labrxiv.b": {"labrxiv.a"}}
    with pytest.raises(CycleError):
        TopologicalSorter(graph).prepare()


def test_labrxiv_has_no_import_circle() -> None:
    graph = import_graph()
    assert "labrxiv.cli" in graph and graph["labrxiv.cli"], "the graph reads the package"
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        raise AssertionError(f"import circle: {' -> '.join(exc.args[1])}") from None
