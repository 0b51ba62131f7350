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
from dataclasses import dataclass
from typing import Any

_STRING = r"(?<![a-z_])(?:large_)?string(?!_view)"
_BINARY = r"(?<![a-z_])(?:large_|fixed_size_)?binary(?:\[\d+\])?(?!_view)"


@dataclass(frozen=True, slots=True)
class Rule:
    """One rewrite: ``pattern`` (a regular expression over the type name) -> ``result``."""

    pattern: str
    result: str
    why: str
    top_level: bool = False  # applies to a column's own type only, not inside nested types

    def apply(self, dtype: str) -> str:
        if self.top_level:
            return re.sub(f"^(?:{self.pattern})$", self.result, dtype)
        return re.sub(self.pattern, self.result, dtype)


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
            r"dictionary<values=((?!(?:large_)?string)[^,]+), indices=\w+, ordered=\d>",
            r"\1",
            "polars Categoricals hold strings: other dictionaries are decoded to their values",
        ),
        Rule(_STRING, "string_view", "polars stores all strings as views"),
        Rule(_BINARY, "binary_view", "polars stores all binaries as views"),
        Rule(r"time32\[\w+\]|time64\[us\]", "time64[ns]", "polars times are nanoseconds"),
        Rule(r"timestamp\[s(?=[,\]])", "timestamp[ms", "polars has no second unit"),
        Rule(r"duration\[s\]", "duration[ms]", "polars has no second unit"),
        Rule(
            r"run_end_encoded<run_ends: \w+, values: (.+)>",
            r"\1",
            "polars has no run-end encoding: the runs are decoded",
            top_level=True,
        ),
        Rule(r"(?:large_)?list_view<", "large_list<", "polars has no list views: lists"),
        Rule(r"(?<![a-z_])list<", "large_list<", "polars lists have 64-bit offsets"),
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
            r"run_end_encoded<run_ends: \w+, values: (.+)>",
            r"\1",
            "pandas has no run-end encoding: the runs are decoded",
            top_level=True,
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
            r"dictionary<values=((?!(?:large_)?string)[^,]+), indices=\w+, ordered=(\d)>",
            r"dictionary<values=\1, indices=int8, ordered=\2>",
            "a Categorical of its values; codes take the narrowest width (int8 up to 127 "
            "categories)",
            top_level=True,
        ),
    ),
}

LOSSY: dict[str, tuple[tuple[str, str], ...]] = {
    "pyarrow": (),
    "nanoarrow": (),
    "polars": (
        ("timestamp with a fixed offset (+05:30)", "becomes UTC: polars has no offset zones"),
        ("(export) Int128 / UInt128", "decimal128(38, 0); 39-digit values fail"),
    ),
    "pandas": (),
    "numpy": (
        ("integers with nulls", "float64 with NaN"),
        ("floats with nulls", "NaN (null and NaN merge)"),
        ("timestamp with a zone", "naive datetime64 in UTC"),
        ("bool with nulls", "refused: no route"),
    ),
    "torch": (
        ("integers with nulls", "float64 with NaN"),
        ("floats with nulls", "NaN (null and NaN merge)"),
        ("strings, temporal, nested types", "refused: torch holds numbers only"),
    ),
}


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
}


def refused(library: str, dtype: str) -> str:
    """Why ``library`` refuses data of type ``dtype`` ("" when it takes it)."""
    for pattern, why in REFUSED.get(library, ()):
        if re.fullmatch(pattern, dtype):
            return why
    return ""


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
    type, so a struct array without null rows stands for a table."""
    return (
        "nanoarrow" in (first, second)
        and str(column.type).startswith("struct<")
        and column.null_count == 0
    )


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
        "One change of kind: nanoarrow has no table type, so a table is a struct array, and",
        "a struct *column* without null rows that passes through nanoarrow comes back as a",
        "table of its fields (a struct column with null rows stays a column).",
        "",
        "## Rules",
        "",
        "| library | Arrow type | comes back as | why |",
        "| --- | --- | --- | --- |",
    ]
    for library, rules in RULES.items():
        for rule in rules:
            where = " (column type only)" if rule.top_level else ""
            lines.append(f"| {library} | `{rule.pattern}`{where} | `{rule.result}` | {rule.why} |")
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
            cells.append("=" if out == dtype else f"`{out}`")
        lines.append(f"| {name}: `{dtype}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Lossy steps (warned; refused under strict=True)",
        "",
        "| library | data | what happens |",
        "| --- | --- | --- |",
    ]
    for library, items in LOSSY.items():
        for data, what in items:
            lines.append(f"| {library} | {data} | {what} |")
    lines += [
        "",
        "## Refused (NoRouteError before anything runs, with what to do)",
        "",
        "| library | Arrow type | why |",
        "| --- | --- | --- |",
    ]
    for library, items in REFUSED.items():
        for pattern, why in items:
            lines.append(f"| {library} | `{pattern}` | {why} |")
    return "\n".join(lines) + "\n"


def corpus_types() -> dict[str, str]:
    """The corpus types by name, as pyarrow prints them (needs pyarrow)."""
    from interchange_hub._tools.corpus import corpus

    return {name: str(arr.type) for name, arr in corpus(rows=4).items()}


if __name__ == "__main__":
    print(markdown(corpus_types()), end="")
