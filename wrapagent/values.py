"""Frozen value classes without `dataclasses`.

The adapters and the configuration are built before every wrapped tool
starts. As frozen dataclasses they cost ~15 ms to import `dataclasses`
(it pulls in `inspect`, `ast`, `dis`, `tokenize`…) plus ~1-2 ms per class
for the code it generates. `Frozen` gives the part of that behaviour
wrapagent uses: keyword (or positional) construction with defaults,
equality, hashing, a readable repr, `replace`, and no assignment after
construction. A leaf module: it imports nothing.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Any, Callable, TypeVar

    T = TypeVar("T", bound="Frozen")


class Factory:
    """A default built afresh for each instance (a mutable default must not be shared)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


_REQUIRED = object()


class FrozenError(AttributeError):
    """Assignment to a field of a frozen value (an AttributeError, as with frozen dataclasses)."""


class Frozen:
    """Base of a frozen value: subclasses list `__slots__` (the fields, in order) and `_defaults`.

    `_defaults` maps a field to its default value, or to a `Factory`;
    fields without an entry are required.
    """

    __slots__ = ()
    _defaults: dict[str, Any] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        cls = type(self)
        names = cls.__slots__
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes at most {len(names)} positional arguments")
        defaults = cls._defaults
        for i, name in enumerate(names):
            if i < len(args):
                if name in kwargs:
                    raise TypeError(f"{cls.__name__}() got multiple values for argument {name!r}")
                value = args[i]
            elif name in kwargs:
                value = kwargs.pop(name)
            else:
                value = defaults.get(name, _REQUIRED)
                if value is _REQUIRED:
                    raise TypeError(f"{cls.__name__}() missing required argument {name!r}")
                if isinstance(value, Factory):
                    value = value.make()
            object.__setattr__(self, name, value)
        if kwargs:  # every known field was popped above
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {sorted(kwargs)[0]!r}")

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in type(self).__slots__)

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in type(self).__slots__)
        return f"{type(self).__name__}({fields})"

    def __copy__(self: T) -> T:
        return self  # immutable

    def __deepcopy__(self: T, memo: dict) -> T:
        import copy

        return type(self)(*(copy.deepcopy(v, memo) for v in self._values()))

    def __reduce__(self) -> tuple:
        return (type(self), self._values())


def replace(obj: T, **changes: Any) -> T:
    """A copy of `obj` with some fields changed (`dataclasses.replace` for `Frozen` values)."""
    names = type(obj).__slots__
    unknown = set(changes) - set(names)
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field {sorted(unknown)[0]!r}")
    return type(obj)(**{name: changes.get(name, getattr(obj, name)) for name in names})


def as_dict(obj: Frozen) -> dict[str, Any]:
    """The fields as a dict, nested `Frozen` values (also in lists, tuples, dicts) converted too."""
    return {name: _plain(getattr(obj, name)) for name in type(obj).__slots__}


def _plain(value: Any) -> Any:
    if isinstance(value, Frozen):
        return as_dict(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
