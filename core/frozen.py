"""``@frozen``: a frozen dataclass whose methods are not compiled at import.

``@dataclass(frozen=True)`` writes the source of ``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` for each class and
compiles each with ``exec`` when the class is defined: about 0.3 ms a class on
CPython 3.11-3.13, paid on every command for every record a module defines
(nodehost defines well over a hundred; see the docs' *Performance* page).  ``@frozen``
makes the same class without compiling anything: the fields are the stdlib's
own ``Field`` objects, collected as the stdlib collects them (so
:func:`dataclasses.fields`, :func:`~dataclasses.replace`,
:func:`~dataclasses.asdict` and :func:`~dataclasses.is_dataclass` work as ever)
and the methods run the same code for every class, each class's own function
objects given its layout (field names, defaults, computed once as the class is
made) as a default argument: no closures, cells and captured tuples per method
(about 0.2 MiB of a running node's memory).
That is for a plain record (every one of nodehost's: see
:func:`_collect_plain_fields`); anything else (``ClassVar``, ``InitVar``,
``KW_ONLY``, a base that is not a plain frozen record...) is made by
``@dataclass(frozen=True)`` itself.

The contract is the stdlib's for ``@dataclass(frozen=True)``: positional and
keyword arguments in field order, defaults and ``default_factory``, fields with
``init=False``, ``__post_init__``, ``repr``/``compare``/``hash`` of
:func:`dataclasses.field`, equality only between instances of the same class,
:class:`dataclasses.FrozenInstanceError` on assignment and deletion,
``__match_args__``, and ``inspect.signature(cls)`` naming the fields (computed
on first use).  Methods a class defines itself are kept.  Constructing an
instance costs about 1 µs more than the compiled ``__init__``: a class whose
instances are made in a hot loop (DNS answers, per-packet values) keeps
``@dataclass(frozen=True, slots=True)``.  Type checkers see a frozen dataclass
(:func:`typing.dataclass_transform`).
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError
from types import FunctionType, MemberDescriptorType
from typing import TYPE_CHECKING, Any, TypeVar, cast, dataclass_transform

if TYPE_CHECKING:  # pragma: no cover
    import inspect

T = TypeVar("T", bound=type)


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, Field))
def frozen(cls: T) -> T:
    """Make ``cls`` a frozen dataclass, as ``@dataclass(frozen=True)`` does (module docstring).

    A record that is not plain (:func:`_collect_plain_fields`) is the stdlib's, whole:
    ``InitVar``, ``KW_ONLY`` and the like change its ``__init__``.
    """
    if not _collect_plain_fields(cls):
        return cast(T, dataclasses.dataclass(cls, frozen=True))
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    params.init = params.repr = params.eq = params.frozen = True
    fields = dataclasses.fields(cls)
    record: Any = cls  # type checkers refuse the methods' assignment on a type
    layout = _Layout(cls, fields)
    explicit_hash = _explicit_hash(cls)  # before __eq__ is added
    for name in ("__init__", "__repr__", "__eq__"):
        if name not in cls.__dict__:
            setattr(cls, name, _method(cls, name, layout))
    if not explicit_hash:
        record.__hash__ = _method(cls, "__hash__", layout)
    for name in ("__setattr__", "__delattr__"):
        if name in cls.__dict__:
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    record.__setattr__ = _method(cls, "__setattr__", layout)
    record.__delattr__ = _method(cls, "__delattr__", layout)
    record.__signature__ = _LAZY_SIGNATURE
    abc.update_abstractmethods(cls)  # the methods just added may implement abstract ones
    if not cls.__doc__:
        # The stdlib's docstring for an undocumented class, without its tokenize parsing.
        text = str(_signature(cls, resolved=False)).replace(" -> None", "")
        cls.__doc__ = cls.__name__ + text
    return cls


def _collect_plain_fields(cls: type) -> bool:
    """Give ``cls`` the fields the stdlib would, if it is the plain case; ``False`` if not.

    The plain case, every record of nodehost's: string annotations only (``from
    __future__ import annotations``) and none that is ``ClassVar``, ``InitVar``
    or ``KW_ONLY``, no ``kw_only`` field, no mutable default, no
    :func:`~dataclasses.field` without an annotation, and dataclass bases (if
    any) that are frozen with plain fields, whose fields come first as the
    stdlib orders them.  Anything else is left to the stdlib (and its errors),
    untouched.  The stdlib's ``_process_class`` with ``init``, ``repr`` and
    ``eq`` off spends most of its time telling a ``ClassVar`` from a field, by
    regular expression and module lookups, for every annotation: about 25 µs a
    record; with a dataclass base it also compiles a frozen ``__setattr__`` and
    ``__delattr__``: about 0.3 ms.
    """
    inherited = _inherited_fields(cls)
    found = _plain_fields(cls)
    if inherited is None or found is None:
        return False
    if _required_after_default({**inherited, **{name: made for name, _, made in found}}):
        return False  # the stdlib's error for it
    fields = inherited
    for name, annotation, made in found:
        made.name, made.type, made.kw_only = name, annotation, False
        made._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
        fields[name] = made
        if isinstance(getattr(cls, name, None), Field):
            if made.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, made.default)
    record: Any = cls  # type checkers refuse the dataclass attributes on a type
    record.__dataclass_fields__ = fields
    record.__dataclass_params__ = _PLAIN_PARAMS
    if "__match_args__" not in cls.__dict__:
        record.__match_args__ = tuple(f.name for f in fields.values() if f.init)  # type: ignore[misc]
    for name, method in _STDLIB_METHODS.items():
        if name not in cls.__dict__:
            setattr(cls, name, method)
    return True


def _explicit_hash(cls: type) -> bool:
    """Whether the class body sets ``__hash__`` itself, as the stdlib tells it: ``None``
    counts unless the body also defines ``__eq__`` (which sets ``__hash__`` to ``None``)."""
    body_hash = cls.__dict__.get("__hash__", MISSING)
    return not (body_hash is MISSING or (body_hash is None and "__eq__" in cls.__dict__))


def _required_after_default(fields: dict[str, Field[Any]]) -> bool:
    """Whether an ``__init__`` argument without a default follows one with a default."""
    seen_default = False
    for made in fields.values():
        if not made.init:
            continue
        if made.default is not MISSING or made.default_factory is not MISSING:
            seen_default = True
        elif seen_default:
            return True
    return False


def _inherited_fields(cls: type) -> dict[str, Field[Any]] | None:
    """The fields of ``cls``'s dataclass bases, later bases' overriding, as the stdlib
    collects them; ``None`` if a base is not frozen or has more than plain fields."""
    fields: dict[str, Field[Any]] = {}
    for base in cls.__mro__[-1:0:-1]:
        base_fields = getattr(base, "__dataclass_fields__", None)
        if base_fields is None:
            continue
        if not base.__dataclass_params__.frozen:  # type: ignore[attr-defined]
            return None
        for made in base_fields.values():
            if made._field_type is not dataclasses._FIELD:  # type: ignore[attr-defined]
                return None
            fields[made.name] = made
    return fields


def _plain_fields(cls: type) -> list[tuple[str, str, Field[Any]]] | None:
    """Each annotation of ``cls`` with its field, as the stdlib finds them (its default is
    the class attribute, a :func:`~dataclasses.field` or none); ``None`` unless plain."""
    # As the stdlib reads them; inspect.get_annotations would import inspect on every command.
    annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
    if "__annotate__" in cls.__dict__:  # annotations evaluated on demand (Python 3.14)
        return None
    if not isinstance(annotations, dict) or not _plain_annotations(annotations):
        return None
    if any(
        isinstance(value, Field) and name not in annotations for name, value in vars(cls).items()
    ):
        return None
    found = []
    for name, annotation in annotations.items():
        default = getattr(cls, name, MISSING)
        if isinstance(default, MemberDescriptorType):  # a __slots__ entry, as the stdlib
            default = MISSING
        made = default if isinstance(default, Field) else _field(default)
        if made.kw_only not in (MISSING, False) or _mutable(made.default):
            return None
        found.append((name, annotation, made))
    return found


#: Words that make an annotation more than a field's type to the stdlib.
_SPECIAL_ANNOTATIONS = ("ClassVar", "InitVar", "KW_ONLY")


def _field(default: object) -> Field[Any]:
    """The stdlib's field for an annotation whose default is ``default`` (or ``MISSING``)."""
    return cast("Field[Any]", dataclasses.field(default=default))


def _plain_annotations(annotations: dict[str, Any]) -> bool:
    return all(
        isinstance(text, str) and not any(word in text for word in _SPECIAL_ANNOTATIONS)
        for text in annotations.values()
    )


def _mutable(default: object) -> bool:
    """A default the stdlib refuses (``list``, ``dict``, ``set``: unhashable classes)."""
    return default is not MISSING and default.__class__.__hash__ is None


class _Template:
    """What the stdlib makes of a class with no fields and no options: the parameters
    and any method it adds to every dataclass (``__replace__`` from Python 3.13)."""


dataclasses.dataclass(_Template, init=False, repr=False, eq=False)
#: Shared by the classes of the plain case: every one has the same parameters.
_PLAIN_PARAMS: Any = _Template.__dataclass_params__  # type: ignore[attr-defined]
_PLAIN_PARAMS.init = _PLAIN_PARAMS.repr = _PLAIN_PARAMS.eq = _PLAIN_PARAMS.frozen = True
#: Methods the stdlib gives every dataclass that does not define them.
_STDLIB_METHODS = {
    name: _Template.__dict__[name] for name in ("__replace__",) if name in _Template.__dict__
}


class _Layout:
    """What the shared methods of one ``@frozen`` class need, computed once as it is made.

    Each method of the class gets it as a default argument (:func:`_method`) instead
    of closures over six values: a method always works with the fields of the class
    it was made for, called on a subclass's instance or through ``super()`` alike, as
    the stdlib's compiled methods do.  ``owner`` is that class (``__init__``'s error
    messages name it, the frozen ``__setattr__`` tells its instances from a subclass's).
    """

    __slots__ = (
        "compared",
        "defaults",
        "factories",
        "hashed",
        "init",
        "names",
        "owner",
        "post_init",
        "shown",
        "unset",
    )

    def __init__(self, cls: type, fields: tuple[Field[Any], ...]) -> None:
        self.owner = cls
        self.init = _shared(tuple(f.name for f in fields if f.init))
        self.defaults = {f.name: f.default for f in fields if f.init and f.default is not MISSING}
        self.factories = {
            f.name: f.default_factory for f in fields if f.init and f.default_factory is not MISSING
        }
        self.unset = tuple(
            (f.name, f.default_factory)
            for f in fields
            if not f.init and f.default_factory is not MISSING
        )
        self.post_init = hasattr(cls, "__post_init__")  # called as self.__post_init__()
        self.shown = _shared(tuple(f.name for f in fields if f.repr))
        self.compared = _shared(tuple(f.name for f in fields if f.compare))
        self.hashed = _shared(
            tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
        )
        self.names = _shared(tuple(f.name for f in fields))


_TUPLES: dict[tuple[str, ...], tuple[str, ...]] = {}


def _shared(names: tuple[str, ...]) -> tuple[str, ...]:
    """One tuple object for equal tuples of field names (most classes show, compare and
    hash the fields they take)."""
    return _TUPLES.setdefault(names, names)


# The code of every ``@frozen`` class's methods, as the stdlib's compiled ones behave; each
# class gets its own function objects of it, named after the class (:func:`_method`).


def _frozen_init(self: Any, /, *args: Any, __frozen_layout__: Any = None, **kwargs: Any) -> None:
    layout = __frozen_layout__
    names, setter = layout.init, object.__setattr__
    if len(args) > len(names):
        raise TypeError(
            f"{_label(layout)} takes {len(names) + 1} positional arguments"
            f" but {len(args) + 1} were given"
        )
    for name, value in zip(names, args, strict=False):
        if name in kwargs:
            raise TypeError(f"{_label(layout)} got multiple values for argument {name!r}")
        setter(self, name, value)
    left = len(kwargs)
    for name in names[len(args) :]:
        if name in kwargs:
            setter(self, name, kwargs[name])
            left -= 1
        elif name in layout.defaults:
            setter(self, name, layout.defaults[name])
        elif name in layout.factories:
            setter(self, name, layout.factories[name]())
        else:
            raise TypeError(f"{_label(layout)} missing required argument: {name!r}")
    if left:
        unknown = next(name for name in kwargs if name not in names[len(args) :])
        raise TypeError(f"{_label(layout)} got an unexpected keyword argument {unknown!r}")
    for name, factory in layout.unset:  # a plain default stays the class attribute's
        setter(self, name, factory())
    if layout.post_init:
        self.__post_init__()


def _frozen_repr(self: Any, layout: Any = None, /) -> str:
    shown = layout.shown
    values = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
    return f"{type(self).__qualname__}({values})"


def _frozen_eq(self: Any, other: object, layout: Any = None, /) -> bool:
    compared = layout.compared
    if other.__class__ is not self.__class__:
        return NotImplemented
    mine = tuple(getattr(self, name) for name in compared)
    return mine == tuple(getattr(other, name) for name in compared)


def _frozen_hash(self: Any, layout: Any = None, /) -> int:
    return hash(tuple(getattr(self, name) for name in layout.hashed))


def _frozen_setattr(self: Any, name: str, value: object, layout: Any = None, /) -> None:
    if type(self) is layout.owner or name in layout.names:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")
    super(layout.owner, self).__setattr__(name, value)


def _frozen_delattr(self: Any, name: str, layout: Any = None, /) -> None:
    if type(self) is layout.owner or name in layout.names:
        raise FrozenInstanceError(f"cannot delete field {name!r}")
    super(layout.owner, self).__delattr__(name)


#: The shared code of each method, by name.
_METHODS: dict[str, Callable[..., Any]] = {
    "__init__": _frozen_init,
    "__repr__": _frozen_repr,
    "__eq__": _frozen_eq,
    "__hash__": _frozen_hash,
    "__setattr__": _frozen_setattr,
    "__delattr__": _frozen_delattr,
}


def _method(cls: type, name: str, layout: _Layout) -> Callable[..., Any]:
    """``cls``'s own copy of the shared method ``name``: the same code with ``layout`` as
    its default last argument (``__init__``: keyword), named as the stdlib names its
    methods (``<class qualname>.<name>``)."""
    shared = _METHODS[name]
    method = FunctionType(shared.__code__, shared.__globals__, name)
    if name == "__init__":
        method.__kwdefaults__ = {"__frozen_layout__": layout}
    else:
        method.__defaults__ = (layout,)
    method.__qualname__ = f"{cls.__qualname__}.{name}"
    return method


def _label(layout: _Layout) -> str:
    return f"{layout.owner.__qualname__}.__init__()"


class _LazySignature:
    """``cls.__signature__``, built on each read (documentation tools, ``help()``).

    Its annotations are evaluated in the class's module where they can be, as
    Sphinx does with a compiled ``__init__``'s (``typing.get_type_hints``), so
    a rendered signature links to the types it names.
    """

    def __get__(self, instance: object, owner: type) -> inspect.Signature:
        return _signature(owner, resolved=True)


#: Shared by every class: it holds nothing of its own.
_LAZY_SIGNATURE = _LazySignature()


def _signature(cls: type, *, resolved: bool) -> inspect.Signature:
    """The signature of ``cls``'s ``__init__`` without ``self``; with ``resolved``, string
    annotations evaluated (all of them, or none if one cannot be: as ``get_type_hints``)."""
    import inspect
    import typing

    hints: dict[str, Any] = {}
    if resolved:
        with contextlib.suppress(Exception):
            hints = typing.get_type_hints(cls)
    parameters = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=_default(f),
            annotation=hints.get(f.name, f.type),
        )
        for f in dataclasses.fields(cls)
        if f.init
    ]
    return inspect.Signature(parameters, return_annotation=None)


def _default(field: Field[Any]) -> object:
    import inspect

    if field.default is not MISSING:
        return field.default
    if field.default_factory is not MISSING:
        return dataclasses._HAS_DEFAULT_FACTORY  # type: ignore[attr-defined]
    return inspect.Parameter.empty
