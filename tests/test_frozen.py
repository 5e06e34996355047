"""``@frozen`` behaves as ``@dataclass(frozen=True)``: each behaviour is checked on a pair of
twin classes, one made by each, so the stdlib is the specification."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import typing
from dataclasses import KW_ONLY, FrozenInstanceError, InitVar, dataclass, field
from typing import ClassVar

import pytest

from nodehost.frozen import frozen


def twins(body: str) -> tuple[type, type]:
    """The class ``body`` made by ``@frozen`` and by ``@dataclass(frozen=True)``."""
    return twins_made_by("frozen", body), twins_made_by("dataclass(frozen=True)", body)


def twins_made_by(decorator: str, body: str) -> type:
    namespace = {"frozen": frozen, "dataclass": dataclass, "field": field}
    exec(f"@{decorator}\nclass Twin:\n{body}", namespace)
    return namespace["Twin"]


BODY = """
    '''A record.'''
    name: str
    port: int = 0
    tags: list = field(default_factory=list)
    secret: str = field(default='', repr=False, compare=False)
    cached: int = field(default=7, init=False)
"""


def field_facts(made: dataclasses.Field) -> tuple:
    """Everything the stdlib records of a field (``_field_type`` tells a field from a ClassVar)."""
    return (
        *(getattr(made, name) for name in ("name", "type", "default", "default_factory")),
        *(getattr(made, name) for name in ("init", "repr", "hash", "compare", "kw_only")),
        dict(made.metadata),
        made._field_type,  # type: ignore[attr-defined]
    )


def outcome(call):
    try:
        return ("value", call())
    except Exception as error:
        return ("raised", type(error))


CALLS = [
    lambda cls: repr(cls("a")),
    lambda cls: repr(cls("a", 5, ["x"], "s")),
    lambda cls: repr(cls(name="a", port=2)),
    lambda cls: cls("a", 1) == cls("a", 1),
    lambda cls: cls("a", 1) == cls("a", 2),
    lambda cls: cls("a", secret="x") == cls("a", secret="y"),
    lambda cls: cls("a") == ("a", 0),
    # both instances alive: a freed one's address, and so its identity hash, is reused
    lambda cls: (lambda one, two: hash(one) == hash(two))(cls("a", 1, ()), cls("a", 1, ())),
    lambda cls: hash(cls("a", 1, (), "s")),
    lambda cls: cls("a").cached,
    lambda cls: cls("a").tags is not cls("a").tags,
    lambda cls: dataclasses.astuple(cls("a", 3)),
    lambda cls: dataclasses.asdict(dataclasses.replace(cls("a"), port=9)),
    lambda cls: [f.name for f in dataclasses.fields(cls)],
    lambda cls: [field_facts(f) for f in dataclasses.fields(cls)],
    lambda cls: {name: getattr(cls, name, "absent") for name in cls.__dataclass_fields__},
    lambda cls: cls.__match_args__,
    lambda cls: "__replace__" in cls.__dict__,  # the stdlib adds it from Python 3.13
    lambda cls: cls.__doc__,
    lambda cls: [(p.name, p.kind, p.default) for p in inspect.signature(cls).parameters.values()],
    lambda cls: dataclasses.is_dataclass(cls),
    lambda cls: cls.__dataclass_params__.frozen,
    lambda cls: cls(),
    lambda cls: cls("a", 1, [], "s", 9),
    lambda cls: cls("a", name="b"),
    lambda cls: cls("a", colour="red"),
    lambda cls: cls("a", cached=1),
    lambda cls: setattr(cls("a"), "port", 1),
    lambda cls: setattr(cls("a"), "other", 1),
    lambda cls: delattr(cls("a"), "port"),
    lambda cls: delattr(cls("a"), "other"),
    lambda cls: [
        getattr(cls, name).__qualname__
        for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")
    ],
    lambda cls: subclass_attributes(cls),
]


def subclass_attributes(cls: type) -> list:
    """What a plain (not dataclass) subclass's instance may set and delete: its own
    attributes, not the record's fields."""
    sub = type("Sub", (cls,), {})
    record = sub("a")
    return [
        outcome(lambda: setattr(record, "extra", 1)),
        outcome(lambda: record.extra),
        outcome(lambda: delattr(record, "extra")),
        outcome(lambda: setattr(record, "port", 2)),
        outcome(lambda: delattr(record, "name")),
    ]


@pytest.mark.parametrize("call", CALLS, ids=range(len(CALLS)))
def test_frozen_behaves_as_a_stdlib_frozen_dataclass(call):
    ours, stdlib = twins(BODY)
    assert outcome(lambda: call(ours)) == outcome(lambda: call(stdlib))


@pytest.mark.parametrize(
    "body",
    [
        # hash= of a field decides over compare=, as the stdlib's
        "    a: int\n    b: int = field(default=0, hash=False)\n"
        "    c: int = field(default=0, compare=False, hash=True)\n",
        "    a: int\n    b: int = field(init=False)\n",  # never set: no attribute
        "    __match_args__ = ('b',)\n    a: int = 0\n    b: int = 0\n",
        "    __slots__ = ('a', 'b')\n    a: int\n    b: int\n",
        "    a: int\n    b: int = field(default=0, kw_only=True)\n",
    ],
    ids=["hash", "init=False without default", "own match args", "slots", "kw_only field"],
)
def test_field_options_behave_as_the_stdlibs(body):
    calls = [
        lambda cls: hash(cls(1, 2, 3)),
        lambda cls: hash(cls(1, 2)),
        lambda cls: hash(cls(1)),
        lambda cls: repr(cls(1)),
        lambda cls: repr(cls(1, 2)),
        lambda cls: repr(cls(1, b=2)),
        lambda cls: cls(1).b,
        lambda cls: cls.__match_args__,
        lambda cls: [field_facts(f) for f in dataclasses.fields(cls)],
    ]
    ours, stdlib = twins(body)
    assert [outcome(lambda call=call: call(ours)) for call in calls] == [
        outcome(lambda call=call: call(stdlib)) for call in calls
    ]


def test_wrong_arguments_say_which_record_and_which_argument():
    """The stdlib's compiled ``__init__`` gets CPython's own messages; ``@frozen``'s say the
    same things in its own words."""
    ours = twins_made_by("frozen", BODY)
    calls = {
        "Twin.__init__() takes 5 positional arguments but 6 were given": lambda: ours(
            "a", 1, [], "s", 9
        ),
        "Twin.__init__() got multiple values for argument 'name'": lambda: ours("a", name="b"),
        "Twin.__init__() missing required argument: 'name'": lambda: ours(port=1),
        "Twin.__init__() got an unexpected keyword argument 'colour'": lambda: ours(
            "a", port=1, colour="red"
        ),
    }
    for message, call in calls.items():
        with pytest.raises(TypeError) as raised:
            call()
        assert str(raised.value) == message


def test_the_signature_names_the_types_as_documentation_tools_resolve_them():
    """Sphinx evaluates a compiled ``__init__``'s string annotations in its module
    (``typing.get_type_hints``); ``@frozen``'s class signature carries them evaluated."""
    ours, stdlib = twins(BODY)
    hints = typing.get_type_hints(stdlib.__init__)
    hints.pop("return")
    shown = {p.name: p.annotation for p in inspect.signature(ours).parameters.values()}
    assert shown == hints


def refuse_dataclass(*args, **kwargs):
    raise AssertionError("dataclasses.dataclass called for a plain record")


def test_a_plain_record_is_made_without_the_stdlib_decorator(monkeypatch):
    """Nodehost's records (string annotations, plain fields) skip ``dataclasses.dataclass``:
    its field collection was most of a record's import cost."""

    monkeypatch.setattr(dataclasses, "dataclass", refuse_dataclass)
    plain = twins_made_by("frozen", BODY)
    assert [f.name for f in dataclasses.fields(plain)][:2] == ["name", "port"]


def test_a_record_with_a_frozen_base_is_made_without_the_stdlib_decorator(monkeypatch):
    """``Probe``'s kinds: the stdlib compiled a frozen ``__setattr__`` and ``__delattr__``
    for each (about 0.3 ms a class); ``@frozen``'s own do the same."""

    @frozen
    class Base:
        a: int
        b: str = field(default="x", compare=False)

    monkeypatch.setattr(dataclasses, "dataclass", refuse_dataclass)

    @frozen
    class Child(Base):
        c: int = 3
        a: int = 1

    @frozen
    class Marker(Base):
        """A kind of ``Base`` without fields of its own (as ``StartedProbe``)."""

    assert [f.name for f in dataclasses.fields(Child)] == ["a", "b", "c"]
    assert [f.name for f in dataclasses.fields(Marker)] == ["a", "b"]
    with pytest.raises(FrozenInstanceError):
        Child().c = 4  # type: ignore[misc]


def inherited_twins(decorator: str) -> type:
    namespace = {"frozen": frozen, "dataclass": dataclass, "field": field}
    exec(
        f"@{decorator}\nclass Base:\n{BODY}\n"
        f"@{decorator}\nclass Child(Base):\n    extra: int = 2\n    port: int = 5\n",
        namespace,
    )
    return namespace["Child"]


INHERITED_CALLS = [
    lambda cls: [field_facts(f) for f in dataclasses.fields(cls)],
    lambda cls: {name: getattr(cls, name, "absent") for name in cls.__dataclass_fields__},
    lambda cls: cls.__match_args__,
    lambda cls: repr(cls("a")).split("(", 1)[1],
    lambda cls: cls("a") == cls("a", 5),
    lambda cls: setattr(cls("a"), "extra", 1),
    lambda cls: setattr(cls("a"), "name", 1),
    lambda cls: delattr(cls("a"), "port"),
    lambda cls: delattr(cls("a"), "other"),
    lambda cls: [
        getattr(cls, name).__qualname__
        for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")
    ],
    lambda cls: subclass_attributes(cls),
]


@pytest.mark.parametrize("call", INHERITED_CALLS, ids=range(len(INHERITED_CALLS)))
def test_a_frozen_subclass_behaves_as_the_stdlibs(call):
    ours, stdlib = inherited_twins("frozen"), inherited_twins("dataclass(frozen=True)")
    assert outcome(lambda: call(ours)) == outcome(lambda: call(stdlib))


def special_fields(decorate: typing.Callable[[type], type]) -> type:
    """A class whose annotations the stdlib reads as more than fields' types."""

    @decorate
    class Special:
        limit: ClassVar[int] = 3
        seed: InitVar[int] = 0  # type: ignore[assignment]
        name: str = ""
        _: KW_ONLY
        port: int = 0

    return Special


def test_class_and_init_variables_and_keyword_markers_are_the_stdlibs():
    ours, stdlib = special_fields(frozen), special_fields(dataclass(frozen=True))
    assert [field_facts(f) for f in dataclasses.fields(ours)] == [
        field_facts(f) for f in dataclasses.fields(stdlib)
    ]
    assert ours.limit == stdlib.limit == 3


def failures_of(make, expected=(TypeError,)) -> list[BaseException]:
    """What ``make(decorator)`` raised with ``@frozen``, then with the stdlib's decorator."""
    failures = []
    for decorator in ("frozen", "dataclass(frozen=True)"):
        with pytest.raises(expected) as raised:
            make(decorator)
        failures.append(raised.value)
    return failures


def exec_classes(source: str) -> None:
    """Run class definitions that name ``frozen`` and ``dataclass``."""
    exec(source, {"frozen": frozen, "dataclass": dataclass})


@pytest.mark.parametrize(
    "body",
    [
        "    tags: list = []\n",
        "    a: int\n    b = field(default=1)\n",
        "    a: int\n    def __setattr__(self, name, value):\n        pass\n",
        "    a: int\n    def __delattr__(self, name):\n        pass\n",
    ],
    ids=["mutable default", "field without annotation", "own setattr", "own delattr"],
)
def test_a_refused_class_fails_as_the_stdlib_fails_it(body):
    ours, stdlib = failures_of(
        lambda decorator: twins_made_by(decorator, body), (TypeError, ValueError)
    )
    assert (type(ours), str(ours)) == (type(stdlib), str(stdlib))


def test_undocumented_class_gets_the_stdlib_docstring():
    ours, stdlib = twins("    a: int\n    b: str = 'x'\n")
    assert ours.__doc__ == stdlib.__doc__ == "Twin(a: 'int', b: 'str' = 'x')"


def test_post_init_runs_after_the_fields_are_set():
    ours, stdlib = twins(
        "    a: int\n"
        "    def __post_init__(self):\n"
        "        if self.a < 0:\n"
        "            raise ValueError('negative')\n"
    )
    for cls in (ours, stdlib):
        with pytest.raises(ValueError, match="negative"):
            cls(-1)
        assert cls(1).a == 1


def test_methods_the_class_defines_are_kept():
    ours, stdlib = twins(
        "    a: int\n    def __repr__(self):\n        return 'mine'\n"
        "    def __eq__(self, other):\n        return True\n"
        "    def __hash__(self):\n        return 1\n"
    )
    for cls in (ours, stdlib):
        assert (repr(cls(1)), cls(1) == cls(2), hash(cls(3))) == ("mine", True, 1)


def test_a_subclass_is_frozen_and_extends_the_fields():
    @frozen
    class Base:
        a: int

    @frozen
    class Child(Base):
        b: int = 2

    child = Child(1)
    assert (child.a, child.b, repr(child)) == (
        1,
        2,
        "test_a_subclass_is_frozen_and_extends_the_fields.<locals>.Child(a=1, b=2)",
    )
    with pytest.raises(FrozenInstanceError):
        child.a = 3  # type: ignore[misc]


@pytest.mark.parametrize("method", ["__setattr__", "__delattr__"])
def test_a_subclass_defining_setattr_or_delattr_fails_as_the_stdlibs(method):
    ours, stdlib = failures_of(
        lambda decorator: exec_classes(
            f"@{decorator}\nclass Base:\n    a: int\n"
            f"@{decorator}\nclass Child(Base):\n    def {method}(self, *args):\n        pass\n"
        )
    )
    assert str(ours) == str(stdlib)


def test_fields_of_several_frozen_bases_come_in_the_stdlibs_order():
    """The stdlib collects fields along the reversed MRO: with ``C(A, B)``, ``B``'s first."""

    def made(decorator: str) -> type:
        namespace = {"frozen": frozen, "dataclass": dataclass}
        exec(
            f"@{decorator}\nclass Root:\n    r: int = 0\n"
            f"@{decorator}\nclass A(Root):\n    a: int = 1\n"
            f"@{decorator}\nclass B(Root):\n    b: int = 2\n    r: int = 9\n"
            f"@{decorator}\nclass C(A, B):\n    c: int = 3\n",
            namespace,
        )
        return namespace["C"]

    ours, stdlib = made("frozen"), made("dataclass(frozen=True)")
    assert [field_facts(f) for f in dataclasses.fields(ours)] == [
        field_facts(f) for f in dataclasses.fields(stdlib)
    ]
    assert repr(ours()).split("(", 1)[1] == repr(stdlib()).split("(", 1)[1]


def test_a_stdlib_frozen_dataclass_may_subclass_a_frozen_one():
    @frozen
    class Base:
        a: int

    @dataclass(frozen=True)
    class Child(Base):
        b: int = 2

    assert Child(1) == Child(1, 2)


PLAIN_SUBCLASS_CALLS = [
    lambda cls: repr(cls("a", 1)),
    lambda cls: cls("a", 1) == cls("a", 1),
    lambda cls: hash(cls("a", 1, ())) == hash(cls("a", 1, ())),
    lambda cls: cls("a") == cls.__mro__[1]("a"),
    lambda cls: setattr(cls("a"), "port", 1),
    lambda cls: setattr(cls("a"), "other", 1),
    lambda cls: delattr(cls("a"), "port"),
    lambda cls: cls(),
]


@pytest.mark.parametrize("call", PLAIN_SUBCLASS_CALLS, ids=range(len(PLAIN_SUBCLASS_CALLS)))
def test_a_subclass_that_is_not_a_dataclass_behaves_as_the_stdlibs(call):
    """It inherits the methods, and they answer with its base's fields."""
    ours, stdlib = (type("Sub", (base,), {}) for base in twins(BODY))
    assert outcome(lambda: call(ours)) == outcome(lambda: call(stdlib))


def test_a_records_methods_hold_no_closures():
    """What the methods need is read from the class's layout: no cells and captured tuples
    for each method of each record (about 3 KiB a record)."""
    ours = twins_made_by("frozen", BODY)
    for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
        assert ours.__dict__[name].__closure__ is None


def test_instances_copy_and_pickle():
    record = PICKLED("a", (1, 2))
    assert copy.copy(record) == record
    assert copy.deepcopy(record) == record
    assert pickle.loads(pickle.dumps(record)) == record


@frozen
class PICKLED:
    name: str
    values: tuple[int, ...] = ()


def super_calls(decorator: str) -> list:
    """A frozen subclass whose methods call its base's through ``super()``."""
    namespace = {"frozen": frozen, "dataclass": dataclass}
    exec(
        f"@{decorator}\nclass Base:\n    x: int\n"
        f"@{decorator}\nclass Sub(Base):\n    y: int = 5\n"
        "    def __init__(self, x):\n"
        "        super().__init__(x)\n"
        "        object.__setattr__(self, 'y', x * 2)\n"
        "    def __repr__(self):\n        return 'Sub:' + super().__repr__()\n"
        "    def __eq__(self, other):\n        return super().__eq__(other)\n"
        "    def __hash__(self):\n        return super().__hash__()\n",
        namespace,
    )
    sub, base = namespace["Sub"], namespace["Base"]
    return [
        outcome(lambda: vars(sub(3))),
        outcome(lambda: repr(sub(3)).split("(", 1)[1]),
        outcome(lambda: sub(3) == sub(3)),
        outcome(lambda: hash(sub(3)) == hash((3,))),
        outcome(lambda: base.__setattr__(sub(1), "z", 1)),
        outcome(lambda: base.__delattr__(sub(1), "x")),
    ]


def test_a_base_method_called_on_a_subclass_works_with_the_base_fields():
    """``super().__init__(x)`` of a frozen subclass takes the base's fields, as the stdlib's
    compiled methods do: each method is bound to the class it was made for."""
    assert super_calls("frozen") == super_calls("dataclass(frozen=True)")


@pytest.mark.parametrize(
    "body",
    [
        "    '''A record.'''\n    x: int = 0\n    y: int\n",
        "    x: int = 0\n    y: int\n",
    ],
    ids=["documented", "undocumented"],
)
def test_a_required_field_after_a_default_fails_as_the_stdlibs(body):
    ours, stdlib = failures_of(lambda decorator: twins_made_by(decorator, body))
    assert str(ours) == str(stdlib)


def test_an_inherited_default_before_a_required_field_fails_as_the_stdlibs():
    ours, stdlib = failures_of(
        lambda decorator: exec_classes(
            f"@{decorator}\nclass Base:\n    x: int = 0\n"
            f"@{decorator}\nclass Child(Base):\n    y: int\n"
        )
    )
    assert str(ours) == str(stdlib)


@pytest.mark.parametrize(
    "body",
    [
        "    a: int\n    __hash__ = None\n",
        "    a: int\n    b: int = field(default=4, init=False)\n",
        "    a: int\n    b: list = field(default_factory=list, init=False)\n",
    ],
    ids=["__hash__ = None in the body", "init=False default", "init=False factory"],
)
def test_body_hash_and_fields_outside_init_are_the_stdlibs(body):
    calls = [
        lambda cls: hash(cls(1)),
        lambda cls: vars(cls(1)),
        lambda cls: cls(1).b,
        lambda cls: pickle.loads(pickle.dumps(cls(1))) == cls(1),
    ]
    ours, stdlib = twins(body)
    for cls in (ours, stdlib):  # pickle finds them by name
        cls.__qualname__ = cls.__name__ = f"Twin{id(cls)}"
        globals()[cls.__name__] = cls
    try:
        assert [outcome(lambda call=call: call(ours)) for call in calls] == [
            outcome(lambda call=call: call(stdlib)) for call in calls
        ]
    finally:
        for cls in (ours, stdlib):
            del globals()[cls.__name__]


def test_the_methods_it_adds_implement_abstract_ones():
    import abc

    def made(decorator: str) -> type:
        namespace = {"frozen": frozen, "dataclass": dataclass, "abc": abc}
        exec(
            "class Shown(abc.ABC):\n"
            "    @abc.abstractmethod\n"
            "    def __repr__(self): ...\n"
            f"@{decorator}\nclass Record(Shown):\n    a: int\n",
            namespace,
        )
        return namespace["Record"]

    assert repr(made("frozen")(1)) == repr(made("dataclass(frozen=True)")(1)) == "Record(a=1)"


def test_a_plain_subclass_post_init_is_the_one_called():
    def made(decorator: str) -> list:
        namespace = {"frozen": frozen, "dataclass": dataclass, "calls": []}
        exec(
            f"@{decorator}\nclass Base:\n    a: int\n"
            "    def __post_init__(self):\n        calls.append('base')\n"
            "class Sub(Base):\n"
            "    def __post_init__(self):\n        calls.append('sub')\n"
            "Sub(1)\n",
            namespace,
        )
        return namespace["calls"]

    assert made("frozen") == made("dataclass(frozen=True)") == ["sub"]
