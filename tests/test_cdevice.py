"""The ctypes Arrow C Device Data Interface and DLPack, cross-checked with real libraries."""

from __future__ import annotations

import ctypes
import gc
import weakref
from collections.abc import Iterator
from typing import Any

import nanoarrow.device as nad
import numpy as np
import pyarrow as pa
import pytest
import torch

from interchange_hub._c import arrow_device as cd, capsule, dlpack
from interchange_hub._core import dtypes
from interchange_hub._core.device import CPU, Device, DeviceType
from interchange_hub.errors import ConsumedSourceError, ConversionError, ProtocolError

EXT3 = Device(DeviceType.EXT_DEV, 3)
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)


class Keep:
    """A weak-referenceable stand-in for the memory owner."""


def struct_in(capsule: object, name: str = "arrow_device_array") -> Any:
    return cd.ArrowDeviceArray.from_address(_get_pointer(capsule, name.encode()))


def values(column: cd.ColumnData) -> np.ndarray[Any, Any]:
    """A copy of a column's values, read from its address."""
    size = dtypes.itemsize(column.dtype)
    raw = (ctypes.c_char * (column.length * size)).from_address(column.data + column.offset * size)
    return np.frombuffer(bytes(raw), dtype=column.dtype)


def column_of(x: np.ndarray[Any, Any], name: str = "x") -> cd.ColumnData:
    return cd.ColumnData(name, str(x.dtype), "", len(x), data=x.ctypes.data)


def numpy_from_dlpack(producer: Any) -> np.ndarray[Any, Any]:
    return np.from_dlpack(producer)


class DeviceArrayProducer:
    """Hands out one capsule pair, the way nanoarrow's c_device_array asks for it."""

    def __init__(self, pair: tuple[object, object]) -> None:
        self.pair = pair

    def __arrow_c_device_array__(self, requested_schema: object = None) -> tuple[object, object]:
        return self.pair


# --- layouts ---------------------------------------------------------------------------


def test_struct_layouts_match_the_specs() -> None:
    sizes = {
        cd.ArrowSchema: 72,
        cd.ArrowArray: 80,
        cd.ArrowDeviceArray: 128,
        cd.ArrowDeviceArrayStream: 48,
        dlpack.DLDevice: 8,
        dlpack.DLDataType: 4,
        dlpack.DLTensor: 48,
        dlpack.DLManagedTensor: 64,
        dlpack.DLPackVersion: 8,
        dlpack.DLManagedTensorVersioned: 80,
    }
    for struct, size in sizes.items():
        assert ctypes.sizeof(struct) == size, struct.__name__
    offsets = {
        (cd.ArrowDeviceArray, "device_id"): 80,
        (cd.ArrowDeviceArray, "device_type"): 88,
        (cd.ArrowDeviceArray, "sync_event"): 96,
        (cd.ArrowDeviceArray, "reserved"): 104,
        (cd.ArrowArray, "release"): 64,
        (cd.ArrowSchema, "release"): 56,
        (cd.ArrowDeviceArrayStream, "get_schema"): 8,
        (cd.ArrowDeviceArrayStream, "release"): 32,
        (cd.ArrowDeviceArrayStream, "private_data"): 40,
        (dlpack.DLTensor, "ndim"): 16,
        (dlpack.DLTensor, "byte_offset"): 40,
        (dlpack.DLManagedTensorVersioned, "flags"): 24,
        (dlpack.DLManagedTensorVersioned, "dl_tensor"): 32,
    }
    for (struct, field), offset in offsets.items():
        assert getattr(struct, field).offset == offset, (struct.__name__, field)


def test_dtypes() -> None:
    assert dtypes.ARROW_FORMATS["float64"] == "g" and dtypes.ARROW_DTYPES["e"] == "float16"
    assert [dtypes.itemsize(t) for t in ("int8", "uint16", "float32", "int64", "bool")] == [
        1,
        2,
        4,
        8,
        1,
    ]
    assert dtypes.itemsize("bfloat16") == 2
    with pytest.raises(ValueError, match="unknown dtype 'complex64'"):
        dtypes.itemsize("complex64")


# --- import ----------------------------------------------------------------------------


def test_import_pyarrow_array_shares_its_buffers() -> None:
    arr = pa.array([1.5, 2.5, 3.5])
    imported = cd.import_device_array(*arr.__arrow_c_device_array__())
    assert imported.device == CPU and not imported.table and imported.length == 3
    assert (imported.sync_event, imported.event_handle, imported.unsupported) == (0, 0, "")
    (col,) = imported.columns
    assert (col.dtype, col.format, col.offset, col.null_count) == ("float64", "g", 0, 0)
    assert col.data == arr.buffers()[1].address
    assert values(col).tolist() == [1.5, 2.5, 3.5]
    imported.close()
    imported.close()  # a second close does nothing


def test_import_slice_with_nulls() -> None:
    base = pa.array([1, None, 3, 4, None, 6], pa.int32())
    arr = base.slice(2, 3)
    with cd.import_device_array(*arr.__arrow_c_device_array__()) as imported:
        (col,) = imported.columns
        assert (col.length, col.offset, col.null_count) == (3, 2, 1)
        assert col.validity == base.buffers()[0].address
        assert col.data == base.buffers()[1].address
        assert values(col).tolist()[:2] == [3, 4]
        assert (
            pa.BooleanArray.from_buffers(pa.bool_(), 3, [None, base.buffers()[0]], offset=2)[
                2
            ].as_py()
            is False
        )


def test_import_record_batch_names_unsupported_columns() -> None:
    batch = pa.record_batch({"a": pa.array([1, 2, 3]), "s": ["x", "y", "z"]})
    with cd.import_device_array(*batch.__arrow_c_device_array__()) as imported:
        assert imported.table and imported.length == 3
        a, s = imported.columns
        assert (a.name, a.dtype, a.data) == ("a", "int64", batch.column(0).buffers()[1].address)
        assert values(a).tolist() == [1, 2, 3]
        assert (s.name, s.dtype, s.format, s.data) == ("s", "", "u", 0)
        assert "'s'" in imported.unsupported and "'u'" in imported.unsupported


def test_import_dictionary_is_unsupported() -> None:
    arr = pa.array(["a", "b", "a"]).dictionary_encode()
    with cd.import_device_array(*arr.__arrow_c_device_array__()) as imported:
        assert imported.columns[0].dtype == ""
        assert "dictionary-encoded" in imported.unsupported


def test_import_twice_and_wrong_names() -> None:
    schema, array = pa.array([1, 2]).__arrow_c_device_array__()
    cd.import_device_array(schema, array).close()
    with pytest.raises(ConsumedSourceError, match="already consumed"):
        cd.import_device_array(pa.array([1]).__arrow_c_device_array__()[0], array)
    with pytest.raises(ProtocolError, match="'arrow_array'"):
        cd.import_device_array(*pa.array([1]).__arrow_c_array__())
    with pytest.raises(ProtocolError, match="got int"):
        cd.import_device_array(schema, 5)


@pytest.mark.parametrize("device_id", [-1, 0, 7])
def test_any_cpu_device_id_is_the_cpu(device_id: int) -> None:
    x = np.arange(3.0)
    schema, array = cd.export_device_array([column_of(x)], table=False, device=CPU, keep=x)
    struct_in(array).device_id = device_id
    with cd.import_device_array(schema, array) as imported:
        assert imported.device == CPU


# --- export ----------------------------------------------------------------------------


def test_export_column_to_pyarrow_is_zero_copy() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    schema, array = cd.export_device_array([column_of(x)], table=False, device=CPU, keep=x)
    struct = struct_in(array)
    assert (struct.device_id, struct.device_type, struct.sync_event) == (-1, 1, None)
    assert list(struct.reserved) == [0, 0, 0]
    arr = pa.Array._import_from_c_device_capsule(schema, array)
    assert arr.to_pylist() == [1.0, 2.0, 3.0, 4.0]
    assert arr.buffers()[1].address == x.ctypes.data


def test_export_column_with_offset_and_nulls() -> None:
    x = np.arange(8, dtype=np.int16)
    validity = np.array([0b11011111], dtype=np.uint8)  # rows 5 is null
    column = cd.ColumnData(
        "x",
        "int16",
        "",
        4,
        offset=3,
        null_count=1,
        validity=validity.ctypes.data,
        data=x.ctypes.data,
    )
    arr = pa.Array._import_from_c_device_capsule(
        *cd.export_device_array([column], table=False, device=CPU, keep=(x, validity))
    )
    assert arr.to_pylist() == [3, 4, None, 6]


def test_export_table_to_pyarrow_is_zero_copy() -> None:
    a, b = np.arange(4, dtype=np.int32), np.linspace(0, 1, 4)
    pair = cd.export_device_array(
        [column_of(a, "a"), column_of(b, "b")], table=True, device=CPU, keep=(a, b)
    )
    batch = pa.RecordBatch._import_from_c_device_capsule(*pair)
    assert batch.schema.names == ["a", "b"]
    assert batch.column("a").to_pylist() == [0, 1, 2, 3]
    assert batch.column("b").to_pylist() == b.tolist()
    assert batch.column("a").buffers()[1].address == a.ctypes.data
    assert batch.column("b").buffers()[1].address == b.ctypes.data


def test_export_refuses_what_it_cannot_describe() -> None:
    x = np.arange(3.0)
    with pytest.raises(ValueError, match="only fixed-width numeric"):
        cd.export_device_array([cd.ColumnData("s", "", "u", 3)], table=False, device=CPU)
    with pytest.raises(ValueError, match="exactly one column"):
        cd.export_device_array([column_of(x), column_of(x)], table=False, device=CPU)
    with pytest.raises(ValueError, match="no validity bitmap"):
        cd.export_device_array(
            [cd.ColumnData("x", "float64", "", 3, null_count=1, data=x.ctypes.data)],
            table=False,
            device=CPU,
        )


def test_nanoarrow_reads_the_device() -> None:
    x = np.arange(3.0)
    cpu = nad.c_device_array(
        DeviceArrayProducer(cd.export_device_array([column_of(x)], table=False, device=CPU, keep=x))
    )
    assert (cpu.device_type_id, cpu.device_id) == (1, -1)
    ext = nad.c_device_array(
        DeviceArrayProducer(
            cd.export_device_array([column_of(x)], table=False, device=EXT3, keep=x)
        )
    )
    assert (ext.device_type_id, ext.device_id) == (12, 3)


def test_sync_event_round_trips() -> None:
    x = np.arange(3.0)
    schema, array = cd.export_device_array(
        [column_of(x)], table=True, device=EXT3, event_handle=0xE7E, keep=x
    )
    assert ctypes.c_void_p.from_address(struct_in(array).sync_event).value == 0xE7E
    with cd.import_device_array(schema, array) as imported:
        assert imported.device == EXT3 and imported.table
        assert imported.event_handle == 0xE7E and imported.sync_event != 0
        assert imported.columns[0].data == x.ctypes.data


def test_keep_lives_until_the_consumer_releases() -> None:
    x = np.arange(3.0)
    keep = Keep()
    ref = weakref.ref(keep)
    schema, array = cd.export_device_array([column_of(x)], table=True, device=CPU, keep=keep)
    del keep
    batch = pa.RecordBatch._import_from_c_device_capsule(schema, array)
    del schema, array
    gc.collect()
    assert ref() is not None
    column = batch.column(0)
    del batch
    gc.collect()
    assert ref() is not None  # the column still uses the buffers
    del column
    gc.collect()
    assert ref() is None


def test_unconsumed_capsules_free_keep() -> None:
    keep = Keep()
    ref = weakref.ref(keep)
    live = len(capsule.LIVE)
    pair = cd.export_device_array([column_of(np.arange(2.0))], table=True, device=CPU, keep=keep)
    del keep, pair
    assert ref() is None and len(capsule.LIVE) == live


def test_release_runs_once() -> None:
    live = len(capsule.LIVE)
    keep = Keep()
    ref = weakref.ref(keep)
    imported = cd.import_device_array(
        *cd.export_device_array([column_of(np.arange(2.0))], table=True, device=CPU, keep=keep)
    )
    del keep
    assert ref() is not None
    imported.close()
    assert ref() is None and len(capsule.LIVE) == live
    imported.close()
    del imported
    assert len(capsule.LIVE) == live


def test_a_raising_consumer_keeps_its_exception_when_capsules_die_in_finally() -> None:
    keep = Keep()
    ref = weakref.ref(keep)
    pair = cd.export_device_array([column_of(np.arange(2.0))], table=False, device=EXT3, keep=keep)
    del keep
    with pytest.raises(pa.ArrowKeyError, match="not registered"):
        try:
            pa.Array._import_from_c_device_capsule(*pair)  # pyarrow has no device 12
        finally:
            del pair
    assert ref() is None


# --- streams ---------------------------------------------------------------------------


def chunks_of(arrays: list[np.ndarray[Any, Any]]) -> Iterator[tuple[object, object]]:
    for x in arrays:
        yield cd.export_device_array([column_of(x)], table=True, device=CPU, keep=x)


def test_stream_round_trip() -> None:
    parts = [np.arange(3.0) + 10 * i for i in range(3)]
    capsule = cd.export_device_stream(([("x", "float64")], True), chunks_of(parts), CPU)
    arrays, device_type = cd.import_device_stream(capsule)
    assert device_type == DeviceType.CPU and len(arrays) == 3
    for array, part in zip(arrays, parts, strict=True):
        assert array.table and array.columns[0].name == "x"
        assert array.columns[0].data == part.ctypes.data
        assert values(array.columns[0]).tolist() == part.tolist()
        array.close()
    with pytest.raises(ConsumedSourceError):
        cd.import_device_stream(capsule)


def pyarrow_read_stream(capsule: object) -> pa.Table:
    """Drive a device stream's callbacks by hand; pyarrow imports the schema and each chunk.

    (pyarrow 26 has no consumer of ``arrow_device_array_stream`` capsules.)
    """
    stream = cd.ArrowDeviceArrayStream()
    source = cd.ArrowDeviceArrayStream.from_address(
        _get_pointer(capsule, b"arrow_device_array_stream")
    )
    ctypes.memmove(ctypes.addressof(stream), ctypes.addressof(source), ctypes.sizeof(stream))
    source.release = type(source.release)()
    address = ctypes.addressof(stream)
    try:
        schema_struct = cd.ArrowSchema()
        assert stream.get_schema(address, ctypes.addressof(schema_struct)) == 0
        schema = pa.Schema._import_from_c(ctypes.addressof(schema_struct))
        batches = []
        while True:
            out = cd.ArrowDeviceArray()
            assert stream.get_next(address, ctypes.addressof(out)) == 0
            if not out.array.release:
                break
            batches.append(pa.RecordBatch._import_from_c_device(ctypes.addressof(out), schema))
    finally:
        stream.release(address)
    return pa.Table.from_batches(batches, schema)


def test_stream_read_by_pyarrow() -> None:
    parts = [np.arange(3.0), np.arange(2.0)]
    capsule = cd.export_device_stream(([("x", "float64")], True), chunks_of(parts), CPU)
    assert pyarrow_read_stream(capsule).column("x").to_pylist() == [0.0, 1.0, 2.0, 0.0, 1.0]


def test_stream_error_reaches_the_consumer() -> None:
    def failing() -> Iterator[tuple[object, object]]:
        yield from chunks_of([np.arange(2.0)])
        raise RuntimeError("disk on fire")

    capsule = cd.export_device_stream(([("x", "float64")], True), failing(), CPU)
    with pytest.raises(ConversionError, match="RuntimeError: disk on fire"):
        cd.import_device_stream(capsule)


def test_stream_refuses_a_chunk_on_another_device() -> None:
    x = np.arange(2.0)
    chunk = cd.export_device_array([column_of(x)], table=True, device=EXT3, keep=x)
    capsule = cd.export_device_stream(([("x", "float64")], True), iter([chunk]), CPU)
    with pytest.raises(ConversionError, match="device type 12"):
        cd.import_device_stream(capsule)


@pytest.mark.parametrize("as_capsule", [False, True])
def test_stream_of_pyarrow_batches(as_capsule: bool) -> None:
    columns = {
        "a": [1, 2, 3, 4, 5],
        "s": list("abcde"),
        "d": pa.array(list("xyxyx")).dictionary_encode(),
    }
    table = pa.table(columns, metadata={"k": "v"})
    batches = table.to_batches(max_chunksize=2)
    schema = table.schema.__arrow_c_schema__() if as_capsule else table.schema
    pairs = (batch.__arrow_c_device_array__() for batch in batches)
    read = pyarrow_read_stream(cd.export_device_stream(schema, pairs, CPU))
    assert read.schema == table.schema and read.schema.metadata == {b"k": b"v"}
    assert read == table

    capsule = cd.export_device_stream(
        table.schema, (b.__arrow_c_device_array__() for b in batches), CPU
    )
    arrays, _ = cd.import_device_stream(capsule)
    assert [a.length for a in arrays] == [2, 2, 1]
    assert arrays[1].columns[0].data + 8 * arrays[1].columns[0].offset == (
        batches[1].column(0).buffers()[1].address + 8 * batches[1].column(0).offset
    )


# --- DLPack ----------------------------------------------------------------------------


def test_numpy_and_torch_consume_zero_copy() -> None:
    x = np.arange(12, dtype=np.float32)
    producer = dlpack.DLPackProducer(x.ctypes.data, (3, 4), None, "float32", CPU, x)
    assert producer.__dlpack_device__() == (1, 0)
    n = numpy_from_dlpack(producer)
    t = torch.utils.dlpack.from_dlpack(producer)
    assert n.ctypes.data == t.data_ptr() == x.ctypes.data
    assert n.shape == (3, 4) and n.flags.writeable and n.tolist() == x.reshape(3, 4).tolist()
    assert t.stride() == (4, 1) and t.dtype == torch.float32


def test_strided_view_keeps_its_strides() -> None:
    x = np.arange(12, dtype=np.int64)
    producer = dlpack.DLPackProducer(x.ctypes.data, (2, 3), (1, 4), "int64", CPU, x)
    n = numpy_from_dlpack(producer)
    t = torch.utils.dlpack.from_dlpack(producer)
    assert n.tolist() == t.tolist() == x.reshape(3, 4).T[:2, :3].tolist()
    assert n.strides == (8, 32) and t.stride() == (1, 4)


def test_readonly_and_capsule_kinds() -> None:
    x = np.arange(3.0)
    readonly = dlpack.DLPackProducer(x.ctypes.data, (3,), None, "float64", CPU, x, readonly=True)
    assert not numpy_from_dlpack(readonly).flags.writeable
    with pytest.raises(BufferError, match="legacy"):
        readonly.__dlpack__()
    producer = dlpack.DLPackProducer(x.ctypes.data, (3,), None, "float64", CPU, x)
    with dlpack.read_dlpack(producer.__dlpack__()) as legacy:
        assert not legacy.versioned and legacy.data == x.ctypes.data
    with dlpack.read_dlpack(producer.__dlpack__(max_version=(1, 3))) as versioned:
        assert versioned.versioned and not versioned.readonly
    with dlpack.read_dlpack(readonly.__dlpack__(max_version=(1, 0))) as view:
        assert view.readonly


def test_dlpack_refusals() -> None:
    x = np.arange(3.0)
    producer = dlpack.DLPackProducer(x.ctypes.data, (3,), None, "float64", CPU, x)
    with pytest.raises(BufferError, match="copy=True"):
        producer.__dlpack__(max_version=(1, 0), copy=True)
    with pytest.raises(BufferError, match="device"):
        producer.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    with pytest.raises(BufferError, match="stream=1"):
        producer.__dlpack__(max_version=(1, 0), stream=1)
    with dlpack.read_dlpack(producer.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=False)):
        pass


def test_non_cpu_producer_calls_on_stream() -> None:
    seen: list[int | None] = []
    x = np.arange(3.0)
    producer = dlpack.DLPackProducer(
        x.ctypes.data, (3,), None, "float64", EXT3, x, on_stream=seen.append
    )
    assert producer.__dlpack_device__() == (12, 3)
    with dlpack.read_dlpack(producer.__dlpack__(stream=7, max_version=(1, 0))) as view:
        assert view.device == EXT3
    assert seen == [7]


def test_keep_is_freed_after_the_consumer() -> None:
    for consume in (numpy_from_dlpack, torch.utils.dlpack.from_dlpack):
        keep = Keep()
        ref = weakref.ref(keep)
        x = np.arange(3.0)
        result = consume(dlpack.DLPackProducer(x.ctypes.data, (3,), None, "float64", CPU, keep))
        del keep
        gc.collect()
        assert ref() is not None
        del result
        gc.collect()
        assert ref() is None


def test_unconsumed_dlpack_capsule_frees_keep() -> None:
    for versioned in (True, False):
        keep = Keep()
        ref = weakref.ref(keep)
        capsule = dlpack.make_dlpack(0, (0,), None, "int8", CPU, keep, versioned=versioned)
        del keep, capsule
        assert ref() is None


def test_read_numpy_and_torch_capsules() -> None:
    x = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    with dlpack.read_dlpack(x.__dlpack__(max_version=(1, 0))) as view:
        assert (view.data, view.shape, view.strides) == (x.ctypes.data, (3, 2), (4, 2))
        assert (view.dtype, view.device, view.readonly) == ("int32", CPU, False)
    t = torch.arange(6, dtype=torch.bfloat16).reshape(2, 3).T
    with dlpack.read_dlpack(t.__dlpack__(max_version=(1, 0))) as view:
        assert (view.data, view.shape, view.strides) == (t.data_ptr(), (3, 2), (1, 3))
        assert view.dtype == "bfloat16"
    with dlpack.read_dlpack(torch.tensor([True, False]).__dlpack__()) as view:
        assert not view.versioned and view.dtype == "bool"


def test_read_dlpack_refuses_consumed_and_foreign_capsules() -> None:
    capsule = np.arange(3).__dlpack__(max_version=(1, 0))
    dlpack.read_dlpack(capsule).close()
    with pytest.raises(ConsumedSourceError):
        dlpack.read_dlpack(capsule)
    with pytest.raises(ProtocolError, match="'arrow_schema'"):
        dlpack.read_dlpack(pa.int8().__arrow_c_schema__())


def test_no_leaks_over_many_round_trips() -> None:
    live = len(capsule.LIVE)
    for _ in range(50):
        x = np.arange(4.0)
        arr = pa.Array._import_from_c_device_capsule(
            *cd.export_device_array([column_of(x)], table=False, device=CPU, keep=x)
        )
        cd.import_device_array(*arr.__arrow_c_device_array__()).close()
        del arr
        parts = [np.arange(2.0)] * 3
        arrays, _ = cd.import_device_stream(
            cd.export_device_stream(([("x", "float64")], True), chunks_of(parts), CPU)
        )
        del arrays
        t = torch.utils.dlpack.from_dlpack(
            dlpack.DLPackProducer(x.ctypes.data, (4,), None, "float64", CPU, x)
        )
        del t
    gc.collect()
    assert len(capsule.LIVE) == live


def test_structs_alive_at_interpreter_exit_are_released_cleanly() -> None:
    """Consumers free what they imported while the interpreter shuts down, after module
    globals are gone: the callbacks must still be there, and must not need them."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import numpy as np, pyarrow as pa, torch
        from interchange_hub._c import arrow_device, dlpack
        from interchange_hub._core.device import CPU, Device, DeviceType

        base = np.arange(10.0)
        col = arrow_device.ColumnData("", "float64", "g", 10, data=base.ctypes.data)
        stream = arrow_device.export_device_stream(
            (((("", "float64"),), False)),
            iter([arrow_device.export_device_array([col], table=False, device=CPU, keep=base)]),
            CPU,
        )
        KEEP = [
            pa.Array._import_from_c_device_capsule(
                *arrow_device.export_device_array([col], table=False, device=CPU, keep=base)
            ),
            arrow_device.export_device_array([col], table=False, device=CPU, keep=base),
            torch.from_dlpack(
                dlpack.DLPackProducer(base.ctypes.data, (10,), None, "float64", CPU, base)
            ),
            dlpack.make_dlpack(base.ctypes.data, (10,), None, "float64", CPU, base),
            stream,
        ]
        # A cycle is freed by the last garbage collection, after the modules are cleared.
        import gc

        gc.disable()
        cycle = [KEEP]
        cycle.append(cycle)
        del KEEP, cycle, stream
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
