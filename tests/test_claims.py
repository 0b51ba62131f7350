"""Every zero-copy claim over the type corpus, checked by buffer address: each corpus type
as pyarrow delivers it (plain, sliced, after an empty first chunk, read back from an IPC
stream), converted to every library. A plan that says zero-copy must give a result whose
data lies in the source's buffers."""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub._tools.corpus import corpus, variants

VARIANTS = ("no nulls", "nulls", "sliced", "empty first chunk", "ipc", "extremes")
# The plugins of this repository whose libraries are installed join the built-ins.
PLUGINS = [
    module
    for module in (
        "interchange_hub_arro3",
        "interchange_hub_duckdb",
        "interchange_hub_jax",
        "interchange_hub_datasets",
        "interchange_hub_xarray",
    )
    if importlib.util.find_spec(module) is not None
]
HUB = ih.Hub(autoload=False, plugins=PLUGINS)
TARGETS = ["pyarrow", "nanoarrow", "polars", "pandas", "numpy", "torch"] + [
    name for name in ("arro3", "duckdb", "jax", "datasets", "xarray") if HUB.registry.get(name)
]


def _ranges(value: Any) -> list[tuple[int, int]]:
    """The memory ``value`` uses, as merged (start, end) ranges (chunks of one IPC body,
    or slices of one column, share their buffers: each byte counts once)."""
    spans = sorted((b.address, b.address + b.size) for b in HUB.buffers(value) if b.size)
    merged: list[list[int]] = []
    for lo, hi in spans:
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return [(lo, hi) for lo, hi in merged]


def _shared(result: Any, source: Any) -> tuple[int, int]:
    """(bytes of the result inside the source's memory, bytes of the result)."""
    mine, theirs = _ranges(result), _ranges(source)
    inside = sum(max(0, min(hi, b) - max(lo, a)) for lo, hi in mine for a, b in theirs)
    return inside, sum(hi - lo for lo, hi in mine)


def _cases() -> list[Any]:
    out = []
    for name in corpus():
        for variant in VARIANTS:
            if variant not in variants(name):
                continue  # only some types have edge values
            for target in TARGETS:
                out.append(pytest.param(name, variant, target, id=f"{name}-{variant}-{target}"))
    return out


@pytest.mark.parametrize(("name", "variant", "target"), _cases())
def test_a_zero_copy_claim_holds_by_address(name: str, variant: str, target: str) -> None:
    column = variants(name)[variant]
    source = pa.table({"c": column})
    try:
        plan = HUB.plan(source, to=target)
    except ih.InterchangeError:
        return  # refused before anything runs: no claim made
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ih.LossyConversionWarning)
        try:
            result = HUB.convert(source, to=target)
        except ih.InterchangeError as exc:
            pytest.fail(f"planned ({plan!r}) but refused when run: {exc}")
    inside, size = _shared(result, source)
    if plan.zero_copy:
        assert inside == size, (
            f"planned zero-copy, but {size - inside} of the result's {size} bytes lie outside "
            f"the source's buffers:\n{plan}"
        )
