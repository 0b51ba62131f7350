"""interchange_hub plugin for Ray Data: Datasets converted block by block, on Ray workers.

``ih.convert(ds, to=...)`` converts each block of a ``ray.data.Dataset`` in a Ray task,
with the hub of the worker that runs it (``interchange_hub.partitioned.run_partition``),
so nothing comes to the driver until asked for. What comes back depends on whether Ray
can hold the target's objects as blocks:

* ``to="pyarrow"`` or ``to="pandas"`` (a table): a Ray Dataset, lazy, whose blocks are
  the converted ones (``ds.map_batches`` over whole blocks, zero-copy batches);
* anything else (polars, torch, numpy, nanoarrow, columns, ...) and every
  ``as_dict=True`` conversion: an :class:`interchange_hub.Partitioned`: ``compute()``,
  ``partitions()``, ``persist()``, ``handles()`` (Ray ``ObjectRef`` values) and
  ``plan``, the plans the workers ran, summed.

``ih.plan(ds, to=...)`` plans from the Dataset's schema (an empty table of it) before
anything runs; ``.exact()`` asks a Ray task per block to plan that block.
``ih.iter_batches(ds, to=...)`` streams with Ray's own ``ds.iter_batches``.

For Ray users: :func:`map_batches` (``ds.map_batches`` with ``fn`` seeing polars frames,
dicts of tensors, ... of the hub) and :func:`collate` (a ``collate_fn`` for
``ds.iter_torch_batches`` that shares Ray's object-store memory where the layout allows).

The plugin never imports Ray at import time: Ray is imported by the calls that need it.
"""

from __future__ import annotations

import functools
import sys
import types
import warnings
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from interchange_hub.adapter import Adapter, Collection, DataInfo, Options
from interchange_hub.hookspecs import hookimpl
from interchange_hub.partitioned import (
    Partitioned,
    PartitionedPlan,
    PartitionReport,
    Parts,
    convert_partition,
    metadata_plan,
    plan_partition,
    run_partition,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from interchange_hub import Hub
    from interchange_hub.adapter import Device

__all__ = [
    "BLOCK_TARGETS",
    "NAME",
    "HubCollate",
    "RayAdapter",
    "RayCollection",
    "RayParts",
    "collate",
    "map_batches",
    "register_adapters",
]

NAME = "ray"
BLOCK_TARGETS = ("pyarrow", "pandas")  # the libraries whose tables Ray holds as blocks

# Made on first access (module __getattr__ below): defining it imports Ray.
HubCollate: type[Any]


def _data() -> Any:
    return sys.modules.get("ray.data")


def _ray() -> Any:
    import ray

    return ray


@functools.cache
def _remote(fn: Callable[..., Any], num_returns: int = 1) -> Any:
    """``fn`` as a Ray remote function (made once: Ray exports it to each new job)."""
    ray = _ray()
    remote = ray.remote(fn)
    return remote.options(num_returns=num_returns) if num_returns != 1 else remote


class RayAdapter(Adapter):
    """Ray Datasets as sources: converted block by block, in Ray tasks."""

    name = NAME
    module = "ray"
    requirement = "interchange-hub-ray"
    types = ("ray.data.Dataset", "ray.data.MaterializedDataset")
    source_only = (
        "to make a Ray Dataset, use ray.data.from_arrow(ih.convert(obj, to='pyarrow')) or "
        "ray.data.from_pandas"
    )

    def owns(self, obj: object) -> bool:
        data = _data()
        return data is not None and isinstance(obj, data.Dataset)

    def describe(self, obj: Any) -> DataInfo:
        return RayCollection(obj).describe()

    def collection(self, obj: Any) -> RayCollection:
        return RayCollection(obj)


class RayCollection(Collection):
    """One Ray Dataset, as the hub converts it."""

    engine = NAME
    label = "ray.Dataset"

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self._meta: Any = None
        self._arrow: bool | None = None

    # -- metadata --------------------------------------------------------------------------
    def _schema(self) -> None:
        schema = self.obj.schema()  # known for most Datasets; else Ray runs the first block
        self._meta, self._arrow = _empty_of(schema)

    @property
    def meta(self) -> Any:
        """An empty local table of the blocks' schema: a ``pyarrow.Table`` (a
        ``pandas.DataFrame`` for a Dataset of pandas blocks)."""
        if self._meta is None:
            self._schema()
        return self._meta

    @property
    def arrow_blocks(self) -> bool:
        """Whether the Dataset's blocks are Arrow tables (else pandas DataFrames)."""
        if self._arrow is None:
            self._schema()
        return bool(self._arrow)

    @property
    def npartitions(self) -> int | None:
        """The number of blocks where Ray knows it without executing (a
        ``MaterializedDataset``), else None."""
        dataset = sys.modules.get("ray.data.dataset")
        if dataset is not None and isinstance(self.obj, dataset.MaterializedDataset):
            return int(self.obj.num_blocks())
        return None

    def describe(self) -> DataInfo:
        import interchange_hub

        info = interchange_hub.default_hub().describe(self.meta)
        columns = tuple(_unknown_size(c) for c in info.columns)
        return DataInfo(info.kind, columns, rows=-1, shape=info.shape, layout=info.layout)

    def block_refs(self) -> list[Any]:
        """One ``ObjectRef`` per block, in order (the Dataset runs if it is lazy).

        Arrow blocks come from ``ds.to_arrow_refs()`` (the blocks themselves, zero-copy);
        pandas blocks are taken as they are, so that each worker's hub converts them and
        its report shows what that copies (``to_arrow_refs`` would copy them to Arrow
        first, outside any plan).
        """
        if self.arrow_blocks:
            return list(self.obj.to_arrow_refs())
        return [ref for bundle in self.obj.iter_internal_ref_bundles() for ref in bundle.block_refs]

    # -- the Collection interface ----------------------------------------------------------
    def plan(self, hub: Any, to: object, options: Options) -> PartitionedPlan:
        return self._job(hub, to, options)[0]

    def convert(self, hub: Any, to: object, options: Options) -> Any:
        plan, empty, holder = self._job(hub, to, options)  # copy=False is refused here
        if holder == "dataset":
            if self.npartitions is not None and self.obj.count() == 0:
                # Ray drops the schema of empty blocks that map_batches returns: the
                # converted metadata keeps the columns (and costs nothing to run)
                data = _ray().data
                return (
                    data.from_arrow([empty])
                    if self.arrow_target(empty)
                    else (data.from_pandas([empty]))
                )
            return self.obj.map_batches(
                _convert_block,
                batch_format=None,  # the blocks as Ray holds them (Arrow or pandas)
                batch_size=None,  # whole blocks
                zero_copy_batch=True,
                fn_kwargs={"to": to, "options": options},
            )
        parts = RayParts(self.block_refs, to, options, count=self.npartitions)
        return Partitioned(parts, hub, empty, plan, to, options)

    def batches(self, batch_size: int | None) -> Iterator[Any]:
        yield from self.obj.iter_batches(
            batch_size=batch_size, batch_format="pyarrow", prefetch_batches=1
        )

    @staticmethod
    def arrow_target(empty: object) -> bool:
        pa = sys.modules.get("pyarrow")
        return pa is not None and isinstance(empty, pa.Table)

    # -- the pieces ------------------------------------------------------------------------
    def _job(self, hub: Any, to: object, options: Options) -> tuple[PartitionedPlan, Any, str]:
        """The plan from metadata, the target's empty object, and who holds the results."""
        meta = self.meta
        blocks = self.block_refs

        def exact() -> Sequence[PartitionReport]:
            plan = _remote(plan_partition)
            return _get([plan.remote(b, to, options, i) for i, b in enumerate(blocks())])

        # First, before anything runs: raises CopyRequiredError where the dtypes alone
        # imply a copy and copy=False was given.
        plan = metadata_plan(
            hub,
            meta,
            to,
            options,
            engine=NAME,
            source=self.label,
            partitions=self.npartitions,
            result="",
            exact_from=exact,
        )
        with warnings.catch_warnings():  # the plan lists losses; the workers warn of them
            warnings.simplefilter("ignore")
            empty = hub.convert(meta, to, **options.kwargs())
        owner = hub.registry.owner(empty) if not isinstance(empty, dict) else None
        holder = "partitioned"
        if (
            owner is not None
            and owner.name in BLOCK_TARGETS
            and not options.as_dict
            and _is_block(empty)
        ):
            holder = "dataset"
        result = {
            "dataset": "ray.data.Dataset of the converted blocks (lazy: a Ray task converts "
            "each block as the Dataset runs)",
            "partitioned": "ih.Partitioned (.compute() joins the blocks on the client, in "
            "order; .partitions(), .persist(), .handles(): Ray ObjectRefs)",
        }[holder]
        return replace(plan, result=result), empty, holder


def _empty_of(schema: Any) -> tuple[Any, bool]:
    """An empty table of a Ray ``Schema`` (None: a Dataset without columns), and whether
    its blocks are Arrow tables."""
    import pyarrow as pa

    if schema is None:
        return pa.table({}), True
    base = schema.base_schema
    names = list(schema.names)  # without Ray's internal placeholder columns
    if isinstance(base, pa.Schema):
        fields = [base.field(name) for name in names]
        return pa.schema(fields, metadata=base.metadata).empty_table(), True
    import pandas as pd  # a PandasBlockSchema: pandas dtypes

    dtypes = dict(zip(base.names, base.types, strict=True))
    frame = pd.DataFrame({name: pd.Series([], dtype=dtypes[name]) for name in names})
    return frame, False


def _arrow_meta(schema: Any) -> Any:
    """An empty ``pyarrow.Table`` of a Ray ``Schema``."""
    import pyarrow as pa

    meta, arrow = _empty_of(schema)
    return meta if arrow else pa.Table.from_pandas(meta, preserve_index=False)


def _is_block(obj: object) -> bool:
    pa, pd = sys.modules.get("pyarrow"), sys.modules.get("pandas")
    return (pa is not None and isinstance(obj, pa.Table)) or (
        pd is not None and isinstance(obj, pd.DataFrame)
    )


def _unknown_size(column: Any) -> Any:
    return replace(column, nbytes=-1, nulls=-1)


def _convert_block(block: Any, *, to: object, options: Options) -> Any:
    """One block, converted by this worker's hub (the ``map_batches`` function)."""
    return convert_partition(block, to, options)


class RayParts(Parts):
    """The results of :func:`run_partition` as Ray ``ObjectRef`` values, one task per
    block.

    Lazy: the blocks are taken (``blocks()``) and the tasks started only when something
    asks for a result, a report or a handle (the number of blocks of a lazy Dataset
    makes it run, but converts nothing).
    """

    engine = NAME

    def __init__(
        self,
        blocks: Callable[[], Sequence[Any]],
        to: object,
        options: Options,
        *,
        count: int | None = None,
        pairs: Mapping[int, tuple[Any, Any]] | None = None,
    ) -> None:
        self._source = blocks
        self._blocks: list[Any] | None = None
        self._count = count
        self._to = to
        self._options = options
        self._pairs: dict[int, tuple[Any, Any]] = dict(pairs or {})

    def _block_refs(self) -> list[Any]:
        if self._blocks is None:
            self._blocks = list(self._source())
            self._count = len(self._blocks)
        return self._blocks

    def _pair(self, index: int) -> tuple[Any, Any]:
        """The (result, report) refs of block ``index``, its task started if needed."""
        pair = self._pairs.get(index)
        if pair is None:
            run = _remote(run_partition, 2)
            result, report = run.remote(self._block_refs()[index], self._to, self._options, index)
            pair = self._pairs[index] = (result, report)
        return pair

    def _all(self) -> list[tuple[Any, Any]]:
        return [self._pair(i) for i in range(self.count())]

    def count(self) -> int:
        if self._count is None:
            self._block_refs()
        assert self._count is not None
        return self._count

    def gather(self) -> tuple[list[Any], list[PartitionReport]]:
        pairs = self._all()
        values = _get([ref for pair in pairs for ref in pair])
        return values[0::2], values[1::2]

    def fetch(self, index: int) -> Any:
        pair = self._pair(index)
        if index + 1 < self.count():  # one block ahead, as Ray's prefetch_batches=1
            self._pair(index + 1)
        return _get([pair[0]])[0]

    def reports(self) -> list[PartitionReport]:
        return _get([report for _, report in self._all()])

    def persist(self) -> RayParts:
        self._all()  # started: Ray keeps the results in its object store
        kept = RayParts(self._source, self._to, self._options, count=self._count, pairs=self._pairs)
        kept._blocks = self._blocks
        return kept

    def handles(self) -> list[Any]:
        return [result for result, _ in self._all()]

    @property
    def started(self) -> bool:
        return bool(self._pairs)

    def sources(self, indices: Sequence[int]) -> list[Any] | None:
        blocks = self._block_refs()
        return _get([blocks[i] for i in indices])  # from the object store, zero-copy


def _get(refs: list[Any]) -> list[Any]:
    """``ray.get(refs)``; when a task failed, the other finished refs are read too (the
    result and the report of one task fail together), so that Ray does not log them as
    unhandled errors later, and the first error is raised."""
    ray = _ray()
    try:
        return list(ray.get(refs))
    except ray.exceptions.RayError:
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        for ref in ready:
            try:
                ray.get(ref)
            except ray.exceptions.RayError:
                pass
        raise


# -- helpers for Ray users -----------------------------------------------------------------
def map_batches(
    ds: Any,
    fn: Any,
    *,
    batch_format: object = "polars",
    as_dict: bool = False,
    copy: bool | None = None,
    device: str | Device | None = None,
    dtype: object = None,
    strict: bool = False,
    **map_batches_kwargs: Any,
) -> Any:
    """``ds.map_batches(fn, ...)`` where ``fn`` receives each batch as the hub's
    ``batch_format`` (any ``to=`` of ``ih.convert``: ``"polars"``, ``"torch"`` with
    ``as_dict=True`` for a dict of tensors, ``pl.DataFrame``, ...).

    Ray cuts the batches (Arrow, zero-copy); each is converted on the worker with
    ``ih.convert(batch, to=batch_format, as_dict=..., copy=..., device=..., dtype=...,
    strict=...)``. What ``fn`` returns goes back to Ray: Arrow tables, pandas DataFrames
    and dicts of numpy arrays as they are, dicts of other tensors column by column to
    numpy, anything else (a polars frame, ...) to a ``pyarrow.Table``, all through the
    hub. A generator ``fn`` may yield several batches. ``fn`` may be a callable class
    (Ray runs it in actors; ``fn_constructor_args`` and ``fn_constructor_kwargs`` go to
    it). Every other keyword is ``ds.map_batches``'s (``batch_size``, ``compute``,
    ``fn_kwargs``, ``num_gpus``, ...); ``zero_copy_batch`` defaults to True.
    """
    options = Options(copy=copy, device=device, strict=strict, dtype=dtype, as_dict=as_dict)
    schema = ds.schema(fetch_if_missing=False)
    if schema is not None:  # an impossible target or copy=False is refused now
        import interchange_hub

        meta = _arrow_meta(schema)  # the batches Ray gives: Arrow tables
        interchange_hub.default_hub().plan(meta, batch_format, **options.kwargs())
    kwargs = dict(map_batches_kwargs)
    kwargs.setdefault("zero_copy_batch", True)
    if isinstance(fn, type):
        args = tuple(kwargs.pop("fn_constructor_args", None) or ())
        ctor = dict(kwargs.pop("fn_constructor_kwargs", None) or {})
        return ds.map_batches(
            _HubBatchClass,
            batch_format="pyarrow",
            fn_constructor_args=(fn, batch_format, options, args, ctor),
            **kwargs,
        )
    return ds.map_batches(_HubBatchFn(fn, batch_format, options), batch_format="pyarrow", **kwargs)


def _apply(
    fn: Callable[..., Any], batch: Any, to: object, options: Options, args: Any, kw: Any
) -> Any:
    out = fn(convert_partition(batch, to, options), *args, **kw)
    if isinstance(out, types.GeneratorType):
        return (_to_ray(x) for x in out)
    return _to_ray(out)


def _to_ray(out: Any) -> Any:
    """What a ``map_batches`` function returned, as Ray takes a batch."""
    import interchange_hub
    import numpy as np
    import pyarrow as pa

    if isinstance(out, pa.Table):
        return _without_views(out)
    if _is_block(out):
        return out
    hub = interchange_hub.default_hub()
    if isinstance(out, Mapping):
        return {
            key: value if isinstance(value, (np.ndarray, list)) else hub.convert(value, "numpy")
            for key, value in out.items()
        }
    return _without_views(hub.convert(out, pa.Table))


def _without_views(table: Any) -> Any:
    """``table`` with its string, binary and list views cast to the large plain types:
    Ray's block serializer cannot carry views (polars exports its strings as them)."""
    import pyarrow as pa

    schema = table.schema
    plain = [field.with_type(_plain(field.type)) for field in schema]
    if all(a.type == b.type for a, b in zip(schema, plain, strict=True)):
        return table
    return table.cast(pa.schema(plain, metadata=schema.metadata))


def _plain(t: Any) -> Any:
    """``t`` with every view type (nested too) as its large plain type."""
    import pyarrow as pa

    types = pa.types
    if types.is_string_view(t):
        return pa.large_string()
    if types.is_binary_view(t):
        return pa.large_binary()
    if types.is_list_view(t) or types.is_large_list_view(t):
        return pa.large_list(t.value_field.with_type(_plain(t.value_type)))
    if types.is_list(t):
        return pa.list_(t.value_field.with_type(_plain(t.value_type)))
    if types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_plain(t.value_type)))
    if types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(_plain(t.value_type)), t.list_size)
    if types.is_struct(t):
        return pa.struct([f.with_type(_plain(f.type)) for f in t])
    if types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_plain(t.key_type)),
            t.item_field.with_type(_plain(t.item_type)),
            t.keys_sorted,
        )
    if types.is_dictionary(t):
        return pa.dictionary(t.index_type, _plain(t.value_type), t.ordered)
    return t


class _HubBatchFn:
    """A ``map_batches`` function: the batch converted for ``fn``, its result back."""

    def __init__(self, fn: Callable[..., Any], to: object, options: Options) -> None:
        self.fn, self.to, self.options = fn, to, options

    def __call__(self, batch: Any, *args: Any, **kwargs: Any) -> Any:
        return _apply(self.fn, batch, self.to, self.options, args, kwargs)

    def __repr__(self) -> str:
        return f"<ih map_batches {getattr(self.fn, '__name__', self.fn)!r} on {self.to}>"


class _HubBatchClass:
    """A ``map_batches`` callable class (Ray actors) around the user's class."""

    def __init__(
        self,
        cls: type[Any],
        to: object,
        options: Options,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        self.fn = cls(*args, **kwargs)
        self.to, self.options = to, options

    def __call__(self, batch: Any, *args: Any, **kwargs: Any) -> Any:
        return _apply(self.fn, batch, self.to, self.options, args, kwargs)


def collate(
    to: object = "torch",
    *,
    as_dict: bool = True,
    device: str | Device | None = None,
    copy: bool | None = None,
    dtype: object = None,
    strict: bool = False,
    hub: Hub | None = None,
) -> Any:
    """A ``collate_fn`` for ``ds.iter_torch_batches``: each Arrow batch converted by the
    hub (``hub``, else the default hub of the process that iterates).

    The default ``as_dict=True`` gives a dict of tensors, each sharing the Arrow
    buffers in Ray's object store where the layout allows (one chunk of numbers without
    nulls), which Ray's default collate copies; ``as_dict=False`` gives one 2-D tensor.
    An instance of :class:`HubCollate` (an ``ArrowBatchCollateFn``).
    """
    options = Options(copy=copy, device=device, strict=strict, dtype=dtype, as_dict=as_dict)
    return _collate_class()(to, options, hub)


@functools.cache
def _collate_class() -> type[Any]:
    from ray.data.collate_fn import ArrowBatchCollateFn

    class HubCollate(ArrowBatchCollateFn):
        """Ray's collate for ``iter_torch_batches``, done by the hub: each
        ``pyarrow.Table`` batch becomes ``to`` (by default a dict of torch tensors)."""

        def __init__(self, to: object = "torch", options: Options | None = None,
                     hub: Hub | None = None) -> None:  # fmt: skip
            super().__init__()
            self.to = to
            self.options = options if options is not None else Options(as_dict=True)
            self.hub = hub

        def __call__(self, batch: Any) -> Any:
            if self.hub is None:
                import interchange_hub

                return interchange_hub.default_hub().convert(
                    batch, self.to, **self.options.kwargs()
                )
            return self.hub.convert(batch, self.to, **self.options.kwargs())

        def __repr__(self) -> str:
            return f"<HubCollate to={self.to!r} {self.options}>"

    HubCollate.__module__ = __name__
    HubCollate.__qualname__ = "HubCollate"
    return HubCollate


def __getattr__(name: str) -> Any:
    if name == "HubCollate":
        cls = _collate_class()
        globals()["HubCollate"] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(RayAdapter())
