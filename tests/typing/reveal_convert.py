"""Checked by mypy in tests/test_typing.py: what ``ih.convert`` is typed as returning."""

from __future__ import annotations

from typing import reveal_type

import numpy as np
import polars as pl
import pyarrow as pa
import torch

import interchange_hub as ih

table = pa.table({"a": [1, 2]})
reveal_type(ih.convert(table, to=pl.DataFrame))
reveal_type(ih.convert(table, to=torch.Tensor, copy=True))
reveal_type(ih.convert(table, to="numpy"))
reveal_type(ih.convert(table, to="torch", dtype="float32"))
reveal_type(ih.convert(table, to="torch", as_dict=True))
reveal_type(ih.convert(table, to=np.ndarray, as_dict=True))
reveal_type(ih.convert(table, to="polars"))
reveal_type(ih.plan(table, to="polars"))
reveal_type(ih.Hub().convert(table, to=pl.DataFrame))
