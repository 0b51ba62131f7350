"""The router on fake adapters: route choice, device moves as steps, policies, caching."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

import interchange_hub as ih
from interchange_hub._core.device import CPU, Device, DeviceType
from interchange_hub._core.info import Column, Copy, DataInfo, Estimate, Kind, Loss
from interchange_hub.adapter import ARROW, DLPACK

GPU = Device(DeviceType.CUDA, 0)


@dataclass
class Blob:
    """Fake data: ``n`` bytes of int64 on some device."""

    n: int
    device: Device = CPU
    trail: tuple[str, ...] = ()


def _info(blob: Blob) -> DataInfo:
    return DataInfo(
        Kind.TENSOR,
        (Column("", "int64", blob.n, 0),),
        rows=blob.n // 8,
        shape=(blob.n // 8,),
        layout="C",
        device=blob.device,
    )


def _edge(
    src: str,
    dst: str,
    *,
    copy: bool = False,
    loss: bool = False,
    move: Device | None = None,
    name: str = "fake",
    devices: tuple[str, ...] = ("cpu", "cuda"),
) -> ih.Edge:
    def estimate(ctx: ih.Context) -> Estimate:
        info = ctx.info
        out = info.but(device=move) if move is not None else info
        copies = (Copy("", info.nbytes, f"{src}->{dst} copies"),) if copy or move else ()
        losses = (Loss("", "int64", "int32", "truncated"),) if loss else ()
        return Estimate(
            out,
            copies,
            losses,
            why=f"{src}->{dst}",
            copies_all=bool(copies),
            moves_device=move is not None,
        )

    def run(value: Blob, ctx: ih.Context) -> Blob:
        device = move if move is not None else value.device
        return Blob(value.n, device, (*value.trail, f"{src}->{dst}"))

    return ih.Edge(src, dst, name, f"{src}->{dst}", estimate, run, devices=devices)


class FakeAdapter(ih.Adapter):
    def __init__(
        self,
        name: str,
        edges: Sequence[ih.Edge],
        owner: bool = False,
        devices: tuple[str, ...] = ("cpu",),
    ) -> None:
        self.name = name
        self.devices = devices
        self.module = "builtins"  # always loaded
        self._edges = edges
        self._owner = owner

    def owns(self, obj: object) -> bool:
        # A source owns every Blob; a target the Blobs its edges made (the hub checks that
        # a conversion's result is the target's own; the owner of a type is the source)
        if not isinstance(obj, Blob):
            return False
        return self._owner or (bool(obj.trail) and f"->{self.name}" in obj.trail[-1])

    def describe(self, obj: Any) -> DataInfo:
        return _info(obj)

    def edges(self) -> Sequence[ih.Edge]:
        return self._edges

    def type_kinds(self) -> dict[type, Kind | None]:
        return {}


def make_hub(*adapters: ih.Adapter, edges: Sequence[ih.Edge] = ()) -> ih.Hub:
    class Plugin:
        @ih.hookimpl
        def register_adapters(self, register: Any) -> None:
            for a in adapters:
                register(a)

        @ih.hookimpl
        def register_edges(self, register: Any) -> None:
            for e in edges:
                register(e)

    return ih.Hub(autoload=False, plugins=[Plugin()], builtin=False)


def test_cheapest_route_wins() -> None:
    src = FakeAdapter("src", [_edge("src", ARROW, copy=True), _edge("src", DLPACK)], owner=True)
    dst = FakeAdapter("dst", [_edge(ARROW, "dst"), _edge(DLPACK, "dst")])
    hub = make_hub(src, dst)
    plan = hub.plan(Blob(800), to="dst")
    assert [s.edge.target for s in plan.steps] == [DLPACK, "dst"]
    assert plan.zero_copy
    assert hub.convert(Blob(800), to="dst").trail == ("src->dlpack", "dlpack->dst")


def test_lossless_beats_cheaper_lossy() -> None:
    src = FakeAdapter(
        "src", [_edge("src", ARROW, loss=True), _edge("src", DLPACK, copy=True)], owner=True
    )
    dst = FakeAdapter("dst", [_edge(ARROW, "dst"), _edge(DLPACK, "dst")])
    plan = make_hub(src, dst).plan(Blob(800), to="dst")
    assert plan.lossless and not plan.zero_copy


def test_device_move_is_a_step_with_its_cost() -> None:
    src = FakeAdapter("gpulib", [_edge("gpulib", DLPACK)], owner=True, devices=("cuda",))
    dst = FakeAdapter("cpulib", [_edge(DLPACK, "cpulib", devices=("cpu",))])
    mover = _edge(DLPACK, DLPACK, move=ih.Device.parse("cpu"), name="mover")
    hub = make_hub(src, dst, edges=[mover])
    blob = Blob(4096, GPU)
    for device in ("cpu", None):  # cpulib holds CPU memory only: None moves it there too
        plan = hub.plan(blob, to="cpulib", device=device)
        assert [s.edge.adapter for s in plan.steps] == ["fake", "mover", "fake"]
        assert plan.device_moves == 1 and plan.copied_bytes == 4096
        assert "device move cuda:0 -> cpu" in str(plan)
    assert hub.convert(blob, to="cpulib").device == ih.Device.parse("cpu")
    with pytest.raises(ih.CopyRequiredError, match="dlpack -> dlpack"):
        hub.plan(blob, to="cpulib", device="cpu", copy=False)
    with pytest.raises(ih.DeviceError, match="cpulib keeps data on cpu, not on cuda:1"):
        hub.plan(blob, to="cpulib", device="cuda:1")


def test_an_edge_never_gets_memory_on_a_device_it_does_not_take() -> None:
    src = FakeAdapter("gpulib", [_edge("gpulib", DLPACK)], owner=True, devices=("cuda",))
    dst = FakeAdapter("cpulib", [_edge(DLPACK, "cpulib", devices=("cpu",))], devices=("cuda",))
    with pytest.raises(ih.NoRouteError, match="takes memory on cpu, and the data is on cuda:0"):
        make_hub(src, dst).plan(Blob(64, GPU), to="cpulib")


def test_data_stays_on_its_device_when_the_target_can_hold_it() -> None:
    src = FakeAdapter("gpulib", [_edge("gpulib", DLPACK)], owner=True, devices=("cuda",))
    dst = FakeAdapter("both", [_edge(DLPACK, "both")], devices=("cpu", "cuda"))
    mover = _edge(DLPACK, DLPACK, move=ih.Device.parse("cpu"), name="mover")
    plan = make_hub(src, dst, edges=[mover]).plan(Blob(64, GPU), to="both")
    assert plan.device_moves == 0 and plan.result.device == GPU


def test_routes_are_cached_and_replayed_with_fresh_estimates() -> None:
    src = FakeAdapter("src", [_edge("src", DLPACK, copy=True)], owner=True)
    dst = FakeAdapter("dst", [_edge(DLPACK, "dst")])
    hub = make_hub(src, dst)
    assert hub.plan(Blob(80), to="dst").copied_bytes == 80
    assert hub.plan(Blob(8000), to="dst").copied_bytes == 8000
    assert hub._cache.sizes()[1] == 1


def _threshold_edge(src: str, dst: str, share_from: int) -> ih.Edge:
    """An edge that shares data of ``share_from`` bytes or more and copies smaller data,
    and says that its choice depends on the size (Estimate.by_size)."""

    def estimate(ctx: ih.Context) -> Estimate:
        info = ctx.info
        small = info.nbytes < share_from
        copies = (Copy("", info.nbytes, "small: copied"),) if small else ()
        return Estimate(info, copies, why="by size", copies_all=small, by_size=True)

    def run(value: Blob, ctx: ih.Context) -> Blob:
        return Blob(value.n, value.device, (*value.trail, f"{src}->{dst} by size"))

    return ih.Edge(src, dst, "sized", f"{src}->{dst}", estimate, run)


def test_a_route_whose_choice_depends_on_the_size_is_kept_per_size_class() -> None:
    # One step that always copies, or two that copy small data only: the first is the
    # cheaper for small data (fewer steps), the second for large (nothing copied). A route
    # found for small data must not be replayed for large, nor the other way round.
    src = FakeAdapter("src", [_edge("src", "dst", copy=True), _edge("src", DLPACK)], owner=True)
    dst = FakeAdapter("dst", [_threshold_edge(DLPACK, "dst", share_from=4096)])
    hub = make_hub(src, dst)
    sizes = [64, 80_000, 80, 8000, 4000, 800_000]
    plans = [hub.plan(Blob(n), to="dst") for n in sizes]
    assert [p.zero_copy for p in plans] == [False, True, False, True, False, True]
    assert [len(p.steps) for p in plans] == [1, 2, 1, 2, 1, 2]
    assert hub.convert(Blob(80_000), to="dst").trail == ("src->dlpack", "dlpack->dst by size")
    assert hub.convert(Blob(80), to="dst").trail == ("src->dst",)
    # one route kept per power of two of the bytes seen (64 and 80 share one)
    assert hub._cache.sizes()[1] == 5


def test_clashing_adapter_names_warn_and_keep_the_first() -> None:
    first = FakeAdapter("same", [_edge("same", DLPACK)], owner=True)
    second = FakeAdapter("same", [])
    hub = make_hub(first, second)  # plugins load on first use
    with pytest.warns(ih.PluginWarning, match="a name plugin .* already uses"):
        adapters = hub.adapters()
    assert [a.name for a in adapters] == ["same"]
    assert hub.adapters()[0] is first


def test_no_route_lists_the_reasons() -> None:
    src = FakeAdapter("src", [_edge("src", ARROW)], owner=True)
    dst = FakeAdapter("dst", [_edge(DLPACK, "dst")])
    with pytest.raises(ih.NoRouteError, match="no route from src"):
        make_hub(src, dst).plan(Blob(8), to="dst")


# -- what the engine takes from the adapters (it names no library itself) -----------------


class Aliased(FakeAdapter):
    def __init__(self, name: str, edges: Sequence[ih.Edge], aliases: tuple[str, ...], **kw: Any):
        super().__init__(name, edges, **kw)
        self.aliases = aliases


def _readonly_edge(src: str, dst: str) -> ih.Edge:
    def estimate(ctx: ih.Context) -> Estimate:
        return Estimate(ctx.info.but(readonly=True), why="views", shared_readonly=True)

    return ih.Edge(src, dst, "fake", "view", estimate, lambda v, ctx: v)


def test_a_plugin_adapter_brings_its_own_aliases() -> None:
    src = FakeAdapter("src", [_edge("src", DLPACK)], owner=True)
    dst = Aliased("destination", [_edge(DLPACK, "destination")], aliases=("DST", "d"))
    hub = make_hub(src, dst)
    assert hub.plan(Blob(8), to="d").target == "destination"
    assert hub.plan(Blob(8), to=" DST ").target == "destination"
    with pytest.raises(ih.UnknownTargetError, match="Did you mean 'destination'"):
        hub.plan(Blob(8), to="dstt")


def test_an_alias_taken_by_another_adapter_leaves_the_newcomer_out() -> None:
    first = FakeAdapter("first", [], owner=True)
    second = Aliased("second", [], aliases=("first",))
    hub = make_hub(first, second)  # plugins load on first use
    with pytest.warns(ih.PluginWarning, match="the alias 'first', a name plugin"):
        adapters = hub.adapters()
    assert [a.name for a in adapters] == ["first"]


def test_a_protocol_node_may_be_an_alias_but_not_a_name() -> None:
    hub = make_hub(FakeAdapter("dlpack", []))
    with pytest.warns(ih.PluginWarning, match="an adapter named 'dlpack'"):
        assert hub.adapters() == []
    hub = make_hub(Aliased("mine", [], aliases=("arrow",)))
    assert hub.registry.get("arrow") is hub.registry.get("mine")


def test_the_read_only_note_is_the_target_adapters() -> None:
    src = FakeAdapter("src", [_readonly_edge("src", DLPACK)], owner=True)
    plain = FakeAdapter("plain", [_edge(DLPACK, "plain")])
    noted = FakeAdapter("noted", [_edge(DLPACK, "noted")])
    noted.readonly_note = "writing to the result changes the source, noted says"
    hub = make_hub(src, plain, noted)
    assert "noted says" in " ".join(hub.plan(Blob(8), to="noted").notes)
    generic = " ".join(hub.plan(Blob(8), to="plain").notes)
    assert "assignment destination is read-only" in generic and "noted" not in generic


def test_the_torch_read_only_note_lives_on_its_adapter() -> None:
    from interchange_hub.adapters._torch import TorchAdapter

    assert "torch ignores the read-only flag" in TorchAdapter.readonly_note


def test_a_device_hint_names_the_adapters_that_hold_that_device() -> None:
    src = FakeAdapter("src", [_edge("src", DLPACK)], owner=True)
    cpu_only = FakeAdapter("cpuonly", [_edge(DLPACK, "cpuonly")])
    gpu = FakeAdapter("gpulib", [], devices=("cuda",))
    hub = make_hub(src, cpu_only, gpu)
    with pytest.raises(ih.DeviceError, match=r"holds cuda memory \(gpulib for cuda\)"):
        hub.plan(Blob(8), to="cpuonly", device="cuda")
    lonely = make_hub(src, cpu_only)
    with pytest.raises(ih.DeviceError, match="holds cuda memory$"):
        lonely.plan(Blob(8), to="cpuonly", device="cuda")


def test_built_in_aliases_come_from_the_adapters() -> None:
    hub = ih.Hub(autoload=False)
    for alias, name in [("pa", "pyarrow"), ("arrow", "pyarrow"), ("pl", "polars"),
                        ("pd", "pandas"), ("np", "numpy"), ("pt", "torch"), ("na", "nanoarrow"),
                        ("cp", "cupy")]:  # fmt: skip
        adapter = hub.registry.get(alias)
        assert adapter is not None and adapter.name == name, alias
