"""Values printed for the user to copy back into hooks.toml are TOML, and read back as the same value."""

from __future__ import annotations

import math
import sys

import pytest
from hypothesis import given, strategies as st

from wrapagent.hooks.tomlvalue import toml_key, toml_table, toml_value

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the runtime dependency below 3.11
    import tomli as tomllib


@pytest.mark.parametrize("value,text", [
    (True, "true"), (False, "false"), (4000, "4000"), (1.5, "1.5"),
    (("main", "master"), '["main", "master"]'), ("say \"hi\"\n", '"say \\"hi\\"\\n"'),
    ({"max_bytes": 4000}, "{ max_bytes = 4000 }"), ({}, "{}"), ([], "[]"),
])
def test_python_values_print_as_toml(value: object, text: str) -> None:
    assert toml_value(value) == text


def test_special_floats_print_as_toml_spells_them() -> None:
    assert [toml_value(v) for v in (math.inf, -math.inf)] == ["inf", "-inf"]
    assert toml_value(math.nan) == "nan"


def test_keys_are_bare_when_they_can_be_and_quoted_otherwise() -> None:
    assert toml_key("max_bytes") == "max_bytes"
    assert toml_key("two words") == '"two words"'
    assert toml_table([("a.b", 1)]) == '{ "a.b" = 1 }'


def test_anything_else_prints_as_its_string() -> None:
    class Branch:
        def __str__(self) -> str:
            return "main"

    assert toml_value(Branch()) == '"main"'


_SCALARS = st.one_of(st.booleans(), st.integers(-2**63, 2**63 - 1), st.text(),
                     st.floats(allow_nan=False, allow_infinity=False))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(st.text(), inner, max_size=4)),
                       max_leaves=10)


@given(_VALUES)
def test_what_is_printed_reads_back_as_the_same_value(value: object) -> None:
    assert tomllib.loads(f"v = {toml_value(value)}")["v"] == value
