"""The Hub: a registry, a router and the public verbs convert, plan and export."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit, devicekit
from interchange_hub.adapter import ARROW, ARROW_DEVICE, DLPACK, Adapter, Buffer, Edge
from interchange_hub.dependencies import installed
from interchange_hub.errors import (
    ConversionError,
    DeviceError,
    InterchangeError,
    InvalidOptionError,
    MissingDependencyError,
    ProtocolError,
    UnsupportedObjectError,
)
from interchange_hub.plans import Request
from interchange_hub.plugins import (
    GIVEN,
    Loaded,
    PluginInfo,
    autoload_enabled,
    load_plugins,
    not_loaded,
)
from interchange_hub.protocols import Device, is_arrow, is_arrow_device, is_dlpack
from interchange_hub.registry import Registry
from interchange_hub.router import Router, run_steps, runs_of
from interchange_hub.sources import PROTOCOL_SOURCE

if TYPE_CHECKING:
    from collections.abc import Iterable

    import pluggy

    from interchange_hub.model import DataInfo
    from interchange_hub.plans import Plan

MAX_FAST_CALLS = 1024  # distinct (type, to, copy, device, strict) calls kept
MAX_FAST_KEYS = 64  # route keys kept per call
_ADAPTER = object()  # the key under which a call's source adapter is kept


class Hub:
    """An independent set of adapters with its own plan cache.

    :param autoload: load third-party plugins from entry points (None: follow the
        environment variables).
    :param plugins: the plugins to register instead of the built-in adapters.
    """

    def __init__(self, *, autoload: bool | None = None, plugins: Iterable[object] | None = None):
        self._pm_args = (autoload, None if plugins is None else list(plugins))
        self._pm: pluggy.PluginManager | None = None
        self._infos: dict[str, PluginInfo] = {}
        # (type, to, copy, device, strict) -> {route key: steps}; the source adapter under
        # _ADAPTER. A repeated conversion then costs a route key and the steps themselves.
        self._fast: dict[tuple[object, ...], dict[Any, Any]] = {}
        self._registry = Registry()
        self._router = Router(self._registry.edges)
        self._lock = threading.Lock()

    # -- plugins ----------------------------------------------------------------------------
    @property
    def plugin_manager(self) -> pluggy.PluginManager:
        """The pluggy manager, built (and plugins loaded) on first use."""
        if self._pm is None:
            with self._lock:
                if self._pm is None:
                    autoload, plugins = self._pm_args
                    loaded = load_plugins(autoload=autoload, plugins=plugins)
                    self._collect(loaded)
                    self._fast.clear()
                    self._infos = loaded.infos
                    self._pm = loaded.pm
        return self._pm

    def plugins(self, *, everything: bool = False) -> list[PluginInfo]:
        """The plugins of this hub, with what each provides and any failure.

        :param everything: also list entry points that were found but not loaded (left
            out by ``INTERCHANGE_HUB_LOAD_PLUGINS``, or autoload is off).
        """
        _ = self.plugin_manager
        infos = list(self._infos.values())
        if everything:
            infos += not_loaded(self._infos, autoload_enabled(self._pm_args[0]))
        return infos

    def _collect(self, loaded: Loaded) -> None:
        """Call each plugin's hooks separately, so that one failing plugin is left out alone."""
        pm = loaded.pm
        for plugin_name, plugin in pm.list_name_plugin():
            if plugin is None:  # blocked
                continue
            callers = pm.get_hookcallers(plugin) or ()
            adapters: list[str] = []
            edges = 0
            for caller in callers:
                got: list[object] = []
                impl = next(i for i in caller.get_hookimpls() if i.plugin is plugin)
                try:
                    impl.function(register=got.append)
                except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the hub
                    why = f"its hook {caller.name} raised {type(exc).__name__}: {exc}"
                    loaded.fail(plugin_name, why)
                    continue
                for item in got:
                    problem = self._add(caller.name, item, plugin_name)
                    if problem:
                        loaded.fail(plugin_name, problem)
                    elif caller.name == "register_adapters":
                        adapters.append(item.name)  # type: ignore[attr-defined]
                    else:
                        edges += 1
            info = loaded.infos.get(plugin_name) or PluginInfo(plugin_name, GIVEN)
            hooks = tuple(c.name for c in callers)
            loaded.infos[plugin_name] = replace(
                info, hooks=hooks, adapters=tuple(adapters), edges=edges
            )
        self._router.invalidate()

    def _add(self, hook: str, item: object, plugin: str) -> str:
        if hook == "register_adapters":
            return self._registry.add_adapter(item, plugin)  # type: ignore[arg-type]
        if not isinstance(item, Edge):
            return f"its hook {hook} registered {item!r}, which is not an interchange_hub.Edge"
        self._registry.add_edge(item, plugin)
        return ""

    @property
    def registry(self) -> Registry:
        _ = self.plugin_manager
        return self._registry

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
    ) -> Plan:
        """Plan the conversion of ``obj`` to ``to`` without converting anything.

        Arguments are those of :meth:`convert`.
        """
        return self._plan(obj, to, copy, device, strict)[0]

    def convert(
        self,
        obj: object,
        to: object,
        *,
        copy: bool | None = None,
        device: str | Device | None = None,
        strict: bool = False,
    ) -> Any:
        """Convert ``obj`` to the library or type ``to``.

        :param to: a library name (``"polars"``) or a type (``pl.Series``).
        :param copy: None copies only where needed; False raises
            :class:`~interchange_hub.errors.CopyRequiredError` if any column must be copied;
            True gives a result that shares no memory with ``obj``.
        :param device: None keeps the data where it is; ``"cpu"`` or ``"cuda:N"`` asks
            for a place.
        :param strict: raise :class:`~interchange_hub.errors.LossyConversionError` instead
            of warning when a step cannot keep a column faithfully.
        """
        try:
            fast = self._fast.get((type(obj), to, copy, device, strict))
        except TypeError:  # an unhashable to= or device=: the slow path explains
            fast = None
        if fast is not None:
            runs = fast.get(fast[_ADAPTER].route_key(obj))
            if runs is not None:
                return run_steps(obj, runs)
        plan, request, source = self._plan(obj, to, copy, device, strict)
        if plan.deferred:  # a stream of unknown schema: read it once, then plan for real
            return self.convert(_read_once(obj), to, copy=copy, device=device, strict=strict)
        one_shot = source.is_one_shot(obj)
        result = self._router.execute(obj, plan, request, one_shot)
        # A move to a default device is not remembered: the default (cupy's current GPU)
        # may differ next time.
        if not (one_shot or plan.losses or (plan.device_moves and device is None)):
            self._remember((type(obj), to, copy, device, strict), source, obj, plan, request)
        return result

    def _remember(
        self, call: tuple[object, ...], source: Adapter, obj: object, plan: Plan, request: Request
    ) -> None:
        """Keep a lossless route for objects with the same route key (see Adapter.route_key)."""
        key = source.route_key(obj)
        if key is None:
            return
        if len(self._fast) >= MAX_FAST_CALLS:
            self._fast.clear()
        routes = self._fast.setdefault(call, {_ADAPTER: source})
        if len(routes) < MAX_FAST_KEYS:
            routes[key] = runs_of(plan, request)

    def export(self, obj: object) -> Any:
        """An object exposing every interchange dunder that applies to ``obj``."""
        from interchange_hub.exported import make_export

        return make_export(self, obj)

    def describe(self, obj: object) -> DataInfo:
        """The hub's description of ``obj`` (kind, columns, sizes, device)."""
        return self._describe(self._source(obj)[1], obj)

    def _describe(self, source: Adapter, obj: object) -> DataInfo:
        try:
            return source.describe(obj)
        except InterchangeError:
            raise
        except Exception as exc:
            kind = "the adapter" if source is not PROTOCOL_SOURCE else "its protocol export"
            raise ProtocolError(
                f"cannot describe the {type(obj).__name__}: {kind} failed with "
                f"{type(exc).__name__}: {exc}. If the object is valid, report this as a bug"
            ) from exc

    def is_one_shot(self, obj: object) -> bool:
        """Whether converting ``obj`` consumes it (a reader-like stream)."""
        return self._source(obj)[1].is_one_shot(obj)

    def buffers(self, obj: object) -> list[Buffer]:
        """The memory ranges ``obj`` uses, as its adapter reports them."""
        return self._source(obj)[1].buffers(obj)

    def shared_bytes(self, a: object, b: object) -> int:
        """How many bytes of ``a``'s buffers lie inside ``b``'s buffers."""
        if a is b:
            return sum(buf.size for buf in self.buffers(a))
        others = self.buffers(b)
        total = 0
        for buf in self.buffers(a):
            for other in others:
                if buf.overlaps(other):
                    lo, hi = (
                        max(buf.address, other.address),
                        min(buf.address + buf.size, other.address + other.size),
                    )
                    total += hi - lo
        return total

    # -- internals ------------------------------------------------------------------------------
    def _source(self, obj: object) -> tuple[str, Adapter]:
        registry = self.registry
        owner = registry.owner(obj)
        if owner is not None:
            return owner.name, owner
        if is_arrow(obj):
            return ARROW, PROTOCOL_SOURCE
        if is_dlpack(obj):
            return DLPACK, PROTOCOL_SOURCE
        if is_arrow_device(obj):
            return ARROW_DEVICE, PROTOCOL_SOURCE
        raise UnsupportedObjectError(obj, registry.supported_types())

    def _request(
        self,
        to: object,
        copy: bool | None,
        device: str | Device | None,
        strict: bool,
        info: DataInfo,
    ) -> Request:
        if copy not in (None, True, False) or strict not in (True, False):
            raise InvalidOptionError(
                f"copy must be None, True or False and strict True or False (got copy={copy!r}, "
                f"strict={strict!r})"
            )
        adapter, kind, cls = self.registry.resolve_target(to)
        if not installed(adapter.module):
            raise MissingDependencyError(
                adapter.module,
                adapter.extra or adapter.module,
                f"to convert to {adapter.name}",
                adapter.requirement,
            )
        return Request(adapter.name, kind, cls, copy, _destination(adapter, device, info), strict)

    def plan_to_node(self, obj: object, node: str) -> Plan:
        """Plan the way to a protocol node (``"arrow"`` or ``"dlpack"``); used by export."""
        start, source = self._source(obj)
        return self._router.plan(obj, start, source, self._describe(source, obj), Request(node))

    def run(self, obj: object, plan: Plan) -> Any:
        """Run a plan made by :meth:`plan` or :meth:`plan_to_node` for ``obj``."""
        request = plan.request or Request(plan.target)
        if plan.deferred:  # read the stream once, then plan for the data as read
            data = _read_once(obj)
            start, owner = self._source(data)
            plan = self._router.plan(data, start, owner, self._describe(owner, data), request)
            return self._router.execute(data, plan, request, one_shot=False)
        return self._router.execute(obj, plan, request, self.is_one_shot(obj))

    def _plan(
        self, obj: object, to: object, copy: bool | None, device: str | Device | None, strict: bool
    ) -> tuple[Plan, Request, Adapter]:
        start, source = self._source(obj)
        if device is not None:
            Device.parse(device)  # a misspelled device is reported before the data is read
        info = self._describe(source, obj)
        request = self._request(to, copy, device, strict, info)
        return self._router.plan(obj, start, source, info, request), request, source


def _destination(adapter: Adapter, device: str | Device | None, info: DataInfo) -> Device:
    """Where the result must live: the asked device, else where the data is when the
    target can hold it there, else the target's default device (an explicit move)."""
    if device is None:
        return info.device if info.device.kind in adapter.devices else adapter.default_device()
    place = Device.parse(device)
    if place.kind not in adapter.devices:
        raise DeviceError(
            f"{adapter.name} keeps data on {' or '.join(adapter.devices)}, not on {place}; "
            f"pass device=None (or one of those), or convert to a library that holds "
            f"{place.kind} memory (cupy or torch for cuda)"
        )
    return place


def _read_once(obj: object) -> Any:
    """Read a stream of unknown schema into pyarrow (once; the producer may be one-shot)."""
    try:
        if not is_arrow(obj) and is_arrow_device(obj):
            return devicekit.read_stream(obj)
        return arrowkit.read_any(obj)
    except InterchangeError:
        raise
    except Exception as exc:
        raise ConversionError(
            f"reading the Arrow stream of {type(obj).__name__} failed: {type(exc).__name__}: {exc}"
        ) from exc
