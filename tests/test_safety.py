"""Safe results: what a user may do with a result without surprises.

A pandas result that shares memory with its source can be written to with pandas' own
setters; the write copies the column (copy-on-write) and the source never changes. A torch
result that shares memory its source treats as read-only warns (torch ignores read-only
flags), once per call site, with a warning class of its own.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub._engine import planner as planner_module

if TYPE_CHECKING:
    from collections.abc import Callable


def _sources() -> dict[str, Callable[[], Any]]:
    return {
        "polars": lambda: pl.DataFrame({"a": [1, 2, 3], "b": [1.5, 2.5, 3.5]}),
        "pyarrow": lambda: pa.table({"a": [1, 2, 3], "b": [1.5, 2.5, 3.5]}),
        "numpy": lambda: np.arange(6.0).reshape(3, 2, order="F"),
    }


def _values(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return pa.table(obj).to_pydict()


WRITES: dict[str, Callable[[pd.DataFrame], None]] = {
    "loc": lambda df: df.loc.__setitem__((0, df.columns[0]), 9),
    "iloc": lambda df: df.iloc.__setitem__((1, 1), 7.0),
    "at": lambda df: df.at.__setitem__((2, df.columns[0]), 5),
    "fillna(inplace)": lambda df: df.fillna(0, inplace=True),
    "column +=": lambda df: df.__setitem__(df.columns[1], df[df.columns[1]] + 1),
    "iloc slice": lambda df: df.iloc.__setitem__((slice(0, 2), 0), 4),
}


@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("source", list(_sources()))
def test_pandas_results_are_writable_and_the_source_never_changes(
    hub: ih.Hub, source: str, write: str
) -> None:
    src = _sources()[source]()
    before = _values(src)
    frame = hub.convert(src, to="pandas")
    assert hub.shared_bytes(frame, src) > 0  # still zero-copy until written to
    expected = frame.copy(deep=True)
    WRITES[write](expected)
    WRITES[write](frame)
    pd.testing.assert_frame_equal(frame, expected)
    assert _values(src) == before


def test_a_pandas_series_result_is_writable(hub: ih.Hub) -> None:
    col = pa.chunked_array([[1.0, 2.0, 3.0]])
    series = hub.convert(col, to=pd.Series)
    assert hub.shared_bytes(series, col) > 0
    series.iloc[0] = 10.0
    series.loc[1] = 20.0
    assert series.tolist() == [10.0, 20.0, 3.0]
    assert col.to_pylist() == [1.0, 2.0, 3.0]


def test_a_write_copies_only_the_column_written(hub: ih.Hub) -> None:
    table = pa.table({"a": np.arange(1000.0), "b": np.arange(1000.0)})
    frame = hub.convert(table, to="pandas")
    frame.loc[0, "a"] = -1.0
    a, b = table.column("a").chunks[0], table.column("b").chunks[0]
    assert hub.shared_bytes(frame["a"], a) == 0  # copied on write
    assert hub.shared_bytes(frame["b"], b) == b.nbytes  # still shared
    assert table.column("a")[0].as_py() == 0.0


def test_the_pandas_plan_says_copy_on_write(hub: ih.Hub) -> None:
    text = str(hub.plan(pa.table({"a": [1.0, 2.0]}), to="pandas"))
    assert "copy-on-write" in text
    assert "raises" not in text
    assert "copy-on-write" not in str(hub.plan(pa.table({"a": [1.0]}), to="pandas", copy=True))


def _caught(fn: Callable[[], Any]) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [w for w in caught if issubclass(w.category, ih.WriteThroughWarning)]


def test_torch_results_of_read_only_memory_warn_naming_copy_true(hub: ih.Hub) -> None:
    series = pl.Series("a", [3, 1, 2]).sort()
    plan = hub.plan(series, to="torch")
    assert plan.write_through
    (warning,) = _caught(lambda: hub.convert(series, to="torch"))
    assert "copy=True" in str(warning.message)
    assert warning.filename == __file__  # points at the caller, not the hub
    tensor = hub.convert(series, to="torch")  # what the warning is about:
    assert hub.shared_bytes(tensor, series) > 0
    tensor[0] = 100
    assert series.to_list()[0] == 100


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(4.0),  # writable numpy: torch shares it as numpy itself would
        lambda: pl.Series("a", [], dtype=pl.Float64),  # nothing shared
    ],
    ids=["writable numpy", "empty"],
)
def test_torch_results_that_cannot_write_through_do_not_warn(hub: ih.Hub, make: Any) -> None:
    src = make()
    assert not hub.plan(src, to="torch").write_through
    assert _caught(lambda: hub.convert(src, to="torch")) == []


def test_copy_true_never_warns_and_shares_nothing(hub: ih.Hub) -> None:
    series = pl.Series("a", [1.0, 2.0])
    assert _caught(lambda: hub.convert(series, to="torch", copy=True)) == []
    tensor = hub.convert(series, to="torch", copy=True)
    tensor[0] = 5.0
    assert series.to_list() == [1.0, 2.0]


def test_the_write_through_warning_shows_once_per_call_site(hub: ih.Hub) -> None:
    arr = np.arange(3.0)
    arr.flags.writeable = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(5):
            hub.convert(arr, to="torch")  # the fast path, after the first call
        hub.convert(arr, to="torch")  # another line: shown again
    assert len([w for w in caught if issubclass(w.category, ih.WriteThroughWarning)]) == 2


def _planned_read_only(hub: ih.Hub) -> np.ndarray[Any, Any]:
    """A read-only array whose conversion to torch (it writes through) the hub has planned
    once: the fast path from here on."""
    arr = np.arange(3.0)
    arr.flags.writeable = False
    hub.convert(arr, to="torch")
    return arr


def test_the_write_through_warning_is_the_hubs_own_once_per_site_under_always(
    hub: ih.Hub,
) -> None:
    # Under "always" Python's registry removes no repeat: only the hub's own record of
    # the sites it warned from shows each once (found in review: the "default" test
    # above passes whatever the hub keys its sites by).
    arr = _planned_read_only(hub)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(5):
            hub.convert(arr, to="torch")  # one site, five calls
        hub.convert(arr, to="torch"), hub.convert(arr, to="torch")  # two sites, one line
    assert len([w for w in caught if issubclass(w.category, ih.WriteThroughWarning)]) == 3


def test_the_write_through_warning_keeps_the_code_of_each_site_it_warned_from(
    hub: ih.Hub,
) -> None:
    # Sites are kept by their code object's id, with the code held: a cell run again (a
    # new code object of the same text, the old one freed) is a new site, never one whose
    # id the freed code left behind; one code object run twice is one site.
    namespace = {"hub": hub, "arr": _planned_read_only(hub)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(3):
            cell = compile("hub.convert(arr, to='torch')", f"<cell {i}>", "exec")
            exec(cell, namespace)  # noqa: S102 - a notebook's cell, run again: our own text
        cell = compile("hub.convert(arr, to='torch')", "<cell>", "exec")
        exec(cell, namespace)  # noqa: S102 - one code object run twice: one site
        exec(cell, namespace)  # noqa: S102
    shown = [w for w in caught if issubclass(w.category, ih.WriteThroughWarning)]
    assert [w.filename for w in shown] == ["<cell 0>", "<cell 1>", "<cell 2>", "<cell>"]


@pytest.mark.parametrize(
    "source",
    [pa.array([1, 2], pa.uint16()), pa.array([1, 2], pa.timestamp("us"))],
    ids=["lossless", "lossy"],
)
def test_a_site_warned_from_is_found_in_one_lookup_on_the_fast_path(
    hub: ih.Hub, source: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the first call from a site walks the stack (_warn_site); a lossy route, kept
    # inside the run that warns of its losses, looks one frame further down (review).
    walks: list[object] = []
    walk = planner_module._warn_site

    def counted(*args: Any) -> None:
        walks.append(args[0])
        walk(*args)

    monkeypatch.setattr(planner_module, "_warn_site", counted)
    assert hub.plan(source, to="torch").write_through
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(4):
            hub.convert(source, to="torch")  # planned once, then the fast path
    assert hub.planner.kept_route(source, "torch") is not None
    assert len(walks) == 1
    shown = [w for w in caught if issubclass(w.category, ih.WriteThroughWarning)]
    assert len(shown) == 1 and shown[0].filename == __file__


def test_the_write_through_warning_names_each_call_site_of_ih_convert_too() -> None:
    # The site is found by skipping the hub's own frames (ih.convert or Hub.convert, and
    # on the first call the planner's) at once: each of the user's lines is a site,
    # however it calls.
    arr = np.arange(3.0)
    arr.flags.writeable = False

    def nested() -> Any:
        return ih.convert(arr, to="torch")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            ih.convert(arr, to="torch")
            nested()
        for _ in range(3):
            ih.default_hub().convert(arr, to="torch")
    shown = [w for w in caught if issubclass(w.category, ih.WriteThroughWarning)]
    assert len(shown) == len({w.lineno for w in shown}) == 3  # once at each of the 3 lines
    assert {w.filename for w in shown} == {__file__}


def test_the_write_through_warning_can_be_filtered(hub: ih.Hub) -> None:
    series = pl.Series("a", [1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=ih.WriteThroughWarning)
        hub.convert(series, to="torch")
