"""``@record``: the hub's value classes behave as ``@dataclass(frozen=True, slots=True)``
ones do, and defining one compiles nothing (the cold start's 15 ms)."""

from __future__ import annotations

import builtins
import copy
import dataclasses
import importlib
import inspect
import pickle
import pkgutil
from typing import Any

import pytest

import interchange_hub
from interchange_hub._core import records as records_module
from interchange_hub._core.records import field, record
from interchange_hub.adapter import Options


@record
class _Rec:
    """A record."""

    a: int
    b: str = "x"
    c: tuple[int, ...] = ()
    hidden: object = field(default=None, compare=False, repr=False)


@dataclasses.dataclass(frozen=True, slots=True)
class _Twin:
    """A record."""

    a: int
    b: str = "x"
    c: tuple[int, ...] = ()
    hidden: object = dataclasses.field(default=None, compare=False, repr=False)


@record(frozen=False)
class _Mutable:
    items: dict[str, int] = field(default_factory=dict)
    n: int = 0


@record
class _Checked:
    kind: str
    index: int = 0

    def __post_init__(self) -> None:
        if self.kind == "cpu":
            object.__setattr__(self, "index", 0)


def test_behaves_as_its_dataclass_twin() -> None:
    ours, theirs = _Rec(1, c=(2,), hidden="h"), _Twin(1, c=(2,), hidden="h")
    assert repr(ours) == repr(theirs).replace("_Twin", "_Rec") == "_Rec(a=1, b='x', c=(2,))"
    assert ours == _Rec(1, "x", (2,), hidden="other")  # hidden is not compared
    assert ours != _Rec(2, c=(2,))
    other: object = theirs
    assert ours != other  # another class, as for two dataclasses
    assert hash(ours) == hash(_Rec(1, c=(2,)))
    assert _Rec.__doc__ == _Twin.__doc__
    assert vars(_Rec)["__slots__"] == ("a", "b", "c", "hidden")
    assert not hasattr(ours, "__dict__")
    assert _Rec.__match_args__ == _Twin.__match_args__
    with pytest.raises(TypeError):
        _Rec()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _Rec(1, nope=2)  # type: ignore[call-arg]


def test_dataclass_functions_work_on_records() -> None:
    ours = _Rec(1, c=(2,), hidden="h")
    assert dataclasses.is_dataclass(ours)
    assert [f.name for f in dataclasses.fields(ours)] == ["a", "b", "c", "hidden"]
    assert [f.default for f in dataclasses.fields(_Rec)] == [dataclasses.MISSING, "x", (), None]
    assert dataclasses.asdict(ours) == dataclasses.asdict(_Twin(1, c=(2,), hidden="h"))
    changed = dataclasses.replace(ours, b="y")
    assert (changed.a, changed.b, changed.c, changed.hidden) == (1, "y", (2,), "h")
    assert ours.b == "x"


def test_frozen_pickled_and_copied() -> None:
    ours = _Rec(1, c=(2,), hidden="h")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ours.a = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del ours.a
    for again in (pickle.loads(pickle.dumps(ours)), copy.copy(ours), copy.deepcopy(ours)):
        assert again == ours and again.hidden == "h" and again is not ours


def test_mutable_records_and_post_init() -> None:
    one, two = _Mutable(), _Mutable()
    one.items["a"] = 1
    one.n = 3
    assert two.items == {} and one.items is not two.items  # a factory per instance
    assert vars(_Mutable)["__hash__"] is None  # eq without frozen: unhashable, as a dataclass
    assert pickle.loads(pickle.dumps(one)) == one
    assert _Checked("cpu", 3).index == 0 and _Checked("cuda", 3).index == 3


def test_defining_a_record_compiles_nothing_until_it_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[object] = []
    real = builtins.exec

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(builtins, "exec", counting)

    @record
    class Lazy:
        x: int
        y: int = 2

    assert calls == []  # dataclasses would have compiled six methods here
    assert Lazy(1) == Lazy(1, 2) and repr(Lazy(1)).endswith("Lazy(x=1, y=2)") and hash(Lazy(3))
    for _ in range(records_module.WARM_CALLS - 4):
        Lazy(4)
    assert calls == []  # the first calls go through the generic __init__
    Lazy(5)
    assert len(calls) == 1  # then __init__ is compiled, once
    Lazy(5)
    assert len(calls) == 1 and "__record_lazy__" not in vars(vars(Lazy)["__init__"])


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((), {}),
        ((1,), {}),
        ((1, "y", (2,), None, 5), {}),
        ((1,), {"nope": 2}),
        ((1,), {"a": 1}),
        ((), {"b": "y"}),
        ((1,), {"hidden": "h", "c": (3,)}),
        ((1, "y"), {}),
        ((1, "y", (2,), None, 5), {"nope": 2}),  # the keywords are looked at first
        ((1, "y", (2,), None, 5), {"a": 2}),
        ((1,), {"b": "y", "a": 2}),
    ],
)
def test_the_generic_init_takes_and_refuses_what_the_compiled_one_does(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    # A record's first calls bind their arguments in Python; later ones run the compiled
    # __init__. Both give what the dataclass twin gives, or its TypeError's message.
    def made(cls: Any) -> str:
        try:
            return repr(cls(*args, **kwargs)).replace(cls.__qualname__, "C")
        except TypeError as exc:
            return "TypeError: " + str(exc).replace(cls.__qualname__, "C")

    @record
    class Fresh:
        a: int
        b: str = "x"
        c: tuple[int, ...] = ()
        hidden: object = field(default=None, compare=False, repr=False)

    expected = made(_Twin)
    for _ in range(records_module.WARM_CALLS + 2):
        assert made(Fresh) == expected
    assert "__record_lazy__" not in vars(vars(Fresh)["__init__"])  # compiled by now
    assert made(Fresh) == expected

    @record
    class Three:
        x: int
        y: int
        z: int

    @dataclasses.dataclass
    class Twin3:
        x: int
        y: int
        z: int

    @record
    class Empty:
        pass

    @dataclasses.dataclass
    class Twin0:
        pass

    with pytest.raises(TypeError) as got0:
        Empty(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError) as want0:
        Twin0(1)  # type: ignore[call-arg]
    assert str(got0.value).split(".__init__")[1] == str(want0.value).split(".__init__")[1]

    for call in ((), (1,), (1, 2), (1, 2, 3, 4)):
        try:
            Twin3(*call)
        except TypeError as exc:
            want = str(exc).replace("Twin3", "Three")
        with pytest.raises(TypeError) as got:
            Three(*call)
        assert str(got.value).endswith(want.split(".", 1)[1])


def test_refuses_what_it_does_not_do() -> None:
    with pytest.raises(TypeError, match="non-default argument"):

        @record
        class Bad:
            a: int = 0
            b: int  # type: ignore[misc]

    with pytest.raises(TypeError, match="kw_only"):

        @record
        class KwOnly:
            a: int = field(default=0, kw_only=True)

    with pytest.raises(TypeError, match="inherit"):

        @record
        class Child(_Rec):
            d: int = 0


def _hub_records() -> list[type]:
    found = []
    for info in pkgutil.walk_packages(interchange_hub.__path__, "interchange_hub."):
        if ".adapters." in info.name or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and value.__module__ == module.__name__
                and "__dataclass_fields__" in value.__dict__
            ):
                found.append(value)
    return found


def test_the_hub_defines_records_not_dataclasses() -> None:
    """Every value class of the package is a ``@record`` (a ``@dataclass`` would cost
    its compile at import), and each is a dataclass to ``dataclasses``."""
    records = _hub_records()
    names = {c.__qualname__ for c in records}
    assert {"Column", "DataInfo", "Estimate", "Edge", "Plan", "Step", "Device"} <= names
    for cls in records:
        assert cls.__dict__.get("__replace__") is records_module._replace, cls.__qualname__
        assert dataclasses.is_dataclass(cls)
        assert "__slots__" in cls.__dict__, cls.__qualname__


def test_tools_that_read_dataclasses_read_records() -> None:
    """dask's tokenize reads ``__dataclass_params__`` of every dataclass (the dask plugin
    hands Options to map_partitions); inspect.signature gives the fields before the
    first instance; copy.replace (3.13) has ``__replace__``."""
    tokenize = pytest.importorskip("dask.base").tokenize

    @record
    class Fresh:
        x: int
        y: str = "a"
        z: dict[str, int] = field(default_factory=dict)

    assert (
        str(inspect.signature(Fresh))
        == "(x: 'int', y: 'str' = 'a', z: 'dict[str, int]' = <factory>) -> None"  # as a dataclass
    )
    assert Fresh.__init__.__module__ == __name__
    assert Fresh.__dataclass_params__.frozen is True  # type: ignore[attr-defined]
    assert _Mutable.__dataclass_params__.frozen is False  # type: ignore[attr-defined]
    assert tokenize(_Rec(1, c=(2,))) == tokenize(_Rec(1, c=(2,))) != tokenize(_Rec(2))
    assert tokenize(Options(copy=False)) != tokenize(Options())
    assert _Rec(1).__replace__(b="z") == _Rec(1, "z")  # type: ignore[attr-defined]


def test_what_dataclasses_checks_records_check() -> None:
    @record
    class Hashing:
        a: int
        b: int = field(default=0, hash=False)

    assert hash(Hashing(1, 2)) == hash(Hashing(1, 3)) and Hashing(1, 2) != Hashing(1, 3)
    with pytest.raises(ValueError, match="mutable default"):

        @record
        class Shared:
            items: list[int] = []  # noqa: RUF012

    @record
    class Odd:  # fields named as the generated __init__'s own names would be
        self: int
        _set: int = 0

    assert (Odd(1, 2).self, Odd(1, 2)._set) == (1, 2)

    @record(frozen=False)
    class Loop:
        me: object = None

    loop = Loop()
    loop.me = loop
    assert repr(loop).endswith("Loop(me=...)")
