"""Every ordered pair of the six CPU libraries, for tables, columns and tensors.

Each case checks the result's type and values, keeps working after the source is
deleted and garbage-collected, and holds the plan's zero-copy claim to the buffer
addresses: a zero-copy plan must leave every source buffer inside the result's memory,
a copying plan must not.
"""

from __future__ import annotations

import gc
import zlib

import pytest

import interchange_hub as ih
from tests.helpers import (
    ALL_LIBS,
    NATURAL_COLUMN,
    NATURAL_TABLE,
    TENSOR_LIBS,
    assert_claim_holds,
    float_table,
    int_column,
    make_column,
    make_table,
    values,
)

PAIRS = [(s, d) for s in ALL_LIBS for d in ALL_LIBS]


@pytest.mark.parametrize(("src_lib", "dst_lib"), PAIRS, ids=[f"{s}->{d}" for s, d in PAIRS])
def test_table_pairs(hub: ih.Hub, src_lib: str, dst_lib: str) -> None:
    src = make_table(src_lib, float_table(seed=zlib.crc32(f"{src_lib}{dst_lib}".encode())))
    expected = values(src)
    plan = hub.plan(src, to=dst_lib)
    result = hub.convert(src, to=dst_lib)
    assert isinstance(result, NATURAL_TABLE[dst_lib])
    assert_claim_holds(hub, plan, src, result)

    del src
    gc.collect()
    got = values(result)
    if (src_lib in TENSOR_LIBS) == (dst_lib in TENSOR_LIBS):
        assert got == expected
    elif dst_lib in TENSOR_LIBS:  # table -> 2-D tensor
        assert got == [list(row) for row in zip(*expected.values(), strict=True)]
    else:  # 2-D tensor -> table, one column per tensor column
        assert list(got) == ["column_0", "column_1"]
        assert [list(r) for r in zip(*got.values(), strict=True)] == expected


@pytest.mark.parametrize(("src_lib", "dst_lib"), PAIRS, ids=[f"{s}->{d}" for s, d in PAIRS])
def test_column_pairs(hub: ih.Hub, src_lib: str, dst_lib: str) -> None:
    src = make_column(src_lib, int_column(seed=zlib.crc32(f"{dst_lib}{src_lib}".encode())))
    expected = values(src)
    plan = hub.plan(src, to=dst_lib)
    result = hub.convert(src, to=dst_lib)
    assert isinstance(result, NATURAL_COLUMN[dst_lib])
    if dst_lib in TENSOR_LIBS:
        assert result.ndim == 1
    assert_claim_holds(hub, plan, src, result)
    del src
    gc.collect()
    assert values(result) == expected


@pytest.mark.parametrize("src_lib", ALL_LIBS)
@pytest.mark.parametrize("dst_lib", ALL_LIBS)
def test_copy_true_never_shares(hub: ih.Hub, src_lib: str, dst_lib: str) -> None:
    src = make_column(src_lib, int_column(rows=64, seed=3))
    result = hub.convert(src, to=dst_lib, copy=True)
    assert hub.shared_bytes(src, result) == 0
    assert values(result) == values(src)
    assert not hub.plan(src, to=dst_lib, copy=True).zero_copy


@pytest.mark.parametrize("lib", ALL_LIBS)
def test_same_library_is_returned_as_is(hub: ih.Hub, lib: str) -> None:
    src = make_column(lib, int_column(rows=8))
    plan = hub.plan(src, to=lib)
    assert plan.steps == () and plan.zero_copy
    assert hub.convert(src, to=lib) is src


@pytest.mark.parametrize(("src_lib", "dst_lib"), PAIRS, ids=[f"{s}->{d}" for s, d in PAIRS])
def test_empty_inputs(hub: ih.Hub, src_lib: str, dst_lib: str) -> None:
    table = make_table(src_lib, float_table(rows=0))
    column = make_column(src_lib, int_column(rows=0))
    out_table = hub.convert(table, to=dst_lib)
    out_column = hub.convert(column, to=dst_lib)
    assert isinstance(out_table, NATURAL_TABLE[dst_lib])
    assert isinstance(out_column, NATURAL_COLUMN[dst_lib])
    got = values(out_table)
    assert all(len(v) == 0 for v in got.values()) if isinstance(got, dict) else got == []
    assert values(out_column) == []
