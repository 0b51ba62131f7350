"""interchange_hub plugin for duckdb: relations as sources and as targets, through Arrow.

``duckdb -> arrow``: the relation's query runs once and duckdb writes the result into new
Arrow buffers (a pyarrow Table); every column is a copy. Describing a relation runs
nothing: the column names and duckdb types come from the relation's bound schema, and
the Arrow type each duckdb type exports as is read from an empty query on a private
connection (cached per schema).

``arrow -> duckdb``: the data is read into a pyarrow Table (a one-shot stream exactly once:
duckdb asks a source for its stream several times per scan) and a relation over that
table is made on a new connection (to an in-memory database private to this plugin),
which lives as long as the relation. duckdb reads the Arrow data into its own vectors
whenever the relation runs, so the step counts as a copy of every column; no pandas is
involved.
"""

from __future__ import annotations

import os
import re
import threading
import weakref
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit
from interchange_hub.adapter import (
    ARROW,
    Adapter,
    Column,
    Context,
    Copy,
    DataInfo,
    Edge,
    Estimate,
    Kind,
    Loss,
    Unroutable,
    has_negative_scale,
    mixed_parts,
    report_losses,
    require,
    tz_of,
)
from interchange_hub.errors import NoRouteError
from interchange_hub.hookspecs import hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from interchange_hub.adapter import Buffer

__all__ = ["DuckDBAdapter", "arrow_dtypes", "register_adapters"]

NAME = "duckdb"
_NEEDS = ("duckdb", "pyarrow")

# How duckdb (default settings) exports its flat types to Arrow, in the hub's type names.
# Other types (nested, ENUM, TIMESTAMP WITH TIME ZONE, whose zone is the connection's) are
# asked of duckdb itself; see arrow_dtypes.
_EXPORTED = {
    "BOOLEAN": "bool",
    "TINYINT": "int8",
    "SMALLINT": "int16",
    "INTEGER": "int32",
    "BIGINT": "int64",
    "UTINYINT": "uint8",
    "USMALLINT": "uint16",
    "UINTEGER": "uint32",
    "UBIGINT": "uint64",
    "HUGEINT": "decimal128(38, 0)",
    "UHUGEINT": "decimal128(38, 0)",
    "FLOAT": "float32",
    "DOUBLE": "float64",
    "VARCHAR": "string",
    "BLOB": "binary",
    "DATE": "date32[day]",
    "TIME": "time64[us]",
    "TIME_NS": "time64[ns]",
    "TIMESTAMP": "timestamp[us]",
    "TIMESTAMP_S": "timestamp[s]",
    "TIMESTAMP_MS": "timestamp[ms]",
    "TIMESTAMP_NS": "timestamp[ns]",
    "INTERVAL": "month_day_nano_interval",
    "UUID": "string",
    "JSON": "string",
    "BIT": "binary",
    "TIME WITH TIME ZONE": "time64[us]",
    '"NULL"': "null",
}
_DECIMAL = re.compile(r"^DECIMAL\((\d+),\s*(\d+)\)$")

# duckdb types whose Arrow export cannot keep them: (what the export gives, what is lost).
_EXPORT_LOSSES = {
    "UUID": ("string", "UUIDs are exported as their 36-character text"),
    "JSON": ("string", "the JSON type is dropped; the text is kept"),
    "BIT": ("binary", "bit strings are exported as duckdb's internal bytes, not as bits"),
    "TIME WITH TIME ZONE": ("time64[us]", "the UTC offset of each time is dropped"),
    "HUGEINT": ("decimal128(38, 0)", "values of 39 digits exceed the decimal's 38 digits"),
    "UHUGEINT": ("decimal128(38, 0)", "values of 39 digits exceed the decimal's 38 digits"),
    "BIGNUM": ("opaque binary extension", "numbers are exported in duckdb's internal encoding"),
    "VARINT": ("opaque binary extension", "numbers are exported in duckdb's internal encoding"),
}
# A flag of this plugin's own (a plugin's flags start with its name and a colon): the
# duckdb type of a column whose export loses information.
_DUCKDB_TYPE = "duckdb:type="

# Arrow types duckdb cannot read at all, wherever they appear (nested too).
_UNREADABLE = {
    "dense_union": "dense unions (cast to a sparse union or split the column)",
    "halffloat": "float16 inside nested types (cast the values to float32)",
    "decimal256": "decimal256 inside nested types (cast the values to decimal128)",
}
_MAX_DECIMAL_DIGITS = 38
_TENSOR = "extension<arrow.fixed_shape_tensor"
_UTC = frozenset({"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Etc/Zulu"})

# Each relation made here keeps its connection and the Arrow table it reads alive; the
# third item is the TimeZone set on that connection ("" when left as duckdb's default).
_KEEP: weakref.WeakKeyDictionary[Any, tuple[Any, Any, str]] = weakref.WeakKeyDictionary()


def _duckdb() -> Any:
    return require("duckdb", "to make duckdb relations")


# The private in-memory database of this plugin, opened once: every relation the hub makes
# gets a connection of its own to it (a cursor: its own session, TimeZone, transactions and
# results). Opening an in-memory database costs about 10 ms, a connection to one 20 us.
# A forked child opens its own (duckdb's state does not survive a fork).
_DATABASE: dict[int, Any] = {}  # process id -> the connection that opened the database
_DATABASE_LOCK = threading.Lock()


def _connect() -> Any:
    """A new connection to the plugin's private database (never one of the user's)."""
    pid = os.getpid()
    with _DATABASE_LOCK:
        if pid not in _DATABASE:  # the parent's is left alone: closing it here is unsafe
            _DATABASE[pid] = _duckdb().connect(":memory:")
        return _DATABASE[pid].cursor()


class DuckDBAdapter(Adapter):
    name = NAME
    module = "duckdb"
    requirement = "duckdb"
    types = ("duckdb.DuckDBPyRelation",)

    def owns(self, obj: object) -> bool:
        return isinstance(obj, _duckdb().DuckDBPyRelation)

    def type_kinds(self) -> Mapping[type, Kind | None]:
        return {_duckdb().DuckDBPyRelation: Kind.TABLE}

    def describe(self, obj: Any) -> DataInfo:
        # The bound schema: no query runs (running one could consume a one-shot source the
        # relation reads, or find the connection busy with an open result).
        names = [str(n) for n in obj.columns]
        types = tuple(str(t) for t in obj.types)
        dtypes = arrow_dtypes(types)
        zone = _zone_of(obj)
        if zone:  # a relation made here: its connection has the data's TimeZone
            dtypes = tuple(_with_zone(d, zone) for d in dtypes)
        cols = tuple(
            Column(name, dtype, -1, -1, -1, _flags(typ))
            for name, dtype, typ in zip(names, dtypes, types, strict=True)
        )
        return DataInfo(Kind.TABLE, cols)

    def buffers(self, obj: Any) -> list[Buffer]:
        return []  # a relation's data lives inside duckdb, where the hub cannot see it

    def concat(self, parts: Sequence[Any]) -> Any:
        """One relation over the parts' rows, in order, on a new connection (duckdb cannot
        union relations of different connections, and each relation the hub makes has its
        own): the Arrow tables the hub's relations read are joined without a copy; a
        relation made elsewhere runs once into Arrow first."""
        if not all(isinstance(p, _duckdb().DuckDBPyRelation) for p in parts):
            raise mixed_parts(parts)
        return _union(parts)

    def edges(self) -> Sequence[Edge]:
        return (
            Edge(NAME, ARROW, self.name, "to_arrow_table", _export_estimate, _export, _NEEDS),
            Edge(ARROW, NAME, self.name, "con.from_arrow", _import_estimate, _import, _NEEDS),
        )


# -- describing ------------------------------------------------------------------------------
def arrow_dtypes(types: Sequence[str]) -> tuple[str, ...]:
    """The hub's name of the Arrow type each duckdb type (as ``str(DuckDBPyType)``) exports as.

    Read with duckdb's default settings: a connection with ``arrow_large_buffer_size``,
    ``arrow_lossless_conversion`` or another ``TimeZone`` exports some types differently.
    A type duckdb cannot be asked about (a user-defined type name) is ``"duckdb <TYPE>"``.
    """
    found: dict[str, str] = {}
    ask = []
    for typ in types:
        decimal = _DECIMAL.match(typ)
        if typ in _EXPORTED:
            found[typ] = _EXPORTED[typ]
        elif decimal:
            found[typ] = f"decimal128({decimal[1]}, {decimal[2]})"
        else:
            ask.append(typ)
    if ask:
        unique = tuple(dict.fromkeys(ask))
        found.update(zip(unique, _asked(unique), strict=True))
    return tuple(found[t] for t in types)


@lru_cache(maxsize=256)
def _asked(types: tuple[str, ...]) -> tuple[str, ...]:
    con = _connect()
    try:
        try:
            return _exported_types(con, types)
        except Exception:  # noqa: BLE001 - ask one type at a time to find the odd one
            found = []
            for typ in types:
                try:
                    found.append(_exported_types(con, (typ,))[0])
                except Exception:  # noqa: BLE001 - a type only the user's connection knows
                    found.append(f"duckdb {typ}")
            return tuple(found)
    finally:
        con.close()


def _exported_types(con: Any, types: tuple[str, ...]) -> tuple[str, ...]:
    select = ", ".join(f'CAST(NULL AS {t}) AS "c{i}"' for i, t in enumerate(types))
    schema = _to_arrow(con.sql(f"SELECT {select} LIMIT 0")).schema
    return tuple(arrowkit.dtype_name(f.type) for f in schema)


def _zone_of(rel: Any) -> str:
    try:
        kept = _KEEP.get(rel)
    except TypeError:  # not weak-referenceable
        return ""
    return kept[2] if kept else ""


def _with_zone(dtype: str, zone: str) -> str:
    """``dtype`` with every zoned timestamp in it (nested ones too) in ``zone``."""
    return _ZONE.sub(lambda _: f"tz={zone}]", dtype)


def _flags(duckdb_type: str) -> frozenset[str]:
    if duckdb_type in _EXPORT_LOSSES:
        return frozenset({_DUCKDB_TYPE + duckdb_type})
    return frozenset()


def _duckdb_type(col: Column) -> str:
    for flag in col.flags:
        if flag.startswith(_DUCKDB_TYPE):
            return flag[len(_DUCKDB_TYPE) :]
    return ""


# -- duckdb -> arrow -------------------------------------------------------------------------
_EXPORT_COPY = "duckdb runs the query and writes the result into new Arrow buffers"


def _export_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    losses = []
    for col in info.columns:
        typ = _duckdb_type(col)
        if typ:
            target, lost = _EXPORT_LOSSES[typ]
            losses.append(Loss(col.name, f"duckdb {typ}", target, lost))
    out = info.but(
        columns=tuple(
            Column(c.name, c.dtype, c.nbytes, c.nulls, c.chunks, c.flags - _flags(_duckdb_type(c)))
            for c in info.columns
        )
    )
    copies = tuple(Copy(c.name, c.nbytes, _EXPORT_COPY) for c in info.columns)
    why = "the relation runs once; its result is materialised as a pyarrow Table"
    return Estimate(out, copies, tuple(losses), why, copies_all=True)


def _export(value: Any, ctx: Context) -> Any:
    return _to_arrow(value)


def _to_arrow(rel: Any) -> Any:
    """A pyarrow Table of the relation's rows: one run, fully drained."""
    fetch = getattr(rel, "to_arrow_table", None)
    if fetch is None:  # duckdb before to_arrow_table: arrow() returned a Table
        fetch = rel.arrow
    return fetch()


def _arrow_of(rel: Any) -> Any:
    """The Arrow table a relation the hub made reads (no query runs), else its rows."""
    try:
        kept = _KEEP.get(rel)
    except TypeError:  # not weak-referenceable: not one of the hub's
        kept = None
    return kept[1] if kept else _to_arrow(rel)


def _union(parts: Sequence[Any]) -> Any:
    pa = arrowkit.pa_module()
    try:
        table = pa.concat_tables([_arrow_of(rel) for rel in parts])  # zero-copy
    except pa.ArrowInvalid:  # the tables differ in type: duckdb's own exports agree
        table = pa.concat_tables([_to_arrow(rel) for rel in parts])
    zone = _zone_of(parts[0])
    con = _connect()
    if zone:  # the parts' connections had the data's TimeZone: so does this one
        quoted = zone.replace("'", "''")
        con.execute(f"SET TimeZone = '{quoted}'")
    rel = con.from_arrow(table)
    try:
        _KEEP[rel] = (con, table, zone)
    except TypeError:  # not weak-referenceable: it keeps its connection itself
        pass
    return rel


# -- arrow -> duckdb -------------------------------------------------------------------------
_IMPORT_COPY = "duckdb reads the Arrow data into its own vectors each time the relation runs"


def _import_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    if info.kind == Kind.TENSOR:
        raise Unroutable(
            "duckdb takes tables and columns, not tensors: a 1-D tensor reaches it as a "
            "column and a 2-D tensor as a table, through the Arrow bridge"
        )
    if not info.columns:
        raise Unroutable("a table without columns cannot become a duckdb relation")
    names = _relation_names(info)
    zone = _time_zone(info.columns)
    copies = []
    losses = []
    for col, name in zip(info.columns, names, strict=True):
        cast, col_losses = _plan_column(col, zone)
        reason = f"{cast}; {_IMPORT_COPY}" if cast else _IMPORT_COPY
        copies.append(Copy(col.name, col.nbytes, reason))
        losses += col_losses
        if name != col.name and info.kind != Kind.COLUMN:
            why = "duckdb renames empty and duplicate column names"
            losses.append(Loss(col.name, f"name {col.name!r}", f"name {name!r}", why))
    if info.kind == Kind.STREAM:
        why = "the stream is read once into a pyarrow Table; a relation over it"
    else:
        why = "a relation over the Arrow data, on a new connection"
    out = DataInfo(
        Kind.TABLE,
        tuple(
            Column(name, c.dtype, c.nbytes, c.nulls, c.chunks)
            for c, name in zip(info.columns, names, strict=True)
        ),
        rows=info.rows,
    )
    return Estimate(out, tuple(copies), tuple(losses), why)


def _relation_names(info: DataInfo) -> list[str]:
    """The column names the relation will have (duckdb's renaming predicted)."""
    if info.kind == Kind.COLUMN:
        return [info.columns[0].name or "values"]  # as arrowkit.table_from_column names it
    names: list[str] = []
    seen: set[str] = set()
    for i, col in enumerate(info.columns):
        name = col.name or f"v{i}"
        base, n = name, 0
        while name.lower() in seen:  # duckdb compares names case-insensitively
            n += 1
            name = f"{base}_{n}"
        seen.add(name.lower())
        names.append(name)
    return names


def _plan_column(col: Column, zone: str) -> tuple[str, list[Loss]]:
    """What importing one column needs: a cast (described) and what the relation loses."""
    dtype, name = col.dtype, col.name
    if has_negative_scale(dtype):
        raise Unroutable(
            f"column {name!r} ({dtype}) has a decimal of a negative scale, which duckdb "
            "cannot read (it fails inside duckdb); cast it to a scale of 0 or more first "
            "(a decimal of precision p and scale -s holds the integers of decimal(p + s, 0))"
        )
    if dtype == "float16":
        lost = "widened to float32: duckdb has no half-precision float (values are kept)"
        return "float16 is cast to float32", [Loss(name, dtype, "FLOAT (float32)", lost)]
    if dtype.startswith("decimal256("):
        digits = int(dtype.split("(")[1].split(",")[0])
        if digits > _MAX_DECIMAL_DIGITS:
            raise Unroutable(
                f"column {name!r} is {dtype}, but duckdb decimals hold at most "
                f"{_MAX_DECIMAL_DIGITS} digits; cast it to decimal128(38, s) or float64 first"
            )
        return "decimal256 is cast to decimal128 (same precision and scale)", []
    for marker, what in _UNREADABLE.items():
        if marker in dtype:
            raise Unroutable(f"column {name!r} ({dtype}): duckdb cannot read {what}")
    if dtype.startswith(_TENSOR):
        return "the tensor column becomes nested fixed-size lists (its buffers kept)", (
            _tensor_losses(name, dtype)
        )
    return "", _import_losses(col, zone)


def _import_losses(col: Column, zone: str) -> list[Loss]:
    if col.dtype.startswith(_NESTED):
        return _nested_losses(col, zone)
    return _top_level_losses(col, zone)


def _top_level_losses(col: Column, zone: str) -> list[Loss]:
    dtype, name = col.dtype, col.name
    if dtype.startswith("timestamp[") and "tz=" in dtype:
        own = tz_of(dtype)
        if own != zone and not {own, zone} <= _UTC:
            lost = (
                f"the time zone {own} is replaced by {zone} (a duckdb connection has one "
                "TimeZone; the instants are kept)"
            )
            return [Loss(name, dtype, f"TIMESTAMP WITH TIME ZONE ({zone})", lost)]
        return []
    if dtype.startswith("duration["):
        lost = "durations become duckdb INTERVALs, read back as month_day_nano_interval"
        if dtype == "duration[ns]":
            lost += "; nanoseconds are truncated to microseconds"
        return [Loss(name, dtype, "INTERVAL", lost)]
    if dtype == "month_day_nano_interval":
        lost = "nanoseconds are truncated to microseconds (duckdb INTERVAL resolution)"
        return [Loss(name, dtype, "INTERVAL", lost)]
    if dtype.startswith("dictionary<"):
        value = dtype.split("values=", 1)[1].rsplit(", indices=", 1)[0]
        lost = "the dictionary encoding (the categories and their order) is dropped"
        # what duckdb does to the values as to a column of their type (durations, zones)
        inner = _import_losses(Column(name, value, col.nbytes, col.nulls), zone)
        if not inner:
            return [Loss(name, dtype, f"plain {value}", lost + "; the values are kept")]
        why = "; ".join([lost, *(i.lost for i in inner)])
        return [Loss(name, dtype, inner[0].target, why)]
    if dtype.startswith("fixed_size_binary["):
        return [Loss(name, dtype, "BLOB (binary)", "the fixed width is dropped")]
    if dtype.startswith("extension<"):
        return [_extension_loss(name, dtype)]
    return []


_NESTED = (
    "list<",
    "large_list<",
    "fixed_size_list<",
    "list_view<",
    "large_list_view<",
    "struct<",
    "map<",
    "sparse_union<",
    "run_end_encoded<",
)
_ZONE = re.compile(r"tz=([^\]]+)\]")
# What duckdb does to a type inside a nested one: the same as at the top level.
_NESTED_CHANGES = (
    ("duration[", "durations become INTERVALs (read back as month_day_nano_interval)"),
    ("month_day_nano_interval", "intervals are truncated to microseconds"),
    ("dictionary<", "dictionaries are decoded (the categories and their order are dropped)"),
    ("fixed_size_binary[", "fixed-size binaries become BLOBs (the width is dropped)"),
    ("extension<", "Arrow extension types are dropped for their storage (uuid: strings)"),
)


def _nested_losses(col: Column, zone: str) -> list[Loss]:
    """What duckdb changes inside a list, struct, map or union: one Loss for the column."""
    dtype = col.dtype
    lost = [what for marker, what in _NESTED_CHANGES if marker in dtype]
    if "duration[ns]" in dtype:
        lost[0] += "; nanoseconds are truncated to microseconds"
    zones = {z for z in _ZONE.findall(dtype) if z != zone and not {z, zone} <= _UTC}
    lost += [
        f"the time zone {z} is replaced by {zone} (the instants are kept)" for z in sorted(zones)
    ]
    if not lost:
        return []
    why = "inside the nested type: " + "; ".join(lost)
    return [Loss(col.name, dtype, "the duckdb nested type", why)]


def _tensor_losses(name: str, dtype: str) -> list[Loss]:
    """A fixed-shape tensor column keeps its shape as nested arrays (DOUBLE[4][3])."""
    losses = []
    if "permutation=" in dtype:
        lost = "the permutation is dropped: each row holds the tensor in its storage order"
        losses.append(Loss(name, dtype, "nested fixed-size LIST", lost))
    if "dim_names=" in dtype:
        losses.append(Loss(name, dtype, "nested fixed-size LIST", "dimension names are dropped"))
    return losses


def _extension_loss(name: str, dtype: str) -> Loss:
    if dtype == "extension<arrow.uuid>":
        return Loss(name, dtype, "UUID", "UUIDs come back as 36-character strings")
    if dtype == "extension<arrow.json>":
        return Loss(name, dtype, "JSON", "the JSON extension type comes back as plain string")
    lost = "the Arrow extension type is dropped; duckdb keeps its storage values"
    return Loss(name, dtype, "its storage type", lost)


def _time_zone(columns: Sequence[Column]) -> str:
    """The TimeZone the new connection gets: the first timestamp column's named zone, else
    the first named zone inside a nested column, else UTC.

    duckdb accepts IANA names (``America/New_York``, ``Etc/GMT-1``) but not fixed offsets
    (``+01:00``); columns with another zone lose theirs (reported as a Loss). A connection
    has one TimeZone, which every zoned timestamp it exports carries, nested ones too.
    """
    top = [c for c in columns if c.dtype.startswith("timestamp[")]
    for col in [*top, *(c for c in columns if c not in top)]:
        for zone in _ZONE.findall(col.dtype):
            if zone[0] not in "+-":
                return str(zone)
    return "UTC"


def _import(value: Any, ctx: Context) -> Any:
    info = ctx.info
    # Read once: duckdb calls __arrow_c_stream__ several times per scan, and a one-shot
    # stream would yield nothing (or fail) after the first.
    table = arrowkit.read(value, Kind.TABLE, info)
    table = _durations_exportable(_readable(table), ctx.strict)
    con = _connect()
    zone = ""
    if any("tz=" in c.dtype for c in info.columns):
        zone = _set_time_zone(con, _time_zone(info.columns), info, ctx.strict)
    rel = con.from_arrow(table)
    try:
        _KEEP[rel] = (con, table, zone)
    except TypeError:  # not weak-referenceable: it keeps its connection itself
        pass
    return rel


def _set_time_zone(con: Any, zone: str, info: DataInfo, strict: bool) -> str:
    """Give the connection the data's zone; if duckdb does not know it, UTC (reported)."""
    quoted = zone.replace("'", "''")
    try:
        con.execute(f"SET TimeZone = '{quoted}'")
        return zone
    except Exception:  # noqa: BLE001 - a zone name ICU lacks: fall back to UTC, reported
        con.execute("SET TimeZone = 'UTC'")
    losses = [
        Loss(c.name, c.dtype, "TIMESTAMP WITH TIME ZONE (UTC)", f"duckdb does not know {zone}")
        for c in info.columns
        if f"tz={zone}]" in c.dtype
    ]
    report_losses(losses, NAME, strict)
    return "UTC"


def _readable(table: Any) -> Any:
    """``table`` with the top-level types duckdb cannot read turned into ones it can."""
    pa = arrowkit.pa_module()
    for i, field in enumerate(table.schema):
        if isinstance(field.type, pa.FixedShapeTensorType):
            table = table.set_column(i, field.name, _nested(pa, table.column(i), field.type))
    fields = []
    for field in table.schema:
        typ = field.type
        if pa.types.is_float16(typ):
            typ = pa.float32()
        elif pa.types.is_decimal256(typ):
            if typ.precision > _MAX_DECIMAL_DIGITS:  # (seen once read: Python Decimals)
                raise NoRouteError(
                    f"column {field.name!r} is {typ}, but duckdb decimals hold at most "
                    f"{_MAX_DECIMAL_DIGITS} digits; cast it to decimal128(38, s) or float64 "
                    "first"
                )
            typ = pa.decimal128(typ.precision, typ.scale)
        fields.append(field.with_type(typ))
    schema = pa.schema(fields, metadata=table.schema.metadata)
    return table if schema == table.schema else table.cast(schema)


# duckdb exports an INTERVAL as month_day_nano_interval: its microseconds times 1000 must
# fit in 64 bits (about 292 years), or the relation cannot be read back at all.
_MAX_INTERVAL_US = (2**63 - 1) // 1000
_US_PER_TICK = {"s": 10**6, "ms": 10**3, "us": 1}  # ns: duckdb truncates it to us: it fits


def _durations_exportable(table: Any, strict: bool) -> Any:
    """``table`` with its duration columns as a relation can read them back: the values
    under null slots zeroed (pandas' NaT leaves INT64_MIN there, which duckdb converts as
    well) and the values beyond duckdb's range null, reported per column."""
    pa = arrowkit.pa_module()
    losses = []
    for i, field in enumerate(table.schema):
        if not pa.types.is_duration(field.type) or field.type.unit == "ns":
            continue
        limit = _MAX_INTERVAL_US // _US_PER_TICK[field.type.unit]
        fixed, beyond = [], 0
        for chunk in table.column(i).chunks:
            new, nulled = _in_interval_range(pa, chunk, limit)
            fixed.append(new)
            beyond += nulled
        if any(new is not old for new, old in zip(fixed, table.column(i).chunks, strict=True)):
            table = table.set_column(i, field, pa.chunked_array(fixed, field.type))
        if beyond:
            why = (
                f"{beyond} values beyond +-{limit} {field.type.unit} (about 292 years) become null"
            )
            losses.append(Loss(field.name, str(field.type), "INTERVAL", why))
    report_losses(losses, NAME, strict)
    return table


def _in_interval_range(pa: Any, chunk: Any, limit: int) -> tuple[Any, int]:
    """``chunk`` (a duration array) with every slot within +-limit ticks, the null ones 0;
    and how many valid values had to become null. The chunk itself when it is fine."""
    import pyarrow.compute as pc

    if not len(chunk):
        return chunk, 0
    # The ticks as stored, null slots too (compute functions skip nulls).
    raw = pa.Array.from_buffers(pa.int64(), len(chunk), [None, chunk.buffers()[1]], 0, chunk.offset)
    low, high = pc.min_max(raw).values()
    if -limit <= low.as_py() and high.as_py() <= limit:
        return chunk, 0
    inside = pc.and_(pc.greater_equal(raw, -limit), pc.less_equal(raw, limit))
    valid = chunk.is_valid()
    keep = pc.and_(inside, valid)
    beyond = int(pc.sum(pc.and_(pc.invert(inside), valid)).as_py() or 0)
    ticks = pc.if_else(keep, raw, pa.scalar(0, pa.int64()))
    # keep (offset 0) is the validity bitmap: a boolean array's values are bits
    out = pa.Array.from_buffers(chunk.type, len(chunk), [keep.buffers()[1], ticks.buffers()[1]])
    return out, beyond


def _nested(pa: Any, column: Any, tensor: Any) -> Any:
    """A fixed-shape tensor column as nested fixed-size lists over the same values.

    duckdb reads the extension type as one flat list per row; nesting keeps the shape.
    """
    shape = list(tensor.shape)
    if tensor.permutation is not None:
        shape = [shape[p] for p in tensor.permutation]  # the storage (physical) order
    typ = tensor.value_type
    for dim in reversed(shape):
        typ = pa.list_(typ, dim)
    chunks = []
    for chunk in column.chunks:
        storage = chunk.storage
        size = storage.type.list_size
        nested = storage.values.slice(storage.offset * size, len(storage) * size)
        for dim in reversed(shape[1:]):
            nested = pa.FixedSizeListArray.from_arrays(nested, dim)
        mask = storage.is_null() if storage.null_count else None
        chunks.append(pa.FixedSizeListArray.from_arrays(nested, shape[0], mask=mask))
    return pa.chunked_array(chunks, type=typ)


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(DuckDBAdapter())
