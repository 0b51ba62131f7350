"""Sources that no adapter owns but that speak a protocol (duckdb, arro3, user classes).

They enter the graph at the ``"arrow"``, ``"dlpack"`` or ``"arrow_device"`` node.
Describing them never reads a stream: a stream producer may be one-shot, so only
``__arrow_c_schema__`` is asked, when present; array producers, device array producers
and DLPack producers are imported (zero-copy).
"""

from __future__ import annotations

from typing import Any

from interchange_hub import arrowkit
from interchange_hub._bridge import tensors
from interchange_hub._c.capsule import ARROW_ARRAY, ARROW_SCHEMA, check_capsule
from interchange_hub._core.deps import installed
from interchange_hub._core.info import Column, DataInfo, Kind
from interchange_hub._core.protocols import (
    dlpack_device,
    has_dunder,
    is_arrow,
    is_arrow_array,
    is_arrow_device,
    is_arrow_stream,
    is_dlpack,
)
from interchange_hub.adapter import ARROW, ARROW_DEVICE, DLPACK, Adapter, Buffer
from interchange_hub.errors import ConversionError, InterchangeError, ProtocolError


def entry(obj: object) -> str | None:
    """The protocol node at which ``obj`` enters the graph, or None if it speaks none.

    Arrow on the CPU wins over DLPack (a table is more than its tensor), and both over the
    Arrow C Device interface (only device producers need it).
    """
    if is_arrow(obj):
        return ARROW
    if is_dlpack(obj):
        return DLPACK
    if is_arrow_device(obj):
        return ARROW_DEVICE
    return None


def read_once(obj: object) -> Any:
    """Read a stream of unknown schema into pyarrow (once: the producer may be one-shot)."""
    try:
        if not is_arrow(obj) and is_arrow_device(obj):
            from interchange_hub._bridge import devices  # on first use: 2 ms of ctypes

            return devices.read_stream(obj)
        return arrowkit.read_any(obj)
    except InterchangeError:
        raise
    except Exception as exc:
        raise ConversionError(
            f"reading the Arrow stream of {type(obj).__name__} failed: {type(exc).__name__}: {exc}"
        ) from exc


class ProtocolSource(Adapter):
    """Describes protocol producers; not a target and not registered as a plugin."""

    name = "protocol"

    def owns(self, obj: object) -> bool:
        return is_arrow_stream(obj) or is_arrow_array(obj) or is_dlpack(obj) or is_arrow_device(obj)

    def describe(self, obj: Any) -> DataInfo:
        if is_arrow_stream(obj) or is_arrow_array(obj):
            return self._describe_arrow(obj)
        if not is_dlpack(obj):
            if has_dunder(obj, "__arrow_c_device_array__"):
                from interchange_hub._bridge import devices  # on first use: 2 ms of ctypes

                info = devices.describe_producer(obj)
                if info.device.is_cpu and installed("pyarrow"):  # every Arrow type, in full
                    return _describe_data(arrowkit.import_device_array(obj))
                return info
            return DataInfo(Kind.STREAM, known=False)  # a device stream: read once, then planned
        device = dlpack_device(obj)
        if device.is_cpu and installed("numpy"):
            try:
                arr = tensors.np_module().from_dlpack(obj)
            except (BufferError, RuntimeError, TypeError, ValueError):
                arr = None  # e.g. bfloat16: numpy cannot look inside
            if arr is not None:
                return tensors.describe_ndarray(arr)
        unknown = Column("", tensors.UNREADABLE)
        return DataInfo(Kind.TENSOR, (unknown,), device=device, layout="C")

    def _describe_arrow(self, obj: Any) -> DataInfo:
        if not installed("pyarrow"):
            return DataInfo(Kind.TABLE, known=False)
        pa = arrowkit.pa_module()
        if isinstance(obj, (pa.Table, pa.RecordBatch, pa.Array, pa.ChunkedArray)):
            return _describe_data(obj)  # pyarrow data, in a hub without the pyarrow adapter
        if is_arrow_array(obj) and not is_arrow_stream(obj):
            return _describe_data(_import_array(obj))
        if has_dunder(obj, "__arrow_c_schema__"):
            field = pa.field(obj)
            if pa.types.is_struct(field.type):
                if field.nullable:
                    # Nullable structs: a struct column's stream (a table's stream exports
                    # its structs as not nullable), whose chunks may have null rows, which
                    # a table has not, or be slices (at an offset, or of longer children),
                    # which pyarrow's record batch import (pa.table) refuses or keeps as an
                    # invalid table. Read once, each chunk as an array (read_once), then
                    # planned: a table of the fields without null rows, else a column.
                    return DataInfo(Kind.TABLE, known=False)
                return arrowkit.describe_schema(pa.schema(obj), Kind.TABLE)
            return arrowkit.describe_schema(pa.schema([field]), Kind.COLUMN)
        return DataInfo(Kind.TABLE, known=False)

    def buffers(self, obj: Any) -> list[Buffer]:
        if is_arrow_array(obj) and installed("pyarrow"):
            return arrowkit.buffers(_import_array(obj))
        if has_dunder(obj, "__dlpack__"):
            if dlpack_device(obj).is_cpu:
                return tensors.ndarray_buffers(tensors.np_module().from_dlpack(obj))
            return []
        if has_dunder(obj, "__arrow_c_device_array__"):
            from interchange_hub._bridge import devices  # on first use: 2 ms of ctypes

            found = devices.producer_buffers(obj)
            if all(b.device == "cpu" for b in found) and installed("pyarrow"):
                return arrowkit.buffers(arrowkit.import_device_array(obj))
            return found
        return []


def _describe_data(data: Any) -> DataInfo:
    if isinstance(data, (arrowkit.pa_module().RecordBatch, arrowkit.pa_module().Table)):
        return arrowkit.describe_table(data)
    return arrowkit.describe_column(data)


def _import_array(obj: Any) -> Any:
    """A pyarrow Array, or RecordBatch for struct data, from an ``__arrow_c_array__`` producer."""
    pa = arrowkit.pa_module()
    pair = obj.__arrow_c_array__()
    if not isinstance(pair, tuple) or len(pair) != 2:
        raise ProtocolError(
            f"{type(obj).__name__}.__arrow_c_array__ returned {type(pair).__name__}, not the "
            "(schema capsule, array capsule) pair the protocol requires"
        )
    check_capsule(pair[0], ARROW_SCHEMA, obj)
    check_capsule(pair[1], ARROW_ARRAY, obj)
    arr = pa.Array._import_from_c_capsule(*pair)
    if pa.types.is_struct(arr.type):
        return pa.RecordBatch.from_struct_array(arr)
    return arr


PROTOCOL_SOURCE = ProtocolSource()
