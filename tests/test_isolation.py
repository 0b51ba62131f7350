"""A broken plugin is left out alone: it never breaks, exits, hangs or poisons the hub.

Each plugin here is a small object with ``@ih.hookimpl`` methods; the hub is built with
the built-ins plus that plugin, and an unrelated conversion must still work.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from typing import Any

import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub.adapter import ARROW
from tests.fake_plugins import boxes

TABLE = pa.table({"a": [1, 2, 3]})


def _hub(plugin: object) -> ih.Hub:
    return ih.Hub(autoload=False, plugins=[plugin])


def _left_out(hub: ih.Hub, name_part: str) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        infos = hub.plugins()
    errors = [p.error for p in infos if name_part in p.name and p.error]
    assert errors, [p.name for p in infos]
    assert any(issubclass(w.category, ih.PluginWarning) for w in caught)
    return errors[0]


class _EdgesRaise(boxes.BoxAdapter):
    def edges(self) -> list[ih.Edge]:
        raise RuntimeError("edges are broken")


class _EdgesPlugin:
    @ih.hookimpl
    def register_adapters(self, register: Any) -> None:
        register(_EdgesRaise())


def test_an_adapter_whose_edges_raise_is_left_out_alone() -> None:
    hub = _hub(_EdgesPlugin())
    assert "edges() raised RuntimeError: edges are broken" in _left_out(hub, "EdgesPlugin")
    assert hub.convert(TABLE, to="polars").shape == (3, 1)


def _raises(ctx: ih.Context) -> ih.Estimate:
    raise KeyError("oops")


def _none(ctx: ih.Context) -> Any:
    return None


class _BadEstimates:
    @ih.hookimpl
    def register_edges(self, register: Any) -> None:
        for estimate in (_raises, _none):
            register(ih.Edge(ARROW, "polars", "bad", "bad", estimate, lambda v, c: v))
            register(ih.Edge("pyarrow", ARROW, "bad", "bad", estimate, lambda v, c: v))


def test_edges_whose_estimate_raises_or_returns_none_are_left_out() -> None:
    hub = _hub(_BadEstimates())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert hub.convert(TABLE, to="polars").shape == (3, 1)
        assert hub.convert(TABLE, to="pandas").shape == (3, 1)
    with pytest.raises(ih.NoRouteError) as caught:
        hub.convert(pa.table({"s": ["x"]}), to="torch")
    assert any("estimate raised KeyError" in r for r in caught.value.reasons)


class _Exits:
    @ih.hookimpl
    def register_adapters(self, register: Any) -> None:
        sys.exit(3)


def test_a_hook_calling_sys_exit_does_not_exit_the_host() -> None:
    hub = _hub(_Exits())
    assert "SystemExit" in _left_out(hub, "Exits")
    assert hub.convert(TABLE, to="polars").shape == (3, 1)


REENTRANT = """
import interchange_hub as ih, pyarrow as pa, warnings
warnings.simplefilter("ignore")

class Reentrant:
    @ih.hookimpl
    def register_adapters(self, register):
        ih.convert(pa.table({"a": [1]}), to="polars")  # the hub that is loading this

hub = ih.Hub(autoload=False, plugins=[Reentrant()])
import interchange_hub
interchange_hub._default = hub
print(hub.convert(pa.table({"a": [1, 2]}), to="polars").shape)
print([p.error for p in hub.plugins() if p.error])
"""


def test_a_plugin_converting_on_the_hub_that_loads_it_does_not_hang() -> None:
    run = subprocess.run(
        [sys.executable, "-c", REENTRANT], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "(2, 1)" in run.stdout
    assert "while the hub was loading its plugins" in run.stdout


class _Warns:
    @ih.hookimpl
    def register_adapters(self, register: Any) -> None:
        raise ValueError("broken")


def test_under_w_error_a_broken_plugin_raises_once_then_the_hub_works() -> None:
    hub = _hub(_Warns())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ih.PluginWarning, match="was left out"):
            hub.convert(TABLE, to="polars")
        assert hub.convert(TABLE, to="polars").shape == (3, 1)  # loaded, warned once


class _InterruptedOnce:
    calls = 0

    @ih.hookimpl
    def register_adapters(self, register: Any) -> None:
        type(self).calls += 1
        if type(self).calls == 1:
            raise KeyboardInterrupt
        register(boxes.BoxAdapter())


def test_an_interrupted_first_load_leaves_a_consistent_hub() -> None:
    hub = _hub(_InterruptedOnce())
    with pytest.raises(KeyboardInterrupt):
        hub.adapters()
    names = [a.name for a in hub.adapters()]  # loads again, from nothing
    assert len(names) == len(set(names)) and "boxes" in names and "polars" in names
    edges = [(e.source, e.target, e.adapter, e.protocol) for e in hub.edges()]
    assert len(edges) == len(set(edges))
    assert not [p for p in hub.plugins() if p.error]


def test_the_owner_cache_does_not_keep_every_type_ever_seen() -> None:
    hub = ih.Hub(autoload=False)
    for i in range(3000):
        hub.registry.owner(type(f"Short{i}", (), {})())
    assert len(hub.registry._owner_cache) <= 1024
