"""The public surface: names, the default hub, independent hubs, plans and exports."""

from __future__ import annotations

import inspect
import threading
import warnings
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import torch
import torch.utils.dlpack

import interchange_hub as ih


def test_all_is_sorted_and_complete() -> None:
    assert ih.__all__ == sorted(ih.__all__)
    ours = {
        name
        for name in dir(ih)
        if not name.startswith("_")
        and not inspect.ismodule(getattr(ih, name))
        and getattr(getattr(ih, name), "__module__", "").startswith("interchange_hub")
    }
    # hookimpl is a pluggy marker instance; __version__ a string
    assert ours | {"hookimpl", "__version__"} == set(ih.__all__)


def test_module_level_verbs_use_the_default_hub() -> None:
    df = pd.DataFrame({"a": [1, 2, 3]})
    assert isinstance(ih.convert(df, to="polars"), pl.DataFrame)
    assert ih.plan(df, to="polars").zero_copy
    assert ih.default_hub() is ih.default_hub()


def test_independent_hub_lists_its_adapters(hub: ih.Hub) -> None:
    names = [a.name for a in hub.adapters()]
    assert names == ["pyarrow", "nanoarrow", "polars", "pandas", "numpy", "torch", "cupy"]
    assert ih.Hub(autoload=False) is not hub


def test_plan_prints_one_line_per_step(hub: ih.Hub) -> None:
    column = pa.chunked_array([[1.0, 2.0, 3.0]])
    plan = hub.plan(column, to="torch")
    text = str(plan)
    lines = text.splitlines()
    assert lines[0].startswith("Plan pyarrow.ChunkedArray -> torch: zero-copy, 3 step(s)")
    steps = [line for line in lines if line.lstrip()[:2] in ("1.", "2.", "3.")]
    assert len(steps) == 3
    assert "__arrow_c_stream__" in steps[0] and "cpu" in steps[0] and "zero-copy" in steps[0]
    assert "[24 B]" in steps[0]  # estimated bytes entering the step
    assert "torch.from_numpy" in steps[2]
    assert "<table>" in plan._repr_html_()


def test_plan_shows_why_a_copy_happens(hub: ih.Hub) -> None:
    plan = hub.plan(pa.table({"s": pa.array(["a", "b"])}), to="polars")
    assert not plan.zero_copy
    assert plan.copied_columns == ("s",)
    assert "string_view" in str(plan)


def test_plans_are_cached_per_type_and_signature(hub: ih.Hub) -> None:
    hub.plan(np.arange(3), to="torch")
    calls, routes = hub._cache.sizes()
    hub.plan(np.arange(100), to="torch")  # same type and signature: no new search
    assert hub._cache.sizes() == (calls, routes)
    hub.plan(np.arange(100.0).reshape(10, 10), to="torch")  # a 2-D signature is new
    assert hub._cache.sizes() == (calls, routes + 1)


def test_plan_estimates_follow_the_data(hub: ih.Hub) -> None:
    small = hub.plan(pa.array(np.arange(10)), to="numpy")
    large = hub.plan(pa.array(np.arange(1000)), to="numpy")
    assert small.info.nbytes == 80 and large.info.nbytes == 8000
    with_nulls = hub.plan(pa.array([1, None]), to="numpy")
    assert with_nulls.copied_columns and not with_nulls.lossless


def test_export_exposes_the_protocols_that_apply(hub: ih.Hub) -> None:
    exported = hub.export(np.arange(4, dtype=np.int64))
    assert hasattr(exported, "__dlpack__") and hasattr(exported, "__arrow_c_array__")
    assert pa.array(exported).to_pylist() == [0, 1, 2, 3]
    assert torch.utils.dlpack.from_dlpack(exported).tolist() == [0, 1, 2, 3]
    strings = hub.export(pl.DataFrame({"s": ["a"]}))
    assert not hasattr(strings, "__dlpack__")
    assert pa.table(strings).column("s").to_pylist() == ["a"]
    # fresh capsules on every call: the same export can be consumed twice
    assert pa.table(strings).num_rows == pa.table(strings).num_rows == 1


def test_export_dlpack_copy_false_raises_buffer_error_where_the_route_copies(
    hub: ih.Hub,
) -> None:
    # The DLPack standard: copy=False raises BufferError where a copy is needed (it was
    # passed on to the array the route had copied already).
    chunked = pa.chunked_array([[1, 2], [3]])
    with pytest.raises(BufferError, match="2 chunks are concatenated"):
        np.from_dlpack(hub.export(chunked), copy=False)
    assert np.from_dlpack(hub.export(chunked)).tolist() == [1, 2, 3]
    one = pa.array([1, 2, 3])
    shared = np.from_dlpack(hub.export(one), copy=False)
    assert hub.shared_bytes(shared, one) == shared.nbytes


def test_export_device_array_follows_the_kwargs_rule(hub: ih.Hub) -> None:
    exported = hub.export(pa.array([1, 2]))
    schema, array = exported.__arrow_c_device_array__(future_option=None)
    assert pa.Array._import_from_c_device_capsule(schema, array).to_pylist() == [1, 2]
    try:
        exported.__arrow_c_device_array__(future_option=1)
    except NotImplementedError as exc:
        assert "future_option" in str(exc)
    else:
        raise AssertionError("an unknown keyword with a value must raise")


def test_type_targets(hub: ih.Hub) -> None:
    table = pa.table({"a": [1, 2]})
    assert isinstance(hub.convert(table, to=pl.Series), pl.Series)
    assert isinstance(hub.convert(pa.array([1, 2]), to=pl.DataFrame), pl.DataFrame)
    assert isinstance(hub.convert(pl.Series([1, 2]), to=pa.Array), pa.Array)
    assert isinstance(hub.convert(pl.Series([1, 2]), to=pa.ChunkedArray), pa.ChunkedArray)
    assert isinstance(hub.convert(pl.DataFrame({"a": [1]}), to=pa.RecordBatch), pa.RecordBatch)
    assert isinstance(hub.convert(np.arange(3), to=pd.DataFrame), pd.DataFrame)


def test_tensor_kinds(hub: ih.Hub) -> None:
    cube = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    column = hub.convert(cube, to="pyarrow")
    assert isinstance(column.type, pa.FixedShapeTensorType)
    assert np.array_equal(column.to_numpy_ndarray(), cube)
    assert np.array_equal(hub.convert(column, to="numpy"), cube)
    assert isinstance(hub.convert(np.arange(3), to="polars"), pl.Series)
    assert isinstance(hub.convert(np.ones((2, 2)), to="polars"), pl.DataFrame)


def test_negative_strides_are_normalised_before_torch(hub: ih.Hub) -> None:
    reversed_view = np.arange(10.0)[::-1]
    plan = hub.plan(reversed_view, to="torch")
    assert not plan.zero_copy and "negative strides" in str(plan)
    assert hub.convert(reversed_view, to="torch").tolist() == reversed_view.tolist()


def test_strides_no_multiple_of_the_item_size_are_made_contiguous(hub: ih.Hub) -> None:
    # A record array's float64 field has a stride of 12 bytes, which DLPack (strides in
    # items) and torch.from_numpy cannot describe: the plan said zero-copy into torch, and
    # the run failed, copy=True too (found by a review helper)
    records = np.zeros(4, dtype=[("a", "i4"), ("b", "f8")])
    records["b"] = [1.5, 2.5, 3.5, 4.5]
    field = records["b"]
    assert field.strides == (12,)
    plan = hub.plan(field, to="torch")
    assert not plan.zero_copy and "no multiple of the item size" in str(plan)
    for copy in (None, True):
        assert hub.convert(field, to="torch", copy=copy).tolist() == [1.5, 2.5, 3.5, 4.5]
    with pytest.raises(ih.CopyRequiredError, match="no multiple of the item size"):
        hub.convert(field, to="torch", copy=False)
    assert torch.utils.dlpack.from_dlpack(ih.export(field)).tolist() == [1.5, 2.5, 3.5, 4.5]
    shared = hub.convert(records["a"], to="torch")  # (a stride of 12 over 4-byte items)
    assert (
        shared.data_ptr() == records["a"].ctypes.data
        and hub.plan(records["a"], to="torch").zero_copy
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(2, dtype=np.int32).reshape(1, 2)[::-1],  # strides (-8, 4)
        lambda: np.asfortranarray(np.arange(5).reshape(5, 1))[:, ::-1],  # (8, -8)
        lambda: np.arange(1, dtype=np.complex128)[::-1],  # (-16,)
        lambda: np.array(["2020-01-01"], dtype="datetime64[s]")[::-1],
    ],
)
def test_a_negative_stride_of_a_length_one_dimension_reaches_torch_shared(
    hub: ih.Hub, make: Any
) -> None:
    # numpy calls such an array contiguous (the stride moves to no other element), so it
    # is planned as shared; torch.from_numpy refused it mid-run (found by the fuzzer).
    array = make()
    assert array.flags.c_contiguous and min(array.strides) < 0
    plan = hub.plan(array, to="torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ih.LossyConversionWarning)  # (datetime64: ticks)
        out = hub.convert(array, to="torch")
        again = hub.convert(array, to="torch")  # the remembered route too
    assert plan.zero_copy and out.data_ptr() == again.data_ptr() == array.ctypes.data
    expected = array.view("int64") if array.dtype.kind == "M" else array
    assert out.numpy().tolist() == expected.tolist()


def test_a_length_one_dimensions_odd_stride_reaches_arrow_as_a_tensor_column(
    hub: ih.Hub,
) -> None:
    # pyarrow's tensor import refused a length-1 first dimension whose stride numpy
    # ignores (negative, or what a transpose left): "First stride needs to be largest"
    flipped = np.arange(108.0).reshape(1, 3, 6, 6)[::-1]  # strides (-864, 288, 48, 8)
    base = torch.arange(54).reshape(3, 1, 2, 9)[:, :, :, :3]
    transposed = torch.arange(18).reshape(3, 1, 2, 3).transpose(0, 1)  # (6, 6, 3, 1)
    odd = np.lib.stride_tricks.as_strided(np.arange(18), (1, 3, 2, 3), (48, 48, 24, 8))
    for source in (flipped, transposed, odd, base[:1]):
        plan = hub.plan(source, to="pyarrow")
        out = hub.convert(source, to="pyarrow")
        values = source.numpy() if isinstance(source, torch.Tensor) else source
        assert out.to_numpy_ndarray().tolist() == values.tolist()
        shared = hub.shared_bytes(source, out)
        assert (shared == values.nbytes) == plan.zero_copy, (source.shape, plan)
    assert hub.plan(flipped, to="pyarrow").zero_copy and hub.plan(odd, to="pyarrow").zero_copy


def test_threads_share_one_hub() -> None:
    hub = ih.Hub(autoload=False)
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for i in range(30):
                data = np.arange(seed, seed + 50 + i, dtype=np.float64)
                out = hub.convert(hub.convert(data, to="polars"), to="torch")
                assert out.tolist() == data.tolist()
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_run_keeps_the_requested_type(hub: ih.Hub) -> None:
    table = pa.table({"a": [1, 2]})
    assert isinstance(hub.planner.run(table, hub.plan(table, to=pl.Series)), pl.Series)


def test_torch_views_report_only_their_bytes(hub: ih.Hub) -> None:
    base = torch.arange(2000, dtype=torch.float64)
    view = base[1000:]
    assert sum(b.size for b in hub.buffers(view)) == 8000
    assert hub.shared_bytes(view, hub.convert(view, to="numpy")) == 8000


def test_version_matches_the_distribution() -> None:
    from importlib.metadata import version

    assert ih.__version__ == version("interchange-hub")


def test_the_verbs_document_every_parameter_with_an_example() -> None:
    for verb in (ih.convert, ih.plan, ih.export):
        doc = inspect.getdoc(verb) or ""
        assert ">>> " in doc, verb.__name__
        for name in inspect.signature(verb).parameters:
            if verb is ih.plan:
                continue  # plan takes convert's arguments and says so
            assert f":param {name}:" in doc, (verb.__name__, name)
    assert ":raises" in (inspect.getdoc(ih.convert) or "")
    assert "convert" in (inspect.getdoc(ih.plan) or "")


def test_the_docstring_examples_run() -> None:
    import doctest

    failures, tries = doctest.testmod(ih, optionflags=doctest.ELLIPSIS)
    assert tries >= 8 and failures == 0


def test_a_numpy_matrix_goes_to_arrow_in_either_order(hub: ih.Hub) -> None:
    # a C-ordered np.matrix failed mid-run ("only handle 1-dimensional arrays": a matrix's
    # column is itself 2-D); an F-ordered one went zero-copy (found by a review helper)
    for order in ("C", "F"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PendingDeprecationWarning)  # (numpy's, of matrix)
            matrix: Any = np.matrix([[1.0, 2.0], [3.0, 4.0]])
        matrix = np.asfortranarray(matrix) if order == "F" else matrix
        for _ in range(2):  # (planned, then the kept run)
            table = hub.convert(matrix, to="pyarrow")
            assert table.to_pydict() == {"column_0": [1.0, 3.0], "column_1": [2.0, 4.0]}
        assert hub.plan(matrix, to="pyarrow").zero_copy is (order == "F")


@pytest.mark.parametrize("to", ["polars", "pandas", "pyarrow"])
def test_a_2d_tensor_of_no_columns_keeps_its_rows(hub: ih.Hub, to: str) -> None:
    # numpy/torch (3, 0) into polars gave a (0, 0) frame (pl.from_numpy's), silently
    for source in (np.zeros((3, 0)), torch.zeros(3, 0)):
        assert hub.convert(source, to=to).shape == (3, 0)
