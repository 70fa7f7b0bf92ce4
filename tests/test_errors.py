"""The user-facing errors' text (``model.errors``): ``shorten_message`` puts a message on one
line, cuts every long quoted value to its first 60 characters and bounds the whole to 600;
``InvalidJobSpec`` is ``"<subject>: <rule>"``, both shortened."""

from __future__ import annotations

import re

import pytest

from model import errors
from model.errors import ActionNotEnabled, FlinkspecError, InvalidArgument, InvalidJobSpec, shorten_message


def test_the_limits():
    assert errors.QUOTE_LIMIT == 60
    assert errors.MESSAGE_LIMIT == 600


def test_the_long_quoted_value_pattern_is_compiled_once():
    p = errors._LONG_QUOTED
    assert isinstance(p, re.Pattern)
    assert p.pattern == r"""(['\"])([^'\"\n]{60})[^'\"\n]{20,}\1"""


def test_a_short_message_is_unchanged():
    assert shorten_message("operator 'map': parallelism 0 < 1") == "operator 'map': parallelism 0 < 1"
    assert shorten_message("") == ""
    assert shorten_message("a  b\tc") == "a  b\tc"


def test_lines_are_joined_by_one_space_and_other_whitespace_stays():
    assert shorten_message("a\nb") == "a b"
    assert shorten_message("x  y\n\nz\t\n") == "x  y  z\t "
    assert shorten_message("\n") == " "


def test_a_value_that_is_not_a_string_is_its_str():
    assert shorten_message(12) == "12"
    assert shorten_message(InvalidArgument("bad\nvalue")) == "bad value"


@pytest.mark.parametrize("q", ["'", '"'])
def test_a_long_quoted_value_is_cut_to_60_characters(q):
    head = "".join(chr(ord("a") + i % 26) for i in range(60))
    for extra in (20, 21, 500):
        value = head + "Z" * extra
        assert shorten_message(f"name {q}{value}{q} is bad") == f"name {q}{head}...{q} (cut) is bad"


@pytest.mark.parametrize("q", ["'", '"'])
def test_a_quoted_value_of_at_most_79_characters_stays(q):
    for n in (0, 1, 60, 61, 79):
        value = "v" * n
        assert shorten_message(f"{q}{value}{q}") == f"{q}{value}{q}"


def test_only_a_value_between_two_quotes_of_one_kind_is_cut():
    mixed = "'" + "m" * 100 + '"'
    assert shorten_message(mixed) == mixed
    assert shorten_message("'" + "m" * 100) == "'" + "m" * 100


def test_every_long_quoted_value_is_cut():
    a, b = "a" * 90, "b" * 85
    assert shorten_message(f"'{a}' and \"{b}\"") == f"'{'a' * 60}...' (cut) and \"{'b' * 60}...\" (cut)"


def test_a_quoted_value_with_a_line_break_is_joined_first_then_cut():
    value = "c" * 40 + "\n" + "c" * 45
    assert shorten_message(f"'{value}'") == "'" + "c" * 40 + " " + "c" * 19 + "...' (cut)"


def test_the_whole_message_is_bounded_to_600_characters():
    assert shorten_message("x" * 600) == "x" * 600
    assert shorten_message("x" * 601) == "x" * 600 + "... (601 characters)"
    assert shorten_message("y" * 1000) == "y" * 600 + "... (1000 characters)"
    # counted after the quoted values were cut
    text = "'" + "q" * 700 + "'"
    assert shorten_message(text) == "'" + "q" * 60 + "...' (cut)"


def test_invalid_job_spec():
    e = InvalidJobSpec("operator 'map'", "parallelism must be\nat least 1")
    assert (e.subject, e.rule) == ("operator 'map'", "parallelism must be at least 1")
    assert str(e) == "operator 'map': parallelism must be at least 1"
    assert e.args == ("operator 'map': parallelism must be at least 1",)
    assert isinstance(e, FlinkspecError) and isinstance(e, ValueError)


def test_invalid_job_spec_shortens_both_parts():
    long = "n" * 100
    e = InvalidJobSpec(f"operator '{long}'", f"'{long}' is\nunknown")
    assert e.subject == f"operator '{'n' * 60}...' (cut)"
    assert e.rule == f"'{'n' * 60}...' (cut) is unknown"
    assert str(e) == f"{e.subject}: {e.rule}"


def test_the_hierarchy():
    assert issubclass(InvalidArgument, FlinkspecError) and issubclass(InvalidArgument, ValueError)
    assert issubclass(ActionNotEnabled, FlinkspecError) and not issubclass(ActionNotEnabled, ValueError)
