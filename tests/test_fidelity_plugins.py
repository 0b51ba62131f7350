"""Type fidelity with the plugins: every corpus type survives A -> B -> A for each ordered
pair of pyarrow, nanoarrow, polars, pandas, duckdb and arro3 with a plugin in it (the pairs
of the built-in libraries: tests/test_fidelity.py), up to the documented type mapping; or
it warns where the document says so, naming the column, and strict=True refuses it; or the
plan refuses it where the document says so."""

from __future__ import annotations

import re
import warnings
from typing import Any

import interchange_hub_arro3
import interchange_hub_duckdb
import numpy as np
import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub._tools import typemap
from tests.test_fidelity import NAMES, cases, column_of, values

CORE = ["pyarrow", "nanoarrow", "polars", "pandas"]
PLUGINS = ["duckdb", "arro3"]
LIBS = CORE + PLUGINS
PAIRS = [(a, b) for a in LIBS for b in LIBS if a in PLUGINS or b in PLUGINS]
HUB = ih.Hub(
    autoload=False, plugins=[*ih.builtin_plugins(), interchange_hub_duckdb, interchange_hub_arro3]
)


def documented_losses(first: str, second: str, dtype: str, nulls: bool) -> list[str]:
    """The library of each lossy step of the document that first -> second -> first takes
    (the type entering each library as the mapping has it)."""
    one = typemap.visit(first, dtype)
    two = typemap.visit(second, one)
    steps = [(first, dtype), (second, one), (first, two)]
    return [lib for lib, t in steps for _ in typemap.warned(lib, t, nulls, int64_min=False)]


def refusal(first: str, second: str, dtype: str) -> str:
    """Why the document says first -> second -> first is refused ("" when it is not)."""
    one = typemap.visit(first, dtype)
    two = typemap.visit(second, one)
    return (
        typemap.refused(first, dtype) or typemap.refused(second, one) or typemap.refused(first, two)
    )


class Refused(Exception):
    """A step refused by its plan: the library and the types of the data it was given."""

    def __init__(self, library: str, types: list[str], error: ih.NoRouteError) -> None:
        super().__init__(f"{library}: {error}")
        self.library, self.types, self.error = library, types, error


def convert_all(data: Any, libs: list[str], strict: bool = False) -> tuple[Any, list[str]]:
    """``data`` converted to each library in turn, and the lossy warnings on the way."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for lib in libs:
            try:
                data = HUB.convert(data, to=lib, strict=strict)
            except ih.NoRouteError as exc:
                types = [c.dtype for c in HUB.describe(data).columns]
                raise Refused(lib, types, exc) from exc
    other = [w for w in caught if not issubclass(w.category, ih.LossyConversionWarning)]
    assert not other, [str(w.message) for w in other]
    return data, [str(w.message) for w in caught]


def warned_by(message: str) -> str:
    """The library whose step a lossy warning is about: the target of the conversion, or
    duckdb for a duckdb type that leaves it ("column 'c': duckdb UUID -> string")."""
    if re.search(r"^lossy conversion to \w+: (?:column '[^']*'|the data): duckdb ", message):
        return "duckdb"
    return message.removeprefix("lossy conversion to ").split(":")[0]


def tensor_rows(arr: Any) -> list[Any]:
    """The rows of nested fixed-size lists (duckdb's ARRAY) as flat lists, as a
    fixed_shape_tensor column's rows read."""
    return [None if r is None else np.ravel(r).tolist() for r in arr.to_pylist()]


@pytest.mark.parametrize("kind", ["table", "column"])
@pytest.mark.parametrize("name", NAMES)
def test_round_trips_through_plugins_keep_values_and_mapped_types(name: str, kind: str) -> None:
    problems = []
    for var, col in cases(name).items():
        data = pa.table({"c": col}) if kind == "table" else col
        expected = values(col)
        dtype = str(col.type)
        for first, second in PAIRS:
            where = f"{var}: {first} -> {second} -> {first}"
            why = refusal(first, second, dtype)
            try:
                # duckdb warns on the way out, too (a JSON or UUID column leaving it)
                back, lossy = convert_all(data, [first, second, first, "pyarrow"])
                got = column_of(back, HUB)
            except Refused as exc:  # the types it had then (a lossy step may change them)
                if not any(typemap.refused(exc.library, t) for t in exc.types):
                    problems.append(f"{where}: refused, the document does not say so: {exc}")
                continue
            except ih.InterchangeError as exc:
                problems.append(f"{where}: failed: {type(exc).__name__}: {exc}")
                continue
            if why and not lossy:
                problems.append(f"{where}: the document says it is refused ({why}); converted")
                continue
            if kind == "column" and typemap.struct_becomes_table(first, second, col):
                table = HUB.convert(back, to="pyarrow")
                if table.column_names != [f.name for f in col.type]:
                    problems.append(f"{where}: expected the struct's fields as a table")
                continue
            documented = documented_losses(first, second, dtype, col.null_count > 0)
            for lib in PLUGINS:
                told = [m for m in lossy if warned_by(m) == lib]
                if told and lib not in documented:
                    problems.append(f"{where}: {lib} warned, the document does not say so: {told}")
            if documented and not lossy:
                problems.append(f"{where}: documented as lossy in {documented}, but silent")
            if lossy:
                if kind == "table" and not all("column 'c'" in m and " -> " in m for m in lossy):
                    problems.append(f"{where}: a warning lacks the column or the types: {lossy}")
                try:
                    convert_all(data, [first, second, first], strict=True)
                    problems.append(f"{where}: warned, but strict=True did not refuse it")
                except ih.LossyConversionError:
                    pass
                continue
            want = typemap.round_trip(first, second, dtype)
            if str(got.type) != want:
                problems.append(f"{where}: type {got.type}, the mapping says {want}")
            nested = want.startswith("fixed_size_list<") and dtype.startswith(
                "extension<arrow.fixed_shape_tensor["
            )
            if (tensor_rows(got) if nested else values(got)) != expected:
                problems.append(f"{where}: values changed silently: {values(got)[:4]}")
    assert not problems, "\n".join(problems)


def test_every_pair_with_a_plugin_is_covered() -> None:
    assert len(PAIRS) == 6 * 6 - 4 * 4
    assert set(typemap.RULES) >= set(LIBS) and set(typemap.REFUSED) >= set(LIBS)
    assert HUB.registry.get("duckdb") is not None and HUB.registry.get("arro3") is not None
