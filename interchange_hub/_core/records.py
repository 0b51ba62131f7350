"""Records: slotted value classes, as ``@dataclass(frozen=True, slots=True)`` makes them,
without compiling code when they are defined.

``dataclasses`` writes six methods of every class as source text and compiles each with
``exec`` while the class is being defined: 0.5 to 0.8 ms a class, about 20 ms of a fresh
interpreter's first ``ih.convert`` over the two dozen records the engine holds. A
``@record`` class gets shared ``__eq__``, ``__hash__``, ``__repr__`` and frozen
``__setattr__`` functions (closures over the field names, nothing compiled) and an
``__init__`` compiled once the class has made WARM_CALLS records (or its signature is
asked for; the first calls bind their arguments in Python), so a record the process
makes a few times costs no compile. That ``__init__`` is the code
``dataclasses`` would write: making a record costs what making a dataclass does.

A record is a dataclass to everything that asks: it carries ``__dataclass_fields__`` (real
``dataclasses.Field`` objects) and ``__dataclass_params__``, so ``dataclasses.fields``,
``replace``, ``asdict`` and ``is_dataclass`` work on it, as do pickling, ``copy``,
``copy.replace``, ``inspect.signature`` and tools that read dataclasses (dask's
``tokenize``); type checkers read the decorator as a dataclass one
(``dataclass_transform``). What it leaves out: ``order``, ``kw_only``, ``InitVar``,
``init=False`` fields and inheriting from another record or dataclass, which no record
of the hub uses (the decorator refuses them rather than getting them wrong).
"""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING, Field, FrozenInstanceError, field
from operator import attrgetter
from reprlib import recursive_repr
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
_MUTABLE_DEFAULTS = (list, dict, set)


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


class _Factory:
    """The default of a field with a default factory, in ``__init__`` (shown as
    ``dataclasses`` shows it)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _annotation_head(annotation: object) -> str:
    """``ClassVar`` of ``"ClassVar[int]"``, ``typing.ClassVar[int]`` or ``ClassVar``."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return str(text).split("[", 1)[0].strip().rsplit(".", 1)[-1]


def _own_annotations(cls: type[Any]) -> dict[str, Any]:
    """The class's own annotations, unevaluated where ``from __future__ import
    annotations`` keeps them as strings (every module of the hub does)."""
    own = cls.__dict__.get("__annotations__")  # noqa: RUF063 - no inspect import for this
    if own is None:  # Python 3.14's lazily evaluated annotations, or none at all
        import inspect

        own = inspect.get_annotations(cls)
    return dict(own)


_PARAMS: dict[bool, object] = {}


def _params(frozen: bool) -> object:
    """What ``__dataclass_params__`` says of a record, for tools that read it (dask's
    ``tokenize`` reads it of every dataclass). ``dataclasses._DataclassParams`` has more
    slots on newer Pythons: each is set, False where a record does not do it."""
    made = _PARAMS.get(frozen)
    if made is None:
        values = {"init": True, "repr": True, "eq": True, "frozen": frozen}
        values |= {"match_args": True, "slots": True}
        params_type = getattr(dataclasses, "_DataclassParams", None)
        if params_type is None:  # pragma: no cover - a Python that renamed it
            made = type("_RecordParams", (), values)()
        else:
            made = object.__new__(params_type)
            for name in params_type.__slots__:
                _SET(made, name, values.get(name, False))
        _PARAMS[frozen] = made
    return made


def _fields_of(cls: type[Any]) -> dict[str, Field[Any]]:
    fields: dict[str, Field[Any]] = {}
    seen_default = False
    for name, annotation in _own_annotations(cls).items():
        head = _annotation_head(annotation)
        if head == "ClassVar":
            continue
        if head == "InitVar":
            raise TypeError(f"{cls.__qualname__}.{name}: records take no InitVar fields")
        default = cls.__dict__.get(name, MISSING)
        f: Field[Any] = default if isinstance(default, Field) else field(default=default)
        if f.kw_only is True or not f.init:
            raise TypeError(f"{cls.__qualname__}.{name}: records take no kw_only/init=False")
        if isinstance(f.default, _MUTABLE_DEFAULTS):  # (the error dataclasses gives)
            raise ValueError(  # noqa: TRY004
                f"mutable default {type(f.default)} for field {name} is not allowed: "
                "use default_factory"
            )
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {name!r} follows default argument")
        seen_default = seen_default or has_default
        f.name = name
        f.type = annotation
        f.kw_only = False
        f._field_type = _FIELD  # type: ignore[attr-defined]
        fields[name] = f
    return fields


def _build(cls: type[_T], frozen: bool) -> type[_T]:
    for base in cls.__mro__[1:]:
        if "__dataclass_fields__" in base.__dict__:
            raise TypeError(f"{cls.__qualname__}: a record cannot inherit from a dataclass")
    fields = _fields_of(cls)
    names = tuple(fields)
    compared = tuple(n for n, f in fields.items() if f.compare)
    hashed = tuple(n for n, f in fields.items() if (f.compare if f.hash is None else f.hash))
    shown = tuple(n for n, f in fields.items() if f.repr)
    ns = {k: v for k, v in cls.__dict__.items() if k not in names and k not in _NOT_COPIED}
    ns["__slots__"] = names
    ns["__dataclass_fields__"] = fields
    ns["__dataclass_params__"] = _params(frozen)
    ns["__match_args__"] = names
    ns["__replace__"] = _replace  # copy.replace (Python 3.13)
    box: list[type[Any]] = []
    if "__init__" not in ns:
        ns["__init__"] = _lazy_init(box, fields, frozen)
        ns["__signature__"] = _LazySignature()
    if "__repr__" not in ns:
        ns["__repr__"] = _repr_of(shown)
    if "__eq__" not in ns:
        ns["__eq__"] = _eq_of(_getter(compared))
    explicit_hash = ns.get("__hash__") is not None  # (a class defining __eq__ has None)
    if frozen:
        if not explicit_hash:
            ns["__hash__"] = _hash_of(_getter(hashed))
        ns["__setattr__"] = _frozen_setattr
        ns["__delattr__"] = _frozen_delattr
        ns["__getstate__"] = _getstate_of(names)
        ns["__setstate__"] = _setstate_of(names)
    elif not explicit_hash:
        ns["__hash__"] = None  # as a dataclass with eq and not frozen: unhashable
    meta: Any = type(cls)
    made: type[_T] = meta(cls.__name__, cls.__bases__, ns)
    made.__qualname__ = cls.__qualname__
    box.append(made)
    return made


_NOT_COPIED = frozenset({"__dict__", "__weakref__"})


def _replace(self: Any, /, **changes: Any) -> Any:
    return dataclasses.replace(self, **changes)


# Records a class makes through the generic __init__ before its own is compiled: a
# compile costs 0.2-0.3 ms (3.6 ms of a fresh process's first conversion, over the 14
# records it makes), a generic call a few microseconds; a record made often gets its
# compiled __init__ after these.
WARM_CALLS = 8


def _lazy_init(
    box: list[type[Any]], fields: dict[str, Field[Any]], frozen: bool
) -> Callable[..., None]:
    names = tuple(fields)
    defaults = {n: f.default for n, f in fields.items() if f.default is not MISSING}
    factories = {
        n: f.default_factory for n, f in fields.items() if f.default_factory is not MISSING
    }
    required = sum(n not in defaults and n not in factories for n in names)
    calls = [0]  # (two threads may both count one call: a call more or less, no harm)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        calls[0] += 1
        if calls[0] > WARM_CALLS:
            _install_init(box[0], fields, frozen)(self, *args, **kwargs)
            return
        owner = box[0]
        values = _bind(owner, names, required, args, kwargs)
        put = _SET if frozen else setattr
        for name in names:
            if name in values:
                value = values[name]
            elif name in defaults:
                value = defaults[name]
            elif name in factories:
                value = factories[name]()
            else:
                raise _missing(owner, [n for n in names if n not in values | defaults | factories])
            put(self, name, value)
        if hasattr(owner, "__post_init__"):
            self.__post_init__()

    __init__.__record_lazy__ = (box, fields, frozen)  # type: ignore[attr-defined]
    return __init__


def _bind(
    owner: type[Any],
    names: tuple[str, ...],
    required: int,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> dict[str, Any]:
    """The arguments of a call by field name, refused as a compiled ``__init__`` refuses
    them (Python's messages)."""
    where = f"{owner.__qualname__}.__init__()"
    for key in kwargs:  # (Python looks at the keywords first)
        if key not in names:
            raise TypeError(f"{where} got an unexpected keyword argument {key!r}")
        if names.index(key) < len(args):
            raise TypeError(f"{where} got multiple values for argument {key!r}")
    if len(args) > len(names):
        most = len(names) + 1
        if required < len(names):
            takes = f"from {required + 1} to {most} positional arguments"
        else:
            takes = f"{most} positional argument{'s' if most > 1 else ''}"
        raise TypeError(f"{where} takes {takes} but {len(args) + 1} were given")
    values = dict(zip(names, args, strict=False))  # (fewer arguments than fields)
    values.update(kwargs)
    return values


def _missing(owner: type[Any], missing: list[str]) -> TypeError:
    quoted = [repr(n) for n in missing]
    listed = quoted[-1]
    if len(quoted) > 1:
        comma = "," if len(quoted) > 2 else ""
        listed = f"{', '.join(quoted[:-1])}{comma} and {quoted[-1]}"
    plural = "s" if len(quoted) > 1 else ""
    return TypeError(
        f"{owner.__qualname__}.__init__() missing {len(quoted)} required positional "
        f"argument{plural}: {listed}"
    )


def _install_init(
    owner: type[Any], fields: dict[str, Field[Any]], frozen: bool
) -> Callable[..., None]:
    """Compile ``owner``'s ``__init__`` and put it in place of the lazy one (two threads
    doing it at once each compile the same function, and either one is kept)."""
    init = _compile_init(owner, fields, frozen)
    owner.__init__ = init
    return init


class _LazySignature:
    """``inspect.signature`` of a record class: the signature of its ``__init__``
    (``help()`` and IPython show the fields), compiled now if it is not yet."""

    def __get__(self, instance: object, owner: type[Any]) -> Any:
        import inspect

        init: Callable[..., None] = owner.__dict__["__init__"]
        lazy = getattr(init, "__record_lazy__", None)
        if lazy is not None:
            box, fields, frozen = lazy
            init = _install_init(box[0], fields, frozen)
        sig = inspect.signature(init)
        return sig.replace(parameters=list(sig.parameters.values())[1:])


def _compile_init(
    owner: type[Any], fields: dict[str, Field[Any]], frozen: bool
) -> Callable[..., None]:
    # The function's own names start with "__record_": no field can take them.
    params, body = ["__record_self"], []
    env: dict[str, Any] = {
        "__name__": owner.__module__,
        "__record_set": _SET,
        "__record_factory": _FACTORY,
    }
    for name, f in fields.items():
        if f.default_factory is not MISSING:
            env[f"__record_f_{name}"] = f.default_factory
            params.append(f"{name}=__record_factory")
            value = f"__record_f_{name}() if {name} is __record_factory else {name}"
        else:
            if f.default is not MISSING:
                env[f"__record_d_{name}"] = f.default
                params.append(f"{name}=__record_d_{name}")
            else:
                params.append(name)
            value = name
        body.append(
            f"__record_set(__record_self, {name!r}, {value})"
            if frozen
            else f"__record_self.{name} = {value}"
        )
    if hasattr(owner, "__post_init__"):
        body.append("__record_self.__post_init__()")
    source = f"def __init__({', '.join(params)}):\n    " + "\n    ".join(body or ["pass"])
    exec(source, env)  # noqa: S102 - the source is built from field names only
    init: Callable[..., None] = env["__init__"]
    init.__qualname__ = f"{owner.__qualname__}.__init__"
    init.__annotations__ = {name: f.type for name, f in fields.items()} | {"return": None}
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
    @recursive_repr()
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
