"""Misuse and broken producers: always an error from the hub's tree, never a crash or
garbage. Tensors of every awkward shape go everywhere or are refused clearly."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import torch

import interchange_hub as ih

TABLE = pa.table({"a": [1, 2, 3], "s": ["x", "y", "z"]})
LIBS = ["pyarrow", "nanoarrow", "polars", "pandas", "numpy", "torch"]


class ReusedCapsule:
    """Hands out the same stream capsule every time: the second consumer finds it released."""

    def __init__(self) -> None:
        self.capsule = TABLE.__arrow_c_stream__()

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self.capsule


class Raising:
    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        raise RuntimeError("the database connection is closed")


class BreaksOffMidStream:
    """A stream whose second batch fails, as a network source might."""

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        def batches() -> Iterator[pa.RecordBatch]:
            yield TABLE.to_batches()[0]
            raise OSError("connection reset by peer")

        reader = pa.RecordBatchReader.from_batches(TABLE.schema, batches())
        return reader.__arrow_c_stream__(requested_schema)


class RejectsSchemas:
    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        if requested_schema is not None:
            raise NotImplementedError("requested_schema is not supported")
        return TABLE.__arrow_c_stream__()


class IgnoresSchemas:
    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return TABLE.__arrow_c_stream__()  # what duckdb and polars do


def test_a_reused_capsule_is_an_error_not_a_crash(hub: ih.Hub) -> None:
    producer = ReusedCapsule()
    assert hub.convert(producer, to="polars").shape == (3, 2)
    with pytest.raises(ih.InterchangeError, match="ReusedCapsule"):
        hub.convert(producer, to="polars")


@pytest.mark.parametrize("to", ["pyarrow", "polars", "pandas", "nanoarrow"])
def test_a_raising_producer(hub: ih.Hub, to: str) -> None:
    with pytest.raises(ih.InterchangeError, match="database connection is closed"):
        hub.convert(Raising(), to=to)


@pytest.mark.parametrize("to", ["pyarrow", "polars", "pandas", "nanoarrow"])
def test_a_stream_that_breaks_off(hub: ih.Hub, to: str) -> None:
    with pytest.raises(ih.InterchangeError, match="connection reset by peer"):
        result = hub.convert(BreaksOffMidStream(), to=to)
        hub.convert(result, to="pyarrow")  # a lazy target (a reader) fails when read


@pytest.mark.parametrize("producer", [RejectsSchemas(), IgnoresSchemas()], ids=type)
def test_a_requested_schema_is_honoured_whatever_the_producer_does(
    hub: ih.Hub, producer: Any
) -> None:
    wanted = pa.schema([("a", pa.int32()), ("s", pa.large_string())])
    table = pa.table(hub.export(producer), schema=wanted)
    assert table.schema == wanted and table.column("a").to_pylist() == [1, 2, 3]


def test_an_impossible_requested_schema_is_a_clear_error(hub: ih.Hub) -> None:
    wanted = pa.schema([("a", pa.timestamp("s")), ("s", pa.int64())])
    with pytest.raises(ih.ConversionError, match="requested schema"):
        pa.table(hub.export(IgnoresSchemas()), schema=wanted)


def tensors() -> dict[str, Any]:
    cube = np.arange(24.0).reshape(2, 3, 4)
    readonly = np.arange(6.0)
    readonly.flags.writeable = False
    return {
        "non-contiguous": np.arange(20.0).reshape(4, 5)[:, ::2],
        "negative strides": np.arange(8.0)[::-1],
        "negative 2-D": np.arange(12.0).reshape(3, 4)[::-1, ::-1],
        "zero-size": np.zeros((0,)),
        "zero-size 2-D": np.zeros((0, 3)),
        "0-d": np.array(4.5),
        "3-D": cube,
        "5-D": np.arange(32.0).reshape(2, 2, 2, 2, 2),
        "read-only": readonly,
        "torch transposed": torch.arange(12.0).reshape(3, 4).t(),
        "torch 3-D": torch.arange(24.0).reshape(2, 3, 4),
        "torch zero-size": torch.zeros(0, 2),
    }


@pytest.mark.parametrize("to", LIBS)
@pytest.mark.parametrize("name", list(tensors()))
def test_awkward_tensors_convert_or_are_refused(hub: ih.Hub, name: str, to: str) -> None:
    source = tensors()[name]
    expected = source.numpy() if isinstance(source, torch.Tensor) else source
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ih.LossyConversionWarning)
            result = hub.convert(source, to=to)
    except ih.InterchangeError as exc:
        assert str(exc)
        return
    back = hub.convert(result, to="numpy")
    back = back.numpy() if isinstance(back, torch.Tensor) else np.asarray(back)
    assert back.size == expected.size
    if back.dtype != object:
        np.testing.assert_array_equal(back.reshape(-1), np.ascontiguousarray(expected).reshape(-1))


def test_nulls_into_a_tensor_under_copy_false(hub: ih.Hub) -> None:
    with pytest.raises(ih.CopyRequiredError, match="'a'"):
        hub.convert(pa.table({"a": [1.0, None]}), to="torch", copy=False)
