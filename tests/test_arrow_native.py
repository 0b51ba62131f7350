"""numpy arrays into pyarrow through their buffer (``_bridge.arrow_native.array_of``): the
Array ``pa.array`` makes (type, values, nulls, the memory shared, whether its buffer is
mutable) for plain arrays of numbers, and ``pa.array`` itself for everything else."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub._bridge import arrow_native
from interchange_hub._bridge.arrow_native import array_of
from tests.helpers import shared_memory

DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
DTYPES += ["float16", "float32", "float64"]


@pytest.fixture
def forgotten() -> Iterator[None]:
    """The dtypes' checks made afresh."""
    arrow_native._TYPES.clear()
    yield
    arrow_native._TYPES.clear()


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


def _misaligned() -> np.ndarray:
    raw = np.zeros(8 * 4 + 1, np.uint8)
    return np.frombuffer(raw.data, np.float64, count=4, offset=1)


ARRAYS: dict[str, Callable[[], object]] = {
    "read-only": lambda: _frozen(np.arange(5.0)),
    "with NaN": lambda: np.array([1.0, np.nan, 3.0]),
    "a view at an offset": lambda: np.arange(10, dtype=np.int32)[3:7],
    "strided": lambda: np.arange(10.0)[::2],
    "byte-swapped": lambda: np.arange(4, dtype=">i8"),
    "misaligned": _misaligned,
    "empty": lambda: np.array([], np.float64),
    "masked": lambda: np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False]),
    "bool": lambda: np.array([True, False, True]),
    "datetime64": lambda: np.array([0, 1], "datetime64[ms]"),
    "a column of a Fortran array": lambda: np.asfortranarray(np.ones((4, 3)))[:, 1],
    "a column of a C array": lambda: np.ones((4, 3))[:, 1],
    "a subclass": lambda: np.arange(3.0).view(type("Sub", (np.ndarray,), {})),
}


def _same(ours: pa.Array, theirs: pa.Array, arr: np.ndarray) -> None:
    assert type(ours) is type(theirs)
    assert ours.type == theirs.type
    assert ours.is_null().equals(theirs.is_null())
    np.testing.assert_array_equal(  # (NaN equal to NaN, unlike equals)
        ours.to_numpy(zero_copy_only=False), theirs.to_numpy(zero_copy_only=False)
    )
    assert (ours.null_count, ours.offset) == (theirs.null_count, theirs.offset)
    a, b = ours.buffers(), theirs.buffers()
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert (x is None) == (y is None)
        if x is not None and arr.size and arr.flags.c_contiguous and arr.flags.aligned:
            # (pa.array wraps such memory as it is: so must the native way)
            assert x.is_mutable == y.is_mutable
    if arr.size and len(b) > 1 and b[1] is not None and b[1].address == arr.ctypes.data:
        assert a[1].address == arr.ctypes.data  # shared where pa.array shares


@pytest.mark.parametrize("dtype", DTYPES)
def test_each_dtype_is_the_array_pa_array_makes(dtype: str, forgotten: None) -> None:
    arr = np.arange(7).astype(dtype)[2:]
    made = array_of(arr)
    _same(made, pa.array(arr), arr)
    assert arrow_native._TYPES[arr.dtype] == pa.from_numpy_dtype(dtype)  # the native way
    assert made.buffers()[1].address == arr.ctypes.data


@pytest.mark.parametrize("case", ARRAYS)
def test_odd_arrays_are_what_pa_array_makes(case: str, forgotten: None) -> None:
    arr = ARRAYS[case]()
    assert isinstance(arr, np.ndarray)
    try:
        theirs = pa.array(arr)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            array_of(arr)
        return
    _same(array_of(arr), theirs, arr)


def test_a_masked_array_keeps_its_nulls() -> None:
    arr = ARRAYS["masked"]()
    assert array_of(arr).to_pylist() == [1.0, None, 3.0]


def test_a_pyarrow_that_makes_something_else_gets_pa_array(
    forgotten: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (a py_buffer that copies: the check sees other memory, and refuses the native way)
    real = pa.py_buffer
    monkeypatch.setattr(pa, "py_buffer", lambda arr: real(arr.copy()))
    monkeypatch.setattr(arrow_native, "_CALLS", None)
    arr = np.arange(4.0)
    made = array_of(arr)
    _same(made, pa.array(arr), arr)
    assert made.buffers()[1].address == arr.ctypes.data
    assert arrow_native._TYPES[arr.dtype] is None
    monkeypatch.setattr(arrow_native, "_CALLS", None)


@pytest.mark.parametrize("rows", [1000, 10_000])  # (C order: gathered by numpy, by pyarrow)
@pytest.mark.parametrize("layout", ["column", "F", "C"])
def test_the_hub_makes_the_same_table_and_shares_what_it_did(layout: str, rows: int) -> None:
    hub = ih.Hub()
    base = np.arange(rows * 4.0).reshape(rows, 4)
    x = {"column": base[:, 0].copy(), "F": np.asfortranarray(base), "C": base}[layout]
    for _ in range(3):  # planned, then kept
        out = hub.convert(x, to="pyarrow")
        if layout == "column":
            assert out.to_pylist() == x.tolist()
        else:
            assert out.column_names == [f"column_{i}" for i in range(4)]
            assert np.array_equal(np.column_stack([c.to_numpy() for c in out.columns]), x)
        if layout != "column":
            assert out.equals(pa.table({f"column_{i}": x[:, i] for i in range(4)}))
        inside, total = shared_memory(hub, out, x)
        assert total > 0
        assert inside == (0 if layout == "C" else total)  # C order: each column copied
