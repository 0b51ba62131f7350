"""Arrow device arrays and tensors: what the router and the exports need from ``_c.arrow_device``.

A device array's buffers stay where they are: importing one gives the hub addresses on
its device, and exporting a tensor gives a consumer the tensor's own memory, with a
``sync_event`` recorded by the library that owns it. No data library is imported here.
"""

from __future__ import annotations

import ctypes
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from interchange_hub._c import arrow_device, dlpack
from interchange_hub._c.dlpack import DLPACK_MAX_VERSION
from interchange_hub._core import dtypes
from interchange_hub._core.deps import installed
from interchange_hub._core.device import Device
from interchange_hub._core.info import Column, Copy, DataInfo, Estimate, Kind, Unroutable
from interchange_hub.errors import ConversionError, NoRouteError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from interchange_hub.adapter import Adapter, Buffer


def describe_imported(imported: arrow_device.DeviceArrowArray) -> DataInfo:
    """The hub's description of an imported device array (a column, or a table)."""
    columns = tuple(
        Column(
            c.name,
            c.dtype or f"arrow format {c.format!r}",
            c.length * dtypes.itemsize(c.dtype) if c.dtype else -1,
            c.null_count,
        )
        for c in imported.columns
    )
    kind = Kind.TABLE if imported.table else Kind.COLUMN
    return DataInfo(kind, columns, rows=imported.length, device=imported.device)


def describe_producer(obj: Any) -> DataInfo:
    """Describe an ``__arrow_c_device_array__`` producer from one export (released at once)."""
    imported = arrow_device.import_device_array(*obj.__arrow_c_device_array__())
    try:
        return describe_imported(imported)
    finally:
        imported.close()


def producer_buffers(obj: Any) -> list[Buffer]:
    """The data buffers of a device array producer, on its device (kept alive while held)."""
    from interchange_hub.adapter import Buffer

    imported = arrow_device.import_device_array(*obj.__arrow_c_device_array__())
    found = []
    for col in imported.columns:
        if col.dtype and col.length:
            size = dtypes.itemsize(col.dtype)
            start = col.data + col.offset * size
            found.append(Buffer(start, col.length * size, str(imported.device), imported))
    return found


def estimate_column_import(info: DataInfo, copy: bool = False) -> Estimate:
    """A device column becomes a 1-D tensor that views its data buffer."""
    if info.kind != Kind.COLUMN:
        raise Unroutable(
            "a device table becomes a tensor only with a copy; convert one column at a time"
        )
    (col,) = info.columns
    if col.dtype not in dtypes.ARROW_FORMATS:
        raise Unroutable(f"{col.dtype} has no tensor form (fixed-width numbers only)")
    if col.nulls < 0:
        raise Unroutable("the device column's null count is unknown; a tensor holds no nulls")
    if col.nulls:
        raise Unroutable(f"the device column has {col.nulls} nulls, which a tensor cannot hold")
    tensor = Column("", col.dtype, col.nbytes, 0)
    out = DataInfo(
        Kind.TENSOR, (tensor,), rows=info.rows, shape=(info.rows,), layout="C", device=info.device
    )
    if copy:
        reason = "copy=True: the data is copied on its device"
        return Estimate(out, (Copy("", col.nbytes, reason),), why=reason, copies_all=True)
    return Estimate(out, why="views the device array's data buffer, after its sync_event")


def import_column(value: Any) -> tuple[arrow_device.DeviceArrowArray, int, int]:
    """Import a device column: (the array, which owns the producer's struct, data address,
    bytes). The caller keeps the array alive as long as the memory is used."""
    imported = arrow_device.import_device_array(*value.__arrow_c_device_array__())
    col = imported.columns[0]
    if imported.table or not col.dtype or col.null_count:
        imported.close()
        raise ConversionError(
            f"the device array changed between planning and conversion (now {col.format!r} "
            f"with {col.null_count} nulls); produce the same data each time it is asked"
        )
    size = dtypes.itemsize(col.dtype)
    return imported, col.data + col.offset * size, col.length * size


# -- exports -----------------------------------------------------------------------------------
def tensor_to_device_array(value: Any, owner: Adapter | None) -> tuple[object, object]:
    """An ArrowDeviceArray capsule pair over a DLPack producer's memory, without a copy.

    A 1-D tensor becomes a column; a 2-D column-major tensor a table of its columns. The
    owning library records the ``sync_event`` on its current stream.
    """
    device = Device.from_dlpack(value.__dlpack_device__())
    if not device.is_cpu and owner is None:
        raise NoRouteError(
            f"the hub cannot make a sync event for a {type(value).__name__} on {device}; "
            "convert it to cupy or torch first (zero-copy), and export that"
        )
    with owner.on_device(device) if owner is not None else nullcontext():
        view = dlpack.read_dlpack(_dlpack_capsule(value, device))
        event, keep_event = owner.record_event(value) if owner is not None else (0, None)
    columns, table = _columns(view)
    return export_columns(
        columns, table=table, device=device, event_handle=event, keep=(view, keep_event)
    )


class _Holder:
    """What exported device memory needs alive: the owner's objects and the event handle
    that ``sync_event`` points at."""

    __slots__ = ("__weakref__", "event", "keep")

    def __init__(self, event_handle: int, keep: object) -> None:
        self.event = ctypes.c_void_p(event_handle)
        self.keep = keep


def export_columns(
    columns: Sequence[arrow_device.ColumnData],
    *,
    table: bool,
    device: Device,
    event_handle: int = 0,
    keep: object = None,
) -> tuple[object, object]:
    """An ``(arrow_schema, arrow_device_array)`` capsule pair over existing memory.

    With pyarrow installed, pyarrow builds the structs over the memory (``foreign_buffer``,
    never read) and the hub writes only the device fields: the release callbacks are then
    C code, which stays correct when a consumer drops the capsule on its error path (a
    ctypes callback run while an exception is pending replaces it with a SystemError).
    Without pyarrow, :func:`arrow_device.export_device_array` builds them in ctypes.
    """
    if not installed("pyarrow") or not columns:
        return arrow_device.export_device_array(
            columns, table=table, device=device, event_handle=event_handle, keep=keep
        )
    from interchange_hub import arrowkit

    pa = arrowkit.pa_module()
    holder = _Holder(event_handle, keep)  # the buffers' base: freed by pyarrow's release
    arrays = [_pyarrow_column(pa, column, holder) for column in columns]
    data = pa.RecordBatch.from_arrays(arrays, [c.name for c in columns]) if table else arrays[0]
    pair = data.__arrow_c_device_array__()
    event = ctypes.addressof(holder.event) if event_handle else 0
    arrow_device.set_device(pair[1], device, event)
    return pair  # type: ignore[no-any-return]


def _pyarrow_column(pa: Any, column: arrow_device.ColumnData, holder: _Holder) -> Any:
    if column.null_count < 0:
        raise ConversionError(
            f"column {column.name!r}: its null count is unknown, and counting it would read "
            "device memory from the host; export it without an offset"
        )
    size = dtypes.itemsize(column.dtype)
    end = column.offset + column.length
    data = pa.foreign_buffer(column.data, end * size, base=holder)
    validity = None
    if column.validity:
        validity = pa.foreign_buffer(column.validity, (end + 7) // 8, base=holder)
    return pa.Array.from_buffers(
        pa.type_for_alias(column.dtype),
        column.length,
        [validity, data],
        null_count=column.null_count,
        offset=column.offset,
    )


def _dlpack_capsule(value: Any, device: Device) -> object:
    """Ask for a capsule the way the DLPack spec tells consumers to: newest keywords first,
    then fewer of them for older producers (cupy < 13.4 takes only ``stream``)."""
    attempts: list[dict[str, Any]] = [{"max_version": DLPACK_MAX_VERSION}, {}]
    if not device.is_cpu:  # -1: do not synchronise; the owner's event covers pending work
        attempts = [{"stream": -1, **a} for a in attempts] + attempts
    for kwargs in attempts[:-1]:
        try:
            return value.__dlpack__(**kwargs)
        except TypeError:
            continue
    return value.__dlpack__(**attempts[-1])


def _columns(view: dlpack.DLPackView) -> tuple[list[arrow_device.ColumnData], bool]:
    if view.dtype not in dtypes.ARROW_FORMATS:
        raise NoRouteError(
            f"a {view.dtype} tensor has no Arrow device form (Arrow booleans are bit-packed, "
            "and Arrow has no bfloat16); cast it to a numeric dtype first"
        )
    fmt = dtypes.ARROW_FORMATS[view.dtype]
    size = dtypes.itemsize(view.dtype)
    shape, strides = tuple(view.shape), tuple(view.strides)
    if len(shape) == 1 and (strides[0] == 1 or shape[0] <= 1):
        return [arrow_device.ColumnData("", view.dtype, fmt, shape[0], data=view.data)], False
    if len(shape) == 2 and (strides[0] == 1 or shape[0] <= 1):
        rows = shape[0]
        columns = [
            arrow_device.ColumnData(
                f"column_{i}", view.dtype, fmt, rows, data=view.data + i * strides[1] * size
            )
            for i in range(shape[1])
        ]
        return columns, True
    raise NoRouteError(
        f"a tensor of shape {shape} and strides {strides} has no zero-copy Arrow form: Arrow "
        "holds 1-D columns, and a 2-D tensor only when column-major (each column "
        "contiguous). Make it so first, e.g. t.T.contiguous().T in torch, or "
        "cupy.asfortranarray(a)"
    )


def check_kwargs(kwargs: dict[str, object]) -> None:
    """The device dunders' rule: unknown keywords are accepted only with the value None."""
    unknown = sorted(k for k, v in kwargs.items() if v is not None)
    if unknown:
        raise NotImplementedError(f"Received unsupported keyword argument(s): {unknown}")


class DeviceChunk:
    """An imported device array, exported again on request (fresh capsules, same memory)."""

    __slots__ = ("_imported",)

    def __init__(self, imported: arrow_device.DeviceArrowArray) -> None:
        self._imported = imported

    def __arrow_c_device_array__(
        self, requested_schema: object | None = None, **kwargs: object
    ) -> tuple[object, object]:
        check_kwargs(kwargs)
        imp = self._imported
        return export_columns(
            imp.columns, table=imp.table, device=imp.device, event_handle=imp.event_handle, keep=imp
        )


def read_stream(obj: Any) -> Any:
    """Read an ``__arrow_c_device_stream__`` producer once: one chunk stays on its device
    (a :class:`DeviceChunk`); CPU chunks become a pyarrow Table or ChunkedArray."""
    arrays = arrow_device.import_device_stream(obj.__arrow_c_device_stream__())[0]
    if len(arrays) == 1 and not arrays[0].unsupported:
        return DeviceChunk(arrays[0])
    where = {str(a.device) for a in arrays}
    unsupported = [a.unsupported for a in arrays if a.unsupported]
    if unsupported or not arrays or where != {"cpu"}:
        for a in arrays:
            a.close()
        why = unsupported[0] if unsupported else f"{len(arrays)} chunks on {', '.join(where)}"
        raise ConversionError(
            f"the hub reads a device stream of several chunks only on the CPU, of fixed-width "
            f"numbers only ({why}). Export one chunk at a time (__arrow_c_device_array__), "
            "or use the producer's CPU interface (__arrow_c_stream__)"
        )
    from interchange_hub import arrowkit

    pa = arrowkit.pa_module()
    chunks = [DeviceChunk(a).__arrow_c_device_array__() for a in arrays]
    if arrays[0].table:
        return pa.Table.from_batches(
            [pa.RecordBatch._import_from_c_device_capsule(*pair) for pair in chunks]
        )
    return pa.chunked_array([pa.Array._import_from_c_device_capsule(*pair) for pair in chunks])
