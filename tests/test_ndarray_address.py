"""``ndarray_address``: a numpy array's data address read from numpy's struct, which must
agree with ``ndarray.ctypes.data`` for every kind of array, and fall back to it where the
struct does not check out."""

from __future__ import annotations

import mmap
import sys
from typing import Any

import numpy as np
import pytest

from interchange_hub._c import ndarray as nd
from interchange_hub.adapter import ndarray_address


def _arrays(tmp_path: Any) -> list[Any]:
    base = np.arange(60, dtype=np.float64)
    memory = mmap.mmap(-1, 4096)
    ro = np.arange(10, dtype=np.int32)
    ro.setflags(write=False)
    path = tmp_path / "m.bin"
    np.arange(100, dtype=np.int16).tofile(path)
    return [
        base,
        base[7:],
        base[::-3],
        base.reshape(6, 10).T,
        base.reshape(6, 10)[2:, 3:7],
        np.asfortranarray(base.reshape(6, 10)),
        base[5:5],
        np.zeros((0, 4)),
        np.array(3.5),  # 0-d
        np.ma.masked_array(base, mask=base > 30)[4:],  # a subclass
        np.memmap(path, dtype=np.int16, mode="r", offset=20),
        np.frombuffer(memory, dtype=np.uint8)[3:],
        np.frombuffer(b"some bytes here!", dtype=np.uint8)[5:],  # read-only, over bytes
        ro,
        np.array(["a", "bcd"]),
        np.array([{"x": 1}, None], dtype=object),
        np.zeros(3, dtype=[("a", "i4"), ("b", "f8")])[1:],
        np.broadcast_to(np.arange(4.0), (5, 4)),
    ]


def test_the_struct_read_agrees_with_ctypes_data(tmp_path: Any) -> None:
    assert nd._agrees()  # on CPython the fast read is the one used
    for arr in _arrays(tmp_path):
        assert ndarray_address(arr) == (arr.ctypes.data or 0), repr(arr)


def test_it_follows_an_array_whose_memory_changes() -> None:
    arr = np.zeros(4)
    before = ndarray_address(arr)
    arr.resize(100_000, refcheck=False)  # realloc: the data usually moves
    assert ndarray_address(arr) == arr.ctypes.data
    assert before != 0


def test_where_the_struct_does_not_check_out_ctypes_data_is_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setattr(nd, "_fast", False)
    for arr in _arrays(tmp_path):
        assert ndarray_address(arr) == arr.ctypes.data
    monkeypatch.setattr(nd, "_fast", None)
    monkeypatch.setattr(nd, "_OFFSET", nd._OFFSET + 8)  # a layout it does not know
    assert not nd._agrees()
    arr = np.arange(5.0)[1:]
    assert ndarray_address(arr) == arr.ctypes.data
    assert nd._fast is False


def test_another_interpreter_keeps_ctypes_data(monkeypatch: pytest.MonkeyPatch) -> None:
    class _Impl:
        name = "pypy"

    monkeypatch.setattr(sys, "implementation", _Impl())
    assert not nd._agrees()
