"""Device policy, device moves and Arrow device capsules, on a simulated accelerator.

The simulated device (``tests/fake_plugins/simdevice.py``) holds memory the host may not
read except through its own copy function, so every route the router picks is checked
for where it moves data, how it says so, and what ``copy=False`` makes of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import torch

import interchange_hub as ih
from interchange_hub._c import arrow_device
from interchange_hub._core.device import CPU, Device, DeviceType
from interchange_hub.devicetesting import DeviceArrayOnly as DeviceOnly, DeviceStreamOnly
from tests.fake_plugins import simdevice
from tests.fake_plugins.simdevice import LOG, SIM, SimArray

SIM1 = Device(DeviceType.EXT_DEV, 1)


@pytest.fixture
def hub() -> ih.Hub:
    return ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), simdevice])


@pytest.fixture(autouse=True)
def fresh_log() -> Iterator[None]:
    LOG.__init__()  # type: ignore[misc]
    yield


def sim(n: int = 1000, dtype: str = "float64") -> SimArray:
    return SimArray(np.arange(n, dtype=dtype), SIM)


# -- the device policy -------------------------------------------------------------------------
def test_the_simulated_memory_refuses_host_access() -> None:
    x = sim()
    with pytest.raises(BufferError, match="use to_host"):
        x.__dlpack__(dl_device=(1, 0))  # DLPack's way to ask for CPU memory
    with pytest.raises(TypeError):
        memoryview(x)  # type: ignore[arg-type]
    assert not hasattr(x, "__array__") and not hasattr(x, "__array_interface__")
    assert x.__dlpack_device__() == (12, 0)


def test_device_memory_to_a_cpu_library_is_one_visible_copy(hub: ih.Hub) -> None:
    x = sim(1000)
    plan = hub.plan(x, to="polars")
    moves = [s for s in plan.steps if s.estimate.moves_device]
    assert len(moves) == 1 and plan.device_moves == 1
    assert moves[0].edge.protocol == "SimArray.to_host" and moves[0].copied_bytes == 8000
    assert plan.copied_bytes == 8000 and not plan.zero_copy
    assert "copy 7.8 KiB (device move ext_dev:0 -> cpu)" in str(plan)
    series = hub.convert(x, to="polars")
    assert series.to_list() == list(np.arange(1000, dtype="float64"))
    assert LOG.to_host == 1


def test_copy_false_refuses_a_device_move(hub: ih.Hub) -> None:
    with pytest.raises(ih.CopyRequiredError, match=r"SimArray.to_host\(\) copies ext_dev:0"):
        hub.plan(sim(), to="numpy", copy=False)
    with pytest.raises(ih.CopyRequiredError):
        hub.convert(np.arange(5.0), to="simdev", copy=False)
    assert LOG.to_host == LOG.from_host == 0


def test_host_memory_to_the_device_library_moves_to_its_default_device(hub: ih.Hub) -> None:
    data = np.arange(10, dtype="int32")
    plan = hub.plan(data, to="simdev")
    assert plan.device_moves == 1 and plan.result.device == SIM
    out = hub.convert(data, to="simdev")
    assert isinstance(out, SimArray) and out.device == SIM and LOG.from_host == 1
    assert out.to_host().tolist() == list(range(10))


def test_device_asks_for_a_place(hub: ih.Hub) -> None:
    out = hub.convert(np.arange(4.0), to="simdev", device="ext_dev:1")
    assert out.device == SIM1
    plan = hub.plan(sim(), to="torch", device="cpu")
    assert plan.device_moves == 1 and plan.result.device == CPU
    tensor = hub.convert(sim(8), to="torch")  # torch cannot hold ext_dev: to its default
    assert tensor.device.type == "cpu" and tensor.tolist() == list(range(8))


def test_data_stays_where_the_target_can_hold_it(hub: ih.Hub) -> None:
    x = sim()
    plan = hub.plan(x, to="simdev")
    assert plan.steps == () and hub.convert(x, to="simdev") is x
    assert hub.plan(np.arange(3.0), to="torch").device_moves == 0


def test_a_place_the_target_cannot_hold_is_refused_up_front(hub: ih.Hub) -> None:
    with pytest.raises(ih.DeviceError, match="polars keeps data on cpu, not on cuda:0"):
        hub.plan(sim(), to="polars", device="cuda:0")
    with pytest.raises(ih.DeviceError, match="unknown device 'gpu'"):
        hub.plan(sim(), to="polars", device="gpu")


def test_copy_true_on_the_device_copies_there(hub: ih.Hub) -> None:
    x = sim(16)
    out = hub.convert(x, to="simdev", copy=True)
    assert out.device == SIM and out.address != x.address
    assert LOG.to_host == LOG.from_host == 0
    assert hub.shared_bytes(out, x) == 0


def test_cpu_libraries_never_get_device_memory(hub: ih.Hub) -> None:
    for target in ("numpy", "pyarrow", "pandas", "nanoarrow", "polars", "torch"):
        plan = hub.plan(sim(8), to=target)
        first_cpu = next(i for i, s in enumerate(plan.steps) if s.estimate.out.device.is_cpu)
        assert all(s.before.device == SIM for s in plan.steps[: first_cpu + 1])
        assert plan.steps[first_cpu].estimate.moves_device, target


# -- Arrow device capsules out of the hub ---------------------------------------------------------
def test_device_array_export_points_at_the_device_memory(hub: ih.Hub) -> None:
    x = sim(100, "int64")
    exported = hub.export(x)
    assert not hasattr(exported, "__arrow_c_array__")  # device memory: no CPU pointers
    assert not hasattr(exported, "__arrow_c_stream__")
    got = arrow_device.import_device_array(*exported.__arrow_c_device_array__())
    try:
        assert got.device == SIM and not got.table and got.length == 100
        assert got.columns[0].dtype == "int64" and got.columns[0].data == x.address
        assert got.sync_event != 0 and got.event_handle == LOG.events[-1]
    finally:
        got.close()
    assert LOG.to_host == 0


def test_device_array_export_follows_the_kwargs_rule(hub: ih.Hub) -> None:
    exported = hub.export(sim(4))
    arrow_device.import_device_array(*exported.__arrow_c_device_array__(future=None)).close()
    with pytest.raises(NotImplementedError, match="future"):
        exported.__arrow_c_device_array__(future=1)
    with pytest.raises(NotImplementedError, match="future"):
        exported.__arrow_c_device_stream__(future=1)


def test_device_stream_export_is_one_chunk_on_the_device(hub: ih.Hub) -> None:
    x = sim(10, "float32")
    arrays, _ = arrow_device.import_device_stream(hub.export(x).__arrow_c_device_stream__())
    assert [a.device for a in arrays] == [SIM]
    assert arrays[0].columns[0].data == x.address
    for a in arrays:
        a.close()


def test_cpu_export_speaks_the_device_interface_with_cpu_ids(hub: ih.Hub) -> None:
    data = np.arange(6, dtype="float64")
    exported = hub.export(data)
    got = arrow_device.import_device_array(*exported.__arrow_c_device_array__())
    assert got.device == CPU and got.sync_event == 0
    got.close()
    table = pa.table({"a": pa.chunked_array([[1, 2], [3]]), "b": pa.chunked_array([[4, 5], [6]])})
    arrays, _ = arrow_device.import_device_stream(hub.export(table).__arrow_c_device_stream__())
    assert [a.length for a in arrays] == [2, 1] and all(a.device == CPU for a in arrays)
    for a in arrays:
        a.close()


def test_nanoarrow_reads_the_hubs_device_arrays() -> None:
    device = pytest.importorskip("nanoarrow.device")
    arr = device.c_device_array(ih.export(np.arange(3, dtype="int64")))
    assert (arr.device_type_id, arr.device_id) == (1, -1)


# -- Arrow device capsules into the hub ------------------------------------------------------------
def test_device_arrays_from_any_producer_are_imported_without_a_copy(hub: ih.Hub) -> None:
    x = sim(50, "float32")
    producer = DeviceOnly(hub.export(x))
    plan = hub.plan(producer, to="simdev")
    assert plan.zero_copy and plan.steps[0].edge.source == "arrow_device"
    out = hub.convert(producer, to="simdev")
    assert out.address == x.address and out.device == SIM
    assert LOG.waits and LOG.waits[-1] == LOG.events[-1]  # the sync_event was waited on
    assert out.to_host().tolist() == list(np.arange(50, dtype="float32"))


def test_a_device_array_reaches_cpu_libraries_only_through_a_move(hub: ih.Hub) -> None:
    producer = DeviceOnly(hub.export(sim(5)))
    with pytest.raises(ih.CopyRequiredError):
        hub.plan(producer, to="numpy", copy=False)


def test_cpu_device_arrays_from_pyarrow_convert_everywhere(hub: ih.Hub) -> None:
    arr = pa.array(np.arange(8, dtype="int64"))
    producer = DeviceOnly(arr)
    tensor = hub.convert(producer, to="torch")
    assert tensor.data_ptr() == arr.buffers()[1].address  # zero-copy
    assert hub.convert(producer, to="polars").to_list() == list(range(8))
    strings = DeviceOnly(pa.array(["a", None, "c"]))
    assert hub.convert(strings, to="pandas").tolist()[::2] == ["a", "c"]


def test_device_streams_are_read_once_and_converted(hub: ih.Hub) -> None:
    x = sim(12, "int32")
    out = hub.convert(DeviceStreamOnly(hub.export(x)), to="simdev")
    assert out.address == x.address
    table = pa.table({"a": pa.chunked_array([[1, 2], [3]])})
    polars_out = hub.convert(DeviceStreamOnly(hub.export(table)), to="polars")
    assert polars_out["a"].to_list() == [1, 2, 3]


def test_torch_cpu_import_of_a_device_array_waits_for_nothing_and_shares(hub: ih.Hub) -> None:
    data = torch.arange(10, dtype=torch.float64)
    tensor = hub.convert(DeviceOnly(hub.export(data)), to="torch")
    assert tensor.data_ptr() == data.data_ptr()


def test_the_readme_shows_the_device_plan_as_printed() -> None:
    from pathlib import Path

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    x = np.arange(1_000_000, dtype=np.float32)
    assert str(ih.plan(x, to="torch", device="cuda:0")) in readme


def test_exported_device_memory_lives_until_the_consumer_releases_it(hub: ih.Hub) -> None:
    import gc
    import weakref

    x = sim(64)
    alive = weakref.ref(x)
    pair = hub.export(x).__arrow_c_device_array__()
    del x
    gc.collect()
    got = arrow_device.import_device_array(*pair)
    del pair
    gc.collect()
    assert alive() is not None
    got.close()
    gc.collect()
    assert alive() is None


def test_a_consumer_refusing_the_device_keeps_its_own_error(hub: ih.Hub) -> None:
    # pyarrow's wheels know no device but the CPU; its error must reach the caller intact
    # even though the capsules die while it is pending.
    with pytest.raises(pa.ArrowKeyError, match="Device type 12"):
        pa.Array._import_from_c_device_capsule(*hub.export(sim(8)).__arrow_c_device_array__())


cpu_torch = pytest.mark.skipif(torch.cuda.is_available(), reason="this torch reaches a GPU")


@cpu_torch
def test_a_torch_without_cuda_refuses_gpu_data_and_says_what_to_do() -> None:
    from interchange_hub._core.info import Column, DataInfo, Kind, Unroutable
    from interchange_hub.adapter import DLPACK, Context
    from interchange_hub.adapters._torch import TorchAdapter

    edge = next(e for e in TorchAdapter().edges() if e.source == DLPACK)
    on_gpu = DataInfo(
        Kind.TENSOR, (Column("", "float32", 40, 0),), 10, (10,), "C", Device(DeviceType.CUDA, 0)
    )
    with pytest.raises(Unroutable, match="pass device='cpu' to move the data to the CPU"):
        edge.estimate(Context(on_gpu))


@cpu_torch
def test_a_move_to_a_gpu_torch_cannot_reach_is_a_device_error() -> None:
    with pytest.raises(ih.DeviceError, match="install a CUDA build of torch"):
        ih.convert(np.arange(3.0), to="torch", device="cuda:0")


def test_copy_true_off_the_device_is_the_move_alone(hub: ih.Hub) -> None:
    x = sim(32)
    plan = hub.plan(x, to="numpy", copy=True)
    assert plan.device_moves == 1 and len(plan.copies) == 1  # the move is the new memory
    out = hub.convert(x, to="numpy", copy=True)
    assert out.flags.writeable and LOG.to_host == 1


def test_tensors_without_a_zero_copy_arrow_form_are_refused_with_the_fix(hub: ih.Hub) -> None:
    matrix = SimArray(np.arange(12, dtype="float32").reshape(3, 4), SIM)
    with pytest.raises(ih.NoRouteError, match="column-major"):
        hub.export(matrix).__arrow_c_device_array__()
    flags = SimArray(np.zeros(4, dtype=bool), SIM)
    with pytest.raises(ih.NoRouteError, match="bit-packed"):
        hub.export(flags).__arrow_c_device_array__()


def test_a_device_stream_of_several_gpu_chunks_is_refused_clearly(hub: ih.Hub) -> None:
    a, b = hub.export(sim(4)), hub.export(sim(6))
    pairs = [a.__arrow_c_device_array__(), b.__arrow_c_device_array__()]
    stream = arrow_device.export_device_stream(pairs[0][0], iter(pairs), SIM)

    class Producer:
        def __arrow_c_device_stream__(self, requested_schema: object = None) -> object:
            return stream

    with pytest.raises(ih.ConversionError, match="2 chunks on ext_dev:0"):
        hub.convert(Producer(), to="simdev")


def test_the_simulated_device_passes_the_device_conformance_kit() -> None:
    from interchange_hub.devicetesting import assert_device_conforms

    report = assert_device_conforms(simdevice, "simdev")
    assert len(report.checks) >= 15 and report.ok


def test_the_device_kit_catches_a_move_that_claims_no_copy() -> None:
    from interchange_hub._core.info import Estimate, Unroutable
    from interchange_hub.adapter import DLPACK, Edge
    from interchange_hub.devicetesting import check_device_conformance

    def no_move(ctx: ih.Context) -> Estimate:
        if ctx.device is None or not ctx.device.is_cpu:
            raise Unroutable("nothing to move")
        return Estimate(ctx.info.but(device=ctx.device), why="claims to share the memory")

    class Sneaky(simdevice.SimAdapter):
        """Moves to the host as the real one does, but claims the move copies nothing."""

        def edges(self) -> list[Edge]:
            kept = [e for e in super().edges() if e.protocol != "SimArray.to_host"]
            out = simdevice._out  # the real copy
            return [
                *kept,
                Edge("simdev", DLPACK, "simdev", "to_host", no_move, out, devices=("ext_dev",)),
            ]

    class Plugin:
        @ih.hookimpl
        def register_adapters(self, register: Any) -> None:
            register(Sneaky())

    report = check_device_conformance(Plugin(), "simdev")
    failed = {c.name for c in report.failures}
    assert "device -> host: one move" in failed
    assert "device -> host: copy=False refuses the move" in failed
