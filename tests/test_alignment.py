"""The alignment the hub promises of memory it makes: a table made into a 2-D tensor of 64
KiB or more starts at a 64-byte boundary (what XLA, jax's CPU client, needs to view memory
in place), and a step that makes new memory carries no measured alignment of its input
over."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pyarrow as pa
import pytest
import torch

import interchange_hub as ih
from interchange_hub._bridge import tensors


@pytest.mark.parametrize("rows", [0, 7, 1000, 4096, tensors.FILL_FROM_ROWS + 3])
@pytest.mark.parametrize(
    "make",
    [
        lambda n: {"a": np.arange(n, dtype=np.float64), "b": np.arange(n, dtype=np.float64)},
        lambda n: {
            "a": pa.array([None] + list(range(n - 1)) if n else [], pa.int64()),
            "b": np.arange(n, dtype=np.float64),
        },  # nulls: to_numpy stacked or filled
        lambda n: {"a": np.arange(n, dtype=np.int32), "b": np.arange(n, dtype=np.int64)},
    ],
    ids=["plain", "nulls", "cast"],
)
def test_a_table_becomes_a_tensor_at_a_64_byte_boundary(rows: int, make: object) -> None:
    hub = ih.Hub(autoload=False)
    table = pa.table(make(rows))  # type: ignore[operator]
    plan = hub.plan(table, to="numpy")
    promised = plan.steps[-1].estimate.out.alignment
    # from ALIGN_FROM_BYTES of result (two 8-byte columns: 4,096 rows), else not known
    assert promised == (64 if rows * 16 >= tensors.ALIGN_FROM_BYTES else 0), plan
    for copy in (None, True):
        nulls = table.column("a").null_count
        with pytest.warns(ih.LossyConversionWarning) if nulls else nullcontext():
            out = hub.convert(table, to="numpy", copy=copy)
        assert out.shape == (rows, 2) and out.flags.f_contiguous and out.flags.writeable
        assert out.ctypes.data % 64 == 0 or not promised
        expected = np.column_stack([c.to_numpy(zero_copy_only=False) for c in table.columns])
        np.testing.assert_array_equal(out, expected.astype(out.dtype))
        assert hub.shared_bytes(out, table) == 0


def test_new_matrix_is_aligned_from_64_kib_and_numpys_own_below() -> None:
    big = tensors.new_matrix(4096, 2, np.dtype("f8"))  # 64 KiB
    assert big.ctypes.data % 64 == 0 and big.flags.f_contiguous and not big.flags.owndata
    small = tensors.new_matrix(4095, 2, np.dtype("f8"))
    assert small.flags.owndata and small.flags.f_contiguous
    objects = tensors.new_matrix(10_000, 2, np.dtype(object))  # (never planned: no view)
    assert objects.shape == (10_000, 2) and objects.dtype == object


def test_large_matrices_come_from_arrows_pool_and_go_back_to_it() -> None:
    # The pool keeps freed pages for the next result (numpy maps fresh ones over 32 MiB).
    pool = pa.default_memory_pool()
    before = pool.bytes_allocated()
    big = tensors.new_matrix(6000, 3, np.dtype("f4"))  # 70 KiB
    assert pool.bytes_allocated() - before >= 6000 * 3 * 4
    assert isinstance(big.base.base, pa.Buffer) and big.flags.writeable and not big.flags.owndata
    assert big.shape == (6000, 3) and big.flags.f_contiguous and big.ctypes.data % 64 == 0
    big[:, 2] = 7.0  # each column its own contiguous run of the buffer
    assert big[:, 2].flags.c_contiguous and bool((big[:, 2] == 7.0).all())
    view = big[:10]
    del big
    assert pool.bytes_allocated() - before >= 6000 * 3 * 4  # a view keeps the buffer
    del view
    assert pool.bytes_allocated() == before


def test_aligned_empty_is_new_column_major_memory_at_64_bytes() -> None:
    for rows, cols, dtype in [(0, 3, "f8"), (1, 1, "i1"), (5, 3, "f4"), (1000, 4, "u2")]:
        a = tensors.aligned_empty((rows, cols), np.dtype(dtype))
        assert a.shape == (rows, cols) and a.dtype == np.dtype(dtype)
        assert a.flags.f_contiguous and a.flags.writeable
        assert a.ctypes.data % 64 == 0 or not a.size  # (numpy places no bytes anywhere)


def test_new_memory_does_not_inherit_the_inputs_measured_alignment() -> None:
    hub = ih.Hub(autoload=False)
    t = torch.arange(64, dtype=torch.float64)  # torch's allocator: 64-byte aligned
    assert hub.plan(t, to="numpy").steps[0].before.alignment == 64
    plan = hub.plan(t, to="numpy", copy=True)  # the copy is numpy's: 16-byte aligned
    assert [s.estimate.out.alignment for s in plan.steps if s.estimate.copies_all] == [0]
