"""Every zero-copy claim over the type corpus, checked by buffer address: each corpus type
as pyarrow delivers it (plain, sliced, after an empty first chunk, read back from an IPC
stream), as a table and as a column, converted to every library. A plan that says
zero-copy must give a result whose data lies in the source's buffers, and a plan that is
made must run (a refusal belongs in the plan)."""

from __future__ import annotations

import functools
import warnings
from typing import Any

import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub._tools.corpus import corpus, variants as corpus_variants
from tests.helpers import OUTCOMES, every_target, installed_plugins, shared_memory

VARIANTS = ("no nulls", "nulls", "sliced", "empty first chunk", "ipc", "extremes")
# Built once per type (the sources are never changed by a conversion; building them per
# case took most of this module's time).
variants = functools.cache(corpus_variants)
# The plugins of this repository whose libraries are installed join the built-ins.
PLUGINS = installed_plugins()
HUB = ih.Hub(autoload=False, plugins=PLUGINS)
TARGETS = every_target(HUB)


def _shared(result: Any, source: Any) -> tuple[int, int]:
    """(bytes of the result inside the source's memory, bytes of the result)."""
    return shared_memory(HUB, result, source)


def _cases() -> list[Any]:
    out = []
    for name in corpus():
        for variant in VARIANTS:
            if variant not in variants(name):
                continue  # only some types have edge values
            for target in TARGETS:
                case_id = f"{name}-{variant}-{target}"
                out.append(pytest.param(name, variant, target, id=case_id))
    return out


def _check_claim(source: Any, target: str) -> str:
    """What is wrong with converting ``source`` to ``target`` ("" when nothing): a plan
    that fails when run, or a zero-copy claim the result's buffer addresses deny."""
    try:
        plan = HUB.plan(source, to=target)
    except ih.InterchangeError:
        return ""  # refused before anything runs: no claim made
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ih.LossyConversionWarning)
        try:
            result = HUB.convert(source, to=target)
        except ih.InterchangeError as exc:
            return f"planned ({plan!r}) but refused when run: {exc}"
    inside, size = _shared(result, source)
    OUTCOMES["claims"] += 1
    if plan.zero_copy and inside != size:
        return (
            f"planned zero-copy, but {size - inside} of the result's {size} bytes lie outside "
            f"the source's buffers:\n{plan}"
        )
    return ""


@pytest.mark.parametrize(("name", "variant", "target"), _cases())
def test_a_zero_copy_claim_holds_by_address(name: str, variant: str, target: str) -> None:
    problem = _check_claim(pa.table({"c": variants(name)[variant]}), target)
    assert not problem, problem


def _column_cases() -> list[Any]:
    return [
        pytest.param(name, target, id=f"{name}-{target}") for name in corpus() for target in TARGETS
    ]


@pytest.mark.parametrize(("name", "target"), _column_cases())
def test_a_zero_copy_claim_for_a_column_holds_by_address(name: str, target: str) -> None:
    """The same for each variant as a column (an Array, or a ChunkedArray), whose routes
    differ: into a Series, a 1-D or n-D tensor, a DataArray."""
    columns = variants(name)
    problems = [
        f"{variant}: {problem}"
        for variant in VARIANTS
        if variant in columns and (problem := _check_claim(columns[variant], target))
    ]
    assert not problems, "\n".join(problems)
