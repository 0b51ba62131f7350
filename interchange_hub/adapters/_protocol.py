"""Sources that no adapter owns but that speak a protocol (duckdb, arro3, user classes).

They enter the graph at the ``"arrow"`` or ``"dlpack"`` node. Describing them never
reads a stream: a stream producer may be one-shot, so only ``__arrow_c_schema__`` is
asked, when present; array producers and DLPack producers are imported (zero-copy).
"""

from __future__ import annotations

from typing import Any

from interchange_hub import arrowkit, tensorkit
from interchange_hub.adapter import Adapter, Buffer
from interchange_hub.dependencies import installed
from interchange_hub.model import DataInfo, Kind
from interchange_hub.protocols import (
    ARROW_SCHEMA,
    check_capsule,
    dlpack_device,
    has_dunder,
    is_arrow_array,
    is_arrow_stream,
)


class ProtocolSource(Adapter):
    """Describes protocol producers; not a target and not registered as a plugin."""

    name = "protocol"

    def owns(self, obj: object) -> bool:
        return is_arrow_stream(obj) or is_arrow_array(obj) or has_dunder(obj, "__dlpack__")

    def describe(self, obj: Any) -> DataInfo:
        if is_arrow_stream(obj) or is_arrow_array(obj):
            return self._describe_arrow(obj)
        device = dlpack_device(obj)
        if device.is_cpu and installed("numpy"):
            return tensorkit.describe_ndarray(tensorkit.np_module().from_dlpack(obj))
        return DataInfo(Kind.TENSOR, device=device)

    def _describe_arrow(self, obj: Any) -> DataInfo:
        if not installed("pyarrow"):
            return DataInfo(Kind.TABLE, known=False)
        pa = arrowkit.pa_module()
        if is_arrow_array(obj) and not is_arrow_stream(obj):
            schema_capsule, _ = obj.__arrow_c_array__()
            check_capsule(schema_capsule, ARROW_SCHEMA, obj)
            arr = pa.array(obj) if not _is_struct(obj) else pa.record_batch(obj)
            if isinstance(arr, pa.RecordBatch):
                return arrowkit.describe_table(arr)
            return arrowkit.describe_column(arr)
        if has_dunder(obj, "__arrow_c_schema__"):
            schema = pa.schema(obj) if _is_struct(obj) else None
            if schema is not None:
                return arrowkit.describe_schema(schema, Kind.TABLE)
            field = pa.field(obj)
            return arrowkit.describe_schema(pa.schema([field]), Kind.COLUMN)
        return DataInfo(Kind.TABLE, known=False)

    def buffers(self, obj: Any) -> list[Buffer]:
        if is_arrow_array(obj) and installed("pyarrow"):
            pa = arrowkit.pa_module()
            return arrowkit.buffers(pa.record_batch(obj) if _is_struct(obj) else pa.array(obj))
        if has_dunder(obj, "__dlpack__") and dlpack_device(obj).is_cpu:
            return tensorkit.ndarray_buffers(tensorkit.np_module().from_dlpack(obj))
        return []


def _is_struct(obj: Any) -> bool:
    pa = arrowkit.pa_module()
    if has_dunder(obj, "__arrow_c_schema__"):
        return bool(pa.types.is_struct(pa.field(obj).type))
    if is_arrow_array(obj):
        return bool(pa.types.is_struct(pa.array(obj).type))
    return True


PROTOCOL_SOURCE = ProtocolSource()
