"""Property-based round trips: hypothesis draws schemas and data from the type corpus."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings, strategies as st

import interchange_hub as ih
from interchange_hub._tools import typemap
from interchange_hub._tools.corpus import corpus

NAMES = sorted(corpus(rows=2))
LIBS = ["pyarrow", "nanoarrow", "polars", "pandas"]
HUB = ih.Hub(autoload=False)


@st.composite
def tables(draw: st.DrawFn) -> pa.Table:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    rows = draw(st.integers(0, 30))
    offset = draw(st.integers(0, 9))
    seed = draw(st.integers(0, 2**16))
    nulls = draw(st.booleans())
    data = corpus(rows=rows + offset, seed=seed, nulls=nulls)
    table = pa.table({n: data[n] for n in names}).slice(offset)
    cut = draw(st.integers(0, table.num_rows))
    if draw(st.booleans()) and 0 < cut < table.num_rows:
        table = pa.concat_tables([table.slice(0, cut), table.slice(cut)])
    return table


def values(column: Any) -> list[Any]:
    return ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in column.to_pylist()]


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(table=tables(), first=st.sampled_from(LIBS), second=st.sampled_from(LIBS))
def test_round_trips_follow_the_type_mapping(table: pa.Table, first: str, second: str) -> None:
    # Types a library refuses in the plan, as the mapping says (tests/test_fidelity.py
    # checks those refusals), are left out: polars has no unions, for instance.
    types = {n: str(table.schema.field(n).type) for n in table.column_names}
    table = table.drop_columns(
        [n for n, t in types.items() if typemap.refused(first, t) or typemap.refused(second, t)]
    )
    if not table.num_columns:
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        back = HUB.convert(HUB.convert(HUB.convert(table, to=first), to=second), to=first)
        result = HUB.convert(back, to="pyarrow")
    lossy = {str(w.message).split(": ")[1] for w in caught}
    assert all(issubclass(w.category, ih.LossyConversionWarning) for w in caught)
    assert result.column_names == table.column_names
    for name in table.column_names:
        if f"column {name!r}" in lossy:
            continue  # warned: the warning names the column and both types
        want = typemap.round_trip(first, second, str(table.schema.field(name).type))
        assert str(result.schema.field(name).type) == want, name
        assert values(result.column(name)) == values(table.column(name)), name
