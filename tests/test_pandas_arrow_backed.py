"""pandas columns held as Arrow arrays (``int64[pyarrow]``, ``bool[pyarrow]``): their
plans' zero-copy claims hold by address, copy=False refuses what copies, and a frame of
them becomes a tensor of their numbers, not of Python objects.

Found by a fuzzing review: an Arrow-backed Series of booleans, or of several chunks, went
into numpy and torch on a plan that claimed a view (``Series.to_numpy`` copies both), so
copy=False let the copy through; into polars, several chunks were claimed shared where
``pl.from_pandas`` joins them; and a frame of Arrow-backed integers became an object
array in numpy, and failed in torch. Below: pandas data Arrow has no type for (sparse,
complex), refused with what to do, or sent where it can go.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub.adapter import Flag

HUB = ih.Hub(autoload=False)

CHUNKS: dict[str, list[list[Any]]] = {
    "int64, one chunk": [[1, 2, 3]],
    "int64, two chunks": [[1, 2], [3]],
    "float64 with a null, two chunks": [[1.5, None], [2.0]],
    "bool, one chunk": [[True, False, True]],
    "bool, two chunks": [[True], [False, True]],
    "string, two chunks": [["a", "b"], ["c"]],
}
TARGETS = ("numpy", "torch", "polars", "pyarrow", "nanoarrow", "pandas")


def _series(chunks: list[list[Any]]) -> pd.Series:
    return pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array(chunks)))


def _sources(case: str) -> dict[str, Any]:
    s = _series(CHUNKS[case])
    return {"Series": s, "DataFrame": pd.DataFrame({"a": s, "b": _series(CHUNKS[case])})}


def test_describe_reads_the_arrow_chunks_and_bits() -> None:
    two = HUB.describe(_series(CHUNKS["int64, two chunks"])).columns[0]
    assert two.chunks == 2 and Flag.BIT_PACKED not in two.flags
    bits = HUB.describe(_series(CHUNKS["bool, one chunk"])).columns[0]
    assert bits.chunks == 1 and Flag.BIT_PACKED in bits.flags
    numpy_bools = HUB.describe(pd.Series([True, False])).columns[0]
    assert Flag.BIT_PACKED not in numpy_bools.flags


@pytest.mark.parametrize("case", list(CHUNKS))
@pytest.mark.parametrize("kind", ["Series", "DataFrame"])
@pytest.mark.parametrize("target", TARGETS)
def test_a_zero_copy_claim_holds_and_copy_false_refuses_a_copy(
    case: str, kind: str, target: str
) -> None:
    source = _sources(case)[kind]
    total = sum(b.size for b in HUB.buffers(source))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (lossy nulls into tensors; write-through)
        try:
            plan = HUB.plan(source, to=target)
        except ih.NoRouteError:
            return  # (bool with nulls, strings into torch: refused, as planned)
        result = HUB.convert(source, to=target)
        shared = HUB.shared_bytes(source, result)
        if plan.zero_copy:
            assert shared >= total, f"the plan claims zero-copy; {shared} of {total} shared"
            assert HUB.convert(source, to=target, copy=False) is not None
        else:
            with pytest.raises(ih.CopyRequiredError):
                HUB.convert(source, to=target, copy=False)


@pytest.mark.parametrize("dtype", ["int64[pyarrow]", "float32[pyarrow]", "bool[pyarrow]"])
@pytest.mark.parametrize("target", ["numpy", "torch"])
def test_a_frame_of_arrow_backed_numbers_is_a_tensor_of_them(dtype: str, target: str) -> None:
    df = pd.DataFrame(
        {"a": pd.Series([1, 0, 1], dtype=dtype), "b": pd.Series([0, 1, 1], dtype=dtype)}
    )
    out = HUB.convert(df, to=target)
    numpy_dtype = dtype.split("[")[0]
    assert str(out.dtype).removeprefix("torch.") == numpy_dtype
    assert out.tolist() == [[1, 0], [0, 1], [1, 1]]


# -- pandas data Arrow has no type for (found by the same review) ----------------------------
@pytest.mark.parametrize("frame", [False, True], ids=["Series", "DataFrame"])
def test_sparse_data_is_refused_with_what_to_do(frame: bool) -> None:
    # It failed inside describe (SparseDtype has no isnative), a ProtocolError asking for
    # a bug report.
    s = pd.Series(pd.arrays.SparseArray([0.0, 0.0, 1.5]), name="x")
    with pytest.raises(ih.NoRouteError, match=r"column 'x' is sparse .*sparse\.to_dense\(\)"):
        HUB.convert(s.to_frame() if frame else s, to="pyarrow")


@pytest.mark.parametrize("frame", [False, True], ids=["Series", "DataFrame"])
def test_complex_numbers_go_to_tensors_and_are_refused_by_arrow(frame: bool) -> None:
    # pyarrow's "Unsupported numpy type 15" came out of a step as a ConversionError for
    # every target, numpy's included; torch refused them as no tensor's dtype.
    s = pd.Series([1 + 2j, 3j], name="z")
    source = pd.DataFrame({"z": s, "w": s * 2}) if frame else s
    for target in ("numpy", "torch"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ih.WriteThroughWarning)
            plan = HUB.plan(source, to=target)
            out = HUB.convert(source, to=target)
        assert str(out.dtype).removeprefix("torch.") == "complex128"
        assert plan.zero_copy and HUB.shared_bytes(out, source) == out.nbytes
    for target in ("pyarrow", "polars"):
        with pytest.raises(ih.NoRouteError, match="column 'z' is complex .*no complex type"):
            HUB.convert(source, to=target)
    back = HUB.convert(np.array([1 + 2j, 3j]), to="pandas")  # (refused before, as Arrow's)
    assert back.dtype == "complex128"
