"""``ih.export(obj)``: one object that speaks every protocol that applies to ``obj``.

Each dunder call runs the route to the protocol node anew, so every call returns fresh
capsules (capsules are single-use and never cached). The class of the returned object
defines only the dunders that apply, so ``hasattr`` tells consumers the truth.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit
from interchange_hub._bridge import devices
from interchange_hub._bridge.protocol_source import read_once
from interchange_hub._c import arrow_device
from interchange_hub._c.dlpack import DLPACK_MAX_VERSION
from interchange_hub._core.device import CPU
from interchange_hub._core.info import Kind
from interchange_hub._core.protocols import has_dunder, is_arrow_array, is_arrow_stream
from interchange_hub.adapter import ARROW, ARROW_DEVICE, DLPACK
from interchange_hub.errors import ConversionError, InterchangeError, NoRouteError

if TYPE_CHECKING:
    from interchange_hub._engine.planner import Planner
    from interchange_hub._engine.plans import Plan


class Exported:
    """Base of the objects :func:`interchange_hub.export` returns."""

    __slots__ = ("_obj", "_planner", "_plans")

    def __init__(self, planner: Planner, obj: object, plans: dict[str, Plan]) -> None:
        self._planner = planner
        self._obj = obj
        self._plans = plans

    @property
    def source(self) -> object:
        """The exported object."""
        return self._obj

    @property
    def protocols(self) -> tuple[str, ...]:
        """The protocol nodes this export reaches (``"arrow"``, ``"dlpack"``)."""
        return tuple(self._plans)

    def plan(self, protocol: str) -> Plan:
        """The plan that produces ``protocol``'s data from the source."""
        return self._plans[protocol]

    def _value(self, node: str) -> Any:
        return self._planner.run(self._obj, self._plans[node])

    def __repr__(self) -> str:
        return f"<Exported {type(self._obj).__name__} via {', '.join(self._plans)}>"


def _materialise(self: Exported, value: Any) -> Any:
    """The Arrow data ``value`` produces, read once: a ChunkedArray or a Table."""
    if self._plans[ARROW].result.kind == Kind.COLUMN:
        return arrowkit.as_chunked(value)
    return arrowkit.read_table(value)


def _arrow_c_stream(self: Exported, requested_schema: object | None = None) -> object:
    value = self._value(ARROW)
    if requested_schema is None:
        if not is_arrow_stream(value):
            value = _materialise(self, value)
        return arrowkit.ArrowStreamProducer(value).__arrow_c_stream__()
    # Producers may ignore or refuse requested_schema; pyarrow casts to it, so the
    # consumer gets the schema it asked for whatever the source library does.
    data = _cast_to(_materialise(self, value), requested_schema)
    return data.__arrow_c_stream__()


def _cast_to(data: Any, requested_schema: object) -> Any:
    """``data`` (pyarrow) cast to a requested schema capsule, eagerly, so that a cast that
    cannot be done fails here with a clear error rather than midway through the stream."""
    pa = arrowkit.pa_module()
    try:
        if isinstance(data, (pa.Table, pa.RecordBatch)):
            return data.cast(pa.Schema._import_from_c_capsule(requested_schema))
        return data.cast(pa.Field._import_from_c_capsule(requested_schema).type)
    except Exception as exc:
        raise ConversionError(
            f"the data cannot be cast to the requested schema: {type(exc).__name__}: {exc}. "
            "Request types the data converts to losslessly, or no schema"
        ) from exc


def _contiguous(self: Exported, value: Any) -> Any:
    """``value`` (what the route to Arrow gave) as one array or record batch."""
    if is_arrow_array(value):
        return value
    data = _materialise(self, value)
    if isinstance(data, arrowkit.pa_module().ChunkedArray):
        return data.combine_chunks()
    return arrowkit.single_batch(data)


def _arrow_c_array(self: Exported, requested_schema: object | None = None) -> object:
    value = self._value(ARROW)
    data = _contiguous(self, value)
    if requested_schema is None:
        pa = arrowkit.pa_module()
        if isinstance(data, pa.Array):  # named as the schema and the stream name it
            name = _column_name(self, value)
            if name:
                return pa.field(name, data.type).__arrow_c_schema__(), data.__arrow_c_array__()[1]
        return data.__arrow_c_array__()
    pa = arrowkit.pa_module()
    if not isinstance(data, (pa.Array, pa.RecordBatch)):  # e.g. nanoarrow
        arr = pa.array(data)
        table = pa.types.is_struct(arr.type) and not arr.null_count
        data = pa.RecordBatch.from_struct_array(arr) if table else arr
    return _cast_to(data, requested_schema).__arrow_c_array__()


def _arrow_c_schema(self: Exported) -> object:
    if self._planner.is_one_shot(self._obj):
        schema = getattr(self._obj, "schema", None)  # a reader knows it without being read
        if schema is not None and has_dunder(schema, "__arrow_c_schema__"):
            return schema.__arrow_c_schema__()
    value = self._value(ARROW)
    data = _materialise(self, value)
    pa = arrowkit.pa_module()
    if isinstance(data, pa.ChunkedArray):
        return pa.field(_column_name(self, value), data.type).__arrow_c_schema__()
    return data.schema.__arrow_c_schema__()


def _column_name(self: Exported, value: Any) -> str:
    """The name a column's stream carries: the library's own stream names the column (a
    polars Series), a pyarrow ChunkedArray's stream does not."""
    columns = self._plans[ARROW].result.columns
    own = is_arrow_stream(value) and not isinstance(value, arrowkit.pa_module().ChunkedArray)
    return columns[0].name if own and len(columns) == 1 else ""


def _arrow_c_device_array(
    self: Exported, requested_schema: object | None = None, **kwargs: object
) -> object:
    devices.check_kwargs(kwargs)
    if ARROW not in self._plans:  # device memory: the tensor's own buffers, not a copy
        return _tensor_device_array(self)
    pa = arrowkit.pa_module()
    data = _contiguous(self, self._value(ARROW))
    if not isinstance(data, (pa.Array, pa.RecordBatch)):
        data = pa.array(data)
        if pa.types.is_struct(data.type):
            data = pa.RecordBatch.from_struct_array(data)
    return data.__arrow_c_device_array__(requested_schema)


def _tensor_device_array(self: Exported) -> tuple[object, object]:
    value = self._value(DLPACK)
    return devices.tensor_to_device_array(value, self._planner.registry.owner(value))


def _arrow_c_device_stream(
    self: Exported, requested_schema: object | None = None, **kwargs: object
) -> object:
    devices.check_kwargs(kwargs)
    if ARROW not in self._plans:
        device = self._plans[DLPACK].result.device
        pair = _tensor_device_array(self)
        return arrow_device.export_device_stream(pair[0], iter([pair]), device)
    data = _materialise(self, self._value(ARROW))
    if requested_schema is not None:
        data = _cast_to(data, requested_schema)
    pa = arrowkit.pa_module()
    if isinstance(data, pa.ChunkedArray):
        schema, parts = pa.field("", data.type), data.chunks
    else:
        schema, parts = data.schema, data.to_batches()
    pairs = (part.__arrow_c_device_array__() for part in parts)
    return arrow_device.export_device_stream(schema, pairs, CPU)


def _dlpack(
    self: Exported,
    *,
    stream: object = None,
    max_version: tuple[int, int] | None = None,
    dl_device: tuple[int, int] | None = None,
    copy: bool | None = None,
) -> object:
    plan = self._plans[DLPACK]
    if copy is False and not plan.zero_copy:
        # (the DLPack standard: copy=False raises BufferError where a copy is needed)
        copied = ", ".join(dict.fromkeys(c.reason for c in plan.copies)) or "a copy"
        raise BufferError(
            f"copy=False, but the {plan.source} data reaches DLPack only by a copy "
            f"({copied}); call __dlpack__ without copy=False to allow it"
        )
    value = self._value(DLPACK)
    kwargs: dict[str, Any] = {"stream": stream}
    if max_version is not None:
        kwargs["max_version"] = min(tuple(max_version), DLPACK_MAX_VERSION)
    if dl_device is not None:
        kwargs["dl_device"] = dl_device
    if copy is not None:
        kwargs["copy"] = copy
    try:
        return value.__dlpack__(**kwargs)
    except BufferError:
        # A consumer that asks for no versioned capsule (jax 0.10's from_dlpack) cannot be
        # told memory is read-only, and numpy refuses it such memory. Where the route only
        # shared the source's own memory and the source is a DLPack producer itself (a jax
        # Array, given on as a read-only numpy view), the source answers, as it would the
        # consumer's direct call.
        own = getattr(type(self._obj), "__dlpack__", None)
        if max_version is not None or own is None or not plan.zero_copy or value is self._obj:
            raise
        return own(self._obj, **kwargs)


def _dlpack_device(self: Exported) -> tuple[int, int]:
    return self._plans[DLPACK].result.device.dlpack


@cache
def _export_class(protocols: frozenset[str]) -> type[Exported]:
    namespace: dict[str, Any] = {"__slots__": ()}
    if ARROW in protocols:
        namespace.update(
            __arrow_c_stream__=_arrow_c_stream,
            __arrow_c_array__=_arrow_c_array,
            __arrow_c_schema__=_arrow_c_schema,
        )
    if ARROW in protocols or ARROW_DEVICE in protocols:
        namespace.update(
            __arrow_c_device_array__=_arrow_c_device_array,
            __arrow_c_device_stream__=_arrow_c_device_stream,
        )
    if DLPACK in protocols:
        namespace.update(__dlpack__=_dlpack, __dlpack_device__=_dlpack_device)
    name = "Exported" + "".join(p.capitalize() for p in sorted(protocols))
    return type(name, (Exported,), namespace)


def make_export(planner: Planner, obj: object, was_read: bool = False) -> Exported:
    plans: dict[str, Plan] = {}
    reasons = []
    for node in (ARROW, DLPACK):
        try:
            plans[node] = planner.plan_to_node(obj, node)
        except InterchangeError as exc:
            if not isinstance(exc, NoRouteError):
                raise
            reasons.append(f"{node}: {exc}")
    if not was_read and plans and all(p.deferred for p in plans.values()) and is_arrow_stream(obj):
        # Nothing is known before the stream is read (a nanoarrow stream of nullable structs:
        # a table's batches or a struct column): read it once, export what it held.
        return make_export(planner, read_once(obj), was_read=True)
    # A stream of unknown schema cannot promise more than its own Arrow stream.
    plans = {node: plan for node, plan in plans.items() if not plan.deferred}
    protocols = set(plans)
    if DLPACK in plans and not plans[DLPACK].result.device.is_cpu:
        protocols.add(ARROW_DEVICE)  # device memory: Arrow only through the device interface
    if not plans:
        raise NoRouteError(
            f"{type(obj).__name__} reaches no interchange protocol: " + "; ".join(reasons)
        )
    return _export_class(frozenset(protocols))(planner, obj, plans)
