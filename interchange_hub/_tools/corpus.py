"""The type corpus: one column of every Arrow type the hub must carry, and its variants.

Used by the fidelity tests, the type-mapping document and the fuzzer. Values are random
(seeded), never all zeros; nulls fall on every third row.
"""

from __future__ import annotations

import decimal
from typing import Any

from interchange_hub._core.deps import require

VARIANTS = (
    "nulls",
    "no nulls",
    "empty",
    "sliced",
    "chunked",
    "empty first chunk",
    "ipc",
)


def corpus(rows: int = 12, seed: int = 0, nulls: bool = True) -> dict[str, Any]:
    """Every corpus type as a pyarrow Array of ``rows`` values, by name."""
    pa = require("pyarrow", "to build the type corpus")
    np = require("numpy", "to build the type corpus")
    rng = np.random.default_rng(seed)
    mask = (np.arange(rows) % 3 == 1) if nulls else None
    ints = rng.integers(1, 100, rows)

    def arr(values: Any, typ: Any) -> Any:
        return pa.array(values, typ, mask=mask)

    def pylist(values: list[Any], typ: Any) -> Any:
        if nulls:
            values = [None if i % 3 == 1 else v for i, v in enumerate(values)]
        return pa.array(values, typ)

    c: dict[str, Any] = {"bool": arr(ints % 2 == 0, pa.bool_())}
    for width in (8, 16, 32, 64):
        c[f"int{width}"] = arr(ints - 50, getattr(pa, f"int{width}")())
        c[f"uint{width}"] = arr(ints, getattr(pa, f"uint{width}")())
    c["float16"] = arr((ints / 4).astype(np.float16), pa.float16())
    c["float32"] = arr(rng.standard_normal(rows).astype(np.float32), pa.float32())
    c["float64"] = arr(rng.standard_normal(rows), pa.float64())
    decimals = [decimal.Decimal(int(v)) / 100 for v in ints]
    c["decimal32"] = pylist(decimals, pa.decimal32(7, 2))
    c["decimal64"] = pylist(decimals, pa.decimal64(16, 2))
    c["decimal128"] = pylist(decimals, pa.decimal128(10, 2))
    c["decimal256"] = pylist(decimals, pa.decimal256(20, 2))
    c["decimal256 wide"] = pylist([d * 10**30 for d in decimals], pa.decimal256(40, 2))
    words = [f"w{v}" * (1 + int(v) % 3) for v in ints]
    for name in ("string", "large_string", "string_view"):
        c[name] = pylist(words, getattr(pa, name)())
    blobs = [w.encode() for w in words]
    c["binary"] = pylist(blobs, pa.binary())
    c["large_binary"] = pylist(blobs, pa.large_binary())
    c["binary_view"] = pylist(blobs, pa.binary_view())
    c["fixed_size_binary"] = pylist([b"%03d" % v for v in ints], pa.binary(3))
    c["date32"] = arr(ints.astype(np.int32) + 18000, pa.date32())
    c["date64"] = arr((ints + 18000) * 86_400_000, pa.date64())
    c["time32[s]"] = arr(ints.astype(np.int32), pa.time32("s"))
    c["time32[ms]"] = arr(ints.astype(np.int32) * 1000, pa.time32("ms"))
    c["time64[us]"] = arr(ints * 10**6, pa.time64("us"))
    c["time64[ns]"] = arr(ints * 10**9, pa.time64("ns"))
    base = 1_600_000_000
    for unit, scale in (("s", 1), ("ms", 10**3), ("us", 10**6), ("ns", 10**9)):
        c[f"timestamp[{unit}]"] = arr((base + ints) * scale, pa.timestamp(unit))
        c[f"duration[{unit}]"] = arr(ints * scale, pa.duration(unit))
    c["timestamp zoned"] = arr((base + ints) * 10**6, pa.timestamp("us", "Europe/Paris"))
    c["timestamp utc"] = arr((base + ints) * 10**9, pa.timestamp("ns", "UTC"))
    c["timestamp offset"] = arr((base + ints) * 10**6, pa.timestamp("us", "+05:30"))
    cats = pa.array(["red", "green", "blue"])
    for width in (8, 16, 32):
        indices = arr(ints % 3, getattr(pa, f"int{width}")())
        c[f"dictionary<int{width}>"] = pa.DictionaryArray.from_arrays(indices, cats)
    lists = [[int(v), int(v) + 1][: 1 + int(v) % 2] for v in ints]
    c["list"] = pylist(lists, pa.list_(pa.int64()))
    c["large_list"] = pylist(lists, pa.large_list(pa.int64()))
    c["fixed_size_list"] = pylist([[int(v), -int(v)] for v in ints], pa.list_(pa.int64(), 2))
    c["struct"] = pylist(
        [{"a": int(v), "b": w} for v, w in zip(ints, words, strict=True)],
        pa.struct([("a", pa.int64()), ("b", pa.string())]),
    )
    c["list<struct>"] = pylist(
        [[{"a": int(v)}] * (1 + int(v) % 2) for v in ints], pa.list_(pa.struct([("a", pa.int64())]))
    )
    c["struct<list>"] = pylist([{"l": x} for x in lists], pa.struct([("l", pa.list_(pa.int64()))]))
    c["dictionary<int64>"] = pa.DictionaryArray.from_arrays(arr(ints % 3, pa.int64()), cats)
    c["dictionary<uint8>"] = pa.DictionaryArray.from_arrays(arr(ints % 3, pa.uint8()), cats)
    c["map"] = pylist([[(w, int(v))] for v, w in zip(ints, words, strict=True)],
                      pa.map_(pa.string(), pa.int64()))  # fmt: skip
    c["bool8"] = pa.ExtensionArray.from_storage(
        pa.bool8(), arr((ints % 2).astype(np.int8), pa.int8())
    )
    c["json"] = pa.ExtensionArray.from_storage(
        pa.json_(), pylist([f'{{"v": {int(v)}}}' for v in ints], pa.string())
    )
    c["uuid"] = pa.ExtensionArray.from_storage(
        pa.uuid(), pylist([int(v).to_bytes(16, "little") for v in ints], pa.binary(16))
    )
    c["dictionary<int32, int64 values>"] = pa.DictionaryArray.from_arrays(
        arr(ints % 3, pa.int32()), pa.array([10, 20, 30])
    )
    c["list_view"] = pylist(lists, pa.list_view(pa.int64()))
    c["large_list_view"] = pylist(lists, pa.large_list_view(pa.int64()))
    c["run_end_encoded"] = pa.RunEndEncodedArray.from_arrays(
        pa.array(range(1, rows + 1), pa.int32()), arr(ints, pa.int64())
    )
    c["interval month_day_nano"] = pylist(
        [pa.MonthDayNano([int(v) % 12, int(v), int(v) * 1000]) for v in ints],
        pa.month_day_nano_interval(),
    )
    c["opaque"] = pa.ExtensionArray.from_storage(
        pa.opaque(pa.int64(), "geometry", "vendor"), arr(ints, pa.int64())
    )
    c["null"] = pa.nulls(rows)
    # Unions have no validity bitmap: a row is null where the member it selects is null.
    kinds = (ints % 2).astype(np.int8)
    c["sparse_union"] = pa.UnionArray.from_sparse(
        pa.array(kinds, pa.int8()),
        [arr(ints - 50, pa.int64()), pylist(words, pa.string())],
        ["i", "s"],
    )
    # Type codes that are not the members' positions; each row has its own member slot.
    codes = np.where(kinds == 0, 5, 2).astype(np.int8)
    slots = np.zeros(rows, np.int32)
    dense: tuple[list[Any], list[Any]] = ([], [])
    for i, (kind, v, w) in enumerate(zip(kinds.tolist(), ints.tolist(), words, strict=True)):
        slots[i] = len(dense[kind])
        dense[kind].append(None if nulls and i % 3 == 1 else (v - 50, w)[kind])
    c["dense_union"] = pa.UnionArray.from_dense(
        pa.array(codes, pa.int8()),
        pa.array(slots, pa.int32()),
        [pa.array(dense[0], pa.int64()), pa.array(dense[1], pa.string())],
        ["i", "s"],
        [5, 2],
    )
    c["fixed_shape_tensor"] = pa.ExtensionArray.from_storage(
        pa.fixed_shape_tensor(pa.float32(), (2, 2)),
        pylist([[float(v), -float(v), float(v) / 4, 0.5] for v in ints], pa.list_(pa.float32(), 4)),
    )
    return c


def variants(name: str, rows: int = 12, seed: int = 0) -> dict[str, Any]:
    """The corpus column ``name`` in each of :data:`VARIANTS` (pyarrow Arrays; a
    ChunkedArray for ``"chunked"``)."""
    pa = require("pyarrow")
    column = corpus(rows, seed)[name]
    half = rows // 2
    return {
        "nulls": column,
        "no nulls": corpus(rows, seed, nulls=False)[name],
        "empty": column.slice(0, 0),
        "sliced": column.slice(3, rows - 5),
        "chunked": pa.chunked_array([column.slice(0, half), column.slice(half)], column.type),
        # as IPC readers and streaming producers deliver it: a first batch with no rows
        "empty first chunk": pa.chunked_array([column.slice(0, 0), column], column.type),
        # read back from an IPC stream written by pyarrow: 8-byte aligned buffers in one
        # body, zero-length buffers where a column has no nulls
        "ipc": ipc_round_trip(column),
        **({"extremes": extremes} if (extremes := extreme_values(column.type)) is not None else {}),
    }


def extreme_values(typ: Any) -> Any:
    """A column of ``typ`` holding its edge values, or None for types without any: the
    integer bounds, NaN beside null, -0.0 and infinities, INT64_MIN/MAX for 64-bit
    temporal types (INT64_MIN is pandas' NaT, a value and not a null in Arrow), tensor
    cells of infinities and float32's extremes, and unions holding the int64 bounds, empty
    and wide strings (a dense one with every row in one member: the other is empty)."""
    pa = require("pyarrow")
    np = require("numpy")
    if pa.types.is_integer(typ):
        info = np.iinfo(typ.to_pandas_dtype())
        return pa.array([int(info.min), int(info.max), 0, None], typ)
    if pa.types.is_floating(typ) and not pa.types.is_float16(typ):
        return pa.array([float("nan"), None, -0.0, float("inf"), float("-inf")], typ)
    if pa.types.is_timestamp(typ) or pa.types.is_duration(typ):
        low, high = -(2**63), 2**63 - 1
        return pa.array([low, high, 0, None], pa.int64()).cast(typ)
    if isinstance(typ, pa.FixedShapeTensorType) and typ.value_type == pa.float32():
        big, tiny = float(np.finfo(np.float32).max), float(np.finfo(np.float32).smallest_subnormal)
        cells = [[float("inf"), float("-inf"), -0.0, big], None, [tiny, -big, 0.0, 1.0]]
        return pa.ExtensionArray.from_storage(typ, pa.array(cells, typ.storage_type))
    if pa.types.is_union(typ) and [f.type for f in typ] == [pa.int64(), pa.string()]:
        codes = list(typ.type_codes)
        i, s = (pa.array(v, f.type) for v, f in zip(_UNION_EXTREMES, typ, strict=True))
        if typ.mode == "sparse":  # the integer bounds, the empty string, a null, wide text
            kinds = pa.array([codes[k] for k in (0, 0, 1, 0, 1)], pa.int8())
            return pa.UnionArray.from_sparse(kinds, [i, s], [f.name for f in typ], codes)
        # every row in the string member: the integer member is empty
        kinds = pa.array([codes[1]] * len(s), pa.int8())
        slots = pa.array(range(len(s)), pa.int32())
        return pa.UnionArray.from_dense(
            kinds, slots, [i.slice(0, 0), s], [f.name for f in typ], codes
        )
    return None


_UNION_EXTREMES = (
    [-(2**63), 2**63 - 1, 0, None, 0],
    ["", None, "", "", "\u00e9\u20ac\U0001f600" * 50],
)


def ipc_round_trip(column: Any) -> Any:
    """``column`` written to an IPC stream by pyarrow and read back (a ChunkedArray of
    the stream's batches: an empty first batch, as streaming producers send it, then the
    column, another empty batch and the column sliced). An IPC reader gives the empty
    batches zero-length buffers, or none at all (a union's type ids)."""
    pa = require("pyarrow")
    empty = pa.record_batch({"c": column.slice(0, 0)})
    batches = [
        empty,
        pa.record_batch({"c": column}),
        empty,
        pa.record_batch({"c": column.slice(1)}),
    ]
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batches[0].schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    table = pa.ipc.open_stream(sink.getvalue()).read_all()
    return table.column("c")
