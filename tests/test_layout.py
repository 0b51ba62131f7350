"""The package's shape: one-way layers, no import circles, a small public face.

Every import in the package is read from the source (AST), wherever it stands: at module
level, inside a function, or under ``if TYPE_CHECKING:``. A new module must be given a
floor in ``FLOORS`` before this test passes, so the layering is a decision, not an accident.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "interchange_hub"

# The floors, lowest first. A module may import modules of its own floor or below, never
# above; inside a floor, imports may not go round in a circle. Names are relative to
# ``interchange_hub``; "adapters.*" is every built-in adapter module.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("errors", "_core.records", "_core.marks", "_core.threads"),
    ("_core.device", "_core.dtypes"),
    ("_core.info", "_core.protocols", "_core.deps"),
    ("_c.capsule", "_c.cuda", "_c.ndarray"),
    ("_c.arrow_device", "_c.dlpack"),
    ("adapter",),
    ("arrowkit", "hookspecs"),
    ("_bridge.arrow_native",),
    (
        "_bridge.tensors",
        "_bridge.devices",
        "_bridge.cow",
        "_bridge.polars_native",
        "_bridge.pandas_native",
    ),
    ("_bridge.edges", "_bridge.protocol_source"),
    ("adapters.*", "_engine.plans", "_engine.registry"),
    ("_engine.cache",),
    ("_engine.router",),
    ("_engine.planner",),
    ("plugins", "_export"),
    ("hub", "_engine.batches"),
    ("__init__", "_tools.samples", "_tools.corpus", "_tools.typemap", "_tools.matrix"),
    ("testing", "partitioned"),
    ("devicetesting", "cli"),
    ("__main__",),
)

# What plugin authors (and users) may import; everything else is private and may move.
PUBLIC_MODULES = {
    "__init__",
    "__main__",
    "errors",
    "adapter",
    "arrowkit",
    "hookspecs",
    "hub",
    "plugins",
    "testing",
    "partitioned",
    "devicetesting",
    "cli",
}

# Libraries the engine must not name (in code: identifiers and string literals).
LIBRARY_NAMES = {
    "pyarrow", "pa", "arrow3", "arro3", "nanoarrow", "na", "polars", "pl", "pandas", "pd",
    "numpy", "np", "torch", "pt", "cupy", "cp", "duckdb", "jax", "xarray", "datasets",
}  # fmt: skip
ENGINE = ("hub", "_engine.planner", "_engine.router", "_engine.plans", "_engine.registry",
          "_engine.cache", "_engine.batches")  # fmt: skip


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()  # a subpackage's __init__ is the subpackage
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
SUBPACKAGES = {name for name, p in MODULES.items() if p.name == "__init__.py" and "." not in name}
SUBPACKAGES.discard("__init__")


def _floor_of(module: str) -> int:
    for number, floor in enumerate(FLOORS):
        for pattern in floor:
            if module == pattern or (
                pattern.endswith(".*") and module.startswith(pattern[:-1]) and module != "adapters"
            ):
                return number
    raise KeyError(module)


def _resolve(name: str) -> str | None:
    """The package module an absolute import name refers to (None: outside the package)."""
    if name == "interchange_hub":
        return "__init__"
    if not name.startswith("interchange_hub."):
        return None
    return name.removeprefix("interchange_hub.")


def imports_of(module: str) -> set[str]:
    """The package modules ``module`` imports, anywhere in its source (a name that is no
    module of the package, such as a stale path, is kept: the tests report it)."""
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{module}: relative import (use absolute imports)"
            base = node.module or ""
            names = [
                f"{base}.{alias.name}"
                if f"{base}.{alias.name}".removeprefix("interchange_hub.") in MODULES
                else base
                for alias in node.names
            ]
        else:
            continue
        for name in names:
            target = _resolve(name)
            if target is not None and target != module:
                found.add(target)
    return found


GRAPH = {module: imports_of(module) for module in MODULES if module not in SUBPACKAGES}


def test_every_import_names_a_module_of_the_package() -> None:
    # Catches stale paths (a moved module still named under TYPE_CHECKING) and imports of
    # names from a subpackage (whose __init__ holds none: import from the module).
    wrong = [
        f"{module} imports interchange_hub.{target}"
        for module, targets in GRAPH.items()
        for target in sorted(targets)
        if target not in GRAPH
    ]
    assert not wrong, wrong


def test_subpackage_inits_hold_only_a_docstring() -> None:
    # Importing any module of a subpackage runs its __init__ first: code there would sit
    # outside the floors.
    for name in SUBPACKAGES:
        body = ast.parse(MODULES[name].read_text()).body
        assert len(body) == 1 and isinstance(body[0], ast.Expr), name
        assert isinstance(body[0].value, ast.Constant), name


def test_module_paths_in_strings_exist() -> None:
    # DEFAULT_PLUGINS and the lazy names of __init__ import by string.
    stale = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            text = node.value if isinstance(node, ast.Constant) else None
            if (
                isinstance(text, str)
                and text.startswith("interchange_hub.")
                and " " not in text
                and text.removeprefix("interchange_hub.") not in MODULES
            ):
                stale.append(f"{module}: {text!r}")
    assert not stale, stale


def test_every_module_has_a_floor() -> None:
    missing = []
    for module in GRAPH:
        try:
            _floor_of(module)
        except KeyError:
            missing.append(module)
    assert not missing, f"give these modules a floor in FLOORS: {missing}"


def test_every_import_goes_down_or_sideways() -> None:
    upward = [
        f"{module} (floor {_floor_of(module)}) imports {target} (floor {_floor_of(target)})"
        for module, targets in GRAPH.items()
        for target in sorted(targets)
        if target in GRAPH and _floor_of(target) > _floor_of(module)
    ]
    assert GRAPH["hub"] and GRAPH["_engine.planner"]  # the graph was read at all
    assert not upward, "imports that run back up:\n" + "\n".join(upward)


def test_no_import_circles() -> None:
    # Depth-first search with colours; a grey target is a back edge, i.e. a circle.
    colour: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        colour[module] = 1
        for target in sorted(GRAPH.get(module, ())):
            if colour.get(target) == 1:
                circles.append([*path[path.index(target) :], target])
            elif target not in colour:
                visit(target, [*path, target])
        colour[module] = 2

    for module in sorted(GRAPH):
        if module not in colour:
            visit(module, [module])
    assert not circles, "import circles: " + "; ".join(" -> ".join(c) for c in circles)


def test_adapters_are_independent_rooms() -> None:
    crossing = [
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if module.startswith("adapters.")
        for target in targets
        if target.startswith(("adapters.", "_engine", "hub", "plugins", "_export"))
    ]
    assert not crossing, crossing


def test_at_most_twelve_public_top_level_modules() -> None:
    top = {p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_")}
    top |= {"__init__", "__main__"}
    assert top == PUBLIC_MODULES
    assert len(top) <= 12
    private_packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and "__" not in p.name}
    assert private_packages == {"_core", "_c", "_bridge", "_engine", "_tools", "adapters"}


def _code_words(path: Path) -> set[tuple[int, str]]:
    """The words of ``path``'s code, with line numbers: identifiers (split at underscores,
    so ``pa_table`` gives ``pa``) and the words of string literals, f-strings included.
    Comments and docstrings are left out: they may explain with examples."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    words: set[tuple[int, str]] = set()

    def add(line: int, text: str) -> None:
        clean = "".join(c if c.isalnum() else " " for c in text)
        words.update((line, w) for w in clean.split())

    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name):
            add(line, node.id)
        elif isinstance(node, ast.Attribute):
            add(line, node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(line, node.name)
        elif isinstance(node, ast.arg):
            add(line, node.arg)
        elif isinstance(node, ast.alias):
            add(line, node.asname or node.name)
        elif isinstance(node, ast.keyword) and node.arg:
            add(line, node.arg)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            add(line, node.value)
    return words


@pytest.mark.parametrize("module", ENGINE)
def test_the_engine_names_no_library(module: str) -> None:
    named = sorted((line, w) for line, w in _code_words(MODULES[module]) if w in LIBRARY_NAMES)
    assert not named, f"{module} names libraries (line, name): {named}"


def test_the_word_check_would_catch_a_library_name(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""About pandas."""\n# polars here is fine\nNOTE = "torch ignores it"\n'
        'def f(pa_table): return f"{pa_table} via cupy"\n'
    )
    assert {w for _, w in _code_words(sample)} & LIBRARY_NAMES == {"torch", "pa", "cupy"}


PLUGIN_FACE = {"__init__", "adapter", "arrowkit", "hookspecs", "errors", "testing",
               "devicetesting", "plugins", "partitioned"}  # fmt: skip


@pytest.mark.parametrize(
    "path",
    [
        *sorted((ROOT / "plugins").glob("*/interchange_hub_*/*.py")),
        ROOT / "tests" / "fake_plugins" / "boxes.py",
        # tests/fake_plugins/simdevice.py is left out on purpose: it stands in for the
        # built-in GPU adapters (cupy, torch) and uses the same private device bridge.
    ],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_plugins_import_only_the_public_face(path: Path) -> None:
    tree = ast.parse(path.read_text())
    private = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
            if node.module == "interchange_hub":
                names += [f"interchange_hub.{a.name}" for a in node.names]
        for name in names:
            target = _resolve(name)
            if target is not None and target in MODULES and target not in PLUGIN_FACE:
                private.append(name)
    assert not private, f"{path.name} imports private modules: {private}"
