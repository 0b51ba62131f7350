"""pandas' own construction of a Series (``_bridge.pandas_native``): what the bound numpy
-> pandas runs make without ``pd.Series``' Python in front, held to what ``pd.Series``
makes of the same array (values, dtype, index, name), to the memory it shares (by
address), to the hub's copy-on-write, and handing every other input to ``pd.Series``."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd
import pytest

import interchange_hub as ih
from interchange_hub._bridge import pandas_native


@pytest.fixture
def fresh_makers() -> Iterator[None]:
    pandas_native.numpy_series.cache_clear()
    pandas_native._frame_native.cache_clear()
    yield
    pandas_native.numpy_series.cache_clear()
    pandas_native._frame_native.cache_clear()


def _same(made: pd.Series, public: pd.Series) -> None:
    assert type(made) is pd.Series
    pd.testing.assert_series_equal(made, public, check_index_type=True, check_exact=True)
    assert made.name is public.name is None
    assert type(made.index) is type(public.index)
    assert made.flags.allows_duplicate_labels == public.flags.allows_duplicate_labels
    assert made.attrs == public.attrs == {}


@pytest.mark.parametrize("dtype", sorted(pandas_native._KEPT_DTYPES))
def test_a_series_is_the_one_pd_series_makes_and_shares_the_array(dtype: str) -> None:
    make = pandas_native.numpy_series(dtype)
    array = (np.arange(10) % 2 if dtype == "bool" else np.arange(10)).astype(dtype)
    made = make(array)
    _same(made, pd.Series(array, copy=False))
    assert made.to_numpy().ctypes.data == array.ctypes.data


def test_each_result_has_an_index_of_its_own() -> None:
    make = pandas_native.numpy_series("float64")
    array = np.arange(5.0)
    first, second = make(array), make(array)
    assert first.index is not second.index
    first.index.name = "renamed"
    assert second.index.name is None


ODD_ARRAYS: dict[str, Callable[[], object]] = {
    "byte-swapped": lambda: np.arange(5.0).astype(">f8"),
    "strided": lambda: np.arange(10.0)[::2],
    "masked": lambda: np.ma.masked_array(np.arange(4.0), mask=[False, True, False, False]),
    "2-D": lambda: np.arange(4.0).reshape(4, 1)[:, 0:1],
    "another dtype": lambda: np.arange(4, dtype=np.int32),
    "a list": lambda: [1.0, 2.0],
}


@pytest.mark.parametrize("case", ODD_ARRAYS)
def test_every_other_input_is_pd_series_own(case: str) -> None:
    data = ODD_ARRAYS[case]()
    make = pandas_native.numpy_series("float64")
    if case == "2-D":
        with pytest.raises(ValueError, match="1-dimensional"):
            pd.Series(data, copy=False)
        with pytest.raises(ValueError, match="1-dimensional"):
            make(data)
        return
    _same(make(data), pd.Series(data, copy=False))


def test_a_dtype_pandas_changes_is_left_to_pd_series() -> None:
    make = pandas_native.numpy_series("datetime64[s]")
    array = np.array(["2024-01-01", "2024-06-01"], dtype="datetime64[s]")
    _same(make(array), pd.Series(array, copy=False))
    assert pandas_native.numpy_series("float16")(np.arange(2, dtype=np.float16)).dtype == np.float16


def test_a_pandas_without_the_internals_gets_pd_series(
    monkeypatch: pytest.MonkeyPatch, fresh_makers: None
) -> None:
    monkeypatch.setattr(pd.Series, "_from_mgr", None)  # (a pandas that lacks it)
    make = pandas_native.numpy_series("float64")
    monkeypatch.undo()  # (pandas' own calls need it back)
    array = np.arange(3.0)
    made = make(array)
    _same(made, pd.Series(array, copy=False))
    assert make.__name__ == "public"
    monkeypatch.setattr(pd.DataFrame, "_from_mgr", None)  # (nor the frame's)
    assert pandas_native._frame_native("float64") is None
    monkeypatch.undo()


@pytest.mark.parametrize("writeable", [True, False], ids=["writeable", "read-only"])
def test_the_hub_shares_the_array_and_a_write_to_the_result_leaves_it(writeable: bool) -> None:
    hub = ih.Hub()
    array = np.arange(100.0)
    array.flags.writeable = writeable
    assert hub.plan(array, to="pandas").zero_copy
    for _ in range(3):  # planned, then the kept route
        out = hub.convert(array, to="pandas")
        assert isinstance(out, pd.Series)
        assert out.to_numpy().ctypes.data == array.ctypes.data
        out.iloc[0] = -1.0  # copy-on-write: the result's own copy of the column
        assert out.iloc[0] == -1.0
        assert array[0] == 0.0


ARROW_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
ARROW_TYPES += ["float32", "float64"]


@pytest.mark.parametrize("typ", ARROW_TYPES)
@pytest.mark.parametrize("where", ["whole", "sliced", "in a table"])
def test_an_arrow_column_without_nulls_is_the_series_to_pandas_makes(typ: str, where: str) -> None:
    import pyarrow as pa

    hub = ih.Hub()
    array = pa.array(np.arange(20).astype(typ))
    source: object = array
    if where == "sliced":
        array = array.slice(3, 10)
        source = array
    elif where == "in a table":
        source = pa.table({"named": array}).column(0)
    reference = array.to_pandas()
    reference.name = None  # (a ChunkedArray has no public name: pyarrow's to_pandas reads
    # a private one, Table.column's; the hub gives None, as it always has)
    for _ in range(3):  # planned, then the kept route
        out = hub.convert(source, to="pandas")
        pd.testing.assert_series_equal(out, reference, check_index_type=True, check_exact=True)
        assert out.to_numpy().ctypes.data == array.buffers()[1].address + array.offset * (
            array.type.bit_width // 8
        )
        out.iloc[0] = 7  # copy-on-write: the Arrow memory stays as it was
        assert array[0].as_py() == reference.iloc[0]


def _names(width: int) -> pd.Index:
    return pd.Index([f"column_{i}" for i in range(width)])


@pytest.mark.parametrize("dtype", sorted(pandas_native._KEPT_DTYPES))
@pytest.mark.parametrize("fortran", [False, True], ids=["C", "F"])
def test_a_frame_is_the_one_pd_dataframe_makes_and_shares_the_array(
    dtype: str, fortran: bool
) -> None:
    array = (np.arange(30) % 3).astype(dtype).reshape((10, 3), order="F" if fortran else "C")
    made = pandas_native.numpy_frame(dtype, _names(3))(array)
    public = pd.DataFrame(array, columns=_names(3), copy=False)
    assert type(made) is pd.DataFrame
    pd.testing.assert_frame_equal(made, public, check_index_type=True, check_exact=True)
    (block,), (public_block,) = made._mgr.blocks, public._mgr.blocks
    assert block.values.ctypes.data == array.ctypes.data == public_block.values.ctypes.data
    assert block.values.strides == public_block.values.strides
    assert made.index is not pandas_native.numpy_frame(dtype, _names(3))(array).index


ODD_MATRICES: dict[str, Callable[[], object]] = {
    "another width": lambda: np.arange(8.0).reshape(4, 2),
    "1-D": lambda: np.arange(4.0),
    "strided": lambda: np.arange(24.0).reshape(6, 4)[::2, :3],
    "masked": lambda: np.ma.masked_array(np.arange(6.0).reshape(2, 3), mask=False),
    "another dtype": lambda: np.arange(6, dtype=np.int32).reshape(2, 3),
    "no rows": lambda: np.zeros((0, 3)),
}


@pytest.mark.parametrize("case", ODD_MATRICES)
def test_every_other_matrix_is_pd_dataframe_own(case: str) -> None:
    data = ODD_MATRICES[case]()
    make = pandas_native.numpy_frame("float64", _names(3))
    made = _outcome(lambda: make(data))
    public = _outcome(lambda: pd.DataFrame(data, columns=_names(3), copy=False))
    if isinstance(public, tuple):  # (a width pandas refuses: refused here too)
        assert made == public
    else:
        assert isinstance(made, pd.DataFrame) and isinstance(public, pd.DataFrame)
        pd.testing.assert_frame_equal(made, public, check_index_type=True)


def _outcome(make: Callable[[], object]) -> object:
    try:
        return make()
    except Exception as exc:  # noqa: BLE001 - compared by the caller
        return (type(exc), str(exc))


@pytest.mark.parametrize("fortran", [False, True], ids=["C", "F"])
def test_the_hub_shares_a_matrix_and_a_write_to_the_frame_leaves_it(fortran: bool) -> None:
    hub = ih.Hub()
    array = np.arange(300.0).reshape((100, 3), order="F" if fortran else "C")
    assert hub.plan(array, to="pandas").zero_copy
    for _ in range(3):  # planned, then the kept route
        out = hub.convert(array, to="pandas")
        assert list(out.columns) == ["column_0", "column_1", "column_2"]
        assert out._mgr.blocks[0].values.ctypes.data == array.ctypes.data
        out.iloc[0, 0] = -1.0
        assert out.iloc[0, 0] == -1.0
        assert array[0, 0] == 0.0


@pytest.mark.parametrize("dtype", ["Float64", "Int32", "UInt8"])
def test_a_polars_series_without_nulls_is_shared_as_its_plan_says(dtype: str) -> None:
    import polars as pl

    from tests.helpers import shared_memory

    hub = ih.Hub()
    source = pl.Series("values", np.arange(50), dtype=getattr(pl, dtype))
    plan = hub.plan(source, to="pandas")
    reference = source.to_pandas()
    for _ in range(3):  # planned, then the kept route
        out = hub.convert(source, to="pandas")
        pd.testing.assert_series_equal(out, reference, check_index_type=True, check_exact=True)
        inside, total = shared_memory(hub, out, source)
        assert (inside == total > 0) == plan.zero_copy
        out.iloc[0] = 9
        assert source[0] == 0
