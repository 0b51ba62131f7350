"""Every error a user can hit: from the hub's tree, saying what happened and what to do."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import torch

import interchange_hub as ih


def test_the_error_tree() -> None:
    for cls in (
        ih.UnsupportedObjectError,
        ih.UnknownTargetError,
        ih.NoRouteError,
        ih.CopyRequiredError,
        ih.LossyConversionError,
        ih.ConsumedSourceError,
        ih.ProtocolError,
        ih.ConversionError,
        ih.MissingDependencyError,
        ih.DeviceError,
    ):
        assert issubclass(cls, ih.InterchangeError)
    assert issubclass(ih.CopyRequiredError, ih.NoRouteError)
    assert issubclass(ih.MissingDependencyError, ImportError)
    assert issubclass(ih.UnsupportedObjectError, TypeError)
    assert issubclass(ih.LossyConversionWarning, UserWarning)


def test_unsupported_object_names_type_and_lists_supported(hub: ih.Hub) -> None:
    class Opaque:
        pass

    with pytest.raises(ih.UnsupportedObjectError) as info:
        hub.convert(Opaque(), to="polars")
    message = str(info.value)
    assert "test_errors.test_unsupported_object_names_type_and_lists_supported" in message
    assert "polars (DataFrame, Series" in message and "numpy (ndarray)" in message
    assert "__arrow_c_stream__" in message
    assert "polars.DataFrame" in info.value.supported and "numpy.ndarray" in info.value.supported
    with pytest.raises(ih.UnsupportedObjectError) as info:
        hub.convert({"a": [1, 2]}, to="polars")  # a common object: a hint instead of the list
    assert info.value.type_name == "builtins.dict" and "a dict" in str(info.value)
    assert "polars.DataFrame" in info.value.supported and "numpy.ndarray" in info.value.supported


def test_unknown_target_suggests_nearest(hub: ih.Hub) -> None:
    with pytest.raises(ih.UnknownTargetError, match="Did you mean 'polars'"):
        hub.convert(np.arange(3), to="polar")
    with pytest.raises(ih.UnknownTargetError, match="Known targets: cupy, nanoarrow, numpy"):
        hub.convert(np.arange(3), to="excel")


def test_unknown_target_type(hub: ih.Hub) -> None:
    with pytest.raises(ih.UnknownTargetError, match=r"builtins\.list"):
        hub.convert(np.arange(3), to=list)


def test_aliases_are_accepted(hub: ih.Hub) -> None:
    assert isinstance(hub.convert(np.arange(3), to="pl"), pl.Series)
    assert isinstance(hub.convert(np.arange(3), to="pd"), pd.Series)


class _MissingLibrary(ih.Adapter):
    name = "ghostlib"
    module = "ghostlib_is_not_installed"
    extra = "ghostlib"

    def owns(self, obj: object) -> bool:
        return False


class _GhostPlugin:
    @ih.hookimpl
    def register_adapters(self, register: Any) -> None:
        register(_MissingLibrary())


def test_target_not_installed_names_the_extra() -> None:
    hub = ih.Hub(autoload=False, plugins=[_GhostPlugin()])
    with pytest.raises(
        ih.MissingDependencyError, match=r"pip install 'interchange-hub\[ghostlib\]'"
    ):
        hub.convert(np.arange(3), to="ghostlib")


def test_mixed_table_to_tensor(hub: ih.Hub) -> None:
    table = pa.table({"a": [1, 2], "b": ["x", "y"]})
    with pytest.raises(
        ih.NoRouteError, match=r"column 'b' \(string\) cannot be stored in a tensor"
    ):
        hub.convert(table, to="torch")
    with pytest.raises(ih.NoRouteError, match="share one numeric dtype"):
        hub.convert(pa.table({"a": [1, 2], "b": pa.array([1, 2], pa.date32())}), to="numpy")


def test_table_of_several_columns_to_a_column_type(hub: ih.Hub) -> None:
    with pytest.raises(ih.NoRouteError, match="table of 2 columns; select one column"):
        hub.convert(pa.table({"a": [1], "b": [2]}), to=pl.Series)


def test_bool_with_nulls_to_tensor(hub: ih.Hub) -> None:
    with pytest.raises(ih.NoRouteError, match="fill them first"):
        hub.convert(pa.array([True, None]), to="torch")


def test_polars_object_column_is_refused(hub: ih.Hub) -> None:
    df = pl.DataFrame({"o": pl.Series([object(), object()], dtype=pl.Object)})
    with pytest.raises(ih.NoRouteError, match="Object column 'o'.*raw pointers"):
        hub.convert(df, to="pyarrow")


def test_pandas_mixed_objects_are_refused(hub: ih.Hub) -> None:
    with pytest.raises(ih.NoRouteError, match="mixed Python objects"):
        hub.convert(pd.DataFrame({"m": [1, "a"]}), to="polars")


def test_bfloat16_to_numpy(hub: ih.Hub) -> None:
    with pytest.raises(ih.NoRouteError, match="bfloat16"):
        hub.convert(torch.ones(3, dtype=torch.bfloat16), to="numpy")


def test_a_library_failure_is_wrapped_with_the_step(hub: ih.Hub) -> None:
    class Broken:
        def __arrow_c_stream__(self, requested_schema: object = None) -> object:
            raise RuntimeError("producer exploded")

    with pytest.raises(ih.ConversionError, match="producer exploded") as info:
        hub.convert(Broken(), to="polars")
    assert isinstance(info.value.__cause__, RuntimeError)


def test_bad_device_string(hub: ih.Hub) -> None:
    with pytest.raises(ih.DeviceError, match="'cpu', 'cuda' or 'cuda:N'"):
        hub.convert(np.arange(3), to="torch", device="gpu-please")


def test_repeated_pandas_column_names(hub: ih.Hub) -> None:
    with pytest.raises(ih.NoRouteError, match=r"repeats column names \(a\)"):
        hub.convert(pd.DataFrame([[1, 2]], columns=["a", "a"]), to="polars")


def test_nested_int128_polars_column(hub: ih.Hub) -> None:
    df = pl.DataFrame({"l": pl.Series([[1]], dtype=pl.List(pl.Int128))})
    with pytest.raises(ih.NoRouteError, match=r"column 'l' \(List\(Int128\)\)"):
        hub.convert(df, to="pyarrow")


def test_torch_sparse_and_lazy_bits(hub: ih.Hub) -> None:
    # CSR, CSC and BSR tensors, and nested ones, failed in describe ("Sparse CSR tensors do
    # not have is_contiguous", a ProtocolError asking for a bug report)
    eye = torch.eye(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (torch: CSR support is in beta)
        sparse = [eye.to_sparse(), eye.to_sparse_csr(), eye.to_sparse_csc()]
        sparse.append(eye.to_sparse_bsr((2, 2)))
    for tensor in sparse:
        with pytest.raises(ih.NoRouteError, match=r"to_dense\(\)"):
            hub.convert(tensor, to="numpy")
        with pytest.raises(ih.NoRouteError, match=r"to_dense\(\)"):
            hub.plan(tensor, to="pyarrow")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (torch: nested tensors are a prototype)
        nested = torch.nested.nested_tensor([torch.arange(2.0), torch.arange(3.0)])
    with pytest.raises(ih.NoRouteError, match=r"nested tensor .*unbind\(\)"):
        hub.convert(nested, to="numpy")
    conj = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex64).conj()
    plan = hub.plan(conj, to="numpy")
    result = hub.convert(conj, to="numpy")
    assert not plan.zero_copy and hub.shared_bytes(conj, result) == 0
    assert result.tolist() == [1 - 2j, 3 + 1j]


def test_numpy_datetime_units(hub: ih.Hub) -> None:
    days = np.arange(3).astype("datetime64[D]")
    assert not hub.plan(days, to="pyarrow").zero_copy
    assert hub.convert(days, to="pyarrow").type == pa.date32()
    with pytest.raises(ih.NoRouteError, match=r"datetime64\[Y\]"):
        hub.convert(np.arange(3).astype("datetime64[Y]"), to="pyarrow")


def test_pandas_fixed_offset_is_reported_like_arrow(hub: ih.Hub) -> None:
    import datetime as dt

    zone = dt.timezone(dt.timedelta(hours=1))
    frame = pd.DataFrame({"t": pd.date_range("2020", periods=2, tz=zone)})
    with pytest.raises(ih.LossyConversionError, match=r"tz=\+01:00\] -> Datetime\('UTC'\)"):
        hub.convert(frame, to="polars", strict=True)


def test_numpy_dtypes_arrow_lacks(hub: ih.Hub) -> None:
    cases = [
        (np.arange(3.0).astype(">f8"), "non-native byte order"),
        (np.zeros(3, np.longdouble), "float128"),
        (np.zeros(3, dtype=[("a", "i4")]), "no type for numpy"),
    ]
    for array, message in cases:
        with pytest.raises(ih.NoRouteError, match=message):
            hub.plan(array, to="pyarrow")


def test_options_are_validated(hub: ih.Hub) -> None:
    with pytest.raises(ih.InvalidOptionError, match="copy must be None"):
        hub.convert(np.arange(3), to="torch", copy="yes")  # type: ignore[call-overload]
    with pytest.raises(ih.InvalidOptionError, match="not 0"):
        hub.convert(np.arange(3), to="torch", copy=0)  # type: ignore[call-overload]
    with pytest.raises(ih.InvalidOptionError, match="strict must be True or False, not 1"):
        hub.convert(np.arange(3), to="torch", strict=1)  # type: ignore[call-overload]
    assert issubclass(ih.DeviceError, ih.InvalidOptionError)


@pytest.mark.parametrize("convert", ["module", "hub"])
def test_options_are_validated_once_the_call_is_kept(hub: ih.Hub, convert: str) -> None:
    # A kept call is found by a dict key, where 0 == False and 1 == True: copy=0 and
    # strict=1 were let through once copy=False and strict=True had run.
    table = pa.table({"a": [1.0, 2.0]})
    kept = ih.default_hub() if convert == "module" else hub
    call: Any = ih.convert if convert == "module" else hub.convert  # (bad options below)
    for copy in (None, True, False):
        for strict in (True, False):
            call(table, to="polars", copy=copy, strict=strict)
            assert kept.planner.kept_route(table, "polars", copy, None, strict) is not None
            call(table, to="polars", copy=copy, strict=strict, as_dict=True)
    for bad_copy in (0, 1, 0.0, 1.0, np.False_, np.True_):
        with pytest.raises(ih.InvalidOptionError, match="copy must be None"):
            call(table, to="polars", copy=bad_copy)
    for bad_strict in (0, 1, np.True_):
        with pytest.raises(ih.InvalidOptionError, match="strict must be True or False"):
            call(table, to="polars", strict=bad_strict)
    with pytest.raises(ih.InvalidOptionError, match="copy must be None"):
        call(table, to="polars", copy=0, as_dict=True)


def test_stream_into_a_column_type_needs_one_column(hub: ih.Hub) -> None:
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64())])
    reader = pa.RecordBatchReader.from_batches(schema, [pa.record_batch([[1], [2]], schema=schema)])
    with pytest.raises(ih.NoRouteError, match="table of 2 columns"):
        hub.convert(reader, to=pl.Series)


def test_nested_decimals_into_polars_are_cast_or_refused(hub: ih.Hub) -> None:
    # A list or struct of decimal256 reached polars, which panicked ("operator does not
    # support primitive Int256"), and a struct of decimal32 was claimed zero-copy though it
    # was cast: nested decimals are cast to decimal128 as top-level ones are (a planned
    # copy), and more than 38 digits are refused in the plan (found by a review helper)
    from decimal import Decimal

    for typ in (pa.decimal32(5, 2), pa.decimal64(12, 2), pa.decimal256(38, 2)):
        values = pa.array([Decimal("1.25"), None], typ)
        nested = {
            "list": pa.ListArray.from_arrays(pa.array([0, 2]), values),
            "struct": pa.StructArray.from_arrays([values], ["x"]),
        }
        for kind, column in nested.items():
            table = pa.table({"c": column})
            plan = hub.plan(table, to="polars")
            assert not plan.zero_copy and plan.copied_bytes > 0, plan
            back = hub.convert(hub.convert(table, to="polars"), to="pyarrow")
            assert back.column("c").to_pylist() == column.to_pylist(), kind
    wide = pa.array([1], pa.decimal256(40, 0))
    for column in (
        pa.ListArray.from_arrays(pa.array([0, 1]), wide),
        pa.StructArray.from_arrays([wide], ["x"]),
    ):
        with pytest.raises(ih.NoRouteError, match="more than 38 digits"):
            hub.plan(pa.table({"c": column}), to="polars")


def test_nested_uuids_and_dates_into_polars_say_what_they_become(hub: ih.Hub) -> None:
    # polars reads a uuid as Binary and a date64 inside a struct or list as a Datetime:
    # a top-level one was warned (uuid) or made date32 (date64); a nested one silently not
    uuid = pa.ExtensionArray.from_storage(pa.uuid(), pa.array([b"\x01" * 16, None], pa.binary(16)))
    dates = pa.array([86_400_000 * 3, None], pa.date64())
    for values in (uuid, dates):
        for column in (
            pa.StructArray.from_arrays([values], ["v"]),
            pa.ListArray.from_arrays(pa.array([0, 2]), values),
        ):
            table = pa.table({"c": column})
            if values is uuid:
                with pytest.warns(
                    ih.LossyConversionWarning, match="column 'c'.*arrow.uuid as Binary"
                ):
                    hub.convert(table, to="polars")
                with pytest.raises(ih.LossyConversionError):
                    hub.convert(table, to="polars", strict=True)
                continue
            back = hub.convert(hub.convert(table, to="polars", strict=True), to="pyarrow")
            assert "date32[day]" in str(back.schema.field("c").type)
            assert back.column("c").cast(column.type).to_pylist() == column.to_pylist()


@pytest.mark.parametrize("bad", ["no", "false", 0, 1])
def test_hub_options_are_validated(bad: object) -> None:
    # Hub(autoload="no") loaded every plugin (a string read as true); builtin= was checked
    with pytest.raises(ih.InvalidOptionError, match="autoload must be True, False or None"):
        ih.Hub(autoload=bad)  # type: ignore[arg-type]
    with pytest.raises(ih.InvalidOptionError, match="builtin must be True or False"):
        ih.Hub(builtin=bad)  # type: ignore[arg-type]
