"""pyarrow's own construction of an Array over a numpy array's memory, called the way
``pa.array`` ends it, for the tensor bridge's numpy -> Arrow step.

``pa.array(arr)`` of a plain 1-D numpy array of numbers spends most of its 2.5 us in
Python and C++ that decide what to do with its argument (a pandas object? a mask? which
type, inferred from the dtype?) before it wraps the array's memory as the values buffer
of an Array without nulls (NaN stays a value). For an array of a dtype whose Arrow type
is known and memory that needs nothing done to it (contiguous, native byte order), the
same Array comes from ``pa.Array.from_buffers(type, n, [None,
pa.py_buffer(arr)], 0)``: 1.5 us, the same memory shared.

Each dtype's way is checked once, on a small array (writable and read-only), against what
``pa.array`` makes (type, values, nulls, offset, the values buffer's address and whether
it is mutable): a pyarrow that makes something else gets ``pa.array`` back for that
dtype. Anything but a plain ``np.ndarray`` (a masked array, whose mask ``pa.array``
reads as nulls; a subclass), and booleans (bit-packed), times (given units) and other
kinds, go to ``pa.array`` itself.
"""

from __future__ import annotations

from typing import Any

from interchange_hub._core.deps import require

# The numpy dtype kinds whose arrays pyarrow wraps as they are: signed and unsigned
# integers and floats.
_PLAIN_KINDS = frozenset("iuf")

# Each numpy dtype seen: pyarrow's type of its arrays where from_buffers gives what
# pa.array gives (checked once), else None. Keyed by the dtype object (a byte-swapped
# dtype is another key: not native, so None).
_TYPES: dict[Any, Any] = {}


def _type_of(dtype: Any) -> Any:
    """The pyarrow type ``array_of`` builds arrays of ``dtype`` with, or None (checked
    once per dtype, then remembered)."""
    typ = None
    if dtype.kind in _PLAIN_KINDS and dtype.isnative:
        try:
            typ = _checked(dtype)
        except Exception:  # noqa: BLE001 - a pyarrow that refuses it: pa.array decides
            typ = None
    if len(_TYPES) >= 64:  # (a bounded table: dtypes are few)
        _TYPES.clear()
    _TYPES[dtype] = typ
    return typ


def _checked(dtype: Any) -> Any:
    """pyarrow's type of ``dtype`` where the native way makes what ``pa.array`` makes of a
    small array of it, writable and read-only; else None."""
    np, pa = require("numpy"), require("pyarrow")
    typ = pa.from_numpy_dtype(dtype)
    sample = np.array([0, 1, 2, 3], dtype=dtype)[1:]  # (a view of another array's memory)
    frozen = np.array([4, 5, 6], dtype=dtype)
    frozen.flags.writeable = False
    for arr in (sample, frozen):
        made = pa.Array.from_buffers(typ, len(arr), [None, pa.py_buffer(arr)], 0)
        public = pa.array(arr)
        if not (made.type == public.type == typ and made.equals(public)):
            return None
        if (made.null_count, made.offset) != (public.null_count, public.offset):
            return None
        ours, theirs = made.buffers(), public.buffers()
        if len(ours) != len(theirs) or theirs[0] is not None:
            return None
        if not ours[1].address == theirs[1].address == arr.ctypes.data:
            return None
        if ours[1].is_mutable != theirs[1].is_mutable:
            return None
    return typ


def array_of(arr: Any) -> Any:
    """``pa.array(arr)`` for a 1-D numpy array, made from its buffer where its dtype's way
    was checked and the array is a plain, 1-D, C-contiguous ``np.ndarray`` of at least one
    element; else ``pa.array(arr)``."""
    ndarray, from_buffers, py_buffer, public = _CALLS or _calls()
    dtype = arr.dtype
    typ = _TYPES.get(dtype, _UNSEEN)
    if typ is _UNSEEN:
        typ = _type_of(dtype)
    # (misaligned memory too: pa.array wraps it as it is; anything but 1-D goes to
    # pa.array, which refuses it, never read as one flat array)
    if (
        typ is not None
        and type(arr) is ndarray
        and arr.size
        and arr.ndim == 1
        and arr.flags.c_contiguous
    ):
        return from_buffers(typ, arr.size, [None, py_buffer(arr)], 0)
    if dtype.kind in "SU" and embedded_nul(arr):
        return public(arr.tolist(), type=_text_type(dtype))
    return public(arr)


def embedded_nul(arr: Any) -> bool:
    """Whether a numpy text array (``S`` or ``U``) holds a NUL before another character
    in a value: numpy keeps it (only trailing NULs are padding), and ``pa.array`` cuts
    the value there (pyarrow 26: ``b"a\\x00b"`` becomes ``b"a"``), where its Python
    values (``tolist``) keep it. A scan of the array's bytes."""
    np = require("numpy")
    width = arr.dtype.itemsize // (4 if arr.dtype.kind == "U" else 1)
    if width < 2 or not arr.size:
        return False
    cells = (
        np.ascontiguousarray(arr).reshape(-1).view(np.uint32 if arr.dtype.kind == "U" else np.uint8)
    )
    zero = cells.reshape(-1, width) == 0
    return bool((zero[:, :-1] & ~zero[:, 1:]).any())


def _text_type(dtype: Any) -> Any:
    pa = require("pyarrow")
    return pa.string() if dtype.kind == "U" else pa.binary()


def wraps_buffer(dtype: Any) -> bool:
    """Whether :func:`array_of` wraps contiguous arrays of ``dtype`` as they are (checked
    once per dtype)."""
    typ = _TYPES.get(dtype, _UNSEEN)
    return (_type_of(dtype) if typ is _UNSEEN else typ) is not None


_UNSEEN: Any = object()

# (np.ndarray, pa.Array.from_buffers, pa.py_buffer, pa.array), once both are imported
_CALLS: tuple[Any, Any, Any, Any] | None = None


def _calls() -> tuple[Any, Any, Any, Any]:
    global _CALLS
    np, pa = require("numpy"), require("pyarrow")
    _CALLS = (np.ndarray, pa.Array.from_buffers, pa.py_buffer, pa.array)
    return _CALLS
