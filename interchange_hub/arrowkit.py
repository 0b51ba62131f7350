"""pyarrow-based helpers shared by adapters: type names, descriptions, buffers, reading.

pyarrow is imported inside the functions; callers only reach them on routes that
declare ``requires=("pyarrow",)``.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING, Any

from interchange_hub._c.capsule import ARROW_ARRAY_STREAM, check_capsule
from interchange_hub._core.deps import require
from interchange_hub._core.dtypes import hub_name
from interchange_hub._core.info import NO_FLAGS, Column, DataInfo, Flag, Kind, Loss, alignment_of
from interchange_hub._core.protocols import is_arrow_array, is_arrow_stream
from interchange_hub.adapter import Buffer
from interchange_hub.errors import ConversionError, NoRouteError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from interchange_hub.adapter import Context


def pa_module() -> Any:
    return require("pyarrow", "to handle Arrow data")


# The types a step encoding text anew may make in place of each plain one.
TEXT_TYPES = {
    "string": ("large_string", "string_view"),
    "binary": ("large_binary", "binary_view"),
}


def text_type(ctx: Context | None, plain: str) -> str:
    """The Arrow type (hub name) a step that encodes text anew (from Python objects or
    numpy's fixed-width text) makes where it would make ``plain`` (``"string"`` or
    ``"binary"``): the one the conversion's target keeps as it is
    (:attr:`~interchange_hub.adapter.Context.string_type`, ``binary_type``) where this
    pyarrow builds it (:func:`builds_text`), else ``plain`` (any other type, or no
    ``ctx``, gives ``plain``). Estimate and run alike read it, so the plan says what the
    step makes."""
    if ctx is None:
        return plain
    wanted = ctx.string_type if plain == "string" else ctx.binary_type if plain == "binary" else ""
    if wanted and wanted in TEXT_TYPES[plain] and builds_text(wanted):
        return wanted
    return plain


@cache
def builds_text(name: str) -> bool:
    """Whether this pyarrow builds arrays of the text type ``name`` (``string_view``,
    ``large_string``, ...) from Python objects and from numpy's fixed-width text
    (``pa.array(values, type=...)``); checked once a type."""
    pa = pa_module()
    try:
        typ = getattr(pa, name)()
        objects = ["a", None] if "string" in name else [b"a", None]
        pa.array(objects, type=typ, from_pandas=True)
        try:
            import numpy as np
        except ImportError:  # (no numpy: no numpy text to build either)
            return True
        pa.array(np.array(objects, dtype=object), type=typ, from_pandas=True)
        pa.array(np.array(objects[:1]), type=typ)
    except (AttributeError, pa.ArrowException, TypeError, ValueError):
        return False
    return True


def dtype_name(arrow_type: Any) -> str:
    """pyarrow's name for a type, with floats spelled ``float16/32/64``. An extension type's
    name leaves its storage out (``extension<arrow.json>`` over string, large_string or
    string_view alike): where that storage holds views, which a reader may not read safely
    (nanoarrow), the name says so: ``extension<arrow.json> over string_view``."""
    name = hub_name(str(arrow_type))
    if "extension<" in name and not has_views(name):
        hidden = sorted(_hidden_views(arrow_type))
        if hidden:
            name = f"{name} over {' and '.join(hidden)}"
    return name


def _hidden_views(typ: Any) -> set[str]:
    """The view types (``string_view``, ``binary_view``) in the storage of the extension
    types ``typ`` holds, at any depth."""
    pa = pa_module()
    found: set[str] = set()
    if isinstance(typ, pa.BaseExtensionType):
        storage = typ.storage_type
        found |= {v for v in _VIEWS if v in str(storage)} | _hidden_views(storage)
        return found
    children = [typ.field(i).type for i in range(typ.num_fields)]
    value = getattr(typ, "value_type", None)  # (a dictionary's values)
    if isinstance(value, pa.DataType) and not children:
        children.append(value)
    for child in children:
        found |= _hidden_views(child)
    return found


def columns_of_schema(schema: Any) -> tuple[Column, ...]:
    marked = enum_fields(schema)
    return tuple(
        Column(f.name, dtype_name(f.type), flags=_ENUM_METADATA if i in marked else NO_FLAGS)
        for i, f in enumerate(schema)
    )


# The field metadata polars writes for an Enum ("_PL_ENUM_VALUES2" in polars 1.3x-2.x):
# its categories, in order, which polars' import reads back as that Enum
_ENUM_KEY = b"_PL_ENUM_VALUES"
_ENUM_METADATA = frozenset({Flag.ENUM_METADATA})


def enum_fields(schema: Any, types: Sequence[Any] | None = None) -> tuple[int, ...]:
    """The positions of ``schema``'s ordered dictionary fields whose metadata marks them an
    Enum of fixed categories (:attr:`Flag.ENUM_METADATA`); only ordered dictionaries'
    fields are looked at (a type check a field, of ``types``: ``schema.types``, which a
    pyarrow table's route key has read already)."""
    dictionary = pa_module().DictionaryType
    found: tuple[int, ...] = ()
    for i, typ in enumerate(schema.types if types is None else types):
        if type(typ) is dictionary and typ.ordered:
            metadata = schema.field(i).metadata
            if metadata and any(k.startswith(_ENUM_KEY) for k in metadata):
                found += (i,)
    return found


_SLICED = frozenset({Flag.SLICED})


_UNALIGNED = frozenset({Flag.UNALIGNED})
_DECIMAL_WIDTHS = {"decimal32": 4, "decimal64": 8, "decimal128": 16, "decimal256": 32}
_VIEWS = ("string_view", "binary_view")
_VIEW_WIDTH = 16  # a view is 16 bytes: length, prefix, buffer index, offset


# Interval types pyarrow 26 imports into a Table or ChunkedArray but has no Python array
# class for (Type ids 21 and 22: reading any chunk raises KeyError: 21), nor a cast from.
_UNWRAPPABLE = (21, 22)  # INTERVAL_MONTHS (month_interval), INTERVAL_DAY_TIME


def _unwrappable(typ: Any) -> bool:
    if typ.id in _UNWRAPPABLE:
        return True
    inner = [typ.field(i).type for i in range(typ.num_fields)]
    inner += [getattr(typ, a, None) for a in ("value_type", "storage_type")]
    data_type = pa_module().DataType  # (an extension type's own value_type may be a str)
    return any(isinstance(t, data_type) and _unwrappable(t) for t in inner)


def _refuse_unwrappable(name: str, typ: Any) -> None:
    if _unwrappable(typ):
        raise NoRouteError(
            f"column {name!r} ({dtype_name(typ)}): pyarrow has no Python array for the "
            "month_interval and day_time_interval types (nor a cast from them), and the hub "
            "reads Arrow data through pyarrow; produce it as month_day_nano_interval instead"
        )


def _column(name: str, arr: Any) -> Column:
    _refuse_unwrappable(name, arr.type)
    dtype = dtype_name(arr.type)
    parts = arr.chunks if hasattr(arr, "chunks") else [arr]
    flags = _SLICED if any(c.offset for c in parts) else NO_FLAGS
    width = _VIEW_WIDTH if dtype in _VIEWS else _DECIMAL_WIDTHS.get(dtype.split("(")[0], 0)
    if width and _unaligned(parts, width):
        flags = flags | _UNALIGNED
    nested = nested_flags(arr.type, parts)
    if nested:
        flags = flags | nested
    return Column(name, dtype, nbytes(parts), int(arr.null_count), len(parts), flags)


def _nested_bitmap_offset(typ: Any, parts: Any) -> bool:
    """``Flag.NESTED_BITMAP_OFFSET`` of chunks ``parts`` of ``typ``: whether a nested array
    with nulls starts inside a byte of its validity bitmap (see :func:`nested_flags`)."""
    return Flag.NESTED_BITMAP_OFFSET in nested_flags(typ, parts)


def nested_flags(typ: Any, parts: Any) -> frozenset[Flag]:
    """The flags of the nested arrays of chunks ``parts`` of ``typ``:
    ``Flag.NESTED_BITMAP_OFFSET``, ``Flag.NESTED_OWN_OFFSET`` and
    ``Flag.STRUCT_NULLS_OVER_FIELDS``, and of a fixed-size list's chunks
    ``Flag.FIXED_SIZE_TAIL``. A walk over the nested arrays' offsets and null
    counts, never their values; flat types answer at once."""
    if not typ.num_fields and typ.id not in _WRAPPERS:
        return NO_FLAGS  # flat types: two attribute reads on the route key's path
    pa = pa_module()
    while isinstance(typ, pa.BaseExtensionType):
        typ = typ.storage_type
    if not (typ.num_fields or pa.types.is_dictionary(typ)):
        return NO_FLAGS
    found: set[Flag] = set()
    fixed = pa.types.is_fixed_size_list(typ)
    for chunk in parts:
        if len(chunk):
            _walk_nested(pa, chunk, False, found)
            if fixed and _tail(pa, chunk):
                found.add(Flag.FIXED_SIZE_TAIL)
    return frozenset(found) if found else NO_FLAGS


def _tail(pa: Any, chunk: Any) -> bool:
    """Whether a fixed-size list chunk (or an extension of one) with nulls has values past
    its rows (``Flag.FIXED_SIZE_TAIL``)."""
    if isinstance(chunk.type, pa.BaseExtensionType):
        chunk = chunk.storage
    if not chunk.null_count:
        return False
    return bool(len(chunk.values) > (chunk.offset + len(chunk)) * chunk.type.list_size)


# Arrow type ids (pyarrow's DataType.id) of types without fields that may hold nested
# arrays: a dictionary (its values), an extension type (its storage).
_WRAPPERS = frozenset({29, 31})


def _walk_nested(pa: Any, arr: Any, masked: bool, found: set[Flag]) -> None:
    """Add to ``found`` the flags of the nested arrays of ``arr`` (not of ``arr`` itself).

    ``Flag.NESTED_BITMAP_OFFSET``: a nested array with nulls starts inside a byte of its
    bitmap: its own offset, plus that of the structs above it (and of the fixed-size lists
    above it, times their sizes), which select its rows. ``Flag.NESTED_OWN_OFFSET``: one
    starts at a non-zero offset of its own. ``Flag.STRUCT_NULLS_OVER_FIELDS``: see
    :func:`_over_fields` (``masked``: a struct above ``arr``, through structs, has null
    rows)."""
    t, typ = pa.types, arr.type
    if isinstance(typ, pa.BaseExtensionType):
        _walk_nested(pa, arr.storage, masked, found)
        return
    struct = t.is_struct(typ)
    if struct or t.is_union(typ):
        # (at a struct's or a sparse union's rows: field() adds their offset)
        shift = arr.offset if struct or typ.mode == "sparse" else 0
        nested = [(arr.field(i), shift) for i in range(typ.num_fields)]
    elif t.is_fixed_size_list(typ):
        size, values = typ.list_size, arr.values
        nested = [(values.slice(arr.offset * size, len(arr) * size), arr.offset * size)]
    elif t.is_dictionary(typ):
        nested = [(arr.dictionary, 0)]
    elif typ.num_fields:  # lists, maps, list views, run-end encoded: their values as they are
        nested = [(arr.values, 0)]
    else:
        return
    masked = struct and (masked or arr.null_count > 0)
    for child, shift in nested:
        if not len(child):
            continue
        ctype = child.type
        while isinstance(ctype, pa.BaseExtensionType):
            ctype = ctype.storage_type
        bits = t.is_boolean(ctype)
        flat = bits or t.is_null(ctype) or t.is_union(ctype)
        own = child.offset - shift  # where it starts in its own buffers
        nulls = child.null_count > 0 and not t.is_null(ctype)
        if nulls and not flat:
            if child.offset % 8:
                found.add(Flag.NESTED_BITMAP_OFFSET)
            if own:
                found.add(Flag.NESTED_OWN_OFFSET)
        if struct and _over_fields(t, ctype, masked, nulls, bits, own):
            found.add(Flag.STRUCT_NULLS_OVER_FIELDS)
        _walk_nested(pa, child, masked, found)


def _over_fields(t: Any, ctype: Any, masked: bool, nulls: bool, bits: bool, own: int) -> bool:
    """Whether a struct's field of type ``ctype`` takes nulls a library that pushes a
    struct's nulls into its fields (polars) merges into new bitmaps: the struct's own
    (``masked``: it, or a struct above it, has null rows) over a field with nulls, a list
    or struct field, or bools at an offset of their own; a list field's own over its
    values."""
    lists = (
        t.is_list(ctype)
        or t.is_large_list(ctype)
        or t.is_fixed_size_list(ctype)
        or t.is_map(ctype)
        or t.is_list_view(ctype)
        or t.is_large_list_view(ctype)
    )
    if lists and nulls:
        return True
    if not masked or t.is_union(ctype) or t.is_null(ctype):
        return False
    return nulls or lists or t.is_struct(ctype) or bool(own and bits)


def _unaligned(parts: Any, width: int) -> bool:
    """Whether a non-empty chunk's values (a decimal's numbers, a view type's views) do
    not start at a multiple of ``width``."""
    for chunk in parts:
        if len(chunk):
            data = chunk.buffers()[1]
            if data is not None and (data.address + chunk.offset * width) % width:
                return True
    return False


def nbytes(chunks: Any) -> int:
    """The bytes of Arrow arrays ``chunks``. An empty chunk counts 0 without asking
    pyarrow: IPC readers give an empty union chunk no type-ids buffer, and pyarrow's
    ``nbytes`` then reads through a null pointer (a crash, pyarrow 26)."""
    return sum(int(c.nbytes) for c in chunks if len(c))


def describe_table(table: Any) -> DataInfo:
    """Describe a pyarrow Table or RecordBatch."""
    cols = tuple(_column(n, table.column(i)) for i, n in enumerate(table.column_names))
    marked = enum_fields(table.schema)
    if marked:
        cols = tuple(
            replace(c, flags=c.flags | _ENUM_METADATA) if i in marked else c
            for i, c in enumerate(cols)
        )
    split = split_columns(table.columns)
    if split:
        cols = tuple(
            replace(c, flags=c.flags | _CHUNKS_SPLIT) if i in split else c
            for i, c in enumerate(cols)
        )
    return DataInfo(Kind.TABLE, cols, rows=table.num_rows)


_CHUNKS_SPLIT = frozenset({Flag.CHUNKS_SPLIT})


def split_columns(columns: Any) -> tuple[int, ...]:
    """The positions of the columns (ChunkedArrays or Arrays) whose chunks another
    column's chunk boundaries split (``Flag.CHUNKS_SPLIT``): read from chunk lengths.
    Nothing to read where no column has several chunks."""
    if not any(getattr(c, "num_chunks", 1) > 1 for c in columns):
        return ()
    ends = []
    for col in columns:
        total, mine = 0, set()
        for chunk in col.chunks if hasattr(col, "chunks") else (col,):
            total += len(chunk)
            mine.add(total)
        ends.append(mine)
    every = set().union(*ends)
    return tuple(i for i, mine in enumerate(ends) if mine != every)


def describe_column(arr: Any, name: str = "") -> DataInfo:
    """Describe a pyarrow Array or ChunkedArray (a struct array counts as a column)."""
    return DataInfo(Kind.COLUMN, (_column(name, arr),), rows=len(arr), alignment=_alignment(arr))


def _alignment(arr: Any) -> int:
    """``DataInfo.alignment`` of a one-chunk integer or float column: where its values
    start (the buffer's address plus the offset); 0 for anything else."""
    chunk = arr
    if hasattr(arr, "chunks"):
        if arr.num_chunks != 1:
            return 0
        chunk = arr.chunk(0)
    pa = pa_module()
    typ = chunk.type
    if not len(chunk) or not (pa.types.is_integer(typ) or pa.types.is_floating(typ)):
        return 0
    values = chunk.buffers()[1]
    if values is None:
        return 0
    return alignment_of(values.address + chunk.offset * (typ.bit_width // 8))


def route_key(obj: Any) -> Any:
    """What decides the route of a pyarrow Table, RecordBatch, Array or ChunkedArray
    besides its size: the schema (or type), and per column whether it has nulls, how many
    chunks, whether a chunk starts at an offset and the flags of its nested arrays (see
    :func:`nested_flags`); for a table, the columns whose chunks others split. None for
    empty data (always planned)."""
    pa = pa_module()
    cls = type(obj)
    if cls is pa.Table or cls is pa.RecordBatch:
        if not obj.num_rows:
            return None
        schema = obj.schema
        columns = obj.columns
        types = schema.types
        keys = tuple(_column_key(c, t) for c, t in zip(columns, types, strict=True))
        # (a schema compares without its fields' metadata: the Enums it marks are keyed)
        return (schema, keys, split_columns(columns), enum_fields(schema, types))
    if (cls is pa.ChunkedArray or isinstance(obj, pa.Array)) and len(obj):
        typ = obj.type
        return (cls, typ, _column_key(obj, typ))
    return None


def _column_key(arr: Any, typ: Any) -> tuple[bool, int, bool, frozenset[Flag]]:
    parts = arr.chunks if hasattr(arr, "chunks") else (arr,)
    nested = nested_flags(typ, parts)
    return (arr.null_count > 0, len(parts), any(p.offset for p in parts), nested)


def describe_schema(schema: Any, kind: Kind) -> DataInfo:
    """Describe data known only by its schema (a stream): sizes are unknown."""
    for field in schema:
        _refuse_unwrappable(field.name, field.type)
    return DataInfo(
        kind,
        tuple(Column(c.name, c.dtype, -1, -1, -1, c.flags) for c in columns_of_schema(schema)),
    )


def buffers(obj: Any) -> list[Buffer]:
    """The memory ranges a pyarrow Table, RecordBatch, Array or ChunkedArray uses.

    For slices, fixed-width and string arrays report only the bytes in the slice, so
    that two views of one buffer are compared by what they actually expose.
    """
    pa = pa_module()
    found: list[Buffer] = []
    if isinstance(obj, pa.RecordBatchReader):
        return found
    if isinstance(obj, (pa.Table, pa.RecordBatch)):
        for col in obj.columns:
            found += buffers(col)
        return found
    chunks = obj.chunks if isinstance(obj, pa.ChunkedArray) else [obj]
    for chunk in chunks:
        found += [b for b in _array_ranges(pa, chunk) if b.size > 0]
    return found


def _bitmap(buf: Any, offset: int, length: int) -> Buffer:
    start = offset // 8
    return Buffer(buf.address + start, min((offset + length + 7) // 8 - start, buf.size - start))


def _array_ranges(pa: Any, arr: Any) -> list[Buffer]:
    typ, off, n = arr.type, arr.offset, len(arr)
    bufs = arr.buffers()
    if pa.types.is_boolean(typ):
        return [_bitmap(b, off, n) for b in bufs if b is not None]
    if pa.types.is_dictionary(typ):
        return _array_ranges(pa, arr.indices) + _array_ranges(pa, arr.dictionary)
    width = typ.bit_width if pa.types.is_primitive(typ) else 0
    # A bitmap of a slice without nulls says nothing: consumers may drop it.
    has_validity = bool(bufs) and bufs[0] is not None and arr.null_count > 0
    validity = [_bitmap(bufs[0], off, n)] if has_validity else []
    if pa.types.is_struct(typ):
        # field(), not flatten(): flatten() merges the parent's nulls into new bitmaps.
        children = (arr.field(i) for i in range(typ.num_fields))
        return validity + [b for child in children for b in _array_ranges(pa, child)]
    if width and width % 8 == 0 and len(bufs) == 2:
        size = width // 8
        data = Buffer(bufs[1].address + off * size, n * size) if bufs[1] is not None else None
        return validity + ([data] if data else [])
    if typ in (pa.string(), pa.binary(), pa.large_string(), pa.large_binary()) and bufs[1]:
        osize = 8 if typ in (pa.large_string(), pa.large_binary()) else 4
        ranges = validity + [Buffer(bufs[1].address + off * osize, (n + 1) * osize)]
        if bufs[2] is not None and n:
            itype = pa.int64() if osize == 8 else pa.int32()
            offsets = pa.Array.from_buffers(itype, n + 1, [None, bufs[1]], offset=off)
            lo, hi = offsets[0].as_py(), offsets[n].as_py()
            ranges.append(Buffer(bufs[2].address + lo, hi - lo))
        return ranges
    return [Buffer(b.address, b.size) for b in bufs if b is not None]


def read_table(value: Any) -> Any:
    """A pyarrow Table from any Arrow producer (stream, array or record batch)."""
    pa = pa_module()
    if isinstance(value, pa.Table):
        return value
    if isinstance(value, pa.RecordBatch):
        return pa.Table.from_batches([value])
    if is_arrow_stream(value):
        return read_stream(value)
    return pa.Table.from_batches([batch_from(value)])


def read_stream(value: Any, schema: Any = None) -> Any:
    """A pyarrow Table from an ``__arrow_c_stream__`` producer, its lengths checked;
    ``schema``: passed on as the PyCapsule interface's ``requested_schema`` (which a
    producer may ignore: the Table has the schema the producer gave)."""
    pa = pa_module()
    if schema is None:  # what pa.table does with a stream, without its tests of type
        # (0.35 us of a polars frame's 6.4)
        reader = pa.RecordBatchReader._import_from_c_capsule(value.__arrow_c_stream__(None))
    else:
        reader = pa.RecordBatchReader.from_stream(value, schema=schema)
    return lengths_checked(reader.read_all(), value)


# The classes whose adapter vouches for their Arrow streams' record batches: every
# column of a batch exactly as long as the batch (vouch_exact_batches).
_EXACT_BATCHES: set[type] = set()


def vouch_exact_batches(cls: type) -> None:
    """Declare that objects of exactly ``cls`` (not its subclasses) export, through
    ``__arrow_c_stream__``, record batches whose columns are exactly as long as their
    batch: :func:`lengths_checked` then takes their tables as they are (0.3 us of the 6.7
    of a 4-column polars frame read by pyarrow). For an adapter whose library builds each
    batch from columns of one height (polars: a frame's aligned chunks), with a test that
    reads its tables validated; any other producer is checked."""
    _EXACT_BATCHES.add(cls)


# Adapters' own ways to the C array of their objects, by exact class (register_c_array).
_C_ARRAYS: dict[type, Callable[[Any], tuple[Any, Any] | None]] = {}
_C_ARRAY_STREAMS: set[type] = set()  # those of them that are stream producers too


def register_c_array(cls: type, export: Callable[[Any], tuple[Any, Any] | None]) -> None:
    """Declare that ``export(obj)``, for an object of exactly ``cls`` (not a subclass),
    gives the capsules ``obj.__arrow_c_array__()`` gives, or None where it cannot say
    (then the method itself is called): :func:`array_from` and :func:`batch_from` read
    such objects through it. For an adapter whose library's method repeats in Python what
    its objects settle once (nanoarrow's Array compares its device with the CPU's on each
    call: 0.7 of its 2.0 us), with a check of ``export`` against the method itself, made
    once, before it registers. A class whose objects pyarrow reads another way
    (``__arrow_array__``, ``__arrow_c_device_array__``) is refused, as pyarrow would not
    call the method."""
    if hasattr(cls, "__arrow_array__") or hasattr(cls, "__arrow_c_device_array__"):
        raise ValueError(
            f"pyarrow reads {cls.__name__} through __arrow_array__ or "
            "__arrow_c_device_array__, not __arrow_c_array__: its C array is not registered"
        )
    _C_ARRAYS[cls] = export
    if hasattr(cls, "__arrow_c_stream__"):
        _C_ARRAY_STREAMS.add(cls)


def c_array_export(cls: type) -> Callable[[Any], tuple[Any, Any] | None] | None:
    """The export registered for exactly ``cls`` (:func:`register_c_array`), else None."""
    return _C_ARRAYS.get(cls)


def array_from(value: Any) -> Any:
    """``pa.array(value)`` for an Arrow array producer: through the export its adapter
    registered (:func:`register_c_array`), as ``pa.array`` imports the producer's C array,
    else ``pa.array`` itself."""
    pa = pa_module()
    array = _exported(value, pa.Array._import_from_c_capsule)
    return pa.array(value) if array is None else array


def batch_from(value: Any) -> Any:
    """``pa.record_batch(value)`` for an Arrow array producer of struct data: through the
    export its adapter registered (:func:`register_c_array`), as ``pa.record_batch``
    imports the producer's C array, else ``pa.record_batch`` itself."""
    pa = pa_module()
    batch = _exported(value, pa.RecordBatch._import_from_c_capsule)
    return pa.record_batch(value) if batch is None else batch


def _exported(value: Any, read: Callable[[Any, Any], Any]) -> Any:
    """``read(*pair)`` of the C array the export registered for ``value``'s class makes
    of it, or None: no export, or none for this value (the public call reads it)."""
    export = _C_ARRAYS.get(type(value))
    if export is None:
        return None
    pair = export(value)
    return None if pair is None else read(*pair)


def exact_batches(cls: type) -> bool:
    """Whether ``cls``'s adapter vouched for its streams' batches
    (:func:`vouch_exact_batches`)."""
    return cls in _EXACT_BATCHES


def lengths_checked(table: Any, value: Any) -> Any:
    """``table``, read from ``value``'s stream, once its lengths are checked (O(columns x
    chunks), no data read): pyarrow's record batch import keeps a batch's columns as the
    producer gave them, and a producer may give children longer than their struct. A
    producer vouched for (:func:`vouch_exact_batches`) is not checked."""
    if type(value) in _EXACT_BATCHES:
        return table
    try:
        table.validate()
    except pa_module().ArrowInvalid as exc:
        raise ConversionError(
            f"the stream of {type(value).__name__} holds record batches whose columns "
            f"are longer than their rows ({exc}): slices of longer arrays, which "
            "pyarrow's record batch import keeps as they are; export each batch sliced "
            "to its rows (or as a column's stream, whose structs are nullable)"
        ) from exc
    return table


def read_table_asking(value: Any, wanted: Callable[[Any], Any]) -> Any:
    """A pyarrow Table from ``value``, as :func:`read_table` reads it, except that a
    stream producer saying its schema (``__arrow_c_schema__``) is asked for
    ``wanted(schema)`` where that differs (the PyCapsule interface's
    ``requested_schema``): a producer that honours it converts its own data (the polars
    adapter's export: polars casts its columns side by side), one that ignores it gives
    its own schema, as without asking, and one that refuses it (NotImplementedError,
    TypeError) is read again without: the caller converts what is left as it would have.
    pyarrow objects are read as they are."""
    pa = pa_module()
    cls = type(value)
    if (
        cls is pa.Table
        or cls is pa.RecordBatch
        or not hasattr(cls, "__arrow_c_schema__")
        or not hasattr(cls, "__arrow_c_stream__")
    ):
        return read_table(value)
    own = pa.schema(value)
    want = wanted(own)
    if want.equals(own):
        return read_stream(value)
    try:
        return read_stream(value, want)
    except (NotImplementedError, TypeError):  # a producer that takes no request
        return read_stream(value)


def without_views_schema(schema: Any) -> Any:
    """``schema`` with views cast to large types at every depth, dictionaries' values too
    (what :func:`without_views` casts to; field metadata kept)."""
    return _view_free_schema(pa_module(), schema)[0]  # (kept per schema: 2.4 us, not 4.6)


def read_column(value: Any) -> Any:
    """A pyarrow Array (array producers) or ChunkedArray (stream producers)."""
    pa = pa_module()
    if isinstance(value, (pa.Array, pa.ChunkedArray)):
        return value
    array = _exported(value, pa.Array._import_from_c_capsule)  # (one chunk, where it has one)
    if array is not None:  # a stream producer's column is a ChunkedArray, as its stream's
        return pa.chunked_array([array]) if type(value) in _C_ARRAY_STREAMS else array
    if is_arrow_array(value) and not is_arrow_stream(value):
        return pa.array(value)  # (its registered export, if any, was asked above)
    return pa.chunked_array(value)


def empty_chunks_at_zero(data: Any, where: Sequence[int] | None = None) -> Any:
    """``data`` (a pyarrow Table, RecordBatch, RecordBatchReader, ChunkedArray or Array)
    with each empty chunk at an offset replaced by an empty chunk of its type at offset 0.

    pyarrow's C export of such a chunk (pyarrow 26) drops its buffers but keeps the
    offset: whoever imports it holds a chunk that points past its buffers, an invalid
    array for string_view and binary_view (also as an extension type's storage: "View
    buffer size (bytes): 0 isn't large enough for length: 0 and offset: 1", which pyarrow
    refuses to export again), and one that pyarrow's concatenation refuses for every type
    ("buffer slice would exceed buffer length": combine_chunks, to_numpy, pandas' masked
    arrays). Only a column's own chunks are affected (nested arrays are exported whole).
    A look at the chunks' offsets and lengths, no data: ``data`` itself when nothing needs
    it (a RecordBatchReader is repaired lazily, batch by batch: a batch holds such columns
    only when it is empty). It also repairs data imported from such an export (the
    offset and the length are kept). :class:`ArrowStreamProducer` applies it to the
    pyarrow data it exports and to the streams of pandas, which exports through pyarrow;
    the pyarrow and nanoarrow adapters' exports apply it to the columns their plans
    name (``where``: the indices of a table's columns to look at; None: all)."""
    pa = pa_module()
    if isinstance(data, pa.RecordBatchReader):
        batches = (empty_chunks_at_zero(batch) for batch in data)
        return pa.RecordBatchReader.from_batches(data.schema, batches)
    if isinstance(data, pa.RecordBatch):
        if data.num_rows or not any(c.offset for c in data.columns):
            return data
        empty = [pa.nulls(0, f.type) for f in data.schema]
        return pa.RecordBatch.from_arrays(empty, schema=data.schema)
    if isinstance(data, pa.Table):
        # A column of one chunk holds an empty chunk only when the table has no rows.
        some = not data.num_rows
        fixed = {}
        for i in range(data.num_columns) if where is None else where:
            column = data.column(i)
            if some or column.num_chunks > 1:
                new = empty_chunks_at_zero(column)
                if new is not column:
                    fixed[i] = new
        if not fixed:
            return data
        columns = data.columns
        for i, new in fixed.items():
            columns[i] = new
        return pa.Table.from_arrays(columns, schema=data.schema)
    if isinstance(data, pa.Array):
        return pa.nulls(0, data.type) if data.offset and not len(data) else data
    if not isinstance(data, pa.ChunkedArray):
        return data
    if not any(c.offset and not len(c) for c in data.chunks):
        return data
    chunks = [pa.nulls(0, c.type) if c.offset and not len(c) else c for c in data.chunks]
    return pa.chunked_array(chunks, type=data.type)


views_at_zero = empty_chunks_at_zero  # its first name, when only view columns were repaired


def read(value: Any, kind: Kind, info: DataInfo) -> Any:
    """The Arrow data of ``value`` (described by ``info``) read into pyarrow as ``kind``.

    ``Kind.TABLE``: a Table; a column becomes a one-column table named after it.
    ``Kind.COLUMN``: an Array (array producers) or a ChunkedArray; a one-column table or
    stream gives its column. Any other kind is read as the data's own kind.
    """
    if kind == Kind.TABLE or (kind != Kind.COLUMN and info.kind != Kind.COLUMN):
        if info.kind == Kind.COLUMN:
            return table_from_column(read_column(value), info.columns[0].name)
        return read_table(value)
    if info.kind in (Kind.TABLE, Kind.STREAM):
        return column_from_table(read_table(value))
    return read_column(value)


def read_any(value: Any) -> Any:
    """Read a producer once: a Table for struct data without null rows (record batches),
    else a ChunkedArray (a struct with null rows is a column: a table has no null rows).

    Each chunk is imported as an array (pyarrow's record batch import keeps a sliced
    struct's full-length children, and refuses one at an offset or with null rows)."""
    pa = pa_module()
    if is_arrow_stream(value):
        col = pa.chunked_array(value)
    else:
        col = pa.chunked_array([pa.array(value)])
    if pa.types.is_struct(col.type) and not col.null_count:
        return struct_table(col)
    return col


def import_device_array(producer: Any) -> Any:
    """A pyarrow Array, or RecordBatch for struct data, from a CPU ``__arrow_c_device_array__``."""
    pa = pa_module()
    arr = pa.Array._import_from_c_device_capsule(*producer.__arrow_c_device_array__())
    return pa.RecordBatch.from_struct_array(arr) if pa.types.is_struct(arr.type) else arr


def struct_table(col: Any) -> Any:
    """A pyarrow Table of the fields of a struct ChunkedArray (also when it has no chunks),
    each chunk's children sliced to its rows (zero-copy, whatever the chunk's offset and
    its children's lengths). For a struct without null rows: the null rows of one would
    become nulls of every field (new bitmaps), and a struct with null rows is a column."""
    pa = pa_module()
    if not col.num_chunks:
        # Not Schema.empty_table(): pyarrow 26 builds its columns with pa.array([], type),
        # which raises ArrowNotImplementedError for union types; pa.nulls makes them all.
        return pa.Table.from_batches([pa.RecordBatch.from_struct_array(pa.nulls(0, col.type))])
    return pa.Table.from_struct_array(col)


def read_one_chunk(value: Any) -> Any:
    """A column planned as one chunk: a pyarrow Array read through its producer's C array
    interface where it has one (a nanoarrow Array: pa.array 2.9 us, against 3.6 for
    pa.chunked_array through its stream), else :func:`read_column` (an Array or a
    ChunkedArray). A producer that refuses its C array (nanoarrow, of several chunks
    after all) is read through its stream."""
    pa = pa_module()
    if isinstance(value, (pa.Array, pa.ChunkedArray)):
        return value
    if hasattr(type(value), "__arrow_c_array__"):
        try:
            return array_from(value)
        except ValueError:  # (pyarrow's ArrowInvalid is one too)
            pass
    return read_column(value)


def as_chunked(value: Any) -> Any:
    pa = pa_module()
    col = read_column(value)
    return col if isinstance(col, pa.ChunkedArray) else pa.chunked_array([col], type=col.type)


def table_from_column(col: Any, name: str) -> Any:
    pa = pa_module()
    return pa.table({name or "values": col})


def column_from_table(table: Any) -> Any:
    return table.column(0)


def _without_views(pa: Any, typ: Any) -> Any:
    """``typ`` with views cast to large types, also nested, and the layouts nanoarrow
    reads unsafely or not at all made plain: list views as lists, run-end encoding as its
    values (see :func:`without_views`)."""
    return _view_free(pa, typ, layouts=True)


def large_views(pa: Any, typ: Any) -> Any:
    """``typ`` with each string_view and binary_view, also nested in structs, lists and
    maps, replaced by large_string and large_binary (what pyarrow 26 can ``take``, which
    it cannot views): a cast there and back changes no value."""
    return _view_free(pa, typ, layouts=False)


def _view_free(pa: Any, typ: Any, layouts: bool) -> Any:
    """The type walk of :func:`large_views` (``layouts`` False: list views, dictionaries,
    run-end encoding and unions left as they are) and :func:`_without_views` (True)."""
    t = pa.types
    if typ == pa.string_view():
        return pa.large_string()
    if typ == pa.binary_view():
        return pa.large_binary()

    def inner(child: Any) -> Any:
        return _view_free(pa, child, layouts)

    if t.is_struct(typ):
        return pa.struct([f.with_type(inner(f.type)) for f in typ])
    if t.is_list(typ) or (layouts and t.is_list_view(typ)):
        return pa.list_(typ.value_field.with_type(inner(typ.value_type)))
    if t.is_large_list(typ) or (layouts and t.is_large_list_view(typ)):
        return pa.large_list(typ.value_field.with_type(inner(typ.value_type)))
    if t.is_fixed_size_list(typ):
        return pa.list_(typ.value_field.with_type(inner(typ.value_type)), typ.list_size)
    if t.is_map(typ):
        key = typ.key_field.with_type(inner(typ.key_type))
        item = typ.item_field.with_type(inner(typ.item_type))
        return pa.map_(key, item, typ.keys_sorted)
    if not layouts:
        return typ
    if t.is_dictionary(typ):
        return pa.dictionary(typ.index_type, inner(typ.value_type), typ.ordered)
    if t.is_run_end_encoded(typ):
        return inner(typ.value_type)  # decoded: nanoarrow reads plain arrays
    if t.is_union(typ) and has_views(str(typ)):
        fields = [f.with_type(inner(f.type)) for f in typ]
        return pa.union(fields, typ.mode, list(typ.type_codes))
    rebuilt = _extension_without_views(pa, typ)
    return typ if rebuilt is None else rebuilt


def _extension_without_views(pa: Any, typ: Any) -> Any:
    """An extension type over views made anew over large types, where pyarrow can: its
    canonical arrow.json and arrow.opaque, which take any string or binary storage (a
    column is rebuilt over the cast storage: :func:`_column_without_views`); None for
    anything else (another extension type keeps its views: refused where they matter)."""
    if not isinstance(typ, pa.BaseExtensionType) or not _hidden_views(typ):
        return None
    storage = typ.storage_type
    if typ.extension_name == "arrow.json" and storage == pa.string_view():
        return pa.json_(pa.large_string())
    if typ.extension_name == "arrow.opaque" and storage in (pa.string_view(), pa.binary_view()):
        return pa.opaque(_view_free(pa, storage, True), typ.type_name, typ.vendor_name)
    return None


def decode_dictionary(col: Any) -> Any:
    """A dictionary Array or ChunkedArray decoded to its values, one per row (a copy).
    pyarrow 26 can neither cast a dictionary of structs to its values nor ``take`` string
    or binary views (polars' strings), also nested in the values: those are gathered as
    large strings (or binaries) and made views again. Nor can it ``take`` run-end encoded
    arrays: values holding runs (a struct's field) are decoded first, as
    :func:`plain_layout` decodes them, and the result has that plain type."""
    pa = pa_module()
    if isinstance(col, pa.ChunkedArray):
        chunks = [decode_dictionary(c) for c in col.chunks]
        value_type = col.type.value_type
        if "run_end_encoded<" in str(value_type):
            value_type = _plain_type(pa, value_type)
        return pa.chunked_array(chunks, type=value_type)
    values = col.dictionary
    if "run_end_encoded<" in str(values.type):
        values = plain_layout(values)
        return values.cast(large_views(pa, values.type)).take(col.indices).cast(values.type)
    large = large_views(pa, values.type)
    if large == values.type:
        return col.dictionary_decode()
    return values.cast(large).take(col.indices).cast(values.type)


def decode_runs(arr: Any) -> Any:
    """A run-end encoded Array decoded to its values, one per row (a copy). pyarrow 26
    decodes no string or binary views: those runs are decoded as large strings (or
    binaries) and made views again. pyarrow 25 and older decode no runs of nested values
    (a struct of lists, say): their rows are taken from the values instead."""
    pa = pa_module()
    pc = require("pyarrow.compute")
    typ = arr.type.value_type
    large = large_views(pa, typ)
    if large != typ:
        # run_ends and values are the whole children: the array's offset selects its rows
        runs = pa.RunEndEncodedArray.from_arrays(arr.run_ends, arr.values.cast(large))
        arr = runs.slice(arr.offset, len(arr))
    try:
        decoded = pc.run_end_decode(arr)
    except pa.ArrowNotImplementedError:
        decoded = arr.values.take(_run_of_each_row(pa, pc, arr))
    return decoded if large == typ else decoded.cast(typ)


def _run_of_each_row(pa: Any, pc: Any, arr: Any) -> Any:
    """The index into ``arr.values`` of each row of a run-end encoded Array: the runs'
    numbers, run-end encoded as ``arr`` is and decoded (int64 runs decode everywhere)."""
    numbers = pa.array(require("numpy").arange(len(arr.values), dtype="int64"))
    runs = pa.RunEndEncodedArray.from_arrays(arr.run_ends, numbers)
    return pc.run_end_decode(runs.slice(arr.offset, len(arr)))


def without_views(data: Any) -> Any:
    """``data`` (Table, RecordBatchReader or ChunkedArray) with views cast to large types.

    A reader stays lazy: its batches are cast as they are read.
    """
    pa = pa_module()
    if isinstance(data, pa.RecordBatchReader):
        fields = [f.with_type(_without_views(pa, f.type)) for f in data.schema]
        schema = pa.schema(fields, metadata=data.schema.metadata)  # (as a table's)
        if schema == data.schema:
            return data
        if all(
            has_plain_layout(f.type)
            and not _union_of_views(pa, f.type)
            and _extension_without_views(pa, f.type) is None
            for f in data.schema
        ):
            return data.cast(schema)
        batches = (_batch_without_views(pa, batch, schema) for batch in data)
        return pa.RecordBatchReader.from_batches(schema, batches)
    if isinstance(data, pa.Table):
        schema, plain, changed = _view_free_schema(pa, data.schema)
        if not changed:
            return data
        if plain:
            return cast_columns(data, schema, changed)  # (two string_view columns: 30 us)
        columns = [_column_without_views(pa, c) for c in data.columns]
        return cast_columns(pa.table(columns, names=data.column_names), schema)
    typ = _without_views(pa, data.type)
    return data if typ == data.type else _column_without_views(pa, data).cast(typ)


def _view_free_schema(pa: Any, source: Any) -> tuple[Any, bool, tuple[int, ...]]:
    """What :func:`without_views` makes of a table of schema ``source``: the schema it
    casts to, whether every field's layout is plain (a cast is all it takes), and the
    columns whose type changes. Kept per schema (:data:`_VIEW_FREE`): worked out, it cost
    13 us a call for five columns of a polars frame, hashing and comparing one 3 us."""
    try:
        kept = _VIEW_FREE.get(source)
    except TypeError:  # no hash: a Python extension type's, or metadata's (pyarrow <= 21)
        return _work_out_view_free(pa, source)
    if kept is not None and kept[0].equals(source, check_metadata=True):
        return kept[1]
    worked_out = _work_out_view_free(pa, source)
    if len(_VIEW_FREE) >= 256:
        _VIEW_FREE.clear()
    _VIEW_FREE[source] = (source, worked_out)
    return worked_out


def _work_out_view_free(pa: Any, source: Any) -> tuple[Any, bool, tuple[int, ...]]:
    fields = [f.with_type(_without_views(pa, f.type)) for f in source]
    schema = pa.schema(fields, metadata=source.metadata)  # (kept, as a table without views)
    plain = all(
        has_plain_layout(f.type)
        and not _union_of_views(pa, f.type)
        and _extension_without_views(pa, f.type) is None
        for f in source
    )
    return schema, plain, _changed(source, schema)


# Schemas :func:`_view_free_schema` worked out: {source: (source, (schema, plain, changed))}
# (the source kept to be compared with its metadata: == and the hash leave some out).
_VIEW_FREE: dict[Any, tuple[Any, tuple[Any, bool, tuple[int, ...]]]] = {}


def _changed(source: Any, schema: Any) -> tuple[int, ...]:
    """The columns whose type differs between two schemas of the same names. (Types are
    compared as text too: == ignores a list's field name, which a cast changes.)"""
    return tuple(
        i
        for i, (old, new) in enumerate(zip(source.types, schema.types, strict=True))
        if old != new or str(old) != str(new)
    )


# The bytes of a table's columns to cast from which they are cast on threads, several at
# once: two string_view columns of 100,000 rows (5 MiB) took as long either way (0.9-1.5
# ms, the threads' start and the allocator's contention eating the gain).
PARALLEL_CAST_BYTES = 16 << 20


def cast_columns(table: Any, schema: Any, changed: tuple[int, ...] | None = None) -> Any:
    """``table.cast(schema)``, with the columns whose type changes cast on threads where
    they hold :data:`PARALLEL_CAST_BYTES` or more (pyarrow casts a table's columns one
    after the other, each releasing the GIL; the hub's pool of a thread per core:
    ``_core.threads``), flat columns in slices of rows (:func:`_cast_slice_rows`;
    dictionaries and nested columns whole, :func:`_sliceable`), so that one long
    column is cast on every thread too and the casts' scratch memory stays small: a cast
    of string_view to large_string makes its offsets twice (the result's and as much
    again, freed at its end), so whole columns cast side by side held a peak of 1.57x the
    result (10,000,000 rows of two string columns: 419 MiB for 266), slices 1.01x.

    The cast columns come back in as many chunks as there were slices. Two string_view
    columns to large_string, medians of 15 interleaved: 1,000,000 rows 4.9 ms (whole
    columns on threads 5.0, one after the other 14), 10,000,000 rows 52 ms (64; 87)."""
    pa = pa_module()
    if table.schema.names != schema.names:
        return table.cast(schema)  # (pyarrow's error)
    if changed is None:  # (``changed``: the columns whose type changes, where known)
        changed = _changed(table.schema, schema)
    if not changed:
        return table.cast(schema)
    columns = table.columns
    if any(not f.nullable and c.null_count for f, c in zip(schema, columns, strict=True)):
        return table.cast(schema)  # (pyarrow's error)
    # (a view column's nbytes counts the bytes its views reach: 3 us for 1,000 rows. A
    # column of one chunk has buffers at least that large, their size read in 0.2 us; a
    # column of several may share buffers, which that size counts once and nbytes in each)
    small = all(columns[i].num_chunks == 1 for i in changed) and (
        sum(columns[i].get_total_buffer_size() for i in changed) < PARALLEL_CAST_BYTES
    )
    nbytes = 0 if small else sum(columns[i].nbytes for i in changed)
    if small or nbytes < PARALLEL_CAST_BYTES or pa.cpu_count() < 2:  # (set_cpu_count(1))
        # Only the columns whose type changes, each set into the table: Table.cast casts
        # every column (a string_view column among five of 1,000 rows: 25.9 -> 11 us)
        out = table
        for i in changed:
            field = schema.field(i)
            out = out.set_column(i, field, columns[i].cast(field.type))
        if out.schema.equals(schema, check_metadata=True):
            return out
        # the other fields as the schema has them (nullability, metadata), as Table.cast
        return pa.Table.from_arrays(out.columns, schema=schema)
    from interchange_hub._core.threads import side_by_side, workers

    step = _cast_slice_rows(nbytes, workers())
    parts: list[tuple[int, Any, int, int]] = []  # (column, chunk, first row, rows)
    for i in changed:
        for chunk in columns[i].chunks:
            rows = step if _sliceable(pa, chunk.type) else max(len(chunk), 1)
            parts += [(i, chunk, start, rows) for start in range(0, len(chunk), rows)]

    def cast(part: tuple[int, Any, int, int]) -> Any:
        i, chunk, start, rows = part
        return chunk.slice(start, rows).cast(schema.field(i).type)

    pieces: dict[int, list[Any]] = {i: [] for i in changed}
    for (i, _, _, _), piece in zip(parts, side_by_side(cast, parts), strict=True):
        pieces[i].append(piece)
    for i in changed:
        columns[i] = pa.chunked_array(pieces[i], type=schema.field(i).type)
    return pa.Table.from_arrays(columns, schema=schema)


def _sliceable(pa: Any, typ: Any) -> bool:
    """Whether :func:`cast_columns` casts slices of a column of ``typ``: flat types only.
    A slice of a dictionary array casts its whole dictionary, and one of a list array the
    rest of its child from the slice's first offset on (each piece would keep it)."""
    t = pa.types
    return not (
        t.is_nested(typ)
        or t.is_dictionary(typ)
        or t.is_run_end_encoded(typ)
        or isinstance(typ, pa.BaseExtensionType)
    )


def _cast_slice_rows(nbytes: int, threads: int) -> int:
    """Rows of a slice that :func:`cast_columns` casts at once: the slices cast side by
    side make scratch memory of about 8 bytes a row each (a string cast's second
    offsets), held to 5% of the columns' bytes, within 16,384 and 262,144 rows (fewer
    slices cost more calls; more rows, no more speed)."""
    return max(1 << 14, min(1 << 18, nbytes // (20 * 8 * max(threads, 1))))


def _batch_without_views(pa: Any, batch: Any, schema: Any) -> Any:
    columns = [_column_without_views(pa, c) for c in batch.columns]
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names).cast(schema)


def _column_without_views(pa: Any, col: Any) -> Any:
    """``col`` ready for a cast to :func:`_without_views`' type: a list view rebuilt as a
    list and run-end encoding decoded first (pyarrow 26 casts neither: a list view's cast
    to a list gives an invalid array, whose reading crashes), a union of views rebuilt
    with its members cast (pyarrow casts no union). Anything else as it is."""
    if not has_plain_layout(col.type):
        return plain_layout(col)
    rebuilt = _extension_without_views(pa, col.type)
    if rebuilt is not None:  # (pyarrow casts no extension type to another)
        large = rebuilt.storage_type
        if isinstance(col, pa.ChunkedArray):
            chunks = [
                pa.ExtensionArray.from_storage(rebuilt, c.storage.cast(large)) for c in col.chunks
            ]
            return pa.chunked_array(chunks, type=rebuilt)
        return pa.ExtensionArray.from_storage(rebuilt, col.storage.cast(large))
    if not _union_of_views(pa, col.type):
        return col
    if isinstance(col, pa.ChunkedArray):
        chunks = [_union_without_views(pa, c) for c in col.chunks]
        return pa.chunked_array(chunks, type=_without_views(pa, col.type))
    return _union_without_views(pa, col)


def _union_of_views(pa: Any, typ: Any) -> bool:
    return bool(pa.types.is_union(typ) and has_views(str(typ)))


def _union_without_views(pa: Any, arr: Any) -> Any:
    """A union array with its members cast to :func:`_without_views` (only the members
    with views are new; the type codes and a dense union's offsets are shared)."""
    typ = arr.type
    names = [f.name for f in typ]
    codes = list(typ.type_codes)
    # Read from the buffers (pyarrow 26's type_codes and offsets of a slice ignore its
    # offset), and copied to offset 0 (from_sparse takes the type ids' offset as the
    # union's, and the members' rows with it): a byte (dense: five) per row.
    n, off, bufs = len(arr), arr.offset, arr.buffers()
    ids = pa.concat_arrays([pa.Array.from_buffers(pa.int8(), n, [None, bufs[1]], offset=off)])
    members = [without_views(arr.field(i)) for i in range(typ.num_fields)]
    if typ.mode == "sparse":  # field(): each member at the union's rows
        return pa.UnionArray.from_sparse(ids, members, names, codes)
    offsets = pa.Array.from_buffers(pa.int32(), n, [None, bufs[2]], offset=off)
    offsets = pa.concat_arrays([offsets])
    return pa.UnionArray.from_dense(ids, offsets, members, names, codes)  # whole members


def views_left(data: Any) -> bool:
    """Whether any view type survived :func:`without_views` (unions, for instance)."""
    pa = pa_module()
    schema = data.schema if hasattr(data, "schema") else pa.schema([pa.field("", data.type)])
    return any(has_views(dtype_name(f.type)) for f in schema)


def has_views(dtype: str) -> bool:
    """Whether a type name involves string_view or binary_view."""
    return "string_view" in dtype or "binary_view" in dtype


def single_batch(table: Any) -> Any:
    """One RecordBatch holding a whole table (its chunks are combined: a copy if several)."""
    batches = table.combine_chunks().to_batches()
    if batches:
        return batches[0]
    # (not from_pylist([]): pyarrow builds no empty dictionary of null or string_view
    # values from Python objects; pa.nulls makes every type)
    pa = pa_module()
    schema = table.schema
    return pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)


def deep_copy(value: Any, kind: Kind) -> Any:
    """New buffers for the same Arrow data, in the same kind of pyarrow container."""
    pa = pa_module()
    mm = pa.default_cpu_memory_manager()
    if isinstance(value, (pa.Array, pa.RecordBatch)):
        return value.copy_to(mm)
    if isinstance(value, pa.ChunkedArray):
        return pa.chunked_array([c.copy_to(mm) for c in value.chunks], type=value.type)
    if kind == Kind.COLUMN:
        return deep_copy(read_column(value), kind)
    table = read_table(value)
    return pa.Table.from_batches([b.copy_to(mm) for b in table.to_batches()], schema=table.schema)


class ArrowStreamProducer:
    """Exposes only ``__arrow_c_stream__`` of another object.

    Consumers then take the protocol path instead of a type-specific shortcut (polars,
    for one, converts a pandas DataFrame its own way). ``requested_schema`` is passed on,
    and dropped when the producer rejects it (nanoarrow raises NotImplementedError).
    What pyarrow exports (pyarrow data, and pandas objects, which export through
    ``pa.Table.from_pandas``) is exported without pyarrow's empty chunks at an offset
    (:func:`views_at_zero`): pandas' stream is read into pyarrow (zero-copy, lazily for
    a DataFrame) and exported again.
    """

    __slots__ = ("_producer",)

    def __init__(self, producer: Any) -> None:
        self._producer = producer

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        producer = self._producer
        module = type(producer).__module__
        if module == "pyarrow.lib":
            producer = views_at_zero(producer)
        if requested_schema is not None:
            try:
                capsule = producer.__arrow_c_stream__(requested_schema)
            except (NotImplementedError, TypeError):
                capsule = producer.__arrow_c_stream__()
        else:
            capsule = producer.__arrow_c_stream__()
        check_capsule(capsule, ARROW_ARRAY_STREAM, producer)
        if module.partition(".")[0] == "pandas":
            return _pandas_stream_repaired(capsule, producer)
        return capsule


def _pandas_stream_repaired(capsule: object, producer: Any) -> object:
    """A pandas DataFrame's or Series' stream ``capsule`` through :func:`views_at_zero`."""
    pa = pa_module()
    if hasattr(producer, "columns"):  # a DataFrame: a stream of record batches
        data = pa.RecordBatchReader._import_from_c_capsule(capsule)
    else:
        data = pa.ChunkedArray._import_from_c_capsule(capsule)
    return views_at_zero(data).__arrow_c_stream__()


def named_columns(value: Any, kind: Kind) -> list[tuple[str, Any]]:
    """(name, ChunkedArray) for each column of Arrow data ``value`` (a column: itself)."""
    if kind == Kind.COLUMN:
        return [("", read_column(value))]
    table = read_table(value)
    return list(zip(table.column_names, table.columns, strict=True))


def pieces_of(value: Any, kind: Kind) -> Iterator[Any]:
    """The Arrow data of ``value`` as pyarrow pieces, in order: RecordBatches (tables and
    streams, a stream read batch by batch as the loop asks) or Arrays (``Kind.COLUMN``)."""
    pa = pa_module()
    if kind == Kind.COLUMN:
        col = read_column(value)
        yield from col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    elif isinstance(value, pa.Table):
        yield from value.to_batches()
    elif isinstance(value, pa.RecordBatch):
        yield value
    elif is_arrow_stream(value):
        yield from pa.RecordBatchReader.from_stream(value)
    else:
        yield pa.record_batch(value)


def rebatch(
    pieces: Iterable[Any], batch_size: int | None, *, drop_last: bool = False
) -> Iterator[Any]:
    """Tables (or, for Arrays, columns) of exactly ``batch_size`` rows from ``pieces``
    (RecordBatches or Arrays), the last one shorter unless ``drop_last``.

    Pieces are sliced, never copied: a batch that spans pieces is a Table (ChunkedArray)
    of several chunks. ``batch_size=None`` gives each non-empty piece as it comes.
    """
    pa = pa_module()
    held: list[Any] = []
    rows = 0

    def emit(parts: list[Any]) -> Any:
        if isinstance(parts[0], pa.RecordBatch):
            return pa.Table.from_batches(parts)
        return parts[0] if len(parts) == 1 else pa.chunked_array(parts, type=parts[0].type)

    for piece in pieces:
        if not len(piece):
            continue
        if batch_size is None:
            yield emit([piece])
            continue
        offset = 0
        while offset < len(piece):
            take = min(batch_size - rows, len(piece) - offset)
            held.append(piece.slice(offset, take))
            rows += take
            offset += take
            if rows == batch_size:
                yield emit(held)
                held, rows = [], 0
    if held and not drop_last:
        yield emit(held)


def plain_layout(col: Any) -> Any:
    """``col`` (an Array or ChunkedArray) without the layouts many libraries lack, also
    inside structs and lists: a list view rebuilt as a list of the same values, a run-end
    encoded array decoded to its values; any other column as it is. (pyarrow 26's own
    cast of a list view to a list keeps the n-entry offsets buffer, an invalid array, so
    the list is rebuilt here.) Only the arrays on the way to such a layout are new: the
    other fields of a struct, say, are shared."""
    pa = pa_module()
    typ = col.type
    if has_plain_layout(typ):
        return col
    if isinstance(col, pa.ChunkedArray):
        chunks = [plain_layout(c) for c in col.chunks]
        return pa.chunked_array(chunks, type=_plain_type(pa, typ))
    t = pa.types
    pc = require("pyarrow.compute")
    mask = col.is_null() if col.null_count else None
    if t.is_run_end_encoded(typ):
        return plain_layout(decode_runs(col))
    if t.is_struct(typ):
        fields = [plain_layout(col.field(i)) for i in range(typ.num_fields)]  # (at col's rows)
        named = [typ.field(i).with_type(f.type) for i, f in enumerate(fields)]
        return pa.StructArray.from_arrays(fields, fields=named, mask=mask)
    if t.is_list(typ) or t.is_large_list(typ):
        cls = pa.LargeListArray if t.is_large_list(typ) else pa.ListArray
        values = plain_layout(col.values)  # the whole child: col.offsets select from it
        ends = col.offsets
        if mask is not None and ends.offset:  # (from_arrays takes no mask then)
            ends = pa.concat_arrays([ends])
        return cls.from_arrays(ends, values, type=_plain_type(pa, typ), mask=mask)
    if t.is_fixed_size_list(typ):
        size = typ.list_size
        values = plain_layout(col.values.slice(col.offset * size, len(col) * size))
        return pa.FixedSizeListArray.from_arrays(values, type=_plain_type(pa, typ), mask=mask)
    if not (t.is_list_view(typ) or t.is_large_list_view(typ)):
        return col  # (a map or union over such layouts: left to the library to refuse)
    large = t.is_large_list_view(typ)
    sizes = pc.fill_null(pc.list_value_length(col), 0).cast(pa.int64())
    ends = pc.cumulative_sum(sizes) if len(col) else pa.array([], pa.int64())
    offsets = pa.concat_arrays([pa.array([0], pa.int64()), ends])
    flat = plain_layout(pc.list_flatten(col))
    cls = pa.LargeListArray if large else pa.ListArray
    offsets = offsets.cast(pa.int64() if large else pa.int32())
    return cls.from_arrays(offsets, flat, type=_plain_type(pa, typ), mask=mask)


def _plain_type(pa: Any, typ: Any) -> Any:
    """The type :func:`plain_layout` gives data of type ``typ``."""
    t = pa.types
    if has_plain_layout(typ):
        return typ
    if t.is_run_end_encoded(typ):
        return _plain_type(pa, typ.value_type)
    if t.is_struct(typ):
        return pa.struct([f.with_type(_plain_type(pa, f.type)) for f in typ])
    if t.is_map(typ) or t.is_union(typ):
        return typ
    field = typ.value_field.with_type(_plain_type(pa, typ.value_type))
    if t.is_fixed_size_list(typ):
        return pa.list_(field, typ.list_size)
    if t.is_large_list(typ) or t.is_large_list_view(typ):
        return pa.large_list(field)
    return pa.list_(field)


def has_plain_layout(typ: Any) -> bool:
    """Whether a pyarrow type needs no :func:`plain_layout`: no list view and no run-end
    encoding, at the top or nested (a type name is read only for nested types)."""
    t = pa_module().types
    if t.is_list_view(typ) or t.is_large_list_view(typ) or t.is_run_end_encoded(typ):
        return False
    if not t.is_nested(typ):
        return True
    name = str(typ)
    return "list_view<" not in name and "run_end_encoded<" not in name


INT64_MIN = -(2**63)


def _holds_int64_min(pa: Any, col: Any) -> bool:
    """Whether a timestamp or duration Array or ChunkedArray holds INT64_MIN as a value: a
    chunk without nulls by numpy's minimum of its values buffer (1,000 rows: 2 us, against
    14 for pyarrow's cast and min, whose calls cost more than the scan), one with nulls
    by pyarrow's (which skips the null slots, whatever they hold)."""
    np = require("numpy")
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else (col,)
    for chunk in chunks:
        rows = len(chunk)
        if not rows:
            continue
        if chunk.null_count:
            low = require("pyarrow.compute").min(chunk.cast(pa.int64())).as_py()
        else:
            data = chunk.buffers()[1]
            low = np.frombuffer(data, np.int64, count=rows, offset=chunk.offset * 8).min()
        if low == INT64_MIN:
            return True
    return False


def nat_collisions(named: Iterable[tuple[str, Any]]) -> list[Loss]:
    """Timestamp and duration columns holding INT64_MIN as a value, not a null: numpy and
    pandas read that value as NaT, their missing value, so it would silently become
    missing. One scan of each such column (its minimum, at memory bandwidth)."""
    pa = pa_module()
    losses = []
    for name, col in named:
        typ = col.type
        if not (pa.types.is_timestamp(typ) or pa.types.is_duration(typ)) or not len(col):
            continue
        if _holds_int64_min(pa, col):
            why = "INT64_MIN is NaT, the missing value, in numpy and pandas: it becomes missing"
            losses.append(Loss(name, f"{dtype_name(typ)} holding INT64_MIN", "NaT", why))
    return losses
