"""The messages of common mistakes: the cause and the fix first, a short first line, the
error's class from the hub's tree, hints for everyday objects, no pasted repr."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import torch

import interchange_hub as ih
from interchange_hub import errors
from tests.fake_plugins import simdevice

E = TypeVar("E", bound=Exception)
ROOT = Path(__file__).resolve().parent.parent
TABLE = pa.table({"a": ["x"]})


def first_line(exc: BaseException) -> str:
    return str(exc).split("\n")[0]


def raised(kind: type[E], call: Callable[[], object]) -> E:
    """The error ``call`` raises, checked to be a ``kind`` with a short first line."""
    with pytest.raises(kind) as info:
        call()
    line = first_line(info.value)
    assert len(line) < errors.FIRST_LINE, f"{len(line)} characters: {line}"
    return info.value


# -- the object: hints for everyday Python objects ------------------------------------------


def test_a_list_says_how_to_build_an_array(hub: ih.Hub) -> None:
    exc = raised(ih.UnsupportedObjectError, lambda: hub.convert([1, 2, 3], to="polars"))
    assert isinstance(exc, TypeError)
    assert "pa.array(lst)" in str(exc) and "np.asarray(lst)" in str(exc)
    assert "Supported" not in str(exc) and len(str(exc)) < 200  # no list of 22 types
    assert exc.type_name == "builtins.list" and "pyarrow.Table" in exc.supported


def test_a_list_of_rows_says_how_to_build_a_table(hub: ih.Hub) -> None:
    exc = raised(ih.UnsupportedObjectError, lambda: hub.convert([{"a": 1}], to="polars"))
    assert "pl.DataFrame(rows)" in str(exc) and "pa.Table.from_pylist(rows)" in str(exc)


def test_a_dict_says_how_to_build_a_table(hub: ih.Hub) -> None:
    exc = raised(ih.UnsupportedObjectError, lambda: hub.convert({"a": [1]}, to="polars"))
    assert "pl.DataFrame(d)" in str(exc) and "pa.table(d)" in str(exc)
    assert "Supported" not in str(exc)


def test_none_asks_whether_a_function_returned_nothing(hub: ih.Hub) -> None:
    exc = raised(ih.UnsupportedObjectError, lambda: hub.convert(None, to="pandas"))
    assert str(exc).startswith("cannot convert None:")
    assert "did a function return nothing" in str(exc)


def test_a_generator_is_to_be_materialised(hub: ih.Hub) -> None:
    exc = raised(ih.UnsupportedObjectError, lambda: hub.convert((i for i in range(3)), "numpy"))
    assert "a generator" in str(exc) and "materialise it" in str(exc)
    assert "list(gen)" in str(exc) and "RecordBatchReader.from_batches" in str(exc)


def test_swapped_arguments_are_named(hub: ih.Hub) -> None:
    exc = raised(ih.UnsupportedObjectError, lambda: hub.convert("polars", to="pandas"))
    assert "ih.convert(data, to='polars')" in str(exc)


class Opaque:
    """No adapter owns it, and it speaks no protocol."""


def test_an_unknown_object_lists_the_supported_types_compactly(hub: ih.Hub) -> None:
    exc = raised(ih.UnsupportedObjectError, lambda: hub.convert(Opaque(), to="polars"))
    head, listing = str(exc).split("\n")
    assert (
        "a tests.test_messages.Opaque object" in head
        and "__arrow_c_stream__" in head
        and "__dlpack__" in head
    )
    assert listing.startswith("Supported: pyarrow (Table, RecordBatch")
    assert "polars (DataFrame, Series, LazyFrame)" in listing and "numpy (ndarray)" in listing


# -- no route: the most relevant reason, in the user's terms -----------------------------------


def test_no_route_leads_with_the_cause_and_keeps_every_reason(hub: ih.Hub) -> None:
    exc = raised(ih.NoRouteError, lambda: hub.convert(pa.table({"a": ["x"]}), to="torch"))
    assert type(exc) is ih.NoRouteError
    message = str(exc)
    assert message.startswith("cannot convert pyarrow.Table to torch: ")
    # torch takes tensors through DLPack: that step's reason leads, not numpy's (a detour).
    assert "column 'a' (string) cannot be stored in a tensor" in first_line(exc)
    assert "(found a: string); cast the columns to one dtype first" in message
    for internal in ("fastpath", "bridge", "(numpy)"):  # adapter names of the steps
        assert internal not in message
    assert "shares only numeric data" not in message  # a shortcut's reason is noise here
    # Every reason, once, stays available on the error.
    assert "arrow -> dlpack: column 'a' (string) cannot be stored in a tensor" in exc.reasons
    assert any("shares only numeric data" in r for r in exc.reasons)
    assert len(set(exc.reasons)) == len(exc.reasons)
    lead = first_line(exc).split(": ", 1)[1]
    assert message.count(lead) == 1  # the lead is not repeated below


def test_no_route_skips_steps_that_were_optional(hub: ih.Hub) -> None:
    exc = raised(ih.NoRouteError, lambda: hub.convert(torch.ones(3, dtype=torch.bfloat16), "numpy"))
    assert first_line(exc) == (
        "cannot convert torch.Tensor to numpy: numpy cannot hold this tensor (bfloat16); "
        "cast it first"
    )
    assert "same-library copy" not in str(exc)  # a copy step that was not asked for
    assert any("same-library copy" in r for r in exc.reasons)


def test_a_copy_refusal_names_columns_compactly(hub: ih.Hub) -> None:
    table = pa.table({f"c{i}": [1.0, None] for i in range(6)})
    exc = raised(ih.CopyRequiredError, lambda: hub.convert(table, to="numpy", copy=False))
    assert isinstance(exc, ih.NoRouteError)
    assert "columns 'c0', 'c1', 'c2' and 3 more are copied" in str(exc)
    assert "Pass copy=None" in str(exc)
    assert exc.columns == tuple(f"c{i}" for i in range(6))


# -- to=: names, types, modules, and data passed by mistake -----------------------------------


def test_data_as_the_target_is_named_not_pasted(hub: ih.Hub) -> None:
    frame = pl.DataFrame({"a": [1]})
    exc = raised(ih.UnknownTargetError, lambda: hub.convert(TABLE, to=frame))
    assert isinstance(exc, ValueError)
    message = str(exc)
    assert message.startswith(
        "to= takes a library name or type, got a polars.DataFrame object; did you mean to "
        "convert it? ih.convert(obj, to=...)"
    )
    assert "to=polars.DataFrame or to='polars'" in message
    for piece in ("shape", "┌", "i64", repr(frame).splitlines()[0]):
        assert piece not in message
    exc = raised(ih.UnknownTargetError, lambda: hub.convert(TABLE, to=np.arange(1000)))
    assert "got a numpy.ndarray object" in str(exc) and "999" not in str(exc)
    exc = raised(ih.UnknownTargetError, lambda: hub.convert(TABLE, to=None))
    assert "to= is None" in str(exc)


def test_a_typo_suggests_the_name_and_lists_the_targets(hub: ih.Hub) -> None:
    exc = raised(ih.UnknownTargetError, lambda: hub.convert(TABLE, to="polrs"))
    assert str(exc) == (
        "unknown target 'polrs'. Did you mean 'polars'? Known targets: cupy, nanoarrow, "
        "numpy, pandas, polars, pyarrow, torch."
    )
    assert exc.known == ("cupy", "nanoarrow", "numpy", "pandas", "polars", "pyarrow", "torch")
    assert "Did you mean 'torch'" in str(
        raised(ih.UnknownTargetError, lambda: hub.convert(TABLE, "pytorch"))
    )
    dotted = raised(ih.UnknownTargetError, lambda: hub.convert(TABLE, to="pl.DataFrame"))
    assert "Did you mean 'polars'?" in str(dotted) and "to=pl.DataFrame, not as a string" in str(
        dotted
    )


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("tf", "TensorFlow"),
        ("tensorflow", "TensorFlow"),
        ("dask", "Dask"),
        ("ray", "Ray Data"),
        ("cudf", "cuDF"),
        ("modin", "Modin"),
    ],
)
def test_a_famous_library_is_not_supported_yet_and_nothing_else_is_suggested(
    hub: ih.Hub, name: str, title: str
) -> None:
    exc = raised(ih.UnknownTargetError, lambda: hub.convert(TABLE, to=name))
    message = str(exc)
    assert f"to={name!r}: {title} is not supported (yet)" in message
    assert "a plugin can add one" in message and "Meanwhile: " in message
    assert "Did you mean" not in message  # tf is not torch, dask is not pandas


def test_suggestions_are_only_close_spellings(hub: ih.Hub) -> None:
    for far in ("tf", "dask", "excel", "spreadsheet", "sql"):
        message = str(raised(ih.UnknownTargetError, partial(hub.convert, TABLE, to=far)))
        assert "Did you mean" not in message, message
    for near, name in (("pandsa", "pandas"), ("numpi", "numpy"), ("tourch", "torch")):
        message = str(raised(ih.UnknownTargetError, partial(hub.convert, TABLE, to=near)))
        assert f"Did you mean {name!r}?" in message


def test_a_device_given_as_the_target(hub: ih.Hub) -> None:
    exc = raised(ih.UnknownTargetError, lambda: hub.convert(TABLE, to="cuda"))
    assert "names a device, not a library" in str(exc) and "device='cuda'" in str(exc)


def test_a_library_module_is_a_target(hub: ih.Hub) -> None:
    floats = pa.table({"a": [1.0, 2.0]})
    assert isinstance(hub.convert(floats, to=pd), pd.DataFrame)
    assert isinstance(hub.convert(floats, to=pl), pl.DataFrame)
    assert isinstance(hub.convert(floats, to=np), np.ndarray)
    assert isinstance(hub.convert(floats, to=pa), pa.Table)
    with pytest.warns(ih.WriteThroughWarning):
        assert isinstance(hub.convert(floats, to=torch), torch.Tensor)
    assert hub.plan(floats, to=pd).target == hub.plan(floats, to="pandas").target
    exc = raised(ih.UnknownTargetError, lambda: hub.convert(floats, to=pc))
    assert "the module pyarrow.compute" in str(exc) and "Did you mean 'pyarrow'?" in str(exc)
    exc = raised(ih.UnknownTargetError, lambda: hub.convert(floats, to=os))
    assert "the module os" in str(exc) and "Did you mean" not in str(exc)


def test_a_type_of_a_known_library_that_no_adapter_makes(hub: ih.Hub) -> None:
    exc = raised(ih.UnknownTargetError, lambda: hub.convert(TABLE, to=np.int64))
    assert "to=numpy.int64: the numpy adapter does not make that type" in str(exc)
    assert "numpy.ndarray" in str(exc) and "numpy.ndarray" in exc.known


def _plugin_distributions() -> dict[str, str]:
    """Target name -> distribution, as the plugins in plugins/ declare them."""
    found = {}
    for path in sorted(ROOT.glob("plugins/*/pyproject.toml")):
        project = tomllib.loads(path.read_text())["project"]
        for name in project["entry-points"]["interchange_hub"]:
            found[name] = project["name"]
    return found


def test_the_known_plugin_targets_are_the_plugins_of_this_project() -> None:
    assert errors.PLUGIN_TARGETS | errors.PLUGIN_SOURCES == _plugin_distributions()
    assert not errors.PLUGIN_TARGETS.keys() & errors.PLUGIN_SOURCES.keys()


@pytest.mark.parametrize("name", sorted(errors.PLUGIN_TARGETS))
def test_a_plugin_target_says_what_to_install(
    name: str, hub: ih.Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    distribution = errors.PLUGIN_TARGETS[name]
    monkeypatch.setattr(errors, "_distribution_installed", lambda _: False)
    exc = raised(ih.UnknownTargetError, lambda: hub.convert(TABLE, to=name))
    assert str(exc).startswith(
        f"to={name!r} needs the plugin {distribution}: pip install {distribution}. Known"
    )
    assert "Known targets: " in str(exc)


def test_an_installed_plugin_that_is_not_loaded_says_how_to_load_it(hub: ih.Hub) -> None:
    pytest.importorskip("interchange_hub_duckdb")
    exc = raised(ih.UnknownTargetError, lambda: hub.convert(TABLE, to="duckdb"))
    message = first_line(exc)
    assert "pip install interchange-hub-duckdb" in message
    assert "installed but this hub did not load it" in message
    assert "Hub(plugins=['interchange_hub_duckdb'])" in message
    # The advice works.
    pytest.importorskip("duckdb")
    loaded = ih.Hub(autoload=False, plugins=["interchange_hub_duckdb"])
    assert type(loaded.convert(TABLE, to="duckdb")).__module__.startswith("duckdb")


def test_a_plugin_type_without_its_plugin(hub: ih.Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    duckdb: Any = pytest.importorskip("duckdb")
    monkeypatch.setattr(errors, "_distribution_installed", lambda _: False)
    exc = raised(ih.UnknownTargetError, lambda: hub.convert(TABLE, to=duckdb.DuckDBPyRelation))
    assert "needs the plugin interchange-hub-duckdb: pip install interchange-hub-duckdb" in str(exc)


# -- device= ----------------------------------------------------------------------------------


def test_gpu_suggests_cuda_and_lists_only_the_common_kinds(hub: ih.Hub) -> None:
    exc = raised(ih.DeviceError, lambda: hub.convert(np.arange(3), to="torch", device="gpu"))
    assert isinstance(exc, ih.InvalidOptionError) and isinstance(exc, ValueError)
    assert str(exc) == (
        "unknown device 'gpu'. Did you mean 'cuda' (the current GPU) or 'cuda:0'? Use 'cpu', "
        "'cuda' or 'cuda:N' (N the GPU index)"
    )
    for rare in ("vulkan", "hexagon", "webgpu", "rocm"):
        assert rare not in str(exc)
    exc = raised(ih.DeviceError, lambda: hub.convert(np.arange(3), "torch", device="gpu:1"))
    assert "Did you mean 'cuda:1'?" in str(exc)
    exc = raised(ih.DeviceError, lambda: hub.convert(np.arange(3), "torch", device=0))  # type: ignore[call-overload]
    assert "Did you mean 'cuda:0'?" in str(exc)


def test_an_unknown_device_names_the_kinds_the_adapters_hold() -> None:
    hub = ih.Hub(autoload=False, plugins=[simdevice])
    exc = raised(ih.DeviceError, lambda: hub.convert(np.arange(3), "torch", device="simdev"))
    assert "or a kind the adapters hold: ext_dev" in str(exc)


def test_option_values_are_validated_strictly(hub: ih.Hub) -> None:
    x = np.arange(3)
    wrong: list[dict[str, Any]] = [{"copy": 0}, {"copy": "no"}, {"strict": 1}, {"strict": None}]
    for options in wrong:
        raised(ih.InvalidOptionError, partial(hub.convert, x, to="torch", **options))
    raised(ih.InvalidOptionError, lambda: hub.convert(x, to="torch", as_dict=1))  # type: ignore[call-overload]
    raised(ih.DeviceError, lambda: hub.convert(x, to="torch", device=True))  # type: ignore[call-overload]


# -- the ten mistakes together ----------------------------------------------------------------

MISTAKES: dict[str, tuple[type[Exception], Callable[[ih.Hub], object]]] = {
    "list": (ih.UnsupportedObjectError, lambda h: h.convert([1, 2, 3], to="polars")),
    "dict": (ih.UnsupportedObjectError, lambda h: h.convert({"a": [1]}, to="polars")),
    "None": (ih.UnsupportedObjectError, lambda h: h.convert(None, to="pandas")),
    "generator": (ih.UnsupportedObjectError, lambda h: h.convert(iter(range(3)), to="numpy")),
    "no route": (ih.NoRouteError, lambda h: h.convert(TABLE, to="torch")),
    "frame as to=": (ih.UnknownTargetError, lambda h: h.convert(TABLE, to=pl.DataFrame())),
    "tf": (ih.UnknownTargetError, lambda h: h.convert(TABLE, to="tf")),
    "dask": (ih.UnknownTargetError, lambda h: h.convert(TABLE, to="dask")),
    "duckdb": (ih.UnknownTargetError, lambda h: h.convert(TABLE, to="duckdb")),
    "device": (ih.DeviceError, lambda h: h.convert(np.arange(3), to="torch", device="gpu")),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_every_message_is_short_and_from_the_tree(hub: ih.Hub, mistake: str) -> None:
    kind, call = MISTAKES[mistake]
    exc = raised(kind, lambda: call(hub))
    assert isinstance(exc, ih.InterchangeError)
    assert "<" not in first_line(exc)  # no repr of an object (<module ...>, <object at ...>)


def test_no_route_leads_with_the_target_s_own_step_not_a_detour(hub: ih.Hub) -> None:
    table = pa.table({"i": pa.array([pa.MonthDayNano([1, 2, 3])], pa.month_day_nano_interval())})
    exc = raised(ih.NoRouteError, lambda: hub.convert(table, to="numpy"))
    assert "polars" not in first_line(exc)  # arrow -> polars is a detour for numpy
    assert "share one numeric dtype" in first_line(exc)


def test_a_decimal_of_a_negative_scale_is_refused_by_polars_with_what_to_do() -> None:
    # Found by a fuzzing review: planned, then polars failed ("Decimal scale is not a
    # valid integer"), a ConversionError.
    import decimal

    import pyarrow as pa

    table = pa.table({"d": pa.array([decimal.Decimal("1E+5")], pa.decimal128(5, -3))})
    with pytest.raises(ih.NoRouteError, match=r"negative scale, and column 'd' .*scale of 0"):
        ih.Hub(autoload=False).convert(table, to="polars")


def test_a_pandas_object_column_of_several_types_names_them_and_what_to_do(hub: ih.Hub) -> None:
    """pandas infers "mixed" for strings beside floats and for lists beside arrays, which
    pyarrow reads: only where pyarrow fails is the column named, with its Python types."""
    frame = pd.DataFrame({"n": [1, 2, 3], "a": pd.Series(["x", 1.5, None], dtype=object)})
    for src, call in ((frame, "frame['a'].astype(str)"), (frame["a"], "series.astype(str)")):
        for to in ("pyarrow", "polars"):
            with pytest.raises(ih.ConversionError) as info:
                hub.convert(src, to=to)
            message = str(info.value)
            assert "column 'a'" in message and "2 Python types (float, str)" in message
            assert call in message and "step " not in message, message
    arrays = pd.DataFrame({"a": pd.Series([np.arange(3), [1, 2]], dtype=object)})
    assert hub.convert(arrays, to="pyarrow").column("a").to_pylist() == [[0, 1, 2], [1, 2]]


def test_copy_false_says_first_what_a_copy_would_not_mend(hub: ih.Hub) -> None:
    # Found by a review: copy=False said "Pass copy=None to allow the copy", and with
    # copy=None the conversion failed for another reason (a table is not a pa.Array).
    matrix = np.arange(4).reshape(2, 2)
    for copy in (False, None):
        with pytest.raises(ih.NoRouteError, match="select one column first"):
            hub.convert(matrix, to=pa.Array, copy=copy)
    with pytest.raises(ih.CopyRequiredError, match="Pass copy=None"):
        hub.convert(matrix, to=pa.Table, copy=False)


def test_a_torch_meta_tensor_is_said_to_hold_no_data(hub: ih.Hub) -> None:
    # (it was "the data is on ext_dev:0", a device the user never named)
    for to in ("numpy", "pyarrow"):
        with pytest.raises(ih.NoRouteError, match="'meta' device, which holds shapes"):
            hub.convert(torch.empty(3, device="meta"), to=to)


def test_pandas_labels_that_are_one_name_as_strings_are_refused_for_polars(
    hub: ih.Hub,
) -> None:
    # (pl.from_pandas failed mid-run with polars' DuplicateError, wrapped as a step failure)
    frame = pd.DataFrame({1: [1], "1": [2]})
    with pytest.raises(ih.NoRouteError, match="polars needs unique column names, and '1'"):
        hub.convert(frame, to="polars")
    assert hub.convert(frame, to="pandas") is frame


def test_a_timedelta_of_days_is_told_to_take_a_duration_unit(hub: ih.Hub) -> None:
    # the refusal said "cast to datetime64[D]" for a timedelta64[D] (a review helper)
    days = np.array([1, 2], dtype="m8[D]")
    with pytest.raises(
        ih.NoRouteError, match=r"timedelta64\[D\]; cast it to a unit of s/ms/us/ns"
    ) as refused:
        hub.convert(days, to="pyarrow")
    assert "datetime64" not in str(refused.value).split("Also tried")[0]
    assert hub.convert(days.astype("timedelta64[s]"), to="pyarrow").to_pylist()[0].days == 1
