"""interchange_hub plugin for Dask: DataFrames, Series and arrays converted partition-wise.

``ih.convert(ddf, to=...)`` builds a Dask graph in which each partition is converted by
the hub of the worker that holds it (``interchange_hub.partitioned.run_partition``), so
nothing comes to the client until asked for. What comes back depends on whether Dask
can hold the target's objects:

* ``to="pandas"``: a Dask DataFrame (or Series) whose partitions are the converted ones;
* a tensor library Dask arrays hold (numpy, cupy): a ``dask.array.Array`` of the
  partitions' tensors, chunked along rows (chunk sizes unknown until computed, as
  ``to_dask_array()`` gives them);
* anything else (polars, pyarrow, torch, nanoarrow, ...) and every ``as_dict=True``
  conversion: an :class:`interchange_hub.Partitioned`: ``compute()``, ``partitions()``,
  ``persist()``, ``to_delayed()``, and ``plan``, the plans the workers ran, summed.

``ih.plan(ddf, to=...)`` plans from the collection's metadata (``ddf._meta``, an empty
pandas object of the partitions' dtypes) before anything runs; ``.exact()`` asks each
worker to plan its own partition. The scheduler is Dask's own: a ``distributed`` client
when one is active, else the threads of this process.
"""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING, Any

from interchange_hub.adapter import Adapter, Collection, DataInfo, Kind, Options
from interchange_hub.errors import InvalidOptionError, NoRouteError
from interchange_hub.hookspecs import hookimpl
from interchange_hub.partitioned import (
    Partitioned,
    PartitionedPlan,
    PartitionReport,
    Parts,
    convert_block,
    convert_partition,
    metadata_plan,
    plan_partition,
    run_partition,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

__all__ = ["NAME", "DaskAdapter", "DaskCollection", "DaskParts", "register_adapters"]

NAME = "dask"
TENSOR_TARGETS = ("numpy", "cupy")  # the chunk types dask.array holds
# Targets whose objects travel between Dask processes as one in-band copy (polars pickles
# itself as IPC bytes): a zero-copy route is then cheaper run on the client, after the
# partitions (pandas, Arrow: pickle-5 buffers) travelled. Arrow, numpy, pandas and torch
# have Dask serialisers that send their buffers as they are: those convert on the workers.
PICKLED_IN_BAND = ("polars",)


def _dask(module: str = "dask") -> Any:
    """A dask module, typed loosely (dask's functions are untyped)."""
    import importlib

    return importlib.import_module(module)


def _dd() -> Any:
    return sys.modules.get("dask.dataframe")


def _da() -> Any:
    return sys.modules.get("dask.array")


class DaskAdapter(Adapter):
    """Dask collections as sources: converted partition by partition, on the workers."""

    name = NAME
    module = "dask"
    requirement = "interchange-hub-dask"
    types = ("dask.dataframe.DataFrame", "dask.dataframe.Series", "dask.array.Array")
    source_only = (
        "to make a Dask DataFrame, use dd.from_pandas(ih.convert(obj, to='pandas'), "
        "npartitions=...) or dd.from_map"
    )

    def owns(self, obj: object) -> bool:
        dd, da = _dd(), _da()
        return (dd is not None and isinstance(obj, (dd.DataFrame, dd.Series))) or (
            da is not None and isinstance(obj, da.Array)
        )

    def describe(self, obj: Any) -> DataInfo:
        return _collection(obj).describe()

    def collection(self, obj: Any) -> DaskCollection:
        return _collection(obj)


def _collection(obj: Any) -> DaskCollection:
    da = _da()
    if da is not None and isinstance(obj, da.Array):
        return DaskCollection(obj, "dask.Array", Kind.TENSOR)
    dd = _dd()
    if isinstance(obj, dd.Series):
        return DaskCollection(obj, "dask.Series", Kind.COLUMN)
    return DaskCollection(obj, "dask.DataFrame", Kind.TABLE)


class DaskCollection(Collection):
    """One Dask collection, as the hub converts it."""

    engine = NAME

    def __init__(self, obj: Any, label: str, kind: Kind) -> None:
        self.obj = obj
        self.label = label
        self.kind = kind
        if kind == Kind.TENSOR and not obj.ndim:
            raise NoRouteError(
                "this dask array has no dimensions (a 0-d array), so no rows to convert "
                "partition-wise; compute it (x.compute()) and convert the value"
            )
        if kind == Kind.TENSOR and any(n != 1 for n in obj.numblocks[1:]):
            raise InvalidOptionError(
                f"this dask array is chunked along more than its first axis (blocks "
                f"{obj.numblocks}); partitions must hold whole rows: "
                "arr.rechunk({i: -1 for i in range(1, arr.ndim)}) first"
            )

    # -- metadata --------------------------------------------------------------------------
    @property
    def meta(self) -> Any:
        """An empty local object of the partitions' type and dtypes."""
        return self.obj._meta

    @property
    def npartitions(self) -> int:
        if self.kind == Kind.TENSOR:
            return int(self.obj.numblocks[0])
        return int(self.obj.npartitions)

    def describe(self) -> DataInfo:
        import interchange_hub

        info = interchange_hub.default_hub().describe(self.meta)
        columns = tuple(_unknown_size(c) for c in info.columns)
        return DataInfo(info.kind, columns, rows=-1, shape=info.shape, layout=info.layout)

    def delayed_parts(self) -> list[Any]:
        """One Dask delayed value per partition, in order."""
        if self.kind == Kind.TENSOR:
            return list(self.obj.to_delayed().ravel())
        return list(self.obj.to_delayed(optimize_graph=True))

    # -- the Collection interface ----------------------------------------------------------
    def plan(self, hub: Any, to: object, options: Options) -> PartitionedPlan:
        return self._job(hub, to, options)[0]

    def convert(self, hub: Any, to: object, options: Options) -> Any:
        plan, empty, holder = self._job(hub, to, options)
        if holder == "pandas":
            if not plan.each.steps and type(empty) is type(self.meta):
                return self.obj  # pandas partitions, returned as is (as ih.convert does)
            return self.obj.map_partitions(convert_partition, to, options, meta=empty)
        if holder == "array":
            return self._array(to, options, empty)
        parts = self.delayed_parts()
        owner = hub.registry.owner(empty) if not isinstance(empty, dict) else None
        fetch_first = owner is not None and owner.name in PICKLED_IN_BAND
        parts_ = DaskParts.of(parts, to, options, fetch_first=fetch_first)
        return Partitioned(parts_, hub, empty, plan, to, options)

    def batches(self, batch_size: int | None) -> Iterator[Any]:
        for part in self.delayed_parts():
            yield part.compute()

    # -- the pieces ------------------------------------------------------------------------
    def _job(self, hub: Any, to: object, options: Options) -> tuple[PartitionedPlan, Any, str]:
        """The plan from metadata, the target's empty object, and who holds the results."""
        meta = self.meta
        with warnings.catch_warnings():  # the plan lists losses; the workers warn of them
            warnings.simplefilter("ignore")
            empty = hub.convert(meta, to, **options.kwargs())
        owner = hub.registry.owner(empty) if not isinstance(empty, dict) else None
        holder = "partitioned"
        if owner is not None and not options.as_dict:
            if owner.name == "pandas" and self.kind != Kind.TENSOR:  # (no map_partitions)
                holder = "pandas"
            elif owner.name in TENSOR_TARGETS:
                holder = "array"
        result = {
            "pandas": f"dask.dataframe.{'Series' if self.kind == Kind.COLUMN else 'DataFrame'}"
            " of the converted partitions",
            "array": "dask.array.Array of the partitions' tensors (rows per chunk unknown "
            "until computed)",
            "partitioned": "ih.Partitioned (.compute() joins the partitions on the client, "
            "in order; .partitions(), .persist(), .to_delayed())",
        }[holder]
        parts = self.delayed_parts

        def exact() -> Sequence[PartitionReport]:
            dask = _dask()
            delayed = dask.delayed(plan_partition, pure=True)
            tasks = [delayed(p, to, options, i) for i, p in enumerate(parts())]
            return list(dask.compute(*tasks))

        plan = metadata_plan(
            hub,
            meta,
            to,
            options,
            engine=NAME,
            source=self.label,
            partitions=self.npartitions,
            result=result,
            exact_from=exact,
        )
        return plan, empty, holder

    def _array(self, to: object, options: Options, empty: Any) -> Any:
        dask, da = _dask(), _dask("dask.array")

        convert = dask.delayed(convert_block, pure=True)
        rows = self.obj.chunks[0] if self.kind == Kind.TENSOR else None
        # (an array's own trailing shape: its _meta, converted, is empty in every dimension)
        trailing = tuple(self.obj.shape[1:]) if rows is not None else tuple(empty.shape[1:])
        dtype = str(empty.dtype)
        blocks = []
        for i, part in enumerate(self.delayed_parts()):
            n = rows[i] if rows is not None else float("nan")
            block = convert(part, to, options, dtype, trailing, i)
            blocks.append(da.from_delayed(block, (n, *trailing), dtype=empty.dtype, meta=empty))
        if not blocks:
            return da.from_array(empty)
        return da.concatenate(blocks, axis=0)


def _unknown_size(column: Any) -> Any:
    from dataclasses import replace

    return replace(column, nbytes=-1, nulls=-1)


class DaskParts(Parts):
    """The results of :func:`run_partition` as Dask delayed values."""

    engine = NAME

    def __init__(
        self,
        results: Sequence[Any],
        reports: Sequence[Any],
        sources: Sequence[Any] = (),
        persisted: bool = False,
    ) -> None:
        self._results = list(results)
        self._reports = list(reports)
        self._sources = list(sources)  # the partitions themselves, as delayed values
        self._persisted = persisted

    @classmethod
    def of(
        cls, parts: Sequence[Any], to: object, options: Options, *, fetch_first: bool = False
    ) -> DaskParts:
        dask = _dask()

        run: Callable[..., Any] = dask.delayed(run_partition, nout=2, pure=True)
        pairs = [run(part, to, options, i) for i, part in enumerate(parts)]
        return cls([p[0] for p in pairs], [p[1] for p in pairs], parts if fetch_first else ())

    def count(self) -> int:
        return len(self._results)

    def gather(self) -> tuple[list[Any], list[PartitionReport]]:
        dask = _dask()

        results, reports = dask.compute(self._results, self._reports)
        return list(results), list(reports)

    def fetch(self, index: int) -> Any:
        return self._results[index].compute()

    def reports(self) -> list[PartitionReport]:
        dask = _dask()

        return list(dask.compute(*self._reports))

    def persist(self) -> DaskParts:
        dask = _dask()

        kept = dask.persist(*self._results, *self._reports)
        n = len(self._results)
        return DaskParts(kept[:n], kept[n:], self._sources, persisted=True)

    def handles(self) -> list[Any]:
        return list(self._results)

    @property
    def started(self) -> bool:
        return self._persisted

    def sources(self, indices: Sequence[int]) -> list[Any] | None:
        if not self._sources:
            return None
        dask = _dask()
        return list(dask.compute(*[self._sources[i] for i in indices]))


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(DaskAdapter())
