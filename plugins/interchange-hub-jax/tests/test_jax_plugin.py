"""The jax plugin: jax.Array to and from torch, numpy and Arrow, every claim checked by
address (``jax.Array.unsafe_buffer_pointer()`` against ``Tensor.data_ptr()`` and numpy's
``ctypes.data``).

Zero-copy into jax needs the hub to describe a buffer's alignment (``DataInfo.alignment``,
``interchange_hub_jax.HUB_REPORTS_ALIGNMENT``); a hub without it plans every import as a
copy, and the tests check that instead.
"""

from __future__ import annotations

import gc
import importlib.metadata
import os
import re
import subprocess
import sys
import warnings
from typing import Any

# Use only the plugins each test names, never those installed in the environment.
os.environ.setdefault("INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD", "1")

import interchange_hub as ih
import jax
import jax.numpy as jnp
import nanoarrow as na
import numpy as np
import polars as pl
import pyarrow as pa
import pytest
import torch
from interchange_hub.adapter import RouteChanged
from interchange_hub.testing import assert_conforms, check_conformance

import interchange_hub_jax
from interchange_hub_jax import HUB_REPORTS_ALIGNMENT

ALIGNED_KNOWN = HUB_REPORTS_ALIGNMENT  # whether aligned imports are planned as views


@pytest.fixture
def hub() -> ih.Hub:
    """The built-in adapters and this plugin, nothing from entry points."""
    return ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), interchange_hub_jax])


@pytest.fixture(autouse=True)
def _x64_off() -> Any:
    """jax's default (32-bit) for every test; tests that want 64 bits say so."""
    with jax.enable_x64(False):
        yield


def ptr(arr: Any) -> int:
    if isinstance(arr, jax.Array):
        return int(arr.unsafe_buffer_pointer())
    if isinstance(arr, torch.Tensor):
        return int(arr.data_ptr())
    return int(arr.ctypes.data)


def buffer(n: int, dtype: Any, offset: int = 0) -> np.ndarray:
    """A numpy array of ``n`` zeros-then-arange values starting ``offset`` bytes past a
    64-byte boundary (numpy's own allocations are only 16-byte aligned)."""
    dtype = np.dtype(dtype)
    raw = np.zeros(n * dtype.itemsize + 192, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    arr = raw[start : start + n * dtype.itemsize].view(dtype)
    arr[...] = np.arange(n).astype(dtype)
    assert ptr(arr) % 64 == offset % 64
    return arr


def checked(hub: ih.Hub, src: Any, to: Any = "jax", **options: Any) -> tuple[ih.Plan, Any]:
    """Plan and convert; the plan's claim must hold by address: zero-copy shares every
    source byte, a copy shares none."""
    plan = hub.plan(src, to=to, **options)
    result = hub.convert(src, to=to, **options)
    total = sum(b.size for b in hub.buffers(src))
    shared = hub.shared_bytes(src, result)
    if plan.zero_copy:
        assert shared >= total, f"zero-copy claimed, {shared} of {total} bytes shared\n{plan}"
    elif total:
        assert shared == 0, f"a copy claimed, {shared} of {total} bytes shared\n{plan}"
    return plan, result


def reasons(plan: ih.Plan) -> str:
    return " | ".join(c.reason for s in plan.steps for c in s.copies)


# -- declarations ---------------------------------------------------------------------------
def test_registered_with_its_entry_point(hub: ih.Hub) -> None:
    adapter = hub.registry.get("jax")
    assert isinstance(adapter, interchange_hub_jax.JaxAdapter)
    assert adapter.type_kinds() == {jax.Array: ih.Kind.TENSOR}
    assert hub.convert(torch.arange(3.0), to=jax.Array).tolist() == [0.0, 1.0, 2.0]
    assert isinstance(hub.convert(torch.arange(3.0), to=jax), jax.Array)  # the module
    try:
        dist = importlib.metadata.distribution("interchange-hub-jax")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the plugin is not installed (pip install -e plugins/interchange-hub-jax)")
    eps = [ep for ep in dist.entry_points if ep.group == "interchange_hub"]
    assert [(ep.name, ep.value) for ep in eps] == [("jax", "interchange_hub_jax")]


def test_conformance_with_x64() -> None:
    """The kit's samples are 64-bit: with jax_enable_x64 jax keeps them."""
    with jax.enable_x64(True):
        assert_conforms(interchange_hub_jax, "jax")


def test_conformance_without_x64_fails_only_where_the_kit_ignores_the_warning() -> None:
    """With jax's default, float64 becomes float32: every such step warns (the kit's round
    trips accept that), but the kit's stream checks compare values without looking at
    warnings, so those two report the narrowing."""
    report = check_conformance(interchange_hub_jax, "jax")
    failed = {c.name for c in report.failures}
    assert failed <= {"one-shot stream: values", "capsule producer: values"}, str(report)
    assert any(c.name.endswith("round trip") and "warned" in c.detail for c in report.checks)


def test_describe_and_buffers(hub: ih.Hub) -> None:
    x = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    info = hub.describe(x)
    assert (info.kind, info.shape, info.rows, info.layout) == (ih.Kind.TENSOR, (3, 4), 3, "C")
    assert (info.columns[0].dtype, info.columns[0].nbytes, str(info.device)) == (
        "float32",
        48,
        "cpu",
    )
    assert info.readonly  # jax Arrays are immutable
    assert hub.buffers(x) == [ih.Buffer(ptr(x), 48, "cpu")]
    assert ptr(x) % 64 == 0  # XLA's own buffers are aligned
    assert hub.buffers(jnp.zeros((0, 3))) == []
    # A column-major jax Array (imported from a transposed tensor) says so.
    t = torch.arange(12.0).reshape(4, 3).T
    f = jax.dlpack.from_dlpack(t)
    assert hub.describe(f).layout == "F" and ptr(f) == ptr(t)


def test_tracers_and_deleted_arrays_are_refused_in_the_error_tree(hub: ih.Hub) -> None:
    def inside(x: Any) -> Any:
        with pytest.raises(ih.ConversionError, match="tracer"):
            hub.convert(x, to="numpy")
        return x

    jax.jit(inside)(jnp.arange(3.0))
    gone = jnp.arange(3.0)
    gone.delete()
    with pytest.raises(ih.ConsumedSourceError, match="deleted"):
        hub.convert(gone, to="torch")


# -- jax -> everything ----------------------------------------------------------------------
def test_jax_to_torch_is_zero_copy_and_warns_write_through(hub: ih.Hub) -> None:
    x = jnp.arange(1000.0)
    with pytest.warns(ih.WriteThroughWarning):
        plan, t = checked(hub, x, "torch")
    assert plan.zero_copy and ptr(t) == ptr(x) and t.dtype == torch.float32
    assert "read-only" in " ".join(plan.notes)
    copied = hub.convert(x, to="torch", copy=True)
    assert ptr(copied) != ptr(x) and copied.tolist() == t.tolist()
    bf = jnp.arange(8.0, dtype=jnp.bfloat16)
    with pytest.warns(ih.WriteThroughWarning):
        tb = hub.convert(bf, to="torch")
    assert tb.dtype == torch.bfloat16 and ptr(tb) == ptr(bf)


def test_jax_to_numpy_is_a_read_only_view(hub: ih.Hub) -> None:
    x = jnp.arange(12, dtype=jnp.int32).reshape(3, 4)
    plan, arr = checked(hub, x, "numpy")
    assert plan.zero_copy and ptr(arr) == ptr(x) and not arr.flags.writeable
    assert arr.tolist() == np.asarray(x).tolist()


def test_jax_to_arrow_libraries(hub: ih.Hub) -> None:
    x = jnp.arange(100, dtype=jnp.float32)
    plan, col = checked(hub, x, "pyarrow")
    assert plan.zero_copy and col.to_pylist() == np.arange(100.0).tolist()
    assert col.buffers()[1].address == ptr(x)
    series = hub.convert(x, to="polars")
    assert series.to_list() == np.arange(100.0).tolist()
    matrix = jnp.arange(6, dtype=jnp.int32).reshape(3, 2)
    table = hub.convert(matrix, to="pyarrow")  # row-major: the bridge copies its columns
    assert table.column_names == ["column_0", "column_1"]
    assert table.to_pydict() == {"column_0": [0, 2, 4], "column_1": [1, 3, 5]}


# -- torch -> jax ---------------------------------------------------------------------------
def test_torch_to_jax(hub: ih.Hub) -> None:
    t = torch.arange(1000.0)
    assert ptr(t) % 64 == 0  # torch's allocator aligns to 64 bytes
    plan, x = checked(hub, t)
    assert x.dtype == jnp.float32 and x.tolist() == t.tolist()
    if ALIGNED_KNOWN:
        assert plan.zero_copy and ptr(x) == ptr(t)
        t[0] = 42.0  # jax shares the buffer: the source's writes show
        assert float(x[0]) == 42.0
    else:
        assert not plan.zero_copy and "alignment" in reasons(plan) and ptr(x) != ptr(t)
        with pytest.raises(ih.CopyRequiredError, match="64-byte"):
            hub.convert(t, to="jax", copy=False)
    copied = hub.convert(t, to="jax", copy=True)  # jax's own copy=True shares (jax 0.10)
    assert ptr(copied) != ptr(t) and copied.tolist() == t.tolist()


def test_torch_offsets_and_layouts(hub: ih.Hub) -> None:
    base = torch.arange(256.0).reshape(64, 4)
    cases = {
        "C": base,
        "F (a transposition)": base.T,
        "sliced at 16 bytes": base.reshape(-1)[4:],
        "sliced at 64 bytes": base.reshape(-1)[16:],
        "strided": base[::2],
    }
    for name, t in cases.items():
        plan, x = checked(hub, t)
        assert np.array_equal(np.asarray(x), t.numpy()), name
        aligned = ptr(t) % 64 == 0
        compact = t.is_contiguous() or t.T.is_contiguous()
        assert plan.zero_copy == (ALIGNED_KNOWN and aligned and compact), (name, str(plan))
        if not compact:
            assert "strides" in reasons(plan)
        elif ALIGNED_KNOWN and not aligned:
            assert "16-byte aligned" in reasons(plan)
        if plan.zero_copy:
            assert ptr(x) == ptr(t)
    if ALIGNED_KNOWN:
        assert hub.describe(hub.convert(base.T, to="jax")).layout == "F"


DTYPES = [
    (torch.bool, "bool"),
    (torch.int8, "int8"),
    (torch.int16, "int16"),
    (torch.int32, "int32"),
    (torch.int64, "int32"),
    (torch.uint8, "uint8"),
    (torch.uint16, "uint16"),
    (torch.uint32, "uint32"),
    (torch.uint64, "uint32"),
    (torch.float16, "float16"),
    (torch.bfloat16, "bfloat16"),
    (torch.float32, "float32"),
    (torch.float64, "float32"),
    (torch.complex64, "complex64"),
    (torch.complex128, "complex64"),
]


@pytest.mark.parametrize(("dtype", "narrowed"), DTYPES, ids=[str(d) for d, _ in DTYPES])
def test_dtypes_with_and_without_x64(hub: ih.Hub, dtype: Any, narrowed: str) -> None:
    t = (torch.arange(64) % 2).to(dtype)
    wide = str(dtype).removeprefix("torch.")
    expected = np.asarray(t.to(torch.float32) if dtype == torch.bfloat16 else t)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan, x = checked(hub, t)
    lossy = [str(w.message) for w in caught if issubclass(w.category, ih.LossyConversionWarning)]
    assert str(x.dtype) == narrowed
    assert np.array_equal(np.asarray(x, dtype=expected.dtype), expected)
    if narrowed != wide:  # a 64-bit dtype without x64: a loss and a copy
        assert len(lossy) == 1 and f"{wide} -> {narrowed}" in lossy[0]
        assert "jax_enable_x64" in lossy[0] and not plan.zero_copy
        with pytest.raises(ih.LossyConversionError, match="jax_enable_x64"):
            hub.convert(t, to="jax", strict=True)
        with pytest.raises(ih.CopyRequiredError, match="jax_enable_x64"):
            hub.convert(t, to="jax", copy=False)
    else:
        assert not lossy and plan.zero_copy == ALIGNED_KNOWN
    with jax.enable_x64(True):
        plan, x = checked(hub, t, strict=True)
        assert str(x.dtype) == wide and plan.zero_copy == ALIGNED_KNOWN


@pytest.mark.parametrize("make", [np.arange, torch.arange], ids=["numpy", "torch"])
def test_a_narrowing_route_is_kept_and_warns_on_every_call(hub: ih.Hub, make: Any) -> None:
    # jax_enable_x64 off (jax's default) makes every float64 conversion lossy; such a
    # route was planned on every call (numpy, 1,000 float64: 102 us against jnp.asarray's
    # 19). Its loss depends on the dtype (in the route key) and on x64, which each run
    # checks: kept, it warns on every call, and turning x64 on plans it anew, losslessly.
    source = make(1000.0) if make is np.arange else make(1000, dtype=torch.float64)
    for _ in range(3):
        with pytest.warns(ih.LossyConversionWarning, match="float64 -> float32") as caught:
            x = hub.convert(source, to="jax")
        assert len(caught) == 1 and x.dtype == jnp.float32 and float(x[-1]) == 999.0
    assert [len(f.runs) for f in hub._cache.calls.values()] == [1]  # one route, kept
    with jax.enable_x64(True), warnings.catch_warnings():
        warnings.simplefilter("error", ih.LossyConversionWarning)
        wide = hub.convert(source, to="jax")
        assert wide.dtype == jnp.float64 and float(wide[-1]) == 999.0
    with pytest.warns(ih.LossyConversionWarning):  # and off again: narrowed, warned
        assert hub.convert(source, to="jax").dtype == jnp.float32


@pytest.fixture
def imports(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The types of what ``jax.dlpack.from_dlpack`` is called with, in order."""
    seen: list[Any] = []
    real = jax.dlpack.from_dlpack
    monkeypatch.setattr(
        jax.dlpack, "from_dlpack", lambda x, **kw: seen.append(type(x)) or real(x, **kw)
    )
    return seen


def test_a_small_transposed_tensor_is_cast_through_numpy_and_a_large_one_through_dlpack(
    hub: ih.Hub, imports: list[Any]
) -> None:
    for n, through in ((1000, []), (100_000, [torch.Tensor])):  # 31 KiB and 3 MiB
        t = torch.arange(4.0 * n, dtype=torch.float64).reshape(4, n).T
        imports.clear()
        with pytest.warns(ih.LossyConversionWarning, match="float64 -> float32"):
            x = hub.convert(t, to="jax")
        assert x.shape == (n, 4) and x.dtype == jnp.float32
        assert np.array_equal(np.asarray(x), t.numpy().astype(np.float32))
        assert imports == through, (n, imports)


def test_a_small_transposed_tensor_is_copied_through_numpy_with_x64_on_too(
    hub: ih.Hub, imports: list[Any]
) -> None:
    # Without a cast, a small transposed tensor went through jax's DLPack import and a
    # copy after it: 48.8 us for 1,000 x 4 float64, against 25.9 through numpy.
    with jax.enable_x64(True):
        for n, through in ((1000, []), (100_000, [torch.Tensor])):  # 31 KiB and 3 MiB
            # 16 bytes past torch's 64-byte allocation: jax copies (a view needs 64)
            t = torch.arange(4.0 * n + 2, dtype=torch.float64)[2:].reshape(4, n).T
            imports.clear()
            plan = hub.plan(t, to="jax")
            x = hub.convert(t, to="jax")
            assert x.shape == (n, 4) and x.dtype == jnp.float64
            assert np.array_equal(np.asarray(x), t.numpy())
            assert not plan.zero_copy and ptr(x) != ptr(t)
            assert imports == through, (n, imports)
            t[0, 0] = -1.0  # new memory: the source's writes do not show
            assert float(x[0, 0]) == 2.0


def test_a_kept_copy_route_meets_each_kind_of_input_as_a_fresh_plan_would(hub: ih.Hub) -> None:
    """The kept run's own branch for small copies (numpy arrays and CPU tensors of the
    source's memory, read without _copy's dispatch) gives what planning each input
    afresh gives: new memory with the values, or a view where the input turns out 64-byte
    aligned, and the general path for what numpy cannot view."""
    with jax.enable_x64(True):
        first = buffer(1000, np.float64, 16)
        plan, x = checked(hub, first)
        assert not plan.zero_copy and hub.planner.kept_route(first, "jax") is not None
        inputs = [
            buffer(1000, np.float64, 32),  # another misaligned array: copied by the branch
            buffer(1000, np.float64, 0),  # aligned: the run replans, and jax shares it
            buffer(1000, np.float64, 48),
            buffer(40_000, np.float64, 16),  # 312 KiB: still under the branch's limit
            buffer(80_000, np.float64, 16),  # 625 KiB: jax's DLPack import, via _copy
        ]
        for arr in inputs:
            x = hub.convert(arr, to="jax")
            fresh = ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), interchange_hub_jax])
            zero = fresh.plan(arr, to="jax").zero_copy
            assert (ptr(x) == ptr(arr)) == zero, (ptr(arr) % 64, arr.size)
            assert zero == (ALIGNED_KNOWN and ptr(arr) % 64 == 0)
            assert np.array_equal(np.asarray(x), arr) and x.dtype == jnp.float64
            if not zero:
                arr[1] = -5.0  # new memory: the source's writes do not show
                assert float(x[1]) == 1.0
        base = torch.arange(4002.0, dtype=torch.float64)
        tensors = {
            "row-major": base[2:].reshape(1000, 4),
            "transposed": base[2:].reshape(4, 1000).T,
            "needs grad": base[2:].reshape(1000, 4).clone().requires_grad_(True),
        }
        for name, t in tensors.items():
            if t.data_ptr() % 64 == 0:  # (clone's own allocation: move it off the boundary)
                t = torch.cat([torch.zeros(2, dtype=t.dtype), t.detach().reshape(-1)])[2:]
                t = t.reshape(1000, 4).requires_grad_(True)
            for _ in range(2):  # planned, then the kept run
                plan, x = checked(hub, t)
                assert not plan.zero_copy and ptr(x) != ptr(t), name
                assert np.array_equal(np.asarray(x), t.detach().numpy()), name
        half = torch.arange(1000.0, dtype=torch.bfloat16)[8:]  # numpy holds no bfloat16
        for _ in range(2):
            plan, x = checked(hub, half)
            assert x.dtype == jnp.bfloat16 and x.tolist() == half.tolist()


def test_a_kept_cast_to_64_bits_is_planned_anew_when_x64_is_turned_off(hub: ih.Hub) -> None:
    # Found in review: the dtype= cast (jax -> jax) did not check jax_enable_x64 when its
    # route was kept, and gave float32 where a plan refuses (it cannot hold float64).
    with jax.enable_x64(True):
        x = jnp.arange(4, dtype=jnp.float32)
        for _ in range(2):
            assert hub.convert(x, to="jax", dtype="float64").dtype == jnp.float64
    with pytest.raises(ih.NoRouteError, match="float64"):
        hub.convert(x, to="jax", dtype="float64")


def test_x64_off_wraps_integers_and_the_warning_names_the_column(hub: ih.Hub) -> None:
    big = torch.tensor([1, 2**40, -3])
    with pytest.warns(ih.LossyConversionWarning, match="int64 -> int32"):
        x = hub.convert(big, to="jax")
    assert x.tolist() == [1, 0, -3]  # what jax does to 2**40 without x64
    with pytest.warns(ih.LossyConversionWarning, match="column 'v': int64 -> int32"):
        hub.convert(pl.Series("v", [1, 2, 3]), to="jax")
    with jax.enable_x64(True):
        assert hub.convert(big, to="jax").tolist() == [1, 2**40, -3]


def test_toggling_x64_replans_a_cached_route(hub: ih.Hub) -> None:
    t = torch.arange(100)
    with jax.enable_x64(True):
        assert hub.convert(t, to="jax").dtype == jnp.int64
        assert hub.convert(t, to="jax").dtype == jnp.int64  # the cached route
    with pytest.warns(ih.LossyConversionWarning):
        assert hub.convert(t, to="jax").dtype == jnp.int32


def test_dtype_option(hub: ih.Hub) -> None:
    t = torch.arange(10, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ih.LossyConversionWarning)  # asked for: no warning
        x = hub.convert(t, to="jax", dtype="float32")
    assert x.dtype == jnp.float32
    plan, h = checked(hub, jnp.arange(4.0), "jax", dtype="float16")
    assert h.dtype == jnp.float16 and "cast float32 -> float16" in reasons(plan)


@pytest.mark.parametrize(
    ("values", "dtype"),
    [([1.5, -1.0], "int32"), ([-1.0, 300.0], "uint8"), ([2.0, 0.0], "bool")],
    ids=["fraction", "sign and overflow", "not 0 or 1"],
)
def test_a_cast_that_changes_values_warns_each_call_and_strict_refuses(
    hub: ih.Hub, values: list[float], dtype: str
) -> None:
    # Found in review: the jax -> jax cast (dtype=) cut fractions and wrapped signs with no
    # warning, into jax and through it into torch, where numpy's own cast warned.
    x = jnp.asarray(values, dtype=jnp.float32)
    for to in ("jax", "torch"):
        for _ in range(2):  # planned, then the kept route
            with pytest.warns(ih.LossyConversionWarning, match=f"float32 -> {dtype}"):
                hub.convert(x, to=to, dtype=dtype)
        with pytest.raises(ih.LossyConversionError, match=f"float32 -> {dtype}"):
            hub.convert(x, to=to, dtype=dtype, strict=True)
    exact = jnp.asarray([1.0, 0.0], dtype=jnp.float32)
    out = hub.convert(exact, to="jax", dtype=dtype, strict=True)  # warnings are errors
    assert out.dtype == jnp.dtype(dtype)


# -- numpy -> jax: the 64-byte rule ---------------------------------------------------------
@pytest.mark.parametrize("offset", [0, 16, 32, 48, 8])
def test_numpy_alignment_decides(hub: ih.Hub, offset: int) -> None:
    arr = buffer(256, np.float32, offset)
    plan, x = checked(hub, arr)
    assert x.tolist() == arr.tolist()
    if ALIGNED_KNOWN and offset == 0:
        assert plan.zero_copy and ptr(x) == ptr(arr)
    else:
        assert not plan.zero_copy and ptr(x) != ptr(arr)
        assert "64-byte" in reasons(plan)
        if ALIGNED_KNOWN:
            assert f"{offset & -offset}-byte aligned" in reasons(plan)
        with pytest.raises(ih.CopyRequiredError, match="64-byte"):
            hub.convert(arr, to="jax", copy=False)


def test_numpy_own_allocation_is_copied(hub: ih.Hub) -> None:
    arr = np.arange(10_000.0, dtype=np.float32)
    plan, x = checked(hub, arr)  # a copy unless numpy happened to give a 64-byte boundary
    assert plan.zero_copy == (ALIGNED_KNOWN and ptr(arr) % 64 == 0)
    assert (ptr(x) == ptr(arr)) == plan.zero_copy


def test_the_cached_route_follows_each_arrays_alignment(hub: ih.Hub) -> None:
    """Arrays of one type and shape share a cached route; alignment is not part of the
    key, so the run checks it and has the hub plan the other case afresh."""
    for offset in (0, 16, 0, 32, 16, 0):
        arr = buffer(512, np.float32, offset)
        plan, x = checked(hub, arr)
        assert plan.zero_copy == (ALIGNED_KNOWN and offset == 0)
        assert (ptr(x) == ptr(arr)) == plan.zero_copy, offset
        assert x.tolist() == arr.tolist()


def test_read_only_numpy(hub: ih.Hub) -> None:
    """Read-only memory, which numpy will not export in the unversioned capsule jax asks
    for, is shared through a writable alias, row-major or column-major; the source stays
    read-only and jax's Array immutable."""
    arr = buffer(256, np.float32)
    arr.setflags(write=False)
    with pytest.raises(BufferError, match="readonly"):  # why the plugin makes an alias
        jax.dlpack.from_dlpack(arr)
    plan, x = checked(hub, arr)
    assert plan.zero_copy == ALIGNED_KNOWN and x.tolist() == arr.tolist()
    if ALIGNED_KNOWN:
        assert "writable alias" in plan.steps[-1].estimate.why and ptr(x) == ptr(arr)
    assert not arr.flags.writeable
    block = buffer(256, np.float32).reshape(4, 64).T  # column-major, aligned
    block.setflags(write=False)
    plan, x = checked(hub, block)
    assert plan.zero_copy == ALIGNED_KNOWN and np.array_equal(np.asarray(x), block)
    if ALIGNED_KNOWN:
        assert ptr(x) == ptr(block)
    with pytest.raises(TypeError):  # jax Arrays take no writes, so nor does the alias
        x[0, 0] = 1.0  # type: ignore[index]
    del arr, plan
    gc.collect()  # the alias holds the source: the Array still reads its values
    assert np.array_equal(np.asarray(x), block)


@pytest.mark.skipif(not ALIGNED_KNOWN, reason="this hub does not report alignment")
def test_donating_a_shared_result_leaves_read_only_memory_alone(hub: ih.Hub) -> None:
    """jax views read-only memory through a writable alias (and immutable Arrow memory
    through nanoarrow's view): a jit that donates the shared Array writes its result to
    new memory, never into the source."""
    arr = buffer(4096, np.float64)
    arr.setflags(write=False)
    col = pa.array(na.Array(pa.array([float(i) for i in range(4096)])))  # immutable, aligned
    double = jax.jit(lambda a: a * 2.0 + 1.0, donate_argnums=0)
    with jax.enable_x64(True):
        for source, address, before in (
            (arr, ptr(arr), arr.copy()),
            (col, col.buffers()[1].address, col.to_numpy().copy()),
        ):
            shared = hub.convert(source, to="jax")
            assert ptr(shared) == address
            out = double(shared).block_until_ready()
            assert ptr(out) != address and float(out[1]) == before[1] * 2.0 + 1.0
            now = arr if source is arr else col.to_numpy()
            assert np.array_equal(now, before)


def test_strided_and_negative_numpy(hub: ih.Hub) -> None:
    arr = buffer(256, np.float32)
    for view in (arr[::2], arr[::-1], arr.reshape(16, 16)[:, :8]):
        plan, x = checked(hub, view)
        assert not plan.zero_copy and "strides" in reasons(plan)
        assert np.array_equal(np.asarray(x), view)


def test_empty_zero_d_and_masked(hub: ih.Hub) -> None:
    for src in (torch.zeros(0), np.zeros((0, 3), np.float32), torch.zeros((3, 0)).T):
        _, x = checked(hub, src)
        assert x.shape == tuple(src.shape) and x.size == 0
    with jax.enable_x64(True):
        plan, x = checked(hub, torch.tensor(2.5, dtype=torch.float64))
        assert x.shape == () and float(x) == 2.5 and plan.zero_copy == ALIGNED_KNOWN
    masked = np.ma.masked_array(np.arange(4.0, dtype=np.float32), mask=[0, 1, 0, 0])
    with pytest.warns(ih.LossyConversionWarning, match="mask"):
        x = hub.convert(masked, to="jax")
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_a_3d_tensor(hub: ih.Hub) -> None:
    cube = torch.arange(24.0).reshape(2, 3, 4)
    plan, x = checked(hub, cube)
    assert x.shape == (2, 3, 4) and plan.zero_copy == ALIGNED_KNOWN
    back = hub.convert(x, to="numpy")
    assert back.tolist() == cube.tolist()


# -- Arrow -> jax ---------------------------------------------------------------------------
def test_arrow_columns_go_straight_to_jax(hub: ih.Hub) -> None:
    col = pa.array(list(range(1000)), pa.int32())  # pyarrow's allocator: 64-byte aligned
    assert col.buffers()[1].address % 64 == 0
    plan, x = checked(hub, col)
    assert [s.edge.protocol for s in plan.steps][-1] == "Array.to_numpy+jax.dlpack.from_dlpack"
    assert x.tolist() == list(range(1000))
    if ALIGNED_KNOWN:
        assert plan.zero_copy and ptr(x) == col.buffers()[1].address
    sliced = col.slice(3)  # 12 bytes in: not aligned
    plan, x = checked(hub, sliced)
    assert not plan.zero_copy and "64-byte" in reasons(plan) and x.tolist() == sliced.to_pylist()
    chunked = pa.chunked_array([col.slice(0, 500), col.slice(500)])
    plan, x = checked(hub, chunked)
    assert not plan.zero_copy and "2 chunks are concatenated" in reasons(plan)
    assert x.tolist() == list(range(1000))


@pytest.mark.skipif(not ALIGNED_KNOWN, reason="this hub does not report alignment")
@pytest.mark.parametrize("mutable", [True, False], ids=["pyarrow's memory", "imported"])
def test_an_arrow_column_is_shared_through_either_of_its_ways(
    hub: ih.Hub, mutable: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mutable values buffer (pyarrow's allocations) as a writable numpy view, which jax
    takes through DLPack; an immutable one (imported from nanoarrow) as a read-only view
    through a writable alias of it: both share, every time, and no warning is given (pyarrow's own
    DLPack export of the capsule jax asks for warns that it is deprecated)."""
    col = pa.array([2.0 * i for i in range(4096)])  # pyarrow's allocator: aligned
    if not mutable:
        col = pa.array(na.Array(col))
    values = col.buffers()[1]
    assert values.address % 64 == 0 and values.is_mutable == mutable
    puts: list[int] = []
    alias = interchange_hub_jax._writable_alias
    monkeypatch.setattr(
        interchange_hub_jax, "_writable_alias", lambda arr: puts.append(arr.size) or alias(arr)
    )
    with jax.enable_x64(True), warnings.catch_warnings():
        warnings.simplefilter("error")
        plan = hub.plan(col, to="jax")
        assert plan.zero_copy, str(plan)
        for _ in range(3):  # the route kept: run as planned, still shared
            x = hub.convert(col, to="jax")
            assert ptr(x) == values.address and x.dtype == jnp.float64
            assert float(x[-1]) == 8190.0
        sliced = col.slice(1)  # 8 bytes in: jax would copy; the route is planned again
        y = hub.convert(sliced, to="jax")
        assert ptr(y) != values.address + 8 and y.tolist() == sliced.to_pylist()
        shifted = col.slice(8)  # 64 bytes in: shared at its offset
        assert ptr(hub.convert(shifted, to="jax")) == values.address + 64
        # No rows, over a buffer 8 bytes past a boundary: nothing to share, nothing to
        # check (the fast path took it, and jax refused it: found by the fidelity run).
        raw = np.zeros(16)
        start = -raw.ctypes.data % 64 // 8 + 4  # 32 bytes past a 64-byte boundary
        memory = pa.py_buffer(raw[start : start + 4])  # numpy's writable memory: mutable
        empty = pa.Array.from_buffers(pa.float64(), 0, [None, memory])
        for _ in range(2):
            assert hub.convert(empty, to="jax").shape == (0,)
    assert [n for n in puts if n] == ([] if mutable else [4096] * 3 + [4088]), puts


def _record_finds(monkeypatch: pytest.MonkeyPatch, name: str) -> list[bool]:
    """Wrap the plugin's finder ``name`` (a view of the source, or None): the list says,
    call by call, whether it found one."""
    views: list[bool] = []
    find = getattr(interchange_hub_jax, name)

    def recorded(value: Any) -> Any:
        found = find(value)
        views.append(found is not None)
        return found

    monkeypatch.setattr(interchange_hub_jax, name, recorded)
    return views


@pytest.mark.skipif(not ALIGNED_KNOWN, reason="this hub does not report alignment")
def test_a_nanoarrow_column_is_shared_through_its_own_buffer_view(
    hub: ih.Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A nanoarrow Array of one chunk is taken by jax through nanoarrow's view of its
    values buffer (a DLPack producer), without a pyarrow import; a slice gives its own
    values, shared at its offset where that is 64 bytes in."""
    base = pa.array([2.0 * i for i in range(4096)])  # pyarrow's allocator: aligned
    address = base.buffers()[1].address
    assert address % 64 == 0
    views = _record_finds(monkeypatch, "_nanoarrow_values")
    with jax.enable_x64(True), warnings.catch_warnings():
        warnings.simplefilter("error")
        col = na.Array(base)
        assert hub.plan(col, to="jax").zero_copy
        for _ in range(3):  # planned, then the kept route
            x = hub.convert(col, to="jax")
            assert ptr(x) == address and x.dtype == jnp.float64 and float(x[-1]) == 8190.0
        assert views == [True] * 3, views
        for start, length in ((8, 4088), (0, 100), (8, 100), (1, 50)):
            piece = base.slice(start, length)
            y = hub.convert(na.Array(piece), to="jax")
            assert y.tolist() == piece.to_pylist(), (start, length)
            assert (ptr(y) == address + 8 * start) == (start % 8 == 0), (start, length)
        # Copied where unaligned (numpy's allocation, 16 bytes past a boundary), also
        # through nanoarrow's view; a validity bitmap (even without nulls) is read as
        # pyarrow reads it.
        raw = np.arange(1000.0)
        start = (-raw.ctypes.data % 64 // 8 + 2) % 8  # 16 bytes past a 64-byte boundary
        del views[:]
        for _ in range(3):
            z = hub.convert(na.Array(pa.array(raw[start:])), to="jax")
            assert z.tolist() == raw[start:].tolist() and ptr(z) != raw[start:].ctypes.data
        # (the first run may be the kept shared route, which finds the buffer unaligned)
        assert len(views) >= 3 and all(views), views
        masked = pa.array([1.0, 2.0, 3.0], mask=np.array([False, False, False]))
        unmasked = pa.Array.from_buffers(
            masked.type, 3, [pa.py_buffer(b"\x07"), masked.buffers()[1]]
        )
        assert hub.convert(na.Array(unmasked), to="jax").tolist() == [1.0, 2.0, 3.0]
        assert views[-1] is False


def test_arrow_columns_with_nulls_and_other_types(hub: ih.Hub) -> None:
    with pytest.warns(ih.LossyConversionWarning):  # nulls: the bridge fills them with NaN
        x = hub.convert(pa.array([1, None, 3], pa.int32()), to="jax")
    assert np.isnan(np.asarray(x)[1]) and x.dtype == jnp.float32
    flags = hub.convert(pa.array([True, False, True]), to="jax")  # bit-packed: unpacked
    assert flags.dtype == jnp.bool_ and flags.tolist() == [True, False, True]
    with pytest.raises(ih.NoRouteError):
        hub.convert(pa.array(["a", "b"]), to="jax")


def test_polars_and_a_table(hub: ih.Hub) -> None:
    series = pl.Series("x", np.arange(100, dtype=np.float32))
    plan, x = checked(hub, series)  # polars' description does not measure alignment
    assert x.tolist() == series.to_list()
    assert not plan.zero_copy and "alignment is not known" in reasons(plan)
    table = pa.table({"a": np.arange(4.0), "b": np.arange(4.0) * 2})
    with pytest.warns(ih.LossyConversionWarning, match="float64 -> float32"):
        m = hub.convert(table, to="jax")
    assert m.shape == (4, 2) and m[:, 1].tolist() == [0.0, 2.0, 4.0, 6.0]
    with pytest.warns(ih.LossyConversionWarning, match="float64 -> float32"):
        cols = hub.convert(table, to="jax", as_dict=True)  # one 1-D array per column
    assert sorted(cols) == ["a", "b"] and cols["b"].dtype == jnp.float32


def test_a_polars_series_is_read_through_polars_own_view(
    hub: ih.Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A polars Series of one chunk without nulls is read through polars' own numpy view
    (no pyarrow import), copied into new memory as planned; a slice gives its own values,
    several chunks and nulls take the Arrow route (nulls as NaN, warned)."""
    views = _record_finds(monkeypatch, "_polars_view")
    series = pl.Series("x", np.arange(1000, dtype=np.float32))
    for _ in range(3):  # planned, then the kept route
        plan, x = checked(hub, series)
        assert x.tolist() == series.to_list() and x.dtype == jnp.float32
        assert not plan.zero_copy  # polars' description does not measure alignment
    assert views == [True] * 3, views
    piece = series.slice(3, 500)
    assert hub.convert(piece, to="jax").tolist() == piece.to_list()
    chunked = pl.concat([series, series], rechunk=False)
    assert chunked.n_chunks() == 2
    assert hub.convert(chunked, to="jax").tolist() == chunked.to_list()
    assert views[-1] is False
    holes = pl.Series("x", [1.0, None, 3.0], dtype=pl.Float32)
    with pytest.warns(ih.LossyConversionWarning):
        filled = hub.convert(holes, to="jax")
    assert np.isnan(float(filled[1])) and float(filled[2]) == 3.0


def test_a_table_reaches_jax_in_one_copy_the_hubs_aligned_tensor(hub: ih.Hub) -> None:
    # The hub makes a table of two or more columns into a 2-D tensor at a 64-byte boundary
    # and says so (DataInfo.alignment), so jax views that new memory instead of copying it
    # again: one copy, not two. Its numpy form is shared by jax, checked by address.
    n = 20_000  # 312 KiB of result: jax views it
    table = pa.table({"a": np.arange(float(n)), "b": pa.array([None, *range(n - 1)], pa.int64())})
    with jax.enable_x64(True):
        plan = hub.plan(table, to="jax")
        if ALIGNED_KNOWN:
            assert plan.steps[-1].copies == () and "64-byte" in plan.steps[-1].estimate.why
            assert plan.copied_bytes == table.nbytes  # once, not twice
        with pytest.warns(ih.LossyConversionWarning, match="nulls become NaN"):
            x = hub.convert(table, to="jax")
        assert ptr(x) % 64 == 0 and x.shape == (n, 2) and x.dtype == jnp.float64
        assert np.isnan(float(x[0, 1])) and float(x[n - 1, 1]) == n - 2
        if ALIGNED_KNOWN:  # 125 KiB, aligned: viewed; 16 KiB: not aligned
            assert hub.plan(table.slice(0, 8000), to="jax").steps[-1].copies == ()
            assert "not known" in reasons(hub.plan(table.slice(0, 1000), to="jax"))
        with pytest.warns(ih.LossyConversionWarning):
            made = hub.convert(table, to="numpy")
        plan, shared = checked(hub, made)
        assert plan.zero_copy == ALIGNED_KNOWN and ptr(shared) % 64 == 0


@pytest.fixture
def jax_copies(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The element counts of the tensors jax copies itself (its ``_copy``), in order."""
    copies: list[int] = []
    real = interchange_hub_jax._copy

    def counted(value: Any, new: bool, cast: str | None = None) -> Any:
        copies.append(int(value.size))
        return real(value, new, cast)

    monkeypatch.setattr(interchange_hub_jax, "_copy", counted)
    return copies


def test_a_route_planned_for_a_small_table_shares_a_large_ones_tensor(
    hub: ih.Hub, jax_copies: list[int]
) -> None:
    # Tables of any size share a cached route: a small one's tensor is copied by jax
    # (quicker than its DLPack import), a large one's, which the hub makes at 64 bytes,
    # is viewed, whichever came first; sizes may alternate (each change plans anew once).
    def table(n: int) -> pa.Table:
        return pa.table({"a": np.arange(float(n)), "b": np.arange(float(n)) * 2})

    with jax.enable_x64(True):
        # (None: either; a small tensor on the large one's route is viewed where numpy's
        # allocation happens to fall on a 64-byte boundary, else planned anew and copied)
        for n, copied in [(1000, True), (20_000, False), (1000, None), (30_000, False)]:
            before = len(jax_copies)
            x = hub.convert(table(n), to="jax")
            assert x.shape == (n, 2) and float(x[n - 1, 1]) == 2.0 * (n - 1)
            if copied is not None:
                assert (len(jax_copies) > before) == (copied or not ALIGNED_KNOWN), (n, jax_copies)


def test_a_large_frame_after_a_small_one_takes_the_route_of_its_size(
    hub: ih.Hub, jax_copies: list[int]
) -> None:
    # A small polars frame goes through its own to_numpy, which jax then copies (its copy
    # of a small buffer is quicker than a view); a large one through Arrow into the hub's
    # aligned tensor, which jax views: one copy, not two. The route is chosen per size
    # class (Estimate.by_size), so the large frame does not take the small one's route.
    def frame(n: int) -> pl.DataFrame:
        return pl.DataFrame({"a": np.arange(float(n)), "b": np.arange(float(n)) * 2})

    with jax.enable_x64(True):
        small = hub.convert(frame(1000), to="jax")
        assert small.shape == (1000, 2) and jax_copies == [2000]
        plan = hub.plan(frame(100_000), to="jax")
        if ALIGNED_KNOWN:
            assert plan.copied_bytes == 16 * 100_000 and plan.steps[-1].copies == (), str(plan)
        large = hub.convert(frame(100_000), to="jax")
        assert large.shape == (100_000, 2) and float(large[-1, 1]) == 2.0 * 99_999
        assert jax_copies == [2000] if ALIGNED_KNOWN else len(jax_copies) == 2
        # and back: a small frame is copied by jax again, not sent the large one's way
        assert [s.edge for s in hub.plan(frame(1000), to="jax").steps] == [
            s.edge for s in hub.plan(frame(10), to="jax").steps
        ]
        assert [s.edge for s in hub.plan(frame(1000), to="jax").steps] != [
            s.edge for s in plan.steps
        ]


# -- internals the plans rely on -------------------------------------------------------------
def test_share_refuses_what_jax_would_copy() -> None:
    t = torch.arange(256.0)
    assert ptr(interchange_hub_jax._share(t)) == ptr(t)
    with pytest.raises(RouteChanged):
        interchange_hub_jax._share(t[1:])  # 4 bytes in: jax would copy
    arr = buffer(64, np.float32)
    arr.setflags(write=False)
    assert ptr(interchange_hub_jax._share(arr)) == ptr(arr)


def test_a_sharded_array_is_refused_with_a_reason() -> None:
    code = """
import os
os.environ["INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD"] = "1"
import jax, jax.numpy as jnp, numpy as np
import interchange_hub as ih, interchange_hub_jax
hub = ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), interchange_hub_jax])
mesh = jax.sharding.Mesh(np.array(jax.devices()), ("d",))
spec = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("d"))
x = jax.device_put(jnp.arange(8.0), spec)
assert hub.buffers(x) == []
try:
    hub.convert(x, to="numpy")
except ih.NoRouteError as exc:
    print("refused:", exc)
"""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "refused:" in out.stdout and "sharded over several devices" in out.stdout


@pytest.mark.parametrize(
    ("column", "why"),
    [
        (pa.array(["a", "b"]), r"jax holds numbers only .*'c' \(string\).*cast it to a number"),
        (pa.array([1, 2]).dictionary_encode(), r"'c' \(dictionary<.*\) is encoded.*decode it"),
        (pa.array([True, None]), r"bool column 'c' has 1 nulls.*fill_null\(False\)"),
        (pa.array([1, 2], pa.time32("s")), r"jax holds numbers only .*\(time32\[s\]\)"),
    ],
    ids=["string", "dictionary", "bool with nulls", "time32"],
)
def test_refusals_say_why_jax_cannot_hold_the_column(hub: ih.Hub, column: Any, why: str) -> None:
    """The plan's first line says why (it said "... go through the Arrow -> DLPack bridge"),
    for a table and for a column."""
    for data in (pa.table({"c": column}), pa.chunked_array([column])):
        with pytest.raises(ih.NoRouteError) as caught:
            hub.plan(data, to="jax")
        first = str(caught.value).splitlines()[0]
        assert re.search(why.replace("'c'", "'c'" if isinstance(data, pa.Table) else "''"), first)


def test_a_table_of_a_tensor_column_is_refused_the_column_converts(hub: ih.Hub) -> None:
    cells = pa.FixedShapeTensorArray.from_numpy_ndarray(
        np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    )
    with pytest.raises(ih.NoRouteError, match="a table of tensor columns.*on its own"):
        hub.plan(pa.table({"t": cells}), to="jax")
    with jax.enable_x64(True):
        out = hub.convert(cells, to="jax")
    assert out.shape == (2, 2, 2) and out.ravel().tolist() == list(range(8))


# -- the hot path ---------------------------------------------------------------------------
def test_a_repeated_conversion_still_sees_a_deleted_array(hub: ih.Hub) -> None:
    # The route key is kept per Array (its layout never changes); deletion is checked on
    # every call, so the second conversion is refused, not read from freed memory.
    x = jnp.arange(100.0)
    for _ in range(3):
        assert ptr(hub.convert(x, to="numpy")) == ptr(x)
    x.delete()
    with pytest.raises(ih.ConsumedSourceError, match="deleted"):
        hub.convert(x, to="numpy")


@pytest.mark.parametrize(
    ("make", "to"),
    [
        (lambda: jnp.arange(1000.0), "numpy"),
        (lambda: jnp.arange(12, dtype=jnp.int8).reshape(3, 4), "torch"),
        (lambda: jnp.ones((4, 3), dtype=jnp.bool_), "numpy"),
        (lambda: jnp.arange(6, dtype=jnp.uint16), "pyarrow"),
        (lambda: jnp.arange(8.0, dtype=jnp.bfloat16), "torch"),  # no numpy dtype: DLPack
        (lambda: jnp.arange(8.0, dtype=jnp.float16), "polars"),
    ],
)
def test_the_numpy_view_export_shares_the_buffer_every_time(
    hub: ih.Hub, make: Any, to: str
) -> None:
    # np.asarray(x) serves the export where jax hands out a view; the claim holds by
    # address on the first (planned) call and on the repeated (cached) ones alike.
    x = make()
    for _ in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ih.WriteThroughWarning)
            plan, _ = checked(hub, x, to)
        assert plan.zero_copy
    assert getattr(x, "_npy_value", None) is None  # jax kept no copy of its own


@pytest.mark.parametrize("to", ["torch", "numpy", "pyarrow"])
def test_a_column_major_array_is_exported_as_numpys_dlpack_view(
    hub: ih.Hub, to: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A column-major Array (jax keeps the layout of the memory it took) is handed on as
    # numpy's DLPack import of it, the same buffer (np.asarray would copy it into
    # _npy_value): zero-copy by address, planned and kept; where numpy refuses it, the
    # Array itself goes on as DLPack, still zero-copy.
    import interchange_hub_jax

    t = torch.arange(4000.0).reshape(1000, 4).T.contiguous().T  # column-major
    x = jax.dlpack.from_dlpack(t)
    assert hub.describe(x).layout == "F"
    seen: list[object] = []
    numpy_import = np.from_dlpack

    def spy(value: Any) -> Any:
        seen.append(value)
        return numpy_import(value)

    monkeypatch.setattr(np, "from_dlpack", spy)
    for i in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ih.WriteThroughWarning)
            plan, out = checked(hub, x, to)
        assert plan.zero_copy and seen[-1] is x and len(seen) == i + 1
    assert getattr(x, "_npy_value", None) is None  # jax made no copy of its own

    def refusing(value: Any) -> Any:
        raise BufferError("refused")

    monkeypatch.setattr(np, "from_dlpack", refusing)
    run = interchange_hub_jax._column_major_export()
    assert run(x) is x  # the Array itself, for the consumer's own DLPack import
    y = jax.dlpack.from_dlpack(torch.arange(12.0).reshape(4, 3).T)
    monkeypatch.setattr(np, "from_dlpack", numpy_import)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ih.WriteThroughWarning)
        out = hub.convert(y, to="torch")
    assert ptr(out) == ptr(y) and out.tolist() == np.asarray(y).tolist()


def test_the_route_key_function_of_arrays_checks_deletion_each_call(hub: ih.Hub) -> None:
    # route_key_of gives concrete Array types a function of their own (the type tested
    # once): what route_key gives, deletion still checked on every call.
    adapter = hub.registry.owner(jnp.arange(3.0))
    assert adapter is not None
    x = jnp.arange(5.0)
    key = adapter.route_key_of(type(x))
    assert key is not adapter.route_key and key(x) == adapter.route_key(x) is not None
    x.delete()
    assert key(x) is None and adapter.route_key(x) is None


def test_an_array_jax_cached_a_copy_of_goes_through_dlpack(hub: ih.Hub) -> None:
    # Where jax has a host copy cached (np.asarray copied once), that copy is not the
    # Array's buffer: the export hands the Array itself to DLPack, still zero-copy.
    x = jnp.arange(16.0)
    copy = np.arange(16.0)
    copy.flags.writeable = False
    x._npy_value = copy
    plan, arr = checked(hub, x, "numpy")
    assert plan.zero_copy and ptr(arr) == ptr(x) and ptr(arr) != ptr(copy)


def test_pandas_and_polars_frames_reach_jax_in_one_copy(hub: ih.Hub) -> None:
    # pandas: its frame's own to_numpy view, then one copy into jax (column-major: jax
    # copies it), not Arrow's NaN scan. polars (its columns lie apart): the columns copied
    # once into the hub's 2-D tensor at a 64-byte boundary, which jax views.
    import pandas as pd

    values = np.arange(80_000.0).reshape(20_000, 4)  # 625 KiB: jax views what is made
    values[3, 1] = np.nan  # pandas' NaN stays NaN, as in jnp.asarray(df.to_numpy())
    for frame in (pd.DataFrame(values, columns=list("abcd")), pl.from_numpy(values)):
        with jax.enable_x64(True):
            plan, result = checked(hub, frame)
            if isinstance(frame, pd.DataFrame):
                assert plan.steps[0].edge.adapter == "fastpath"
            assert not plan.losses
            if ALIGNED_KNOWN:
                assert plan.copied_bytes == values.nbytes, plan
            np.testing.assert_array_equal(np.asarray(result), values)
            assert result.dtype == jnp.float64


def test_a_pandas_series_reaches_jax_through_its_numpy_view_without_a_nan_scan(
    hub: ih.Hub,
) -> None:
    # Both routes copy once (into jax); the one through Arrow also reads every value
    # (pandas' NaN as null), so the router takes the Series' to_numpy view.
    import pandas as pd

    for nan in (False, True):  # (with a NaN the Arrow route would also be lossy)
        values = np.arange(1000.0)
        if nan:
            values[7] = np.nan
        series = pd.Series(values, name="v")
        with jax.enable_x64(True):
            plan, result = checked(hub, series)
            assert plan.steps[0].edge.adapter == "fastpath", plan
            assert not plan.scans and not plan.losses, plan
            assert plan.copied_bytes == values.nbytes
            np.testing.assert_array_equal(np.asarray(result), values)  # NaN stays NaN
            assert result.dtype == jnp.float64


@pytest.mark.parametrize("shift", [0, 8, 16])  # bytes past a 64-byte boundary
def test_large_arrays_copied_by_jax_itself_are_new_memory_with_their_values(
    hub: ih.Hub, shift: int
) -> None:
    # From 512 KiB jax copies (device_put for column-major, its DLPack import for
    # row-major arrays); what it would share of an aligned array is copied after, and a
    # read-only one takes jnp.array: the result never shares the source.
    rows = 40_000  # 4 columns of float64: 1.25 MiB
    base = np.empty(rows * 4 + 16)
    start = (-base.ctypes.data % 64 + shift) // 8
    data = base[start : start + rows * 4].reshape(rows, 4)
    data[:] = np.arange(rows * 4.0).reshape(rows, 4)
    assert data.ctypes.data % 64 == shift
    for arr in (data, np.asfortranarray(data)):
        for readonly in (False, True):
            src = arr.copy(order="K") if readonly else arr
            if readonly:
                src.flags.writeable = False
            for copy in (None, True):  # (checked: the plan's claim holds by address)
                with jax.enable_x64(True):
                    plan, result = checked(hub, src, copy=copy)
                    assert not (copy and plan.zero_copy)
                    np.testing.assert_array_equal(np.asarray(result), src)
                    assert result.dtype == jnp.float64


# -- jax's DLPack import made directly (interchange_hub_jax._dlpack_in) ----------------------
NARROWED = ("int64", "uint64", "float64", "complex128")  # by jax with x64 off
# every dtype numpy exports through DLPack: the plugin's own list of them
DLPACK_DTYPES = sorted(interchange_hub_jax._NUMPY_DLPACK)


def same_array(ours: Any, theirs: Any, address: int) -> None:
    """Two jax Arrays alike in every way a user can see, both over the memory at
    ``address`` or (jax's cast, x64 off) both not."""
    assert type(ours) is type(theirs)
    assert (ours.dtype, ours.shape, ours.weak_type) == (
        theirs.dtype,
        theirs.shape,
        theirs.weak_type,
    )
    assert ours.sharding == theirs.sharding and ours.committed == theirs.committed
    assert (ptr(ours) == address) == (ptr(theirs) == address)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("dtype", DLPACK_DTYPES)
def test_the_direct_import_gives_what_from_dlpack_gives(dtype: str, x64: bool) -> None:
    """Over dtypes (64-bit ones cast by from_dlpack itself with x64 off), shapes and
    layouts jax takes, and each producer the plugin hands it (numpy, a writable alias of
    read-only memory, torch, nanoarrow's buffer view): the same Array as
    ``jax.dlpack.from_dlpack(copy=False)``, over the same memory; unaligned memory is
    refused with from_dlpack's own ValueError."""
    assert interchange_hub_jax._find_lower() is not None  # (this jax has it, probed)
    flat = buffer(24, dtype)
    readonly = flat.copy()
    readonly.flags.writeable = False
    producers: list[Any] = [
        flat,
        flat[:1].reshape(()),
        flat.reshape(4, 6),
        flat.reshape(6, 4).T,  # column-major: a transposition jax imports
        flat.reshape(2, 3, 4),
        interchange_hub_jax._writable_alias(flat),
    ]
    producers.append(torch.from_numpy(flat))
    if dtype in ("int32", "int64", "float32", "float64"):
        producers.append(na.Array(pa.array(flat)).buffer(1))
    direct = x64 or dtype not in NARROWED  # (else from_dlpack's cast is what jax gives)
    with jax.enable_x64(x64):
        for producer in producers:
            theirs = jax.dlpack.from_dlpack(producer, copy=False)
            with pytest.MonkeyPatch.context() as patch:
                if direct:  # the direct import, not a silent fall back to from_dlpack
                    patch.setattr(jax.dlpack, "from_dlpack", _refused)
                ours = interchange_hub_jax._dlpack_in(producer)
            same_array(ours, theirs, ptr(flat))
            assert (ptr(theirs) == ptr(flat)) == direct
        unaligned = buffer(
            24, dtype, offset=np.dtype(dtype).itemsize * (2 if dtype != "bool" else 8)
        )
        for fn in (interchange_hub_jax._dlpack_in, lambda p: jax.dlpack.from_dlpack(p, copy=False)):
            with pytest.raises(ValueError, match="not aligned to 64 bytes"):
                fn(unaligned)
        with pytest.raises(BufferError):  # numpy's refusal of read-only memory, as jax's
            interchange_hub_jax._dlpack_in(readonly)


def _refused(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("jax.dlpack.from_dlpack called where the direct import serves")


def test_a_result_of_the_direct_import_keeps_its_producer_alive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    arr = buffer(1000, np.float32)
    address = ptr(arr)
    monkeypatch.setattr(jax.dlpack, "from_dlpack", _refused)
    out = interchange_hub_jax._dlpack_in(arr)
    monkeypatch.undo()
    del arr
    gc.collect()
    assert ptr(out) == address and np.array_equal(
        np.asarray(out), np.arange(1000, dtype=np.float32)
    )
    assert float(jax.jit(lambda a: a.sum())(out)) == sum(range(1000))


def test_without_the_direct_import_from_dlpack_takes_everything(
    hub: ih.Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A jax without jaxlib's import where the plugin looks for it, or one whose import
    does not pass the probe: from_dlpack, remembered, and every conversion the same."""
    from jax._src.lib import _jax as extension

    monkeypatch.setattr(interchange_hub_jax, "_LOWER", [])
    monkeypatch.delattr(extension, "dlpack_managed_tensor_to_buffer")
    assert interchange_hub_jax._find_lower() is None and interchange_hub_jax._LOWER == [None]
    monkeypatch.undo()
    assert not interchange_hub_jax._probe(lambda capsule: jnp.zeros(4, jnp.float32))
    assert not interchange_hub_jax._probe(lambda capsule: np.zeros(4, np.float32))
    assert interchange_hub_jax._probe(interchange_hub_jax._find_lower())  # type: ignore[arg-type]
    sources = [buffer(1000, np.float32), buffer(1000, np.float32, offset=16), torch.arange(8.0)]
    expected = [hub.convert(s, to="jax") for s in sources]
    monkeypatch.setattr(interchange_hub_jax, "_LOWER", [None])
    fresh = ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), interchange_hub_jax])
    for source, before in zip(sources, expected, strict=True):
        plan, after = checked(fresh, source)
        assert (after.dtype, after.shape) == (before.dtype, before.shape)
        np.testing.assert_array_equal(np.asarray(after), np.asarray(before))
        assert (ptr(after) == ptr(before)) == plan.zero_copy


@pytest.mark.parametrize("dtype", DLPACK_DTYPES)
def test_small_copies_are_new_aligned_memory_jax_views(hub: ih.Hub, dtype: str) -> None:
    """A small copy (under 512 KiB) is written by numpy into new memory at 64 bytes, which
    jax views (jax makes no copy: jnp.array and device_put are not called): never the
    source's memory, the source's values, on jax's one device, writes to the source not
    seen, its own memory kept alive, and a donating jit free to reuse it."""
    assert interchange_hub_jax._copies_viewed()  # (jax's one device here: the CPU)
    with jax.enable_x64(True):
        for src in (
            buffer(1000, dtype, offset=16),  # unaligned: planned as a copy
            buffer(1000, dtype, offset=16).reshape(100, 10).T,  # column-major
            buffer(1000, dtype)[::2],  # strided
            torch.from_numpy(buffer(1000, dtype, offset=16)),
        ):
            view = src.numpy() if isinstance(src, torch.Tensor) else src
            before = view.copy()
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(jnp, "array", _refused)
                patch.setattr(jax, "device_put", _refused)
                plan, out = checked(hub, src)
            assert not plan.zero_copy and ptr(out) % 64 == 0
            assert out.devices() == {jax.devices()[0]}
            assert out.dtype == before.dtype and out.shape == before.shape
            np.testing.assert_array_equal(np.asarray(out), before)
            view[...] = np.zeros_like(before)  # (a torch tensor's numpy view)
            del src, view
            gc.collect()
            np.testing.assert_array_equal(np.asarray(out), before)
            if dtype in ("float32", "float64"):
                doubled = jax.jit(lambda a: a * 2, donate_argnums=0)(out).block_until_ready()
                np.testing.assert_array_equal(np.asarray(doubled), before * 2)


@pytest.mark.skipif(not ALIGNED_KNOWN, reason="this hub does not report alignment")
def test_small_new_aligned_memory_is_viewed_only_through_the_direct_import(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hub's aligned tensor of a table of 8,000 rows (125 KiB): viewed through the
    direct import (6.6 us, less than any copy); through from_dlpack (52 us) copied, the
    plan saying why."""
    table = pa.table({"a": np.arange(8000.0), "b": np.arange(8000.0) * 2})
    with jax.enable_x64(True):
        for lower, copied in ((interchange_hub_jax._find_lower(), False), (None, True)):
            monkeypatch.setattr(interchange_hub_jax, "_LOWER", [lower])
            hub = ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), interchange_hub_jax])
            plan = hub.plan(table, to="jax")
            assert plan.copied_bytes == table.nbytes * (2 if copied else 1), str(plan)
            assert ("small (under 32,768 elements)" in reasons(plan)) == copied
            x = hub.convert(table, to="jax")
            assert ptr(x) % 64 == 0 and float(x[-1, 1]) == 2.0 * 7999


def test_small_copies_are_jaxs_own_without_the_direct_import(
    hub: ih.Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the direct import (from_dlpack would cost more than jax's copy) or where
    jax has other devices, small copies are jnp.array's, as before."""
    src = buffer(1000, np.float32, offset=16)
    made: list[int] = []
    array = jnp.array

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(1)
        return array(*args, **kwargs)

    for lower, viewed in ((None, [True]), (interchange_hub_jax._find_lower(), [False])):
        monkeypatch.setattr(interchange_hub_jax, "_LOWER", [lower])
        monkeypatch.setattr(interchange_hub_jax, "_VIEWED_COPIES", viewed if lower else [])
        monkeypatch.setattr(jnp, "array", counted)
        made.clear()
        fresh = ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), interchange_hub_jax])
        plan, out = checked(fresh, src)
        assert not plan.zero_copy and made and np.array_equal(np.asarray(out), src)
        monkeypatch.setattr(jnp, "array", array)


def test_strides_no_multiple_of_the_item_size_are_made_contiguous(hub: ih.Hub) -> None:
    # a record array's float64 field (a stride of 12 bytes): DLPack cannot describe it
    field = np.zeros(4, dtype=[("a", "i4"), ("b", "f8")])["b"]
    field[:] = [1.5, 2.5, 3.5, 4.5]
    assert field.strides == (12,)
    with jax.enable_x64(True):
        assert not hub.plan(field, to="jax").zero_copy
        assert np.asarray(hub.convert(field, to="jax")).tolist() == [1.5, 2.5, 3.5, 4.5]


def test_a_1d_masked_array_goes_to_jax_its_mask_lost_as_planned(hub: ih.Hub) -> None:
    # jax refuses a MaskedArray itself, mask or none: the plan went through and the run
    # failed ("numpy masked arrays are not supported as direct inputs to JAX functions")
    with jax.enable_x64(True):
        masked = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])
        with pytest.warns(ih.LossyConversionWarning, match="the mask is dropped"):
            assert np.asarray(hub.convert(masked, to="jax")).tolist() == [1.0, 2.0, 3.0]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert np.asarray(hub.convert(np.ma.array([1.0, 2.0]), to="jax")).tolist() == [1.0, 2.0]


def test_jax_reads_an_export_as_it_reads_the_source() -> None:
    # jax 0.10 asks __dlpack__ for no versioned capsule, which cannot say read-only: the
    # export's read-only numpy view of a jax Array (or of pyarrow memory) was refused
    # ("Cannot export readonly array"), where jnp.from_dlpack(x) itself works
    with jax.enable_x64(True):
        x = jnp.arange(3.0)
        assert np.asarray(jnp.from_dlpack(ih.export(x))).tolist() == [0.0, 1.0, 2.0]
        column = pa.array([1.0, 2.0])
        with warnings.catch_warnings():  # (pyarrow deprecates unversioned capsules: its own)
            warnings.simplefilter("ignore", DeprecationWarning)
            assert np.asarray(jnp.from_dlpack(ih.export(column))).tolist() == [1.0, 2.0]
        read_only = np.arange(3.0)
        read_only.setflags(write=False)
        with pytest.raises(BufferError):  # (as jnp.from_dlpack(read_only) itself)
            jnp.from_dlpack(ih.export(read_only))
