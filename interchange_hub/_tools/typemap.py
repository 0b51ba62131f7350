"""How each library stores Arrow types: the type that comes back after a visit.

``RULES[library]`` rewrites an Arrow type, as pyarrow prints it, into the type the library
exports after importing it. Types no rule touches come back unchanged. Only value-keeping
rewrites are listed here; conversions that change values warn with
``LossyConversionWarning`` (and are listed in ``LOSSY``, for the document).

``docs/type-mapping.md`` is generated from this module (``python -m interchange_hub._tools.typemap``)
and the tests check both the document and real conversions against it.
"""

from __future__ import annotations

import re
from typing import Any

from interchange_hub._core.records import record

_STRING = r"(?<![a-z_])(?:large_)?string(?!_view)"
# Where a type is the type of values inside another (a field, an item, a dictionary's
# values, an extension type's storage): for numpy, Python objects.
_INSIDE = r"(?:(?<=: )|(?<=values=)|(?<=storage_type=))"


def _balanced(depth: int) -> str:
    """A pattern of text whose ``<`` and ``>`` pair up, nested ``depth`` levels deep."""
    inner = "[^<>]*"
    for _ in range(depth):
        inner = f"(?:[^<>]|<{inner}>)*"
    return inner


# What may stand between a type's < and its > (nested types, eight levels deep)
_BALANCED = _balanced(8)
# A nested type name (a fixed-size list's size included)
_NESTED = rf"\w+<{_BALANCED}>(?:\[\d+\])?"
# A run-end encoded type, its values' type in group 1
_RUNS = rf"run_end_encoded<run_ends: \w+, values: ({_BALANCED})>"
_BINARY = r"(?<![a-z_])(?:large_|fixed_size_)?binary(?:\[\d+\])?(?!_view)"


@record
class Rule:
    """One rewrite: ``pattern`` (a regular expression over the type name) -> ``result``."""

    pattern: str
    result: str
    why: str
    top_level: bool = False  # applies to a column's own type only, not inside nested types
    repeat: bool = False  # applied again until the type no longer changes

    def apply(self, dtype: str) -> str:
        pattern = f"^(?:{self.pattern})$" if self.top_level else self.pattern
        while True:
            out = re.sub(pattern, self.result, dtype)
            if not self.repeat or out == dtype:
                return out
            dtype = out


RULES: dict[str, tuple[Rule, ...]] = {
    "pyarrow": (),
    "nanoarrow": (
        Rule(r"string_view", "large_string", "nanoarrow cannot read view types safely"),
        Rule(r"binary_view", "large_binary", "nanoarrow cannot read view types safely"),
    ),
    "polars": (
        Rule(
            r"dictionary<values=(?:large_)?string(?:_view)?, indices=\w+, ordered=\d>",
            "dictionary<values=string_view, indices=uint32, ordered=0>",
            "a Categorical: polars' global string cache, uint32 indices",
        ),
        Rule(
            rf"dictionary<values=((?!(?:large_)?string)(?:[^,<>]+|{_NESTED})), indices=\w+,"
            r" ordered=\d>",
            r"\1",
            "polars Categoricals hold strings: other dictionaries are decoded to their values",
        ),
        Rule(_STRING, "string_view", "polars stores all strings as views"),
        Rule(_BINARY, "binary_view", "polars stores all binaries as views"),
        Rule(r"time32\[\w+\]|time64\[us\]", "time64[ns]", "polars times are nanoseconds"),
        Rule(r"timestamp\[s(?=[,\]])", "timestamp[ms", "polars has no second unit"),
        Rule(r"duration\[s\]", "duration[ms]", "polars has no second unit"),
        Rule(
            _RUNS,
            r"\1",
            "polars has no run-end encoding: the runs are decoded (also nested)",
            repeat=True,
        ),
        Rule(r"(?:large_)?list_view<", "large_list<", "polars has no list views: lists"),
        Rule(
            r"(?<![a-z_])(?:large_)?list<[^<>:]*: ",
            "large_list<item: ",
            "polars lists have 64-bit offsets, their items named item",
        ),
        Rule(
            r"fixed_size_list<(?!item: )[^<>:]*: ",
            "fixed_size_list<item: ",
            "polars names the items of its arrays item",
        ),
        Rule(r"date64\[ms\]", "date32[day]", "polars stores dates as 32-bit days (Date)"),
        Rule(
            r"decimal(?:32|64|256)\(",
            "decimal128(",
            "polars holds decimals as 128-bit integers (a decimal256 of more than 38 digits "
            "is refused)",
        ),
    ),
    "pandas": (
        Rule(
            _RUNS,
            r"\1",
            "pandas has no run-end encoding: the runs are decoded (also nested)",
            repeat=True,
        ),
        Rule(r"(?<![a-z_])list_view<", "list<", "pandas has no list views: lists"),
        Rule(r"large_list_view<", "large_list<", "pandas has no list views: lists"),
        Rule(
            r"(?:large_)?string|string_view",
            "large_string",
            "pandas' own string dtype (str) stores large_string",
            top_level=True,
        ),
        Rule(
            r"dictionary<values=(?:large_)?string(?:_view)?, indices=\w+, ordered=(\d)>",
            r"dictionary<values=large_string, indices=int8, ordered=\1>",
            "a Categorical: str categories; codes take the narrowest width (int8 up to "
            "127 categories)",
            top_level=True,
        ),
        Rule(
            r"dictionary<values=((?=struct<|map<|(?:large_)?list(?:_view)?<|fixed_size_list<)"
            rf"{_NESTED}), indices=\w+, ordered=\d>",
            r"\1",
            "pandas' categories must be hashable: a dictionary of structs, lists or maps "
            "(dicts and arrays in pandas) is decoded to its values",
            top_level=True,
        ),
        Rule(
            r"dictionary<values=((?!(?:large_)?string)[^,]+), indices=\w+, ordered=(\d)>",
            r"dictionary<values=\1, indices=int8, ordered=\2>",
            "a Categorical of its values; codes take the narrowest width (int8 up to 127 "
            "categories)",
            top_level=True,
        ),
    ),
    "duckdb": (
        Rule(
            r"(?<![a-z_])(?:large_string|string_view)",
            "string",
            "duckdb VARCHAR is exported as string (32-bit offsets)",
        ),
        Rule(
            r"(?<![a-z_])(?:large_binary|binary_view)",
            "binary",
            "duckdb BLOB is exported as binary (32-bit offsets)",
        ),
        Rule(
            r"decimal(?:32|64|256)\(",
            "decimal128(",
            "duckdb DECIMAL is exported as decimal128 (more than 38 digits is refused)",
        ),
        Rule(r"date64\[ms\]", "date32[day]", "duckdb DATE is 32-bit days"),
        Rule(r"time32\[\w+\]", "time64[us]", "duckdb TIME is microseconds"),
        Rule(
            r"timestamp\[(?:s|ms), tz=",
            "timestamp[us, tz=",
            "duckdb TIMESTAMP WITH TIME ZONE is microseconds",
        ),
        Rule(
            _RUNS,
            r"\1",
            "duckdb has no run-end encoding: the runs are decoded (also nested)",
            repeat=True,
        ),
        Rule(
            r"extension<arrow\.fixed_shape_tensor\[value_type=(.+), shape=\[([\d,]+),(\d+)\]\]>",
            r"extension<arrow.fixed_shape_tensor[value_type=fixed_size_list<: \1>[\3], shape=[\2]]>",
            "duckdb has no tensor type: a tensor column (without a permutation or dimension "
            "names, which warn) becomes nested fixed-size lists, the last dimension innermost",
            top_level=True,
            repeat=True,
        ),
        Rule(
            r"extension<arrow\.fixed_shape_tensor\[value_type=(.+), shape=\[(\d+)\]\]>",
            r"fixed_size_list<: \1>[\2]",
            "... and the first dimension outermost (a row holds one tensor: the same values "
            "in the same shape)",
            top_level=True,
        ),
        Rule(
            r"(?<![a-z_])(?:large_)?list(?:_view)?<[^<>:]*: ",
            "list<l: ",
            "duckdb LIST is exported as list (32-bit offsets), its items named l",
        ),
        Rule(
            r"fixed_size_list<[^<>:]*: ",
            "fixed_size_list<: ",
            "duckdb ARRAY is exported as fixed_size_list, its items unnamed",
        ),
    ),
    "arro3": (),
    "numpy": (
        Rule(
            r"date64\[ms\]",
            "timestamp[ms]",
            "numpy has no date type with milliseconds: datetime64[ms], read back as a "
            "timestamp (the same instants, midnight)",
            top_level=True,
        ),
        # The rest are for the Python objects numpy holds for any other type (and for the
        # values of nested types), whose type pyarrow infers when they are read back.
        Rule(
            _INSIDE + r"(?:u?int(?:8|16|32)|uint64)(?![\w\[])",
            "int64",
            "objects: Python ints are read back as int64 (uint64 where a value is above 2**63 - 1)",
        ),
        Rule(
            _INSIDE + r"(?:halffloat|float)(?![\w\[])",
            "double",
            "objects: Python floats are read back as double",
        ),
        Rule(_INSIDE + r"date64\[ms\]", "date32[day]", "objects: datetime.date is date32"),
        Rule(
            _INSIDE + r"(timestamp|duration)\[(?:s|ms)(?=[,\]])",
            r"\1[us",
            "objects: datetime.datetime and datetime.timedelta are microseconds (pandas' "
            "Timestamp and Timedelta, what nanoseconds become, keep nanoseconds)",
        ),
        Rule(
            r"extension<arrow\.opaque\[storage_type=(.+), type_name=[^,\]]*, "
            r"vendor_name=[^,\]]*\]>",
            r"\1",
            "objects: an opaque type's values are its storage's (the extension type is dropped)",
        ),
        Rule(r"extension<arrow\.bool8>", "bool", "objects: bool8 values are Python bools"),
        Rule(r"extension<arrow\.json>", "string", "objects: JSON text is Python str"),
        Rule(
            r"dictionary<values=(.+?), indices=\w+, ordered=\d>",
            r"\1",
            "objects: a dictionary's values (decoded)",
        ),
        Rule(
            r"run_end_encoded<run_ends: \w+, values: (.+)>",
            r"\1",
            "objects: the runs are decoded",
            top_level=True,
        ),
        Rule(r"(?:large_)?list_view<", "list<", "objects: Python lists are read back as list"),
        Rule(r"(?<![a-z_])large_list<", "list<", "objects: Python lists are read back as list"),
        Rule(
            r"fixed_size_list<([^<>]*(?:<[^<>]*>[^<>]*)*)>\[\d+\]",
            r"list<\1>",
            "objects: Python lists are read back as list",
            repeat=True,
        ),
        Rule(
            r"(?<![a-z_])list<[^<>:]*: ",
            "list<item: ",
            "objects: ... their items named item",
        ),
        Rule(
            r"(?<![a-z_])(?:large_string|string_view)",
            "string",
            "objects: Python str is read back as string",
        ),
        Rule(
            r"(?<![a-z_])(?:large_binary|binary_view|fixed_size_binary\[\d+\])",
            "binary",
            "objects: Python bytes are read back as binary",
        ),
        Rule(
            r"time32\[\w+\]|time64\[ns\]",
            "time64[us]",
            "objects: datetime.time holds microseconds (nanoseconds are cut: warned)",
        ),
        Rule(
            r"decimal(?:32|64|128|256)\(\d+, (\d+)\)",
            r"decimal128(38, \1)",
            "objects: Python's Decimal has no precision: read back with 38 digits (decimal256 "
            "with 76 where a value has more than 38)",
        ),
        Rule(
            r"extension<arrow\.fixed_shape_tensor\[value_type=([^,\]]+), shape=\[(\d+),(\d+)\]\]>",
            r"extension<arrow.fixed_shape_tensor[value_type=\1, shape=[\2,\3], permutation=[0,1]]>",
            "an N-D array comes back as a tensor column with its identity permutation written "
            "out (pyarrow's FixedShapeTensorArray.from_numpy_ndarray): the same type",
            top_level=True,
        ),
    ),
    "datasets": (),
    "xarray": (
        Rule(
            rf"dictionary<values=([^,<>]+|{_NESTED}), indices=\w+, ordered=\d>",
            r"\1",
            "xarray has no categorical type: a dictionary column is decoded to its values",
            top_level=True,
        ),
        Rule(
            _RUNS,
            r"\1",
            "xarray has no run-end encoding: the runs are decoded (also nested)",
            repeat=True,
        ),
        Rule(
            r"(?<=: )(large_)?list_view<",
            r"\1list<",
            "a struct's or list's values are Python objects in xarray: a list view inside "
            "comes back as a list",
        ),
    ),
    "jax": (
        Rule(
            r"extension<arrow\.fixed_shape_tensor\[value_type=([^,\]]+), shape=\[(\d+),(\d+)\]\]>",
            r"extension<arrow.fixed_shape_tensor[value_type=\1, shape=[\2,\3], permutation=[0,1]]>",
            "a tensor column made from an N-D jax Array has its identity permutation written "
            "out (pyarrow's FixedShapeTensorArray.from_numpy_ndarray): the same type",
            top_level=True,
        ),
    ),
}

# The Arrow types numpy holds in a dtype of its own (bool, numbers, datetime64, timedelta64):
# the fidelity tests round-trip these through numpy. Any other type becomes an array of
# Python objects, which pyarrow reads back by inference (the numpy rules say what it gives).
NUMPY_NATIVE = (
    r"bool|u?int(?:8|16|32|64)|halffloat|float|double|date32\[day\]|date64\[ms\]"
    r"|(?:timestamp|duration)\[(?:s|ms|us|ns)(?:, tz=[^\]]+)?\]"
)
# ... and those it holds as an N-D array of such a dtype (a fixed-shape tensor column).
NUMPY_OWN = NUMPY_NATIVE + r"|extension<arrow\.fixed_shape_tensor\[.+\]>"


@record
class Lossy:
    """One lossy step, for the document; where ``pattern`` is set, tests check that data
    of a matching type (full match) and ``when`` warns, or is refused if ``refused``."""

    data: str
    what: str
    pattern: str = ""
    when: str = ""  # "": always; "nulls": when the column has nulls; "INT64_MIN": holds it
    refused: bool = False  # NoRouteError in the plan instead of a warning

    def applies(self, dtype: str, nulls: bool, int64_min: bool) -> bool:
        if not self.pattern or not re.fullmatch(self.pattern, dtype):
            return False
        return {"": True, "nulls": nulls, "INT64_MIN": int64_min}[self.when]


_NUMBERS = r"u?int(?:8|16|32|64)"
_FLOATS = r"halffloat|float|double"

LOSSY: dict[str, tuple[Lossy, ...]] = {
    "pyarrow": (),
    "nanoarrow": (),
    "polars": (
        Lossy("timestamp with a fixed offset (+05:30)", "becomes UTC: polars has no offset zones"),
        Lossy("(export) Int128 / UInt128", "decimal128(38, 0); 39-digit values fail"),
        # (no corpus type is a uuid: tests/test_errors.py checks it)
        Lossy(
            "arrow.uuid, also inside a struct, list or map",
            "binary_view (Binary): the extension type is dropped (the 16 bytes are kept)",
        ),
        # (no corpus type is ordered: tests/test_pandas_categories.py checks it)
        Lossy(
            "string dictionary marked ordered (ordered=1), not marked a polars Enum",
            "a Categorical, which sorts and compares by its strings: the categories' order "
            "is dropped (a field whose metadata marks it a polars Enum comes back as that Enum)",
        ),
    ),
    "pandas": (),
    "duckdb": (
        Lossy(
            "float16",
            "widened to float32: duckdb has no half-precision float (values kept)",
            r"halffloat",
        ),
        Lossy(
            "fixed_size_binary[n]",
            "binary (BLOB): the fixed width is dropped",
            r"fixed_size_binary\[\d+\]",
        ),
        Lossy(
            "duration",
            "an INTERVAL, read back as month_day_nano_interval; nanoseconds are truncated "
            "to microseconds",
            r"duration\[\w+\]",
        ),
        Lossy(
            "month_day_nano_interval",
            "nanoseconds are truncated to microseconds",
            r"month_day_nano_interval",
        ),
        Lossy(
            "dictionary",
            "plain values: the categories and their order are dropped",
            r"dictionary<.+>",
        ),
        Lossy(
            "timestamp with a fixed offset (+05:30)",
            "UTC: duckdb time zones are names (the instants are kept)",
            r"timestamp\[\w+, tz=[+-]\d\d:\d\d\]",
        ),
        Lossy(
            "timestamp with a zone other than the first named zone of the table",
            "the zone of the connection (a duckdb connection has one TimeZone; the instants "
            "are kept)",
        ),
        Lossy(
            "Arrow extension types other than fixed_shape_tensor (uuid, json, bool8, opaque)",
            "their storage type: uuid comes back as 36-character strings, json as string",
            r"extension<(?!arrow\.fixed_shape_tensor\[).+>",
        ),
        Lossy("fixed_shape_tensor with a permutation or dimension names", "those are dropped"),
        Lossy(
            "any of the above inside a list, struct, map or union",
            "the same, warned for the column",
            r".+(?:duration\[|month_day_nano_interval|dictionary<|fixed_size_binary\[|extension<"
            r"|tz=[+-]\d\d:\d\d\]).*",
        ),
        Lossy("empty or repeated column names", "renamed by duckdb (v0, a_1)"),
        Lossy(
            "(export) UUID, JSON, BIT, TIME WITH TIME ZONE, HUGEINT, BIGNUM",
            "string, string, duckdb's bytes, time64[us] without the offset, decimal128(38, 0) "
            "(39-digit values fail), duckdb's encoding",
        ),
    ),
    "arro3": (
        # (no corpus type is ordered: the arro3 plugin's tests check it)
        Lossy(
            "dictionary marked ordered (ordered=1)",
            "ordered=0: arro3 keeps no ordered flag (the categories stay in their order)",
        ),
    ),
    "numpy": (
        Lossy("integers with nulls", "float64 with NaN", _NUMBERS, "nulls"),
        Lossy("floats with nulls", "NaN (null and NaN merge)", _FLOATS, "nulls"),
        Lossy("timestamp with a zone", "naive datetime64 in UTC", r"timestamp\[\w+, tz=.+\]"),
        Lossy(
            "timestamp or duration holding INT64_MIN",
            "NaT, the missing value: becomes null",
            r"(?:timestamp|duration)\[.+\]",
            "INT64_MIN",
        ),
        Lossy("bool with nulls", "refused: no route", "bool", "nulls", refused=True),
        Lossy(
            "fixed_shape_tensor with null rows",
            "refused: an n-D tensor cannot hold them (drop or fill them first)",
            r"extension<arrow\.fixed_shape_tensor\[.+\]>",
            "nulls",
            refused=True,
        ),
        Lossy(
            "a union (also inside another type)",
            "Python objects of its members' types: the union type is dropped (pyarrow reads "
            "no union back from Python objects)",
            r".*union<.+",
        ),
        Lossy(
            "a map inside another type",
            "lists of (key, value) tuples, which pyarrow cannot read back as a map there",
            r".+map<.+",
        ),
        Lossy(
            "time64[ns] holding nanoseconds (also inside another type)",
            "cut to microseconds: Python's datetime.time holds microseconds",
        ),
        Lossy(
            "(back) pandas Timestamp or Timedelta objects with nanoseconds beyond 1677-2262",
            "read as microseconds: the nanoseconds are cut",
        ),
    ),
    "torch": (
        Lossy("integers with nulls", "float64 with NaN", _NUMBERS, "nulls"),
        Lossy("floats with nulls", "NaN (null and NaN merge)", _FLOATS, "nulls"),
        Lossy(
            "timestamp, duration, date32",
            "int64 ticks (torch has no time type): a zone is dropped, a null becomes -2**63",
            r"(?:timestamp|duration)\[.+\]|date32\[day\]",
        ),
        Lossy("bool with nulls", "refused: fill the nulls first", "bool", "nulls", refused=True),
        Lossy(
            "fixed_shape_tensor with null rows, or in a table",
            "refused: an N-D tensor has no null rows; a tensor column converts on its own",
            r"extension<arrow\.fixed_shape_tensor\[.+\]>",
            "nulls",
            refused=True,
        ),
        Lossy(
            "strings, date64, times, decimals, nested and other types",
            "refused: torch holds numbers only (see the refusals)",
        ),
    ),
    "datasets": (
        Lossy(
            "dictionary (also nested)",
            "plain values: datasets stores no dictionary encoding (the categories and their "
            "order are dropped)",
            r".*dictionary<.+",
        ),
        Lossy(
            "(export) features with no Arrow equivalent (ClassLabel, Image, Audio, "
            "Array2D-5D, ...)",
            "the values as datasets stores them (class ids, the encoded bytes and path, nested "
            "lists); the label names, the decoding or the fixed shape are dropped",
        ),
    ),
    "xarray": (
        Lossy("integers with nulls", "float64 with NaN", _NUMBERS, "nulls"),
        Lossy("floats with nulls", "NaN (null and NaN merge)", _FLOATS, "nulls"),
        Lossy(
            "dictionary or run-end encoded numbers with nulls",
            "decoded, then as above",
            r"(?:dictionary<values=|run_end_encoded<.+values: )(?:u?int\d+|halffloat|float"
            r"|double)\b.*",
            "nulls",
        ),
        Lossy(
            "timestamp with a zone",
            "naive datetime64 (the UTC instants; a column without nulls may take the DLPack "
            "route, as int64 ticks)",
            r"timestamp\[\w+, tz=.+\]",
        ),
        Lossy(
            "timestamp or duration holding INT64_MIN",
            "NaT, the missing value: becomes null",
            r"(?:timestamp|duration)\[.+\]",
            "INT64_MIN",
        ),
        Lossy(
            "time64[ns] (also nested)",
            "Python's datetime.time holds microseconds: nanoseconds are cut",
            r".*time64\[ns\].*",
        ),
    ),
    "jax": (
        Lossy("integers with nulls", "float64 with NaN", _NUMBERS, "nulls"),
        Lossy("floats with nulls", "NaN (null and NaN merge)", _FLOATS, "nulls"),
        Lossy(
            "timestamp, duration, date32",
            "int64 ticks (jax has no time type): a zone is dropped, a null becomes -2**63",
            r"(?:timestamp|duration)\[.+\]|date32\[day\]",
        ),
        Lossy("bool with nulls", "refused: fill the nulls first", "bool", "nulls", refused=True),
        Lossy(
            "fixed_shape_tensor with null rows, or in a table",
            "refused: an N-D jax Array has no null rows; a tensor column converts on its own",
            r"extension<arrow\.fixed_shape_tensor\[.+\]>",
            "nulls",
            refused=True,
        ),
        Lossy(
            "64-bit data with jax_enable_x64 off (jax's default)",
            "32 bits, a copy: int64 -> int32 wraps around, float64 -> float32 rounds",
        ),
    ),
}


_NO_FEATURE = "datasets has no feature type for "  # + what, then what to do

# Types a library cannot hold at all: the plan refuses them (NoRouteError) with the reason
# and what to do. library -> ((Arrow type pattern, full match), why).
REFUSED: dict[str, tuple[tuple[str, str], ...]] = {
    "pyarrow": (),
    "nanoarrow": (),
    "polars": (
        (
            r"decimal256\((?:39|[4-7]\d), \d+\)",
            "polars holds decimals as 128-bit integers: more than 38 digits do not fit",
        ),
        (r"month_day_nano_interval", "polars has no interval type: cast to a duration or a struct"),
        (r"(?:sparse|dense)_union<.*", "polars has no union type: one column per member type"),
    ),
    "pandas": (),
    "duckdb": (
        (
            r"decimal256\((?:39|[4-7]\d), \d+\)",
            "duckdb decimals hold at most 38 digits: cast to decimal128(38, s) or float64",
        ),
        (
            r".*dense_union<.*",
            "duckdb cannot read dense unions: cast to a sparse union or split the column",
        ),
        (
            r".+(?:halffloat|decimal256\().*",
            (
                "duckdb cannot read float16 or decimal256 inside nested types: cast the values "
                "to float32 or decimal128"
            ),
        ),
    ),
    "arro3": (),
    "datasets": (
        (r".*map<.*", _NO_FEATURE + "maps: cast the column to a list of structs first"),
        (
            r".*(?:sparse|dense)_union<.*",
            _NO_FEATURE + "unions: split the column into one column per type first",
        ),
        (
            r".*run_end_encoded<.*",
            _NO_FEATURE + "run-end encoding: decode it first (cast it to its value type)",
        ),
        (r".*list_view<.*", _NO_FEATURE + "list views: cast the column to a list first"),
        (
            r".*_interval.*",
            _NO_FEATURE + "intervals: cast the column to a duration or a struct first",
        ),
        (r".*decimal32\(.*", _NO_FEATURE + "32-bit decimals: cast the column to decimal128 first"),
        (r".*decimal64\(.*", _NO_FEATURE + "64-bit decimals: cast the column to decimal128 first"),
        (
            r".*extension<(?!datasets\.).*",
            _NO_FEATURE + "Arrow extension types: convert the column to its storage type first",
        ),
    ),
    "xarray": (
        (
            r".*(?:sparse|dense)_union<.*",
            "xarray holds no union type: split the column into one column per member type first",
        ),
    ),
    "torch": (
        (
            (
                r"(?!(?:bool|u?int(?:8|16|32|64)|halffloat|float|double|date32\[day\]"
                r"|(?:timestamp|duration)\[.+\]|extension<arrow\.fixed_shape_tensor\[.+\]>)$).+"
            ),
            (
                "torch holds numbers only (bool, integers, floats; times as int64 ticks): cast "
                "the column to a number type first, or convert the data to a table library"
            ),
        ),
    ),
    "jax": (
        (
            r"(?:dictionary|run_end_encoded)<.+",
            "jax holds plain numbers only: decode the column first (cast it to its value type)",
        ),
        (
            (
                r"(?!(?:bool|u?int(?:8|16|32|64)|halffloat|float|double|date32\[day\]"
                r"|(?:timestamp|duration)\[.+\]|extension<arrow\.fixed_shape_tensor\[.+\]>)$).+"
            ),
            (
                "jax holds numbers only (bool, integers, floats; times as int64 ticks): cast "
                "the column to a number type first, or convert the data to a table library"
            ),
        ),
    ),
}


def refused(library: str, dtype: str) -> str:
    """Why ``library`` refuses data of type ``dtype`` ("" when it takes it)."""
    for pattern, why in REFUSED.get(library, ()):
        if re.fullmatch(pattern, dtype):
            return why
    return ""


def warned(library: str, dtype: str, nulls: bool, int64_min: bool) -> list[Lossy]:
    """The lossy steps of ``LOSSY[library]`` that data of type ``dtype`` takes (those with
    a pattern: the others are described, not predicted)."""
    return [
        item
        for item in LOSSY.get(library, ())
        if not item.refused and item.applies(dtype, nulls, int64_min)
    ]


def visit(library: str, dtype: str) -> str:
    """The Arrow type that comes back from ``library`` for data of type ``dtype``."""
    for rule in RULES[library]:
        dtype = rule.apply(dtype)
    return dtype


def round_trip(first: str, second: str, dtype: str) -> str:
    """The type after ``first -> second -> first`` (the data made in ``first`` from Arrow)."""
    return visit(first, visit(second, visit(first, dtype)))


def struct_becomes_table(first: str, second: str, column: Any) -> bool:
    """Whether a struct column comes back as a table of its fields: nanoarrow has no table
    type, so a struct array without null rows stands for a table. (duckdb holds tables
    only: a column is a table of one column there, before nanoarrow sees it.)"""
    return (
        "nanoarrow" in (first, second)
        and first != "duckdb"
        and str(column.type).startswith("struct<")
        and column.null_count == 0
    )


def _cell(text: str) -> str:
    """``text`` for a Markdown table cell (a ``|`` would end the cell, even in code)."""
    return text.replace("|", "\\|")


def markdown(corpus: dict[str, str]) -> str:
    """The type-mapping document: rules, then what each corpus type becomes."""
    libraries = list(RULES)
    lines = [
        "# Type mapping",
        "",
        "<!-- Generated by `python -m interchange_hub._tools.typemap`; tests/test_fidelity.py",
        "     checks this file and real conversions against interchange_hub/_tools/typemap.py. -->",
        "",
        "Each library stores some Arrow types its own way. Values are kept; the Arrow type",
        "that comes back after a visit is the one below (`=`: unchanged). A round trip",
        "A -> B -> A gives `visit(A, visit(B, visit(A, type)))`. Anything that changes",
        "values warns with `LossyConversionWarning` naming the column, both types and what",
        "is lost, and `strict=True` refuses it (last section).",
        "",
        "The pandas rules are those of its default, numpy-backed columns. With",
        '`dtype="arrow"` a pandas result holds `pd.ArrowDtype` columns instead, which keep',
        "every Arrow type as it is (zero-copy, nothing lost), except views and list views,",
        "cast to large_string, large_binary and lists, and run-end encoding, decoded: pandas",
        "3.1 cannot filter or print them.",
        "",
        "One change of kind: nanoarrow has no table type, so a table is a struct array, and",
        "a struct *column* without null rows that passes through nanoarrow comes back as a",
        "table of its fields (a struct column with null rows stays a column).",
        "",
        "duckdb, arro3, datasets, xarray and jax are plugins (`plugins/interchange-hub-<name>`);",
        "tests/test_fidelity_plugins.py checks them the same way (xarray and jax: pyarrow,",
        "polars and pandas -> X -> back). xarray and jax take a fixed_shape_tensor column",
        "without nulls as an N-D array, one row per cell: xarray gives it back as its long",
        "table (the values, then the positions along dim_0, dim_1, ...), jax as the tensor",
        "column. jax holds a table as a 2-D array, whose columns come back named by position.",
        "numpy holds a column of bool, numbers, datetime64 or timedelta64 in a dtype of",
        "its own, a fixed_shape_tensor column as an N-D array (`refused`: not at all). Any",
        "other column is an array of Python objects (`objects`), whose type pyarrow infers",
        "when it is read back: the rules for numpy say which type that gives (an empty",
        "array, or one of nulls only, gives `null`, as does a field or a list's items null",
        "in every row: there is no value to infer a type from).",
        "",
        "## Rules",
        "",
        "| library | Arrow type | comes back as | why |",
        "| --- | --- | --- | --- |",
    ]
    for library, rules in RULES.items():
        for rule in rules:
            where = " (column type only)" if rule.top_level else ""
            pattern, result = _cell(rule.pattern), _cell(rule.result)
            lines.append(f"| {library} | `{pattern}`{where} | `{result}` | {rule.why} |")
    lines += [
        "",
        "## The type corpus after a visit",
        "",
        "| type | " + " | ".join(libraries) + " |",
        "| --- |" + " --- |" * len(libraries),
    ]
    for name, dtype in corpus.items():
        cells = []
        for library in libraries:
            out = visit(library, dtype)
            if refused(library, dtype):
                cells.append("refused")
            elif warned(library, dtype, nulls=False, int64_min=False):
                cells.append("warns")
            elif library == "numpy" and not re.fullmatch(NUMPY_OWN, dtype):
                cells.append("objects" if out == dtype else f"objects: `{out}`")
            else:
                cells.append("=" if out == dtype else f"`{out}`")
        lines.append(f"| {name}: `{dtype}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Lossy steps (warned; refused under strict=True)",
        "",
        "| library | data | what happens |",
        "| --- | --- | --- |",
    ]
    for library, steps in LOSSY.items():
        for item in steps:
            lines.append(f"| {library} | {item.data} | {item.what} |")
    lines += [
        "",
        "## Refused (NoRouteError before anything runs, with what to do)",
        "",
        "| library | Arrow type | why |",
        "| --- | --- | --- |",
    ]
    for library, items in REFUSED.items():
        for pattern, why in items:
            lines.append(f"| {library} | `{_cell(pattern)}` | {why} |")
    return "\n".join(lines) + "\n"


def corpus_types() -> dict[str, str]:
    """The corpus types by name, as pyarrow prints them (needs pyarrow)."""
    from interchange_hub._tools.corpus import corpus

    return {name: str(arr.type) for name, arr in corpus(rows=4).items()}


if __name__ == "__main__":
    print(markdown(corpus_types()), end="")
