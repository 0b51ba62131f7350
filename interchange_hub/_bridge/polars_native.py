"""polars' own constructors, called the way its Python ends them, for the hub's bound runs.

``pl.DataFrame(table)``, ``pl.Series(name, array)`` and ``pl.from_numpy(array)`` each end
in one native call (``PyDataFrame.from_arrow_record_batches``, ``PySeries.from_arrow``,
``PySeries.new_f64`` and its kin). What comes before it in Python (argument checks,
schema unpacking, a rechunk of what is one chunk already, numpy's requirements) costs
more than the call itself for small data: a 4-column float table of 1,000 rows imports
in 10.8 us, not 17.8; one float64 array of 1,000 in 0.6 us, not 4-7. A bound run has
checked those facts already (its plan, and the route key that finds it again), so it
makes the native call alone, for exactly the inputs where polars' Python would make that
same call with the same arguments, and hands everything else to polars' public calls.

Each maker is checked once, on small data, against what the public call makes (values,
dtypes, names; for numpy, that memory is shared): a polars whose private calls differ or
are missing gets the public calls back, unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit
from interchange_hub._c.ndarray import ndarray_address
from interchange_hub._core.deps import require

if TYPE_CHECKING:
    from collections.abc import Callable

# numpy's flags.num bits that polars' numpy import requires before its native call
# (np.require(values, ["A", "C"])), and which it otherwise copies to get: C-contiguous
# (1) and aligned (0x100). (The byte order, which it also requires native, is the
# dtype's: numpy's flags.num leaves NOTSWAPPED out.)
_NATIVE_ARRAY = 0x1 | 0x100

# The numpy dtypes whose arrays polars shares through a native constructor of its own
# (PySeries.new_<code>), and the third argument polars passes it: nan_to_null (False)
# for floats, strict (True) for integers.
_NUMPY_CONSTRUCTORS = {
    "int8": ("new_i8", True),
    "int16": ("new_i16", True),
    "int32": ("new_i32", True),
    "int64": ("new_i64", True),
    "uint8": ("new_u8", True),
    "uint16": ("new_u16", True),
    "uint32": ("new_u32", True),
    "uint64": ("new_u64", True),
    "float32": ("new_f32", False),
    "float64": ("new_f64", False),
}


def _pl() -> Any:
    return require("polars", "to make polars objects")


@lru_cache(maxsize=1)
def arrow_makers() -> tuple[Callable[[Any], Any], Callable[[str, Any], Any], Callable[[Any], Any]]:
    """(frame, series, capsule_series): ``pl.DataFrame(value)``, ``pl.Series(name,
    array)`` and ``pl.Series(value)``, each made by the native calls polars' Python ends
    in for

    - a pyarrow Table of one record batch and at least one column
      (``from_arrow_record_batches``), or another library's Arrow producer (see
      :func:`_read_as_capsule`: ``from_arrow_c_array`` or ``from_arrow_c_stream``, its
      struct unnested into columns, as ``pl.DataFrame`` reads them);
    - a non-empty pyarrow Array (``from_arrow``; an empty dictionary array is polars'
      special case);
    - another library's Arrow producer, as one Series (``from_arrow_c_array`` or
      ``from_arrow_c_stream``);

    anything else goes to ``pl.DataFrame`` / ``pl.Series``."""
    pl, pa = _pl(), arrowkit.pa_module()
    make_frame, make_series = pl.DataFrame, pl.Series
    table_cls, array_cls = pa.Table, pa.Array
    public = (make_frame, make_series, make_series)
    try:
        wrap_frame, wrap_series = pl.DataFrame._from_pydf, pl.Series._from_pyseries
        from_batches = type(pl.DataFrame()._df).from_arrow_record_batches
        native_series = type(pl.Series()._s)
        from_array = native_series.from_arrow
        from_c_array, from_c_stream = (
            native_series.from_arrow_c_array,
            native_series.from_arrow_c_stream,
        )
        probe = pa.table({"a": pa.array([1, None], pa.int64()), "b": ["x", "yz"]})
        made, public_made = (
            wrap_frame(from_batches(probe.to_batches(), probe.schema)),
            make_frame(probe),
        )
        strings = probe.column(1).chunk(0)
        column, public_column = wrap_series(from_array("b", strings)), make_series("b", strings)
        same = _same(made, public_made) and _same(column, public_column)
        # (a RecordBatch stands in for another library's producer: pl.DataFrame reads its
        # capsule, as it reads theirs)
        batch = probe.to_batches()[0]
        by_capsule = wrap_frame(from_c_array(batch).struct_unnest())
        same = same and _same(by_capsule, make_frame(batch))
        same = same and _same(wrap_series(from_c_array(strings)), make_series(strings))
    except Exception:  # noqa: BLE001 - another polars: its public calls
        same = False
    if not same:
        return public

    # How each class of another library's producer is read (asked of the class once:
    # from_c_array, from_c_stream, or None for pl.DataFrame/pl.Series themselves)
    ways: dict[type, Callable[[Any], Any] | None] = {}

    def way(cls: type) -> Callable[[Any], Any] | None:
        if cls in ways:
            return ways[cls]
        if len(ways) >= 64:  # (classes made on the fly: forgotten, not hoarded)
            ways.clear()
        read = None
        if _read_as_capsule(cls):  # (polars' own order: the array first)
            read = from_c_array if hasattr(cls, "__arrow_c_array__") else from_c_stream
            export = arrowkit.c_array_export(cls)
            if read is from_c_array and export is not None:
                read = _exported_reader(from_c_array, export)
        ways[cls] = read
        return read

    def frame(value: Any) -> Any:
        cls = type(value)
        if cls is table_cls:
            if value.num_columns:
                batches = value.to_batches()
                if len(batches) == 1:  # (pl.DataFrame would rechunk more: its own call)
                    return wrap_frame(from_batches(batches, value.schema))
            return make_frame(value)
        read = way(cls)
        return make_frame(value) if read is None else wrap_frame(read(value).struct_unnest())

    def series(name: str, array: Any) -> Any:
        if isinstance(array, array_cls) and len(array):
            return wrap_series(from_array(name, array))
        return make_series(name, array)

    def capsule_series(value: Any) -> Any:
        read = way(type(value))
        return make_series(value) if read is None else wrap_series(read(value))

    return frame, series, capsule_series


class _Exported:
    """A C array an adapter's registered export gave (:func:`arrowkit.register_c_array`),
    as the Arrow producer polars' ``from_arrow_c_array`` asks for it."""

    __slots__ = ("pair",)

    def __init__(self, pair: tuple[Any, Any]) -> None:
        self.pair = pair

    def __arrow_c_array__(self, requested_schema: object = None) -> tuple[Any, Any]:
        return self.pair


def _exported_reader(
    from_c_array: Callable[[Any], Any], export: Callable[[Any], tuple[Any, Any] | None]
) -> Callable[[Any], Any]:
    """``from_c_array(value)``, given the C array ``export`` makes of ``value`` (a nanoarrow
    Array of one chunk: 1.1 us less than its own method), or ``value`` where it makes none."""

    def read(value: Any) -> Any:
        pair = export(value)
        return from_c_array(value if pair is None else _Exported(pair))

    return read


# The libraries whose objects polars' constructors take by a branch of their own, before
# the Arrow capsules (and the standard library's mappings and sequences, below).
_OWN_BRANCHES = frozenset(("polars", "pandas", "numpy", "torch", "pyarrow", "builtins"))


def _read_as_capsule(cls: type) -> bool:
    """Whether ``pl.DataFrame``/``pl.Series`` read an object of ``cls`` through its Arrow
    capsule: it exports one (an array, or a stream; an unsized iterable without a stream
    polars reads row by row), and it is no mapping, sequence or object of the libraries
    polars reads by a branch of its own."""
    if cls.__module__.partition(".")[0] in _OWN_BRANCHES:
        return False
    if issubclass(cls, (Mapping, Sequence)):
        return False
    stream = hasattr(cls, "__arrow_c_stream__")
    if not stream and not hasattr(cls, "__len__") and hasattr(cls, "__iter__"):
        return False  # (polars reads such an iterable row by row)
    return stream or hasattr(cls, "__arrow_c_array__")


def _same(made: Any, public: Any) -> bool:
    """Whether two polars frames or series hold the same values, types and names."""
    if made.equals(public) is not True:
        return False
    if hasattr(made, "schema"):
        return bool(made.schema == public.schema)
    return bool(made.name == public.name and made.dtype == public.dtype)


@lru_cache(maxsize=16)
def _numpy_native(dtype: str) -> tuple[Callable[..., Any], bool, Any, Callable[[Any], Any]] | None:
    """(constructor, its third argument, numpy's own ``np.dtype(dtype)``, the Series
    wrapper): the native
    constructor polars' numpy import ends in for arrays of ``dtype`` (a numpy dtype's
    name), checked once against ``pl.Series`` (values, name, dtype, shared memory); None
    for a dtype without one, or a polars where it differs."""
    found = _NUMPY_CONSTRUCTORS.get(dtype)
    if found is None:
        return None
    name, third = found
    try:
        pl, np = _pl(), require("numpy")
        native, wrap = getattr(type(pl.Series()._s), name), pl.Series._from_pyseries
        probe = np.arange(3).astype(dtype)
        made, public = wrap(native("p", probe, third)), pl.Series("p", probe)
        same = made.equals(public) and made.name == public.name and made.dtype == public.dtype
        same = same and _shares(made, probe)
    except Exception:  # noqa: BLE001 - another polars: its public call
        return None
    return (native, third, np.dtype(dtype), wrap) if same else None


@lru_cache(maxsize=16)
def numpy_series(dtype: str) -> Callable[[str, Any], Any]:
    """``pl.Series(name, array)`` of a 1-D numpy array of ``dtype`` (a numpy dtype's
    name), by the native constructor polars' numpy import ends in (:func:`_numpy_native`),
    where the array is a plain ndarray of numpy's own ``np.dtype(dtype)`` (native byte
    order), C-contiguous and aligned, as polars requires (it would copy to get them);
    anything else, and a dtype without such a constructor, goes to ``pl.Series``."""
    pl = _pl()
    public = pl.Series
    found = _numpy_native(dtype)
    if found is None:
        return public  # type: ignore[no-any-return]
    native, third, plain, wrap = found
    ndarray = require("numpy").ndarray

    def series(label: str, array: Any) -> Any:
        if (
            type(array) is ndarray
            and array.dtype is plain  # (an equal dtype of its own, or swapped: polars)
            and array.flags.num & _NATIVE_ARRAY == _NATIVE_ARRAY
        ):
            return wrap(native(label, array, third))
        return public(label, array)

    return series


@lru_cache(maxsize=16)
def _numpy_frame_native(dtype: str) -> tuple[Callable[..., Any], bool, Any, Any, Any] | None:
    """(constructor, its third argument, numpy's own dtype, polars' native frame class,
    the DataFrame wrapper): :func:`_numpy_native` for ``dtype``, where a frame of its
    columns' native series (``PyDataFrame(columns)``) is also what ``pl.from_numpy``
    makes of a Fortran-ordered array (checked once, on one of two columns); else None."""
    found = _numpy_native(dtype)
    if found is None:
        return None
    native, third, plain, _ = found
    try:
        pl = _pl()
        make, wrap = type(pl.DataFrame()._df), pl.DataFrame._from_pydf
        probe = require("numpy").arange(6).astype(dtype).reshape(3, 2, order="F")
        made = wrap(make([native(f"column_{i}", probe[:, i], third) for i in range(2)]))
        public = pl.from_numpy(probe, orient="row")
        same = made.equals(public) and made.schema == public.schema
    except Exception:  # noqa: BLE001 - another polars: its public call
        return None
    return (native, third, plain, make, wrap) if same else None


# numpy's flags.num bits of a Fortran-ordered (2) and aligned (0x100) array, each of
# whose columns is then C-contiguous and aligned, as polars' native constructors require.
_FORTRAN_ARRAY = 0x2 | 0x100


def numpy_frame(dtype: str, width: int) -> Callable[[Any], Any]:
    """``pl.from_numpy(array, orient="row")`` of a Fortran-ordered 2-D numpy array of
    ``dtype`` and ``width`` columns (named ``column_0``, ``column_1``, ...): each column
    into the native constructor polars' numpy import ends in (:func:`_numpy_native`; each
    is C-contiguous: polars shares it), the columns into one frame, as ``from_numpy``
    makes it. Other arrays go to ``pl.from_numpy``."""
    pl = _pl()
    from_numpy = pl.from_numpy
    found = _numpy_frame_native(dtype)
    if found is None:
        return lambda value: from_numpy(value, orient="row")
    native, third, plain, make, wrap = found
    ndarray = require("numpy").ndarray
    names = [f"column_{i}" for i in range(width)]

    def frame(value: Any) -> Any:
        if (
            type(value) is ndarray
            and value.dtype is plain
            and value.ndim == 2
            and value.shape[1] == width
            and value.flags.num & _FORTRAN_ARRAY == _FORTRAN_ARRAY
        ):
            return wrap(make([native(n, value[:, i], third) for i, n in enumerate(names)]))
        return from_numpy(value, orient="row")

    return frame


def _shares(series: Any, array: Any) -> bool:
    """Whether ``series`` (of numbers, no nulls) holds ``array``'s memory."""
    return bool(ndarray_address(series.to_numpy()) == ndarray_address(array))
