"""``import interchange_hub`` must stay light: no data library is imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

HEAVY = ["pyarrow", "nanoarrow", "polars", "pandas", "numpy", "torch", "cupy"]


def _imported_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    return [m for m in out.split(",") if m]


def test_import_leaves_data_libraries_unimported() -> None:
    assert _imported_after("import interchange_hub") == []


def test_building_the_hub_leaves_data_libraries_unimported() -> None:
    code = "import interchange_hub as ih\nh = ih.Hub(autoload=False)\nh.adapters()"
    assert _imported_after(code) == []


def test_converting_numpy_imports_only_what_the_route_needs() -> None:
    code = (
        "import numpy, interchange_hub as ih\n"
        "ih.Hub(autoload=False).convert(numpy.arange(3), to='numpy', copy=True)"
    )
    assert set(_imported_after(code)) == {"numpy"}


def test_a_first_conversion_imports_no_library_of_an_unrelated_plugin() -> None:
    # Every installed plugin is loaded (autoload), and none of their libraries is imported
    # for a conversion between two other libraries: they are not waypoints, so the router
    # never asks their edges (whose estimates may import them: jax took 700 ms).
    plugins = {"interchange_hub_jax": "jax", "interchange_hub_datasets": "datasets"}
    plugins |= {"interchange_hub_xarray": "xarray", "interchange_hub_duckdb": "duckdb"}
    code = (
        "import importlib.util, sys, pyarrow as pa, interchange_hub as ih\n"
        f"plugins = {plugins!r}\n"
        "ih.convert(pa.table({'a': [1.0, 2.0]}), to='numpy')\n"
        "ih.convert(pa.array([1, 2]), to='pandas')\n"
        "loaded = {p.name for p in ih.default_hub().plugins() if p.loaded}\n"
        "present = [lib for mod, lib in plugins.items() if importlib.util.find_spec(mod)]\n"
        "imported = sorted(lib for lib in present if lib in sys.modules)\n"
        "print(json.dumps([imported, sorted(set(present) - loaded)]))"
    )
    env = {k: v for k, v in os.environ.items() if k != "INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD"}
    out = subprocess.run(
        [sys.executable, "-c", "import json\n" + code],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    ).stdout
    imported, not_loaded = json.loads(out.strip().splitlines()[-1])
    assert not_loaded == []  # each installed plugin was loaded: the check means something
    assert imported == []


def test_a_conversion_between_built_in_libraries_leaves_pluggy_unimported() -> None:
    # The built-in plugins load without pluggy; the manager (and pluggy) comes when asked
    # for, with every built-in module registered there as an ordinary pluggy plugin whose
    # hooks are those the hub called.
    code = (
        "import json, sys, pyarrow as pa, interchange_hub as ih\n"
        "hub = ih.Hub(autoload=False)\n"
        "hub.convert(pa.table({'a': [1, 2]}), to='numpy')\n"
        "before = 'pluggy' in sys.modules\n"
        "infos = {p.name: [list(p.hooks), list(p.adapters), p.edges] for p in hub.plugins()}\n"
        "pm = hub.plugin_manager\n"
        "hooks = {n: sorted(c.name for c in pm.get_hookcallers(p)) for n, p in "
        "pm.list_name_plugin()}\n"
        "print(json.dumps([before, 'pluggy' in sys.modules, infos, hooks]))"
    )
    before, after, infos, hooks = _printed_json(code)
    assert before is False and after is True
    assert set(hooks) == set(infos) and len(infos) == 9
    for name, (called, adapters, edges) in infos.items():
        assert sorted(called) == hooks[name] and called  # each module's hooks, as pluggy sees
        assert adapters or edges


def test_the_built_in_marker_names_the_hooks_of_the_specifications() -> None:
    from interchange_hub import hookspecs
    from interchange_hub._core import marks

    specs = [n for n in vars(hookspecs) if hasattr(getattr(hookspecs, n), "interchange_hub_spec")]
    assert tuple(specs) == marks.HOOKS


def test_the_built_in_plugins_are_pluggy_plugins_for_a_manager_of_ones_own() -> None:
    # builtin_plugins() gives modules whose hooks carry pluggy's mark, in a process where
    # no hub has built a manager yet.
    code = (
        "import json, pluggy, interchange_hub as ih\n"
        "from interchange_hub import hookspecs\n"
        "found = {}\n"
        "for module in ih.builtin_plugins():\n"
        "    pm = pluggy.PluginManager('interchange_hub')\n"
        "    pm.add_hookspecs(hookspecs)\n"
        "    pm.register(module)\n"
        "    found[module.__name__] = [c.name for c in pm.get_hookcallers(module) or ()]\n"
        "print(json.dumps(found))"
    )
    found = _printed_json(code)
    assert len(found) == 9 and all(found.values())


def _printed_json(code: str) -> Any:
    """What ``code`` prints last, as JSON, run in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    return json.loads(out.strip().splitlines()[-1])
