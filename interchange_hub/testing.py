"""The conformance kit: checks that an adapter keeps the hub's contract.

Plugin authors run it in their own tests::

    from interchange_hub.testing import assert_conforms
    import my_plugin

    def test_conformance():
        assert_conforms(my_plugin, "mylib")

It builds a hub of the built-in adapters plus ``my_plugin``, makes sample data with
pyarrow, converts it into ``mylib`` and back and to every built-in library, and checks:
the adapter's declared attributes and ``owns``; round trips of values (nulls, empty,
sliced with an offset, several chunks); one-shot sources and single-use capsules; that
results outlive their deleted sources; every zero-copy claim of a plan against buffer
addresses, and ``copy=True`` sharing nothing; lossy steps warned, never silent; and that
what the adapter cannot take is refused with an error of the hub's error tree. Needs
pyarrow (and numpy for the tensor probe).
"""

from __future__ import annotations

import gc
import math
import warnings
from functools import partial
from typing import TYPE_CHECKING, Any

from interchange_hub._core.deps import installed, require
from interchange_hub._core.records import field, record
from interchange_hub._tools import matrix
from interchange_hub.adapter import PROTOCOL_NODES, Adapter, Edge
from interchange_hub.errors import (
    ConsumedSourceError,
    InterchangeError,
    LossyConversionWarning,
    WriteThroughWarning,
)
from interchange_hub.hub import Hub
from interchange_hub.plugins import builtin_plugins

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = [
    "Check",
    "ConformanceReport",
    "assert_collection_conforms",
    "assert_conforms",
    "check_collection_conformance",
    "check_conformance",
    "samples",
]


@record
class Check:
    """One check of the kit: its name, whether it passed, and what was seen."""

    name: str
    passed: bool
    detail: str = ""


@record(frozen=False)
class ConformanceReport:
    """Every check run against one adapter."""

    adapter: str
    checks: list[Check] = field(default_factory=list)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    @property
    def ok(self) -> bool:
        return not self.failures

    def __str__(self) -> str:
        head = (
            f"conformance of adapter {self.adapter!r}: {len(self.checks)} checks, "
            f"{len(self.failures)} failed"
        )
        lines = [f"  {'ok  ' if c.passed else 'FAIL'} {c.name}: {c.detail}" for c in self.checks]
        return "\n".join([head, *lines])


def samples(rows: int = 40, seed: int = 7) -> dict[str, Any]:
    """The kit's pyarrow samples by name; values are random, never zeros."""
    pa = require("pyarrow", "to run the conformance kit")
    np = require("numpy", "to run the conformance kit")
    rng = np.random.default_rng(seed)
    floats = pa.table({"x": rng.standard_normal(rows), "y": rng.standard_normal(rows)})
    ints = rng.integers(-(10**9), 10**9, rows)
    mask = rng.random(rows) < 0.25
    mixed = pa.table(
        {
            "i": pa.array(ints, mask=mask),
            "f": pa.array(rng.standard_normal(rows)),
            "s": pa.array([f"v{v}" if v % 3 else None for v in ints]),
            "b": pa.array(rng.random(rows) < 0.5),
        }
    )
    return {
        "float table": floats,
        "table with nulls": mixed,
        "empty table": floats.slice(0, 0),
        "sliced table": mixed.slice(3, rows - 7),
        "chunked table": pa.concat_tables([floats.slice(0, rows // 2), floats.slice(rows // 2)]),
        "int column": pa.array(ints),
        "float column with nulls": pa.array(rng.standard_normal(rows), mask=mask),
        "empty column": pa.array([], pa.int64()),
        "sliced column": pa.array(ints).slice(5, rows - 9),
    }


def check_conformance(
    plugin: object | None,
    name: str,
    *,
    hub: Hub | None = None,
    peers: Sequence[str] | None = None,
) -> ConformanceReport:
    """Run every check against adapter ``name``.

    :param plugin: the plugin that registers the adapter (a module or object with
        ``@hookimpl`` functions); None for a built-in adapter.
    :param hub: a hub to use instead of built-ins plus ``plugin``.
    :param peers: libraries to convert to and from (default: the installed built-ins).
    """
    if hub is None:
        extra = [] if plugin is None else [plugin]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            hub = Hub(autoload=False, plugins=[*builtin_plugins(), *extra])
            hub.adapters()
    else:
        caught = []
    report = ConformanceReport(name)
    kit = _Kit(hub, name, report, [str(w.message) for w in caught])
    kit.run(peers)
    return report


def assert_conforms(plugin: object | None, name: str, **options: Any) -> ConformanceReport:
    """Run :func:`check_conformance` and raise ``AssertionError`` listing any failure."""
    report = check_conformance(plugin, name, **options)
    if not report.ok:
        raise AssertionError(str(report))
    return report


class _Kit:
    def __init__(self, hub: Hub, name: str, report: ConformanceReport, load_warnings: list[str]):
        self.hub, self.name, self.report = hub, name, report
        self.load_warnings = load_warnings
        self.adapter: Adapter | None = None

    def check(self, name: str, passed: bool, detail: str = "") -> bool:
        self.report.checks.append(Check(name, passed, detail))
        return passed

    def run(self, peers: Sequence[str] | None) -> None:
        if not self.check_registration():
            return
        pa = require("pyarrow", "to run the conformance kit")
        if peers is None:
            peers = [lib for lib in matrix.libraries(self.hub) if lib != self.name]
        accepted = 0
        for label, data in samples().items():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                ok, obj = self.outcome(
                    f"{label}: into {self.name}", partial(self.hub.convert, data, to=self.name)
                )
            if not ok:
                continue
            accepted += 1
            lossy = [
                str(w.message) for w in caught if issubclass(w.category, LossyConversionWarning)
            ]
            self.check_owned(label, obj, data)
            self.check_round_trip(label, obj, data, lossy)
            self.check_repeat(label, obj, data)
            self.check_lifetime(label, data)
            for peer in peers:
                self.check_claims(f"{label} -> {peer}", self.convert(data), peer)
                self.check_claims(f"{label} <- {peer}", self._peer(data, peer), self.name)
        self.check(
            "takes data",
            accepted > 0,
            f"{accepted} of {len(samples())} samples converted into {self.name}",
        )
        self.check_one_shot_source(pa)
        self.check_foreign_objects()

    # -- the adapter's declarations ------------------------------------------------------
    def _joins(self, edge: Edge) -> bool:
        """Whether ``edge`` joins this library to a protocol node, to itself, or to another
        registered library that the edge names in ``requires``."""
        ends = {edge.source, edge.target}
        if self.name not in ends:
            return False
        for other in ends - {self.name, *PROTOCOL_NODES}:
            peer = self.hub.registry.get(other)
            if peer is None or peer.module.partition(".")[0] not in edge.requires:
                return False
        return True

    def check_registration(self) -> bool:
        adapter = self.hub.registry.get(self.name)
        mine = [w for w in self.load_warnings if repr(self.name) in w or "left out" in w]
        if not self.check("registered", adapter is not None, "; ".join(mine) or "found"):
            return False
        assert adapter is not None
        self.adapter = adapter
        self.check("loads cleanly", not self.load_warnings, "; ".join(self.load_warnings) or "")
        problems = []
        if not adapter.name.isidentifier() or adapter.name != adapter.name.lower():
            problems.append(f"name {adapter.name!r} is not a lower-case identifier")
        if not adapter.module:
            problems.append("module is empty (the hub checks sys.modules[module] before owns)")
        if not adapter.types:
            problems.append("types is empty (error messages list supported types)")
        for edge in adapter.edges():
            if not self._joins(edge):
                nodes = ", ".join(repr(n) for n in PROTOCOL_NODES)
                problems.append(
                    f"{edge!r} does not join {self.name!r} to one of {nodes}, or to another "
                    "library whose module the edge requires (a one-call edge such as "
                    "pandas -> xarray)"
                )
            if not all(callable(f) for f in (edge.estimate, edge.run)):  # untyped plugins
                problems.append(f"{edge!r} needs callable estimate and run")
        if not adapter.edges():
            problems.append("it contributes no edges")
        return self.check(
            "declarations", not problems, "; ".join(problems) or "name, module, types, edges"
        )

    def check_foreign_objects(self) -> None:
        assert self.adapter is not None
        bad = []
        for obj in (1, "text", None, object(), [1, 2]):
            try:
                if self.adapter.owns(obj):
                    bad.append(f"owns({obj!r}) is True")
            except Exception as exc:  # noqa: BLE001 - reported as a failure
                bad.append(f"owns({obj!r}) raised {type(exc).__name__}: {exc}")
        self.check("owns only its objects", not bad, "; ".join(bad) or "plain objects refused")
        if installed("numpy"):
            cube = require("numpy").arange(24.0).reshape(2, 3, 4)
            self.outcome("3-D tensor", lambda: self.convert(cube))

    # -- conversions -------------------------------------------------------------------------
    def outcome(self, name: str, call: Callable[[], Any]) -> tuple[bool, Any]:
        """Run ``call``: success, or a refusal from the error tree with a message, passes."""
        try:
            return True, call()
        except InterchangeError as exc:
            self.check(name, bool(str(exc)), f"refused: {type(exc).__name__}: {_short(exc)}")
        except Exception as exc:  # noqa: BLE001 - reported as a failure
            self.check(name, False, f"raised {type(exc).__name__} outside the error tree: {exc}")
        return False, None

    def convert(self, data: Any, to: str | None = None, **options: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LossyConversionWarning)
            warnings.simplefilter("ignore", WriteThroughWarning)  # checked by check_claims
            return self.hub.convert(data, to=to or self.name, **options)

    def _peer(self, data: Any, peer: str) -> Any:
        try:
            return self.convert(data, to=peer)
        except InterchangeError:
            return None

    # -- checks on one sample ----------------------------------------------------------------
    def check_owned(self, label: str, obj: Any, data: Any) -> None:
        assert self.adapter is not None
        owner = self.hub.registry.owner(obj)
        info = self.hub.describe(obj)
        problems = []
        if owner is not self.adapter:
            problems.append(f"its {type(obj).__name__} is owned by {owner!r}")
        if info.known and info.rows >= 0 and info.rows != len(data):
            problems.append(f"describe says {info.rows} rows, the data has {len(data)}")
        self.check(f"{label}: owns and describes", not problems, "; ".join(problems) or info.kind)

    def check_round_trip(self, label: str, obj: Any, data: Any, lossy: list[str]) -> None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ok, back = self.outcome(
                f"{label}: back to pyarrow", lambda: self.hub.convert(obj, to="pyarrow")
            )
        if not ok:
            return
        lossy = lossy + [
            str(w.message) for w in caught if issubclass(w.category, LossyConversionWarning)
        ]
        same = _values(back) == _values(data)
        detail = "values kept" if same else "values changed"
        if not same and lossy:
            detail = f"values changed, warned: {lossy[0]}"
        self.check(f"{label}: round trip", same or bool(lossy), detail)

    def check_repeat(self, label: str, obj: Any, data: Any) -> None:
        """A re-readable object converts twice; a one-shot one refuses the second time."""
        if self.hub.is_one_shot(obj):
            self.outcome(f"{label}: first read", lambda: self.hub.convert(obj, to="pyarrow"))
            try:
                self.hub.convert(obj, to="pyarrow")
                self.check(f"{label}: one-shot", False, "a second read did not raise")
            except ConsumedSourceError:
                self.check(f"{label}: one-shot", True, "second read raised ConsumedSourceError")
            return
        first = _values(self.convert(obj, to="pyarrow"))
        second = _values(self.convert(obj, to="pyarrow"))
        self.check(f"{label}: exports twice", first == second, "both reads equal")
        self.check_route_key(label, obj)

    def check_route_key(self, label: str, obj: Any) -> None:
        """The function the fast path calls for the route keys of ``obj``'s type
        (``Adapter.route_key_of``) gives what ``route_key`` gives, and the key is stable
        and hashable. A key that raises fails: the hub would plan every call."""
        adapter = self.adapter
        if adapter is None:
            return
        problems = []
        try:
            method = adapter.route_key(obj)
            fast = adapter.route_key_of(type(obj))(obj)
            again = adapter.route_key(obj)
            if fast != method:
                problems.append(f"route_key_of(type) gives {fast!r}, route_key {method!r}")
            if again != method:
                problems.append(f"route_key changed between two calls ({method!r}, {again!r})")
            hash(method)
        except Exception as exc:  # noqa: BLE001 - reported as a failure
            problems.append(f"raised {type(exc).__name__}: {_short(exc)}")
        self.check(f"{label}: route key", not problems, "; ".join(problems) or "consistent")

    def check_lifetime(self, label: str, data: Any) -> None:
        """Results stay valid after their source is deleted and collected."""
        expected = _values(self.convert(self.convert(_deep_copy(data)), to="pyarrow"))
        source = _deep_copy(data)
        obj = self.convert(source)
        del source
        gc.collect()
        back = self.convert(obj, to="pyarrow")
        del obj
        gc.collect()
        _churn()
        self.check(f"{label}: outlives its sources", _values(back) == expected, "values intact")

    def check_claims(self, label: str, src: Any, to: str) -> None:
        """A plan's zero-copy claim holds by address; copy=True shares nothing."""
        if src is None:
            return
        try:
            plan = self.hub.plan(src, to=to)
            result = self.convert(src, to=to)
        except InterchangeError:
            return
        total = sum(b.size for b in self.hub.buffers(src))
        shared = self.hub.shared_bytes(src, result)
        if plan.zero_copy and total:
            self.check(
                f"{label}: zero-copy claim",
                shared >= total,
                f"plan claims zero-copy; {shared} of {total} bytes shared",
            )
        elif plan.zero_copy and plan.info.nbytes > 0:
            self.check(
                f"{label}: zero-copy claim",
                False,
                "plan claims zero-copy but buffers() reports no memory to verify it by",
            )
        if plan.write_through and total:
            self.check(
                f"{label}: write-through warning",
                shared > 0,
                "the plan warns that writes reach the source, but the result shares no memory",
            )
        try:
            copied = self.convert(src, to=to, copy=True)
        except InterchangeError:
            return
        shared = self.hub.shared_bytes(src, copied)
        self.check(f"{label}: copy=True", shared == 0, f"{shared} bytes shared")

    def check_one_shot_source(self, pa: Any) -> None:
        """A one-shot stream and single-use capsules are read exactly once."""
        table = samples()["float table"]
        reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
        ok, obj = self.outcome("one-shot stream: into", lambda: self.convert(reader))
        if ok:
            # The reader itself (a library's own stream type) is claimed: read it directly.
            back = reader.read_all() if obj is reader else self.convert(obj, to="pyarrow")
            self.check("one-shot stream: values", _values(back) == _values(table), "")
        counter = _CountingProducer(table)
        ok, obj = self.outcome("capsule producer: into", lambda: self.convert(counter))
        if ok:
            back = self.convert(obj, to="pyarrow")
            self.check(
                "capsule producer: values",
                _values(back) == _values(table),
                f"__arrow_c_stream__ called {counter.calls} time(s), each capsule used once",
            )


class _CountingProducer:
    """A protocol-only producer that hands out a fresh single-use capsule per call."""

    def __init__(self, table: Any) -> None:
        self.table = table
        self.calls = 0

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        self.calls += 1
        return self.table.__arrow_c_stream__(requested_schema)


def _deep_copy(data: Any) -> Any:
    """Fresh memory holding the same values (so deleting it frees real buffers)."""
    pa = require("pyarrow")
    if isinstance(data, pa.Table):
        return pa.Table.from_batches(
            [pa.RecordBatch.from_pylist(b.to_pylist(), schema=b.schema) for b in data.to_batches()],
            schema=data.schema,
        )
    return pa.array(data.to_pylist(), type=data.type)


def _churn() -> None:
    """Allocate and fill memory so a result reading freed buffers shows garbage."""
    if installed("numpy"):
        junk = [require("numpy").full(4096, 7.5) for _ in range(64)]
        del junk


def _values(obj: Any) -> list[list[Any]]:
    """The column values of a pyarrow result, NaN made comparable."""
    pa = require("pyarrow")
    if isinstance(obj, (pa.Table, pa.RecordBatch)):
        cols = [c.to_pylist() for c in obj.columns]
    elif isinstance(obj, pa.RecordBatchReader):
        cols = [c.to_pylist() for c in obj.read_all().columns]
    else:
        cols = [obj.to_pylist()]
    return [[_nan(v) for v in col] for col in cols]


def _nan(value: Any) -> Any:
    return "NaN" if isinstance(value, float) and math.isnan(value) else value


def _short(exc: BaseException, limit: int = 160) -> str:
    text = str(exc)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- engine plugins: partitioned collections (Dask, Ray) ------------------------------------
COLLECTION_SAMPLES = ("float table", "table with nulls", "chunked table", "empty table")


def check_collection_conformance(
    plugin: object | None,
    name: str,
    make: Callable[[Any, int], Any],
    *,
    collect: Callable[[Any], Any] | None = None,
    hub: Hub | None = None,
    peers: Sequence[str] | None = None,
    partitions: int = 3,
) -> ConformanceReport:
    """Checks for an adapter of partitioned collections (an engine plugin: Dask, Ray).

    :param make: builds one of the engine's collections from a pyarrow Table, in about
        ``partitions`` partitions (``lambda t, n: dd.from_pandas(t.to_pandas(),
        npartitions=n)``).
    :param collect: turns a result that is the engine's own collection into local data
        (default: its ``.compute()``; ``ih.Partitioned`` results are computed by the kit).
    :param peers: target libraries (default: the installed built-ins).

    It checks the declarations (a collection adapter, ``source_only`` with its hint, and
    ``to=<name>`` refused with it); then, for each sample table and peer, that the
    partition-wise result holds the values of the local conversion of the same table, in
    order (or that both are refused); that plans say they are partition-wise, made exact
    give one report per partition with the table's rows, and after a run prove each
    zero-copy claim by buffer address; that ``copy=False`` is refused by ``convert`` where
    ``plan`` refuses it; and that ``iter_batches`` gives every row once, in order.
    """
    if hub is None:
        extra = [] if plugin is None else [plugin]
        hub = Hub(autoload=False, plugins=[*builtin_plugins(), *extra])
    report = ConformanceReport(name)
    kit = _CollectionKit(hub, name, report, make, collect or _compute, partitions)
    kit.run(peers)
    return report


def assert_collection_conforms(
    plugin: object | None, name: str, make: Callable[[Any, int], Any], **options: Any
) -> ConformanceReport:
    """Run :func:`check_collection_conformance`; raise ``AssertionError`` on a failure."""
    report = check_collection_conformance(plugin, name, make, **options)
    if not report.ok:
        raise AssertionError(str(report))
    return report


def _compute(result: Any) -> Any:
    compute = getattr(result, "compute", None)
    return compute() if callable(compute) else result


class _CollectionKit:
    def __init__(
        self,
        hub: Hub,
        name: str,
        report: ConformanceReport,
        make: Callable[[Any, int], Any],
        collect: Callable[[Any], Any],
        partitions: int,
    ) -> None:
        self.hub, self.name, self.report = hub, name, report
        self.make, self.collect, self.partitions = make, collect, partitions

    def check(self, name: str, passed: bool, detail: str = "") -> bool:
        self.report.checks.append(Check(name, passed, detail))
        return passed

    def run(self, peers: Sequence[str] | None) -> None:
        adapter = self.hub.registry.get(self.name)
        if not self.check("registered", adapter is not None, "found" if adapter else ""):
            return
        assert adapter is not None
        problems = []
        if type(adapter).collection is Adapter.collection:
            problems.append("collection() is not overridden")
        if not adapter.source_only:
            problems.append("source_only is empty (to= the engine needs its hint)")
        if not adapter.module or not adapter.types:
            problems.append("module or types is empty")
        self.check("declarations", not problems, "; ".join(problems) or "collection adapter")
        try:
            self.hub.plan(samples()["float table"], to=self.name)
            self.check("to= the engine is refused", False, "it was planned")
        except InterchangeError as exc:
            self.check("to= the engine is refused", adapter.source_only in str(exc), str(exc))
        if peers is None:
            peers = [n for n in ("pyarrow", "polars", "pandas", "numpy", "torch") if installed(n)]
        for label in COLLECTION_SAMPLES:
            table = samples()[label]
            try:
                coll = self.make(table, self.partitions)
            except Exception as exc:  # noqa: BLE001 - reported
                self.check(f"{label}: make", False, f"{type(exc).__name__}: {exc}")
                continue
            self.check_plan(label, coll, table)
            for peer in peers:
                self.check_peer(label, coll, table, peer)
            self.check_batches(label, coll, table)

    def check_plan(self, label: str, coll: Any, table: Any) -> None:
        try:
            plan: Any = self.hub.plan(coll, to="pyarrow")  # a PartitionedPlan
            text = str(plan)
            exact = plan.exact()
            rows = sum(r.rows for r in exact.reports)
        except Exception as exc:  # noqa: BLE001 - reported
            self.check(f"{label}: plan", False, f"{type(exc).__name__}: {exc}")
            return
        self.check(f"{label}: plan", "partition-wise" in text, text.split("\n")[0])
        self.check(
            f"{label}: exact plan",
            rows == table.num_rows and len(exact.reports) == exact.partitions,
            f"{len(exact.reports)} reports, {rows} of {table.num_rows} rows",
        )

    def check_peer(self, label: str, coll: Any, table: Any, peer: str) -> None:
        name = f"{label}: to {peer}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LossyConversionWarning)
            warnings.simplefilter("ignore", WriteThroughWarning)
            try:
                local = self.hub.convert(table, to=peer)
            except InterchangeError as exc:
                local, refused = None, exc
            try:
                result = self.hub.convert(coll, to=peer)
                parts = result if _is_partitioned(result) else None
                value = parts.compute() if parts is not None else self.collect(result)
            except InterchangeError as exc:
                self.check(name, local is None, f"refused ({type(exc).__name__}: {exc})")
                return
            except Exception as exc:  # noqa: BLE001 - reported
                self.check(name, False, f"raised {type(exc).__name__}: {exc}")
                return
        if local is None:
            self.check(name, False, f"converted, but the table itself is refused: {refused}")
            return
        same, detail = self.same(value, local)
        self.check(name, same, detail)
        if parts is not None:
            plan = parts.plan
            bad = [
                r.index for r in plan.reports if r.zero_copy and r.shared_bytes != r.source_bytes
            ]
            self.check(
                f"{name}: claims by address",
                plan.is_exact and not bad,
                f"{len(plan.reports)} partitions; zero-copy claims not shared: {bad}",
            )
        self.check_copy_false(name, coll, peer)

    def check_copy_false(self, name: str, coll: Any, peer: str) -> None:
        try:
            self.hub.plan(coll, to=peer, copy=False)
            planned = True
        except InterchangeError:
            planned = False
        if planned:
            return
        try:
            self.hub.convert(coll, to=peer, copy=False)
            self.check(f"{name}: copy=False", False, "plan refused it, convert did not")
        except InterchangeError:
            self.check(f"{name}: copy=False", True, "refused before anything ran")

    def check_batches(self, label: str, coll: Any, table: Any) -> None:
        size = max(1, table.num_rows // 3 + 1)
        try:
            batches = list(self.hub.iter_batches(coll, to="pyarrow", batch_size=size))
        except Exception as exc:  # noqa: BLE001 - reported
            self.check(f"{label}: iter_batches", False, f"{type(exc).__name__}: {exc}")
            return
        rows = [len(b) for b in batches]
        first = table.column_names[0] if table.num_columns else None
        got = [v for b in batches for v in b.column(first).to_pylist()] if first else []
        want = table.column(first).to_pylist() if first else []
        self.check(
            f"{label}: iter_batches",
            sum(rows) == table.num_rows and all(r <= size for r in rows) and _eq(got, want),
            f"batches of {rows} rows",
        )

    def same(self, value: Any, local: Any) -> tuple[bool, str]:
        """Whether two results hold the same values in the same order (through Arrow)."""
        try:
            a = self.hub.convert(value, to="pyarrow")
            b = self.hub.convert(local, to="pyarrow")
        except InterchangeError as exc:
            return False, f"cannot read the results back: {exc}"
        rows_a = len(a)
        rows_b = len(b)
        if rows_a != rows_b:
            return False, f"{rows_a} rows, the local conversion gives {rows_b}"
        if hasattr(a, "column_names") and hasattr(b, "column_names"):
            names = [n for n in b.column_names if n in a.column_names]
            if not names:
                return False, f"columns {a.column_names}, the local conversion {b.column_names}"
            for n in names:
                if not _eq(a.column(n).to_pylist(), b.column(n).to_pylist()):
                    return False, f"column {n!r} differs from the local conversion"
            return True, f"{rows_a} rows, columns {names} as the local conversion"
        if not _eq(_flat(a), _flat(b)):
            return False, "values differ from the local conversion"
        return True, f"{rows_a} rows as the local conversion"


def _is_partitioned(obj: object) -> bool:
    return type(obj).__name__ == "Partitioned" and hasattr(obj, "compute")


def _flat(value: Any) -> list[Any]:
    if hasattr(value, "column_names"):
        return [v for c in value.columns for v in c.to_pylist()]
    return list(value.to_pylist())


def _eq(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Equal lists, NaN and None (a null) both counting as missing."""

    def norm(v: Any) -> Any:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return None
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v

    return len(a) == len(b) and all(norm(x) == norm(y) for x, y in zip(a, b, strict=True))
