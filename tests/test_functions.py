"""The named map and filter functions (``model.functions``): each name's function on a range of
values, the defaults for no name, and the refusal of a bad name or argument with the operator
named."""

from __future__ import annotations

import pytest

from model.errors import InvalidJobSpec
from model.functions import filter_function, map_function

VALUES = (-7, -2, -1, 0, 1, 2, 3, 10, 11)


@pytest.mark.parametrize("name, f", [
    ("identity", lambda k, v: (k, v)),
    (None, lambda k, v: (k, v)),
    ("", lambda k, v: (k, v)),
    ("negate", lambda k, v: (k, -v)),
    ("double", lambda k, v: (k, 2 * v)),
    ("add:3", lambda k, v: (k, v + 3)),
    ("add:-4", lambda k, v: (k, v - 4)),
    ("add:0", lambda k, v: (k, v)),
    ("mod:3", lambda k, v: (k, v % 3)),
    ("mod:1", lambda k, v: (k, 0)),
    ("rekey_mod:4", lambda k, v: (v % 4, v)),
    ("rekey_mod:1", lambda k, v: (0, v)),
])
def test_a_map_function(name, f):
    m = map_function(name)
    for v in VALUES:
        assert m("key", v) == f("key", v), (name, v)
        assert m(7, v) == f(7, v), (name, v)


def test_the_map_functions_on_examples():
    assert map_function("negate")("a", 5) == ("a", -5)
    assert map_function("double")("a", -6) == ("a", -12)
    assert map_function("add:3")("a", 4) == ("a", 7)
    assert map_function("mod:3")("a", -7) == ("a", 2)
    assert map_function("mod:3")("a", 7) == ("a", 1)
    assert map_function("rekey_mod:4")("a", 10) == (2, 10)
    assert map_function("rekey_mod:4")("a", -3) == (1, -3)


@pytest.mark.parametrize("name, f", [
    ("all", lambda v: True),
    (None, lambda v: True),
    ("", lambda v: True),
    ("none", lambda v: False),
    ("even_value", lambda v: v % 2 == 0),
    ("odd_value", lambda v: v % 2 == 1),
    ("value_ge:2", lambda v: v >= 2),
    ("value_ge:-1", lambda v: v >= -1),
    ("value_ge:0", lambda v: v >= 0),
])
def test_a_filter_function(name, f):
    p = filter_function(name)
    for v in VALUES:
        assert p("key", v) is f(v), (name, v)


def test_the_filter_functions_on_examples():
    assert [v for v in VALUES if filter_function("even_value")("k", v)] == [-2, 0, 2, 10]
    assert [v for v in VALUES if filter_function("odd_value")("k", v)] == [-7, -1, 1, 3, 11]
    assert [v for v in VALUES if filter_function("value_ge:2")("k", v)] == [2, 3, 10, 11]
    assert [v for v in VALUES if filter_function("value_ge:3")("k", v)] == [3, 10, 11]


@pytest.mark.parametrize("name, text", [
    ("add:x", "operator 'm': function 'add:x' needs an integer argument (add:N)"),
    ("add:", "operator 'm': function 'add:' needs an integer argument (add:N)"),
    ("add:3:4", "operator 'm': function 'add:3:4' needs an integer argument (add:N)"),
    ("mod:y", "operator 'm': function 'mod:y' needs an integer argument (mod:N)"),
    ("mod:0", "operator 'm': function 'mod:0': N must be > 0"),
    ("mod:-2", "operator 'm': function 'mod:-2': N must be > 0"),
    ("rekey_mod:1.5", "operator 'm': function 'rekey_mod:1.5' needs an integer argument (rekey_mod:N)"),
    ("rekey_mod:0", "operator 'm': function 'rekey_mod:0': N must be > 0"),
    ("rekey_mod:-1", "operator 'm': function 'rekey_mod:-1': N must be > 0"),
    ("triple", "operator 'm': unknown map function 'triple' (known: identity, negate, double, add:N, mod:N, "
               "rekey_mod:N)"),
    ("add", "operator 'm': unknown map function 'add' (known: identity, negate, double, add:N, mod:N, rekey_mod:N)"),
    ("all", "operator 'm': unknown map function 'all' (known: identity, negate, double, add:N, mod:N, rekey_mod:N)"),
])
def test_a_bad_map_function_is_refused_with_its_operator(name, text):
    with pytest.raises(InvalidJobSpec) as e:
        map_function(name, "operator 'm'")
    assert str(e.value) == text


def test_the_default_subjects():
    with pytest.raises(InvalidJobSpec) as e:
        map_function("add:z")
    assert e.value.subject == "map"
    with pytest.raises(InvalidJobSpec) as e:
        filter_function("value_ge:z")
    assert e.value.subject == "filter"


@pytest.mark.parametrize("name, text", [
    ("value_ge:x", "operator 'f': function 'value_ge:x' needs an integer argument (value_ge:N)"),
    ("value_ge:2:3", "operator 'f': function 'value_ge:2:3' needs an integer argument (value_ge:N)"),
    ("even", "operator 'f': unknown filter function 'even' (known: all, none, even_value, odd_value, value_ge:N)"),
    ("identity", "operator 'f': unknown filter function 'identity' (known: all, none, even_value, odd_value, "
                 "value_ge:N)"),
])
def test_a_bad_filter_function_is_refused_with_its_operator(name, text):
    with pytest.raises(InvalidJobSpec) as e:
        filter_function(name, "operator 'f'")
    assert str(e.value) == text
