"""Partition-wise conversion of collections on an engine (Dask, Ray).

``ih.convert(collection, to=...)`` converts each partition where it lives, on the
engine's workers, with the hub of that worker process (plugins load there through their
entry points, as in any process). Nothing is gathered to the client until asked for.

What users get back, where the engine cannot hold the target's objects (polars frames,
torch tensors, ...), is a :class:`Partitioned`: ``compute()`` joins the partitions on the
client in order, ``partitions()`` fetches them one at a time, ``persist()`` keeps them on
the workers, ``handles()`` gives the engine's own handles. Its :attr:`Partitioned.plan`
is the :class:`PartitionedPlan` summed over the plans the workers really ran.

Engine plugins (``interchange-hub-dask``, ``interchange-hub-ray``) build on the rest:
:func:`run_partition` and :func:`plan_partition` run on a worker, :class:`Parts` is the
engine side of a :class:`Partitioned`, :func:`metadata_plan` plans from the engine's
metadata before anything runs.
"""

from __future__ import annotations

import os
import re
import socket
import warnings
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from interchange_hub._core.deps import require
from interchange_hub._core.dtypes import is_integer, itemsize
from interchange_hub._core.info import cast_loss
from interchange_hub._core.records import field, record
from interchange_hub.adapter import bytes_inside
from interchange_hub.errors import (
    ConversionError,
    InterchangeError,
    InvalidOptionError,
    LossyConversionError,
    LossyConversionWarning,
    library_message,
    type_name,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from interchange_hub._engine.plans import Plan
    from interchange_hub.adapter import Options
    from interchange_hub.hub import Hub

__all__ = [
    "PartitionReport",
    "Partitioned",
    "PartitionedPlan",
    "Parts",
    "convert_partition",
    "metadata_plan",
    "plan_partition",
    "run_partition",
    "worker_id",
]


def worker_id() -> str:
    """This process, as reports name it: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


@record
class PartitionReport:
    """What the hub of a worker planned (and did) for one partition.

    ``shared_bytes`` is measured after the conversion, by buffer address: the bytes of
    the result that lie inside the partition's own buffers (-1: only planned, not run).
    """

    index: int
    rows: int
    route: str  # "pandas -> polars"
    steps: tuple[str, ...]  # the plan's step lines
    zero_copy: bool
    copied_bytes: int
    copied_columns: tuple[str, ...]
    losses: tuple[str, ...]
    device_moves: int
    source_bytes: int
    shared_bytes: int = -1
    worker: str = ""
    # True: converted on the client, after the engine brought the partition there (a
    # zero-copy route, computed: see Partitioned.compute)
    on_client: bool = False


def _hub() -> Hub:
    import interchange_hub

    return interchange_hub.default_hub()


def _report(
    hub: Hub,
    index: int,
    part: object,
    plan: Plan,
    result: object = None,
    on_client: bool = False,
) -> PartitionReport:
    info = plan.info
    buffers = hub.buffers(part)
    source_bytes = sum(b.size for b in buffers)
    shared = -1
    if result is not None:
        values = list(result.values()) if isinstance(result, dict) else [result]
        shared = sum(_shared(hub, value, buffers) for value in values)
    return PartitionReport(
        index=index,
        rows=info.rows,
        route=f"{plan.source} -> {plan.target}",
        steps=tuple(
            line.strip() for line in str(plan).split("\n")[1:] if not line.startswith("  note")
        ),
        zero_copy=plan.zero_copy,
        copied_bytes=plan.copied_bytes,
        copied_columns=plan.copied_columns,
        losses=tuple(loss.message() for loss in plan.losses),
        device_moves=plan.device_moves,
        source_bytes=source_bytes,
        shared_bytes=shared,
        worker=worker_id(),
        on_client=on_client,
    )


def _shared(hub: Hub, value: object, source: Sequence[Any]) -> int:
    try:
        mine = hub.buffers(value)
    except Exception:  # noqa: BLE001 - a result the hub cannot read shares nothing it can prove
        return 0
    return bytes_inside(mine, source)


def run_partition(
    part: object, to: object, options: Options, index: int = 0, hub: Hub | None = None
) -> tuple[Any, PartitionReport]:
    """Convert one partition with this process's default hub (on a worker): the result,
    and the report of the plan it ran with the bytes it shares, checked by address.
    ``hub``: convert with that hub instead (on the client)."""
    on_client = hub is not None
    hub = hub or _hub()
    if options.as_dict:
        kwargs = options.kwargs()
        plan = hub.plan(part, to, **kwargs)
        result = hub.convert(part, to, **kwargs)
    else:
        o = options
        result, plan = hub.planner.convert_planned(part, to, o.copy, o.device, o.strict, o.dtype)
    return result, _report(hub, index, part, plan, result, on_client)


def convert_partition(part: object, to: object, options: Options) -> Any:
    """Convert one partition with this process's default hub; the result only."""
    return _hub().convert(part, to, **options.kwargs())


def convert_block(
    part: object, to: object, options: Options, dtype: str, trailing: tuple[int, ...], index: int
) -> Any:
    """:func:`convert_partition` for one block of an engine's array, whose dtype and
    trailing shape the engine declared from the collection's metadata before any block
    was made: a block that comes out otherwise (a partition with nulls, which a tensor
    holds as NaN in float64, where the metadata said int64) is refused, not cast by the
    engine (which made INT64_MIN of each NaN, silently)."""
    result = convert_partition(part, to, options)
    got = str(getattr(result, "dtype", ""))
    if got != dtype:
        raise ConversionError(
            f"partition {index} became a tensor of {got}, and the array's dtype, read from "
            f"the collection's metadata, is {dtype} (a partition holding nulls becomes "
            "float64, the nulls NaN); pass dtype='float64' (or fill the nulls first) to give "
            "every partition one dtype"
        )
    shape = tuple(getattr(result, "shape", ()))[1:]
    if shape != tuple(trailing):
        raise ConversionError(
            f"partition {index} became a tensor of trailing shape {shape}, and the array's, "
            f"read from the collection's metadata, is {tuple(trailing)}; report this as a bug"
        )
    return result


def plan_partition(part: object, to: object, options: Options, index: int = 0) -> PartitionReport:
    """The report of the plan this process's hub makes for one partition (nothing runs)."""
    hub = _hub()
    return _report(hub, index, part, hub.plan(part, to, **options.kwargs()))


@record
class PartitionedPlan:
    """The plan of a partition-wise conversion.

    Before anything runs it comes from the engine's metadata (``exact`` False): the plan
    of one partition, made from the collection's schema. Nulls, chunking and NaN can
    differ per partition, so each worker plans its own partition again when it runs.
    After a run (``Partitioned.plan``) or with :meth:`exact`, it sums the plans the
    workers made, one :class:`PartitionReport` per partition.
    """

    engine: str
    source: str  # "dask.DataFrame"
    target: str
    partitions: int | None  # None: the engine does not know before running
    each: Plan  # the plan of one partition, from the metadata
    result: str  # what convert returns: "dask.dataframe.DataFrame", "ih.Partitioned"
    reports: tuple[PartitionReport, ...] = ()
    exact_from: Callable[[], Sequence[PartitionReport]] | None = field(
        default=None, compare=False, repr=False
    )

    @property
    def is_exact(self) -> bool:
        """True when the figures are the workers' own plans, partition by partition."""
        return bool(self.reports) or self.partitions == 0

    @property
    def zero_copy(self) -> bool:
        if self.is_exact:
            return all(r.zero_copy for r in self.reports)
        return self.each.zero_copy

    @property
    def copied_bytes(self) -> int:
        """Bytes copied over all partitions; -1 when unknown (planned from metadata)."""
        if not self.is_exact:
            return 0 if self.each.zero_copy else -1
        sizes = [r.copied_bytes for r in self.reports]
        return -1 if any(n < 0 for n in sizes) else sum(sizes)

    @property
    def copied_columns(self) -> tuple[str, ...]:
        if not self.is_exact:
            return self.each.copied_columns
        return tuple(dict.fromkeys(c for r in self.reports for c in r.copied_columns))

    @property
    def losses(self) -> tuple[str, ...]:
        """Each loss once, as its message (per partition they repeat)."""
        if not self.is_exact:
            return tuple(loss.message() for loss in self.each.losses)
        return tuple(dict.fromkeys(x for r in self.reports for x in r.losses))

    @property
    def lossless(self) -> bool:
        return not self.losses

    @property
    def device_moves(self) -> int:
        if not self.is_exact:
            return self.each.device_moves * (self.partitions or 0)
        return sum(r.device_moves for r in self.reports)

    @property
    def shared_bytes(self) -> int:
        """Bytes of the results lying in the partitions' buffers (-1: not run)."""
        if not self.reports or any(r.shared_bytes < 0 for r in self.reports):
            return -1
        return sum(r.shared_bytes for r in self.reports)

    @property
    def source_bytes(self) -> int:
        return sum(r.source_bytes for r in self.reports)

    @property
    def workers(self) -> tuple[str, ...]:
        """The worker processes that converted partitions (``host:pid``; the client left
        out when it converted them itself)."""
        return tuple(sorted({r.worker for r in self.reports if not r.on_client}))

    def exact(self) -> PartitionedPlan:
        """This plan made exact: each worker plans its own partition (nothing converts)."""
        if self.is_exact:
            return self
        if self.exact_from is None:
            raise InvalidOptionError("this plan cannot be made exact: no engine is attached")
        reports = tuple(sorted(self.exact_from(), key=lambda r: r.index))
        return replace(self, reports=reports, partitions=len(reports))

    def __str__(self) -> str:
        from interchange_hub._engine.plans import format_bytes

        count = "?" if self.partitions is None else str(self.partitions)
        plural = "" if self.partitions == 1 else "s"
        lines = []
        if self.is_exact:
            verdict = (
                "zero-copy"
                if self.zero_copy
                else f"copies {format_bytes(self.copied_bytes)} in all"
            )
            n = len(self.workers)
            where = f"{n} worker{'' if n == 1 else 's'}" if n else "converted on the client"
            head = (
                f"Plan {self.source} -> {self.target}, partition-wise over {count} "
                f"partition{plural} on {self.engine} ({where}): {verdict}"
            )
            lines.append(head)
            summary = (
                f"  summed: {format_bytes(max(self.copied_bytes, 0))} copied, "
                f"{len(self.copied_columns)} column(s) copied, {len(self.losses)} loss(es), "
                f"{self.device_moves} device move(s)"
            )
            lines.append(summary)
            if self.shared_bytes >= 0:
                lines.append(
                    f"  shared with the partitions, checked by buffer address: "
                    f"{format_bytes(self.shared_bytes)} of {format_bytes(self.source_bytes)}"
                )
            for steps, reports in _grouped(self.reports):
                first = reports[0]
                where = (
                    "on the client, as fetched (a zero-copy route: the engine moved the "
                    "partitions, converting them costs nothing more)"
                    if first.on_client
                    else "on the workers"
                )
                lines.append(
                    f"  partitions {_ranges([r.index for r in reports])} "
                    f"({sum(max(r.rows, 0) for r in reports):,} rows): {first.route}, "
                    + ("zero-copy" if first.zero_copy else "copy")
                    + f", {where}"
                )
                lines.extend(f"    {s}" for s in steps)
            lines.extend(f"  LOSSY {loss}" for loss in self.losses)
        else:
            verdict = "zero-copy" if self.each.zero_copy else "copies"
            lines.append(
                f"Plan {self.source} -> {self.target}, partition-wise over {count} "
                f"partition{plural} on {self.engine}: {verdict} (planned from metadata: "
                "nulls and chunking can differ per partition; each worker plans its own)"
            )
            each = str(self.each).split("\n")
            lines.append("  each partition: " + each[0].removeprefix("Plan "))
            lines.extend("  " + line for line in each[1:])
        lines.append(f"  result: {self.result}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        kind = "exact" if self.is_exact else "from metadata"
        return (
            f"<PartitionedPlan {self.source} -> {self.target} over "
            f"{'?' if self.partitions is None else self.partitions} partitions ({kind})>"
        )

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(str(self))}</pre>"


def _grouped(
    reports: Sequence[PartitionReport],
) -> list[tuple[tuple[str, ...], list[PartitionReport]]]:
    groups: dict[tuple[str, ...], list[PartitionReport]] = {}
    steps: dict[tuple[str, ...], tuple[str, ...]] = {}
    for r in sorted(reports, key=lambda r: r.index):
        # partitions of any size, one route
        key = (*(_SIZE.sub("", s) for s in r.steps), str(r.on_client))
        steps.setdefault(key, key)
        groups.setdefault(key, []).append(r)
    return [(steps[k][:-1], v) for k, v in groups.items()]


_SIZE = re.compile(r"\s+\[[^\]]*\]$")  # the bytes a step line ends with


def _ranges(indices: Sequence[int]) -> str:
    spans: list[list[int]] = []
    for i in indices:
        if spans and spans[-1][1] == i - 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def metadata_plan(
    hub: Hub,
    meta: object,
    to: object,
    options: Options,
    *,
    engine: str,
    source: str,
    partitions: int | None,
    result: str,
    exact_from: Callable[[], Sequence[PartitionReport]] | None = None,
) -> PartitionedPlan:
    """The plan from ``meta`` (an empty local object with the partitions' schema).

    Raises what :func:`~interchange_hub.plan` raises for ``meta``: ``copy=False`` is
    refused here, before anything runs, where the dtypes alone imply a copy.
    """
    each = hub.plan(meta, to, **options.kwargs())
    return PartitionedPlan(
        engine=engine,
        source=source,
        target=each.target,
        partitions=partitions,
        each=each,
        result=result,
        exact_from=exact_from,
    )


class Parts:
    """The engine side of a :class:`Partitioned`: where the partitions' results are.

    A subclass holds the engine's handles (Dask delayed values, Ray object refs) to the
    results of :func:`run_partition`, each a ``(result, report)`` pair made on a worker.
    """

    engine: str = ""

    def count(self) -> int:
        """The number of partitions."""
        raise NotImplementedError

    def gather(self) -> tuple[list[Any], list[PartitionReport]]:
        """Run what has not run, and bring every result and report to this process."""
        raise NotImplementedError

    def fetch(self, index: int) -> Any:
        """Bring partition ``index``'s result to this process (running it if needed)."""
        raise NotImplementedError

    def reports(self) -> list[PartitionReport]:
        """Every partition's report, the results left where they are."""
        raise NotImplementedError

    def persist(self) -> Parts:
        """Parts whose results are computed and kept on the workers."""
        raise NotImplementedError

    def handles(self) -> list[Any]:
        """The engine's own handles to the results, one per partition, in order."""
        raise NotImplementedError

    @property
    def started(self) -> bool:
        """Whether the conversions run or ran on the workers already (persisted)."""
        return False

    def sources(self, indices: Sequence[int]) -> list[Any] | None:
        """The partitions ``indices`` themselves, brought to this process the way the
        engine moves them (Arrow blocks from Ray's object store without a copy, pickle-5
        buffers from Dask workers); None where the engine offers no such fetch."""
        return None


class Partitioned:
    """Partitions converted on their workers, for a target the engine cannot hold.

    >>> parts = ih.convert(ddf, to="polars")    # doctest: +SKIP
    >>> df = parts.compute()                     # one polars.DataFrame, in partition order
    >>> print(parts.plan)                        # what each worker did, summed
    """

    def __init__(
        self,
        parts: Parts,
        hub: Hub,
        empty: object,
        plan: PartitionedPlan,
        to: object = None,
        options: Options | None = None,
    ) -> None:
        self._parts = parts
        self._hub = hub
        self._to = to
        self._options = options  # with to=: the conversion, for partitions fetched here
        self._empty = empty  # the target's object for no rows (the converted metadata)
        self._plan = plan
        self._reports: tuple[PartitionReport, ...] = ()

    @property
    def engine(self) -> str:
        return self._parts.engine

    @property
    def npartitions(self) -> int:
        return self._parts.count()

    def __len__(self) -> int:
        return self.npartitions

    @property
    def plan(self) -> PartitionedPlan:
        """The plan summed over the partitions once they ran (after :meth:`compute`,
        :meth:`persist` or :meth:`report`), the plan from metadata before."""
        if self._reports:
            return replace(self._plan, reports=self._reports, partitions=len(self._reports))
        return self._plan

    def report(self) -> PartitionedPlan:
        """The exact plan: run the partitions if needed, fetch only their reports."""
        if not self._reports:
            self._keep(self._parts.reports())
        return self.plan

    def _keep(self, reports: Sequence[PartitionReport]) -> None:
        self._reports = tuple(sorted(reports, key=lambda r: r.index))

    def compute(self) -> Any:
        """One object of the target library: the partitions joined on the client, in
        partition order (``pl.concat``, ``pa.concat_tables``, ``torch.cat``, ...).

        Where the plan is zero-copy and nothing ran yet, the partitions are fetched as the
        engine holds them and converted here, which costs nothing more: the result then
        shares the memory the engine brought, where converting on the workers would make
        the engine serialise the results (polars frames as IPC, tensors as bytes: a copy
        each way). Routes that copy run on the workers, in parallel. The plan says which.
        """
        local = self._local(range(self._parts.count()))
        if local is not None:
            results, reports = local
        else:
            results, reports = self._parts.gather()
        self._keep(reports)
        strict = self._options is not None and self._options.strict
        joined = join(self._hub, results, self._empty, strict)
        to = self._to
        if isinstance(to, type) and not isinstance(joined, (to, dict)):
            # A type asked by name (to=pa.Array): the join of several partitions gives its
            # library's joined kind (a ChunkedArray), which one more conversion makes that
            # type (a contiguous Array combines the chunks: a copy, as ih.convert says)
            options = self._options.kwargs() if self._options is not None else {}
            joined = self._hub.convert(joined, to, **options)
        return joined

    def partitions(self) -> Iterator[Any]:
        """The partitions' results, in order, each fetched when the loop reaches it
        (converted here where the route is zero-copy, as :meth:`compute` does)."""
        for index in range(self._parts.count()):
            local = self._local([index])
            yield local[0][0] if local is not None else self._parts.fetch(index)

    def _local(self, indices: Iterable[int]) -> tuple[list[Any], list[PartitionReport]] | None:
        """The partitions converted here, if that is the cheaper way (see compute)."""
        if self._options is None or not self._plan.each.zero_copy or self._parts.started:
            return None
        wanted = list(indices)
        sources = self._parts.sources(wanted)
        if sources is None:
            return None
        pairs = [
            run_partition(src, self._to, self._options, i, hub=self._hub)
            for i, src in zip(wanted, sources, strict=True)
        ]
        return [p[0] for p in pairs], [p[1] for p in pairs]

    def persist(self) -> Partitioned:
        """The same partitions, computed and kept on the workers (nothing comes back
        but the reports)."""
        kept = Partitioned(
            self._parts.persist(), self._hub, self._empty, self._plan, self._to, self._options
        )
        kept.report()
        return kept

    def handles(self) -> list[Any]:
        """The engine's handles to the results (Dask delayed values, Ray object refs)."""
        return self._parts.handles()

    def to_delayed(self) -> list[Any]:
        """The results as Dask delayed values, one per partition (Dask only)."""
        if self.engine != "dask":
            raise InvalidOptionError(
                f"to_delayed() gives Dask handles, and these partitions are on "
                f"{self.engine}; use .handles() for the engine's own"
            )
        return self.handles()

    def __repr__(self) -> str:
        # The count from the plan until the partitions ran: counting a lazy collection's
        # partitions may run it (a Ray Dataset before it is materialised).
        if self._reports:
            count, state = str(len(self._reports)), "ran"
        else:
            known = self._plan.partitions
            count, state = ("?" if known is None else str(known)), "not computed"
        return f"<Partitioned: {count} {self.engine} partition(s) -> {self._plan.target} ({state})>"


def join(hub: Hub, parts: Sequence[Any], empty: object, strict: bool = False) -> Any:
    """``parts`` (results of one conversion) as one object of their library, in order.

    Tensors of different dtypes (a partition with nulls became float64, another stayed
    int64) are promoted to one by the library's join (``torch.cat``, ``np.concatenate``),
    unchecked: a value the promotion changes is warned here, naming the partition
    (``strict``: refused), as a cast the hub makes is."""
    if not parts:
        return empty
    first = parts[0]
    if isinstance(first, dict):  # as_dict=True: join each column on its own
        keys = list(first)
        for i, part in enumerate(parts):
            if list(part) != keys:
                raise ConversionError(
                    f"cannot join {len(parts)} partitions: partition 0 has the columns "
                    f"{keys} and partition {i} {list(part)}; give the partitions one schema "
                    "first, or take them one by one with .partitions()"
                )
        return {key: join(hub, [p[key] for p in parts], None, strict) for key in first}
    if len(parts) == 1:
        return first
    owner = hub.registry.owner(first)
    if owner is None:
        raise ConversionError(
            f"cannot join {len(parts)} partitions of {type(first).__name__}: no adapter "
            "owns them; take them one by one with .partitions()"
        )
    try:
        joined = owner.concat(parts)
    except NotImplementedError as exc:
        raise ConversionError(str(exc)) from None
    except InterchangeError:
        raise
    except Exception as exc:  # (the library's refusal: partitions of different schemas)
        raise ConversionError(
            f"cannot join {len(parts)} partitions of {type_name(first)}: "
            f"{type(exc).__name__}: {library_message(exc)}; partitions of different "
            "schemas (a column's type, or its name) do not join: give them one schema "
            "first, or take them one by one with .partitions()"
        ) from exc
    _check_promotion(parts, joined, strict)
    return joined


def _check_promotion(parts: Sequence[Any], joined: Any, strict: bool) -> None:
    """Warn of (``strict``: refuse) the values of tensor ``parts`` that the join's
    promotion into ``joined``'s dtype changed (see :func:`join`)."""
    dtype = getattr(joined, "dtype", None)
    if dtype is None or not hasattr(joined, "__dlpack__"):
        return  # (frames and tables: their joins refuse other schemas, or keep values)
    odd = [(i, p) for i, p in enumerate(parts) if getattr(p, "dtype", dtype) != dtype]
    if not odd:
        return
    found = []
    for i, part in odd:
        why = _promotion_loss(part, joined)
        if why:
            found.append(f"partition {i}: {_dtype_name(part.dtype)} -> {_dtype_name(dtype)}: {why}")
    if not found:
        return
    message = (
        f"the join of {len(parts)} partitions ({type_name(joined)}) promotes partitions of "
        f"different dtypes to one: " + "; ".join(found) + ". Pass dtype= to give every "
        "partition one dtype on the workers (the cast is checked there)"
    )
    if strict:
        raise LossyConversionError("strict=True, but " + message)
    warnings.warn(message, LossyConversionWarning, stacklevel=4)


def _dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


_FLOAT_BITS = {"float16": (11, 5), "bfloat16": (8, 8), "float32": (24, 8), "float64": (53, 11)}


def _widens(source: str, target: str) -> bool:
    """Whether every value of dtype ``source`` is one of ``target`` (by name, as numpy
    and torch spell them): bool into any number, a float into one of more precision and
    range, an integer into a wider integer of its sign's range or a float holding all its
    values (int32 into float64, not int64)."""
    if source == target or source == "bool":
        return True
    if source in _FLOAT_BITS and target in _FLOAT_BITS:
        (p, e), (q, f) = _FLOAT_BITS[source], _FLOAT_BITS[target]
        return p <= q and e <= f
    if not is_integer(source):
        return False
    signed, bits = not source.startswith("u"), itemsize(source) * 8
    if is_integer(target):
        signed_to, bits_to = not target.startswith("u"), itemsize(target) * 8
        return (signed == signed_to and bits <= bits_to) or (
            not signed and signed_to and bits < bits_to
        )
    return target in _FLOAT_BITS and bits - signed <= _FLOAT_BITS[target][0]


def _promotion_loss(part: Any, joined: Any) -> str:
    """What promoting the tensor ``part`` into ``joined``'s dtype changes ("" for
    nothing), as :func:`cast_loss` says it; where the part is not in host memory (or
    numpy cannot read its dtype), that it may change values, unchecked."""
    np = require("numpy")
    if _widens(_dtype_name(part.dtype), _dtype_name(joined.dtype)):
        return ""  # (every value of the narrower dtype is one of the wider: not read)
    if hasattr(part, "detach"):  # (a torch tensor that requires grad: numpy reads it so)
        part, joined = part.detach(), joined.detach()
    if isinstance(part, np.ndarray) and isinstance(joined, np.ndarray):
        before, want = part, joined.dtype
        if before.dtype.kind not in "biufc" or want.kind not in "biufc":
            return ""  # (strings widen; numpy joins no other kinds it would change)
    else:
        try:
            before = np.from_dlpack(part)
            want = np.from_dlpack(joined[:0]).dtype
        except (BufferError, RuntimeError, TypeError, ValueError):
            return "values may change (not checked: numpy cannot read these tensors)"
    with np.errstate(all="ignore"):
        return cast_loss(before, before.astype(want))
