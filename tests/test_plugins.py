"""Plugins: entry points, environment variables, contained failures, the listing."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub import arrowkit, hookspecs
from interchange_hub.adapter import ARROW
from interchange_hub.plugins import DEFAULT_PLUGINS
from tests.fake_plugins import (
    boxes,
    broken_hook,
    clashing,
    misspelled,
    unmarked,
    wrong_args,
)

ROOT = Path(__file__).resolve().parents[1]
TABLE = pa.table({"a": [1, 2, None], "s": ["x", None, "z"]})


def with_builtins(*plugins: object) -> ih.Hub:
    return ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), *plugins])


# -- hooks: each hook specification has a test named test_hook_<name>_... ----------------------
def test_hook_register_adapters_makes_a_new_library_convertible_both_ways() -> None:
    hub = with_builtins(boxes)
    box = hub.convert(TABLE, to="boxes")
    assert isinstance(box, boxes.Box) and box.table.equals(TABLE)
    assert hub.convert(box, to="polars").to_arrow().to_pylist() == TABLE.to_pylist()
    assert hub.convert(hub.convert(TABLE, to="pandas"), to=boxes.Box).table.num_rows == 3
    assert hub.plan(box, to="pyarrow").zero_copy
    assert hub.shared_bytes(box, hub.convert(box, to="pyarrow")) > 0


def test_hook_register_edges_adds_a_fast_path() -> None:
    calls = []

    def run(value: Any, ctx: ih.Context) -> Any:
        calls.append(ctx.info.rows)
        return boxes.Box(value.table)

    def estimate(ctx: ih.Context) -> ih.Estimate:
        return ih.Estimate(ctx.info, why="box to box, directly")

    class FastPath:
        @ih.hookimpl
        def register_edges(self, register: Any) -> None:
            register(ih.Edge("boxes", "boxes", "fastpath", "Box(Box.table)", estimate, run))

    hub = with_builtins(boxes, FastPath())
    box = hub.convert(TABLE, to="boxes")
    out = hub.convert(box, to="boxes", copy=None)
    assert out is box or calls  # a same-library conversion may pass the object through
    info = {p.name: p for p in hub.plugins()}
    assert info["FastPath" if "FastPath" in info else next(n for n in info if "FastPath" in n)]


def test_a_step_is_told_the_text_types_the_target_keeps() -> None:
    """``Adapter.arrow_string_type`` / ``arrow_binary_type``: every step of a conversion
    ending in such a library reads them as ``Context.string_type`` / ``binary_type`` (so
    that one encoding text anew can make the types that library shares), and "" for a
    conversion ending anywhere else, or asked for dtype="arrow"."""
    told: list[tuple[str, str, str]] = []

    class ViewBox(boxes.Box):
        pass

    class ViewBoxes(boxes.BoxAdapter):
        name = "viewboxes"
        types = ("ViewBox",)
        arrow_string_type = "string_view"
        arrow_binary_type = "large_binary"

        def owns(self, obj: object) -> bool:
            return isinstance(obj, ViewBox)

        def type_kinds(self) -> dict[type, ih.Kind | None]:
            return {ViewBox: ih.Kind.TABLE}

        def edges(self) -> list[ih.Edge]:
            def estimate(ctx: ih.Context) -> ih.Estimate:
                told.append((ctx.target, ctx.string_type, ctx.binary_type))
                return ih.Estimate(ctx.info, why="the box takes the Arrow data as it is")

            def run(value: Any, ctx: ih.Context) -> ViewBox:
                return ViewBox(arrowkit.read_table(value))

            return [ih.Edge(ARROW, self.name, self.name, "ViewBox(pa.table)", estimate, run)]

    class Views:
        @ih.hookimpl
        def register_adapters(self, register: Any) -> None:
            register(ViewBoxes())

    class Told:
        @ih.hookimpl
        def register_edges(self, register: Any) -> None:
            def estimate(ctx: ih.Context) -> ih.Estimate:
                told.append((ctx.target, ctx.string_type, ctx.binary_type))
                return ih.Estimate(ctx.info, why="the box holds Arrow data")

            register(ih.Edge("boxes", ARROW, "told", "Box.table", estimate, lambda v, c: v.table))

    hub = with_builtins(boxes, Views(), Told())
    box = hub.convert(TABLE, to="boxes")
    assert isinstance(hub.convert(box, to="viewboxes"), ViewBox)
    asked = ("viewboxes", "string_view", "large_binary")
    assert asked in told and all(t == asked for t in told if t[0] == "viewboxes")
    plan = hub.plan(box, to="viewboxes")
    assert plan.request is not None and plan.request.string_type == "string_view"
    told.clear()
    hub.convert(box, to="pyarrow")
    assert told and all(t[1:] == ("", "") for t in told)
    requests = {to: hub.plan(TABLE, to=to).request for to in ("polars", "pandas", "pyarrow")}
    kept = {to: (r.string_type, r.binary_type) for to, r in requests.items() if r is not None}
    assert kept == {
        "polars": ("string_view", "binary_view"),
        "pandas": ("large_string", ""),
        "pyarrow": ("", ""),
    }
    arrow = hub.plan(TABLE, to="pandas", dtype="arrow").request
    assert arrow is not None and (arrow.string_type, arrow.binary_type) == ("", "")


def documented_signature(func: Any) -> str:
    """``def name(arg: Type, ...) -> Ret`` from the (string) annotations of a hook spec."""
    notes = dict(func.__annotations__)
    ret = notes.pop("return")
    params = ", ".join(f"{p}: {notes[p]}" for p in inspect.signature(func).parameters)
    return f"def {func.__name__}({params}) -> {ret}"


def test_every_hook_has_a_test_and_a_documented_signature() -> None:
    specs = [n for n, f in vars(hookspecs).items() if hasattr(f, "interchange_hub_spec")]
    assert specs == ["register_adapters", "register_edges"]
    docs = (ROOT / "docs" / "plugins.md").read_text()
    tests = [n for n in globals() if n.startswith("test_hook_")]
    for name in specs:
        signature = documented_signature(getattr(hookspecs, name))
        assert signature in docs, f"docs/plugins.md lacks {signature}"
        assert any(t.startswith(f"test_hook_{name}_") for t in tests), f"no test for {name}"


# -- contained failures, in process ---------------------------------------------------------
@pytest.mark.parametrize(
    ("plugin", "match"),
    [
        (broken_hook, "its hook register_adapters raised ValueError: broken_hook failed"),
        (clashing, "named 'pyarrow', a name plugin 'interchange_hub.adapters._pyarrow'"),
        (misspelled, "unknown hook 'register_adapter'.*did you mean 'register_adapters'"),
        (wrong_args, "registering it raised PluginValidationError.*hub"),
        (unmarked, "defines register_adapters without @interchange_hub.hookimpl"),
        (ModuleType("hookless"), "has no @interchange_hub.hookimpl function"),
        ("tests.fake_plugins.broken_import", "RuntimeError: broken_import cannot find"),
    ],
)
def test_a_broken_plugin_is_left_out_reported_and_the_hub_works(plugin: object, match: str) -> None:
    hub = with_builtins(plugin, boxes)
    with pytest.warns(ih.PluginWarning, match=match) as caught:
        names = [a.name for a in hub.adapters()]
    assert "was left out" in str(caught[0].message)
    assert "interchange-hub plugins" in str(caught[0].message)
    assert {"pyarrow", "polars", "boxes"} <= set(names)
    assert hub.convert(TABLE, to="polars").shape == (3, 2)
    assert hub.convert(TABLE, to="boxes").table.equals(TABLE)
    failed = [p for p in hub.plugins() if p.error]
    name = plugin if isinstance(plugin, str) else getattr(plugin, "__name__", "")
    assert len(failed) == 1 and failed[0].name == name


def test_a_route_whose_last_step_returns_no_object_of_the_target_is_refused() -> None:
    # An edge's run that returned something else (here a plain list) handed it to the
    # user as the conversion's result, unchecked.
    class Liar(boxes.BoxAdapter):
        def _box(self, value: Any, ctx: ih.Context) -> Any:
            return [value]

    hub = ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), Liar()])
    with pytest.raises(ih.ConversionError) as caught:
        hub.convert(TABLE, to="boxes")
    assert str(caught.value) == (
        "the route to boxes gave a list, which the boxes adapter does not own: its last "
        "step, 'Box(pa.table)' of adapter 'boxes', returned it. Report this to that "
        "adapter's authors (the conformance kit, interchange_hub.testing, finds it too)"
    )
    with pytest.raises(ih.ConversionError, match="gave a list"):
        hub.convert(TABLE, to="boxes")  # (nothing kept: refused again)
    assert isinstance(with_builtins(boxes).convert(TABLE, to="boxes"), boxes.Box)

    # A target whose owns() raises (left to the base class) is not refused for it, as
    # the registry's lookups of owners pass over a broken owns() (a review's find)
    class Unowning(boxes.BoxAdapter):
        def owns(self, obj: object) -> bool:
            raise NotImplementedError

    hub = ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), Unowning()])
    assert isinstance(hub.convert(TABLE, to="boxes"), boxes.Box)


def test_the_listing_says_what_each_plugin_provides() -> None:
    hub = with_builtins(boxes)
    listing = {p.name: p for p in hub.plugins()}
    assert listing["interchange_hub.adapters._polars"].adapters == ("polars",)
    assert listing["interchange_hub._bridge.edges"].hooks == ("register_edges",)
    assert listing["interchange_hub._bridge.edges"].edges > 0
    assert listing["tests.fake_plugins.boxes"].adapters == ("boxes",)
    assert listing["tests.fake_plugins.boxes"].source == "given"
    assert all(p.loaded and not p.error for p in listing.values())


def test_plugins_given_add_to_the_builtins() -> None:
    hub = ih.Hub(autoload=False, plugins=[boxes])
    names = [a.name for a in hub.adapters()]
    assert "boxes" in names and "pyarrow" in names and "polars" in names
    box = hub.convert(TABLE, to="boxes")
    assert hub.convert(box, to="polars").shape == (TABLE.num_rows, TABLE.num_columns)
    # The old spelling registers each built-in once.
    again = ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), boxes])
    assert sorted(a.name for a in again.adapters()) == sorted(names)
    assert all(not p.error for p in again.plugins())


def test_builtin_false_gives_a_hub_of_the_plugins_alone() -> None:
    hub = ih.Hub(autoload=False, plugins=[boxes], builtin=False)
    assert [a.name for a in hub.adapters()] == ["boxes"]
    with pytest.raises(ih.UnknownTargetError, match="Known targets: boxes"):
        hub.plan(TABLE, to="polars")
    # Arrow data with no pyarrow adapter enters through its protocol: no recursion.
    box = hub.convert(TABLE, to="boxes")
    assert box.table.equals(TABLE)


def test_an_adapter_instance_is_taken_as_a_plugin_and_a_class_is_refused() -> None:
    hub = ih.Hub(autoload=False, plugins=[boxes.BoxAdapter()])
    assert "boxes" in [a.name for a in hub.adapters()]
    assert "adapter:boxes" in [p.name for p in hub.plugins()]
    assert isinstance(hub.convert(TABLE, to="boxes"), boxes.Box)
    single = ih.Hub(autoload=False, plugins=boxes.BoxAdapter(), builtin=False)
    assert [a.name for a in single.adapters()] == ["boxes"]
    with pytest.raises(ih.InvalidOptionError, match=r"pass BoxAdapter\(\)"):
        ih.Hub(plugins=[boxes.BoxAdapter])
    with pytest.raises(ih.InvalidOptionError, match="not int"):
        ih.Hub(plugins=[3])
    with pytest.raises(ih.InvalidOptionError, match="builtin must be"):
        ih.Hub(builtin="no")  # type: ignore[arg-type]


def test_builtin_plugins_are_the_defaults() -> None:
    assert [m.__name__ for m in ih.builtin_plugins()] == list(DEFAULT_PLUGINS)


# -- entry points and environment variables, in a subprocess with fake distributions ------------
def make_distribution(root: Path, dist: str, entries: dict[str, str]) -> None:
    info = root / f"{dist}-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2.3\n")
    lines = "".join(f"{name} = {target}\n" for name, target in entries.items())
    (info / "entry_points.txt").write_text(f"[interchange_hub]\n{lines}")


PROBE = """
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import interchange_hub as ih
    import pyarrow as pa
    hub = ih.default_hub()
    adapters = [a.name for a in hub.adapters()]
    result = ih.convert(pa.table({"a": [1, 2]}), to="polars").shape
print(json.dumps({
    "adapters": adapters,
    "plugins": {p.name: p.as_dict() for p in hub.plugins()},
    "warnings": [str(w.message) for w in caught],
    "result": list(result),
}))
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    make_distribution(tmp_path, "boxes-plugin", {"boxes": "tests.fake_plugins.boxes"})
    make_distribution(tmp_path, "broken-plugin", {"broken": "tests.fake_plugins.broken_import"})
    return tmp_path


def run_probe(site: Path, **env: str) -> dict[str, Any]:
    data: dict[str, Any] = _probe(site, PROBE, BOXES_MARKER=str(site / "ran"), **env)
    data["ran"] = (site / "ran").exists()
    return data


def test_entry_points_load_on_first_use_and_a_broken_one_is_contained(site: Path) -> None:
    data = run_probe(site)
    assert "boxes" in data["adapters"] and data["result"] == [2, 1]
    assert data["plugins"]["boxes"]["distribution"] == "boxes-plugin"
    assert data["plugins"]["boxes"]["version"] == "1.2.3"
    assert data["plugins"]["boxes"]["source"] == "entry point"
    broken = data["plugins"]["broken"]
    assert not broken["loaded"] and "RuntimeError" in broken["error"]
    assert any("'broken' (distribution broken-plugin 1.2.3)" in w for w in data["warnings"])


def test_load_plugins_lists_the_ones_to_load(site: Path) -> None:
    data = run_probe(site, INTERCHANGE_HUB_LOAD_PLUGINS="boxes")
    assert "boxes" in data["adapters"] and "broken" not in data["plugins"]
    assert data["warnings"] == []


def test_load_plugins_empty_loads_none(site: Path) -> None:
    data = run_probe(site, INTERCHANGE_HUB_LOAD_PLUGINS="")
    assert "boxes" not in data["adapters"] and not data["ran"]
    assert data["result"] == [2, 1] and data["warnings"] == []


def test_load_plugins_warns_about_an_unknown_name(site: Path) -> None:
    data = run_probe(site, INTERCHANGE_HUB_LOAD_PLUGINS="boxes,boxxes")
    assert "boxes" in data["adapters"]
    (warning,) = [w for w in data["warnings"] if "'boxxes'" in w]
    assert "no installed distribution has an entry point of that name" in warning
    assert "boxes, broken" in warning.split("installed: ")[1]


def test_disable_autoload_runs_no_third_party_code(site: Path) -> None:
    data = run_probe(site, INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD="1")
    assert "boxes" not in data["adapters"] and not data["ran"]
    assert data["result"] == [2, 1] and data["warnings"] == []
    assert set(data["plugins"]) == set(DEFAULT_PLUGINS)


# -- entry points are read on first need ---------------------------------------------------------
LAZY_PROBE = """
import json, sys, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import pyarrow as pa
    import interchange_hub as ih
    hub = ih.default_hub()
    steps = {}
    ih.convert(pa.table({"a": [1, 2]}), to="polars")  # built-in to built-in
    steps["builtin"] = [hub.registry.complete, "tests.fake_plugins.boxes" in sys.modules]
    from tests.fake_plugins.boxes import Box
    back = ih.convert(Box(pa.table({"a": [1, 2]})), to="pyarrow")  # an object no built-in owns
    steps["box source"] = [hub.registry.complete, back.num_rows]
print(json.dumps({"steps": steps, "warnings": [str(w.message) for w in caught]}))
"""


def _probe(site: Path, code: str, **env: str) -> Any:
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ("INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD", "INTERCHANGE_HUB_LOAD_PLUGINS")
    }
    environ.update(env, PYTHONPATH=f"{ROOT}{os.pathsep}{site}")
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=environ,
        cwd=site,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_conversion_between_builtins_reads_no_entry_point(site: Path) -> None:
    data = _probe(site, LAZY_PROBE)
    # Neither the entry points nor the plugins' modules were touched by the first one...
    assert data["steps"]["builtin"] == [False, False]
    # ... and an object no built-in adapter owns reads them, then converts.
    assert data["steps"]["box source"] == [True, 2]
    # The broken plugin is reported when they are read, once.
    assert sum("'broken'" in w for w in data["warnings"]) == 1


@pytest.mark.parametrize(
    "need",
    [
        "ih.convert(pa.table({'a': [1]}), to='boxes')",  # a target name
        "hub.plan(pa.table({'a': [1]}), to=Box)",  # a target type
        "[a.name for a in hub.adapters()]",  # a listing
        "hub.plugins()",
    ],
)
def test_each_need_reads_the_entry_points(site: Path, need: str) -> None:
    code = (
        "import json, sys, warnings\nwarnings.simplefilter('ignore')\n"
        "import pyarrow as pa, interchange_hub as ih\nhub = ih.default_hub()\n"
        "ih.convert(pa.table({'a': [1]}), to='pandas')\n"
        "before = hub.registry.complete\n"
        "from tests.fake_plugins.boxes import Box\n"
        f"{need}\n"
        "print(json.dumps([before, hub.registry.complete, hub.registry.get('boxes') is not None]))"
    )
    assert _probe(site, code) == [False, True, True]


def test_an_interrupted_entry_point_load_is_read_again_on_the_next_need(
    site: Path, tmp_path: Path
) -> None:
    make_distribution(site, "slow-plugin", {"slow": "tests.fake_plugins.interrupted_import"})
    code = (
        "import json, warnings\nwarnings.simplefilter('ignore')\n"
        "import pyarrow as pa, interchange_hub as ih\nhub = ih.default_hub()\n"
        "ih.convert(pa.table({'a': [1]}), to='polars')\n"
        "try:\n    hub.adapters()\n    first = 'loaded'\n"
        "except KeyboardInterrupt:\n    first = 'interrupted'\n"
        "names = [a.name for a in hub.adapters()]\n"
        "edges = [(e.source, e.target, e.adapter, e.protocol) for e in hub.edges()]\n"
        "plugins = {p.name: p.loaded for p in hub.plugins()}\n"
        "print(json.dumps([first, len(names) == len(set(names)), 'boxes' in names,\n"
        "    len(edges) == len(set(edges)), plugins.get('slow'), plugins.get('boxes'),\n"
        "    ih.convert(pa.table({'a': [1]}), to='polars').shape]))"
    )
    marker = tmp_path / "interrupted"
    found = _probe(site, code, INTERRUPT_MARKER=str(marker))
    # "slow" registers the boxes adapter too: its name is taken by then ("boxes" first).
    assert found[:4] == ["interrupted", True, True, True] and marker.exists()
    assert found[5] is True and found[6] == [1, 1]


# -- built-in adapters of libraries not imported yet load on first need -----------------------
DEFERRED_PROBE = """
import json, sys, warnings
warnings.simplefilter("ignore")
import pyarrow as pa, polars as pl
import interchange_hub as ih
from interchange_hub.plugins import DEFERRED_UNTIL_IMPORTED
hub = ih.default_hub()
t = pa.table({"a": [1.0, 2.0]})
ih.convert(t, to="polars")
def present():
    return sorted(p.rsplit("._", 1)[1] for p in DEFERRED_UNTIL_IMPORTED if p in sys.modules)
before = [present(), sorted(l for l in DEFERRED_UNTIL_IMPORTED.values() if l in sys.modules)]
try:
    result = repr(NEED)
except Exception as exc:
    result = f"{type(exc).__name__}: {exc}"
print(json.dumps({"before": before, "after": present(), "result": result,
                  "names": [a.name for a in hub.adapters()],
                  "plugins": [p.name for p in hub.plugins()]}))
"""


@pytest.mark.parametrize(
    ("need", "expect"),
    [
        ("type(ih.convert(t, to='nanoarrow')).__name__", "'Array'"),
        ("ih.convert(__import__('nanoarrow').Array(t), to='pyarrow').num_rows", "2"),
        ("ih.convert(t, to='cupy')", "MissingDependencyError: cupy is required"),
        ("len(hub.adapters())", ""),
    ],
)
def test_a_builtin_adapter_of_a_library_not_imported_loads_on_first_need(
    need: str, expect: str
) -> None:
    """A first conversion between pyarrow and polars imports no adapter of nanoarrow or
    cupy (neither is imported); a name, an object or a listing that needs one loads them,
    in the places a full load gives them."""
    data = _probe(ROOT, DEFERRED_PROBE.replace("NEED", need))
    assert data["before"] == [[], []]
    assert data["after"] == ["cupy", "nanoarrow"]
    assert data["result"].startswith(expect)
    assert data["plugins"][: len(DEFAULT_PLUGINS)] == list(DEFAULT_PLUGINS)
    full = [a.name for a in ih.Hub(autoload=False).adapters()]
    assert data["names"][: len(full)] == full


@pytest.fixture
def deferred_torch(monkeypatch: pytest.MonkeyPatch) -> ih.Hub:
    """A hub that leaves the torch adapter for later, as if torch were not imported."""
    from interchange_hub import plugins

    path = "interchange_hub.adapters._torch"
    monkeypatch.setitem(plugins.DEFERRED_UNTIL_IMPORTED, path, "a_library_never_imported")
    hub = ih.Hub(autoload=False)
    hub.convert(TABLE, to="polars")
    assert hub.registry.adapters(load=False) and "torch" not in [
        a.name for a in hub.registry.adapters(load=False)
    ]
    return hub


def test_a_deferred_adapter_takes_its_place_and_its_routes(deferred_torch: ih.Hub) -> None:
    full = ih.Hub(autoload=False)
    table = pa.table({"x": [1.0, 2.0]})
    plan = deferred_torch.plan(table, to="torch")  # the name loads the torch adapter
    assert str(plan) == str(full.plan(table, to="torch"))
    assert [a.name for a in deferred_torch.adapters()] == [a.name for a in full.adapters()]
    edges = [(e.source, e.target, e.adapter, e.protocol) for e in deferred_torch.edges()]
    assert edges == [(e.source, e.target, e.adapter, e.protocol) for e in full.edges()]
    assert deferred_torch.registry.complete


@pytest.mark.parametrize(
    "where", ["interchange_hub.plugins._import_builtin", "interchange_hub.plugins.collect"]
)
def test_an_interrupted_deferred_load_loads_again_on_the_next_need(
    deferred_torch: ih.Hub, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Ctrl-C while the adapter is imported, or while it is collected into the registry:
    the next need loads it, once, in its place."""
    import importlib

    from interchange_hub import hub as hub_module

    module_name, name = where.rsplit(".", 1)
    owners = [importlib.import_module(module_name), hub_module]
    real = getattr(owners[0], name)

    def interrupted(*args: object, **kwargs: object) -> None:
        for owner in owners:
            if hasattr(owner, name):
                monkeypatch.setattr(owner, name, real)
        raise KeyboardInterrupt

    for owner in owners:
        if hasattr(owner, name):
            monkeypatch.setattr(owner, name, interrupted)
    table = pa.table({"x": [1.0, 2.0]})
    with pytest.raises(KeyboardInterrupt):
        deferred_torch.convert(table, to="torch")
    assert not deferred_torch.registry.complete
    assert "torch" not in [a.name for a in deferred_torch.registry.adapters(load=False)]
    assert deferred_torch.convert(table, to="torch").shape == (2, 1)
    names = [a.name for a in deferred_torch.adapters()]
    assert names == [a.name for a in ih.Hub(autoload=False).adapters()]
    listed = [p.name for p in deferred_torch.plugins()]
    assert listed == list(DEFAULT_PLUGINS)
    assert [n for n, _ in deferred_torch.plugin_manager.list_name_plugin()] == listed


def test_an_edge_index_built_while_adapters_come_in_is_not_kept() -> None:
    """A search that read the registry's edges before another thread added adapters
    (and invalidated the router) does not keep its index, nor its route, for good."""
    hub = ih.Hub(autoload=False)
    hub.convert(TABLE, to="polars")
    router, registry = hub.planner._router, hub.registry
    real = registry.edges

    def edges_then_a_load_elsewhere(*, load: bool = True) -> list[Any]:
        found = real(load=load)
        router.invalidate()  # what another thread's late load does meanwhile
        return found

    router.invalidate()  # the next search builds the index
    registry.edges = edges_then_a_load_elsewhere  # type: ignore[method-assign]
    try:
        hub.plan(pa.table({"y": [1.0]}), to="numpy")
    finally:
        del registry.edges

    def kept_index() -> object:
        return router._by_source

    assert kept_index() is None  # rebuilt on the next search, from the new tables
    assert hub.planner._cache.sizes() == (0, 0)
    hub.plan(pa.table({"y": [1.0]}), to="numpy")
    assert kept_index() is not None and hub.planner._cache.sizes()[1] == 1


def test_no_route_between_other_libraries_passes_through_a_deferred_adapter() -> None:
    """Leaving nanoarrow's and cupy's adapters out changes no route between the other
    built-in libraries: the plans of a hub without them are those of a hub with every
    adapter (sources of ten kinds of table, their columns, arrays and temporal data, into
    each target, with copy, dtypes, device and strict asked)."""
    import warnings

    import numpy as np
    import polars as pl

    from interchange_hub.plugins import DEFERRED_UNTIL_IMPORTED

    full = ih.Hub(autoload=False)
    full.adapters()  # every adapter, whatever this process has imported
    kept = [p for p in DEFAULT_PLUGINS if p not in DEFERRED_UNTIL_IMPORTED]
    part = ih.Hub(autoload=False, builtin=False, plugins=kept)
    n, rng = 50, np.random.default_rng(0)
    tables = [
        pa.table({k: rng.standard_normal(n) for k in "ab"}),
        pa.table({"i": rng.integers(0, 9, n), "j": rng.integers(0, 9, n).astype("int32")}),
        pa.table({"x": rng.standard_normal(n).astype("float32")}),
        pa.table({"s": [str(i) for i in range(n)]}),
        pa.table(
            {
                "i": np.arange(n),
                "s": [str(i) for i in range(n)],
                "b": np.arange(n) % 2 == 0,
                "ts": pa.array(np.arange(n).astype("datetime64[us]")),
            }
        ),
        pa.table(
            {
                "i": pa.array([None if i % 5 == 0 else i for i in range(n)]),
                "f": pa.array([None if i % 7 == 0 else float(i) for i in range(n)]),
            }
        ),
        pa.table({"l": [[i, i] for i in range(n)], "st": [{"a": i} for i in range(n)]}),
        pa.table({"d": pa.array(["x", "y"] * (n // 2)).dictionary_encode()}),
        pa.table({"b": np.arange(n) % 3 == 0}),
        pa.concat_tables([pa.table({"a": np.arange(5.0)})] * 3),
    ]
    sources: list[object] = []
    for table in tables:
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        pandas = table.to_pandas()
        sources += [table, table.column(0).combine_chunks(), frame, frame.to_series(0)]
        sources += [pandas, pandas.iloc[:, 0]]
    matrix = rng.standard_normal((n, 4))
    sources += [matrix, np.asfortranarray(matrix), matrix[:, ::2], np.arange(n, dtype="int32")]
    # Temporal data, which a cast into a tensor dtype takes through torch (numpy ->
    # torch -> numpy views datetime64 as its int64 ticks): torch's adapter is never left
    # for later, and this is why.
    stamps = np.arange(4).astype("datetime64[ns]")
    temporal = pa.table({"ts": stamps, "td": np.arange(4).astype("timedelta64[us]")})
    sources += [stamps, stamps.reshape(2, 2), np.arange(4).astype("datetime64[D]"), temporal]
    sources += [temporal.to_pandas(), pl.from_arrow(temporal)]
    requests: list[dict[str, Any]] = [
        {},
        {"copy": True},
        {"copy": False},
        *({"dtype": d} for d in ("float32", "float64", "int64", "float16", "int8", "bool")),
        {"device": "cpu"},
        {"strict": True},
        {"copy": True, "dtype": "float32"},
        {"copy": False, "dtype": "int64"},
    ]

    def route(hub: ih.Hub, obj: object, to: object, request: dict[str, Any]) -> tuple[object, ...]:
        try:
            plan = hub.plan(obj, to=to, **request)
        except ih.InterchangeError as exc:
            return (type(exc).__name__,)
        return tuple((s.edge.source, s.edge.target, s.edge.adapter) for s in plan.steps)

    planned = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for obj in sources:
            for to in ("pyarrow", "polars", "pandas", "numpy", np.ndarray, pa.Table):
                for request in requests:
                    expected = route(full, obj, to, request)
                    assert route(part, obj, to, request) == expected, (type(obj), to, request)
                    planned += bool(expected) and not isinstance(expected[0], str)
    assert planned > 900  # most of them are routes, not refusals
