"""The exceptions and warnings of interchange_hub.

Every error a user can hit derives from :class:`InterchangeError`::

    InterchangeError
    ├── UnsupportedObjectError (also TypeError)   no adapter or protocol recognises the object
    ├── UnknownTargetError (also ValueError)      ``to=`` names no known library or type
    ├── InvalidOptionError (also ValueError)      an option has a value the hub does not take
    │   └── DeviceError                           a device is misspelled or not available
    ├── NoRouteError                              no chain of adapters can produce the target
    │   └── CopyRequiredError                     only routes that copy exist, and copy=False
    ├── LossyConversionError                      strict=True and a step would lose information
    ├── ConsumedSourceError                       a one-shot stream or capsule was already read
    ├── ProtocolError                             a producer broke the Arrow/DLPack contract
    ├── ConversionError                           a library failed while running a step
    └── MissingDependencyError (also ImportError) a library is needed but not installed

    LossyConversionWarning (UserWarning)          a step loses information (strict=False)
    PluginWarning (UserWarning)                   a plugin failed and was left out
    WriteThroughWarning (UserWarning)             writing to the result would change the source
"""

from __future__ import annotations

import io
import re
import sys
import warnings
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence


class InterchangeError(Exception):
    """Base class of every error raised by interchange_hub."""


class UnsupportedObjectError(InterchangeError, TypeError):
    """The object is not owned by any adapter and exposes no interchange protocol.

    ``supported`` lists the qualified type names the registered adapters own; the message
    leads with a hint for common Python objects (a list, a dict, None, a generator).
    """

    def __init__(self, obj: object, supported: Sequence[str]) -> None:
        self.type_name = f"{type(obj).__module__}.{type(obj).__qualname__}"
        self.supported = tuple(supported)
        hint = _object_hint(obj, self.supported)
        if hint:
            message = f"cannot convert {_describe(obj)}: {hint}"
        else:
            message = (
                f"cannot convert a {self.type_name} object: no adapter owns it, and it has "
                "no Arrow (__arrow_c_stream__, __arrow_c_array__) or DLPack (__dlpack__) "
                "export; convert it to a supported type, or install its library's plugin"
                "\nSupported: " + (_grouped(self.supported) or "nothing (no adapters)")
            )
        super().__init__(message)


class UnknownTargetError(InterchangeError, ValueError):
    """``to=`` names no registered library or type.

    ``known`` lists the registered target names (and, for a type, their types). The
    classmethods build the message for each kind of ``to=``: a name, a type, a module or
    another object (data passed as ``to=`` by mistake, say).
    """

    def __init__(
        self,
        target: object,
        known: Sequence[str],
        suggestions: Sequence[str] = (),
        *,
        message: str = "",
    ) -> None:
        self.target = target
        self.known = tuple(known)
        self.suggestions = tuple(suggestions)
        if not message:
            shown = target if isinstance(target, str) else _describe(target)
            label = f"to={shown!r}" if isinstance(target, str) else f"to={shown}"
            unknown = f"unknown target {shown!r}" if isinstance(target, str) else label
            message = _name_message(label, unknown, shown, self.known, self.suggestions)
        super().__init__(message)

    @classmethod
    def for_name(
        cls, name: str, known: Sequence[str], suggestions: Sequence[str] = ()
    ) -> UnknownTargetError:
        """``to="..."`` names no registered adapter or alias."""
        found = list(suggestions)
        other = OTHER_NAMES.get(name.strip().lower(), "")
        if other in known and other not in found:
            found.insert(0, other)
        message = _name_message(f"to={name!r}", f"unknown target {name!r}", name, known, found)
        return cls(name, known, found, message=message)

    @classmethod
    def for_module(
        cls, module: str, known: Sequence[str], suggestions: Sequence[str] = ()
    ) -> UnknownTargetError:
        """``to=<module>``: a module whose name is no registered library or alias."""
        top = module.split(".")[0]
        label = f"to={module} (a module)"
        unknown = f"to= got the module {module}, which is no library the hub knows"
        message = _name_message(label, unknown, top, known, suggestions)
        return cls(module, known, suggestions, message=message)

    @classmethod
    def for_type(
        cls,
        target: type,
        known: Sequence[str],
        types: Sequence[str],
        owner: str = "",
        owner_types: Sequence[str] = (),
    ) -> UnknownTargetError:
        """``to=<type>``: no adapter makes that type (``owner``: the adapter of its library,
        which makes ``owner_types`` instead)."""
        name = f"{target.__module__}.{target.__qualname__}"
        top = target.__module__.split(".")[0]
        what = f"to={name}"
        if owner:
            made = ", ".join(owner_types) or "no types"
            first = (
                f"{what}: the {owner} adapter does not make that type; it makes {made}. "
                f"Pass one of those, or to={owner!r}"
            )
            return cls(name, [*known, *types], message=first)
        if top in PLUGIN_TARGETS or top in UNSUPPORTED_LIBRARIES:
            message = _name_message(what, what, top, known, ())
            return cls(name, [*known, *types], message=message)
        if top == "builtins":
            first = (
                f"{what}: the hub converts between data libraries, not to Python "
                f"{target.__qualname__} objects; convert to a library, then use its own "
                "method (.to_pylist(), .tolist(), .to_dict(), ...)"
            )
        else:
            first = (
                f"{what}: no adapter makes that type; to= takes a library name or one of "
                "the types its adapter makes"
            )
        return cls(name, [*known, *types], message=_join(first, _known_targets(known)))

    @classmethod
    def for_object(
        cls, target: object, known: Sequence[str], owner: str = ""
    ) -> UnknownTargetError:
        """``to=`` is neither a name, nor a type, nor a module: data passed by mistake, say
        (``owner``: the adapter that owns it). The message never shows the object itself."""
        if target is None:
            first = "to= is None: pass the library name or type to convert to, e.g. to='polars'"
            return cls(target, known, message=_join(first, _known_targets(known)))
        kind = type_name(target)
        first = (
            f"to= takes a library name or type, got {_a(kind)} {kind} object; did you mean "
            "to convert it? ih.convert(obj, to=...)"
        )
        if owner:
            first += f". For a result of the same type, pass to={kind} or to={owner!r}"
        return cls(target, known, message=_join(first, _known_targets(known)))


class InvalidOptionError(InterchangeError, ValueError):
    """An option (``copy=``, ``strict=``, ``device=``) has a value the hub does not take."""


class DeviceError(InvalidOptionError):
    """A device name cannot be parsed, or the device is not available."""


class NoRouteError(InterchangeError):
    """No chain of registered adapters can take the data to the target.

    The message leads with the most relevant reason; ``reasons`` keeps every step that
    was tried and why it could not carry the data (``"arrow -> dlpack: ..."``).
    """

    def __init__(self, message: str = "", reasons: Sequence[str] = ()) -> None:
        self.reasons = tuple(reasons)
        super().__init__(message)


class CopyRequiredError(NoRouteError):
    """``copy=False`` was asked for, but every route copies at least one column."""

    def __init__(self, message: str, columns: Sequence[str] = ()) -> None:
        self.columns = tuple(columns)
        super().__init__(message)


class LossyConversionError(InterchangeError):
    """``strict=True`` was asked for and a step of the plan would lose information."""


class ConsumedSourceError(InterchangeError):
    """A one-shot stream or capsule has already been read and cannot be read again."""


class ProtocolError(InterchangeError):
    """A producer returned something that breaks the Arrow PyCapsule or DLPack contract."""


class ConversionError(InterchangeError):
    """A library raised while a step of the plan was running; the cause is chained."""


class MissingDependencyError(InterchangeError, ImportError):
    """A library needed for this conversion is not installed."""

    def __init__(self, module: str, extra: str, why: str = "", requirement: str = "") -> None:
        self.module = module
        self.extra = extra
        self.requirement = requirement or f"interchange-hub[{extra}]"
        reason = f" {why}" if why else ""
        super().__init__(
            f"{module} is required{reason} but is not installed. "
            f"Install it with: pip install '{self.requirement}'",
            name=module,
        )


class LossyConversionWarning(UserWarning):
    """A conversion step cannot hold a column faithfully and changes it.

    The message names the column, the source type, the target type and what is lost.
    Pass ``strict=True`` to turn it into a :class:`LossyConversionError`.
    """


class PluginWarning(UserWarning):
    """A plugin failed to load, raised in a hook or clashed with another; it was left out.

    The message names the plugin and its distribution; ``interchange-hub plugins`` lists
    the failure too. The other adapters keep working.
    """


class WriteThroughWarning(UserWarning):
    """The result shares memory its source treats as immutable, and its library ignores
    read-only flags (torch): writing to the result would change the source.

    Pass ``copy=True`` for independent memory, or filter the warning once the result is
    only read (``warnings.filterwarnings("ignore", category=ih.WriteThroughWarning)``).
    Shown once per call site, as torch's own ``from_numpy`` warns once. A site is a code
    object and the call's instruction in it: code compiled anew (a notebook cell run
    again, a string passed to ``exec``) is a new site.
    """


def library_message(exc: BaseException) -> str:
    """``exc``'s message without the Python traceback pyarrow writes into the message of
    an error a Python producer of its stream raised ("... Detail: Python exception:
    Traceback (most recent call last): ..."): the error itself is chained."""
    text = str(exc)
    cut = text.find(" Detail: Python exception:")
    return (text[:cut] if cut >= 0 else text).strip()


def warn(message: str, category: type[Warning]) -> None:
    """Warn, pointing at the first frame outside this package (the user's code)."""
    warnings.warn(message, category, stacklevel=_caller_outside_package())


def warn_all(messages: tuple[str, ...], category: type[Warning], inside: int = 0) -> None:
    """:func:`warn` for each message, the user's frame found once; ``inside``: how many
    frames from the caller up are certainly this package's (passed over without a look).
    Each message goes to ``warnings.warn_explicit`` with the context ``warnings.warn``
    would find (file, line, module, its ``__warningregistry__``), looked up once, not
    once a message (a walk of as many frames as the stack level, each made an object)."""
    frame = _frame_outside_package(2 + inside)
    if frame is None:  # (no frame outside the package: as warnings.warn would say)
        for message in messages:
            warnings.warn(message, category, stacklevel=2 + inside)
        return
    module_globals = frame.f_globals
    registry = module_globals.setdefault("__warningregistry__", {})
    module = module_globals.get("__name__", "<string>")
    code = frame.f_code
    # The line of the call: kept by call site, the code object and its instruction (a
    # frame's f_lineno decodes the code's line table up to the instruction on every read:
    # 0.5 us for a script's module code, more the further down; f_lasti is a plain read).
    # The code is held with its line, so that its id stays its own while kept (an entry
    # found is this code's: no other object can have that id meanwhile).
    site = (id(code), frame.f_lasti)
    kept = _LINES.get(site)
    if kept is not None:
        lineno = kept[1]
    else:
        if len(_LINES) >= 4096:
            _LINES.clear()
        lineno = frame.f_lineno
        _LINES[site] = (code, lineno)
    filename = code.co_filename
    for message in messages:
        # (without module_globals, as warnings.warn's C code calls it: given them,
        # warn_explicit asks the module's loader for its source on every call, 30 us)
        warnings.warn_explicit(message, category, filename, lineno, module, registry)


# warn_all's call sites: (id of a code object, instruction) -> (the code, its line there)
_LINES: dict[tuple[int, int], tuple[object, int]] = {}


def _caller_outside_package() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside this package."""
    frame = sys._getframe(2)  # the caller of warn's caller
    level = 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("interchange_hub"):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def _frame_outside_package(start: int) -> Any:
    """The first frame outside this package from ``sys._getframe(start)`` up (2: the
    caller of this function's caller; ``sys._getframe`` passes over the frames below
    without making a frame object of each, as f_back does), or None where the stack holds
    none."""
    frame: Any
    try:
        frame = sys._getframe(start)
    except ValueError:  # a stack shallower than that (a C caller's thread): from the start
        frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("interchange_hub"):
        frame = frame.f_back
    return frame


# -- what the messages know about libraries ------------------------------------------------
# The engine names no library; the library-specific parts of its messages live here.

# Targets a third-party plugin of this project provides: name -> the plugin's distribution
# (its import name is the distribution's, with underscores).
PLUGIN_TARGETS: dict[str, str] = {
    "duckdb": "interchange-hub-duckdb",
    "arro3": "interchange-hub-arro3",
    "jax": "interchange-hub-jax",
    "datasets": "interchange-hub-datasets",
    "xarray": "interchange-hub-xarray",
}

# Engines whose collections a plugin converts partition-wise (sources only): name ->
# the plugin's distribution, named when such a collection meets a hub without it.
PLUGIN_SOURCES: dict[str, str] = {
    "dask": "interchange-hub-dask",
    "ray": "interchange-hub-ray",
}

# Well-known libraries no adapter covers yet: name or alias -> (its title, a way meanwhile).
_TF = ("TensorFlow", "tf.convert_to_tensor(ih.convert(obj, to='numpy'))")
_SPARK = ("PySpark", "spark.createDataFrame(ih.convert(obj, to='pandas'))")
UNSUPPORTED_LIBRARIES: dict[str, tuple[str, str]] = {
    "tensorflow": _TF,
    "tf": _TF,
    "dask": ("Dask", "dd.from_pandas(ih.convert(obj, to='pandas'), npartitions=1)"),
    "ray": ("Ray Data", "ray.data.from_arrow(ih.convert(obj, to='pyarrow'))"),
    "cudf": ("cuDF", "cudf.DataFrame.from_arrow(ih.convert(obj, to='pyarrow'))"),
    "modin": ("Modin", "mpd.DataFrame(ih.convert(obj, to='pandas'))"),
    "pyspark": _SPARK,
    "spark": _SPARK,
}

# Other names users give a target library: name -> the adapter's name (suggested only
# where that adapter is registered).
OTHER_NAMES: dict[str, str] = {
    "pytorch": "torch",
    "tensor": "torch",
    "ndarray": "numpy",
    "jnp": "jax",
    "huggingface": "datasets",
}

FIRST_LINE = 300  # the most characters a message's first line should have
_SAME_LINE = 200  # a line that ends in a list of targets stays shorter than this
_MOST_LISTED = 15  # names a "Known targets" list shows before "and N more"
_DEVICE_LIKE = r"^(cpu|cuda|gpu|mps)(:\d+)?$"  # compiled on first use, by re's cache


def _name_message(
    label: str, unknown: str, name: str, known: Sequence[str], suggestions: Sequence[str]
) -> str:
    """The message for a target ``name`` no adapter has: a plugin to install, a library
    not supported yet, a device given as the target, or the nearest names.

    ``label`` is how the message shows what was passed (``to='x'``); ``unknown`` how it
    says that it is unknown (``unknown target 'x'``)."""
    key = name.strip().lower()
    listing = _known_targets(known)
    plugin = PLUGIN_TARGETS.get(key)
    if plugin is not None and key not in known:
        return _join(_plugin_message(label, plugin), listing)
    library = UNSUPPORTED_LIBRARIES.get(key)
    if library is not None:
        title, meanwhile = library
        first = (
            f"{label}: {title} is not supported (yet): no built-in adapter or loaded plugin "
            f"converts to it (a plugin can add one). Meanwhile: {meanwhile}"
        )
        return _join(first, listing)
    if re.match(_DEVICE_LIKE, key):
        first = f"{label} names a device, not a library: pass both, e.g. to='torch', device={key!r}"
        return _join(first, listing)
    if suggestions:
        first = f"{unknown}. Did you mean {' or '.join(repr(s) for s in suggestions)}?"
        if "." in key:
            first += f" (a type goes in as itself, to={name.strip()}, not as a string)"
        return _join(first, listing)
    first = (
        f"{unknown}: no adapter has that name or alias; to= takes a library name "
        "(to='polars') or one of its types (to=pl.Series)"
    )
    return _join(first, listing)


def _plugin_message(label: str, distribution: str) -> str:
    if not _distribution_installed(distribution):
        return f"{label} needs the plugin {distribution}: pip install {distribution}"
    module = distribution.replace("-", "_")
    return (
        f"{label} needs the plugin {distribution} (pip install {distribution}); it is "
        "installed but this hub did not load it (autoload is off, or "
        f"INTERCHANGE_HUB_LOAD_PLUGINS leaves it out): use Hub(plugins=[{module!r}])"
    )


def _distribution_installed(distribution: str) -> bool:
    from importlib.metadata import PackageNotFoundError, distribution as find

    try:
        find(distribution)
    except PackageNotFoundError:
        return False
    return True


def _known_targets(known: Sequence[str]) -> str:
    if not known:
        return "No targets are registered in this hub."
    shown = ", ".join(known[:_MOST_LISTED])
    more = f" and {len(known) - _MOST_LISTED} more" if len(known) > _MOST_LISTED else ""
    return f"Known targets: {shown}{more}."


def _join(first: str, extra: str) -> str:
    """``first``, then ``extra`` on the same line while the line stays short, else on the
    next one (the cause and the fix come first, the list of targets is detail)."""
    joined = first if first.endswith((".", "?", "!")) else first + "."
    if len(joined) + 1 + len(extra) <= _SAME_LINE:
        return f"{joined} {extra}"
    return f"{joined}\n{extra}"


def type_name(obj: object) -> str:
    """``polars.DataFrame`` for a polars DataFrame, ``list`` for a list."""
    cls = type(obj)
    top = cls.__module__.split(".")[0]
    return cls.__qualname__ if top == "builtins" else f"{top}.{cls.__qualname__}"


def _a(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _describe(obj: object) -> str:
    """``None``, ``a list``, ``an int``, ``a polars.DataFrame``: never the object itself."""
    if obj is None:
        return "None"
    kind = type_name(obj)
    return f"{_a(kind)} {kind}"


def _grouped(types: Sequence[str]) -> str:
    """``pyarrow (Table, Array), polars (DataFrame)`` for qualified type names."""
    groups: dict[str, list[str]] = {}
    for name in types:
        library, _, short = name.rpartition(".")
        groups.setdefault(library or name, []).append(short)
    return ", ".join(f"{lib} ({', '.join(names)})" for lib, names in groups.items())


def _object_hint(obj: object, supported: Sequence[str]) -> str:
    """What to do with a common object no adapter owns ("" when there is no hint)."""
    libraries = {name.split(".")[0] for name in supported}

    def either(*options: tuple[str, str]) -> str:
        """The examples of the first two ``(library, code)`` options that are registered."""
        codes = [code for library, code in options if library in libraries][:2]
        return " or ".join(codes or [code for _, code in options[:2]])

    cls = type(obj)
    module = cls.__module__
    if obj is None:
        return (
            "did a function return nothing (an inplace=True method, say)? Pass the data "
            "itself: a table, frame, array or tensor"
        )
    if isinstance(obj, Mapping):
        example = either(
            ("polars", "pl.DataFrame(d)"), ("pyarrow", "pa.table(d)"), ("pandas", "pd.DataFrame(d)")
        )
        return f"build a table from it first, e.g. {example}"
    if isinstance(obj, (list, tuple)):
        if obj and isinstance(obj[0], Mapping):
            example = either(
                ("polars", "pl.DataFrame(rows)"),
                ("pyarrow", "pa.Table.from_pylist(rows)"),
                ("pandas", "pd.DataFrame(rows)"),
            )
            return f"a {cls.__name__} of rows: build a table from it first, e.g. {example}"
        example = either(
            ("pyarrow", "pa.array(lst)"),
            ("numpy", "np.asarray(lst)"),
            ("polars", "pl.Series(lst)"),
            ("torch", "torch.tensor(lst)"),
        )
        return f"build an array from it first, e.g. {example}"
    if isinstance(obj, (set, frozenset)):
        example = either(("pyarrow", "pa.array(list(s))"), ("numpy", "np.asarray(list(s))"))
        return f"build an array from it first, e.g. {example}"
    if isinstance(obj, io.IOBase):
        return "read the file with its library first (e.g. pl.read_csv(f)), then convert that"
    if isinstance(obj, Iterator):
        example = either(("pyarrow", "pa.array(list(gen))"), ("numpy", "np.asarray(list(gen))"))
        batches = (
            ", or pa.RecordBatchReader.from_batches(schema, gen) for record batches"
            if "pyarrow" in libraries
            else ""
        )
        return f"it can be read only once and has no schema; materialise it first, e.g. {example}{batches}"
    if isinstance(obj, str):
        if obj.strip().lower() in libraries | PLUGIN_TARGETS.keys():
            return f"the data comes first and the target second: ih.convert(data, to={obj!r})"
        return (
            "a string is not data; to convert a file, read it with its library first "
            "(e.g. pl.read_parquet(path)) and convert the result"
        )
    if isinstance(obj, (bool, int, float, complex)):
        example = either(("numpy", "np.asarray(x)"), ("pyarrow", "pa.array([x])"))
        return f"a single number is not data; wrap it first, e.g. {example}"
    if module.startswith("pandas") and cls.__qualname__.endswith("Index"):
        return "an index is not a frame or a series; pass idx.to_series() or idx.to_frame()"
    if module.startswith("polars") and cls.__qualname__ == "Expr":
        return "an expression holds no data; evaluate it first, e.g. df.select(expr)"
    if module == "numpy" and getattr(obj, "shape", None) == ():
        return "a numpy scalar is not an array; wrap it first, e.g. np.asarray(x)"
    engine = module.split(".")[0]
    if engine in PLUGIN_SOURCES:
        distribution = PLUGIN_SOURCES[engine]
        return (
            f"a {engine} collection is converted partition-wise by the plugin {distribution}: "
            f"pip install {distribution} (or, if it is installed, let the hub load it: "
            "INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD unset, or ih.Hub(plugins=[...]))"
        )
    return ""
