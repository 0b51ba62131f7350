"""Type fidelity: every corpus type survives A -> B -> A between table and series
libraries, up to the documented type mapping, or the conversion warns."""

from __future__ import annotations

import datetime as dt
import math
import re
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import interchange_hub as ih
from interchange_hub import arrowkit
from interchange_hub._tools import typemap
from interchange_hub._tools.corpus import corpus, variants
from tests.helpers import OUTCOMES

LIBS = ["pyarrow", "nanoarrow", "polars", "pandas"]
ROOT = Path(__file__).resolve().parents[1]
CORPUS = corpus()
# Types a rule of the mapping is for that the corpus lacks: round-tripped like corpus
# types (in fewer variants), and counted by the rule test. Move them to the corpus.
OUTSIDE_CORPUS = {
    "timestamp[s] zoned": pa.array([1_600_000_000, None, 5, 1], pa.timestamp("s", "Asia/Tokyo")),
    "timestamp[ms] utc": pa.array([1_600_000_000_123, None, -5], pa.timestamp("ms", "UTC")),
    "list<float16>": pa.array([[1.5, 2.0], None, [0.25]], pa.list_(pa.float16())),
    # pandas' categories must be distinct, non-null and hashable: these are re-encoded or
    # decoded on the way in (rows with a null value are null rows)
    "dictionary<int32, null and repeated values>": pa.DictionaryArray.from_arrays(
        pa.array([0, 1, None, 2, 3, 1], pa.int32()), pa.array(["a", None, "a", "b"])
    ),
    # list views and runs inside a struct: rebuilt and decoded where the layouts are not held
    "struct<list_view, run_end_encoded>": pa.StructArray.from_arrays(
        [
            pa.ListViewArray.from_arrays(
                pa.array([4, 0, 2, 0], pa.int32()),
                pa.array([2, 1, 0, 3], pa.int32()),
                pa.array([1, None, 3, 4, 5, 6]),
            ),
            pa.RunEndEncodedArray.from_arrays(
                pa.array([1, 3, 4], pa.int32()), pa.array(["a", None, "b"])
            ),
        ],
        ["l", "r"],
        mask=pa.array([False, False, True, False]),
    ),
    "dictionary<int32, struct values>": pa.DictionaryArray.from_arrays(
        pa.array([0, 1, None, 1], pa.int32()),
        pa.StructArray.from_arrays([pa.array([1, None]), pa.array(["x", "y"])], ["i", "s"]),
    ),
    # pyarrow cannot take run-end encoded arrays: the values' runs are decoded first
    "dictionary<int8, struct values with runs>": pa.DictionaryArray.from_arrays(
        pa.array([0, 2, None, 1, 0], pa.int8()),
        pa.StructArray.from_arrays(
            [
                pa.RunEndEncodedArray.from_arrays(pa.array([2, 3], pa.int32()), pa.array([7, 8])),
                pa.array(["a", None, "c"]),
            ],
            ["r", "s"],
        ),
    ),
}
NAMES = [*CORPUS, *OUTSIDE_CORPUS]


def cases(name: str) -> dict[str, Any]:
    """The variants of corpus type ``name``, or of a type outside the corpus."""
    if name in OUTSIDE_CORPUS:
        col = OUTSIDE_CORPUS[name]
        return {"nulls": col, "sliced": col.slice(1), "chunked": pa.chunked_array([col, col])}
    return variants(name)


def column_of(obj: Any, hub: ih.Hub) -> Any:
    """The single column of a result, as one pyarrow Array."""
    data = hub.convert(obj, to="pyarrow")
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        data = data.column(0)
    if isinstance(data, pa.ChunkedArray):
        if not data.num_chunks:
            return pa.nulls(0, data.type)
        try:
            data = data.combine_chunks()
        except pa.ArrowNotImplementedError:  # unions: pyarrow 26 cannot combine them
            pass  # a ChunkedArray reads the same (type, to_pylist)
    return data


def values(arr: Any) -> list[Any]:
    try:
        items = arr.to_pylist()
    except OverflowError:  # extreme temporal values Python's datetime cannot hold
        return ["ticks", *arr.cast(pa.int64()).to_pylist()]
    return ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in items]


def round_trip(hub: ih.Hub, data: Any, first: str, second: str) -> tuple[Any, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = hub.convert(data, to=first)
        b = hub.convert(a, to=second)
        back = hub.convert(b, to=first)
    lossy = [str(w.message) for w in caught if issubclass(w.category, ih.LossyConversionWarning)]
    other = [
        str(w.message) for w in caught if not issubclass(w.category, ih.LossyConversionWarning)
    ]
    assert not other, other
    return back, lossy


@pytest.mark.parametrize("kind", ["table", "column"])
@pytest.mark.parametrize("name", NAMES)
def test_round_trips_keep_values_and_mapped_types(name: str, kind: str) -> None:
    hub = ih.Hub(autoload=False)
    problems = []
    for var, col in cases(name).items():
        data = pa.table({"c": col}) if kind == "table" else col
        expected_values = values(col)  # a ChunkedArray reads as its values too
        for first in LIBS:
            for second in LIBS:
                where = f"{var}: {first} -> {second} -> {first}"
                try:
                    back, lossy = round_trip(hub, data, first, second)
                    got = column_of(back, hub)
                except ih.InterchangeError as exc:
                    why = typemap.refused(first, str(col.type)) or typemap.refused(
                        second, str(col.type)
                    )
                    if not (why and isinstance(exc, ih.NoRouteError)):
                        problems.append(f"{where}: refused: {type(exc).__name__}: {exc}")
                    OUTCOMES["refused"] += 1
                    continue
                if kind == "column" and typemap.struct_becomes_table(first, second, col):
                    table = hub.convert(back, to="pyarrow")
                    if table.column_names != [f.name for f in col.type]:
                        problems.append(f"{where}: expected the struct's fields as a table")
                    OUTCOMES["documented"] += 1
                    continue
                want = typemap.round_trip(first, second, str(col.type))
                if lossy:
                    if not all(" -> " in m for m in lossy):
                        problems.append(f"{where}: a warning lacks the types: {lossy}")
                    OUTCOMES["warned"] += 1
                    continue
                OUTCOMES["exact" if want == str(col.type) else "documented"] += 1
                if str(got.type) != want:
                    problems.append(f"{where}: type {got.type}, the mapping says {want}")
                if values(got) != expected_values:
                    problems.append(f"{where}: values changed silently: {values(got)[:4]}")
    assert not problems, "\n".join(problems)


# Types numpy holds as Python objects that a rule (or lossy step) of the mapping is for and
# the corpus lacks: round-tripped through numpy only, and counted by the rule test.
NUMPY_EXTRA = {
    "struct of leaves": pa.array(
        [
            {"i": 1, "u": None, "f": 0.5, "d": 86_400_000, "t": 5, "n": 1, "dt": 7, "l": [1]},
            None,
            {"i": -3, "u": 7, "f": -2.0, "d": 0, "t": -9, "n": -1, "dt": 3, "l": [None, 4]},
        ],
        pa.struct(
            [
                ("i", pa.int8()),
                ("u", pa.uint32()),
                ("f", pa.float32()),
                ("d", pa.date64()),
                ("t", pa.timestamp("s")),
                ("n", pa.timestamp("ns")),
                ("dt", pa.duration("ms")),
                ("l", pa.list_(pa.field("x", pa.int16()))),
            ]
        ),
    ),
    "list<duration[ns]>": pa.array([[1_001, None], None, [5]], pa.list_(pa.duration("ns"))),
    "list<map>": pa.array([[[("a", 1)]], None], pa.list_(pa.map_(pa.string(), pa.int64()))),
}
NUMPY_OBJECTS = [
    n
    for n, c in {**CORPUS, **NUMPY_EXTRA}.items()
    if not re.fullmatch(typemap.NUMPY_NATIVE, str(c.type))
]


def numpy_cases(name: str) -> dict[str, Any]:
    if name in NUMPY_EXTRA:
        col = NUMPY_EXTRA[name]
        return {"nulls": col, "sliced": col.slice(1), "chunked": pa.chunked_array([col, col])}
    return variants(name)


def comes_back_from_numpy(col: Any) -> str:
    """The type a column held as Python objects comes back as: the mapping's (an empty
    column, or one of nulls only, has no value to infer a type from: null)."""
    if col.null_count == len(col) and not re.fullmatch(typemap.NUMPY_OWN, str(col.type)):
        return "null"
    want = typemap.visit("numpy", str(col.type))
    digits = re.fullmatch(r"decimal128\(38, (\d+)\)", want)
    if digits and any(len(v.as_tuple().digits) > 38 for v in col.to_pylist() if v is not None):
        return f"decimal256(76, {digits.group(1)})"  # as the rule's why says
    return want


def into_numpy(
    hub: ih.Hub, col: Any, steps: list[Any], where: str, problems: list[str]
) -> tuple[Any, list[Any]] | None:
    """``col`` converted to numpy, with the warnings it gave; None (the problem noted,
    if any) where the plan refuses it, or where the document says it should have."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = hub.convert(col, to="numpy")
        except ih.NoRouteError as exc:
            if not any(item.refused for item in steps):
                problems.append(f"{where}: refused: {exc}")
            return None
    if any(item.refused for item in steps):
        problems.append(f"{where}: documented as refused, but converted")
        return None
    return out, list(caught)


@pytest.mark.parametrize("name", NUMPY_OBJECTS)
def test_object_columns_through_numpy_keep_values_or_warn(name: str) -> None:
    """pyarrow -> numpy -> pyarrow for each type numpy holds as Python objects (and a
    fixed-shape tensor column, an N-D array): the values come back, in the type the
    mapping says (pyarrow infers it from the objects), or the conversion into numpy warns
    where a lossy step of the document applies (refused under strict=True), or the plan
    refuses it where the document says so. uuid, opaque, map, decimals, bool8, json came
    back silently as other types (or failed) before."""
    import numpy as np

    hub = ih.Hub(autoload=False)
    problems: list[str] = []
    for var, col in numpy_cases(name).items():
        dtype = str(col.type)
        steps = [i for i in typemap.LOSSY["numpy"] if i.applies(dtype, col.null_count > 0, False)]
        where = f"{var}: pyarrow -> numpy -> pyarrow"
        into = into_numpy(hub, col, steps, where, problems)
        if into is None:
            continue
        out, caught = into
        lossy = [
            str(w.message) for w in caught if issubclass(w.category, ih.LossyConversionWarning)
        ]
        if steps:
            if not lossy or not all(" -> " in m for m in lossy):
                problems.append(f"{where}: documented as lossy ({steps[0].data}): {lossy}")
            with pytest.raises(ih.LossyConversionError):
                hub.convert(col, to="numpy", strict=True)
            continue  # (what numpy holds may not come back: documented)
        if lossy:
            problems.append(f"{where}: warned, but no lossy step of the document says so: {lossy}")
            continue
        own = re.fullmatch(typemap.NUMPY_OWN, dtype)
        if not isinstance(out, np.ndarray) or (out.dtype == object) is bool(own):
            problems.append(f"{where}: numpy holds it as {type(out).__name__} {out.dtype}")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nothing is lost on the way back either
            try:
                back = column_of(hub.convert(out, to="pyarrow"), hub)
            except ih.InterchangeError as exc:
                problems.append(f"{where}: the objects do not convert back: {exc}")
                continue
        want = comes_back_from_numpy(col)
        if str(back.type) != want:
            problems.append(f"{where}: type {back.type}, the mapping says {want}")
        if values(back) != values(col):
            problems.append(f"{where}: values changed silently: {values(back)[:4]}")
    assert not problems, "\n".join(problems)


def test_the_document_matches_the_table() -> None:
    doc = (ROOT / "docs" / "type-mapping.md").read_text()
    assert doc == typemap.markdown(typemap.corpus_types()), (
        "docs/type-mapping.md is stale: run python -m interchange_hub._tools.typemap > docs/type-mapping.md"
    )


def visit_recording(library: str, dtype: str, used: set[typemap.Rule]) -> str:
    """``typemap.visit``, adding each rule that changes the type to ``used``."""
    for rule in typemap.RULES[library]:
        out = rule.apply(dtype)
        if out != dtype:
            used.add(rule)
        dtype = out
    return dtype


@pytest.mark.parametrize("library", list(typemap.RULES))
def test_every_rule_is_used_by_the_corpus(library: str) -> None:
    """Each rule rewrites a type the round trips meet (a corpus type, or what it became in
    the library before: duckdb's list items meet polars' rule), each refusal and each lossy
    step with a pattern matches a corpus type: the document describes nothing the tests
    do not check."""
    types = [str(c.type) for c in (*CORPUS.values(), *OUTSIDE_CORPUS.values())]
    if library == "numpy":  # (and the types numpy's object rules are for)
        types += [str(c.type) for c in NUMPY_EXTRA.values()]
    tables = [lib for lib in typemap.RULES if lib != "numpy"]
    used: set[typemap.Rule] = set()
    for typ in types:
        if library == "numpy":
            visit_recording("numpy", typ, used)
        for first in tables:
            if library not in tables:
                break
            one = visit_recording(first, typ, used)
            for second in tables:
                visit_recording(first, visit_recording(second, one, used), used)
    for rule in typemap.RULES[library]:
        assert rule in used, f"{library}: {rule.pattern} never applies"
    for pattern, _ in typemap.REFUSED.get(library, ()):
        assert any(re.fullmatch(pattern, t) for t in types), f"{library}: {pattern} refuses nothing"
    for item in typemap.LOSSY.get(library, ()):
        if item.pattern:
            hit = any(item.applies(t, nulls=True, int64_min=True) for t in types)
            assert hit, f"{library}: the lossy step {item.data!r} matches no corpus type"


NUMPY_TYPES = [n for n, c in CORPUS.items() if re.fullmatch(typemap.NUMPY_NATIVE, str(c.type))]


def holds_int64_min(col: Any) -> bool:
    if not (pa.types.is_timestamp(col.type) or pa.types.is_duration(col.type)) or not len(col):
        return False
    return bool(pc.min(col.cast(pa.int64())).as_py() == -(2**63))


def test_numpy_holds_the_types_of_the_mapping() -> None:
    assert len(NUMPY_TYPES) >= 25  # bool, the integers, floats, dates, timestamps, durations
    out = ih.Hub(autoload=False).convert(CORPUS["decimal128"], to="numpy")
    assert out.dtype == object  # a type outside NUMPY_NATIVE: Python objects


@pytest.mark.parametrize("name", NUMPY_TYPES)
def test_numpy_round_trips_keep_values_or_warn_as_documented(name: str) -> None:
    """pyarrow -> numpy -> pyarrow for each type numpy holds in a dtype of its own: the
    values and the mapped type come back, or the conversion warns exactly where a lossy
    step of the document applies (refused under strict=True), or the plan refuses it where
    the document says so."""
    import numpy as np

    hub = ih.Hub(autoload=False)
    problems: list[str] = []
    for var, col in variants(name).items():
        dtype = str(col.type)
        steps = [
            item
            for item in typemap.LOSSY["numpy"]
            if item.applies(dtype, col.null_count > 0, holds_int64_min(col))
        ]
        where = f"{var}: pyarrow -> numpy -> pyarrow"
        into = into_numpy(hub, col, steps, where, problems)
        if into is None:
            continue
        out, caught = into
        with warnings.catch_warnings(record=True) as back_caught:
            warnings.simplefilter("always")
            back = column_of(hub.convert(out, to="pyarrow"), hub)
        caught = [*caught, *back_caught]
        if not isinstance(out, np.ndarray) or out.dtype == object:
            problems.append(f"{where}: numpy holds it as {type(out).__name__} {out.dtype}")
        assert all(issubclass(w.category, ih.LossyConversionWarning) for w in caught)
        lossy = [str(w.message) for w in caught]
        if steps and not lossy:
            problems.append(f"{where}: documented as lossy ({steps[0].data}) but silent")
        elif lossy and not steps:
            problems.append(f"{where}: warned, but no lossy step of the document says so: {lossy}")
        elif lossy:
            try:
                hub.convert(col, to="numpy", strict=True)
                problems.append(f"{where}: strict=True did not refuse it")
            except ih.LossyConversionError:
                pass
        else:
            want = typemap.visit("numpy", dtype)
            if str(back.type) != want:
                problems.append(f"{where}: type {back.type}, the mapping says {want}")
            expected = col if want == dtype else col.cast(pa.type_for_alias(want))
            if values(back) != values(expected):
                problems.append(f"{where}: values changed silently: {values(back)[:4]}")
    assert not problems, "\n".join(problems)


def test_seconds_beyond_polars_milliseconds_become_null_with_a_warning(hub: ih.Hub) -> None:
    table = pa.table(
        {
            "t": pa.array([2**62, 5, None], pa.timestamp("s")),
            "d": pa.array([-(2**62), 1, 2], pa.duration("s")),
        }
    )
    with pytest.warns(ih.LossyConversionWarning) as caught:
        frame = hub.convert(table, to="polars")
    told = sorted(str(w.message).split("column ")[1][:3] for w in caught)
    assert told == ["'d'", "'t'"] and all("become null" in str(w.message) for w in caught)
    assert frame["t"].to_list()[0] is None and frame["d"].to_list()[0] is None
    assert frame["d"].to_list()[1:] == [dt.timedelta(seconds=1), dt.timedelta(seconds=2)]
    with pytest.raises(ih.LossyConversionError, match="'d'"):
        hub.convert(table, to="polars", strict=True)
    fine = pa.table({"t": pa.array([5, 6], pa.timestamp("s", tz="UTC"))})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert hub.convert(fine, to="polars")["t"].dt.epoch("s").to_list() == [5, 6]


def test_nan_beside_null_into_pandas_is_warned(hub: ih.Hub) -> None:
    table = pa.table({"f": [float("nan"), None, 1.0], "g": [1.0, None, 2.0]})
    with pytest.warns(ih.LossyConversionWarning, match="column 'f'.*NaN and null") as caught:
        hub.convert(table, to="pandas")
    assert not any("'g'" in str(w.message) for w in caught)  # nulls alone: pandas' NaN
    with pytest.raises(ih.LossyConversionError):
        hub.convert(table, to="pandas", strict=True)


def _under_null(values: list[float], nulls: list[bool], typ: Any = None) -> Any:
    """A float array whose null slots hold ``values`` too (NaN under a null, say)."""
    import numpy as np

    typ = typ or pa.float64()
    data = pa.py_buffer(np.array(values, dtype=typ.to_pandas_dtype()).tobytes())
    mask = pa.array([not n for n in nulls]).buffers()[1]
    return pa.Array.from_buffers(typ, len(values), [mask, data], null_count=sum(nulls))


@pytest.mark.parametrize(
    ("col", "lossy"),
    [
        (_under_null([float("nan"), 1.0, 2.0], [True, False, False]), False),  # NaN is no value
        (_under_null([float("nan"), float("nan"), 2.0], [True, False, False]), True),
        (_under_null([float("nan"), 1.0], [True, False], pa.float32()), False),
        (_under_null([1.0, float("nan"), 3.0], [False, True, False], pa.float16()), False),
        (_under_null([1.0, float("nan"), 5.0], [False, False, True], pa.float16()), True),
        (pa.array([float("nan"), 1.0, None, 2.0]).slice(1), False),  # the NaN sliced off
        (pa.array([1.0, None, 2.0, float("nan")]).slice(0, 3), False),
        (pa.array([1.0, None, float("nan"), 2.0]).slice(1, 2), True),
        (pa.chunked_array([pa.array([1.0, None]), pa.array([2.0, float("nan")])]), True),
        (pa.chunked_array([pa.array([], pa.float64()), pa.array([None, 2.0])]), False),
    ],
)
def test_nan_beside_null_is_found_among_valid_values_only(
    hub: ih.Hub, col: Any, lossy: bool
) -> None:
    # numpy's minimum of the values buffer rules NaN out at memory bandwidth; a NaN it
    # finds may sit under a null (no value), which a look among the valid values then
    # tells (a block of rows at a time, their nulls unpacked from the bitmap).
    table = pa.table({"f": col})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = hub.convert(table, to="pandas")
    told = [str(w.message) for w in caught if "NaN and null" in str(w.message)]
    assert bool(told) is lossy, told
    assert frame["f"].isna().tolist() == table["f"].is_null(nan_is_null=True).to_pylist()


def _long_floats(rows: int, nan_at: int | None, nan_under_null: bool, typ: Any) -> Any:
    """``rows`` float values, every seventh null; NaN as a value at ``nan_at``, and, with
    ``nan_under_null``, NaN in every null slot (no value)."""
    import numpy as np

    values = np.arange(rows, dtype=typ.to_pandas_dtype()) / 8
    nulls = np.arange(rows) % 7 == 3
    if nan_under_null:
        values[nulls] = np.nan
    if nan_at is not None:
        values[nan_at] = np.nan
        nulls[nan_at] = False
    mask = pa.array(~nulls).buffers()[1]
    data = pa.py_buffer(values.tobytes())
    return pa.Array.from_buffers(typ, rows, [mask, data], null_count=int(nulls.sum()))


@pytest.mark.parametrize(
    ("rows", "nan_at", "nan_under_null", "typ", "offset"),
    [
        (5_000, None, False, pa.float64(), 3),
        (5_000, 4_000, False, pa.float32(), 0),
        (5_000, 4_321, True, pa.float64(), 4_322),  # NaN under the nulls, the value sliced off
        (20_000, None, False, pa.float64(), 0),
        (20_000, None, True, pa.float64(), 0),  # NaN under nulls only: no value lost
        (20_000, 19_999, False, pa.float64(), 0),
        (300_000, 290_001, True, pa.float64(), 0),  # NaN under every null and a NaN value
        (300_000, 5, False, pa.float32(), 0),
        (300_000, 5, False, pa.float64(), 10),  # the NaN sliced off
        (300_000, 299_990, False, pa.float32(), 13),
    ],
)
def test_float_columns_with_nulls_reach_pandas_as_to_numpy_looked_at_once_for_nan(
    hub: ih.Hub,
    monkeypatch: pytest.MonkeyPatch,
    rows: int,
    nan_at: int | None,
    nan_under_null: bool,
    typ: Any,
    offset: int,
) -> None:
    # The frame of numbers (pandas' Int64 for integers with nulls beside it) takes a
    # float column with nulls as its to_numpy() (NaN for the nulls, in memory of its
    # own), and looks once a call for NaN among its valid values (a NaN under a null is
    # no value; where the source's minimum is NaN, the NaN of the result are counted
    # against the nulls): the same frame and the same warning as the general way.
    import numpy as np

    from interchange_hub._bridge.tensors import nan_filled
    from interchange_hub.adapters import _pandas

    scans: list[str] = []
    holds_nan = _pandas._filled_holds_nan

    def scanned(col: Any, filled: Any) -> bool:
        scans.append("to_numpy, then a look")
        return holds_nan(col, filled)

    def in_one_pass(chunk: Any) -> Any:
        scans.append("one pass")
        return nan_filled(chunk)

    def unread(pa: Any, col: Any) -> bool:
        raise AssertionError("the column's values were read again")

    monkeypatch.setattr(_pandas, "_filled_holds_nan", scanned)
    monkeypatch.setattr(_pandas, "nan_filled", in_one_pass)
    monkeypatch.setattr(_pandas, "_holds_nan", unread)
    frames: list[object] = []  # (the frame of numbers', not the general way's)
    frame_of = _pandas._frame_of_columns

    def framed(columns: Any, rows: int) -> Any:
        frames.append(columns)
        return frame_of(columns, rows)

    monkeypatch.setattr(_pandas, "_frame_of_columns", framed)
    col = _long_floats(rows, nan_at, nan_under_null, typ).slice(offset)
    ints = pa.array(np.arange(len(col)), mask=np.arange(len(col)) % 5 == 1)
    table = pa.table({"i": ints, "f": col})  # (integers with nulls: the numbers frame)
    lossy = nan_at is not None and nan_at >= offset
    expected = col.to_numpy(zero_copy_only=False)
    for _ in range(2):  # planned, then the bound run
        scans.clear()
        frames.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            frame = hub.convert(table, to="pandas")
        told = [str(w.message) for w in caught if "NaN and null" in str(w.message)]
        assert bool(told) is lossy, told
        # (the float column's, once: from _FILLED_FROM_ROWS rows in one pass)
        one_pass = len(col) >= _pandas._FILLED_FROM_ROWS
        assert scans == ["one pass" if one_pass else "to_numpy, then a look"]
        assert len(frames) == 1
        got = frame["f"].to_numpy()
        assert got.dtype == expected.dtype
        assert np.array_equal(got, expected, equal_nan=True)
        assert frame["f"].isna().tolist() == table["f"].is_null(nan_is_null=True).to_pylist()
        assert not np.shares_memory(got, np.frombuffer(col.buffers()[1], np.uint8))
    row = next(i for i in range(len(col)) if col[i].is_valid)  # (a value, not a null)
    frame.loc[row, "f"] = 99.0  # the result's own memory: the source never changes
    assert col[row].as_py() != 99.0
    assert table["f"].to_numpy(zero_copy_only=False)[row] != 99.0
    if lossy:
        with pytest.raises(ih.LossyConversionError):
            hub.convert(table, to="pandas", strict=True)


_NAN = float("nan")


@pytest.mark.parametrize(
    ("chunks", "lossy"),
    [
        ([_under_null([_NAN, 1.0], [True, False]), _under_null([2.0, _NAN], [False, True])], False),
        ([_under_null([_NAN, 1.0], [True, False]), pa.array([2.0, _NAN])], True),
        ([pa.array([1.0, None]), pa.array([], pa.float64()), pa.array([_NAN, None])], True),
        ([pa.array([1.0, None]), pa.array([3.0, None])], False),
    ],
)
def test_chunked_float_columns_in_a_frame_of_numbers_are_warned_of_nan_beside_nulls(
    hub: ih.Hub, monkeypatch: pytest.MonkeyPatch, chunks: list[Any], lossy: bool
) -> None:
    # A float column of several chunks beside integers with nulls (the frame of numbers):
    # each chunk's minimum, NaN under a null or among the values, then the NaN of the
    # converted column counted against its nulls.
    from interchange_hub.adapters import _pandas

    frames: list[object] = []
    frame_of = _pandas._frame_of_columns

    def framed(columns: Any, rows: int) -> Any:
        frames.append(columns)
        return frame_of(columns, rows)

    monkeypatch.setattr(_pandas, "_frame_of_columns", framed)
    col = pa.chunked_array(chunks, pa.float64())
    table = pa.table(
        {"i": pa.array(range(len(col)), mask=[i % 2 == 0 for i in range(len(col))]), "f": col}
    )
    for _ in range(2):  # planned, then the bound run
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            frame = hub.convert(table, to="pandas")
        told = [str(w.message) for w in caught if "NaN and null" in str(w.message)]
        assert bool(told) is lossy, told
        assert frame["f"].isna().tolist() == col.is_null(nan_is_null=True).to_pylist()
    assert len(frames) == 2  # (the frame of numbers made both)


def test_numpy_datetimes_with_nat_into_torch_are_their_int64_ticks(hub: ih.Hub) -> None:
    import numpy as np

    arr = np.array(["2020-01-01", "NaT"], "datetime64[s]")
    with pytest.warns(ih.LossyConversionWarning, match="-> int64: stored as int64 s"):
        tensor = hub.convert(arr, to="torch", copy=False)  # the ticks are shared
    assert str(tensor.dtype) == "torch.int64"  # what the warning says, not float64
    assert tensor.tolist() == arr.view("int64").tolist() == [1577836800, -(2**63)]
    assert hub.shared_bytes(tensor, arr) == arr.nbytes
    with pytest.raises(ih.LossyConversionError):
        hub.convert(arr, to="torch", strict=True)


@pytest.mark.parametrize(
    ("typ", "storage"),
    [
        (pa.opaque(pa.int64(), "t", "v"), pa.array([1, None])),
        (pa.bool8(), pa.array([1, None], pa.int8())),
        (pa.uuid(), pa.array([b"a" * 16, None], pa.binary(16))),
    ],
    ids=["opaque<int64>", "bool8", "uuid"],
)
def test_extension_types_with_nulls_keep_their_type_through_pandas(
    hub: ih.Hub, typ: pa.DataType, storage: pa.Array
) -> None:
    table = pa.table({"e": pa.ExtensionArray.from_storage(typ, storage), "x": [1.0, 2.0]})
    frame = hub.convert(table, to="pandas")  # not float64
    assert hub.plan(table, to="pandas").zero_copy
    extension = table.select(["e"])
    assert hub.shared_bytes(frame, extension) == sum(b.size for b in hub.buffers(extension))
    back = hub.convert(frame, to="pyarrow")
    assert back.schema.field("e").type == typ and back.column("e").equals(table.column("e"))
    series = hub.convert(table.column("e"), to="pandas")
    assert hub.convert(series, to="pyarrow").type == typ


def test_refused_types_are_refused_in_the_plan_with_what_to_do(hub: ih.Hub) -> None:
    wide = CORPUS["decimal256 wide"]
    assert typemap.refused("polars", str(wide.type))
    with pytest.raises(ih.NoRouteError, match=r"more than 38 digits; cast it to a decimal128"):
        hub.plan(pa.table({"c": wide}), to="polars")
    narrow = hub.convert(pa.table({"c": CORPUS["decimal256"]}), to="polars")  # 20 digits: fits
    assert str(narrow.schema["c"]) == "Decimal(precision=20, scale=2)"
    assert not typemap.refused("polars", str(CORPUS["decimal256"].type))


@pytest.mark.parametrize("target", ["pandas", "polars", "pyarrow"])
def test_int64_min_in_a_timestamp_is_warned_where_it_is_nat(hub: ih.Hub, target: str) -> None:
    table = pa.table({"t": pa.array([-(2**63), 0, None], pa.int64()).cast(pa.timestamp("ns"))})
    if target != "pandas":  # polars and pyarrow hold INT64_MIN as a value
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            hub.convert(table, to=target)
        return
    with pytest.warns(ih.LossyConversionWarning, match=r"'t'.*INT64_MIN is NaT"):
        frame = hub.convert(table, to="pandas")
    assert frame["t"].isna().tolist() == [True, False, True]  # as warned
    with pytest.raises(ih.LossyConversionError, match="INT64_MIN"):
        hub.convert(table, to="pandas", strict=True)


def test_int64_min_into_numpy_datetime64_is_warned_not_into_torch_ticks(hub: ih.Hub) -> None:
    col = pa.array([-(2**63), 0, 5], pa.int64()).cast(pa.timestamp("ns"))
    with pytest.warns(ih.LossyConversionWarning, match="INT64_MIN is NaT"):
        out = hub.convert(col, to="numpy")
    assert str(out.dtype) == "datetime64[ns]"
    with pytest.raises(ih.LossyConversionError, match="INT64_MIN"):
        hub.convert(col, to="numpy", strict=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ticks = hub.convert(col, to="torch")
    assert ticks.tolist() == [-(2**63), 0, 5]
    assert not [w for w in caught if "INT64_MIN" in str(w.message)]


def test_int64_min_is_found_in_every_chunk_slice_and_kind_of_time() -> None:
    """arrowkit.nat_collisions reads a chunk without nulls by numpy's minimum of its
    values buffer (at the chunk's offset, for its rows only) and one with nulls by
    pyarrow's, which skips what a null slot holds."""
    low = -(2**63)
    stamps = pa.array([5, low, 7, 8], pa.int64()).cast(pa.timestamp("us"))
    found = [loss.column for loss in arrowkit.nat_collisions([("a", stamps)])]
    assert found == ["a"]
    assert not arrowkit.nat_collisions([("a", stamps.slice(2))])  # past it
    assert not arrowkit.nat_collisions([("a", stamps.slice(0, 1))])  # before it
    assert arrowkit.nat_collisions([("a", stamps.slice(1, 1))])  # only it
    chunked = pa.chunked_array([stamps.slice(2), stamps.slice(0, 2)])
    assert arrowkit.nat_collisions([("c", chunked)])
    assert not arrowkit.nat_collisions([("c", pa.chunked_array([stamps.slice(2)] * 2))])
    # A null slot holding INT64_MIN is not a value: not reported.
    values = pa.array([low, 1], pa.int64()).buffers()[1]
    masked = pa.Array.from_buffers(
        pa.duration("ns"), 2, [pa.array([False, True]).buffers()[1], values], null_count=1
    )
    assert masked.is_null().to_pylist() == [True, False]
    assert not arrowkit.nat_collisions([("d", masked)])
    assert arrowkit.nat_collisions(
        [("d", masked.cast(pa.int64()).fill_null(low).cast(pa.duration("ns")))]
    )
    assert not arrowkit.nat_collisions([("e", pa.array([low], pa.int64()))])  # not a time


def test_fixed_offset_objects_into_polars_are_warned_when_read(hub: ih.Hub) -> None:
    """Python datetimes with a fixed offset: their type shows only once read, so the loss
    (polars makes the zone UTC) is reported then; strict=True refuses it."""
    import numpy as np
    import pandas as pd

    tz = dt.timezone(dt.timedelta(hours=5, minutes=30))
    values = [dt.datetime(2020, 1, 1, tzinfo=tz), dt.datetime(2020, 1, 2, tzinfo=tz)]
    for source in (np.array(values, dtype=object), pd.DataFrame({"t": values}).astype(object)):
        with pytest.raises(ih.LossyConversionError, match=r"\+05:30.*UTC"):
            hub.convert(source, to="polars", strict=True)
        with pytest.warns(ih.LossyConversionWarning, match="fixed-offset"):
            out = hub.convert(source, to="polars")
        column = out if not hasattr(out, "columns") else out["t"]
        assert column.to_list()[0] == values[0]  # the same instant, in UTC


_ZONED = pa.array([0, None, 86_400_000_000], pa.timestamp("us", tz="+05:30"))
_NESTED_ZONED = {
    "struct": lambda: pa.StructArray.from_arrays([_ZONED], ["t"]),
    "struct of struct": lambda: pa.StructArray.from_arrays(
        [pa.StructArray.from_arrays([_ZONED], ["u"])], ["t"]
    ),
    "list": lambda: pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), _ZONED),
    "large_list": lambda: pa.LargeListArray.from_arrays(pa.array([0, 1, 3]), _ZONED),
    "fixed_size_list": lambda: pa.FixedSizeListArray.from_arrays(_ZONED, 1),
    "list_view": lambda: pa.ListViewArray.from_arrays(
        pa.array([0, 1], pa.int32()), pa.array([1, 2], pa.int32()), _ZONED
    ),
    "map": lambda: pa.MapArray.from_arrays(
        pa.array([0, 1, 3], pa.int32()), pa.array(["a", "b", "c"]), _ZONED
    ),
    "run_end_encoded": lambda: pa.RunEndEncodedArray.from_arrays(
        pa.array([1, 3], pa.int32()), pa.StructArray.from_arrays([_ZONED[:2]], ["t"])
    ),
    "dictionary": lambda: pa.DictionaryArray.from_arrays(
        pa.array([0, 1, 0], pa.int32()), pa.StructArray.from_arrays([_ZONED[:2]], ["t"])
    ),
}


@pytest.mark.parametrize("kind", sorted(_NESTED_ZONED))
def test_fixed_offsets_nested_in_a_column_reach_polars_as_utc(hub: ih.Hub, kind: str) -> None:
    """A fixed-offset zone inside a struct, list or map: polars panicked on it ("unable to
    parse time zone") after the plan had promised the conversion (found by the fuzzer on
    the GPU machine). It becomes UTC there too, warned per column as planned, the same
    instants; strict=True refuses it; the plan's zero-copy claim holds by address."""
    column = _NESTED_ZONED[kind]()
    table = pa.table({"c": column})
    plan = hub.plan(table, to="polars")
    assert [loss.column for loss in plan.losses] == ["c"] and "UTC" in plan.losses[0].target
    with pytest.raises(ih.LossyConversionError, match=r"\+05:30.*UTC"):
        hub.convert(table, to="polars", strict=True)
    for source in (table, column):
        with pytest.warns(ih.LossyConversionWarning, match="fixed-offset"):
            out = hub.convert(source, to="polars")
        series = out.to_series() if hasattr(out, "to_series") else out
        assert "+05:30" not in str(series.dtype) and "UTC" in str(series.dtype)
        # (aware datetimes compare as instants: 05:30 at +05:30 equals 00:00 UTC)
        assert series.to_arrow().to_pylist() == column.to_pylist(), "the instants changed"
    with pytest.warns(ih.LossyConversionWarning):
        out = hub.convert(table, to="polars")
    total = sum(b.size for b in hub.buffers(table))
    assert (hub.shared_bytes(table, out) == total) == plan.zero_copy


def test_nanosecond_times_into_numpy_are_warned_not_failed_mid_run(hub: ih.Hub) -> None:
    """numpy holds times as datetime.time objects (microseconds): pyarrow refused values
    with nanoseconds mid-run; they are cut now, warned per column, refused under strict."""
    whole = pa.array([1000, 1_500_000, None], pa.time64("ns"))  # whole microseconds
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert hub.convert(whole, to="numpy")[1] == dt.time(0, 0, 0, 1500)
    fine = pa.array([1, 1500, None], pa.time64("ns"))
    with pytest.warns(ih.LossyConversionWarning, match="nanoseconds are cut"):
        out = hub.convert(fine, to="numpy")
    assert list(out) == [dt.time(0, 0), dt.time(0, 0, 0, 1), None]
    with pytest.raises(ih.LossyConversionError, match="time64"):
        hub.convert(fine, to="numpy", strict=True)


@pytest.mark.parametrize("nested", ["list", "struct", "map"])
def test_nanosecond_times_inside_nested_columns_are_warned(hub: ih.Hub, nested: str) -> None:
    """Nested, they become datetime.time objects too: pyarrow's to_pylist cut the
    nanoseconds silently. Warned for the column where a value has them, strict refuses."""

    def column(ticks: list[int]) -> Any:
        times = pa.array(ticks, pa.time64("ns"))
        if nested == "list":
            return pa.ListArray.from_arrays(pa.array([0, 1, len(ticks)]), times)
        if nested == "struct":
            return pa.StructArray.from_arrays([times], ["t"])
        return pa.MapArray.from_arrays(
            pa.array([0, len(ticks)]), pa.array(["k"] * len(ticks)), times
        )

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hub.convert(column([1000, 2_000_000]), to="numpy")  # whole microseconds: silent
    cut = column([1000, 2_000_001])
    with pytest.warns(ih.LossyConversionWarning, match=r"time64\[ns\].*nanoseconds are cut"):
        hub.convert(cut, to="numpy")
    with pytest.raises(ih.LossyConversionError, match="nanoseconds are cut"):
        hub.convert(cut, to="numpy", strict=True)


def test_python_objects_into_arrow_keep_what_pyarrow_would_lose(hub: ih.Hub) -> None:
    """pandas Timestamps keep their nanoseconds (pyarrow infers microseconds); beside a
    value beyond what nanoseconds hold they cannot, which is warned (strict refuses);
    lists of (key, value) pairs become a map (pyarrow infers none); decimals take 38
    digits whatever their values (pyarrow infers the widest value's)."""
    import decimal

    import numpy as np
    import pandas as pd

    stamps = np.array([pd.Timestamp(1_000_000_001), None], dtype=object)
    out = hub.convert(stamps, to="pyarrow")
    assert out.type == pa.timestamp("ns") and out[0].value == 1_000_000_001
    nested = np.array([{"t": [pd.Timedelta(1_001)], "u": dt.timedelta(1)}], dtype=object)
    assert str(hub.convert(nested, to="pyarrow").type) == (
        "struct<t: list<item: duration[ns]>, u: duration[us]>"
    )
    mixed = np.array([pd.Timestamp(1_000_000_001), dt.datetime(3000, 1, 1)], dtype=object)
    with pytest.warns(ih.LossyConversionWarning, match="nanoseconds are cut"):
        assert hub.convert(mixed, to="pyarrow").type == pa.timestamp("us")
    with pytest.raises(ih.LossyConversionError, match="nanoseconds"):
        hub.convert(mixed, to="pyarrow", strict=True)
    pairs = np.array([[("a", 1), ("b", None)], None, []], dtype=object)
    assert hub.convert(pairs, to="pyarrow").type == pa.map_(pa.string(), pa.int64())
    decimals = np.array([decimal.Decimal("1.50"), None], dtype=object)
    assert hub.convert(decimals, to="pyarrow").type == pa.decimal128(38, 2)
    wide = np.array([decimal.Decimal("1" * 40 + ".5")], dtype=object)
    assert hub.convert(wide, to="pyarrow").type == pa.decimal256(76, 1)
    with pytest.raises(ih.ConversionError):  # no Arrow type holds ints and strings
        hub.convert(np.array([1, "a"], dtype=object), to="pyarrow")
