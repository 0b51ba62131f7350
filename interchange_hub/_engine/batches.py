"""``iter_batches``: any source, as batches of a target library, zero-copy where it can be.

Tables, columns and streams go to Arrow once (zero-copy where the source allows); the
Arrow data is cut into batches by slicing, never copied, and each batch is converted
like any object, so repeated batches take the route cache's fast path. A batch that
spans two chunks of the source has two chunks: its conversion says whether that copies
(into a tensor it does). Tensors are sliced along their first dimension, each slice
converted on its own. Partitioned collections (Dask, Ray) hand over their data one
partition or batch at a time, fetched to this process as the loop asks.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit
from interchange_hub._core.device import Device
from interchange_hub._core.info import Flag, Kind
from interchange_hub.adapter import ARROW
from interchange_hub.errors import (
    ConversionError,
    InterchangeError,
    InvalidOptionError,
    library_message,
    type_name,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

Hub = Any  # interchange_hub.hub.Hub, which imports this module


def iter_batches(
    hub: Hub,
    source: object,
    to: object,
    *,
    batch_size: int | None = None,
    drop_last: bool = False,
    copy: bool | None = None,
    device: str | Device | None = None,
    strict: bool = False,
    dtype: object = None,
    as_dict: bool = False,
) -> Iterator[Any]:
    """Check the arguments now, then give the batches as the loop asks for them."""
    if batch_size is not None and (
        isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
    ):
        raise InvalidOptionError(
            f"batch_size must be a positive int (rows per batch) or None (the source's "
            f"own chunks), not {batch_size!r}"
        )
    if not (drop_last is True or drop_last is False):
        raise InvalidOptionError(f"drop_last must be True or False, not {drop_last!r}")
    if not (as_dict is True or as_dict is False):
        raise InvalidOptionError(f"as_dict must be True or False, not {as_dict!r}")
    kwargs: dict[str, Any] = {
        "copy": copy,
        "device": device,
        "strict": strict,
        "dtype": dtype,
        "as_dict": as_dict,
    }
    planner = hub.planner
    # The target and the options, now: a mistyped one is not found only at the first batch
    planner.check_options(to, copy, strict, dtype)
    if device is not None:
        Device.parse(device, planner.registry.device_kinds)
    collection = planner.collection(source)
    if collection is not None:
        return _collection_batches(hub, collection.batches(batch_size), to, batch_size,
                                   drop_last, kwargs)  # fmt: skip
    info = hub.describe(source)
    if info.kind == Kind.TENSOR:
        if as_dict:
            raise InvalidOptionError(
                f"as_dict=True gives one result per column of a table, and this "
                f"{type(source).__name__} is a tensor; iterate without as_dict"
            )
        if not info.shape:
            raise InvalidOptionError(
                f"this {type(source).__name__} has no dimensions, so no rows to batch; "
                "convert it with ih.convert"
            )
        if batch_size is not None and any(Flag.SPARSE in c.flags for c in info.columns):
            raise InvalidOptionError(
                f"this {type(source).__name__} is sparse, which has no rows to slice into "
                "batches; make it dense first (.to_dense()), or convert it whole with "
                "ih.convert (batch_size=None gives it whole, as one batch)"
            )
        hub.plan(source, to, **kwargs)  # an impossible target is refused before the loop
        return _tensor_batches(hub, source, info.shape[0] if info.shape else 0, to, batch_size,
                               drop_last, kwargs)  # fmt: skip
    # The way to Arrow is planned now: a source that cannot get there fails here.
    plan = planner.plan_to_node(source, ARROW, copy, strict)
    kind = Kind.COLUMN if info.kind == Kind.COLUMN else Kind.TABLE
    batches = _table_batches(planner, source, plan, kind, batch_size, drop_last)
    index = _index_left_out(hub, source, info, to, as_dict)
    if index:
        batches = (b.drop_columns([n for n in index if n in b.schema.names]) for b in batches)
    return _converted(hub, batches, to, kwargs)


def _index_left_out(hub: Hub, source: object, info: Any, to: object, as_dict: bool) -> list[str]:
    """The index columns (a pandas frame's own index, travelling as columns) that the
    whole conversion leaves out, and so each batch: into a tensor, or with as_dict=True,
    as ``DataFrame.to_numpy()`` does. A table keeps them as columns (into pandas, as its
    index again). In the Arrow batches they are plain columns: their flag is gone."""
    index = [c.name for c in info.columns if Flag.INDEX in c.flags]
    if not index or as_dict:
        return index
    try:
        steps = hub.plan(source, to).steps
    except InterchangeError:  # (each batch's conversion says what fails)
        return []
    return index if steps and steps[-1].estimate.out.kind == Kind.TENSOR else []


def _table_batches(
    planner: Any, source: object, plan: Any, kind: Kind, batch_size: int | None, drop_last: bool
) -> Iterator[Any]:
    value = planner.run(source, plan)
    pieces = read_checked(arrowkit.pieces_of(value, kind), source)
    yield from arrowkit.rebatch(pieces, batch_size, drop_last=drop_last)


def read_checked(pieces: Iterable[Any], source: object) -> Iterator[Any]:
    """``pieces`` (the Arrow batches of ``source``, read as asked for), with a failure of
    the reading itself (a stream whose producer raised part-way: pyarrow's ArrowInvalid,
    holding the producer's traceback as text) raised as a :class:`ConversionError` that
    says how far the reading got, the library's error chained."""
    return _said(
        pieces,
        lambda exc, rows: (
            f"reading the {type_name(source)} failed after {rows:,} row(s) "
            f"({type(exc).__name__}: {library_message(exc)}); the batches before were given "
            "as they came, and the source is consumed: make a new one to read it again"
        ),
    )


def _said(items: Iterable[Any], message: Callable[[Exception, int], str]) -> Iterator[Any]:
    """``items`` (Arrow batches or arrays), with a library's error raised while making the
    next one said as a :class:`ConversionError` of ``message(error, rows given before)``,
    the error chained (the hub's own errors pass as they are)."""
    rows = 0
    iterator = iter(items)
    while True:
        try:
            item = next(iterator)
        except StopIteration:
            return
        except InterchangeError:
            raise
        except Exception as exc:  # (the library's error, said as the hub's)
            raise ConversionError(message(exc, rows)) from exc
        rows += len(item)
        yield item


def _collection_batches(
    hub: Hub,
    objects: Iterator[Any],
    to: object,
    batch_size: int | None,
    drop_last: bool,
    kwargs: dict[str, Any],
) -> Iterator[Any]:
    """Batches of a collection's local pieces: tables through Arrow, tensors sliced (a
    batch that spans two blocks is joined by the tensor library: a copy)."""
    first = next(objects, None)
    if first is None:
        return
    pieces = itertools.chain([first], objects)
    if hub.describe(first).kind == Kind.TENSOR:
        if kwargs["as_dict"]:
            raise InvalidOptionError(
                "as_dict=True gives one result per column of a table, and this collection "
                "holds tensors; iterate without as_dict"
            )
        for batch in _tensor_rebatch(hub, pieces, batch_size, drop_last):
            yield hub.convert(batch, to, **kwargs)
        return
    arrow = _arrow_pieces(hub, pieces, kwargs["copy"], kwargs["strict"])
    # (pyarrow refuses to join the pieces of partitions of different schemas)
    batches = _said(
        arrowkit.rebatch(arrow, batch_size, drop_last=drop_last),
        lambda exc, _: (
            f"the partitions' batches do not join ({type(exc).__name__}: "
            f"{library_message(exc)}): partitions of different schemas (a column's type or "
            "name) cannot be cut into batches across them; give them one schema first, or "
            "iterate with batch_size=None (each partition's own)"
        ),
    )
    # A pandas partition's own index, left out as it is for a local frame's batches
    index = _index_left_out(hub, first, hub.describe(first), to, kwargs["as_dict"])
    if index:
        batches = (b.drop_columns([n for n in index if n in b.schema.names]) for b in batches)
    yield from _converted(hub, batches, to, kwargs)


def _arrow_pieces(
    hub: Hub, objects: Iterable[Any], copy: bool | None, strict: bool
) -> Iterator[Any]:
    planner = hub.planner
    for obj in objects:
        info = hub.describe(obj)
        kind = Kind.COLUMN if info.kind == Kind.COLUMN else Kind.TABLE
        value = planner.run(obj, planner.plan_to_node(obj, ARROW, copy, strict))
        yield from read_checked(arrowkit.pieces_of(value, kind), obj)


def _tensor_rebatch(
    hub: Hub, pieces: Iterable[Any], batch_size: int | None, drop_last: bool
) -> Iterator[Any]:
    held: list[Any] = []
    rows = 0

    def emit(parts: list[Any]) -> Any:
        return parts[0] if len(parts) == 1 else hub.registry.owner(parts[0]).concat(parts)

    for piece in pieces:
        n = len(piece)
        if not n:
            continue
        if batch_size is None:
            yield piece
            continue
        offset = 0
        while offset < n:
            take = min(batch_size - rows, n - offset)
            held.append(piece[offset : offset + take])
            rows += take
            offset += take
            if rows == batch_size:
                yield emit(held)
                held, rows = [], 0
    if held and not drop_last:
        yield emit(held)


def _converted(
    hub: Hub, batches: Iterable[Any], to: object, kwargs: dict[str, Any]
) -> Iterator[Any]:
    for batch in batches:
        yield hub.convert(batch, to, **kwargs)


def _tensor_batches(
    hub: Hub,
    source: Any,
    rows: int,
    to: object,
    batch_size: int | None,
    drop_last: bool,
    kwargs: dict[str, Any],
) -> Iterator[Any]:
    if batch_size is None:
        yield hub.convert(source, to, **kwargs)
        return
    for start in range(0, rows, batch_size):
        if drop_last and start + batch_size > rows:
            return
        try:
            part = source[start : start + batch_size]
        except Exception as exc:  # (the library's refusal, said as the hub's)
            raise ConversionError(
                f"cannot slice this {type(source).__name__} into batches of rows "
                f"({type(exc).__name__}: {exc}); convert it whole with ih.convert, or give "
                "it to iter_batches in a layout its library slices (a dense, strided array)"
            ) from exc
        yield hub.convert(part, to, **kwargs)
