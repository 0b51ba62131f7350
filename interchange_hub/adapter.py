"""The adapter contract: what a library plugin gives the hub.

An :class:`Adapter` recognises its library's objects, describes them cheaply, lists the
memory they use, and contributes :class:`Edge` values: conversions between its library
and the protocol nodes, ``"arrow"`` (Arrow PyCapsule producers on the CPU),
``"arrow_device"`` (producers of only ``__arrow_c_device_array__``) and ``"dlpack"``
(DLPack producers, on any device). The router chains edges into a plan.

This module is the whole face a plugin needs besides ``interchange_hub.arrowkit`` (the
pyarrow helpers) and ``interchange_hub.hookspecs``: the values an adapter builds and
reads (:class:`DataInfo`, :class:`Column`, :class:`Flag`, :class:`Estimate`, ...), the
dunder probes, and :func:`require` / :func:`report_losses` / :func:`cast_loss` /
:func:`move_estimate`.
Everything else in the package is private and may move.
"""

from __future__ import annotations

import itertools
import weakref
from typing import TYPE_CHECKING, Any

from interchange_hub._c.ndarray import ndarray_address
from interchange_hub._core.deps import installed, require
from interchange_hub._core.device import CPU, Device, DeviceType
from interchange_hub._core.dtypes import (
    has_negative_scale,
    is_float,
    is_integer,
    is_numeric,
    is_string,
    is_temporal,
    np_dtype_name,
    tz_of,
    unit_of,
)
from interchange_hub._core.info import (
    Column,
    Copy,
    DataInfo,
    Estimate,
    Flag,
    Kind,
    Loss,
    RouteChanged,
    Scan,
    Unroutable,
    alignment_of,
    cast_loss,
    move_estimate,
    report_losses,
)
from interchange_hub._core.protocols import (
    has_dunder,
    is_arrow,
    is_arrow_array,
    is_arrow_device,
    is_arrow_stream,
    is_dlpack,
)
from interchange_hub._core.records import field, record
from interchange_hub.errors import ConversionError

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
    from contextlib import AbstractContextManager

__all__ = [
    "ARROW",
    "ARROW_DEVICE",
    "CPU",
    "DLPACK",
    "PROTOCOL_NODES",
    "Adapter",
    "Buffer",
    "Collection",
    "Column",
    "Context",
    "Copy",
    "DataInfo",
    "Device",
    "DeviceType",
    "Edge",
    "Estimate",
    "Flag",
    "IdentityKeys",
    "Kind",
    "Loss",
    "Options",
    "RouteChanged",
    "Scan",
    "Unroutable",
    "alignment_of",
    "bytes_inside",
    "cast_loss",
    "check_tensor_parts",
    "has_dunder",
    "has_negative_scale",
    "installed",
    "is_arrow",
    "is_arrow_array",
    "is_arrow_device",
    "is_arrow_stream",
    "is_dlpack",
    "is_float",
    "is_integer",
    "is_numeric",
    "is_string",
    "is_temporal",
    "mixed_objects_error",
    "mixed_parts",
    "move_estimate",
    "ndarray_address",
    "np_dtype_name",
    "passthrough",
    "report_losses",
    "require",
    "tz_of",
    "unit_of",
    "with_context",
]

ARROW = "arrow"
ARROW_DEVICE = "arrow_device"
DLPACK = "dlpack"
PROTOCOL_NODES = (ARROW, ARROW_DEVICE, DLPACK)


@record
class Context:
    """What a step needs to know besides its input value."""

    info: DataInfo  # the data entering this step
    kind: Kind | None = None  # the kind of result asked for with ``to=<type>``
    target_type: type | None = None
    copy: bool | None = None
    strict: bool = False
    fresh: bool = False  # the input is memory this conversion made (shares nothing with the source)
    target: str = ""  # the library the whole conversion ends in
    device: Device | None = None  # where the result must end up (None: anywhere)
    dtype: str | None = None  # the dtype asked of a tensor result (dtype=; None: its own)
    # the input is the object the conversion starts from (no step before this one): a
    # one-call edge between two libraries can keep to data the user handed over, not a
    # value an earlier step made (whose warnings its shortcut would hide)
    at_source: bool = False
    # dtype="arrow": the result's columns held as Arrow arrays where its library has other
    # backends too (pandas' ArrowDtype); the target's step marks them Flag.ARROW_BACKED
    arrow: bool = False
    # the Arrow types the library the conversion ends in keeps strings and binaries in as
    # they are (Adapter.arrow_string_type, arrow_binary_type; "": the plain types): a step
    # that encodes text anew (from Python objects, numpy text) makes those, which that
    # library then shares (arrowkit.text_type)
    string_type: str = ""
    binary_type: str = ""


@record
class Edge:
    """One conversion step from node ``source`` to node ``target``.

    :param estimate: ``estimate(context) -> Estimate``; cheap, runs at planning time on
        ``context.info`` and raises :class:`~interchange_hub.adapter.Unroutable` when it
        cannot carry the data.
    :param run: ``run(value, context) -> value``; does the conversion.
    :param requires: modules that must be installed for this edge to be considered.
    :param devices: the device kinds (``Device.kind``: "cpu", "cuda", ...) whose memory
        the edge accepts as input; the router never hands it data on another device.
    :param bind: optional ``bind(context) -> run1 | None`` for the hot path: a one-argument
        function doing what ``run(value, context)`` does for that context, with every
        decision that depends only on the context taken once, when the route is planned
        (``pl.DataFrame`` itself, say), or None when the step has nothing to do for that
        context. It must behave exactly like ``run``; the hub calls it on the first
        conversion as well, so the tests of a conversion cover it. ``run`` itself stays,
        for callers that have a value and a context.
    :param keyed_losses: the losses ``estimate`` reports depend only on what the source's
        route key holds (dtypes, names, which columns hold nulls), never on counts or
        sizes: a lossy route through it may be remembered, its warnings repeated on each
        call (as :attr:`Adapter.keyed_losses` says for all of an adapter's edges).
    """

    source: str
    target: str
    adapter: str
    protocol: str
    estimate: Callable[[Context], Estimate]
    run: Callable[[Any, Context], Any]
    requires: tuple[str, ...] = ()
    devices: tuple[str, ...] = ("cpu",)
    bind: Callable[[Context], Callable[[Any], Any] | None] | None = None
    keyed_losses: bool = False

    def __repr__(self) -> str:
        return f"<Edge {self.source}->{self.target} via {self.protocol} ({self.adapter})>"

    def bound(self, ctx: Context) -> Callable[[Any], Any] | None:
        """The one-argument run for ``ctx`` (None: nothing to do, as for a passthrough)."""
        if self.run is passthrough:
            return None
        if self.bind is not None:
            return self.bind(ctx)
        return with_context(self.run, ctx)


class IdentityKeys:
    """Route keys of immutable objects (pyarrow and nanoarrow data), computed once per
    object: a repeated conversion of the same object then costs a dictionary lookup and
    a weak-reference check instead of a walk over its columns.

    Each distinct key is interned as a small int, so that the hub's own lookup does not
    hash a schema on every call either; equal keys of different objects share one token.
    Only for types whose route-relevant layout cannot change after creation. Objects that
    cannot be weakly referenced get their token looked up every time; entries go when
    their object dies, and a full table starts over (tokens are never reused).
    """

    __slots__ = ("_compute", "_keys", "_limit", "_tokens")

    def __init__(self, compute: Callable[[Any], Hashable | None], limit: int = 1024) -> None:
        self._compute = compute
        self._keys: dict[int, tuple[weakref.ref[Any], int | None]] = {}
        self._tokens: dict[Hashable, int] = {}
        self._limit = limit

    def __call__(self, obj: Any) -> int | None:
        entry = self._keys.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        token = self._token(self._compute(obj))
        keys, ident = self._keys, id(obj)

        def forget(ref: weakref.ref[Any]) -> None:
            if keys.get(ident, (None,))[0] is ref:
                keys.pop(ident, None)

        try:
            ref = weakref.ref(obj, forget)
        except TypeError:
            return token
        if len(keys) >= self._limit:
            keys.clear()
        keys[ident] = (ref, token)
        return token

    def _token(self, key: Hashable | None) -> int | None:
        if key is None:
            return None
        tokens = self._tokens
        token = tokens.get(key)
        if token is None:
            token = _next_token()
            if len(tokens) >= self._limit:
                tokens.clear()
            tokens[key] = token
        return token

    def __len__(self) -> int:
        return len(self._keys)

    def lookup(self) -> Callable[[Any], int | None]:
        """This table's call as one plain function, for :meth:`Adapter.route_key_of`: an
        object already seen costs a dictionary lookup and a weak reference's check,
        without the frame of a method call (0.25 us against 0.57 through a
        ``route_key`` that calls the table, 0.45 for ``__call__`` alone, on one machine).
        Take it of the very table ``route_key`` reads: another table gives other tokens
        for the same keys."""
        keys, compute = self._keys, self.__call__

        def route_key(obj: Any) -> int | None:
            entry = keys.get(id(obj))
            if entry is not None and entry[0]() is obj:
                return entry[1]
            return compute(obj)

        return route_key


_next_token = itertools.count(1).__next__  # tokens of every IdentityKeys, never reused


def with_context(run: Callable[[Any, Context], Any], ctx: Context) -> Callable[[Any], Any]:
    """``run`` with its context bound: what an edge's ``bind`` returns where it has no
    faster call for that context."""

    def step(value: Any) -> Any:
        return run(value, ctx)

    return step


def passthrough(value: Any, ctx: Context) -> Any:
    """An edge's ``run`` for objects that already speak the protocol: nothing to do."""
    return value


@record
class Buffer:
    """A memory range used by an object, for zero-copy verification."""

    address: int
    size: int
    device: str = "cpu"
    # Keeps memory exported just for measuring alive, so that its address is not reused.
    keep: object = field(default=None, compare=False, repr=False)

    def overlaps(self, other: Buffer) -> bool:
        return (
            self.device == other.device
            and self.address < other.address + other.size
            and other.address < self.address + self.size
        )


def mixed_objects_error(
    what: str, present: Iterable[object], exc: Exception, fix: str
) -> ConversionError | None:
    """The error for Python objects that pyarrow could not read (``exc``) because they
    are of several types: ``what`` names the column ("pandas column 'a'"), ``present``
    holds its values that are not missing, ``fix`` says what to do ("for example
    ..."). None where they are of one type (then ``exc`` is some other failure)."""
    kinds = sorted({type(v).__name__ for v in present})
    if len(kinds) < 2:
        return None
    return ConversionError(
        f"pyarrow cannot read {what} (dtype object): it holds values of {len(kinds)} "
        f"Python types ({', '.join(kinds[:6])}), and an Arrow column holds one type "
        f"({type(exc).__name__}: {exc}). Make it one type first, {fix}"
    )


def bytes_inside(buffers: Iterable[Buffer], others: Iterable[Buffer]) -> int:
    """How many bytes of ``buffers`` lie inside ``others`` (on the same device). Each of
    ``buffers`` counts the bytes of it that lie in any of ``others``, once: ``others``
    are merged first, so that a buffer they repeat (chunks of a column over one buffer, a
    polars Enum's categories in each chunk) does not count twice."""
    merged: dict[str, list[list[int]]] = {}  # per device: disjoint [start, end) ranges
    for other in sorted(others, key=lambda o: o.address):
        if other.size <= 0:
            continue
        ranges = merged.setdefault(other.device, [])
        lo, hi = other.address, other.address + other.size
        if ranges and lo <= ranges[-1][1]:
            ranges[-1][1] = max(ranges[-1][1], hi)
        else:
            ranges.append([lo, hi])
    total = 0
    for buf in buffers:
        for lo, hi in merged.get(buf.device, ()):
            start, end = max(buf.address, lo), min(buf.address + buf.size, hi)
            if start < end:
                total += end - start
    return total


class Adapter:
    """Base class of library adapters; subclass it and register an instance.

    Class attributes: ``name`` (the target name users type), ``module`` (the
    ``sys.modules`` key, checked before any ``isinstance``), ``extra`` (the
    interchange-hub pip extra), ``requirement`` (what to pip install instead, for a
    third-party plugin's library), ``types`` (qualified type names for messages),
    ``devices`` (the device kinds its objects can live on, the default one first),
    ``aliases`` (other names ``to=`` accepts for it, like ``"pl"``) and ``readonly_note``
    (what the plan says when a result shares read-only memory with its source; empty
    means the generic note: writing raises ``ValueError``). ``writes_through``: the
    library's objects ignore read-only flags (torch), so a result sharing read-only memory
    of its source warns with :class:`~interchange_hub.errors.WriteThroughWarning`.
    ``source_only``: the library is read, never written (an engine's collections), and
    ``to=`` that library is refused with this hint of what to do instead. ``waypoint``:
    routes between two other libraries may pass through this one (numpy, between pandas
    and torch); a library that is not a waypoint is entered only as the target, so its
    edges' estimates, which may import it, run only for conversions to or from it.
    ``keyed_losses``: the losses its edges' estimates report depend only on what route
    keys hold (dtypes, names, which columns hold nulls), never on counts or sizes, so a
    lossy route through them is remembered like a lossless one and its warnings are
    repeated on every call (False, the default: such a route is planned on every call).
    ``arrow_backed``: the library has Arrow-backed columns beside its own (pandas'
    ``ArrowDtype``), which ``dtype="arrow"`` asks for; its steps into it read
    :attr:`Context.arrow` and mark the columns they make so with ``Flag.ARROW_BACKED``
    (False: ``dtype="arrow"`` is refused for it). ``arrow_string_type`` and
    ``arrow_binary_type``: the Arrow types the library keeps strings and binaries in as
    they are, where it rebuilds the plain ``string`` and ``binary`` ("": none, the
    default): polars holds ``string_view`` and ``binary_view`` (a ``string`` array is
    rebuilt as views, 16 bytes a row more), pandas' ``str`` dtype ``large_string``. A
    step of a conversion ending in it that encodes text anew (Python objects, numpy's
    fixed-width text) reads :attr:`Context.string_type` and :attr:`Context.binary_type`
    (:func:`~interchange_hub.arrowkit.text_type`) and makes those types, and estimates
    so: one encoding, where the plain types cost a second. ``dtype="arrow"`` keeps the
    plain types.
    """

    name: str = ""
    module: str = ""
    extra: str = ""
    requirement: str = ""
    types: Sequence[str] = ()
    devices: Sequence[str] = ("cpu",)
    aliases: Sequence[str] = ()
    readonly_note: str = ""
    writes_through: bool = False
    # Not a target: what to do instead (an engine's collections are made by the engine:
    # "dd.from_pandas(...)"). Such an adapter is left out of the "Known targets" lists.
    source_only: str = ""
    # Routes to other libraries may pass through this one (see the class docstring).
    waypoint: bool = False
    # Its edges' losses are fixed by route keys (see the class docstring).
    keyed_losses: bool = False
    # Its results can hold Arrow arrays as columns when ``dtype="arrow"`` asks (pandas'
    # ArrowDtype): its steps into it read Context.arrow and mark such columns
    # Flag.ARROW_BACKED (see the class docstring).
    arrow_backed: bool = False
    # The Arrow types it keeps strings and binaries in as they are ("": the plain types):
    # steps encoding text anew for a conversion into it make those (see the docstring).
    arrow_string_type: str = ""
    arrow_binary_type: str = ""

    def owns(self, obj: object) -> bool:
        """Whether ``obj`` belongs to this library; only called when ``module`` is loaded."""
        raise NotImplementedError

    def describe(self, obj: Any) -> DataInfo:
        """Describe ``obj`` cheaply, without converting it."""
        raise NotImplementedError

    def edges(self) -> Sequence[Edge]:
        """The conversions this adapter contributes."""
        return ()

    def buffers(self, obj: Any) -> list[Buffer]:
        """The memory ranges ``obj`` uses (data and validity buffers)."""
        return []

    def type_kinds(self) -> Mapping[type, Kind | None]:
        """Target types of this library and the kind each stands for (None: the kind
        follows the source). Only called when the library is imported."""
        return {}

    def is_one_shot(self, obj: object) -> bool:
        """Whether reading ``obj`` consumes it (reader-like streams)."""
        return False

    def route_key(self, obj: Any) -> Hashable | None:
        """A cheap key for repeated conversions, or None (the default: always plan).

        Two objects of one type with equal keys must get equal descriptions except for
        their sizes (rows, bytes, the first dimension), so that a route planned for one
        is exact for the other: the hub then reruns that route without planning again.
        A fact too costly for the key (whether a frame's columns lie side by side) may be
        left out if every bound run that depends on it checks it and raises
        :class:`RouteChanged` when it differs: the hub then plans that object afresh.
        Keys should be cheap to build and to hash (immutable data: :class:`IdentityKeys`).
        """
        return None

    def route_key_of(self, cls: type) -> Callable[[Any], Hashable | None]:
        """The function the hub's fast path calls for the route key of each object of
        exactly the type ``cls`` (asked once per kept call, not per conversion): by
        default :meth:`route_key` itself. An adapter may return a function made for
        ``cls``, its type tests and dispatch done once here, which must return what
        :meth:`route_key` returns for every object whose type is ``cls`` (the conformance
        kit compares them): a method call and a type test are 0.1-0.3 us of a
        conversion that costs a few."""
        return self.route_key

    def default_device(self) -> Device:
        """Where data goes when it must move here and no ``device=`` was given."""
        return Device.parse(self.devices[0])

    def record_event(self, obj: Any) -> tuple[int, object]:
        """Mark the work pending on ``obj``'s memory for another library to wait on.

        Returns ``(event handle, keep-alive)``: for CUDA a ``cudaEvent_t`` recorded on
        the library's current stream. ``(0, None)`` (the default) means the memory is
        safe to read now (CPU memory). Used when the hub exports Arrow device arrays.
        """
        return 0, None

    def on_device(self, device: Device) -> AbstractContextManager[object]:
        """A context in which ``device`` is the library's current device (the GPU whose
        streams events and exports refer to); the default does nothing."""
        from contextlib import nullcontext

        return nullcontext()

    def collection(self, obj: Any) -> Collection | None:
        """``obj`` as a partitioned collection on an engine (a Dask DataFrame, a Ray
        Dataset), or None (the default: ``obj`` is local data, converted by a route).

        The hub hands the conversion of a collection to it: each partition is converted
        where it lives, by the hub of that process (see :class:`Collection`).
        """
        return None

    def concat(self, parts: Sequence[Any]) -> Any:
        """One object of this library from ``parts`` (objects of this library, one per
        partition, in order): ``pl.concat``, ``pa.concat_tables``, ``np.concatenate``.

        Used by ``Partitioned.compute()`` and :func:`~interchange_hub.iter_batches`;
        ``parts`` has at least one element. Lossless; sharing the parts' memory where the
        library can (chunked results) is better than copying. Parts of another type
        raise :func:`mixed_parts`; tensor libraries check with :func:`check_tensor_parts`.
        """
        raise NotImplementedError(
            f"the {self.name} adapter cannot join partitions; take them one by one "
            "with .partitions()"
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


@record
class Options:
    """The options of one ``convert`` call, as given (picklable: they travel to workers)."""

    copy: bool | None = None
    device: str | Device | None = None
    strict: bool = False
    dtype: object = None
    as_dict: bool = False

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``convert`` and ``plan``."""
        return {
            "copy": self.copy,
            "device": self.device,
            "strict": self.strict,
            "dtype": self.dtype,
            "as_dict": self.as_dict,
        }


class Collection:
    """A partitioned collection (Dask, Ray) as its adapter hands it to the hub.

    An engine plugin's adapter returns one from :meth:`Adapter.collection`. The hub calls
    :meth:`convert` and :meth:`plan` instead of routing the object itself, and
    :meth:`batches` for :func:`~interchange_hub.iter_batches`. ``hub`` is the
    :class:`~interchange_hub.Hub` making the call: plan the partitions' metadata with it;
    the partitions themselves are converted on the workers by their own default hub
    (``interchange_hub.partitioned.run_partition``).
    """

    engine: str = ""  # "dask", "ray": what plans and messages call the engine

    def convert(self, hub: Any, to: object, options: Options) -> Any:
        """The lazy result: the engine's own collection where it holds the target's
        objects, else an :class:`~interchange_hub.Partitioned`."""
        raise NotImplementedError

    def plan(self, hub: Any, to: object, options: Options) -> Any:
        """A :class:`~interchange_hub.partitioned.PartitionedPlan` from the engine's
        metadata, before anything runs."""
        raise NotImplementedError

    def batches(self, batch_size: int | None) -> Iterator[Any]:
        """The data as local objects, in order, fetched to this process one at a time
        (of ``batch_size`` rows where the engine can cut them so; the hub rebatches)."""
        raise NotImplementedError


def _type_names(parts: Sequence[Any]) -> str:
    return ", ".join(
        dict.fromkeys(f"{type(p).__module__.split('.')[0]}.{type(p).__qualname__}" for p in parts)
    )


def mixed_parts(
    parts: Sequence[Any], why: str = "the results of one conversion share one type"
) -> ConversionError:
    """The error :meth:`Adapter.concat` raises for ``parts`` it cannot join (mixed types)."""
    return ConversionError(
        f"cannot join {len(parts)} partitions of mixed types ({_type_names(parts)}): {why}; "
        "take them one by one with .partitions()"
    )


def check_tensor_parts(parts: Sequence[Any], cls: type | tuple[type, ...], what: str) -> None:
    """Raise unless ``parts`` are all ``cls`` with at least one dimension (``what``: the
    tensors, for the message: "numpy arrays")."""
    if not all(isinstance(p, cls) for p in parts):
        raise mixed_parts(parts)
    if any(p.ndim == 0 for p in parts):
        raise ConversionError(
            f"cannot join {len(parts)} partitions of 0-d {what}: a 0-d result has no first "
            "axis to join along; take them one by one with .partitions()"
        )
