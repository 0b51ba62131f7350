"""The Hub: one set of adapters (loaded from plugins) and the verbs convert, plan, export."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, overload

from interchange_hub._core.info import RouteChanged
from interchange_hub._engine.cache import RouteCache
from interchange_hub._engine.planner import Planner
from interchange_hub._engine.registry import Registry
from interchange_hub._engine.router import Router
from interchange_hub.adapter import Adapter, bytes_inside
from interchange_hub.errors import InterchangeError, InvalidOptionError
from interchange_hub.plugins import (
    DEFAULT_PLUGINS,
    as_plugin,
    autoload_enabled,
    collect,
    load_deferred,
    load_entry_points,
    load_plugins,
    not_loaded,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    import pluggy

    from interchange_hub._core.device import Device
    from interchange_hub._core.info import DataInfo
    from interchange_hub._engine.plans import Plan
    from interchange_hub.adapter import Buffer, Edge
    from interchange_hub.plugins import Loaded, PluginInfo


_T = TypeVar("_T")


class Hub:
    """An independent set of adapters with its own route cache.

    :param autoload: load third-party plugins from entry points (None: follow the
        environment variables).
    :param plugins: plugins to register besides the built-in adapters: modules or objects
        with ``@ih.hookimpl`` functions, import paths, or :class:`~interchange_hub.Adapter`
        instances.
    :param builtin: register the built-in adapters (pyarrow, polars, pandas, ...); False
        with ``autoload=False`` gives a hub of ``plugins`` alone (with autoload, the
        installed entry points' plugins join them).

    >>> hub = ih.Hub(plugins=[MyAdapter()], autoload=False)  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        autoload: bool | None = None,
        plugins: Iterable[object] | Adapter | None = None,
        builtin: bool = True,
    ):
        if not (builtin is True or builtin is False):
            raise InvalidOptionError(f"builtin must be True or False, not {builtin!r}")
        if not (autoload is None or autoload is True or autoload is False):
            # (a string read as true loaded every plugin: Hub(autoload="no"))
            raise InvalidOptionError(
                f"autoload must be True, False or None (the environment decides), not {autoload!r}"
            )
        given: list[object]
        if isinstance(plugins, (str, bytes, Adapter)) or not hasattr(plugins, "__iter__"):
            given = [] if plugins is None else [plugins]  # one plugin, not a list of them
        else:
            given = list(cast("Iterable[object]", plugins))
        for plugin in given:
            as_plugin(plugin)  # a class, an Edge or a number is refused here, not on first use
        self._pm_args = (autoload, given, builtin)
        self._infos: dict[str, PluginInfo] = {}
        self._registry = Registry()
        self._cache = RouteCache()
        self._router = Router(self._registry, self._cache)
        self._planner = Planner(self._registry, self._router, self._cache)
        self._planner.hub = self  # collections (Dask, Ray) plan their metadata with it
        # The runs the planner keeps, by call (read by convert's fast path, without a lock:
        # see RouteCache); empty until the plugins are loaded, by the first plan
        self._calls = self._cache.calls
        self._lock = threading.Lock()
        self._loading = 0  # the thread loading the plugins, while it does
        self._loaded: Loaded | None = None
        self._entry_points = False  # whether entry points are still to be read

    # -- plugins ----------------------------------------------------------------------------
    @property
    def plugin_manager(self) -> pluggy.PluginManager:
        """The pluggy manager, built (and every plugin loaded, entry points too) on first
        use."""
        loaded = self._manager()
        self._registry._load_all()
        with self._lock:  # built once (the built-in plugins are loaded without it)
            return loaded.pm

    def _manager(self) -> Loaded:
        """The built-in and given plugins, loaded (the entry points, and the built-in
        adapters of libraries not imported yet, on first need: :meth:`_load_later`)."""
        if self._loaded is None:
            self._refuse_reentry()
            with self._lock:
                if self._loaded is None:
                    self._load()
        assert self._loaded is not None  # _load sets it or raises
        return self._loaded

    def _refuse_reentry(self) -> None:
        if self._loading == threading.get_ident():
            raise InterchangeError(
                "a plugin used this hub while the hub was loading its plugins (in its "
                "import or a register hook), which would wait forever; convert on first "
                "use instead, or use a hub of its own (ih.Hub(autoload=False))"
            )

    def _load(self) -> None:
        """Load and collect the built-in and given plugins (with the lock held); all or
        nothing. The entry points, and the built-in adapters of libraries not imported
        yet, wait for :meth:`_load_later`."""
        self._loading = threading.get_ident()
        try:
            autoload, plugins, builtin = self._pm_args
            loaded = load_plugins(autoload=autoload, plugins=plugins, builtin=builtin, lazy=True)
            collect(loaded, self._registry)
        except BaseException:  # Ctrl-C, say: the next use loads again, from nothing
            self._registry.clear()
            raise
        finally:
            self._loading = 0
        self._router.invalidate()
        self._infos = loaded.infos
        self._loaded = loaded
        self._entry_points = autoload_enabled(autoload)
        if loaded.deferred or self._entry_points:
            self._registry.more = self._load_later
        loaded.emit()  # loaded first: a warning made an error (-W error) is raised once

    def _load_later(self) -> bool:
        """What the registry calls when a lookup finds nothing, or a listing is asked
        for: the built-in adapters left for later first (their libraries were not
        imported when the hub loaded: :meth:`_load_deferred`), then the entry points;
        whether this call added anything."""
        loaded = self._loaded
        if loaded is not None and loaded.deferred:
            return self._load_deferred()
        return self._load_entry_points()

    def _load_deferred(self) -> bool:
        """Import and collect the built-in adapters left for later, in their places
        among the others (as a load of every plugin at once orders them). All or
        nothing: interrupted, the next need loads them again."""
        self._refuse_reentry()
        with self._lock:
            loaded = self._loaded
            if loaded is None or not loaded.deferred:  # another thread loaded them
                return True  # (look again)
            state = self._registry.snapshot()
            self._loading = threading.get_ident()

            def collect_in_order(added: list[str]) -> None:
                collect(loaded, self._registry, only=added)
                self._registry.order(DEFAULT_PLUGINS)

            try:
                load_deferred(loaded, then=collect_in_order)
            except BaseException:
                self._registry.restore(state)
                raise
            finally:
                self._loading = 0
            if not self._entry_points:
                self._registry.more = None
            self._router.invalidate()
            self._infos = loaded.infos
        loaded.emit()
        return True

    def _load_entry_points(self) -> bool:
        """Read the entry points and add their plugins (the registry asks, when a lookup
        finds nothing or every adapter is listed); whether this call loaded them. Reading
        them costs 10-20 ms (every installed distribution's entry_points.txt, then the
        plugins' imports), which a conversion between built-in libraries never pays.
        All or nothing: interrupted, the next need reads them again."""
        if not self._entry_points:
            return False
        self._refuse_reentry()
        with self._lock:
            loaded = self._loaded
            if not self._entry_points or loaded is None:  # another thread read them
                return True  # (look again)
            state = self._registry.snapshot()
            self._loading = threading.get_ident()
            try:
                added = load_entry_points(loaded)
                collect(loaded, self._registry, only=added)
            except BaseException:
                self._registry.restore(state)
                raise
            finally:
                self._loading = 0
            self._entry_points = False
            self._registry.more = None
            self._router.invalidate()
            self._infos = loaded.infos
        loaded.emit()
        return True

    @property
    def planner(self) -> Planner:
        """The planner over this hub's adapters (plugins loaded)."""
        if self._loaded is None:
            self._manager()
        return self._planner

    def plugins(self, *, everything: bool = False) -> list[PluginInfo]:
        """The plugins of this hub, with what each provides and any failure.

        :param everything: also list entry points that were found but not loaded (left
            out by ``INTERCHANGE_HUB_LOAD_PLUGINS``, or autoload is off).
        """
        _ = self.plugin_manager  # every plugin, entry points too
        infos = list(self._infos.values())
        if everything:
            infos += not_loaded(self._infos, autoload_enabled(self._pm_args[0]))
        return infos

    @property
    def registry(self) -> Registry:
        return self.planner.registry

    def adapters(self) -> list[Adapter]:
        """The registered adapters."""
        return self.registry.adapters()

    def edges(self) -> list[Edge]:
        """The usable edges (those whose libraries are installed)."""
        return self.registry.edges()

    # -- verbs --------------------------------------------------------------------------------
    def plan(
        self,
        obj: object,
        to: object,
        *,
        copy: bool | None = None,
        device: str | Device | None = None,
        strict: bool = False,
        dtype: object = None,
        as_dict: bool = False,
    ) -> Plan:
        """Plan the conversion of ``obj`` to ``to`` without converting anything.

        Arguments are those of :meth:`convert`. With ``as_dict=True`` the table is taken
        to Arrow to plan each column (zero-copy; a one-shot stream is refused).
        """
        _check_as_dict(as_dict)
        if as_dict:
            return self.planner.plan_columns(obj, to, copy, device, strict, dtype)
        return self.planner.plan(obj, to, copy, device, strict, dtype)

    @overload
    def convert(
        self,
        obj: object,
        to: type[_T],
        *,
        copy: bool | None = ...,
        device: str | Device | None = ...,
        strict: bool = ...,
        dtype: object = ...,
        as_dict: Literal[False] = ...,
    ) -> _T: ...
    @overload
    def convert(
        self,
        obj: object,
        to: object,
        *,
        copy: bool | None = ...,
        device: str | Device | None = ...,
        strict: bool = ...,
        dtype: object = ...,
        as_dict: bool = ...,
    ) -> Any: ...

    def convert(
        self,
        obj: object,
        to: object,
        *,
        copy: bool | None = None,
        device: str | Device | None = None,
        strict: bool = False,
        dtype: object = None,
        as_dict: bool = False,
    ) -> Any:
        """Convert ``obj`` to the library or type ``to``; see :func:`interchange_hub.convert`."""
        if as_dict is not False:
            _check_as_dict(as_dict)
            return self.planner.convert_columns(obj, to, copy, device, strict, dtype)
        # The fast path: the run kept for this call and the object's route key, looked up
        # here, not in a call to the planner (0.15-0.25 us a repeated conversion). The
        # same lines as ih.convert's (a test holds them alike).
        try:
            fast = self._calls.get((type(obj), to, copy, device, strict, dtype))
        except TypeError:  # an unhashable to= or device=: the planner explains
            fast = None
        if fast is not None and fast.copy is copy and fast.strict is strict:
            try:
                run = fast.runs.get(fast.key(obj))
            except Exception:  # noqa: BLE001 - planned: describe says what failed
                run = None
            if run is not None:
                try:
                    return run(obj)
                except RouteChanged:  # the kept route does not fit this object: planned
                    pass
        return self.planner.convert(obj, to, copy, device, strict, dtype)

    def iter_batches(
        self,
        source: object,
        to: object,
        *,
        batch_size: int | None = None,
        drop_last: bool = False,
        copy: bool | None = None,
        device: str | Device | None = None,
        strict: bool = False,
        dtype: object = None,
        as_dict: bool = False,
    ) -> Iterator[Any]:
        """``source`` as batches of ``to``; see :func:`interchange_hub.iter_batches`."""
        from interchange_hub._engine.batches import iter_batches

        return iter_batches(
            self,
            source,
            to,
            batch_size=batch_size,
            drop_last=drop_last,
            copy=copy,
            device=device,
            strict=strict,
            dtype=dtype,
            as_dict=as_dict,
        )

    def export(self, obj: object) -> Any:
        """An object exposing every interchange dunder that applies to ``obj``."""
        from interchange_hub._export import make_export

        return make_export(self.planner, obj)

    def describe(self, obj: object) -> DataInfo:
        """The hub's description of ``obj`` (kind, columns, sizes, device)."""
        planner = self.planner
        return planner.describe(planner.source(obj)[1], obj)

    def is_one_shot(self, obj: object) -> bool:
        """Whether converting ``obj`` consumes it (a reader-like stream)."""
        return self.planner.is_one_shot(obj)

    def buffers(self, obj: object) -> list[Buffer]:
        """The memory ranges ``obj`` uses, as its adapter reports them."""
        return self.planner.source(obj)[1].buffers(obj)

    def shared_bytes(self, a: object, b: object) -> int:
        """How many bytes of ``a``'s buffers lie inside ``b``'s buffers.

        Each of ``a``'s buffers counts the bytes of it that lie in any of ``b``'s, once
        (``b``'s buffers are merged first: chunks of a column that repeat one buffer, a
        polars Enum's categories in each chunk, do not count it twice)."""
        if a is b:
            return sum(buf.size for buf in self.buffers(a))
        return bytes_inside(self.buffers(a), self.buffers(b))


def _check_as_dict(as_dict: object) -> None:
    if not (as_dict is True or as_dict is False):
        raise InvalidOptionError(f"as_dict must be True or False, not {as_dict!r}")
