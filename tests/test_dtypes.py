"""One-column tables of many Arrow types through every pair of table libraries.

Values must survive, and the plan's zero-copy claim must match the buffer addresses.
"""

from __future__ import annotations

import datetime as dt
import decimal
import warnings
import zlib
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pytest

import interchange_hub as ih
from tests.helpers import TABLE_LIBS, assert_claim_holds, canon, make_table, values

ROWS = 200


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def _ints(nulls: bool) -> pa.Array:
    vals = _rng("ints").integers(-(2**62), 2**62, ROWS)
    mask = np.arange(ROWS) % 7 == 3 if nulls else None
    return pa.array(vals, mask=mask)


CASES: dict[str, Callable[[], pa.Array | pa.ChunkedArray]] = {
    "int64": lambda: _ints(False),
    "int64_nulls": lambda: _ints(True),
    "uint8": lambda: pa.array(_rng("u8").integers(0, 255, ROWS).astype(np.uint8)),
    "float32_nulls": lambda: pa.array(
        _rng("f32").standard_normal(ROWS).astype(np.float32), mask=np.arange(ROWS) % 5 == 0
    ),
    "bool": lambda: pa.array(_rng("bool").integers(0, 2, ROWS).astype(bool)),
    "string": lambda: pa.array(
        [f"s{i}-{v}" for i, v in enumerate(_rng("s").integers(0, 99, ROWS))]
    ),
    "large_string_nulls": lambda: pa.array(
        [None if i % 9 == 0 else f"v{i}" for i in range(ROWS)], pa.large_string()
    ),
    "timestamp_tz": lambda: pa.array(
        _rng("ts").integers(0, 2**50, ROWS), pa.timestamp("us", "Europe/Paris")
    ),
    "timestamp_ns": lambda: pa.array(_rng("tsn").integers(0, 2**60, ROWS), pa.timestamp("ns")),
    "date32": lambda: pa.array(_rng("d").integers(0, 30000, ROWS).astype(np.int32), pa.date32()),
    "dictionary": lambda: pa.array(
        [["a", "b", "c"][i % 3] for i in range(ROWS)]
    ).dictionary_encode(),
    "list": lambda: pa.array([[i, i + 1] if i % 4 else None for i in range(ROWS)]),
    "decimal": lambda: pa.array(
        [decimal.Decimal(f"{i}.{i % 100:02d}") for i in range(ROWS)], pa.decimal128(10, 2)
    ),
    "two_chunks": lambda: pa.chunked_array([_ints(False)[:80], _ints(False)[80:]]),
    "sliced": lambda: _ints(False)[17:150],
    "duration": lambda: pa.array(_rng("dur").integers(0, 2**40, ROWS), pa.duration("ms")),
}
PAIRS = [(s, d) for s in TABLE_LIBS for d in TABLE_LIBS if s != d]
ALL_PAIRS = [(s, d) for s in TABLE_LIBS for d in TABLE_LIBS]


def _source(lib: str, case: str) -> object:
    col = CASES[case]()
    return make_table(lib, pa.table({case: col}))


def _normalise(v: object) -> object:
    if isinstance(v, dict):
        return {k: _normalise(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_normalise(x) for x in v]
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.UTC)
    return v


def _type_family(obj: object) -> str:
    """The Arrow type of a one-column table, up to representation choices of libraries.

    Libraries pick among equivalent layouts (string, large_string or string_view; the
    dictionary index width; 32- or 64-bit list offsets); the values' type must survive.
    """
    typ = canon(obj).schema.field(0).type
    if pa.types.is_dictionary(typ):
        return "dictionary"
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_string_view(typ):
        return "string"
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return f"list<{typ.value_type}>"
    return str(typ)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize(("src_lib", "dst_lib"), PAIRS, ids=[f"{s}->{d}" for s, d in PAIRS])
def test_types_between_table_libraries(hub: ih.Hub, case: str, src_lib: str, dst_lib: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # building pandas samples of exotic types may warn
        src = _source(src_lib, case)
    plan = hub.plan(src, to=dst_lib)
    result = hub.convert(src, to=dst_lib)
    assert _normalise(values(result)) == _normalise(values(src))
    assert _type_family(result) == _type_family(src)
    assert_claim_holds(hub, plan, src, result)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("dst_lib", ["numpy", "torch"])
def test_types_into_tensors(hub: ih.Hub, case: str, dst_lib: str) -> None:
    """A column of each type into a tensor: a result, or a clear NoRouteError; claims hold."""
    src = CASES[case]()
    try:
        plan = hub.plan(src, to=dst_lib)
    except ih.NoRouteError as exc:
        assert case in ("string", "large_string_nulls", "dictionary", "list", "decimal") or (
            dst_lib == "torch" and case == "date32"
        ), f"unexpected refusal: {exc}"
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = hub.convert(src, to=dst_lib)
    warned = [w for w in caught if issubclass(w.category, ih.LossyConversionWarning)]
    assert len(warned) == len(plan.losses)
    assert len(result) == len(src)
    assert_claim_holds(hub, plan, src, result)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize(("src_lib", "dst_lib"), ALL_PAIRS, ids=[f"{s}->{d}" for s, d in ALL_PAIRS])
def test_copy_true_shares_nothing_for_any_type(
    hub: ih.Hub, case: str, src_lib: str, dst_lib: str
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        src = _source(src_lib, case)
    result = hub.convert(src, to=dst_lib, copy=True)
    assert hub.shared_bytes(src, result) == 0, str(hub.plan(src, to=dst_lib, copy=True))
    assert _normalise(values(result)) == _normalise(values(src))
