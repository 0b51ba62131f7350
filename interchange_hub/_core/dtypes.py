"""The hub's dtype vocabulary, in one place.

A dtype is a string: Arrow's type name as pyarrow prints it, except that floats are
``float16``/``float32``/``float64``. Here are the predicates on those names, the tables
that map them to the Arrow C format strings and to DLPack's ``(code, bits)`` pairs, and
the parsers that read parameters (unit, time zone, tensor shape) out of a name. Nothing
here imports a data library.
"""

from __future__ import annotations

import re
import sys
from functools import cache
from typing import Any, Final


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


# --- pyarrow's float names ------------------------------------------------------------------

#: pyarrow's names of the float types -> the hub's.
FLOAT_NAMES: Final = {"halffloat": "float16", "float": "float32", "double": "float64"}
#: The hub's float names -> pyarrow's.
ARROW_FLOAT_NAMES: Final = {hub: arrow for arrow, hub in FLOAT_NAMES.items()}


def hub_name(arrow_name: str) -> str:
    """The hub's dtype for pyarrow's type name (only the floats are spelled otherwise)."""
    return FLOAT_NAMES.get(arrow_name, arrow_name)


# --- the Arrow C data interface's format strings ----------------------------------------------

#: Hub dtype -> Arrow format string, for the fixed-width numeric types.
ARROW_FORMATS: Final[dict[str, str]] = {
    "int8": "c",
    "int16": "s",
    "int32": "i",
    "int64": "l",
    "uint8": "C",
    "uint16": "S",
    "uint32": "I",
    "uint64": "L",
    "float16": "e",
    "float32": "f",
    "float64": "g",
}
#: Arrow format string -> hub dtype.
ARROW_DTYPES: Final[dict[str, str]] = {fmt: dtype for dtype, fmt in ARROW_FORMATS.items()}

# --- DLPack's DLDataType codes ----------------------------------------------------------------

DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT, DL_BOOL = 0, 1, 2, 4, 6
#: Hub dtype -> DLPack ``(type code, bits)``.
DLPACK_DTYPES: Final[dict[str, tuple[int, int]]] = {
    **{f"int{bits}": (DL_INT, bits) for bits in (8, 16, 32, 64)},
    **{f"uint{bits}": (DL_UINT, bits) for bits in (8, 16, 32, 64)},
    **{f"float{bits}": (DL_FLOAT, bits) for bits in (16, 32, 64)},
    "bfloat16": (DL_BFLOAT, 16),
    "bool": (DL_BOOL, 8),
}
#: DLPack ``(type code, bits)`` -> hub dtype.
DLPACK_NAMES: Final = {code_bits: dtype for dtype, code_bits in DLPACK_DTYPES.items()}


def itemsize(dtype: str) -> int:
    """The size in bytes of one element of a fixed-width hub dtype (``"float64"`` -> 8)."""
    try:
        return DLPACK_DTYPES[dtype][1] // 8
    except KeyError:
        raise ValueError(
            f"unknown dtype {dtype!r}: use one of {', '.join(DLPACK_DTYPES)}"
        ) from None


def value_width(dtype: str) -> int:
    """:func:`itemsize` of a fixed-width number dtype, 0 for any other dtype (the alignment
    a library that loads such values as they are may need)."""
    found = DLPACK_DTYPES.get(dtype)
    return found[1] // 8 if found is not None else 0


# --- parameters inside a type name ------------------------------------------------------------


def unit_of(dtype: str) -> str:
    """The unit of a timestamp or duration: ``"timestamp[ms, tz=UTC]"`` -> ``"ms"``."""
    return dtype.split("[")[1].split(",")[0].rstrip("]")


def tz_of(dtype: str) -> str:
    """The time zone of a timestamp, ``""`` when it has none."""
    return dtype.split("tz=")[1].rstrip("]") if "tz=" in dtype else ""


def mentions_fixed_offset(dtype: str) -> bool:
    """Whether a type, or a type nested in it, is a timestamp with a fixed-offset zone
    (``+01:00``) rather than a named one."""
    return "tz=+" in dtype or "tz=-" in dtype


def has_negative_scale(dtype: str) -> bool:
    """Whether a type, or a type nested in it, is a decimal of a negative scale (Arrow
    allows it: 1E+5 as ``decimal128(5, -3)``), which polars and duckdb cannot read."""
    return _NEGATIVE_SCALE.search(dtype) is not None


_NEGATIVE_SCALE = re.compile(r"decimal(?:32|64|128|256)\(\d+, -\d+\)")


def is_string_dictionary(dtype: str) -> bool:
    """Whether a dictionary type's values are strings (``string`` or ``large_string``)."""
    return dtype.startswith(("dictionary<values=string", "dictionary<values=large_string"))


FIXED_SHAPE_TENSOR = "extension<arrow.fixed_shape_tensor"


def fixed_shape_of(dtype: str) -> tuple[str, tuple[int, ...]]:
    """The value dtype and the shape of one cell of a fixed-shape tensor column."""
    value = dtype.split("value_type=")[1].split(",")[0]
    inner = dtype.split("shape=[")[1].split("]")[0]
    return hub_name(value), tuple(int(x) for x in inner.split(",") if x)


def fixed_shape_name(value: str, shape: tuple[int, ...]) -> str:
    """The dtype of a fixed-shape tensor column of ``value`` cells of ``shape``."""
    arrow = ARROW_FLOAT_NAMES.get(value, value)
    return f"{FIXED_SHAPE_TENSOR}[value_type={arrow}, shape=[{','.join(map(str, shape))}]]>"


# --- dtype= ------------------------------------------------------------------------------------

#: dtype="arrow": a table's or column's result with Arrow-backed columns, where the target
#: library has other backends too (pandas' ArrowDtype); no tensor dtype by that name.
ARROW_DTYPE: Final = "arrow"

#: The dtypes ``dtype=`` may ask a tensor result for.
TENSOR_DTYPES: Final = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
)
_DTYPE_ALIASES: Final = {
    "float": "float64",
    "double": "float64",
    "half": "float16",
    "int": "int64",
    "long": "int64",
    "bool_": "bool",
    "f2": "float16",
    "f4": "float32",
    "f8": "float64",
    "i1": "int8",
    "i2": "int16",
    "i4": "int32",
    "i8": "int64",
    "u1": "uint8",
    "u2": "uint16",
    "u4": "uint32",
    "u8": "uint64",
    "?": "bool",
    "b1": "bool",
}
# The byte-order marks of numpy's type strings that name this machine's order ("|": none)
_NATIVE_ORDER: Final = ("<", "=", "|") if sys.byteorder == "little" else (">", "=", "|")


def tensor_dtype(value: object) -> str | None:
    """The hub's name for a ``dtype=`` value: a name (``"float32"``), a numpy dtype or
    scalar type, or a torch dtype; None when ``value`` names none of
    :data:`TENSOR_DTYPES` (the caller says so)."""
    if isinstance(value, str):
        name = value
    elif isinstance(value, type):
        name = value.__name__  # np.float32
    else:
        name = str(getattr(value, "name", value))  # np.dtype("float32"), torch.float32
    name = name.strip().lower().removeprefix("torch.").removeprefix("numpy.")
    if name[:1] in _NATIVE_ORDER and len(name) > 1:  # numpy's "<f4", "=i8", "|u1"
        name = name[1:]
    name = _DTYPE_ALIASES.get(name, name)
    return name if name in TENSOR_DTYPES else None


def common_dtype(dtypes: set[str]) -> str | None:
    """The dtype numpy's promotion gives numeric/bool columns of ``dtypes`` (what
    ``DataFrame.to_numpy()`` upcasts to), or None when one is not numeric."""
    if not dtypes or not all(is_numeric(d) or d == "bool" for d in dtypes):
        return None
    numeric = sorted(d for d in dtypes if d != "bool")
    if not numeric:
        return "bool"
    floats = [d for d in numeric if is_float(d)]
    ints = [d for d in numeric if is_integer(d)]
    bits = {d: int("".join(ch for ch in d if ch.isdigit())) for d in numeric}
    if floats:
        widest = max(bits[d] for d in floats)
        widest_int = max((bits[d] for d in ints), default=0)
        # numpy: int8/uint8 fit float16, 16-bit ints float32, wider ones float64.
        need = {0: 16, 8: 16, 16: 32}.get(widest_int, 64)
        return f"float{max(widest, need)}"
    signed = [bits[d] for d in ints if d.startswith("int")]
    unsigned = [bits[d] for d in ints if d.startswith("uint")]
    if not signed:
        return f"uint{max(unsigned)}"
    if not unsigned:
        return f"int{max(signed)}"
    need = max(max(signed), 2 * max(unsigned))
    return f"int{need}" if need <= 64 else "float64"


# --- numpy dtypes ------------------------------------------------------------------------------


@cache
def np_dtype_name(dtype: Any) -> str:
    """The hub's name for a numpy dtype (read from its attributes: numpy is not imported)."""
    kind = dtype.kind
    if not dtype.isnative:
        return f"numpy_non-native {dtype.str}"
    if kind in "iufc" and dtype.name not in ("float128", "longdouble", "complex256", "clongdouble"):
        return str(dtype.name)
    if kind == "b":
        return "bool"
    if kind in "Mm":
        unit = dtype.name.split("[")[-1].rstrip("]") if "[" in dtype.name else "generic"
        if unit in ("s", "ms", "us", "ns"):
            return f"{'timestamp' if kind == 'M' else 'duration'}[{unit}]"
        return f"numpy_{dtype.name}"  # units Arrow lacks (D, W, M, Y, h, m, generic)
    return {"U": "numpy_str", "S": "numpy_bytes", "O": "object"}.get(kind, f"numpy_{dtype}")
