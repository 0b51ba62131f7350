"""Loading plugins: the built-in adapters and third-party plugins from entry points.

Every failure is contained: a plugin that cannot be imported, that fails pluggy's
validation (a misspelled hook, wrong argument names) or whose name is taken is left out,
reported in a :class:`~interchange_hub.errors.PluginWarning` and kept in the listing
(:class:`PluginInfo`), and the other plugins keep working.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import replace
from functools import cache
from inspect import isroutine
from types import ModuleType
from typing import TYPE_CHECKING, Any

from interchange_hub._core import marks
from interchange_hub._core.records import field, record
from interchange_hub.adapter import Adapter, Edge
from interchange_hub.errors import InvalidOptionError, PluginWarning, warn

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping
    from importlib.metadata import Distribution, EntryPoint

    import pluggy

    from interchange_hub._engine.registry import Registry

ENTRY_POINT_GROUP = "interchange_hub"
LOAD_PLUGINS_ENV = "INTERCHANGE_HUB_LOAD_PLUGINS"
DISABLE_AUTOLOAD_ENV = "INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD"

# Built-in plugins, registered by import path: they work from a plain checkout. A new
# built-in library is its module in adapters/ and one line here.
DEFAULT_PLUGINS = (
    "interchange_hub.adapters._pyarrow",
    "interchange_hub.adapters._nanoarrow",
    "interchange_hub.adapters._polars",
    "interchange_hub.adapters._pandas",
    "interchange_hub.adapters._numpy",
    "interchange_hub.adapters._torch",
    "interchange_hub.adapters._cupy",
    "interchange_hub._bridge.edges",
    "interchange_hub.adapters._fastpaths",
)

# Built-in adapters that a conversion needs only once their library is in use: while it
# is not imported, the hub leaves them unimported (a first conversion between other
# libraries does not pay for them) and imports them on the first lookup that finds
# nothing, a device asked, or the first listing (:func:`load_deferred`). No route between
# other libraries passes through them (``tests/test_plugins.py`` compares a thousand such
# plans with and without them). torch's adapter is not one of them: numpy's temporal data
# cast to a tensor dtype goes numpy -> torch -> numpy (its int64 ticks).
DEFERRED_UNTIL_IMPORTED = {
    "interchange_hub.adapters._nanoarrow": "nanoarrow",
    "interchange_hub.adapters._cupy": "cupy",
}

BUILTIN = "built-in"
ENTRY_POINT = "entry point"
GIVEN = "given"


@record
class PluginInfo:
    """One plugin as the hub sees it: where it came from, what it gave, what went wrong.

    ``loaded`` is False for an entry point that was found but not loaded (``skipped``
    says why) and for a plugin that failed (``error`` says how).
    """

    name: str
    source: str  # "built-in", "entry point" or "given"
    distribution: str = ""
    version: str = ""
    hooks: tuple[str, ...] = ()
    adapters: tuple[str, ...] = ()
    edges: int = 0
    loaded: bool = True
    error: str = ""
    skipped: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "source": self.source,
            "distribution": self.distribution,
            "version": self.version,
            "hooks": list(self.hooks),
            "adapters": list(self.adapters),
            "edges": self.edges,
            "loaded": self.loaded,
            "error": self.error,
            "skipped": self.skipped,
        }


@record(frozen=False)
class Loaded:
    """A plugin manager and what happened to each plugin while filling it.

    The built-in plugins alone are loaded without pluggy (``manager`` None, the modules
    in ``builtins``); :attr:`pm` builds the manager, and registers them there, when one
    is needed: entry points to read, plugins given to a hub, ``Hub.plugin_manager``."""

    manager: pluggy.PluginManager | None = None
    infos: dict[str, PluginInfo] = field(default_factory=dict)
    # The PluginWarnings to give once loading is over (emit): given while loading, a
    # warning turned into an error (-W error) would abort the load, again on every call.
    warnings: list[str] = field(default_factory=list)
    # The built-in plugins loaded without a manager: (name, module), in loading order.
    builtins: list[tuple[str, ModuleType]] = field(default_factory=list)
    # The built-in plugins left for later (DEFERRED_UNTIL_IMPORTED): load_deferred.
    deferred: list[str] = field(default_factory=list)

    @property
    def pm(self) -> pluggy.PluginManager:
        """The plugin manager, built on first use with the plugins loaded so far."""
        if self.manager is None:
            pm = new_manager()
            for name, module in self.builtins:
                pm.register(module, name=name)
            self.manager = pm  # (complete: an interrupted build starts over next time)
        return self.manager

    def emit(self) -> None:
        """Give the PluginWarnings of the load (after it is complete)."""
        pending, self.warnings = self.warnings, []
        for message in pending:
            warn(message, PluginWarning)

    def fail(self, name: str, error: str) -> None:
        """Record a failure of plugin ``name``; :meth:`emit` warns about it."""
        info = self.infos.get(name) or PluginInfo(name, GIVEN)
        error = " ".join(error.split())  # pluggy's messages span lines
        dist = f"{info.distribution} {info.version}".strip()
        where = f" (distribution {dist})" if dist else ""
        message = f"{info.error}; {error}" if info.error else error
        self.infos[name] = replace(info, error=message)
        self.warnings.append(
            f"interchange_hub plugin {name!r}{where} was left out: {error}. The other "
            "adapters keep working; run `interchange-hub plugins` to see every plugin"
        )

    def drop(self, name: str, error: str) -> None:
        """Unregister plugin ``name`` after a failure."""
        plugin = self.pm.get_plugin(name)
        if plugin is not None:
            self.pm.unregister(plugin)
        self.infos[name] = replace(self.infos[name], loaded=False)
        self.fail(name, error)


def builtin_plugins() -> list[ModuleType]:
    """The built-in adapter plugins (``Hub(plugins=[mine])`` registers them too; with
    ``builtin=False``, ``Hub(plugins=[*builtin_plugins()[:2], mine], builtin=False)``
    picks some). Each is an ordinary pluggy plugin: its hooks carry pluggy's mark."""
    modules = [importlib.import_module(path) for path in DEFAULT_PLUGINS]
    for module in modules:
        for name in marks.HOOKS:  # (marked by _core.marks, without pluggy)
            _pluggy_mark(module.__dict__.get(name))
    return modules


def _pluggy_mark(value: object) -> None:
    """pluggy's mark on a function marked by ``_core.marks`` (anything else as it is)."""
    if marks.marked(value) and not hasattr(value, _IMPL_MARK):
        from interchange_hub.hookspecs import hookimpl

        hookimpl(**getattr(value, marks.MARK))(value)


def autoload_enabled(autoload: bool | None) -> bool:
    """Whether entry points are loaded: ``autoload``, or else the environment's say."""
    if autoload is not None:
        return autoload
    return os.environ.get(DISABLE_AUTOLOAD_ENV, "").strip().lower() in ("", "0", "false", "no")


def load_plugins(
    *,
    autoload: bool | None = None,
    plugins: Iterable[object] | None = None,
    builtin: bool = True,
    lazy: bool = False,
) -> Loaded:
    """Build a plugin manager and register plugins, containing every failure.

    :param autoload: load third-party plugins from the ``interchange_hub`` entry-point
        group; None follows ``INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD``. The entry points
        loaded are those named in ``INTERCHANGE_HUB_LOAD_PLUGINS`` (a comma list; empty:
        none) or, when it is unset, all of them.
    :param plugins: plugins to register besides the built-in adapters: modules, objects
        with ``@hookimpl`` functions, import paths, or :class:`Adapter` instances (each
        registered as a plugin of its own). A built-in given again is registered once.
    :param builtin: register the built-in adapters (False: only ``plugins``).
    :param lazy: leave the entry points to a later :func:`load_entry_points`, and the
        built-in adapters of libraries not imported yet (``DEFERRED_UNTIL_IMPORTED``) to
        a later :func:`load_deferred` (the hub loads them when it first meets an object
        or a name its other adapters do not know, or when asked for every adapter).
    """
    given = [as_plugin(p) for p in plugins or ()]  # refused before anything is registered
    loaded = Loaded()
    if lazy and not given:
        # The built-in plugins alone (entry points later): imported, not yet registered
        # with pluggy, which is imported only when a manager is needed (Loaded.pm).
        for path in DEFAULT_PLUGINS if builtin else ():
            library = DEFERRED_UNTIL_IMPORTED.get(path)
            if library is not None and sys.modules.get(library) is None:
                loaded.deferred.append(path)
                # (listed in its place: Hub.plugins() loads it before listing)
                loaded.infos[path] = PluginInfo(path, BUILTIN, "interchange-hub")
            else:
                _import_builtin(loaded, path)
        return loaded
    if builtin:
        for path in DEFAULT_PLUGINS:
            _register(loaded, path, PluginInfo(path, BUILTIN, "interchange-hub"))
    for name, plugin in given:
        if builtin and name in DEFAULT_PLUGINS:
            continue  # Hub(plugins=[*builtin_plugins(), mine]) keeps working
        _register(loaded, plugin, PluginInfo(name, GIVEN))
    if autoload_enabled(autoload) and not lazy:
        _load_entry_points(loaded)
    _check_pending(loaded)
    return loaded


def load_deferred(loaded: Loaded, then: Callable[[list[str]], None] | None = None) -> list[str]:
    """Import the built-in plugins :func:`load_plugins` left for later (``lazy``) and add
    them to ``loaded`` (to its manager, where it has one); call ``then`` with the names of
    those loaded (the hub collects them there) and return them. All or nothing: if
    anything raises (``then`` too; Ctrl-C, say), ``loaded`` is as it was, and they are
    left for later again."""
    paths = loaded.deferred
    builtins, infos, warnings = list(loaded.builtins), dict(loaded.infos), list(loaded.warnings)
    manager = loaded.manager
    try:
        for path in paths:
            if manager is None:
                _import_builtin(loaded, path)
            else:
                _register(loaded, path, PluginInfo(path, BUILTIN, "interchange-hub"))
        added = [path for path in paths if loaded.infos[path].loaded]
        # (in DEFAULT_PLUGINS' order: a manager built later registers them in it)
        rank = {path: i for i, path in enumerate(DEFAULT_PLUGINS)}
        loaded.builtins.sort(key=lambda item: rank.get(item[0], len(rank)))
        if then is not None:
            then(added)
    except BaseException:
        if manager is not None:
            for path in paths:
                plugin = manager.get_plugin(path)
                if plugin is not None:
                    manager.unregister(plugin)
        loaded.builtins, loaded.infos, loaded.warnings = builtins, infos, warnings
        raise
    loaded.deferred = []
    return added


def load_entry_points(loaded: Loaded) -> list[str]:
    """Register the entry points' plugins into ``loaded`` (after :func:`load_plugins` with
    ``lazy=True``); return the names of the plugins it registered. Interrupted (Ctrl-C),
    it unregisters them again: the next call starts over."""
    before = {name for name, _ in loaded.pm.list_name_plugin()}
    infos, warnings = dict(loaded.infos), list(loaded.warnings)
    try:
        _load_entry_points(loaded)
        _check_pending(loaded)
    except BaseException:
        for name, plugin in loaded.pm.list_name_plugin():
            if name not in before and plugin is not None:
                loaded.pm.unregister(plugin)
        loaded.infos, loaded.warnings = infos, warnings
        raise
    return [name for name, _ in loaded.pm.list_name_plugin() if name not in before]


def collect(loaded: Loaded, registry: Registry, only: Iterable[str] | None = None) -> None:
    """Call each plugin's hooks separately and put what they register into ``registry``,
    so that one failing plugin is left out alone. ``only``: these plugins (those just
    registered), not every plugin of the manager."""
    chosen = None if only is None else set(only)
    if loaded.manager is None:  # the built-in plugins, loaded without pluggy
        for plugin_name, module in loaded.builtins:
            if chosen is None or plugin_name in chosen:
                hooks = [
                    (h, module.__dict__[h])
                    for h in marks.HOOKS
                    if marks.marked(module.__dict__.get(h))
                ]
                _collect_one(loaded, registry, plugin_name, hooks)
        return
    pm = loaded.pm
    for plugin_name, plugin in pm.list_name_plugin():
        if plugin is None or (chosen is not None and plugin_name not in chosen):  # blocked
            continue
        hooks = [
            (caller.name, next(i for i in caller.get_hookimpls() if i.plugin is plugin).function)
            for caller in pm.get_hookcallers(plugin) or ()
        ]
        if not hooks:
            loaded.fail(plugin_name, _no_hooks(plugin))
        _collect_one(loaded, registry, plugin_name, hooks)


def _no_hooks(plugin: object) -> str:
    """Why a plugin without a hook implementation adds nothing, and what to do."""
    unmarked = [h for h in marks.HOOKS if callable(getattr(plugin, h, None))]
    if unmarked:
        names = " and ".join(unmarked)
        return (
            f"it defines {names} without @interchange_hub.hookimpl, and only marked "
            "functions are hooks, so it added nothing; put @interchange_hub.hookimpl "
            "above each"
        )
    return (
        "it has no @interchange_hub.hookimpl function (register_adapters, register_edges), "
        "so it added nothing"
    )


def _collect_one(
    loaded: Loaded,
    registry: Registry,
    plugin_name: str,
    hooks: list[tuple[str, Callable[..., object]]],
) -> None:
    """Call one plugin's hooks (name, function) and register what they give."""
    adapters: list[str] = []
    edges = 0
    for hook, function in hooks:
        got: list[object] = []
        try:
            function(register=got.append)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - plugins are isolated
            loaded.fail(plugin_name, f"its hook {hook} raised {type(exc).__name__}: {exc}")
            continue
        for item in got:
            problem = _add(registry, hook, item, plugin_name)
            if problem:
                loaded.fail(plugin_name, problem)
            elif isinstance(item, Adapter):
                adapters.append(item.name)
            else:
                edges += 1
    info = loaded.infos.get(plugin_name) or PluginInfo(plugin_name, GIVEN)
    loaded.infos[plugin_name] = replace(
        info, hooks=tuple(h for h, _ in hooks), adapters=tuple(adapters), edges=edges
    )


def _add(registry: Registry, hook: str, item: object, plugin: str) -> str:
    """Register one item from a hook; return why it was refused ("" when registered)."""
    if hook == "register_adapters":
        return registry.add_adapter(item, plugin)
    if not isinstance(item, Edge):
        return f"its hook {hook} registered {item!r}, which is not an interchange_hub.Edge"
    registry.add_edge(item, plugin)
    return ""


class _AdapterPlugin:
    """A plugin that registers one adapter instance given to ``Hub(plugins=[...])``."""

    def __init__(self, adapter: Adapter) -> None:
        self.adapter = adapter
        self.__name__ = f"adapter:{adapter.name or type(adapter).__qualname__}"

    @marks.hookimpl
    def register_adapters(self, register: Callable[[object], None]) -> None:
        register(self.adapter)


def as_plugin(plugin: object) -> tuple[str, object]:
    """(name, plugin) for an entry of ``plugins=``; a clear error for what is none."""
    if isinstance(plugin, Adapter):
        wrapped = _AdapterPlugin(plugin)
        return wrapped.__name__, wrapped
    if isinstance(plugin, type) and issubclass(plugin, Adapter | Edge):
        raise InvalidOptionError(
            f"plugins= got the class {plugin.__qualname__}, not an instance; pass "
            f"{plugin.__qualname__}() (or the module that registers it)"
        )
    if isinstance(plugin, Edge):
        raise InvalidOptionError(
            "plugins= got an Edge; register edges from a plugin's register_edges hook"
        )
    if isinstance(plugin, str):
        return plugin, plugin
    if plugin is None or isinstance(plugin, (int, float, bytes, list, tuple, dict, set)):
        raise InvalidOptionError(
            f"plugins= takes plugin modules, objects with @ih.hookimpl functions, import "
            f"paths or Adapter instances, not {type(plugin).__name__}"
        )
    return _plugin_name(plugin), plugin


def _plugin_name(plugin: object) -> str:
    name = getattr(plugin, "__name__", None)
    return name if isinstance(name, str) else f"{type(plugin).__qualname__}-{id(plugin):x}"


def _import_builtin(loaded: Loaded, path: str) -> None:
    """Import a built-in plugin for a load without pluggy (see :func:`_register`)."""
    info = PluginInfo(path, BUILTIN, "interchange-hub")
    loaded.infos[path] = info
    try:
        module = importlib.import_module(path)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - plugins are isolated
        loaded.infos[path] = replace(info, loaded=False)
        loaded.fail(path, f"registering it raised {type(exc).__name__}: {exc}")
        return
    loaded.builtins.append((path, module))


def _register(loaded: Loaded, plugin: object, info: PluginInfo) -> None:
    loaded.infos[info.name] = info
    if loaded.pm.has_plugin(info.name):
        loaded.infos[info.name] = replace(info, loaded=False)
        loaded.fail(info.name, "a plugin of that name is already registered")
        return
    try:
        if isinstance(plugin, str):
            plugin = importlib.import_module(plugin)
        loaded.pm.register(plugin, name=info.name)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - plugins are isolated
        loaded.infos[info.name] = replace(info, loaded=False)
        loaded.fail(info.name, f"registering it raised {type(exc).__name__}: {exc}")


_IMPL_MARK = f"{ENTRY_POINT_GROUP}_impl"  # what @hookimpl sets on a function (pluggy's rule)


def new_manager() -> pluggy.PluginManager:
    """The hub's plugin manager, with its hook specifications (pluggy imported now)."""
    from interchange_hub import hookspecs

    pm = _manager_class()(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    return pm


@cache
def _manager_class() -> type[pluggy.PluginManager]:
    import pluggy

    class _Manager(pluggy.PluginManager):
        """pluggy's manager, with a fast look at module plugins: pluggy reads every name
        of a plugin with ``inspect.getattr_static`` (10 ms for the 16 built-in modules'
        1,000 names, a quarter of the first conversion); a module's attributes are its
        ``__dict__``, and a value there that is no function marked by ``@hookimpl``
        cannot be a hook implementation, which is all pluggy decides from it too. A
        function of a built-in plugin (marked without pluggy, ``_core.marks``) gets
        pluggy's own mark first."""

        def parse_hookimpl_opts(self, plugin: object, name: str) -> Any:
            value = (
                plugin.__dict__.get(name)
                if isinstance(plugin, ModuleType)
                else getattr(type(plugin), name, None)
            )
            _pluggy_mark(value)
            if isinstance(plugin, ModuleType) and (
                not isroutine(value) or not hasattr(value, _IMPL_MARK)
            ):
                return None
            return super().parse_hookimpl_opts(plugin, name)

    return _Manager


def _load_entry_points(loaded: Loaded) -> None:
    wanted = _wanted_names()
    found = set()
    for ep, name, version in entry_points():
        found.add(ep.name)
        info = PluginInfo(ep.name, ENTRY_POINT, name, version)
        if wanted is not None and ep.name not in wanted:
            continue
        if loaded.pm.is_blocked(ep.name):
            continue
        if ep.name in loaded.infos:
            loaded.infos.setdefault(f"{ep.name} ({info.distribution})", info)
            loaded.fail(
                f"{ep.name} ({info.distribution})",
                f"the name {ep.name!r} is already taken by another plugin; rename the entry point",
            )
            continue
        try:
            plugin = ep.load()
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - plugins are isolated
            loaded.infos[ep.name] = replace(info, loaded=False)
            loaded.fail(ep.name, f"importing {ep.value!r} raised {type(exc).__name__}: {exc}")
            continue
        _register(loaded, plugin, info)
    for name in sorted((wanted or set()) - found):
        loaded.warnings.append(
            f"{LOAD_PLUGINS_ENV} names {name!r}, but no installed distribution has an entry "
            f"point of that name in the {ENTRY_POINT_GROUP!r} group; installed: "
            f"{', '.join(sorted(found)) or 'none'}"
        )


def _wanted_names() -> set[str] | None:
    names = os.environ.get(LOAD_PLUGINS_ENV)
    if names is None:
        return None
    return {n.strip() for n in names.split(",") if n.strip()}


def entry_points() -> Iterator[tuple[EntryPoint, str, str]]:
    """Every ``interchange_hub`` entry point of the installed distributions (not loaded),
    with its distribution's name and version."""
    import importlib.metadata

    # entry_points(group=) finds each distribution once (by its normalised folder name, as
    # the first on sys.path wins) without reading every distribution's METADATA: reading
    # the Name of each of 143 installed distributions cost 84 ms of the first conversion.
    # Each distribution's METADATA is read once here (dist.name and dist.version parse it
    # again each, 1 ms a read).
    seen = set()
    facts: dict[int, tuple[str, str]] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist
        if dist is None:  # pragma: no cover - entry points always come from a distribution
            continue
        name, version = facts.get(id(dist)) or _dist_facts(dist)
        facts[id(dist)] = (name, version)
        if (name, ep.name) in seen:  # the same distribution found twice under two spellings
            continue
        seen.add((name, ep.name))
        yield ep, name, version


def not_loaded(loaded: Mapping[str, PluginInfo], autoload: bool) -> list[PluginInfo]:
    """Installed entry points that are not among ``loaded``, and why."""
    why = f"{LOAD_PLUGINS_ENV} leaves it out" if autoload else "autoload is off"
    return [
        PluginInfo(ep.name, ENTRY_POINT, name, version, loaded=False, skipped=why)
        for ep, name, version in entry_points()
        if ep.name not in loaded
    ]


def _dist_facts(dist: Distribution) -> tuple[str, str]:
    meta = dist.metadata
    return str(meta["Name"] or ""), str(meta["Version"] or "")


def _check_pending(loaded: Loaded) -> None:
    """Leave out plugins whose hook implementations match no specification."""
    import pluggy  # (a manager is loaded: pluggy is imported already)

    for _ in range(len(loaded.infos) + 1):
        try:
            loaded.pm.check_pending()
            return
        except pluggy.PluginValidationError as exc:
            name = loaded.pm.get_name(exc.plugin) or _plugin_name(exc.plugin)
            hint = _hook_hint(str(exc))
            loaded.drop(name, f"{exc}{hint}")


def _hook_hint(message: str) -> str:
    import difflib

    from interchange_hub import hookspecs

    known = [n for n in dir(hookspecs) if getattr(getattr(hookspecs, n), "interchange_hub_spec", 0)]
    words = [w.strip("'\"") for w in message.split()]
    close = [m for w in words for m in difflib.get_close_matches(w, known, n=1, cutoff=0.8)]
    return f" (did you mean {close[0]!r}?)" if close else f" (the hooks are: {', '.join(known)})"
