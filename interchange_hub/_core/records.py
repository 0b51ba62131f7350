"""Records: slotted value classes, as ``@dataclass(frozen=True, slots=True)`` makes them,
without compiling code when they are defined.

``dataclasses`` writes six methods of every class as source text and compiles each with
``exec`` while the class is being defined: 0.5 to 0.8 ms a class, about 15 ms of a fresh
interpreter's first ``ih.convert`` over the two dozen records the engine holds. A
``@record`` class gets shared ``__eq__``, ``__hash__``, ``__repr__`` and frozen
``__setattr__`` functions (closures over the field names, nothing compiled) and an
``__init__`` compiled the first time the class is called, so a record the process never
makes costs nothing. That ``__init__`` is the code ``dataclasses`` would write: making a
record costs what making a dataclass does.

A record is a dataclass to everything that asks: it carries ``__dataclass_fields__`` (real
``dataclasses.Field`` objects), so ``dataclasses.fields``, ``replace``, ``asdict`` and
``is_dataclass`` work on it, as do pickling and ``copy``; type checkers read the decorator
as a dataclass one (``dataclass_transform``). What it leaves out: ``order``, ``kw_only``,
``InitVar`` and inheriting from another record, which no record of the hub uses (the
decorator refuses them rather than getting them wrong).
"""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING, Field, FrozenInstanceError, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, dataclass_transform, overload

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["field", "record"]

_T = TypeVar("_T")

# The marker ``dataclasses.fields`` looks for on a field that is a real field (not a
# ClassVar or InitVar); private to ``dataclasses``, unchanged since Python 3.7. A test
# checks that ``fields``, ``replace`` and ``asdict`` work on records, so a Python that
# changes it fails the suite instead of the users.
_FIELD = getattr(dataclasses, "_FIELD", None)
_SET = object.__setattr__
_FACTORY = object()  # the default of a field with a default factory, in __init__


@overload
@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def record(cls: type[_T], /) -> type[_T]: ...
@overload
def record(*, frozen: bool = True) -> Callable[[type[_T]], type[_T]]: ...
def record(
    cls: type[_T] | None = None, /, *, frozen: bool = True
) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """Make ``cls`` a slotted record (frozen unless ``frozen=False``), like
    ``@dataclass(frozen=True, slots=True)``."""

    def wrap(c: type[_T]) -> type[_T]:
        return _build(c, frozen)

    return wrap if cls is None else wrap(cls)


def _is_classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    head = str(text).split("[", 1)[0].strip()
    return head in ("ClassVar", "typing.ClassVar")


def _build(cls: type[_T], frozen: bool) -> type[_T]:
    for base in cls.__mro__[1:]:
        if "__dataclass_fields__" in base.__dict__:
            raise TypeError(f"{cls.__qualname__}: a record cannot inherit from a dataclass")
    # The class's own annotations, unevaluated (inspect.get_annotations would import
    # inspect for what this dictionary holds already).
    own = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
    fields: dict[str, Field[Any]] = {}
    seen_default = False
    for name, annotation in own.items():
        if _is_classvar(annotation):
            continue
        if "InitVar" in str(annotation):
            raise TypeError(f"{cls.__qualname__}.{name}: records take no InitVar fields")
        default = cls.__dict__.get(name, MISSING)
        f: Field[Any] = default if isinstance(default, Field) else field(default=default)
        if f.kw_only is True or not f.init:
            raise TypeError(f"{cls.__qualname__}.{name}: records take no kw_only/init=False")
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {name!r} follows default argument")
        seen_default = seen_default or has_default
        f.name = name
        f.type = annotation
        f._field_type = _FIELD  # type: ignore[attr-defined]
        fields[name] = f

    names = tuple(fields)
    compared = tuple(n for n, f in fields.items() if f.compare)
    shown = tuple(n for n, f in fields.items() if f.repr)
    get = _getter(compared)
    ns = {k: v for k, v in cls.__dict__.items() if k not in names and k not in _NOT_COPIED}
    ns["__slots__"] = names
    ns["__dataclass_fields__"] = fields
    ns["__match_args__"] = names
    box: list[type[Any]] = []
    if "__init__" not in ns:
        ns["__init__"] = _lazy_init(box, fields, frozen)
    if "__repr__" not in ns:
        ns["__repr__"] = _repr_of(shown)
    if "__eq__" not in ns:
        ns["__eq__"] = _eq_of(get)
    if frozen:
        if ns.get("__hash__") is None:  # a class that defines __eq__ has __hash__ = None
            ns["__hash__"] = _hash_of(get)
        ns["__setattr__"] = _frozen_setattr
        ns["__delattr__"] = _frozen_delattr
        ns["__getstate__"] = _getstate_of(names)
        ns["__setstate__"] = _setstate_of(names)
    else:
        ns["__hash__"] = None  # as a dataclass with eq and not frozen: unhashable
    meta: Any = type(cls)
    made: type[_T] = meta(cls.__name__, cls.__bases__, ns)
    made.__qualname__ = cls.__qualname__
    box.append(made)
    return made


_NOT_COPIED = frozenset({"__dict__", "__weakref__"})


def _lazy_init(
    box: list[type[Any]], fields: dict[str, Field[Any]], frozen: bool
) -> Callable[..., None]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        owner = box[0]
        init = _compile_init(owner, fields, frozen)
        owner.__init__ = init
        init(self, *args, **kwargs)

    return __init__


def _compile_init(
    owner: type[Any], fields: dict[str, Field[Any]], frozen: bool
) -> Callable[..., None]:
    params, body = ["self"], []
    env: dict[str, Any] = {"_set": _SET, "_FACTORY": _FACTORY}
    for name, f in fields.items():
        if f.default_factory is not MISSING:
            env[f"_f_{name}"] = f.default_factory
            params.append(f"{name}=_FACTORY")
            value = f"_f_{name}() if {name} is _FACTORY else {name}"
        else:
            if f.default is not MISSING:
                env[f"_d_{name}"] = f.default
                params.append(f"{name}=_d_{name}")
            else:
                params.append(name)
            value = name
        body.append(f"_set(self, {name!r}, {value})" if frozen else f"self.{name} = {value}")
    if hasattr(owner, "__post_init__"):
        body.append("self.__post_init__()")
    source = f"def __init__({', '.join(params)}):\n    " + "\n    ".join(body or ["pass"])
    exec(source, env)  # noqa: S102 - the source is built from field names only
    init: Callable[..., None] = env["__init__"]
    init.__qualname__ = f"{owner.__qualname__}.__init__"
    return init


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The compared fields' values as a tuple, read in C (what eq and hash compare)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda self: (one(self),)
    return lambda self: ()


def _repr_of(shown: tuple[str, ...]) -> Callable[[Any], str]:
    def __repr__(self: Any) -> str:
        body = ", ".join(f"{n}={getattr(self, n)!r}" for n in shown)
        return f"{type(self).__qualname__}({body})"

    return __repr__


def _eq_of(get: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, object], bool]:
    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is self.__class__:
            return get(self) == get(other)
        return NotImplemented

    return __eq__


def _hash_of(get: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(get(self))

    return __hash__


def _frozen_setattr(self: Any, name: str, value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _getstate_of(names: tuple[str, ...]) -> Callable[[Any], list[Any]]:
    def __getstate__(self: Any) -> list[Any]:
        return [getattr(self, n) for n in names]

    return __getstate__


def _setstate_of(names: tuple[str, ...]) -> Callable[[Any, list[Any]], None]:
    def __setstate__(self: Any, state: list[Any]) -> None:
        for n, v in zip(names, state, strict=True):
            _SET(self, n, v)

    return __setstate__
