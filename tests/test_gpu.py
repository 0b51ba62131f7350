"""Real GPU tests: cupy and CUDA torch through the hub (skipped without a CUDA device).

``scripts/gpu-check`` runs them on a machine with an NVIDIA GPU. Zero-copy claims are
checked by device pointers; every move between host and device must be a plan step.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import interchange_hub as ih
from interchange_hub._c import arrow_device
from interchange_hub._core.device import Device, DeviceType
from interchange_hub.devicetesting import DeviceArrayOnly as DeviceOnly

pytestmark = pytest.mark.gpu

N = 1 << 20


@pytest.fixture
def cp() -> Any:
    return pytest.importorskip("cupy")


@pytest.fixture
def torch() -> Any:
    return pytest.importorskip("torch")


# -- cupy <-> torch on one GPU ---------------------------------------------------------------------
def test_cupy_to_torch_and_back_is_zero_copy(cp: Any, torch: Any) -> None:
    x = cp.arange(N, dtype=cp.float32)
    plan = ih.plan(x, to="torch")
    assert plan.zero_copy and plan.device_moves == 0
    t = ih.convert(x, to="torch")
    assert t.is_cuda and t.data_ptr() == x.data.ptr
    back = ih.convert(t, to="cupy")
    assert back.data.ptr == x.data.ptr
    assert ih.default_hub().shared_bytes(t, x) == x.nbytes
    assert {b.device for b in ih.default_hub().buffers(t)} == {"cuda:0"}


def test_repeated_hand_offs_run_the_kept_route_and_still_share(
    cp: Any, torch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After the first, a conversion of an array or tensor of the same dtype, trailing
    # shape, order and GPU is not described again: it runs the route kept for its route
    # key (cupy's read from its own fields). Every result still shares the memory.
    from interchange_hub.adapters import _cupy, _torch

    described: list[str] = []
    for cls in (_cupy.CupyAdapter, _torch.TorchAdapter):
        real = cls.describe

        def counted(self: Any, obj: Any, real: Any = real) -> Any:
            described.append(type(obj).__name__)
            return real(self, obj)

        monkeypatch.setattr(cls, "describe", counted)
    key = _cupy.CupyAdapter().route_key
    hub = ih.Hub()
    makers = {
        "row-major": lambda n: cp.arange(n, dtype=cp.float32),
        "column-major": lambda n: cp.asfortranarray(cp.arange(2.0 * n).reshape(n, 2)),
    }
    for order, make in makers.items():
        arrays = [make(n) for n in (1000, 4000, 250)]
        assert key(arrays[0]) == key(arrays[1]) is not None, order
        kept = key(arrays[0])  # its device and order as cupy's public names say
        assert isinstance(kept, tuple) and kept[-2:] == (x_device(arrays[0]), c_order(arrays[0]))
        planned: list[list[str]] = []
        described.clear()
        for x in arrays:
            t = hub.convert(x, to="torch")
            assert t.is_cuda and t.data_ptr() == x.data.ptr and t.shape == x.shape, order
            back = hub.convert(t, to="cupy")
            assert back.data.ptr == x.data.ptr and back.strides == x.strides, order
            planned.append(list(described))
        assert {"ndarray", "Tensor"} <= set(planned[0]), planned  # planned the first time
        assert planned[0] == planned[1] == planned[2], (order, planned)  # then kept
    assert key(cp.arange(10.0)[::2]) is None  # strided: planned on every call
    grad = torch.arange(8.0, device="cuda", requires_grad=True)
    y = hub.convert(grad, to="cupy")
    assert y.data.ptr == grad.data_ptr() and y.get().tolist() == list(range(8))


def test_the_producers_stream_is_synchronised(cp: Any, torch: Any) -> None:
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = cp.ones(64 * N, dtype=cp.float32) * 3  # queued on a side stream
        t = ih.convert(x, to="torch")  # torch's stream must wait for that work
    assert bool((t == 3).all())
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        u = torch.full((64 * N,), 5.0, device="cuda")
        y = ih.convert(u, to="cupy")
    assert bool((y == 5).all())


def test_negative_strides_reach_torch_as_a_device_copy(cp: Any, torch: Any) -> None:
    x = cp.arange(1000, dtype=cp.int64)[::-1]
    plan = ih.plan(x, to="torch")
    assert not plan.zero_copy and plan.device_moves == 0
    assert ih.convert(x, to="torch").cpu().tolist() == list(range(999, -1, -1))


def test_copy_true_copies_on_the_device(cp: Any) -> None:
    x = cp.arange(10.0)
    y = ih.convert(x, to="cupy", copy=True)
    assert y.data.ptr != x.data.ptr and y.device.id == x.device.id
    assert ih.plan(x, to="cupy", copy=True).device_moves == 0


# -- host <-> device: explicit, visible copies ---------------------------------------------------------
def test_cupy_to_polars_copies_once_and_says_where(cp: Any) -> None:
    pytest.importorskip("polars")
    x = cp.arange(1000, dtype=cp.float64)
    plan = ih.plan(x, to="polars")
    moves = [s for s in plan.steps if s.estimate.moves_device]
    assert len(moves) == 1 and moves[0].copied_bytes == 8000
    assert "device move cuda:0 -> cpu" in str(plan)
    assert ih.convert(x, to="polars").to_list() == list(np.arange(1000, dtype="float64"))
    with pytest.raises(ih.CopyRequiredError):
        ih.convert(x, to="polars", copy=False)


def test_host_to_cupy_is_one_move(cp: Any) -> None:
    data = np.arange(1000, dtype=np.int32)
    plan = ih.plan(data, to="cupy")
    assert plan.device_moves == 1 and plan.result.device == Device(DeviceType.CUDA, 0)
    out = ih.convert(data, to="cupy")
    assert isinstance(out, cp.ndarray) and out.get().tolist() == data.tolist()
    with pytest.raises(ih.CopyRequiredError):
        ih.convert(data, to="cupy", copy=False)


def test_torch_moves_between_host_and_device_when_asked(torch: Any) -> None:
    t = torch.arange(100, dtype=torch.float32)
    assert ih.plan(t, to="torch").steps == ()  # already where torch can hold it
    on_gpu = ih.convert(t, to="torch", device="cuda:0")
    assert on_gpu.is_cuda and on_gpu.cpu().tolist() == t.tolist()
    back = ih.convert(on_gpu, to="numpy")  # numpy holds CPU memory only
    assert back.tolist() == t.tolist()
    assert ih.plan(on_gpu, to="numpy").device_moves == 1
    assert ih.convert(on_gpu, to="torch", device="cpu").device.type == "cpu"


def test_cupy_to_torch_on_the_cpu_is_one_move(cp: Any, torch: Any) -> None:
    x = cp.arange(10, dtype=cp.float32)
    plan = ih.plan(x, to="torch", device="cpu")
    assert plan.device_moves == 1
    assert ih.convert(x, to="torch", device="cpu").tolist() == list(range(10))


def test_a_second_gpu_is_a_device_move(cp: Any) -> None:
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("one GPU only")
    x = cp.arange(10.0)
    y = ih.convert(x, to="cupy", device="cuda:1")
    assert y.device.id == 1 and ih.plan(x, to="cupy", device="cuda:1").device_moves == 1


# -- Arrow device capsules -----------------------------------------------------------------------------
def test_cupy_exports_a_cuda_device_array_without_copying(cp: Any) -> None:
    x = cp.arange(N, dtype=cp.int64)
    got = arrow_device.import_device_array(*ih.export(x).__arrow_c_device_array__())
    try:
        assert got.device == Device(DeviceType.CUDA, x.device.id)
        assert got.columns[0].data == x.data.ptr and got.length == N
        assert got.sync_event != 0 and got.event_handle != 0
    finally:
        got.close()


def test_torch_exports_a_cuda_device_array_and_stream(torch: Any) -> None:
    t = torch.arange(1000, dtype=torch.float32, device="cuda")
    exported = ih.export(t)
    assert not hasattr(exported, "__arrow_c_array__")
    got = arrow_device.import_device_array(*exported.__arrow_c_device_array__())
    assert got.device.type == DeviceType.CUDA and got.columns[0].data == t.data_ptr()
    assert got.event_handle != 0
    got.close()
    arrays, device_type = arrow_device.import_device_stream(exported.__arrow_c_device_stream__())
    assert device_type == DeviceType.CUDA and arrays[0].columns[0].data == t.data_ptr()
    arrays[0].close()


def test_a_column_major_matrix_exports_as_a_device_table(cp: Any) -> None:
    x = cp.asfortranarray(cp.arange(12, dtype=cp.float32).reshape(4, 3))
    got = arrow_device.import_device_array(*ih.export(x).__arrow_c_device_array__())
    assert got.table and [c.data for c in got.columns] == [x.data.ptr + i * 16 for i in range(3)]
    got.close()


def test_cuda_device_arrays_are_consumed_without_copying(cp: Any, torch: Any) -> None:
    x = cp.arange(N, dtype=cp.float32)
    producer = DeviceOnly(ih.export(x))
    assert ih.plan(producer, to="torch").zero_copy
    t = ih.convert(producer, to="torch")
    assert t.data_ptr() == x.data.ptr and float(t[-1].item()) == N - 1
    y = ih.convert(DeviceOnly(ih.export(t)), to="cupy")
    assert y.data.ptr == x.data.ptr
    del x, t
    assert float(y[-1]) == N - 1  # the capsule chain keeps the memory alive


def test_nanoarrow_reads_a_cuda_device_array(cp: Any) -> None:
    device = pytest.importorskip("nanoarrow.device")
    arr = device.c_device_array(ih.export(cp.arange(3, dtype=cp.int32)))
    assert (arr.device_type_id, arr.device_id) == (2, 0)


def test_cupy_passes_the_device_conformance_kit(cp: Any) -> None:
    from interchange_hub.devicetesting import assert_device_conforms

    assert_device_conforms(None, "cupy")


def x_device(x: Any) -> int:
    return int(x.device.id)


def c_order(x: Any) -> bool:
    return bool(x.flags.c_contiguous)
