"""Flag.NESTED_BITMAP_OFFSET: a nested array with nulls whose validity bitmap starts inside
a byte, as its parents select its rows (read from offsets and null counts, not values)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from interchange_hub import arrowkit
from interchange_hub.adapter import Flag


def nulls(n: int) -> pa.Array:
    return pa.array([None if i % 3 == 0 else i for i in range(n)], pa.int64())


def struct(n: int = 40) -> pa.StructArray:
    return pa.StructArray.from_arrays([nulls(n)], ["a"])


@pytest.mark.parametrize(
    ("column", "flagged"),
    [
        (struct(), False),
        (struct().slice(3), True),  # the struct's offset moves into its field
        (struct().slice(8), False),  # ... at a byte boundary
        (pa.StructArray.from_arrays([pa.array(range(40))], ["a"]).slice(3), False),  # no nulls
        (pa.StructArray.from_arrays([nulls(40).slice(3)], ["a"]), True),  # the field's own
        (pa.ListArray.from_arrays(pa.array([0, 2, 30], pa.int32()), nulls(40).slice(5)), True),
        (pa.ListArray.from_arrays(pa.array([0, 2, 30], pa.int32()), nulls(40)).slice(1), False),
        (pa.DictionaryArray.from_arrays(pa.array([0, 1]), nulls(10).slice(1)), True),
        (pa.FixedSizeListArray.from_arrays(nulls(40), 2).slice(3), True),  # values at 6
        (pa.FixedSizeListArray.from_arrays(nulls(40), 2).slice(4), False),  # values at 8
        (pa.array([True, None, False]).slice(1), False),  # flat
        (pa.StructArray.from_arrays([pa.array([True, None] * 8)], ["b"]).slice(3), False),
    ],
)
def test_nested_bitmaps_inside_a_byte_are_flagged(column: pa.Array, flagged: bool) -> None:
    info = arrowkit.describe_column(column)
    assert (Flag.NESTED_BITMAP_OFFSET in info.columns[0].flags) is flagged
    table = pa.table({"c": pa.chunked_array([column.slice(0, 0), column])})  # (empty: skipped)
    assert (Flag.NESTED_BITMAP_OFFSET in arrowkit.describe_table(table).columns[0].flags) is (
        flagged
    )


def test_the_route_key_tells_them_apart() -> None:
    # (a route planned for one must not run for the other: their claims differ)
    assert arrowkit.route_key(struct().slice(3)) != arrowkit.route_key(struct().slice(8))
    built = pa.StructArray.from_arrays([nulls(40).slice(3, 30)], ["a"])
    assert arrowkit.route_key(built) != arrowkit.route_key(struct(30))
