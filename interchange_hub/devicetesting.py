"""The device part of the conformance kit, for adapters whose memory is not the CPU's.

A plugin author with a device library runs it in their tests::

    from interchange_hub.devicetesting import assert_device_conforms
    import my_plugin

    def test_device_conformance():
        assert_device_conforms(my_plugin, "mylib")

It moves a numpy array into the adapter's default device and back, and checks: each way
is exactly one device move of all the bytes, shown in the plan, refused under
``copy=False``; the values survive; ``describe`` and ``buffers`` name the device; the
hub's ``__arrow_c_device_array__`` export points at the object's own memory with the
device's type and id and the adapter's sync event, has no CPU dunders, and follows the
keyword rule; and, where the adapter takes device arrays, a device-only producer comes
back without a copy. Needs numpy (and pyarrow for the built-in libraries).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from interchange_hub._c import arrow_device
from interchange_hub._core.deps import require
from interchange_hub.errors import CopyRequiredError, InterchangeError, NoRouteError
from interchange_hub.hub import Hub
from interchange_hub.plugins import builtin_plugins
from interchange_hub.testing import Check, ConformanceReport

if TYPE_CHECKING:
    from collections.abc import Callable

    from interchange_hub.adapter import Adapter

__all__ = [
    "DeviceArrayOnly",
    "DeviceStreamOnly",
    "assert_device_conforms",
    "check_device_conformance",
]

ROWS = 1000


class DeviceArrayOnly:
    """A producer of only another object's ``__arrow_c_device_array__`` (as pylibcudf's)."""

    def __init__(self, source: Any) -> None:
        self._source = source

    def __arrow_c_device_array__(
        self, requested_schema: object | None = None, **kwargs: object
    ) -> tuple[object, object]:
        return self._source.__arrow_c_device_array__()  # type: ignore[no-any-return]


class DeviceStreamOnly:
    """A producer of only another object's ``__arrow_c_device_stream__``."""

    def __init__(self, source: Any) -> None:
        self._source = source

    def __arrow_c_device_stream__(
        self, requested_schema: object | None = None, **kwargs: object
    ) -> object:
        return self._source.__arrow_c_device_stream__()


def check_device_conformance(
    plugin: object | None, name: str, *, hub: Hub | None = None
) -> ConformanceReport:
    """Run the device checks against adapter ``name`` (see the module docstring)."""
    if hub is None:
        extra = [] if plugin is None else [plugin]
        hub = Hub(autoload=False, plugins=[*builtin_plugins(), *extra])
    report = ConformanceReport(name)
    _DeviceKit(hub, name, report).run()
    return report


def assert_device_conforms(plugin: object | None, name: str, **options: Any) -> ConformanceReport:
    """Run :func:`check_device_conformance`; raise ``AssertionError`` listing any failure."""
    report = check_device_conformance(plugin, name, **options)
    if not report.ok:
        raise AssertionError(str(report))
    return report


class _DeviceKit:
    def __init__(self, hub: Hub, name: str, report: ConformanceReport) -> None:
        self.hub, self.name, self.report = hub, name, report

    def check(self, name: str, passed: bool, detail: str = "") -> bool:
        self.report.checks.append(Check(name, passed, detail))
        return passed

    def attempt(self, name: str, call: Callable[[], Any]) -> tuple[bool, Any]:
        try:
            return True, call()
        except Exception as exc:  # noqa: BLE001 - reported as a failure
            self.check(name, False, f"raised {type(exc).__name__}: {exc}")
            return False, None

    def run(self) -> None:
        adapter = self.hub.registry.get(self.name)
        if not self.check("registered", adapter is not None, "found" if adapter else ""):
            return
        assert adapter is not None
        place = adapter.default_device()
        if not self.check("holds device memory", not place.is_cpu, f"default device {place}"):
            return
        np = require("numpy", "to run the device conformance kit")
        host = np.arange(ROWS, dtype=np.float64) * 1.5
        obj = self.check_move_in(host, place)
        if obj is None:
            return
        self.check_description(adapter, obj, place)
        self.check_move_out(obj, host)
        self.check_export(adapter, obj, place)

    def check_move_in(self, host: Any, place: Any) -> Any:
        ok, plan = self.attempt("host -> device: plan", lambda: self.hub.plan(host, to=self.name))
        if not ok:
            return None
        moves = [s for s in plan.steps if s.estimate.moves_device]
        self.check(
            "host -> device: one move of every byte",
            len(moves) == 1 and moves[0].copied_bytes == host.nbytes,
            f"{len(moves)} device move(s) of {plan.copied_bytes} bytes for {host.nbytes}",
        )
        self.check("host -> device: lands on the default device", plan.result.device == place)
        self.check_refused("host -> device", host, self.name)
        return self.attempt(
            "host -> device: convert", lambda: self.hub.convert(host, to=self.name)
        )[1]

    def check_description(self, adapter: Adapter, obj: Any, place: Any) -> None:
        info = self.hub.describe(obj)
        self.check("describe names the device", info.device == place, f"{info.device}")
        self.check(
            "the device is one the adapter declares",
            info.device.kind in adapter.devices,
            f"{info.device.kind} in {tuple(adapter.devices)}",
        )
        buffers = self.hub.buffers(obj)
        devices = {b.device for b in buffers}
        self.check("buffers name the device", devices == {str(place)}, f"{devices or 'none'}")

    def check_move_out(self, obj: Any, host: Any) -> None:
        ok, plan = self.attempt("device -> host: plan", lambda: self.hub.plan(obj, to="numpy"))
        if not ok:
            return
        self.check("device -> host: one move", plan.device_moves == 1, f"{plan.device_moves}")
        self.check_refused("device -> host", obj, "numpy")
        ok, back = self.attempt("device -> host: convert", lambda: self.hub.convert(obj, "numpy"))
        if ok:
            same = back.tolist() == host.tolist()
            self.check("device -> host: values survive", same, "equal" if same else "differ")

    def check_refused(self, label: str, data: Any, to: str) -> None:
        try:
            self.hub.plan(data, to=to, copy=False)
        except CopyRequiredError as exc:
            self.check(f"{label}: copy=False refuses the move", True, str(exc)[:80])
        except InterchangeError as exc:
            self.check(f"{label}: copy=False refuses the move", False, f"{type(exc).__name__}")
        else:
            self.check(f"{label}: copy=False refuses the move", False, "it was planned")

    def check_export(self, adapter: Adapter, obj: Any, place: Any) -> None:
        ok, exported = self.attempt("export", lambda: self.hub.export(obj))
        if not ok:
            return
        cpu = [d for d in ("__arrow_c_array__", "__arrow_c_stream__") if hasattr(exported, d)]
        self.check("export has no CPU dunders", not cpu, ", ".join(cpu) or "device ones only")
        ok, got = self.attempt(
            "export: device array",
            lambda: arrow_device.import_device_array(*exported.__arrow_c_device_array__()),
        )
        if not ok:
            return
        try:
            addresses = [b.address for b in self.hub.buffers(obj)]
            self.check("export: device fields", got.device == place, f"{got.device}")
            self.check(
                "export: the object's own memory",
                [c.data for c in got.columns] == addresses[:1],
                f"{[hex(c.data) for c in got.columns]} vs {[hex(a) for a in addresses]}",
            )
            handle = adapter.record_event(obj)[0]
            self.check(
                "export: sync_event as the adapter records it",
                bool(got.event_handle) == bool(handle),
                f"event handle {got.event_handle:#x}",
            )
        finally:
            got.close()
        try:
            exported.__arrow_c_device_array__(future=1)
        except NotImplementedError:
            self.check("export: keyword rule", True, "future=1 refused, future=None taken")
        else:
            self.check("export: keyword rule", False, "future=1 was accepted")
        self.check_device_import(obj, exported)

    def check_device_import(self, obj: Any, exported: Any) -> None:
        producer = DeviceArrayOnly(exported)
        try:
            plan = self.hub.plan(producer, to=self.name)
        except NoRouteError as exc:
            self.check("imports device arrays", True, f"not offered: {str(exc)[:80]}")
            return
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ok, back = self.attempt(
                "imports device arrays", lambda: self.hub.convert(producer, self.name)
            )
        if ok:
            shared = self.hub.shared_bytes(back, obj)
            whole = sum(b.size for b in self.hub.buffers(obj))
            self.check(
                "imports device arrays without a copy",
                plan.zero_copy and shared == whole,
                f"plan zero-copy: {plan.zero_copy}; {shared} of {whole} bytes shared",
            )
