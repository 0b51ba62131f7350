"""The Arrow C Device Data Interface in pure ctypes.

The hub uses this module to produce and consume ``arrow_schema``/``arrow_device_array``
capsule pairs and ``arrow_device_array_stream`` capsules over memory it does not own,
without importing any data library (DLPack capsules are ``_c.dlpack``'s).

Ownership follows the specification:

* An exported struct keeps what it points at (``keep``) alive until its ``release`` runs.
  Consumers *move* structs, so callbacks find their state through ``private_data`` (a key
  into ``capsule.LIVE``), never through the address they are called with.
* An imported struct is moved into memory owned by a Python object, which calls ``release``
  on ``close()`` or when it is garbage collected.

See ``_c.capsule`` for the limits of ctypes callbacks.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from ctypes import POINTER, Structure, c_char_p, c_int, c_int32, c_int64, c_void_p
from typing import Any, Final, Protocol, Self

from interchange_hub._c.capsule import (
    ARROW_DEVICE_ARRAY,
    ARROW_DEVICE_ARRAY_STREAM,
    ARROW_SCHEMA,
    DESTRUCTOR as _DESTRUCTOR,
    LIVE as _LIVE,
    RELEASE as _RELEASE,
    allocate as _allocate,
    free as _free,
    hold as _hold,
    immortal as _immortal,
    name_of as _name_of,
    new_capsule as _capsule,
    pointer_of as _address,
    raw_capsule_pointer as _raw_capsule_pointer,
)
from interchange_hub._core.device import Device, DeviceType
from interchange_hub._core.dtypes import ARROW_DTYPES, ARROW_FORMATS
from interchange_hub._core.records import record
from interchange_hub.errors import ConsumedSourceError, ConversionError, ProtocolError

# --- C structs -------------------------------------------------------------------------

_GET_STRUCT = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p)
_GET_ERROR = ctypes.CFUNCTYPE(c_void_p, c_void_p)


class ArrowSchema(Structure):
    """``struct ArrowSchema`` of the Arrow C Data Interface."""


ArrowSchema._fields_ = [
    ("format", c_char_p),
    ("name", c_char_p),
    ("metadata", c_void_p),
    ("flags", c_int64),
    ("n_children", c_int64),
    ("children", POINTER(POINTER(ArrowSchema))),
    ("dictionary", POINTER(ArrowSchema)),
    ("release", _RELEASE),
    ("private_data", c_void_p),
]


class ArrowArray(Structure):
    """``struct ArrowArray`` of the Arrow C Data Interface."""


ArrowArray._fields_ = [
    ("length", c_int64),
    ("null_count", c_int64),
    ("offset", c_int64),
    ("n_buffers", c_int64),
    ("n_children", c_int64),
    ("buffers", POINTER(c_void_p)),
    ("children", POINTER(POINTER(ArrowArray))),
    ("dictionary", POINTER(ArrowArray)),
    ("release", _RELEASE),
    ("private_data", c_void_p),
]


class ArrowDeviceArray(Structure):
    """``struct ArrowDeviceArray`` of the Arrow C Device Data Interface (128 bytes)."""

    _fields_ = [
        ("array", ArrowArray),
        ("device_id", c_int64),
        ("device_type", c_int32),
        ("sync_event", c_void_p),
        ("reserved", c_int64 * 3),
    ]


class ArrowDeviceArrayStream(Structure):
    """``struct ArrowDeviceArrayStream`` of the Arrow C Device Data Interface."""

    _fields_ = [
        ("device_type", c_int32),
        ("get_schema", _GET_STRUCT),
        ("get_next", _GET_STRUCT),
        ("get_last_error", _GET_ERROR),
        ("release", _RELEASE),
        ("private_data", c_void_p),
    ]


# --- plain data ------------------------------------------------------------------------


@record
class ColumnData:
    """One primitive Arrow column: where its buffers are and how to read them.

    ``null_count`` is -1 when unknown, as in the C Data Interface. ``validity`` and
    ``data`` are 0 for a column whose ``dtype`` is ``""`` (not a fixed-width numeric type).
    """

    name: str
    dtype: str
    format: str
    length: int
    offset: int = 0
    null_count: int = 0
    validity: int = 0
    data: int = 0


# Capsule names must outlive their capsules: module-level constants.
_SCHEMA_NAME: Final = ARROW_SCHEMA.encode()
_DEVICE_ARRAY_NAME: Final = ARROW_DEVICE_ARRAY.encode()
_STREAM_NAME: Final = ARROW_DEVICE_ARRAY_STREAM.encode()


def _struct_destructor(name: bytes, head: type[Structure]) -> Any:
    """A destructor that releases the struct (``head`` holds its release field), then frees it."""

    def destroy(capsule: int, pointer: Any = _raw_capsule_pointer, free: Any = _free) -> None:
        address = pointer(capsule, name)
        release = head.from_address(address).release
        if release:
            release(address)
        free(address)

    return _immortal(_DESTRUCTOR(destroy))


_FREE_SCHEMA: Final = _struct_destructor(_SCHEMA_NAME, ArrowSchema)
_FREE_DEVICE_ARRAY: Final = _struct_destructor(_DEVICE_ARRAY_NAME, ArrowArray)
_FREE_STREAM: Final = _struct_destructor(_STREAM_NAME, ArrowDeviceArrayStream)

# Which struct a capsule holds, and which struct at the same address has its release field.
_LAYOUTS: Final[dict[str, tuple[type[Structure], type[Structure]]]] = {
    ARROW_SCHEMA: (ArrowSchema, ArrowSchema),
    ARROW_DEVICE_ARRAY: (ArrowDeviceArray, ArrowArray),
    ARROW_DEVICE_ARRAY_STREAM: (ArrowDeviceArrayStream, ArrowDeviceArrayStream),
}


def _live_source(capsule: object, name: str) -> int:
    """The struct in an Arrow capsule, refused when already released (moved out)."""
    address = _address(capsule, name)
    if not _LAYOUTS[name][1].from_address(address).release:
        raise ConsumedSourceError(
            f"the {name!r} capsule holds a released struct: it was already consumed. "
            "Capsules can be read once; ask the producer for new ones"
        )
    return address


def _move(capsule: object, name: str, out: int) -> None:
    """Move the struct out of an Arrow capsule into ``out``; the capsule keeps a released one."""
    source = _live_source(capsule, name)
    struct, head = _LAYOUTS[name]
    ctypes.memmove(out, source, ctypes.sizeof(struct))
    head.from_address(source).release = _RELEASE()


# --- export: private state and release callbacks ----------------------------------------

# private_data / manager_ctx key -> what the exported struct points at.
_NULLABLE: Final = 2  # ARROW_FLAG_NULLABLE


def _releaser(struct: type[Structure]) -> Any:
    """The release callback of exported ArrowSchema/ArrowArray: children first, then own state."""

    def release(
        address: int, live: dict[int, object] = _LIVE, addressof: Any = ctypes.addressof
    ) -> None:
        this = struct.from_address(address)
        if not this.release:
            return
        owned = [this.children[i][0] for i in range(this.n_children)]
        owned += [this.dictionary[0]] if this.dictionary else []
        for child in owned:
            if child.release:
                child.release(addressof(child))
        live.pop(this.private_data, None)
        this.release = released()

    released = _RELEASE
    return _immortal(_RELEASE(release))


_RELEASE_SCHEMA: Final = _releaser(ArrowSchema)
_RELEASE_ARRAY: Final = _releaser(ArrowArray)


def _children(struct: type[Structure], count: int) -> tuple[Any, Any]:
    """``count`` zeroed structs and the array of pointers to them."""
    items = (struct * count)()
    pointers = (POINTER(struct) * count)(*(ctypes.pointer(item) for item in items))
    return items, pointers


def _fill_schema(
    schema: Any,
    fmt: bytes,
    name: bytes | None,
    flags: int,
    children: tuple[Any, Any] | None = None,
    metadata: bytes | None = None,
    dictionary: ArrowSchema | None = None,
) -> None:
    schema.format, schema.name, schema.flags = fmt, name, flags
    buffer = None
    if metadata:
        buffer = ctypes.create_string_buffer(metadata, len(metadata))
        schema.metadata = ctypes.addressof(buffer)
    if children is not None:
        schema.n_children = len(children[0])
        schema.children = children[1]
    if dictionary is not None:
        schema.dictionary = ctypes.pointer(dictionary)
    schema.release = _RELEASE_SCHEMA
    schema.private_data = _hold(fmt, name, buffer, children, dictionary)


def _metadata_size(address: int) -> int:
    """The byte size of ArrowSchema metadata: int32 count, then (int32 length, bytes) pairs."""
    end = address + 4
    for _ in range(2 * c_int32.from_address(address).value):
        end += 4 + c_int32.from_address(end).value
    return end - address


def _copy_schema(source: Any, target: Any) -> None:
    """Deep-copy an ArrowSchema into ``target``, which gets its own release callback."""
    children = _children(ArrowSchema, source.n_children)
    for i, child in enumerate(children[0]):
        _copy_schema(source.children[i][0], child)
    dictionary = None
    if source.dictionary:
        dictionary = ArrowSchema()
        _copy_schema(source.dictionary[0], dictionary)
    metadata = source.metadata and ctypes.string_at(
        source.metadata, _metadata_size(source.metadata)
    )
    _fill_schema(target, source.format, source.name, source.flags, children, metadata, dictionary)


def _schema_capsule(fields: Sequence[tuple[str, str]], table: bool) -> object:
    """A fresh ``arrow_schema`` capsule for (name, Arrow format) fields."""
    address = _allocate(ArrowSchema)
    schema = ArrowSchema.from_address(address)
    if table:
        children = _children(ArrowSchema, len(fields))
        for child, (name, fmt) in zip(children[0], fields, strict=True):
            _fill_schema(child, fmt.encode(), name.encode(), _NULLABLE)
        _fill_schema(schema, b"+s", b"", 0, children)
    else:
        ((name, fmt),) = fields
        _fill_schema(schema, fmt.encode(), name.encode(), _NULLABLE)
    return _capsule(address, _SCHEMA_NAME, _FREE_SCHEMA)


def _fill_array(
    array: Any, length: int, null_count: int, offset: int, buffers: Sequence[int], *held: object
) -> None:
    pointers = (c_void_p * len(buffers))(*buffers)
    array.length, array.null_count, array.offset = length, null_count, offset
    array.n_buffers = len(buffers)
    array.buffers = ctypes.cast(pointers, POINTER(c_void_p))
    array.release = _RELEASE_ARRAY
    array.private_data = _hold(pointers, *held)


def _check_format(name: str, fmt: str) -> None:
    if fmt not in ARROW_DTYPES:
        raise ValueError(
            f"column {name!r} has Arrow format {fmt!r}: only fixed-width numeric columns "
            f"({', '.join(ARROW_FORMATS)}) can be exported"
        )


def _format_of(column: ColumnData) -> str:
    fmt = column.format or ARROW_FORMATS.get(column.dtype, "")
    _check_format(column.name, fmt)
    if column.null_count != 0 and not column.validity:
        raise ValueError(
            f"column {column.name!r} has null_count {column.null_count} but no validity bitmap"
        )
    return fmt


def export_device_array(
    columns: Sequence[ColumnData],
    *,
    table: bool,
    device: Device,
    event_handle: int = 0,
    keep: object = None,
) -> tuple[object, object]:
    """Export primitive columns as a fresh ``(arrow_schema, arrow_device_array)`` capsule pair.

    ``table=True`` makes a struct (``"+s"``) array with one child per column, as
    ``RecordBatch.__arrow_c_device_array__`` does; ``table=False`` needs exactly one column.
    ``event_handle`` (a ``cudaEvent_t`` or the like, 0 for none) is stored in memory that
    ``sync_event`` points at. ``keep`` stays referenced until the consumer releases the
    array, or until the capsule is destroyed unconsumed.
    """
    columns = list(columns)
    formats = [_format_of(column) for column in columns]
    if not table and len(columns) != 1:
        raise ValueError(f"table=False exports exactly one column, got {len(columns)}")
    if len({column.length for column in columns}) > 1:
        raise ValueError("the columns of a table must all have the same length")
    schema = _schema_capsule(
        [(column.name, fmt) for column, fmt in zip(columns, formats, strict=True)], table
    )

    address = _allocate(ArrowDeviceArray)
    struct = ArrowDeviceArray.from_address(address)
    event = c_void_p(event_handle)
    if table:
        children = _children(ArrowArray, len(columns))
        for child, column in zip(children[0], columns, strict=True):
            buffers = (column.validity, column.data)
            _fill_array(child, column.length, column.null_count, column.offset, buffers, keep)
        length = columns[0].length if columns else 0
        _fill_array(struct.array, length, 0, 0, (0,), children, event, keep)
        struct.array.n_children = len(columns)
        struct.array.children = children[1]
    else:
        column = columns[0]
        buffers = (column.validity, column.data)
        _fill_array(
            struct.array, column.length, column.null_count, column.offset, buffers, event, keep
        )
    struct.device_id = device.arrow_id
    struct.device_type = int(device.type)
    struct.sync_event = ctypes.addressof(event) if event_handle else None
    return schema, _capsule(address, _DEVICE_ARRAY_NAME, _FREE_DEVICE_ARRAY)


# --- export: streams -------------------------------------------------------------------


class SchemaSource(Protocol):
    """Anything with ``__arrow_c_schema__``, such as ``pyarrow.Schema``."""

    def __arrow_c_schema__(self) -> object: ...


#: ``((name, hub dtype) pairs, table flag)``: a schema :func:`export_device_array` would make.
SchemaSpec = tuple[Sequence[tuple[str, str]], bool]


class _StreamState:
    __slots__ = ("chunks", "device_type", "error", "schema_into")

    def __init__(
        self,
        schema_into: Callable[[int], None],
        chunks: Iterator[tuple[object, object]],
        device: Device,
    ) -> None:
        self.schema_into = schema_into
        self.chunks = chunks
        self.device_type = int(device.type)
        self.error: ctypes.Array[ctypes.c_char] | None = None

    def fail(self, exc: Exception) -> int:
        self.error = ctypes.create_string_buffer(f"{type(exc).__name__}: {exc}".encode())
        return errno.EIO

    def next_chunk(self, out: int) -> None:
        chunk = next(self.chunks, None)
        if chunk is None:
            ctypes.memset(out, 0, ctypes.sizeof(ArrowDeviceArray))  # release NULL: the end
            return
        _, array = chunk  # the schema capsule is dropped; its destructor releases it
        device_type = ArrowDeviceArray.from_address(_address(array, ARROW_DEVICE_ARRAY)).device_type
        if device_type != self.device_type:
            raise ProtocolError(
                f"a chunk is on device type {device_type} but the stream is on device type "
                f"{self.device_type}; a device stream carries one device type, split the data"
            )
        _move(array, ARROW_DEVICE_ARRAY, out)


def _stream_state(stream: int) -> _StreamState | None:
    held = _LIVE.get(ArrowDeviceArrayStream.from_address(stream).private_data or 0)
    state = held[0] if isinstance(held, tuple) and held else None
    return state if isinstance(state, _StreamState) else None


def _errno_of(stream: int, act: Callable[[_StreamState], None]) -> int:
    """Stream callbacks return an errno and never let an exception reach C."""
    state = _stream_state(stream)
    if state is None:
        return errno.EINVAL
    try:
        act(state)
    except Exception as exc:  # noqa: BLE001
        return state.fail(exc)
    return 0


def _get_schema(stream: int, out: int) -> int:
    return _errno_of(stream, lambda state: state.schema_into(out))


def _get_next(stream: int, out: int) -> int:
    return _errno_of(stream, lambda state: state.next_chunk(out))


def _get_last_error(stream: int) -> int | None:
    state = _stream_state(stream)
    return ctypes.addressof(state.error) if state is not None and state.error else None


def _release_stream(stream: int, live: dict[int, object] = _LIVE, released: Any = _RELEASE) -> None:
    this = ArrowDeviceArrayStream.from_address(stream)
    if this.release:
        live.pop(this.private_data, None)
        this.release = released()


_STREAM_GET_SCHEMA: Final = _immortal(_GET_STRUCT(_get_schema))
_STREAM_GET_NEXT: Final = _immortal(_GET_STRUCT(_get_next))
_STREAM_GET_LAST_ERROR: Final = _immortal(_GET_ERROR(_get_last_error))
_STREAM_RELEASE: Final = _immortal(_RELEASE(_release_stream))


def export_device_stream(
    schema: SchemaSpec | SchemaSource | object,
    chunks: Iterable[tuple[object, object]],
    device: Device,
) -> object:
    """Export chunks as an ``arrow_device_array_stream`` capsule.

    ``schema`` is a :data:`SchemaSpec`, an ``arrow_schema`` capsule (kept, not consumed:
    ``get_schema`` hands out deep copies), or an object with ``__arrow_c_schema__``
    (asked for a fresh capsule by each ``get_schema``). ``chunks`` yields
    ``(arrow_schema, arrow_device_array)`` capsule pairs, from :func:`export_device_array`
    or any producer's ``__arrow_c_device_array__()``, all on ``device.type``; ``get_next``
    pulls them lazily and moves their arrays out. A pyarrow table becomes::

        export_device_stream(
            table.schema, (b.__arrow_c_device_array__() for b in table.to_batches()), CPU
        )

    An error raised by ``chunks`` reaches the consumer as ``EIO`` and ``get_last_error``.
    """
    state = _StreamState(_schema_maker(schema), iter(chunks), device)
    address = _allocate(ArrowDeviceArrayStream)
    stream = ArrowDeviceArrayStream.from_address(address)
    stream.device_type = state.device_type
    stream.get_schema = _STREAM_GET_SCHEMA
    stream.get_next = _STREAM_GET_NEXT
    stream.get_last_error = _STREAM_GET_LAST_ERROR
    stream.release = _STREAM_RELEASE
    stream.private_data = _hold(state)
    return _capsule(address, _STREAM_NAME, _FREE_STREAM)


def _schema_maker(schema: SchemaSpec | SchemaSource | object) -> Callable[[int], None]:
    """A function that writes a fresh ArrowSchema for ``schema`` at an address."""
    if isinstance(schema, tuple):
        fields, table = schema
        formats = [(name, ARROW_FORMATS.get(dtype, dtype)) for name, dtype in fields]
        for name, fmt in formats:
            _check_format(name, fmt)
        return lambda out: _move(_schema_capsule(formats, table), ARROW_SCHEMA, out)
    if _name_of(schema) is not None:
        _live_source(schema, ARROW_SCHEMA)

        def copy(out: int) -> None:  # the closure keeps the capsule alive
            source = ArrowSchema.from_address(_live_source(schema, ARROW_SCHEMA))
            _copy_schema(source, ArrowSchema.from_address(out))

        return copy
    make = getattr(schema, "__arrow_c_schema__", None)
    if make is None:
        raise TypeError(
            f"schema must be ((name, dtype) pairs, table), an arrow_schema capsule or have "
            f"__arrow_c_schema__; got {type(schema).__name__}"
        )
    return lambda out: _move(make(), ARROW_SCHEMA, out)


# --- import ----------------------------------------------------------------------------


@record
class _Field:
    name: str
    format: str
    dictionary: bool


def _read_schema(schema: Any) -> tuple[_Field, tuple[_Field, ...]]:
    """The top-level field of an ArrowSchema and its children."""

    def field(s: Any) -> _Field:
        if s.format is None:
            raise ProtocolError("an ArrowSchema has a NULL format; report it to its producer")
        name = s.name.decode(errors="replace") if s.name is not None else ""
        return _Field(name, s.format.decode(errors="replace"), bool(s.dictionary))

    return field(schema), tuple(field(schema.children[i][0]) for i in range(schema.n_children))


def _release_schema(schema: Any) -> None:
    if schema.release:
        schema.release(ctypes.addressof(schema))


def _column(field: _Field, array: Any, parent_offset: int, parent_length: int) -> ColumnData:
    dtype = "" if field.dictionary else ARROW_DTYPES.get(field.format, "")
    null_count = array.null_count
    if parent_offset or array.length != parent_length:
        null_count = 0 if null_count == 0 else -1  # counted over more rows than are visible
    if not dtype:
        return ColumnData(field.name, "", field.format, parent_length, 0, null_count)
    if array.n_buffers != 2:
        raise ProtocolError(
            f"column {field.name!r} (Arrow format {field.format!r}) has {array.n_buffers} "
            "buffers instead of 2; the producer broke the Arrow layout, report it"
        )
    return ColumnData(
        field.name,
        dtype,
        field.format,
        parent_length,
        parent_offset + array.offset,
        null_count,
        array.buffers[0] or 0,
        array.buffers[1] or 0,
    )


def _unsupported(field: _Field) -> str:
    if field.dictionary:
        return f"column {field.name!r} is dictionary-encoded (indices {field.format!r})"
    if field.format not in ARROW_DTYPES:
        return f"column {field.name!r} has Arrow format {field.format!r}, not a fixed-width number"
    return ""


class DeviceArrowArray:
    """An imported ArrowDeviceArray, moved out of its capsule; release() on close()/__del__.

    ``columns`` has one :class:`ColumnData` per child of a table (``"+s"``), else one.
    ``unsupported`` is ``""`` when every column is a fixed-width numeric type, else the
    reasons why not. ``event_handle`` is the event ``sync_event`` points at (0 when NULL);
    wait on it before touching the buffers.
    """

    __slots__ = (
        "_struct",
        "columns",
        "device",
        "event_handle",
        "length",
        "sync_event",
        "table",
        "unsupported",
    )

    def __init__(self, struct: ArrowDeviceArray, top: _Field, children: tuple[_Field, ...]) -> None:
        self._struct = struct  # first: __del__ releases it even if the checks below raise
        array = struct.array
        try:
            device_type = DeviceType(struct.device_type)
        except ValueError:
            raise ProtocolError(
                f"the ArrowDeviceArray has unknown device type {struct.device_type}"
            ) from None
        self.device = Device.from_arrow(device_type, struct.device_id)
        # The spec asks CPU producers for a NULL sync_event; one that sets it anyway is
        # not read (CPU memory needs no wait, and the pointer may point anywhere).
        self.sync_event: int = 0 if device_type == DeviceType.CPU else struct.sync_event or 0
        self.event_handle: int = (
            c_void_p.from_address(self.sync_event).value or 0 if self.sync_event else 0
        )
        self.table = top.format == "+s" and not top.dictionary
        self.length: int = array.length
        self.columns: tuple[ColumnData, ...]
        if not self.table:
            self.columns = (_column(top, array, 0, array.length),)
            self.unsupported = _unsupported(top)
            return
        if array.n_children != len(children):
            raise ProtocolError(
                f"the schema has {len(children)} fields but the array {array.n_children} "
                "children; the producer broke the protocol, report it"
            )
        self.columns = tuple(
            _column(field, array.children[i][0], array.offset, array.length)
            for i, field in enumerate(children)
        )
        reasons = [_unsupported(field) for field in children]
        if array.null_count != 0 and array.n_buffers and array.buffers[0]:
            reasons.append("the table (struct array) has top-level nulls")
        self.unsupported = "; ".join(reason for reason in reasons if reason)

    def close(self) -> None:
        """Release the array (once); its buffers must not be read afterwards."""
        array = self._struct.array
        if array.release:
            array.release(ctypes.addressof(array))
            array.release = _RELEASE()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def import_device_array(schema_capsule: object, array_capsule: object) -> DeviceArrowArray:
    """Consume an ``(arrow_schema, arrow_device_array)`` capsule pair.

    Both capsules are checked before either is consumed: a wrong name raises
    :class:`ProtocolError`, an already released struct :class:`ConsumedSourceError`.
    """
    _live_source(array_capsule, ARROW_DEVICE_ARRAY)
    schema = ArrowSchema()
    _move(schema_capsule, ARROW_SCHEMA, ctypes.addressof(schema))
    try:
        top, children = _read_schema(schema)
    finally:
        _release_schema(schema)
    struct = ArrowDeviceArray()
    _move(array_capsule, ARROW_DEVICE_ARRAY, ctypes.addressof(struct))
    return DeviceArrowArray(struct, top, children)


def _check_stream(stream: ArrowDeviceArrayStream, code: int, doing: str) -> None:
    if code == 0:
        return
    message = stream.get_last_error(ctypes.addressof(stream))
    detail = ctypes.string_at(message).decode(errors="replace") if message else "no message"
    raise ConversionError(
        f"the Arrow device stream failed {doing} (errno {code}, {os.strerror(code)}): "
        f"{detail}. The producer reported this error; fix it there"
    )


def import_device_stream(capsule: object) -> tuple[list[DeviceArrowArray], DeviceType]:
    """Consume an ``arrow_device_array_stream`` capsule: every chunk, and the device type."""
    stream = ArrowDeviceArrayStream()
    _move(capsule, ARROW_DEVICE_ARRAY_STREAM, ctypes.addressof(stream))
    address = ctypes.addressof(stream)
    arrays: list[DeviceArrowArray] = []
    try:
        try:
            device_type = DeviceType(stream.device_type)
        except ValueError:
            raise ProtocolError(
                f"the device stream has unknown device type {stream.device_type}"
            ) from None
        schema = ArrowSchema()
        _check_stream(
            stream, stream.get_schema(address, ctypes.addressof(schema)), "getting its schema"
        )
        try:
            top, children = _read_schema(schema)
        finally:
            _release_schema(schema)
        while True:
            out = ArrowDeviceArray()
            _check_stream(
                stream, stream.get_next(address, ctypes.addressof(out)), "reading a chunk"
            )
            if not out.array.release:
                break
            arrays.append(DeviceArrowArray(out, top, children))
            if out.device_type != device_type:
                raise ProtocolError(
                    f"a chunk is on device type {out.device_type} in a stream on device type "
                    f"{int(device_type)}; the producer broke the protocol, report it"
                )
    except BaseException:
        for array in arrays:
            array.close()
        raise
    finally:
        if stream.release:
            stream.release(address)
    return arrays, device_type


def set_device(array_capsule: object, device: Device, sync_event: int = 0) -> None:
    """Write the device fields of an unconsumed ``arrow_device_array`` capsule's struct.

    For a producer that built the struct over device memory with a CPU-only library
    (pyarrow's ``foreign_buffer``): the buffers, release callback and lifetime stay that
    library's, and only ``device_id``, ``device_type`` and ``sync_event`` (the address of
    the event handle, kept alive by the producer) change.
    """
    struct = ArrowDeviceArray.from_address(_live_source(array_capsule, ARROW_DEVICE_ARRAY))
    struct.device_id = device.arrow_id
    struct.device_type = int(device.type)
    struct.sync_event = sync_event or None
