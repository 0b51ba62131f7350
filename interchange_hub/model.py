"""Plain data that describes what is being converted and what each step does to it.

These are the values adapters and the router exchange: no data library is touched here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from interchange_hub.protocols import CPU, Device

INDEX = frozenset({"index"})  # Column.flags of a pandas index travelling as a column
NAN_IS_NULL = frozenset({"nan_is_null"})  # float nulls whose values are NaN already


class Kind(enum.StrEnum):
    """The shape of the data, which decides the kind of the result."""

    TABLE = "table"  # named columns of equal length
    COLUMN = "column"  # one named, typed sequence (possibly chunked)
    TENSOR = "tensor"  # an n-dimensional array of one dtype
    STREAM = "stream"  # a one-shot sequence of record batches


@dataclass(frozen=True, slots=True)
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
    # Adapter facts a step may need: "index" (a pandas index travelling as a column),
    # "nan_is_null" (float nulls that were NaN in the source), "rebuilt_on_export".
    flags: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
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

    @property
    def nbytes(self) -> int:
        """Estimated bytes of the data; -1 when unknown (a stream)."""
        if not self.known or any(c.nbytes < 0 for c in self.columns):
            return -1
        return sum(c.nbytes for c in self.columns)

    @property
    def data_columns(self) -> tuple[Column, ...]:
        """The columns that hold data (a pandas index travelling along is left out)."""
        return tuple(c for c in self.columns if "index" not in c.flags)

    @property
    def signature(self) -> tuple[object, ...]:
        """What decides the route: two inputs with one signature get the same route."""
        cols = tuple((c.dtype, c.nulls != 0, c.chunks > 1) for c in self.columns)
        # A tensor's rows never change the route; its other dimensions can.
        return (self.kind, cols, self.shape[1:], self.layout, self.device, self.readonly)

    def but(self, **changes: object) -> DataInfo:
        """A copy with some fields changed."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Copy:
    """One column copied by a step, and why."""

    column: str
    nbytes: int
    reason: str


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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


class Unroutable(Exception):
    """Raised by an edge's estimate when it cannot carry this data (internal to planning)."""


def is_integer(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def is_float(dtype: str) -> bool:
    return dtype in ("float16", "float32", "float64")


def is_numeric(dtype: str) -> bool:
    return is_integer(dtype) or is_float(dtype)


def is_string(dtype: str) -> bool:
    return dtype in ("string", "large_string", "string_view")


def is_temporal(dtype: str) -> bool:
    return dtype.startswith(("timestamp", "date", "time", "duration"))
