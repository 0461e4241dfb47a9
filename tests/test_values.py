"""values.Frozen: the behaviour of frozen dataclasses that the adapters and the config rely on."""

from __future__ import annotations

import copy
import pickle

import pytest

from wrapagent.values import Factory, Frozen, FrozenError, as_dict, replace


class Point(Frozen):
    __slots__ = ("x", "y", "tags", "meta")
    _defaults = {"y": 0, "tags": (), "meta": Factory(dict)}


class Other(Frozen):
    __slots__ = ("x", "y", "tags", "meta")
    _defaults = {"y": 0, "tags": (), "meta": Factory(dict)}


def test_construction_positional_keyword_and_defaults():
    p = Point(1, tags=("a",))
    assert (p.x, p.y, p.tags, p.meta) == (1, 0, ("a",), {})
    assert Point(x=1, y=2) == Point(1, 2)


def test_factory_default_is_not_shared():
    a, b = Point(1), Point(2)
    a.meta["k"] = 1
    assert b.meta == {}


@pytest.mark.parametrize("make, message", [
    (lambda: Point(), "missing required argument 'x'"),
    (lambda: Point(1, 2, (), {}, 5), "at most 4 positional"),
    (lambda: Point(1, x=2), "multiple values for argument 'x'"),
    (lambda: Point(1, z=3), "unexpected keyword argument 'z'"),
])
def test_bad_arguments_are_type_errors(make, message):
    with pytest.raises(TypeError, match=message):
        make()


def test_frozen():
    p = Point(1)
    with pytest.raises(FrozenError):
        p.x = 2
    with pytest.raises(AttributeError):
        del p.y
    with pytest.raises(AttributeError):
        p.other = 1  # no __dict__ either
    assert p.x == 1


def test_equality_hash_and_repr():
    assert Point(1) == Point(1) and Point(1) != Point(2)
    assert Point(1) != Other(1)  # another class with the same fields is not equal
    assert hash(Point(1, meta=None)) == hash(Point(1, meta=None))
    assert len({Point(1, meta=None), Point(1, meta=None), Point(2, meta=None)}) == 2
    with pytest.raises(TypeError):
        hash(Point(1))  # a dict field: unhashable, as with a frozen dataclass
    assert repr(Point(1, tags=("a",), meta=None)) == "Point(x=1, y=0, tags=('a',), meta=None)"


def test_replace_copies_with_changes():
    p = Point(1, 2)
    q = replace(p, y=3)
    assert (q.x, q.y) == (1, 3) and (p.x, p.y) == (1, 2)
    with pytest.raises(TypeError, match="no field 'z'"):
        replace(p, z=1)


def test_copy_pickle_and_as_dict():
    p = Point(1, tags=(Point(2, meta=None),), meta={"k": [1]})
    assert copy.copy(p) is p
    deep = copy.deepcopy(p)
    assert deep == p and deep.meta is not p.meta
    assert pickle.loads(pickle.dumps(p)) == p
    assert as_dict(p) == {"x": 1, "y": 0, "tags": ({"x": 2, "y": 0, "tags": (), "meta": None},), "meta": {"k": [1]}}
