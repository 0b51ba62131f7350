"""torch round trips: every corpus type through torch, and every kind of numpy array.

pyarrow -> torch -> pyarrow for each corpus type and variant, as a column and as a
one-column table. torch holds numbers only (docs/type-mapping.md): bool without nulls,
the integers and floats come back exact; their nulls become NaN (integers as float64),
warned; timestamps, durations and date32 become their int64 ticks, warned (a null is
-2**63); a fixed_shape_tensor column without null rows is an N-D tensor; anything else
is refused in the plan. numpy -> torch -> numpy (and torch -> numpy/pyarrow -> torch)
for bool, complex, bfloat16, 0-d, zero-size, non-contiguous, negative-stride and
read-only arrays. Each case checks, besides the values:

* a lossy conversion warns naming the types (and the column), and ``strict=True``
  refuses it in the plan, before anything runs;
* a zero-copy claim holds by buffer address (the result lies in the source's buffers)
  and a copy shares nothing;
* writing to the result changes the source exactly where the plan says it shares memory
  (zero-copy), never where it says it copies.
"""

from __future__ import annotations

import functools
import math
import subprocess
import sys
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
import torch

import interchange_hub as ih
from interchange_hub._tools.corpus import corpus, variants
from tests.helpers import OUTCOMES, shared_memory

if TYPE_CHECKING:
    from collections.abc import Callable

HUB = ih.Hub(autoload=False)
NAMES = list(corpus(rows=4))
NULL_TICK = -(2**63)  # what a null timestamp becomes among torch's int64 ticks


# -- helpers -----------------------------------------------------------------------------------
def _shared(result: Any, source: Any) -> tuple[int, int]:
    """(bytes of the result inside the source's memory, bytes of the result)."""
    return shared_memory(HUB, result, source)


def _claim_problem(plan: Any, result: Any, source: Any) -> str:
    """What is wrong with the plan's claim about ``result`` ("" when nothing)."""
    inside, size = _shared(result, source)
    OUTCOMES["claims"] += 1
    if plan.zero_copy and inside != size:
        return f"planned zero-copy, but {size - inside} of {size} bytes lie outside the source"
    if not plan.zero_copy and inside:
        return f"planned a copy, but {inside} of {size} bytes lie in the source's buffers"
    return ""


def _converted(
    source: Any, to: str, **options: Any
) -> tuple[Any, Any, list[str], list[warnings.WarningMessage]]:
    """(plan, result, lossy warnings, other warnings) of converting ``source``."""
    plan = HUB.plan(source, to=to, **options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = HUB.convert(source, to=to, **options)
    lossy = [str(w.message) for w in caught if issubclass(w.category, ih.LossyConversionWarning)]
    other = [w for w in caught if not issubclass(w.category, ih.LossyConversionWarning)]
    return plan, result, lossy, other


def _write_through_problem(plan: Any, other: list[warnings.WarningMessage]) -> str:
    """The plan's write-through claim against the warnings the conversion gave (the
    WriteThroughWarning shows once per call site: a plan that claims it may be silent)."""
    told = [w for w in other if issubclass(w.category, ih.WriteThroughWarning)]
    rest = [str(w.message) for w in other if not issubclass(w.category, ih.WriteThroughWarning)]
    if rest:
        return f"unexpected warnings: {rest}"
    if told and not plan.write_through:
        return f"warned {told[0].message}, but the plan does not say it writes through"
    return ""


_SAME_SIZE_INTS = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _scribble(tensor: torch.Tensor) -> None:
    """Change the first element of ``tensor`` in place (every bit of it: a NaN, -0.0 or
    a bool changes too; torch has no arithmetic on all its dtypes, uint16 say)."""
    first = tensor[(0,) * tensor.dim()]  # a 0-d view
    if first.dtype == torch.bool:
        first.logical_not_()
        return
    if first.is_complex():
        first = torch.view_as_real(first)
    first.view(_SAME_SIZE_INTS[first.element_size()]).bitwise_not_()


def _safety_problem(shared: bool, result: torch.Tensor, source_values: Callable[[], Any]) -> str:
    """Write to ``result``: the source changes exactly where the plans say it is
    ``shared`` (zero-copy all the way), never where one copies."""
    if not result.numel():
        return ""
    before = source_values()
    _scribble(result)
    changed = source_values() != before
    if changed and not shared:
        return "writing to the result changed the source, but the plan says it copies"
    if shared and not changed:
        return "the plan says zero-copy, but writing to the result left the source as it was"
    return ""


def _plain(items: list[Any]) -> list[Any]:
    return ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in items]


def _column_values(data: Any) -> list[Any]:
    """The values of a pyarrow column, or of a one-column table (NaN as "NaN")."""
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        assert data.num_columns == 1, data.schema
        data = data.column(0)
    try:
        return _plain(data.to_pylist())
    except OverflowError:  # extreme temporal values Python's datetime cannot hold
        return _plain(data.cast(pa.int64()).to_pylist())


def _column_type(data: Any) -> pa.DataType:
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        return data.schema.field(0).type
    return data.type


# -- what torch makes of each Arrow type -------------------------------------------------------
def expectation(col: pa.Array | pa.ChunkedArray) -> tuple[str, pa.DataType | None, list[Any]]:
    """(outcome, the type that comes back, the values that come back) for ``col``:
    "exact", "warned" (nulls become NaN; times become int64 ticks), "tensor" (an N-D
    tensor: the type comes back with its identity permutation written out) or "refused".
    """
    t, typ = pa.types, col.type
    nulls = col.null_count > 0
    if t.is_boolean(typ) or t.is_integer(typ) or t.is_floating(typ):
        if not nulls:
            return "exact", typ, _column_values(col)
        if t.is_boolean(typ):
            return "refused", None, []
        back = pa.float64() if t.is_integer(typ) else typ
        floats = [float("nan") if v is None else float(v) for v in col.to_pylist()]
        return "warned", back, _plain(floats)
    if t.is_timestamp(typ) or t.is_duration(typ) or t.is_date32(typ):
        ticks = col.cast(pa.int32() if t.is_date32(typ) else pa.int64()).to_pylist()
        return "warned", pa.int64(), [NULL_TICK if v is None else v for v in ticks]
    if isinstance(typ, pa.FixedShapeTensorType) and not nulls:
        cell = typ.shape
        back = pa.fixed_shape_tensor(typ.value_type, cell, permutation=list(range(len(cell))))
        return "tensor", back, col.to_pylist()
    return "refused", None, []


def _torch_refuses(name: str) -> bool:
    """Whether torch holds no variant of corpus type ``name`` (checked below)."""
    outcomes = {expectation(col)[0] for col in variants(name).values()}
    return outcomes == {"refused"}


@pytest.mark.parametrize("kind", ["column", "table"])
@pytest.mark.parametrize("name", NAMES)
def test_corpus_types_through_torch_and_back(name: str, kind: str) -> None:
    problems: list[str] = []
    for var, col in variants(name).items():  # fresh data: the writes below may reach it
        where = f"{name} ({var}, {kind})"
        source = col if kind == "column" else pa.table({"c": col})
        outcome, back_type, back_values = expectation(col)
        if kind == "table" and outcome == "tensor":
            outcome = "refused"  # a table of tensor columns is not one tensor
        try:
            plan = HUB.plan(source, to="torch")
        except ih.NoRouteError as exc:
            if outcome != "refused":
                problems.append(f"{where}: refused: {exc}")
            OUTCOMES["refused"] += 1
            continue
        if outcome == "refused":
            problems.append(f"{where}: torch cannot hold it, but the plan is made:\n{plan}")
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ih.WriteThroughWarning)
            source_values = _column_values(source)
        # strict=True: refused in the plan (nothing has run), as convert refuses it
        if outcome == "warned":
            if not plan.losses:
                problems.append(f"{where}: changes values, but the plan has no loss:\n{plan}")
            for call in (HUB.plan, HUB.convert):
                try:
                    call(source, to="torch", strict=True)
                    problems.append(f"{where}: strict=True did not refuse it ({call.__name__})")
                except ih.LossyConversionError:
                    pass
        elif plan.losses:
            problems.append(f"{where}: the plan has losses: {plan.losses}")
        plan, tensor, lossy, other = _converted(source, "torch")
        OUTCOMES["warned" if lossy else "exact"] += 1
        if outcome == "warned":
            if not lossy or not all(" -> " in m for m in lossy):
                problems.append(f"{where}: not warned with the types: {lossy}")
            if kind == "table" and not all("'c'" in m for m in lossy):
                problems.append(f"{where}: the warnings do not name the column: {lossy}")
        elif lossy:
            problems.append(f"{where}: warned: {lossy}")
        problems += [f"{where}: {p}" for p in (_write_through_problem(plan, other),) if p]
        if not isinstance(tensor, torch.Tensor):
            problems.append(f"{where}: got a {type(tensor).__name__}")
            continue
        if problem := _claim_problem(plan, tensor, source):
            problems.append(f"{where} -> torch: {problem}")
        shape = (len(col),) if kind == "column" else (len(col), 1)
        if outcome != "tensor" and tuple(tensor.shape) != shape:
            problems.append(f"{where}: a tensor of shape {tuple(tensor.shape)}, not {shape}")
        # ... and back to pyarrow: the values (and type) planned
        back_plan, back, back_lossy, back_other = _converted(tensor, "pyarrow")
        back_warned = [
            str(w.message) for w in back_other if w.category is not ih.WriteThroughWarning
        ]
        if back_lossy or back_warned:
            problems.append(f"{where}: the way back warned: {back_lossy} {back_warned}")
        if problem := _claim_problem(back_plan, back, tensor):
            problems.append(f"{where} -> torch -> pyarrow: {problem}")
        if _column_type(back) != back_type:
            problems.append(f"{where}: came back as {_column_type(back)}, not {back_type}")
        if _column_values(back) != back_values:
            problems.append(f"{where}: came back as {_column_values(back)[:5]}")
        # the safety rule: the source changes only where the plan says it is shared
        if problem := _safety_problem(
            plan.zero_copy, tensor, functools.partial(_column_values, source)
        ):
            problems.append(f"{where}: {problem}\n{plan}")
        if not plan.zero_copy and _column_values(source) != source_values:
            problems.append(f"{where}: the source changed")
    assert not problems, "\n".join(problems)


def test_torch_holds_the_types_it_should() -> None:
    """The outcomes above are not all refusals: the numbers, bool, times and tensors."""
    held = [name for name in NAMES if not _torch_refuses(name)]
    assert len(held) >= 25
    assert {"bool", "uint64", "float16", "date32", "timestamp zoned", "fixed_shape_tensor"} <= set(
        held
    )
    assert _torch_refuses("date64") and _torch_refuses("time64[ns]") and _torch_refuses("string")


def test_int64_ticks_keep_the_instants_of_a_zoned_timestamp() -> None:
    col = pa.array([0, None, 1_600_000_000_000_000], pa.timestamp("us", "Asia/Tokyo"))
    with pytest.warns(ih.LossyConversionWarning) as caught:
        tensor = HUB.convert(col, to="torch")
    assert any("Asia/Tokyo is dropped" in str(w.message) for w in caught)
    assert any("-> int64: stored as int64 us" in str(w.message) for w in caught)
    assert tensor.tolist() == [0, NULL_TICK, 1_600_000_000_000_000]  # UTC ticks, not local


# -- numpy -> torch -> numpy -------------------------------------------------------------------
def _read_only(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


BASE = np.arange(24.0).reshape(4, 6)
# name: (array maker, zero-copy to torch)
ARRAYS: dict[str, tuple[Callable[[], np.ndarray], bool]] = {
    "float64": (lambda: np.arange(6.0), True),
    "float16": (lambda: np.array([1.5, -2.0, 65504.0], np.float16), True),
    "int8 bounds": (lambda: np.array([-128, 0, 127], np.int8), True),
    "uint16 max": (lambda: np.array([0, 2**16 - 1], np.uint16), True),
    "uint32 max": (lambda: np.array([0, 2**32 - 1], np.uint32), True),
    "uint64 max": (lambda: np.array([0, 2**63, 2**64 - 1], np.uint64), True),
    "int64 bounds": (lambda: np.array([-(2**63), 2**63 - 1], np.int64), True),
    "bool": (lambda: np.array([True, False, True]), True),
    "bool 2-D": (lambda: np.array([[True, False], [False, True]]), True),
    "complex64": (lambda: np.array([1 + 2j, -3.5j], np.complex64), True),
    "complex128": (lambda: np.array([[1 + 2j, 3 - 4j]], np.complex128), True),
    "0-d float": (lambda: np.array(3.5), True),
    "0-d bool": (lambda: np.array(True), True),
    "0-d uint64": (lambda: np.array(2**64 - 1, np.uint64), True),
    "zero-size": (lambda: np.zeros(0), True),
    "zero-size (0, 3)": (lambda: np.zeros((0, 3), np.int32), True),
    "zero-size (3, 0)": (lambda: np.zeros((3, 0), np.float32), True),
    "zero-size (2, 0, 3)": (lambda: np.zeros((2, 0, 3), np.bool_), True),
    "3-D": (lambda: np.arange(24, dtype=np.int16).reshape(2, 3, 4), True),
    "Fortran order": (lambda: np.asfortranarray(BASE.copy()), True),
    "strided": (lambda: np.arange(10.0)[::2], True),
    "strided 2-D": (lambda: BASE.copy()[:, ::2], True),
    "transposed 3-D": (lambda: np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1), True),
    "broadcast (stride 0)": (lambda: np.broadcast_to(np.arange(3.0), (4, 3)), True),
    "negative stride": (lambda: np.arange(6.0)[::-1], False),
    "negative stride 2-D rows": (lambda: BASE.copy()[::-1], False),
    "negative stride 2-D columns": (lambda: BASE.copy()[:, ::-2], False),
    "negative stride bool": (lambda: np.array([True, False, False])[::-1], False),
    "read-only": (lambda: _read_only(np.arange(5.0)), True),
    "read-only 2-D": (lambda: _read_only(BASE.copy()), True),
    "read-only strided": (lambda: _read_only(np.arange(10.0))[::3], True),
    "read-only negative stride": (lambda: _read_only(np.arange(6.0))[::-1], False),
    "read-only complex": (lambda: _read_only(np.array([1j, 2.0], np.complex64)), True),
}


def _np_values(arr: np.ndarray) -> Any:
    return arr.tolist(), arr.dtype, arr.shape


@pytest.mark.parametrize("name", list(ARRAYS))
def test_numpy_through_torch_and_back(name: str) -> None:
    make, zero_copy = ARRAYS[name]
    arr = make()
    expected = _np_values(arr)
    plan, tensor, lossy, other = _converted(arr, "torch")
    assert not lossy
    assert not _write_through_problem(plan, other)
    assert plan.write_through == (zero_copy and not arr.flags.writeable and arr.size > 0)
    if plan.write_through:  # what the plan's note (and WriteThroughWarning) says
        assert "copy=True" in " ".join(plan.notes)
    assert plan.zero_copy == zero_copy, plan
    assert not _claim_problem(plan, tensor, arr)
    assert tuple(tensor.shape) == arr.shape
    assert str(tensor.dtype) == f"torch.{arr.dtype}"
    back_plan, back, back_lossy, back_other = _converted(tensor, "numpy")
    assert not back_lossy and not back_other and back_plan.zero_copy
    assert not _claim_problem(back_plan, back, tensor)
    assert _np_values(back) == expected
    # strict=True changes nothing: nothing is lost
    assert _np_values(HUB.convert(HUB.convert(arr, to="torch", strict=True), to="numpy")) == (
        expected
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ih.WriteThroughWarning)
        copied = HUB.convert(arr, to="torch", copy=True)
    assert not _claim_problem(HUB.plan(arr, to="torch", copy=True), copied, arr)
    assert not _safety_problem(False, copied, lambda: arr.tolist())
    assert not _safety_problem(plan.zero_copy, tensor, lambda: arr.tolist())


def test_numpy_datetimes_and_masks_into_torch_warn_and_strict_refuses() -> None:
    stamps = np.array(["2020-01-01", "NaT"], "datetime64[ms]")
    masked = np.ma.array([1.0, 2.0, 3.0], mask=[False, True, False])
    for arr, lost in ((stamps, "stored as int64 ms"), (masked, "mask is dropped")):
        with pytest.raises(ih.LossyConversionError, match=lost):
            HUB.plan(arr, to="torch", strict=True)
        with pytest.warns(ih.LossyConversionWarning, match=lost):
            tensor = HUB.convert(arr, to="torch")
        assert tensor.tolist() == np.asarray(arr).view(tensor.numpy().dtype).tolist()


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda: np.arange(3, dtype=">f8"), "non-native byte order"),
        (lambda: np.array(["a", "b"]), "DLPack cannot carry"),
        (lambda: np.array([1, 2], dtype=object), "DLPack cannot carry"),
        (lambda: np.array(["2020-01-01"], "datetime64[D]"), "datetime64"),
        (lambda: np.array([1.5], np.longdouble), "float128"),
    ],
    ids=["big-endian", "str", "object", "datetime64[D]", "longdouble"],
)
def test_numpy_arrays_torch_cannot_hold_are_refused_in_the_plan(make: Any, why: str) -> None:
    with pytest.raises(ih.NoRouteError, match=why):
        HUB.plan(make(), to="torch")


def test_numpy_bfloat16_is_refused_in_the_plan() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    arr = np.array([1.5, 2.0], ml_dtypes.bfloat16)
    with pytest.raises(ih.NoRouteError, match="bfloat16"):
        HUB.plan(arr, to="torch")


# -- torch -> numpy / pyarrow -> torch ---------------------------------------------------------
TENSORS: dict[str, tuple[Callable[[], torch.Tensor], bool, bool]] = {
    # name: (tensor maker, zero-copy to numpy, zero-copy to pyarrow)
    "float32": (lambda: torch.arange(6.0), True, True),
    "bool": (lambda: torch.tensor([True, False]), True, False),
    "uint64 max": (lambda: torch.tensor([0, 2**64 - 1], dtype=torch.uint64), True, True),
    "complex64": (lambda: torch.tensor([1 + 2j, 3 - 4j]), True, False),
    "0-d": (lambda: torch.tensor(2.5), True, False),
    "zero-size": (lambda: torch.zeros(0), True, True),
    "zero-size (3, 0)": (lambda: torch.zeros(3, 0), True, True),
    "transposed": (lambda: torch.arange(12.0).reshape(3, 4).t(), True, True),
    "sliced": (lambda: torch.arange(10.0)[::2], True, False),
    "offset": (lambda: torch.arange(10.0)[3:], True, True),
    "expanded (stride 0)": (lambda: torch.arange(3.0).expand(4, 3), True, False),
    "permuted 3-D": (
        lambda: torch.arange(24, dtype=torch.int16).reshape(2, 3, 4).permute(2, 0, 1),
        True,
        False,
    ),
    "requires grad": (lambda: torch.arange(3.0, requires_grad=True), True, True),
    "conjugate view": (lambda: torch.tensor([1 + 2j, 3 - 4j]).conj(), False, False),
    "negative view": (lambda: torch.tensor([1.0, -2.0])._neg_view(), False, False),
}


@pytest.mark.parametrize("target", ["numpy", "pyarrow"])
@pytest.mark.parametrize("name", list(TENSORS))
def test_torch_through_numpy_or_pyarrow_and_back(name: str, target: str) -> None:
    make, to_numpy, to_arrow = TENSORS[name]
    tensor = make()
    plain = tensor.detach().resolve_conj().resolve_neg()
    expected = (plain.tolist(), plain.dtype, tuple(plain.shape))
    try:
        plan, out, lossy, other = _converted(tensor, target)
    except ih.NoRouteError as exc:
        # Arrow holds neither complex numbers nor a 0-d tensor (a scalar)
        assert target == "pyarrow" and name in ("complex64", "0-d", "conjugate view"), exc
        return
    assert not lossy and not other
    assert plan.zero_copy == (to_numpy if target == "numpy" else to_arrow), plan
    assert not _claim_problem(plan, out, tensor)
    if target == "pyarrow" and name == "zero-size (3, 0)":
        # a table of 3 rows without columns (it had none: pa.table({}) has no rows)
        assert isinstance(out, pa.Table) and out.num_rows == 3 and not out.num_columns
        with pytest.raises(ih.NoRouteError, match="without columns"):
            HUB.plan(out, to="torch")
        return
    back_plan, back, back_lossy, back_other = _converted(out, "torch")
    assert not back_lossy and not _write_through_problem(back_plan, back_other)
    assert not _claim_problem(back_plan, back, out)
    assert (back.tolist(), back.dtype, tuple(back.shape)) == expected
    source = tensor.detach()
    if not tensor.is_conj() and not tensor.is_neg():  # (the lazy bit is the tensor's)
        shared = plan.zero_copy and back_plan.zero_copy
        assert not _safety_problem(shared, back, source.tolist)


def _zeros(dtype: str) -> torch.Tensor:
    """Zeros of torch's dtype ``dtype`` (the sub-byte ones are missing from its stubs)."""
    return torch.zeros(2, dtype=getattr(torch, dtype))


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda: torch.ones(3, dtype=torch.bfloat16), "bfloat16"),
        (lambda: torch.ones(3).to(torch.float8_e4m3fn), "float8_e4m3fn"),
        (lambda: torch.ones(3).to(torch.float8_e5m2), "float8_e5m2"),
        (lambda: torch.ones(2, dtype=torch.complex32), "complex32"),
        (functools.partial(_zeros, "uint4"), "uint4"),
        (functools.partial(_zeros, "int2"), "int2"),
        (lambda: torch.zeros(2, dtype=torch.bits8), "bits8"),
        (lambda: torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8), "qint8"),
        (lambda: torch.ones(2, 2).to_sparse(), "to_dense"),
    ],
    ids=[
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
        "complex32",
        "uint4",
        "int2",
        "bits8",
        "qint8",
        "sparse",
    ],
)
def test_torch_dtypes_numpy_cannot_hold_are_refused_in_the_plan(make: Any, why: str) -> None:
    """They used to be planned and fail mid-run ("Unsupported dtype in DLTensor",
    "Got unsupported ScalarType UInt4", "QUInt/QInt types are not supported by dlpack")."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch: complex32, quantize_per_tensor
        tensor = make()
    for target in ("numpy", "pyarrow", "polars", "pandas"):
        with pytest.raises(ih.NoRouteError, match=why):
            HUB.plan(tensor, to=target)
    assert HUB.convert(tensor, to="torch") is tensor  # torch itself holds them
    # (torch has no copy kernel for its sub-byte dtypes, uint4 and int2: clone() fails)
    if not tensor.is_sparse and not tensor.is_quantized and why not in ("uint4", "int2"):
        copied = HUB.convert(tensor, to="torch", copy=True)
        assert copied.dtype == tensor.dtype and copied.data_ptr() != tensor.data_ptr()


# -- dtype= casts into torch -------------------------------------------------------------------
LOSSY_CASTS = {
    # numpy's casting rules call 64-bit ints into float64 "safe": they were not checked
    "uint64 max -> float64": (lambda: np.array([2**64 - 1, 1], np.uint64), "float64"),
    "int64 max -> float64": (lambda: torch.tensor([2**63 - 1, 0]), "float64"),
    "arrow int64 max -> float64": (lambda: pa.array([2**63 - 1, 0]), "float64"),
    # numpy's RuntimeWarning ("invalid value encountered in cast") failed the step where
    # warnings are errors, and came beside the hub's own warning otherwise
    "NaN -> int64": (lambda: np.array([float("nan"), 2.0]), "int64"),
    "3e9 -> int32": (lambda: np.array([3e9]), "int32"),
    # narrower floats round, as asked; overflowing to inf was silent
    "1e10 -> float16": (lambda: np.array([1e10, 1.0]), "float16"),
    "1e300 -> float32": (lambda: torch.tensor([1e300], dtype=torch.float64), "float32"),
    "arrow 1e10 -> float16": (lambda: pa.array([1e10, 1.0]), "float16"),
    "arrow table 1e10 -> float16": (lambda: pa.table({"a": [1e10], "b": [1.0]}), "float16"),
    # ... and so was underflowing to 0
    "1e-300 -> float32": (lambda: np.array([1e-300, 1.0]), "float32"),
    "torch 1e-10 -> float16": (lambda: torch.tensor([1e-10, 0.0]), "float16"),
    "arrow 1e-300 -> float32": (lambda: pa.array([1e-300, 0.0]), "float32"),
    "arrow table -1e-300 -> float32": (lambda: pa.table({"a": [-1e-300], "b": [1.0]}), "float32"),
    # ... both in one column: the first found hid the other
    "1e10 and 1e-10 -> float16": (lambda: np.array([1e10, 1e-10]), "float16"),
    "arrow 1e10 and 1e-10 -> float16": (lambda: pa.array([1e10, 1e-10]), "float16"),
    # a sign's wrap casts back exactly, so a check by casting back passed it (review fuzz)
    "int8 -1 -> uint64": (lambda: np.array([-1, 3], np.int8), "uint64"),
    "uint64 max -> int64": (lambda: np.array([2**64 - 1, 5], np.uint64), "int64"),
    "torch int64 -1 -> uint32": (lambda: torch.tensor([-1, 3]), "uint32"),
    "polars uint64 max -> int64": (
        lambda: pl.DataFrame({"a": pl.Series([2**64 - 1, 5], dtype=pl.UInt64)}),
        "int64",
    ),
    # pyarrow's safe cast makes any number but 0 True
    "arrow table 2, -7 -> bool": (lambda: pa.table({"a": [2, 0, -7]}), "bool"),
    "NaN -> bool": (lambda: np.array([float("nan"), 1.0]), "bool"),
}
EXACT_CASTS = {
    "2**53 -> float64": (lambda: np.array([2**53, -1], np.int64), "float64"),
    "float64 -> float32 (rounds)": (lambda: np.array([0.1, 2.5]), "float32"),
    "inf -> float16": (lambda: pa.array([1.5, float("inf"), -0.0]), "float16"),
    "zeros, NaN and subnormals -> float32": (
        lambda: np.array([0.0, -0.0, float("nan"), 1e-40, 3.4e38]),
        "float32",
    ),
    "arrow 1e-40 -> float32 (subnormal)": (lambda: pa.array([1e-40, 0.0]), "float32"),
    "int64 -> int8": (lambda: torch.tensor([-128, 127]), "int8"),
    "uint32 -> float64": (lambda: np.array([2**32 - 1], np.uint32), "float64"),
    "int8 -> uint64 (no negatives)": (lambda: np.array([0, 127], np.int8), "uint64"),
    "uint64 -> int64 (in range)": (lambda: np.array([2**63 - 1], np.uint64), "int64"),
    "arrow 0, 1 -> bool": (lambda: pa.table({"a": [0, 1, 1]}), "bool"),
}


@pytest.mark.parametrize("case", list(LOSSY_CASTS))
def test_dtype_casts_that_change_values_warn_and_strict_refuses(case: str) -> None:
    make, dtype = LOSSY_CASTS[case]
    source = make()
    with pytest.warns(ih.LossyConversionWarning, match=" -> ") as caught:  # and nothing else
        out = HUB.convert(source, to="torch", dtype=dtype)
    assert len(caught) == 1 and str(out.dtype) == f"torch.{dtype}"
    if " and " in case:
        assert "overflow to inf; nonzero values" in str(caught[0].message)
    if isinstance(source, pa.Table):
        assert "column 'a'" in str(caught[0].message)
    with pytest.raises(ih.LossyConversionError):
        HUB.convert(source, to="torch", dtype=dtype, strict=True)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_an_int_column_with_nulls_warns_of_the_dtype_asked_for(dtype: str) -> None:
    # The nulls' warning named float64, the dtype the column passes through on its way
    # to the one asked for, with float64's precision (float32 keeps integers to 2**24).
    table = pa.table({"a": pa.array([1, None, 3])})
    plan = HUB.plan(table, to="numpy", dtype=dtype)
    assert [(x.source, x.target) for x in plan.losses] == [("int64 with nulls", dtype)]
    with pytest.warns(ih.LossyConversionWarning) as caught:
        out = HUB.convert(table, to="numpy", dtype=dtype)
    assert [str(w.message).split(": ", 2)[-1] for w in caught] == [
        f"int64 with nulls -> {dtype}: nulls become NaN"
        + ("; integers above 2**53 lose precision" if dtype == "float64" else "")
    ]
    assert out.dtype == dtype and out[:, 0].tolist()[::2] == [1.0, 3.0]


@pytest.mark.parametrize("case", list(EXACT_CASTS))
def test_dtype_casts_that_keep_values_are_silent(case: str) -> None:
    make, dtype = EXACT_CASTS[case]
    out = HUB.convert(make(), to="torch", dtype=dtype, strict=True)  # warnings are errors
    assert str(out.dtype) == f"torch.{dtype}"


@pytest.mark.parametrize("writeable", [True, False], ids=["writable", "read-only"])
def test_torchs_dlpack_import_takes_numpy_arrays_as_from_numpy_shares_them(
    writeable: bool,
) -> None:
    # The bound DLPack import into torch takes a numpy array (what a jax Array's export
    # gives) with torch.from_numpy: the same memory, dtype, shape and strides as the
    # general run's torch.from_dlpack, and an array from_numpy refuses goes to
    # torch.from_dlpack as before (its warning: the next test, in a fresh process).
    from interchange_hub._core.device import CPU
    from interchange_hub.adapters import _torch

    info = ih.DataInfo(
        ih.Kind.TENSOR, (ih.Column("", "float64", 48, 0),), rows=6, shape=(6,), device=CPU
    )
    ctx = ih.adapter.Context(info)
    run = _torch._import_bind(ctx)
    for arr in (np.arange(6.0), np.arange(12.0).reshape(3, 4).T, np.zeros((0, 2))):
        arr.flags.writeable = writeable
        out, general = run(arr), _torch._import(arr, ctx)  # bound, and the general run
        for made in (out, general):
            assert isinstance(made, torch.Tensor)
            assert made.data_ptr() == arr.ctypes.data or not arr.size
            assert made.shape == arr.shape and made.stride() == tuple(s // 8 for s in arr.strides)
            assert made.dtype == torch.float64 and np.array_equal(made.numpy(), arr)
    swapped = np.arange(3.0).astype(">f8")  # from_numpy refuses a byte order not the machine's
    with pytest.raises(Exception) as caught:
        torch.utils.dlpack.from_dlpack(swapped)
    with pytest.raises(type(caught.value)):
        run(swapped)


def test_a_read_only_array_reaches_torch_without_torchs_warning() -> None:
    # torch warns of a read-only array once per process, so in a fresh one: the DLPack
    # import's bound run takes it with torch.from_numpy, and no UserWarning shows.
    code = """
import warnings
import numpy as np
import interchange_hub as ih
from interchange_hub._core.device import CPU
from interchange_hub.adapters import _torch
warnings.simplefilter("error")
arr = np.arange(6.0)
arr.flags.writeable = False
info = ih.DataInfo(ih.Kind.TENSOR, (ih.Column("", "float64", 48, 0),), rows=6, shape=(6,), device=CPU)
out = _torch._import_bind(ih.adapter.Context(info))(arr)
assert out.data_ptr() == arr.ctypes.data
print("no warning")
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0 and "no warning" in done.stdout, done.stderr[-2000:]
