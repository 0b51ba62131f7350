"""Plain data that describes what is being converted and what each step does to it.

These are the values adapters and the router exchange: no data library is touched here.
"""

from __future__ import annotations

import enum
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from interchange_hub._core.deps import require
from interchange_hub._core.device import CPU, Device
from interchange_hub._core.records import record
from interchange_hub.errors import LossyConversionError, LossyConversionWarning, warn

if TYPE_CHECKING:
    from collections.abc import Sequence


class Flag(enum.StrEnum):
    """A fact about one column that a step may need (the members of ``Column.flags``).

    A ``StrEnum``: members compare and hash like their values, and a misspelt member is an
    ``AttributeError`` (or a mypy error) instead of a flag no step ever looks at.
    """

    INDEX = "index"  # an index (row labels) travelling along as a column
    NAN_IS_NULL = "nan_is_null"  # float nulls whose values are NaN already
    NAT_IS_NULL = "nat_is_null"  # times whose missing values are NaT (pandas' datetimes)
    SLICED = "sliced"  # a chunk starts at a non-zero offset into its buffers
    STRIDED = "strided"  # a numpy column that is a strided view: Arrow gathers it
    MASKED = "masked"  # data plus a byte-per-value mask (pandas' nullable dtypes)
    ONE_BLOCK = "one_block"  # all columns live in one 2-D block (to_numpy is a view)
    LAZYFRAME = "lazyframe"  # the source is a lazy query, collected when converted
    REBUILT_ON_EXPORT = "rebuilt_on_export"  # the library builds new buffers to export it
    BITMAP_REBUILT_ON_EXPORT = "bitmap_rebuilt_on_export"  # ... only its validity bitmap
    SPARSE = "sparse"  # a sparse tensor (no dense buffer to share)
    LAZY_BIT = "lazy_bit"  # a tensor with a pending conjugate or negative bit
    ADJACENT = "adjacent"  # a frame's columns lie side by side: one column-major block
    # a chunk's values are not aligned to their width (a decimal128 in an IPC body, whose
    # buffers are 8-byte aligned): a library that loads them as wide integers copies
    UNALIGNED = "unaligned"
    # a nested array with nulls (a struct's field, a list's values, a dictionary, a union's
    # member) reads its validity bitmap from inside a byte, as its parents select its rows:
    # its own offset, or a struct's moved into it. A library that keeps no offsets (arrow-rs)
    # rebuilds that bitmap.
    NESTED_BITMAP_OFFSET = "nested_bitmap_offset"
    # a nested array with nulls (not of bools) starts at a non-zero offset of its own (a
    # struct's field built from a slice, a list's values sliced; not the offset a sliced
    # struct passes down): polars keeps it, and realigns that bitmap on every export.
    NESTED_OWN_OFFSET = "nested_own_offset"
    # a struct with null rows over a field (at any depth of structs) with nulls of its own,
    # or of bools at an offset of its own: polars merges the struct's nulls into the field,
    # a new bitmap.
    STRUCT_NULLS_OVER_FIELDS = "struct_nulls_over_fields"
    # a table's column whose chunks end where another column's do not: a library that
    # aligns the chunks of a table (polars) slices them there.
    CHUNKS_SPLIT = "chunks_split"
    # a fixed-size list chunk with nulls whose values run on past its rows (a slice from 0
    # that keeps its child whole): polars checks the child's length against the bitmap's,
    # and fails.
    FIXED_SIZE_TAIL = "fixed_size_tail"
    # a result's column held as Arrow arrays in a library that has other backends too
    # (pandas' ArrowDtype), as ``dtype="arrow"`` asks: set only by the step making it
    ARROW_BACKED = "arrow_backed"
    # booleans held a bit a value (Arrow's, in a library that holds numpy's byte a value
    # too: pandas' bool[pyarrow]): a tensor of them is a copy
    BIT_PACKED = "bit_packed"
    # an ordered dictionary whose Arrow field metadata marks it an Enum of fixed categories,
    # in order (polars' own export of an Enum): polars reads it back as that Enum, and keeps
    # the order an ordered dictionary without it loses
    ENUM_METADATA = "enum_metadata"


NO_FLAGS: frozenset[Flag] = frozenset()  # a shared empty set, for the hot paths

ALIGNMENT = 64  # bytes: the most DataInfo.alignment reports (XLA's CPU buffers need 64)


def alignment_of(address: int) -> int:
    """The largest power of two up to :data:`ALIGNMENT` dividing ``address`` (for
    ``DataInfo.alignment``; an address of 0, empty data, counts as aligned)."""
    low = address & -address if address else ALIGNMENT
    return min(low, ALIGNMENT)


class Kind(enum.StrEnum):
    """The shape of the data, which decides the kind of the result."""

    TABLE = "table"  # named columns of equal length
    COLUMN = "column"  # one named, typed sequence (possibly chunked)
    TENSOR = "tensor"  # an n-dimensional array of one dtype
    STREAM = "stream"  # a one-shot sequence of record batches


@record
class Column:
    """One column of a table (or the single column of a column, or a tensor's data).

    ``dtype`` uses Arrow's type names as pyarrow prints them, except that floats are
    ``float16``/``float32``/``float64``. ``-1`` means unknown for sizes and counts.
    """

    name: str
    dtype: str
    nbytes: int = -1
    nulls: int = -1
    chunks: int = 1
    # Facts a step may need: members of Flag, the shared vocabulary. A plugin may add
    # flags of its own, as strings that start with its name and a colon ("duckdb:...").
    flags: frozenset[str] = frozenset()


@record
class DataInfo:
    """A cheap description of data, read without converting it."""

    kind: Kind
    columns: tuple[Column, ...] = ()
    rows: int = -1
    shape: tuple[int, ...] = ()  # tensors only
    layout: str = ""  # tensors: "C", "F", "strided" or "negative"
    device: Device = CPU
    readonly: bool = False
    known: bool = True  # False: a stream whose schema shows only once it is read
    # A tensor's or a one-chunk column's data address: the largest power of two up to
    # ALIGNMENT that divides it (64: aligned, as XLA/JAX needs to share memory); 0 where
    # nobody measured it (tables, streams, data a step has just made). A step that makes
    # new memory may state what it guarantees (a table made into a tensor: 64 from 64 KiB);
    # the router resets to 0 an alignment a copying step only carries over from its input.
    # A step whose choice reads the alignment of new memory sets Estimate.by_size.
    alignment: int = 0

    @property
    def nbytes(self) -> int:
        """Estimated bytes of the data; -1 when unknown (a stream)."""
        if not self.known or any(c.nbytes < 0 for c in self.columns):
            return -1
        return sum(c.nbytes for c in self.columns)

    @property
    def data_columns(self) -> tuple[Column, ...]:
        """The columns that hold data (an index column travelling along is left out)."""
        return tuple(c for c in self.columns if Flag.INDEX not in c.flags)

    @property
    def signature(self) -> tuple[object, ...]:
        """What decides the route: two inputs with one signature get the same route."""
        cols = tuple((c.dtype, c.nulls != 0, c.chunks > 1) for c in self.columns)
        # Repeated or empty column names rule some targets out (pandas, polars, duckdb).
        names = [c.name for c in self.columns]
        naming = (len(set(names)) == len(names), "" in names)
        # A tensor's rows never change the route; its other dimensions can.
        return (self.kind, cols, naming, self.shape[1:], self.layout, self.device, self.readonly)

    def but(self, **changes: object) -> DataInfo:
        """A copy with some fields changed."""
        return replace(self, **changes)  # type: ignore[arg-type]


@record
class Copy:
    """One column copied by a step, and why."""

    column: str
    nbytes: int
    reason: str


@record
class Scan:
    """One column a step reads in full (O(n)) without copying it, and why: what a
    library's own semantics force (pandas' NaN, its missing value, becomes an Arrow null
    only by reading every value). A zero-copy step that scans is still zero-copy."""

    column: str
    reason: str


@record
class Loss:
    """Information a step cannot keep for one column."""

    column: str
    source: str
    target: str
    lost: str

    def message(self) -> str:
        return f"{label(self.column)}: {self.source} -> {self.target}: {self.lost}"


def label(column: str) -> str:
    """How messages name a column (a tensor's or an unnamed array's data has no name)."""
    return f"column {column!r}" if column else "the data"


@record
class Estimate:
    """What one step does to the data: the data it produces, its copies and losses."""

    out: DataInfo
    copies: tuple[Copy, ...] = ()
    losses: tuple[Loss, ...] = ()
    why: str = ""
    # Every byte of the output is certainly new memory: copy=True is satisfied by it.
    copies_all: bool = False
    moves_device: bool = False
    shared_readonly: bool = False  # the output views read-only memory of the input
    scans: tuple[Scan, ...] = ()  # columns read in full, O(n), though not copied
    # The step's choice (share or copy, what it states of its output) holds for data of
    # about this size only: it reads a threshold (jax copies new memory of under 32,768
    # elements itself) or the alignment a step states of new memory (64 bytes from
    # 64 KiB). The router then keeps routes per power of two of the data's bytes, not
    # one per signature, so that a route chosen for small data is not replayed for large.
    by_size: bool = False


class Unroutable(Exception):
    """Raised by an edge's estimate when it cannot carry this data (internal to planning)."""


class RouteChanged(Exception):
    """Raised by a bound run (see ``Edge.bind``) when the object in hand differs from the
    one its route was planned for in a way the route key does not cover (a frame whose
    columns are no longer side by side, say): the hub then plans this object afresh,
    so that the plan of every conversion says what it does. Nothing must have been
    changed or handed out when it is raised."""


def report_losses(losses: Sequence[Loss], target: str, strict: bool) -> None:
    """Warn about each loss, or raise :class:`LossyConversionError` for all if ``strict``."""
    if not losses:
        return
    if strict:
        raise LossyConversionError(
            "strict=True, but this conversion would lose information: "
            + "; ".join(loss.message() for loss in losses)
            + ". Convert those columns first, or pass strict=False to accept it with a warning"
        )
    for loss in losses:
        warn(loss_warning(target, loss), LossyConversionWarning)


#: What a cast into a narrower float changes beyond the rounding that dtype= asks for.
FLOAT_OVERFLOW = "finite values beyond the narrower float overflow to inf"
FLOAT_UNDERFLOW = "nonzero values below the narrower float's smallest become 0"


def cast_loss(before: Any, after: Any) -> str:
    """What a cast of the CPU ndarray ``before`` into ``after`` (``astype``'s result, or
    another library's, as an ndarray) changed, as a :class:`Loss` says it ("" for
    nothing). Narrower floats round, as a dtype asked for does, but a finite value that
    overflows to inf is reported; an integer cast is checked by range (a sign's wrap casts
    back exactly: int8 -1 -> uint64 2**64-1 -> int8 -1); other casts, where numpy's rules
    do not promise them exact, by value (int64 and uint64 into float64 are "safe" to
    numpy, yet round above 2**53; a bool holds 0 and 1 alone)."""
    np = require("numpy")
    src, want = before.dtype, after.dtype
    if src == want:
        return ""
    if src.kind == "f" and want.kind == "f":
        if want.itemsize >= src.itemsize:
            return ""
        found = [FLOAT_OVERFLOW] if np.isinf(after).sum() > np.isinf(before).sum() else []
        if np.count_nonzero(after) < np.count_nonzero(before):  # (NaN counts as nonzero)
            found.append(FLOAT_UNDERFLOW)
        return "; ".join(found)
    wide_ints = src.kind in "iu" and want.kind == "f" and src.itemsize >= want.itemsize
    if np.can_cast(src, want, "safe") and not wide_ints:
        return ""
    if src.kind in "iub" and want.kind in "iu":
        held = np.iinfo(want)
        if before.size and (int(before.min()) < held.min or int(before.max()) > held.max):
            return f"values outside {want.name}'s range [{held.min}, {held.max}] wrap around"
        return ""
    if want.kind == "b":
        with np.errstate(invalid="ignore"):
            odd = (before != 0) & (before != 1)
        return "values other than 0 and 1 become True" if bool(odd.any()) else ""
    back = after.astype(src)
    if np.array_equal(back, before, equal_nan=src.kind in "fc"):
        return ""
    return "the cast changes values (overflow or rounding)"


def loss_warning(target: str, loss: Loss) -> str:
    """The text of the :class:`LossyConversionWarning` that ``loss`` gives, converting to
    ``target`` (a planned call and a remembered route write the same)."""
    return f"lossy conversion to {target}: {loss.message()}"


def move_estimate(info: DataInfo, place: Device, how: str) -> Estimate:
    """The estimate of a step that copies the data to another device with ``how``: every
    byte is copied (so ``copy=True`` is satisfied), and the plan shows a device move.
    Contiguous layouts are kept; anything else arrives C-contiguous."""
    reason = f"{how} copies {info.device} memory to {place}"
    layout = info.layout if info.layout in ("C", "F") else "C"
    out = info.but(device=place, layout=layout, readonly=False)
    copies = (Copy("", info.nbytes, reason),)
    return Estimate(out, copies, why=reason, copies_all=True, moves_device=True)


def nan_scans(info: DataInfo, call: str) -> tuple[Scan, ...]:
    """The columns whose NaN or NaT ``call`` makes nulls of (``Flag.NAN_IS_NULL``:
    pandas' numpy floats; ``Flag.NAT_IS_NULL``: its datetimes and durations): it reads
    every value, however the buffers are shared."""
    reads = f"is pandas' missing value: {call} reads every value to make nulls of them"
    scans = []
    for c in info.columns:
        for flag, missing in ((Flag.NAN_IS_NULL, "NaN"), (Flag.NAT_IS_NULL, "NaT")):
            if flag in c.flags:
                scans.append(Scan(c.name, f"{missing} {reads}"))
    return tuple(scans)
