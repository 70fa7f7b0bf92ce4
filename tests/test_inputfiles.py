"""``model.inputfiles`` call by call: the exact message of each malformed input and the exact
value of each good one, at every bound (the file, the bytes, JSON, TOML, the schema)."""

from __future__ import annotations

import io
import os
import threading

import pytest

from model import inputfiles
from model.errors import FlinkspecError
from model.inputfiles import (INT_MAX, INT_MIN, MAX_DEPTH, MAX_FILE_BYTES, MAX_INT_DIGITS, SHORT, InputError,
                              check_depth, check_schema, decode_utf8, field_path, int_schema, parse_json, parse_toml,
                              read_input, read_json_or_toml, short, short_text, string_schema)


def accepted(call, *args, **kw):
    """``call``'s answer; a good input refused is a failed statement, not an error."""
    try:
        return call(*args, **kw)
    except InputError as e:
        pytest.fail(f"a good input refused: {e}")


def refusal(call, *args, **kw) -> tuple:
    """The (message, source, where, rule) of the InputError ``call`` raises."""
    with pytest.raises(InputError) as e:
        call(*args, **kw)
    return str(e.value), e.value.source, e.value.where, e.value.rule


def test_the_declared_limits():
    assert MAX_FILE_BYTES == 16 * 1024 * 1024 == 16_777_216
    assert MAX_DEPTH == 32
    assert (INT_MIN, INT_MAX) == (-9223372036854775808, 9223372036854775807)
    assert MAX_INT_DIGITS == 20
    assert SHORT == 60
    assert inputfiles._TYPE_NAMES == {"integer": "an integer", "string": "a string", "boolean": "true or false",
                                      "array": "an array", "object": "an object", "null": "null",
                                      "number": "a number"}


# -- InputError, short_text, short -----------------------------------------------------------

def test_an_input_error_names_source_where_and_rule():
    e = InputError("f.json", "3", "bad")
    assert (str(e), e.source, e.where, e.rule) == ("f.json:3: bad", "f.json", "3", "bad")
    assert isinstance(e, FlinkspecError) and isinstance(e, ValueError)
    e = InputError("f.json", "", "bad")
    assert (str(e), e.source, e.where, e.rule) == ("f.json: bad", "f.json", "", "bad")
    e = InputError(7, 8, "r")
    assert (str(e), e.source, e.where) == ("7:8: r", "7", "8")
    long = "p" * 201
    assert str(InputError(long, "1", "r")) == "p" * 200 + "... (201 characters):1: r"
    assert str(InputError("p" * 200, "", "r")) == "p" * 200 + ": r"


def test_short_text():
    assert short_text("a" * 60) == "a" * 60
    assert short_text("a" * 61) == "a" * 60 + "... (61 characters)"
    assert short_text("abcdef", 5) == "abcde... (6 characters)"
    assert short_text("abcde", 5) == "abcde"
    assert short_text(12345, 3) == "123... (5 characters)"


def test_short():
    assert short("a" * 58) == repr("a" * 58)
    assert short("a" * 59) == "'" + "a" * 59 + "... (61 characters)"
    assert short("a" * 60) == "'" + "a" * 59 + "... (62 characters)"
    assert short("a" * 61) == repr("a" * 60) + "... (61 characters)"
    assert short("abcdef", 5) == "'abcde'... (6 characters)"
    assert short("abcde", 5) == "'abcd... (7 characters)"
    assert short(2**199) == str(2**199) and len(str(2**199)) == 60
    assert short(2**199, 10) == str(2**199)[:10] + "... (60 characters)"
    assert short(2**200) == "an integer of about 60 digits"
    assert short(-(2**300)) == "an integer of about 90 digits"
    assert short(True) == "True"
    assert short(list(range(20)), 100) == repr(list(range(20)))
    assert short([0] * 20) == repr([0] * 20)
    assert short(list(range(21))) == "a list of 21 items"
    assert short(tuple(range(21))) == "a tuple of 21 items"
    assert short({i: i for i in range(21)}) == "a dict of 21 items"
    assert short({i: 0 for i in range(20)}, 500) == repr({i: 0 for i in range(20)})
    assert short(None) == "None" and short(1.5) == "1.5" and short([1, "a"]) == "[1, 'a']"

    class Loops:
        def __repr__(self):
            raise RecursionError

    class Refuses:
        def __repr__(self):
            raise ValueError("no")

    assert short(Loops()) == "a Loops"
    assert short(Refuses()) == "a Refuses"


# -- read_input and decode_utf8 ----------------------------------------------------------------

def test_read_input_reads_a_regular_file_up_to_the_bound(tmp_path):
    p = tmp_path / "f.json"
    p.write_bytes(b"0123456789")
    assert accepted(read_input, p) == b"0123456789"
    assert accepted(read_input, str(p), max_bytes=10) == b"0123456789"
    assert refusal(read_input, p, max_bytes=9) == (
        f"{p}: the file is 10 bytes, more than the limit of 9", str(p), "", "the file is 10 bytes, more than the limit of 9")
    assert refusal(read_input, p, what="job spec", max_bytes=9)[3] == "the job spec is 10 bytes, more than the limit of 9"
    empty = tmp_path / "e"
    empty.write_bytes(b"")
    assert accepted(read_input, empty, max_bytes=0) == b""


def test_read_input_refuses_what_is_not_a_readable_regular_file(tmp_path):
    missing = tmp_path / "missing.json"
    assert refusal(read_input, missing) == (f"{missing}: cannot read the file: no such file", str(missing), "",
                                            "cannot read the file: no such file")
    assert refusal(read_input, missing, what="job spec")[3] == "cannot read the job spec: no such file"
    long = tmp_path / ("n" * 300)
    assert refusal(read_input, long, what="job spec")[3] == "cannot read the job spec: File name too long"
    assert refusal(read_input, tmp_path) == (f"{tmp_path}: is a directory, not a file", str(tmp_path), "",
                                             "is a directory, not a file")
    assert refusal(read_input, tmp_path, what="trace")[3] == "is a directory, not a trace"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # a writer that ends soon: a read that opened the FIFO would return its byte, never block
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    os.write(fd, b"x")
    closer = threading.Timer(0.2, os.close, [fd])
    closer.start()
    try:
        assert refusal(read_input, fifo, what="trace")[3] == (
            "is not a regular file (a FIFO, socket or device); a trace must be a file")
    finally:
        closer.join()
    assert refusal(read_input, "/dev/null")[3] == (
        "is not a regular file (a FIFO, socket or device); a file must be a file")


def test_read_input_refuses_a_file_longer_than_its_size_said(tmp_path):
    # /proc files say 0 bytes and hold more: the read itself is bounded
    assert os.stat("/proc/self/status").st_size == 0
    assert refusal(read_input, "/proc/self/status", what="trace", max_bytes=10) == (
        "/proc/self/status: the trace is more than the limit of 10 bytes", "/proc/self/status", "",
        "the trace is more than the limit of 10 bytes")
    assert len(accepted(read_input, "/proc/self/status", max_bytes=1 << 20)) > 10


def test_read_input_reads_at_most_one_byte_past_the_bound(tmp_path, monkeypatch):
    p = tmp_path / "f"
    p.write_bytes(b"0123")
    asked = []

    class Endless(io.RawIOBase):
        """A file that grows without end after its size was read."""

        def read(self, n=-1):
            asked.append(n)
            return b"y" * (n if n is not None and n >= 0 else 1 << 20)

    monkeypatch.setattr("builtins.open", lambda *a, **kw: Endless())
    assert refusal(read_input, p, what="trace", max_bytes=5)[3] == "the trace is more than the limit of 5 bytes"
    assert asked == [6]
    asked.clear()
    assert refusal(read_input, p, what="trace")[3] == f"the trace is more than the limit of {MAX_FILE_BYTES} bytes"
    assert asked == [MAX_FILE_BYTES + 1]


def test_read_input_names_an_open_that_fails(tmp_path, monkeypatch):
    p = tmp_path / "f"
    p.write_bytes(b"x")

    def denied(*a, **kw):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("builtins.open", denied)
    assert refusal(read_input, p, what="trace")[3] == "cannot read the trace: Permission denied"

    def bare(*a, **kw):
        raise OSError()

    monkeypatch.setattr("builtins.open", bare)
    assert refusal(read_input, p, what="trace")[3] == "cannot read the trace: OSError"


def test_read_input_names_a_stat_that_fails(tmp_path, monkeypatch):
    def bare(*a, **kw):
        raise PermissionError()

    monkeypatch.setattr(os, "stat", bare)
    assert refusal(read_input, tmp_path / "f", what="trace")[3] == "cannot read the trace: PermissionError"


def test_decode_utf8():
    assert decode_utf8(b"ab\xc3\xa9", "s") == "ab\u00e9"
    assert decode_utf8(b"", "s") == ""
    assert refusal(decode_utf8, b"ab\ncd\xffx", "s.json") == (
        "s.json:2: not UTF-8 text: invalid start byte at byte 5 (byte value 0xff)", "s.json", "2",
        "not UTF-8 text: invalid start byte at byte 5 (byte value 0xff)")
    assert refusal(decode_utf8, b"\x80", "s")[:3] == (
        "s:1: not UTF-8 text: invalid start byte at byte 0 (byte value 0x80)", "s", "1")
    # a newline after the bad byte is not counted
    assert refusal(decode_utf8, b"\n\n\x05\xfe\n\n", "s")[2] == "3"
    assert refusal(decode_utf8, b"a\xc3(", "s")[3] == "not UTF-8 text: invalid continuation byte at byte 1 (byte value 0xc3)"


# -- JSON --------------------------------------------------------------------------------------

def test_parse_json_good_values():
    assert accepted(parse_json, '{"a": [1, -2, 2.5, "x", true, null], "b": {}}', "s") == {
        "a": [1, -2, 2.5, "x", True, None], "b": {}}
    v = accepted(parse_json, f"[{INT_MAX}, {INT_MIN}, 1e2, -0.5]", "s")
    assert v == [INT_MAX, INT_MIN, 100.0, -0.5] and [type(x) for x in v] == [int, int, float, float]
    assert accepted(parse_json, "1" + "0" * 18, "s") == 10**18
    assert accepted(parse_json, "0." + "1" * 38, "s") == float("0." + "1" * 38)  # 40 characters
    assert accepted(parse_json, '"x"', "s", "3") == "x"


def test_parse_json_refusals():
    assert refusal(parse_json, '{"a": 1, "a": 2}', "s") == ("s: duplicate key 'a'", "s", "", "duplicate key 'a'")
    assert refusal(parse_json, '{"a": 1, "a": 2}', "s", "7")[0] == "s:7: duplicate key 'a'"
    assert refusal(parse_json, str(INT_MAX + 1), "s")[3] == "integer 9223372036854775808 does not fit in 64 bits"
    assert refusal(parse_json, str(INT_MIN - 1), "s")[3] == "integer -9223372036854775809 does not fit in 64 bits"
    assert refusal(parse_json, "1" * 20, "s")[3] == "integer 11111111111111111111 does not fit in 64 bits"
    assert refusal(parse_json, "1" * 21, "s")[3] == "integer of 21 digits (integers must fit in 64 bits)"
    assert refusal(parse_json, "-" + "1" * 20, "s")[3] == "integer -11111111111111111111 does not fit in 64 bits"
    assert refusal(parse_json, "-" + "1" * 21, "s")[3] == "integer of 22 digits (integers must fit in 64 bits)"
    assert refusal(parse_json, "0." + "1" * 39, "s")[3] == f"number {short('0.' + '1' * 39)} is too long"
    assert refusal(parse_json, "1e400", "s")[3] == "number '1e400' is out of range (infinite)"
    assert refusal(parse_json, "-1e400", "s")[3] == "number '-1e400' is out of range (infinite)"
    for c in ("NaN", "Infinity", "-Infinity"):
        assert refusal(parse_json, f"[{c}]", "s")[3] == f"{c} is not a number JSON allows (no NaN or Infinity)"
    assert refusal(parse_json, '{"a": }', "s") == ("s:1 column 7: malformed JSON: Expecting value", "s",
                                                  "1 column 7", "malformed JSON: Expecting value")
    assert refusal(parse_json, '\n\n  [1,', "s")[2] == "3 column 6"
    assert refusal(parse_json, '\n[1,', "s", "line 9")[:3] == (
        "s:line 9 column 4: malformed JSON: Expecting value", "s", "line 9 column 4")
    assert refusal(parse_json, "[" * 100_000, "s", "4") == ("s:4: nesting deeper than 32 levels", "s", "4",
                                                            "nesting deeper than 32 levels")


def test_parse_json_nesting_bound():
    assert accepted(parse_json, "[" * 32 + "]" * 32, "s") == eval("[" * 32 + "]" * 32)
    assert refusal(parse_json, "[" * 33 + "]" * 33, "s", "2") == ("s:2: nesting deeper than 32 levels", "s", "2",
                                                                  "nesting deeper than 32 levels")
    deep = '{"a": ' * 32 + "1" + "}" * 32
    assert accepted(parse_json, deep, "s") == eval(deep)
    assert refusal(parse_json, '{"a": ' * 33 + "1" + "}" * 33, "s")[3] == "nesting deeper than 32 levels"


# -- TOML --------------------------------------------------------------------------------------

def test_parse_toml_good_values():
    assert accepted(parse_toml, 'a = 1\nb = 2.5\nc = "x"\n[t]\nd = [1, 2]\n', "s") == {"a": 1, "b": 2.5, "c": "x",
                                                                           "t": {"d": [1, 2]}}
    assert accepted(parse_toml, f"a = {INT_MAX}\nb = {INT_MIN}", "s") == {"a": INT_MAX, "b": INT_MIN}
    assert accepted(parse_toml, "", "s") == {}


def test_parse_toml_refusals():
    assert refusal(parse_toml, "a = nan", "s") == ("s: number 'nan' is out of range (infinite)", "s", "",
                                                   "number 'nan' is out of range (infinite)")
    assert refusal(parse_toml, "a = -inf", "s")[3] == "number '-inf' is out of range (infinite)"
    assert refusal(parse_toml, "a = 0." + "1" * 39, "s")[3] == f"number {short('0.' + '1' * 39)} is too long"
    assert refusal(parse_toml, "a = ", "s") == ("s: malformed TOML: Invalid value (at end of document)", "s", "",
                                                "malformed TOML: Invalid value (at end of document)")
    assert refusal(parse_toml, "a = 1\na = 2", "s")[3].startswith("malformed TOML: Cannot overwrite a value")
    assert refusal(parse_toml, "a = 1" + "1" * 5000, "s")[3] == (
        "malformed TOML: " + short_text("Exceeds the limit (4300 digits) for integer string conversion: value has "
                                        "5001 digits; use sys.set_int_max_str_digits() to increase the limit", 120))
    assert refusal(parse_toml, f"a = {INT_MAX + 1}", "s") == (
        "s: integer 9223372036854775808 does not fit in 64 bits", "s", "",
        "integer 9223372036854775808 does not fit in 64 bits")
    assert refusal(parse_toml, "a = " + "[" * 33 + "]" * 33, "s") == ("s: nesting deeper than 32 levels", "s", "",
                                                                      "nesting deeper than 32 levels")
    assert accepted(parse_toml, "a = " + "[" * 31 + "]" * 31, "s") == {"a": eval("[" * 31 + "]" * 31)}
    assert refusal(parse_toml, "a = " + "[" * 100_000, "s")[3] in ("nesting deeper than 32 levels",)


def test_parse_toml_long_error_is_cut(monkeypatch):
    import tomllib

    def loud(text, **kw):
        raise tomllib.TOMLDecodeError("e" * 300)

    monkeypatch.setattr(tomllib, "loads", loud)
    assert refusal(parse_toml, "", "s")[3] == "malformed TOML: " + "e" * 200 + "... (300 characters)"

    def deep(text, **kw):
        raise RecursionError

    monkeypatch.setattr(tomllib, "loads", deep)
    assert refusal(parse_toml, "", "s") == ("s: nesting deeper than 32 levels", "s", "", "nesting deeper than 32 levels")


# -- check_depth ---------------------------------------------------------------------------------

def test_check_depth():
    def nest(n, leaf=1):
        v = leaf
        for _ in range(n - 1):
            v = [v]
        return v

    assert check_depth(nest(32), "s") is None
    assert check_depth(nest(33, 1), "s") is None  # 32 lists around a scalar: the scalar is at 33 but not nested
    assert refusal(check_depth, nest(34), "s", "w") == ("s:w: nesting deeper than 32 levels", "s", "w",
                                                         "nesting deeper than 32 levels")
    d = 1
    for _ in range(33):
        d = {"k": d}
    assert refusal(check_depth, d, "s")[0] == "s: nesting deeper than 32 levels"
    assert check_depth(d["k"], "s") is None
    assert check_depth([INT_MAX, INT_MIN, {"a": 1.5}, True, "x", None], "s") is None
    assert refusal(check_depth, {"a": [INT_MAX + 1]}, "s", "w") == (
        "s:w: integer 9223372036854775808 does not fit in 64 bits", "s", "w",
        "integer 9223372036854775808 does not fit in 64 bits")
    assert refusal(check_depth, [0, INT_MIN - 1], "s")[3] == "integer -9223372036854775809 does not fit in 64 bits"
    assert refusal(check_depth, {"a": float("inf")}, "s", "w")[:3] == (
        "s:w: a number is out of range (infinite or NaN)", "s", "w")
    assert refusal(check_depth, [float("nan")], "s")[3] == "a number is out of range (infinite or NaN)"
    assert refusal(check_depth, float("-inf"), "s")[3] == "a number is out of range (infinite or NaN)"


# -- the schema ----------------------------------------------------------------------------------

def test_the_schema_helpers():
    assert string_schema() == {"type": "string", "minLength": 1, "maxLength": 200}
    assert string_schema(5, pattern="^a") == {"type": "string", "minLength": 1, "maxLength": 5, "pattern": "^a"}
    assert int_schema() == {"type": "integer", "minimum": INT_MIN, "maximum": INT_MAX}
    assert int_schema(1) == {"type": "integer", "minimum": 1, "maximum": INT_MAX}
    assert int_schema(1, 3) == {"type": "integer", "minimum": 1, "maximum": 3}


def test_field_path():
    assert field_path([]) == "(top level)"
    assert field_path(["a"]) == "a"
    assert field_path(["a", "b", 2, "c"]) == "a.b[2].c"
    assert field_path([0, "a", 1, 2]) == "[0].a[1][2]"
    assert field_path(iter(["x", 0])) == "x[0]"


def test_integers_and_numbers_of_the_schema():
    s = {"type": "integer"}
    assert accepted(check_schema, 3, s, "s") is None
    assert refusal(check_schema, True, s, "s") == ("s:(top level): must be an integer, not True", "s",
                                                   "(top level)", "must be an integer, not True")
    assert refusal(check_schema, 1.0, s, "s")[3] == "must be an integer, not 1.0"
    n = {"type": "number"}
    assert accepted(check_schema, 3, n, "s") is None and accepted(check_schema, 2.5, n, "s") is None
    assert refusal(check_schema, False, n, "s")[3] == "must be a number, not False"
    assert refusal(check_schema, float("inf"), n, "s")[3] == "must be a number, not inf"
    assert refusal(check_schema, float("nan"), n, "s")[3] == "must be a number, not nan"
    assert refusal(check_schema, "1", n, "s")[3] == "must be a number, not '1'"


def test_each_rule_in_one_sentence():
    def rule(instance, schema):
        return refusal(check_schema, instance, schema, "s")[3]

    assert rule(1, {"type": ["string", "null"]}) == "must be a string or null, not 1"
    assert rule(1, {"type": "object"}) == "must be an object, not 1"
    assert rule(1, {"type": "array"}) == "must be an array, not 1"
    assert rule(1, {"type": "boolean"}) == "must be true or false, not 1"
    assert rule(1, {"type": "string"}) == "must be a string, not 1"
    assert rule("x", {"type": "null"}) == "must be null, not 'x'"
    assert rule("x", {"enum": ["a", 2]}) == "must be one of a, 2, not 'x'"
    assert rule("x", {"const": "a"}) == "must be 'a', not 'x'"
    assert rule(0, {"minimum": 1}) == "must be at least 1, not 0"
    assert rule(4, {"maximum": 3}) == "must be at most 3, not 4"
    assert rule("", {"minLength": 1}) == "must not be empty"
    assert rule("a", {"minLength": 2}) == "must have at least 2 characters"
    assert rule("abcd", {"maxLength": 3}) == "is 4 characters long, more than the limit of 3"
    assert rule([], {"minItems": 1}) == "must have at least 1 item(s)"
    assert rule([1, 2], {"maxItems": 1}) == "has 2 items, more than the limit of 1"
    assert rule({"a": 1}, {"required": ["a", "b", "c"]}) == "missing required key 'b'"
    assert rule({"z": 1, "y": 2, "a": 0}, {"properties": {"a": {}, "b": {}}, "additionalProperties": False}) == (
        "unknown key 'y' (known: a, b)")
    assert rule({"z": 1}, {"additionalProperties": False}) == "unknown key 'z' (known: )"
    assert rule({"ab": 1}, {"propertyNames": {"maxLength": 1}}) in ("key 'ab' is not allowed",
                                                                    "is 2 characters long, more than the limit of 1")
    assert rule("b", {"pattern": "^a$"}) == "'b' does not match the pattern ^a$"
    assert rule({"a": 1, "b": 2}, {"maxProperties": 1}) == "has 2 keys, more than the limit of 1"
    assert rule([1, 1], {"uniqueItems": True}) == "items must be unique"
    assert rule(3, {"multipleOf": 2}) == "3 breaks the schema rule 'multipleOf'"
    assert rule(1, {"oneOf": [{"type": "integer"}, {"minimum": 0}]}) == "1 breaks the schema rule 'oneOf'"


def test_the_rule_of_property_names_itself():
    err = type("E", (), {"validator": "propertyNames", "validator_value": {}, "instance": "ab", "schema": {}})
    assert inputfiles._rule(err) == "key 'ab' is not allowed"
    err = type("E", (), {"validator": "required", "validator_value": ["a"], "instance": {"a": 1}, "schema": {}})
    assert inputfiles._rule(err) == "missing required key "
    err = type("E", (), {"validator": "required", "validator_value": ["a"], "instance": [1], "schema": {}})
    assert inputfiles._rule(err) == "missing required key "
    err = type("E", (), {"validator": "additionalProperties", "validator_value": False, "instance": {"a": 1},
                         "schema": {"properties": {"a": {}}}})
    assert inputfiles._rule(err) == "unknown key  (known: a)"


SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "operators": {"type": "array", "items": {
            "type": "object",
            "properties": {"p": {"type": "integer", "minimum": 1}, "q": {"type": "integer"}},
            "additionalProperties": False}},
    },
    "required": ["name"],
    "additionalProperties": False,
}


def test_check_schema_names_the_deepest_then_the_first_field():
    assert accepted(check_schema, {"name": "a", "operators": [{"p": 1}]}, SCHEMA, "s") is None
    assert refusal(check_schema, {"name": "a", "operators": [{"p": 1}, {"p": 0}]}, SCHEMA, "f.json") == (
        "f.json:operators[1].p: must be at least 1, not 0", "f.json", "operators[1].p", "must be at least 1, not 0")
    # deepest first: the missing name (top level) loses to the operator's field
    assert refusal(check_schema, {"operators": [{"p": 0}]}, SCHEMA, "s")[2] == "operators[0].p"
    # equally deep: the first in document order
    assert refusal(check_schema, {"name": "a", "operators": [{"p": 0, "q": "x"}]}, SCHEMA, "s")[2:] == (
        "operators[0].p", "must be at least 1, not 0")
    assert refusal(check_schema, {"name": "a", "operators": [{"p": 1}, {"p": "x"}, {"p": 0}]}, SCHEMA, "s")[2:] == (
        "operators[1].p", "must be an integer, not 'x'")
    assert refusal(check_schema, {"name": 1, "x": 2}, SCHEMA, "s")[2:] == ("name", "must be a string, not 1")
    assert refusal(check_schema, {}, SCHEMA, "s")[2:] == ("(top level)", "missing required key 'name'")
    assert refusal(check_schema, {"name": "a", "operators": [{"p": 0}]}, SCHEMA, "s", "line 4") == (
        "s:line 4: operators[0].p: must be at least 1, not 0", "s", "line 4: operators[0].p",
        "must be at least 1, not 0")
    assert refusal(check_schema, {"name": 2}, SCHEMA, "s", "", ("jobs", 3))[2] == "jobs[3].name"
    assert refusal(check_schema, {"name": 2}, SCHEMA, "s", "9", ["jobs"])[2] == "9: jobs.name"


def test_any_of_names_its_deepest_branch():
    schema = {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"a": {"type": "integer"}}}]}
    assert accepted(check_schema, "x", schema, "s") is None and accepted(check_schema, {"a": 1}, schema, "s") is None
    assert refusal(check_schema, {"a": "x"}, schema, "s")[2:] == ("a", "must be an integer, not 'x'")
    one = {"oneOf": [{"type": "object", "properties": {"a": {"type": "integer"}}}, {"type": "string"}]}
    assert refusal(check_schema, {"a": "x"}, one, "s")[2:] == ("a", "must be an integer, not 'x'")
    assert refusal(check_schema, 5, schema, "s")[2:] == ("(top level)", "must be a string, not 5")


def test_validators_are_built_once_per_schema_and_the_cache_is_bounded():
    inputfiles._VALIDATORS.clear()
    schema = {"type": "integer"}
    v = inputfiles._validator(schema)
    assert inputfiles._VALIDATORS == {id(schema): (schema, v)}
    assert inputfiles._validator(schema) is v
    other = {"type": "string"}
    w = inputfiles._validator(other)
    assert w is not v and len(inputfiles._VALIDATORS) == 2
    # a stale entry under a reused id is not trusted
    inputfiles._VALIDATORS[id(other)] = ({"type": "string"}, v)
    assert inputfiles._validator(other) is not v and inputfiles._VALIDATORS[id(other)][0] is other
    schemas = [{"type": "integer", "minimum": i} for i in range(63)]
    for s in schemas:
        inputfiles._validator(s)
    assert len(inputfiles._VALIDATORS) == 65
    last = {"type": "null"}
    inputfiles._validator(last)
    assert list(inputfiles._VALIDATORS) == [id(last)]
    with pytest.raises(Exception, match="is not valid under any of the given schemas|is not of type"):
        inputfiles._validator({"type": 5})
    inputfiles._VALIDATORS.clear()


# -- read_json_or_toml -----------------------------------------------------------------------------

def test_read_json_or_toml(tmp_path):
    j = tmp_path / "a.JSON"
    j.write_text('{"a": 1}')
    assert accepted(read_json_or_toml, j, what="job spec") == {"a": 1}
    t = tmp_path / "a.toml"
    t.write_text("a = 1\n")
    assert accepted(read_json_or_toml, str(t), what="job spec") == {"a": 1}
    y = tmp_path / "a.yaml"
    y.write_text("a: 1")
    assert refusal(read_json_or_toml, y, what="job spec") == (
        f"{y}: unknown job spec format '.yaml' (use .toml or .json)", str(y), "",
        "unknown job spec format '.yaml' (use .toml or .json)")
    n = tmp_path / "noext"
    n.write_text("{}")
    assert refusal(read_json_or_toml, n, what="trace")[3] == "unknown trace format '(no extension)' (use .toml or .json)"
    bad = tmp_path / "b.json"
    bad.write_bytes(b'{"a": "\xff"}')
    assert refusal(read_json_or_toml, bad, what="job spec")[:3] == (
        f"{bad}:1: not UTF-8 text: invalid start byte at byte 7 (byte value 0xff)", str(bad), "1")
    toml_as_json = tmp_path / "c.json"
    toml_as_json.write_text("a = 1")
    assert refusal(read_json_or_toml, toml_as_json, what="job spec") == (
        f"{toml_as_json}:1 column 1: malformed JSON: Expecting value", str(toml_as_json), "1 column 1",
        "malformed JSON: Expecting value")
    json_as_toml = tmp_path / "c.toml"
    json_as_toml.write_text('{"a": 1}')
    assert refusal(read_json_or_toml, json_as_toml, what="job spec")[:3] == (
        f"{json_as_toml}: malformed TOML: Invalid statement (at line 1, column 1)", str(json_as_toml), "")
    assert refusal(read_json_or_toml, tmp_path / "gone.toml", what="job spec")[3] == (
        "cannot read the job spec: no such file")
