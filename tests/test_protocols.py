"""Protocol helpers: devices and their ids, capsule names, the stream wrapper."""

from __future__ import annotations

from typing import Any

import nanoarrow as na
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub._c.capsule import ARROW_ARRAY_STREAM, ARROW_SCHEMA, check_capsule, name_of
from interchange_hub._core.device import CPU, Device, DeviceType
from interchange_hub._core.protocols import has_dunder
from interchange_hub.arrowkit import ArrowStreamProducer


def test_device_parsing_and_names() -> None:
    assert Device.parse("cpu") == CPU and str(CPU) == "cpu"
    assert Device.parse("cuda") == Device(DeviceType.CUDA, 0)
    assert str(Device.parse("CUDA:3")) == "cuda:3"
    with pytest.raises(ih.DeviceError):
        Device.parse("tpu:0")


def test_cpu_device_id_is_normalised_as_arrow_does() -> None:
    # Arrow writes -1 for the CPU, DLPack 0; any id read for the CPU means the CPU.
    for device_id in (-1, 0, 7):
        assert Device.from_arrow(1, device_id) == CPU
    assert CPU.arrow_id == -1 and CPU.dlpack == (1, 0)
    gpu = Device.from_arrow(2, 1)
    assert gpu.arrow_id == 1 and gpu.dlpack == (2, 1)
    assert Device.from_dlpack((1, 0)) == CPU


def test_capsule_names() -> None:
    schema, array = pa.array([1]).__arrow_c_array__()
    assert name_of(schema) == ARROW_SCHEMA and name_of(object()) is None
    check_capsule(schema, ARROW_SCHEMA, "producer")
    with pytest.raises(ih.ProtocolError, match="'arrow_array' where the protocol requires"):
        check_capsule(array, ARROW_SCHEMA, "producer")


def test_reading_a_capsule_name_leaves_ctypes_pythonapi_alone() -> None:
    # The hub calls PyCapsule_GetName through its own prototype: the shared
    # ctypes.pythonapi function object keeps whatever other code set on it.
    import ctypes

    shared = ctypes.pythonapi.PyCapsule_GetName
    before = (shared.restype, shared.argtypes)
    schema, _ = pa.array([1]).__arrow_c_array__()
    assert name_of(schema) == ARROW_SCHEMA
    assert (shared.restype, shared.argtypes) == before


def test_dunder_probing_never_runs_getattr() -> None:
    class Lazy:
        def __getattr__(self, name: str) -> object:
            raise AssertionError("probing must not call __getattr__")

    assert not has_dunder(Lazy(), "__arrow_c_stream__")
    assert has_dunder(pa.table({"a": [1]}), "__arrow_c_stream__")


def test_stream_producer_drops_a_rejected_requested_schema() -> None:
    # nanoarrow raises NotImplementedError for any requested_schema: retry without it.
    stream = na.ArrayStream(pa.table({"a": [1, 2]}))
    requested = pa.schema([("a", pa.int32())]).__arrow_c_schema__()
    capsule = ArrowStreamProducer(stream).__arrow_c_stream__(requested)
    assert name_of(capsule) == ARROW_ARRAY_STREAM
    table = pa.RecordBatchReader._import_from_c_capsule(capsule).read_all()
    assert table.column("a").to_pylist() == [1, 2]


def test_registry_records_which_plugin_gave_each_adapter(hub: ih.Hub) -> None:
    records = {r.adapter.name: r.plugin for r in hub.registry.records()}
    assert records["polars"] == "interchange_hub.adapters._polars"


@pytest.mark.parametrize(
    "make",
    [
        lambda: pl.Series("v", [1, 2]),
        lambda: pa.chunked_array([[1, 2]]),
        lambda: pd.Series([1.0, 2.0], name="w"),
    ],
    ids=["polars", "pyarrow", "pandas"],
)
def test_an_exported_column_names_its_field_as_its_stream_does(make: Any) -> None:
    exported = ih.export(make())
    stream_name = na.ArrayStream(exported).schema.name
    assert pa.field(exported).name == stream_name
    # and its array too (polars reads __arrow_c_array__ first: the name was dropped there)
    schema, _ = exported.__arrow_c_array__()
    assert pa.Field._import_from_c_capsule(schema).name == stream_name
    assert pl.Series(exported).name == stream_name


def test_a_failing_route_key_falls_back_to_the_slow_path() -> None:
    from tests.fake_plugins import boxes

    class Flaky(boxes.BoxAdapter):
        calls = 0

        def route_key(self, obj: Any) -> Any:
            type(self).calls += 1
            if type(self).calls > 2:  # kept the route, then fails: a plugin's bug
                raise RuntimeError("key is broken")
            return obj.table.schema

    hub = ih.Hub(autoload=False, plugins=[Flaky()])
    box = boxes.Box(pa.table({"a": [1, 2]}))
    for _ in range(3):
        assert hub.convert(box, to="polars").shape == (2, 1)  # no raw RuntimeError


def _strings_frame(rows: int) -> pl.DataFrame:
    numbers = pl.int_range(rows, eager=True)
    return pl.DataFrame(
        {"a": numbers.cast(pl.String), "b": (numbers * 7).cast(pl.String), "n": numbers}
    )


def _polars_casts(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The compat levels of polars' own to_arrow calls (a spy: polars still runs)."""
    calls: list[object] = []
    to_arrow = pl.DataFrame.to_arrow

    def spy(self: pl.DataFrame, *args: Any, **kwargs: Any) -> pa.Table:
        calls.append(kwargs.get("compat_level"))
        return to_arrow(self, *args, **kwargs)

    monkeypatch.setattr(pl.DataFrame, "to_arrow", spy)
    return calls


@pytest.mark.parametrize("to", ["pandas", "nanoarrow"])
def test_a_large_polars_frame_casts_its_own_views_when_the_consumer_asks(
    to: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pandas' str dtype and nanoarrow need large_string: they ask the stream for it
    # (requested_schema); polars' export honours it with its own conversion, which casts
    # the columns side by side, for a frame large enough. Same result as the consumer's
    # own cast, the plan the same, the source unchanged.
    from interchange_hub.adapters import _polars

    df = _strings_frame(300_000)
    calls = _polars_casts(monkeypatch)
    hub = ih.Hub()
    plan = hub.plan(df, to=to)
    results = [hub.convert(df, to=to) for _ in range(2)]  # planned, then the bound run
    assert len(calls) == 2 and all(c is not None for c in calls)  # CompatLevel.oldest()
    calls.clear()
    monkeypatch.setattr(_polars, "_large_on_request", lambda ctx: None)
    plain = ih.Hub()
    expected = plain.convert(df, to=to)
    assert not calls  # without the asking: polars' stream as it is, the consumer casts
    assert str(plain.plan(df, to=to)) == str(plan)
    for result in results:
        if to == "pandas":
            pd.testing.assert_frame_equal(result, expected)
            assert str(result["a"].dtype) == "str"
        else:
            assert pa.table(result).schema.field("a").type == pa.large_string()
            assert pa.table(result).equals(pa.table(expected))
    assert df["a"].dtype == pl.String and df["a"][299_999] == "299999"


def test_polars_frames_are_exported_as_they_are_below_the_size_or_without_views(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _polars_casts(monkeypatch)
    hub = ih.Hub()
    small = _strings_frame(1_000)
    numbers = pl.DataFrame({"n": pl.int_range(600_000, eager=True)})
    for df, to in ((small, "pandas"), (small, "nanoarrow"), (numbers, "pandas")):
        for _ in range(2):
            hub.convert(df, to=to)
    big = _strings_frame(300_000)
    for _ in range(2):
        assert hub.convert(big, to="pyarrow").schema.field("a").type == pa.string_view()
    assert not calls


def test_the_large_types_stream_honours_only_the_request_it_was_made_for() -> None:
    from interchange_hub.adapters._polars import _LargeOnRequest

    df = pl.DataFrame(
        {
            "s": ["x", "y"],
            "c": pl.Series(["p", "q"], dtype=pl.Categorical),
            "l": [["a"], ["b", "c"]],
            "i": [1, 2],
        }
    )
    stream = _LargeOnRequest(df)
    own = pa.table(df).schema
    assert pa.schema(stream).equals(own)  # __arrow_c_schema__: polars' own export's
    assert pa.table(stream).schema.equals(own)  # no request: as polars exports it
    large = ih.arrowkit.without_views_schema(own)
    assert str(large.field("l").type) == "large_list<item: large_string>"
    got = pa.RecordBatchReader.from_stream(stream, schema=large).read_all()
    assert got.schema.equals(large) and got.to_pylist() == pa.table(df).to_pylist()
    # Any other schema (top-level strings only, as pandas asks): polars' own stream.
    top = own.set(0, own.field(0).with_type(pa.large_string()))
    other = pa.RecordBatchReader.from_stream(stream, schema=top).read_all()
    assert other.schema.equals(own)


class _NoRequests:
    """An Arrow stream producer that says its schema and refuses any requested_schema
    (NotImplementedError, as the interface allows)."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def __arrow_c_schema__(self) -> object:
        return self.table.schema.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        if requested_schema is not None:
            raise NotImplementedError("this producer casts nothing")
        return self.table.__arrow_c_stream__()


@pytest.mark.parametrize("to", ["pandas", "nanoarrow"])
def test_a_producer_that_takes_no_request_is_read_as_it_is(to: str) -> None:
    # pandas and nanoarrow ask for large strings; a producer that refuses requests is
    # read without asking, and the consumer casts.
    table = pa.table({"s": pa.array(["x", None, "zz"], pa.string_view()), "n": [1, 2, 3]})
    out = ih.convert(_NoRequests(table), to=to)
    assert pa.table(out).column("s").to_pylist() == ["x", None, "zz"]
