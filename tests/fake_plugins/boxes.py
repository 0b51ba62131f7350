"""A third-party library and its plugin: ``Box`` holds a pyarrow Table.

Loaded by the tests directly (``Hub(plugins=[boxes])``) and through an entry point of a
fake distribution (``boxes = tests.fake_plugins.boxes``).
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

import interchange_hub as ih
from interchange_hub import arrowkit
from interchange_hub.adapter import ARROW

if os.environ.get("BOXES_MARKER"):  # lets a subprocess test see that this module ran
    with open(os.environ["BOXES_MARKER"], "w") as marker:
        marker.write("imported")


class Box:
    """The library's only type: a named table in a box."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table


class BoxAdapter(ih.Adapter):
    name = "boxes"
    module = __name__
    types = ("tests.fake_plugins.boxes.Box",)

    def __init__(self, *, honest: bool = True) -> None:
        self.honest = honest

    def owns(self, obj: object) -> bool:
        return isinstance(obj, Box)

    def describe(self, obj: Any) -> ih.DataInfo:
        return arrowkit.describe_table(obj.table)

    def buffers(self, obj: Any) -> list[ih.Buffer]:
        return arrowkit.buffers(obj.table)

    def type_kinds(self) -> dict[type, ih.Kind | None]:
        return {Box: ih.Kind.TABLE}

    def edges(self) -> list[ih.Edge]:
        return [
            ih.Edge("boxes", ARROW, self.name, "Box.table", _same, _unbox),
            ih.Edge(ARROW, "boxes", self.name, "Box(pa.table)", _to_table, self._box),
        ]

    def _box(self, value: Any, ctx: ih.Context) -> Box:
        table = arrowkit.read_table(value)
        if not self.honest:  # claims zero-copy, but copies every buffer
            table = pa.Table.from_pylist(table.to_pylist(), schema=table.schema)
        return Box(table)


def _same(ctx: ih.Context) -> ih.Estimate:
    return ih.Estimate(ctx.info, why="the box holds Arrow data")


def _to_table(ctx: ih.Context) -> ih.Estimate:
    if ctx.info.kind != ih.Kind.TABLE:
        raise ih.Unroutable("a Box holds tables only")
    return ih.Estimate(ctx.info, why="the box takes the Arrow data as it is")


def _unbox(value: Any, ctx: ih.Context) -> Any:
    return value.table


@ih.hookimpl
def register_adapters(register: Any) -> None:
    register(BoxAdapter())
