"""interchange_hub plugin for Hugging Face ``datasets``: ``Dataset`` and ``Column`` as
sources, ``to="datasets"`` (alias ``"hf"``) and ``to=datasets.Dataset`` as targets.

A ``Dataset`` holds its rows in a pyarrow Table (``ds.data.table``; memory-mapped from
its Arrow files after ``load_from_disk``), so both edges pass Arrow memory through:

``datasets -> arrow``: the Dataset's rows as a pyarrow Table, sharing the buffers. Three
things change what that means, and each is planned from the description:

* an **indices mapping** (``ds._indices``, left by ``select``, ``shuffle``, ``filter``,
  ``sort``, ``train_test_split``...): the underlying table is *not* the Dataset's rows,
  so the rows are gathered with pyarrow's ``Table.take`` into new buffers (a copy of
  every column, one chunk each; dictionary columns keep their dictionary) -- what
  ``ds.flatten_indices()`` computes, without its cache file;
* **feature types with no Arrow equivalent** (``ClassLabel``, ``Image``, ``Audio``,
  ``Array2D``..., any feature other than ``Value``, ``List``, ``LargeList``, dicts and
  translations): the values are exported as datasets stores them (class ids, the encoded
  bytes and path, nested lists) and what the feature adds (label names, decoding, a fixed
  shape) is reported as a loss (``LossyConversionWarning``; ``strict=True`` refuses);
  datasets' ``Array2D``-``Array5D`` extension columns are cast to their storage (no copy);
* the ``b"huggingface"`` schema metadata is dropped, so the Arrow data says nothing it
  no longer is.

``arrow -> datasets``: ``datasets.Dataset(table, fingerprint=<random>)`` over the Arrow
table, no copy. A fingerprint is passed because ``Dataset`` would otherwise hash every
byte of the data to make one (a second per 160 MB). Dictionary columns are decoded with
pyarrow's cast (a copy and a loss; datasets' own cast corrupts sliced lists), so that
``Dataset()`` has nothing left to cast; types datasets has no feature for (maps, unions,
run-end encoded, list views, intervals, extension types) and repeated column names are
refused before anything runs.
"""

from __future__ import annotations

import json
import re
import weakref
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit
from interchange_hub.adapter import (
    ARROW,
    Adapter,
    Buffer,
    Column,
    Context,
    Copy,
    DataInfo,
    Edge,
    Estimate,
    Flag,
    IdentityKeys,
    Kind,
    Loss,
    Unroutable,
    require,
)
from interchange_hub.errors import ConversionError, UnsupportedObjectError
from interchange_hub.hookspecs import hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Mapping, Sequence

__all__ = ["DatasetsAdapter", "DatasetsRefusal", "register_adapters"]

NAME = "datasets"
_NEEDS = ("datasets", "pyarrow")
SUPPORTED = ("datasets.Dataset", "datasets.Column")

# Column flags of this plugin (a plugin's own flags start with its name and a colon).
INDICES = "datasets:indices"  # the Dataset has an indices mapping: its rows are gathered
MAPPED = "datasets:mapped"  # the table is memory-mapped from the Dataset's Arrow files
STORAGE = "datasets:storage="  # + the dtype an Array2D-5D extension column exports as
LOSS = "datasets:loss="  # + JSON [feature, what is lost]: a feature with no Arrow equivalent

_TAKE = (
    "its rows are picked through the indices mapping (from select, shuffle, filter, sort...) "
    "with pyarrow Table.take, into new buffers"
)
_DECODED = (
    "datasets stores dictionary columns as their values: the column is decoded with "
    "pyarrow's cast, into new buffers"
)
# Arrow types no datasets feature holds (Features.from_arrow_schema raises on them),
# found anywhere in a type name, with what to do instead.
_NO_FEATURE = {
    "map<": ("maps", "cast the column to a list of structs first"),
    "sparse_union": ("unions", "split the column into one column per type first"),
    "dense_union": ("unions", "split the column into one column per type first"),
    "run_end_encoded": ("run-end encoding", "decode it first (cast it to its value type)"),
    "list_view": ("list views", "cast the column to a list first"),
    "_interval": ("intervals", "cast the column to a duration or a struct first"),
    "decimal32(": ("32-bit decimals", "cast the column to decimal128 first"),
    "decimal64(": ("64-bit decimals", "cast the column to decimal128 first"),
}
# Extension types other than datasets' own (Array2D-5D), which it reads back.
_FOREIGN_EXTENSION = re.compile(r"extension<(?!datasets\.)")
# Features that add nothing to their Arrow type: the values and their meaning are kept.
_PLAIN = frozenset({"Value", "List", "LargeList", "Sequence", "Translation"})
_PLAIN |= {"TranslationVariableLanguages"}
_MAX_NAMES = 5  # label names a loss message lists before "..."


def _ds() -> Any:
    return require("datasets", "to convert Hugging Face datasets")


# datasets.Dataset, once datasets is imported (the route key's test of type, read
# without a call to _ds: 0.1 us)
_DATASET: Any = None


def _dataset_class() -> Any:
    global _DATASET
    _DATASET = _ds().Dataset
    return _DATASET


class DatasetsRefusal(UnsupportedObjectError):
    """A datasets object the hub does not convert (a DatasetDict, an IterableDataset),
    with a message saying what to convert instead."""

    def __init__(self, obj: object, message: str) -> None:
        super().__init__(obj, SUPPORTED)
        self.args = (message,)


class DatasetsAdapter(Adapter):
    name = NAME
    module = "datasets"
    requirement = "datasets"
    aliases = ("hf",)
    types = SUPPORTED

    def owns(self, obj: object) -> bool:
        return isinstance(obj, _owned_types())

    def type_kinds(self) -> Mapping[type, Kind | None]:
        return {_ds().Dataset: Kind.TABLE}

    def __init__(self) -> None:
        # A Dataset's Arrow table is immutable, and its features are replaced, not edited,
        # by the transforms (each returns a new Dataset): both are keyed once per object.
        # A Dataset's table (datasets' wrapper of it) is keyed once: its Arrow key and
        # whether it is memory-mapped (list_table_cache_files walks it: 1-2 us a call).
        self._tables = IdentityKeys(_table_key)
        self._features = IdentityKeys(_features_key)
        # (their lookups as plain functions: 0.25 us less a call than the tables' __call__)
        self._table_key = self._tables.lookup()
        self._features_key = self._features.lookup()

    def route_key(self, obj: Any) -> Hashable | None:
        """What describe reads of a Dataset without an indices mapping (one would take a
        scan: the nulls of the rows it picks): its table's key (schema, nulls, chunks),
        its features and whether it is memory-mapped. Columns and mapped rows: None."""
        if type(obj) is not (_DATASET or _dataset_class()) or obj._indices is not None:
            return None
        table = self._table_key(obj._data)
        features = self._features_key(_features(obj))
        if table is None or features is None:
            return None
        return (table, features)

    def describe(self, obj: Any) -> DataInfo:
        dataset, name = _source(obj)
        table = dataset.data.table
        names = [name] if name is not None else table.column_names
        indices = dataset._indices
        rows = len(dataset)
        taken = None if indices is None else _contiguous(indices.column(0))
        mapped = bool(dataset.cache_files)  # its tables are memory-mapped Arrow files
        features = _features(dataset)
        columns = []
        for col_name in names:
            arr = table.column(col_name)
            col = arrowkit.describe_column(arr, col_name).columns[0]
            flags = set(col.flags)
            plain = _plain_type(arrowkit.pa_module(), arr.type)
            if plain != arr.type:
                flags.add(STORAGE + arrowkit.dtype_name(plain))
            for lost in _feature_losses(features[col_name]):
                flags.add(LOSS + json.dumps(lost))
            if mapped:
                flags.add(MAPPED)
            if taken is not None:
                flags.add(INDICES)
                share = rows / len(table) if len(table) else 0.0
                col = replace(col, nbytes=int(col.nbytes * share), nulls=_taken_nulls(arr, taken))
            columns.append(replace(col, flags=frozenset(flags)))
        kind = Kind.TABLE if name is None else Kind.COLUMN
        return DataInfo(kind, tuple(columns), rows=rows)

    def buffers(self, obj: Any) -> list[Buffer]:
        try:
            dataset, name = _source(obj)
        except DatasetsRefusal:
            return []
        table = dataset.data.table
        data = table if name is None else table.column(name)
        found = arrowkit.buffers(data)
        if dataset._indices is not None:
            found += arrowkit.buffers(dataset._indices.column(0))
        return found

    def concat(self, parts: Sequence[Any]) -> Any:
        """``datasets.concatenate_datasets(parts)``: zero-copy, the result's table is a
        ``ConcatenationTable`` of the parts' tables (indices mappings are joined too)."""
        ds = _ds()
        if not all(isinstance(p, ds.Dataset) for p in parts):
            names = ", ".join(
                dict.fromkeys(
                    f"{type(p).__module__.split('.')[0]}.{type(p).__qualname__}" for p in parts
                )
            )
            raise ConversionError(
                f"cannot join {len(parts)} partitions of {names}: only Datasets are joined, "
                "and the results of one conversion share one type; take them one by one with "
                ".partitions()"
            )
        return ds.concatenate_datasets(list(parts))

    def edges(self) -> Sequence[Edge]:
        return (
            Edge(
                NAME,
                ARROW,
                self.name,
                "Dataset.data.table",
                _export_estimate,
                _export,
                _NEEDS,
                bind=_export_bind,
            ),
            Edge(
                ARROW, NAME, self.name, "datasets.Dataset(table)", _import_estimate, _import, _NEEDS
            ),
        )


# -- what a datasets object holds ----------------------------------------------------------
_OWNED: tuple[str, ...] = ("Dataset", "Column", "DatasetDict", "IterableDataset")
_OWNED += ("IterableDatasetDict", "IterableColumn")


def _owned_types() -> tuple[type, ...]:
    """The datasets types this adapter owns; the dicts and the iterable kinds only to be
    refused with a useful message. (``Column`` and ``IterableColumn`` are datasets 4.)"""
    ds = _ds()
    return tuple(getattr(ds, n) for n in _OWNED if isinstance(getattr(ds, n, None), type))


def _source(obj: Any) -> tuple[Any, str | None]:
    """The Dataset whose table holds ``obj``'s data, and the column's name (None: all)."""
    ds = _ds()
    if isinstance(obj, ds.Dataset):
        return obj, None
    column = getattr(ds, "Column", None)
    if column is not None and isinstance(obj, column) and isinstance(obj.source, ds.Dataset):
        return obj.source, str(obj.column_name)
    if column is not None and isinstance(obj, column):
        raise DatasetsRefusal(
            obj,
            f"cannot convert the datasets Column {obj.column_name!r}: it is a field of a "
            "struct column; convert the struct column itself, or flatten the dataset first "
            "(ds.flatten() names the fields 'parent.field')",
        )
    if isinstance(obj, (ds.DatasetDict, ds.IterableDatasetDict)):
        splits = list(obj)
        first = splits[0] if splits else "train"
        raise DatasetsRefusal(
            obj,
            f"cannot convert a {type(obj).__name__}: it holds {len(splits)} split(s) "
            f"({', '.join(map(repr, splits)) or 'none'}); convert one of them, e.g. "
            f"ih.convert(ds[{first!r}], ...)",
        )
    raise DatasetsRefusal(
        obj,
        f"cannot convert a datasets {type(obj).__name__}: it streams examples and holds no "
        "Arrow table to share; materialise it first (Dataset.from_generator(lambda: "
        "(yield from ids), features=ids.features)), or convert its Arrow batches, "
        "ids.with_format('arrow').iter(batch_size=...), one by one",
    )


def _features_key(features: Any) -> Hashable | None:
    """A Features object as text (its dict form, sorted), for the route key."""
    try:
        return json.dumps(features.to_dict(), sort_keys=True, default=str)
    except (AttributeError, TypeError, ValueError):
        return None


def _table_key(data: Any) -> Hashable | None:
    """The route key of a Dataset's table without an indices mapping (``Dataset._data``):
    its Arrow table's, and whether it is memory-mapped, as ``Dataset.cache_files`` says."""
    key = arrowkit.route_key(data.table)
    if key is None:
        return None
    tables = require("datasets.table", "to convert Hugging Face datasets")
    return (key, bool(tables.list_table_cache_files(data)))


def _features(dataset: Any) -> Any:
    """The Dataset's features, read without the deep copy ``Dataset.features`` makes
    (from its ``_info``: attribute reads in a try, 0.1 us less than getattr's defaults
    on the route key's path)."""
    try:
        features = dataset._info.features
    except AttributeError:
        features = None
    return features if features is not None else dataset.features


def _contiguous(indices: Any) -> Any:
    """The indices as one pyarrow Array (take then gives one chunk per column)."""
    if indices.num_chunks == 1:
        return indices.chunk(0)
    return indices.combine_chunks()


def _taken_nulls(arr: Any, taken: Any) -> int:
    """The nulls among the rows an indices mapping picks from ``arr`` (exact)."""
    if arr.null_count == 0:
        return 0
    if arr.null_count == len(arr):
        return len(taken)
    pc = require("pyarrow.compute")
    return int(pc.sum(pc.take(pc.is_null(arr), taken)).as_py() or 0)


def _plain_type(pa: Any, typ: Any) -> Any:
    """``typ`` with datasets' Array2D-5D extension types replaced by their storage."""
    t = pa.types
    if isinstance(typ, pa.BaseExtensionType):
        return _plain_type(pa, typ.storage_type)
    if t.is_large_list(typ):
        return pa.large_list(typ.value_field.with_type(_plain_type(pa, typ.value_type)))
    if t.is_fixed_size_list(typ):
        field = typ.value_field.with_type(_plain_type(pa, typ.value_type))
        return pa.list_(field, typ.list_size)
    if t.is_list(typ):
        return pa.list_(typ.value_field.with_type(_plain_type(pa, typ.value_type)))
    if t.is_struct(typ):
        return pa.struct([f.with_type(_plain_type(pa, f.type)) for f in typ])
    return typ


def _feature_losses(feature: Any) -> list[tuple[str, str]]:
    """(feature, what is lost) for each feature in ``feature`` with no Arrow equivalent."""
    if isinstance(feature, dict):
        return [lost for sub in feature.values() for lost in _feature_losses(sub)]
    if isinstance(feature, (list, tuple)):  # the legacy [feature] spelling of a list
        return [lost for sub in feature for lost in _feature_losses(sub)]
    kind = type(feature).__name__
    if kind in _PLAIN:
        inner = getattr(feature, "feature", None)
        return _feature_losses(inner) if inner is not None else []
    if kind == "ClassLabel":
        names = list(feature.names or ())
        shown = ", ".join(map(repr, names[:_MAX_NAMES])) + (", ..." if len(names) > 5 else "")
        lost = f"the label names ({shown}) are dropped; the class ids are kept"
        return [(f"datasets ClassLabel({len(names)} names)", lost)]
    if kind.startswith("Array") and hasattr(feature, "shape"):
        spec = f"{kind}(shape={tuple(feature.shape)}, dtype={feature.dtype!r})"
        lost = "the fixed shape is dropped: each value is nested lists (its Arrow storage)"
        return [(f"datasets {spec}", lost)]
    lost = (
        f"the {kind} feature is dropped: the values are kept as datasets stores them "
        "(for media: the encoded bytes and the path), not decoded"
    )
    return [(f"datasets {kind}", lost)]


# -- datasets -> arrow -------------------------------------------------------------------------
def _export_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    columns, copies, losses = [], [], []
    gathered = mapped = False
    batches = max((c.chunks for c in info.columns), default=1)
    for col in info.columns:
        flags, dtype = set(col.flags), col.dtype
        for flag in col.flags:
            if flag.startswith(STORAGE):
                dtype = flag.removeprefix(STORAGE)
                flags.discard(flag)
        for flag in col.flags:
            if flag.startswith(LOSS):
                feature, lost = json.loads(flag.removeprefix(LOSS))
                losses.append(Loss(col.name, feature, dtype, lost))
                flags.discard(flag)
        mapped = mapped or MAPPED in flags
        flags.discard(MAPPED)
        chunks = col.chunks
        if INDICES in flags:
            gathered = True
            copies.append(Copy(col.name, col.nbytes, _TAKE))
            flags -= {INDICES, Flag.SLICED}
            chunks = 1
        columns.append(replace(col, dtype=dtype, chunks=chunks, flags=frozenset(flags)))
    out = info.but(columns=tuple(columns))
    if gathered:
        why = "the indices mapping is applied: the rows are gathered with Table.take"
    elif mapped:
        why = (
            f"the Dataset's Arrow table, memory-mapped from its files ({batches} record "
            "batches): the buffers are the mapped file"
        )
    else:
        why = "the Dataset's own Arrow table (ds.data.table), passed as it is"
    # Table.take writes new buffers, except for a dictionary column's dictionary.
    fresh = gathered and not any("dictionary<" in c.dtype for c in info.columns)
    return Estimate(out, tuple(copies), tuple(losses), why, copies_all=fresh)


def _export_bind(ctx: Context) -> Any:
    """:func:`_export` for the hot path: a Dataset without an indices mapping whose columns
    hold no extension types (the plan's columns say it: no storage to cast to) is its
    table, read from its slot, with datasets' own schema metadata dropped (1 us, against
    7 us through the schema rebuilt and compared on every call). Anything else (a Column,
    an indices mapping) as :func:`_export` takes it."""
    if any(f.startswith(STORAGE) for c in ctx.info.columns for f in c.flags):
        return lambda value: _export(value, ctx)
    dataset = _ds().Dataset
    stripped = _Stripped()

    def run(value: Any) -> Any:
        if type(value) is not dataset or value._indices is not None:
            return _export(value, ctx)
        return stripped(value._data)

    return run


class _Stripped:
    """The Arrow table of a Dataset's table (``Dataset._data``) without datasets' own
    metadata, made once per table while it lives (it is immutable): a repeated export
    returns the same pyarrow Table, as ``ds.data.table`` does, instead of a new one
    (``replace_schema_metadata``: 1-2 us a call)."""

    __slots__ = ("_made",)

    def __init__(self) -> None:
        self._made: dict[int, tuple[weakref.ref[Any], Any]] = {}

    def __call__(self, data: Any) -> Any:
        made = self._made
        entry = made.get(id(data))
        if entry is not None and entry[0]() is data:
            return entry[1]
        out = _without_own_metadata(data.table)
        ident = id(data)

        def forget(ref: weakref.ref[Any]) -> None:
            if made.get(ident, (None,))[0] is ref:
                made.pop(ident, None)

        try:
            ref = weakref.ref(data, forget)
        except TypeError:
            return out
        if len(made) >= _MOST_STRIPPED:
            made.clear()
        made[ident] = (ref, out)
        return out


_MOST_STRIPPED = 64  # tables kept stripped; past this, the table starts over


_OWN_METADATA = b"huggingface"  # datasets' features, as JSON: not the data's


def _without_own_metadata(table: Any) -> Any:
    """``table`` without datasets' own schema metadata (the rest kept)."""
    metadata = table.schema.metadata
    if not metadata or _OWN_METADATA not in metadata:
        return table
    rest = {k: v for k, v in metadata.items() if k != _OWN_METADATA}
    return table.replace_schema_metadata(rest or None)


def _export(value: Any, ctx: Context) -> Any:
    dataset, name = _source(value)
    pa = arrowkit.pa_module()
    table = dataset.data.table
    if name is not None:
        table = table.select([name])
    if dataset._indices is not None:
        table = table.take(_contiguous(dataset._indices.column(0)))
    schema = pa.schema([f.with_type(_plain_type(pa, f.type)) for f in table.schema])
    if not schema.equals(table.schema):
        table = table.cast(schema)  # extension -> storage: the same buffers
    table = _without_own_metadata(table)
    return table if name is None else table.column(0)


# -- arrow -> datasets -------------------------------------------------------------------------
def _import_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    if info.kind == Kind.TENSOR:
        raise Unroutable("datasets takes tensors through the Arrow bridge, as columns")
    if not info.columns:
        raise Unroutable("a Dataset needs at least one column")
    names = [(c.name or "values") if info.kind == Kind.COLUMN else c.name for c in info.columns]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise Unroutable(
            f"datasets refuses repeated column names ({', '.join(map(repr, repeated))}); "
            "rename the columns first"
        )
    copies, losses, columns = [], [], []
    for col, name in zip(info.columns, names, strict=True):
        for marker, (what, fix) in _NO_FEATURE.items():
            if marker in col.dtype:
                raise Unroutable(
                    f"column {col.name!r} ({col.dtype}): datasets has no feature type for "
                    f"{what}; {fix}"
                )
        if _FOREIGN_EXTENSION.search(col.dtype):
            raise Unroutable(
                f"column {col.name!r} ({col.dtype}): datasets has no feature type for Arrow "
                "extension types; convert the column to its storage type first"
            )
        dtype = col.dtype
        if "dictionary<" in dtype:
            dtype = _decoded(dtype)
            copies.append(Copy(col.name, col.nbytes, _DECODED))
            lost = "the dictionary encoding is dropped; the values are kept"
            losses.append(Loss(col.name, col.dtype, dtype, lost))
        columns.append(Column(name, dtype, col.nbytes, col.nulls, col.chunks, col.flags))
    if info.kind == Kind.STREAM:
        why = "the stream is read once into a pyarrow Table; a Dataset over it"
    else:
        why = "a Dataset over the Arrow table (InMemoryTable), fingerprinted without hashing"
    out = DataInfo(Kind.TABLE, tuple(columns), rows=info.rows)
    return Estimate(out, tuple(copies), tuple(losses), why)


def _decoded(dtype: str) -> str:
    """The type name of a dictionary type's values, also nested (list<dictionary<...>>)."""
    while "dictionary<values=" in dtype:
        start = dtype.index("dictionary<values=")
        depth, end = 0, start + len("dictionary<")
        for end in range(start + len("dictionary<"), len(dtype)):
            depth += {"<": 1, ">": -1}.get(dtype[end], 0)
            if depth < 0:
                break
        inner = dtype[start + len("dictionary<values=") : end]
        dtype = dtype[:start] + inner.split(", indices=")[0] + dtype[end + 1 :]
    return dtype


def _import(value: Any, ctx: Context) -> Any:
    ds = _ds()
    table = arrowkit.read(value, Kind.TABLE, ctx.info)  # a column: a table named after it
    # Cast to the schema datasets keeps (dictionaries decoded, every field nullable) with
    # pyarrow: Dataset() would cast with datasets' own nested cast, which corrupts sliced
    # lists (an empty list at a slice's start comes back as [None]). Only the decoded
    # columns get new buffers; a change of nullability alone keeps them.
    table = _decode_dictionaries(table)
    schema = ds.Features.from_arrow_schema(table.schema).arrow_schema
    if not table.schema.equals(schema):
        table = _cast(table, schema)
    fingerprint = ds.fingerprint.generate_random_fingerprint()
    return ds.Dataset(table, fingerprint=fingerprint)


def _cast(table: Any, schema: Any) -> Any:
    """``table.cast(schema)``; pyarrow 26 casts no dictionary of string views nested in a
    struct or list (polars' Categorical in a struct) to its values: such a table goes
    through large strings (the dictionary's values, then the decoded ones) and back."""
    pa = arrowkit.pa_module()
    try:
        return table.cast(schema)
    except pa.ArrowNotImplementedError:
        if not arrowkit.views_left(table):
            raise
    large = pa.schema([f.with_type(arrowkit.large_views(pa, f.type)) for f in schema])
    return arrowkit.without_views(table).cast(large).cast(schema)


def _decode_dictionaries(table: Any) -> Any:
    """``table`` with its dictionary columns decoded chunk by chunk: pyarrow 26 can neither
    cast nor ``take`` a dictionary of string views (polars' Categoricals), also nested in
    its values (a dictionary of structs of them), to its values, so those values are
    gathered as large strings (or binaries) and made views again
    (``arrowkit.decode_dictionary``). Nested dictionaries are left to the cast."""
    pa = arrowkit.pa_module()
    for i, field in enumerate(table.schema):
        if pa.types.is_dictionary(field.type):
            value = field.type.value_type
            decoded = arrowkit.decode_dictionary(table.column(i))
            table = table.set_column(i, field.with_type(value), decoded)
    return table


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(DatasetsAdapter())
